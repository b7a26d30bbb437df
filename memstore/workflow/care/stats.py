"""Outcomes of corrections (heeded or recurred) and their heed rate with a Wilson interval."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from memstore.errors import InvalidMemory
from memstore.storage import files

Z95 = 1.959963984540054
"""The standard normal quantile for a two-sided 95% interval."""

OUTCOMES_FILE = files.OUTCOMES_FILE
"""Beside the memories and the ledger at the store root; committed, append-only."""

MIN_N_FOR_RATE = 10
"""Below this many observations a report shows only the interval, not a point estimate."""

NOTE_MAX = 1000


class Outcome(StrEnum):
    """What happened when a situation a correction applies to came up again."""

    HEEDED = "heeded"
    RECURRED = "recurred"


@dataclass(frozen=True, slots=True)
class OutcomeRecord:
    """One line of `outcomes.jsonl`: who saw which rule, what happened, and the rule's status."""

    at: str
    actor: str
    name: str
    outcome: Outcome
    status: str
    """The rule's status then: a recurrence after confirmation flags the rule."""
    evidence: str | None = None


@dataclass(frozen=True, slots=True)
class HeedRate:
    """Heed counts for one rule (or all of them) with the Wilson 95% score interval."""

    name: str
    heeded: int
    recurred: int
    low: float
    high: float
    rewrite: bool = False
    """True when it recurred after being confirmed: the rule's wording is not working."""

    @property
    def n(self) -> int:
        return self.heeded + self.recurred

    @property
    def rate(self) -> float | None:
        """The observed heed rate, or None without observations."""
        return self.heeded / self.n if self.n else None


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval for `successes` out of `n` trials; (0, 1) when n is 0.

    Raises:
        ValueError: when the counts are negative or successes exceed n.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def to_line(record: OutcomeRecord) -> str:
    """One outcome as a JSON line, keys in a fixed order, ending in a newline."""
    data: dict[str, Any] = {
        "at": record.at,
        "actor": record.actor,
        "name": record.name,
        "outcome": record.outcome.value,
        "status": record.status,
    }
    if record.evidence:
        data["evidence"] = record.evidence
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def from_line(line: str, number: int) -> OutcomeRecord:
    """Parse line `number` (1-based) of `outcomes.jsonl`.

    Raises:
        InvalidMemory: naming the line and what is wrong with it.
    """
    try:
        data: Any = json.loads(line)
    except json.JSONDecodeError as e:
        raise InvalidMemory(f"outcomes.jsonl line {number} is not JSON: {e.msg}") from e
    if not isinstance(data, dict):
        raise InvalidMemory(f"outcomes.jsonl line {number} is not a JSON object")
    fields: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    try:
        return OutcomeRecord(
            at=str(fields["at"]),
            actor=str(fields["actor"]),
            name=str(fields["name"]),
            outcome=Outcome(fields["outcome"]),
            status=str(fields["status"]),
            evidence=str(fields["evidence"]) if fields.get("evidence") else None,
        )
    except (KeyError, ValueError) as e:
        raise InvalidMemory(
            f"outcomes.jsonl line {number} lacks a field or has a bad value: {e}"
        ) from e


def outcome_problems(
    root: Path, text: str | None = None, given: bool = False
) -> list[tuple[int, str]]:
    """(line number, problem) for every line of `<root>/outcomes.jsonl` that is not a record;
    with `given`, of `text` instead (the file's staged content; None when none is staged)."""
    if given:
        if text is None:
            return []
    else:
        path = root / OUTCOMES_FILE
        if not path.is_file():
            return []
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            return [(0, f"cannot read it: {e}")]
    found: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            from_line(line, number)
        except InvalidMemory as e:
            found.append((number, str(e)))
    return found


def check_note(value: str | None) -> str | None:
    """Return an outcome's evidence as one trimmed line, or None.

    Raises:
        InvalidMemory: for an over-long note.
    """
    if value is None:
        return None
    flat = " ".join(value.split())
    if len(flat) > NOTE_MAX:
        raise InvalidMemory(f"evidence is {len(flat)} characters; the limit is {NOTE_MAX}")
    return flat or None


def heed_rates(records: Iterable[OutcomeRecord]) -> tuple[list[HeedRate], HeedRate]:
    """Per rule (most observations first) and overall heed rates of `records`."""
    counts: dict[str, list[int]] = {}
    rewrite: set[str] = set()
    for record in records:
        pair = counts.setdefault(record.name, [0, 0])
        if record.outcome is Outcome.HEEDED:
            pair[0] += 1
        else:
            pair[1] += 1
            if record.status == "confirmed":
                rewrite.add(record.name)
    rates = [_rate(name, h, r, name in rewrite) for name, (h, r) in counts.items()]
    rates.sort(key=lambda x: (-x.n, x.name))
    heeded = sum(x.heeded for x in rates)
    recurred = sum(x.recurred for x in rates)
    return rates, _rate("overall", heeded, recurred, bool(rewrite))


def _rate(name: str, heeded: int, recurred: int, rewrite: bool) -> HeedRate:
    low, high = wilson(heeded, heeded + recurred)
    return HeedRate(name, heeded, recurred, low, high, rewrite)


def describe(rate: HeedRate) -> str:
    """A heed rate for people: the interval always, the point estimate only with enough data."""
    if rate.n == 0:
        return "no observations"
    interval = f"95% CI {rate.low:.0%}–{rate.high:.0%}, n={rate.n}"
    if rate.n < MIN_N_FOR_RATE:
        return f"{interval} (too few observations for a rate)"
    return f"{rate.rate:.0%} heeded ({interval})"
