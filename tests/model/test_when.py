"""`--since` and `--as-of` read a time one way everywhere: durations, dates, UTC times."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidQuery
from memstore.faces.cli.main import main
from memstore.model import when

NOW = datetime(2026, 12, 1, 15, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("24h", datetime(2026, 11, 30, 15, 30, tzinfo=UTC)),
        ("7d", datetime(2026, 11, 24, 15, 30, tzinfo=UTC)),
        ("2w", datetime(2026, 11, 17, 15, 30, tzinfo=UTC)),
        ("90m", datetime(2026, 12, 1, 14, 0, tzinfo=UTC)),
        ("2026-12-01", datetime(2026, 12, 1, tzinfo=UTC)),
        ("2026-11-30T08:00:00Z", datetime(2026, 11, 30, 8, tzinfo=UTC)),
        ("2026-11-30T09:00:00+01:00", datetime(2026, 11, 30, 8, tzinfo=UTC)),
    ],
)
def test_a_moment_is_a_duration_back_a_date_from_its_start_or_a_time(
    text: str, expected: datetime
) -> None:
    assert when.moment(text, NOW) == expected


@pytest.mark.parametrize("text", ["yesterday", "7 days", "2026-13-01", "-1d", ""])
def test_a_moment_that_names_no_time_is_refused_with_the_forms_allowed(text: str) -> None:
    with pytest.raises(InvalidQuery, match="24h, 7d"):
        when.moment(text, NOW)


@pytest.mark.parametrize(
    ("text", "units", "expected"),
    [
        ("90", "smhdw", 90),
        (" 90s ", "smhdw", 90),
        ("30m", "smhd", 1800),
        ("1.5h", "smhd", 5400),
        ("7 d", "hdw", 7 * 86400),
        ("2w", "smhdw", 14 * 86400),
        ("2w", "smhd", None),
        ("90", "hdw", None),
        ("90m", "hdw", None),
        ("-1d", "smhdw", None),
        ("7 days", "smhdw", None),
        ("999999999w", "smhdw", None),
    ],
)
def test_a_duration_is_a_number_and_one_of_the_units_a_caller_takes(
    text: str, units: str, expected: float | None
) -> None:
    assert when.seconds(text, units) == expected


def test_a_moment_further_back_than_a_thousand_years_is_refused_not_a_crash() -> None:
    with pytest.raises(InvalidQuery, match="24h, 7d"):
        when.moment("99999999999d", NOW)


def run(*args: str, agent: str = "alice") -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--agent", agent, *args])
    return result.exit_code, result.output


def test_brief_since_today_lists_what_changed_today(tmp_path: Path) -> None:
    assert run("init")[0] == 0
    code, out = run("add", "hpa-off", "--type", "decision", "-d", "HPA is off for api")
    assert code == 0, out
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    for since in (today, "24h", "1d"):
        code, out = run("brief", "--since", since, "--no-mark", "--json")
        assert code == 0, out
        assert "hpa-off" in json.loads(out)["text"], since


def test_search_since_takes_a_duration_and_refuses_nonsense(tmp_path: Path) -> None:
    assert run("init")[0] == 0
    assert run("add", "hpa-off", "--type", "decision", "-d", "HPA is off for api")[0] == 0
    code, out = run("search", "hpa", "--since", "1h", "--json")
    assert code == 0, out
    assert [h["name"] for h in json.loads(out)] == ["hpa-off"]
    code, out = run("search", "hpa", "--since", "2099-01-01", "--json")
    assert code == 0 and json.loads(out) == []
    code, out = run("search", "hpa", "--since", "soon")
    assert code == 1 and "Error: since 'soon' must be" in out


def test_ledger_list_since_a_date_starts_at_that_day(tmp_path: Path) -> None:
    assert run("init")[0] == 0
    code, out = run("ledger", "record", "publish", "pkg@1.0", "--evidence", "https://x.test/1")
    assert code == 0, out
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    code, out = run("ledger", "list", "--since", today, "--json")
    assert code == 0, out
    assert [e["target"] for e in json.loads(out)] == ["pkg@1.0"]


@pytest.mark.anyio
async def test_mcp_recall_since_takes_a_duration(tmp_path: Path) -> None:
    from memstore.storage.store import Store
    from tests.mcp_client import call, data

    store = Store.init(tmp_path / "memory", agent="alice")
    store.add("hpa-off", type="decision", description="HPA is off for api")
    found = data(await call(store, "memory_recall", query="hpa", since="7d"))
    assert [h["name"] for h in found["results"]] == ["hpa-off"]
    found = data(await call(store, "memory_recall", query="hpa", since="2099-01-01"))
    assert found["results"] == []
