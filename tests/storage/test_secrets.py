"""Credentials are refused in every field unless allowed per call or by the store's config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.types import TextContent

from memstore.errors import InvalidMemory, SecretFound
from memstore.faces.cli.main import main
from memstore.faces.server import build_server
from memstore.storage import secrets
from memstore.storage.store import Store
from memstore.workflow.care import lint
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.session import agent as session
from tests.conftest import as_agent, commit_settings, git
from tests.mcp_client import call, serve, text
from tests.state import snapshot

PATTERNS = secrets.compile_patterns()

# Built from parts so that no credential-shaped literal sits in this repository's own files.
KEY_BLOCK = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----"
SAMPLES = {
    "private key block": KEY_BLOCK,
    "private key block (openssh)": "-----BEGIN " + "OPENSSH PRIVATE KEY-----",
    "AWS access key id": "aws key " + "AKIA" + "Z7Q3KX2M4WBN5PLD",
    "Google API key": "AIza" + "SyA1234567890abcdefghijklmnopqrstuv",
    "GitHub token": "token " + "ghp_" + "a" * 36,
    "GitHub fine-grained token": "github_pat_" + "A1" * 30,
    "Slack token": "xoxb-" + "123456789012-abcdefABCDEF",
    "Slack webhook URL": "https://hooks.slack.com/services/" + "T0A1B2C3D/B0E4F5G6H/q8Rk2mZt7Lw9",
    "Stripe secret key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "bearer token": "curl -H 'Authorization: Bearer " + "eyJhbGciOiJIUzI1NiJ9abcdef'",
    "JSON web token": "eyJhbGciOiJIUzI1NiJ9"
    + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    "password in a URL": "postgres://app:" + "s3cretpw@db.internal:5432/app",
    "password assignment": "password" + "=hunter22",
    "secret colon": "client_secret: " + "9f8e7d6c5b4a",
    "api key in yaml": "api_key: '" + "abcd1234efgh'",
}

NOT_SECRETS = [
    "rotate the password every 90 days",
    "password: $DB_PASSWORD",
    "password=${DB_PASSWORD}",
    "secret: <set in vault>",
    "token: {{ secrets.TOKEN }}",
    "password: ***",
    "api_key: xxxx",
    "Authorization: Bearer <token>",
    "use the AWS console; keys live in vault",
    "https://example.com/docs?page=2",
    "-----BEGIN PUBLIC KEY-----",
    "token: rotated daily by the platform team",
    "password: stored in the team vault",
    "secret: none",
    "the refresh token expires after 30 days",
]


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_each_kind_of_credential_is_found(kind: str) -> None:
    found = secrets.scan({"body": SAMPLES[kind]}, PATTERNS)
    assert found and found[0].field == "body"


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_placeholders_and_prose_are_not_credentials(text: str) -> None:
    assert secrets.scan({"body": text}, PATTERNS) == []


def test_the_refusal_names_field_and_pattern_but_never_the_secret() -> None:
    value = "ghp_" + "Z" * 36
    with pytest.raises(SecretFound) as e:
        secrets.refuse({"description": "ok", "body": f"use {value}"}, PATTERNS)
    message = str(e.value)
    assert "body" in message and "GitHub token" in message
    assert "allow" not in message  # each face names its own override
    assert value not in message and "Z" * 8 not in message
    assert e.value.findings == (("body", "GitHub token"),)


@pytest.mark.parametrize(
    "field", ["description", "body", "tags", "name", "extra"], ids=lambda f: f"in {f}"
)
def test_add_refuses_a_credential_in_any_field_and_changes_nothing(
    store: Store, field: str
) -> None:
    args: dict[str, object] = {"type": "fact", "description": "deploy notes", "body": "text"}
    name = "deploy-notes"
    if field == "tags":
        args["tags"] = ["AKIA" + "Z7Q3KX2M4WBN5PLD"]
    elif field == "name":
        # Names are slugs, so only the lower-case patterns can appear: a password assignment
        # cannot; a name is scanned all the same, with the other fields.
        name = "sk-" + "a" * 40
    elif field == "extra":
        args["extra"] = {"evidence": "password" + "=hunter22"}
    else:
        args[field] = "password" + "=hunter22"
    before = snapshot(store)
    with pytest.raises(SecretFound, match="credential"):
        store.add(name, **args)  # type: ignore[arg-type]
    assert snapshot(store) == before


def test_edit_and_status_reasons_are_scanned_too(store: Store) -> None:
    store.add("deploy-notes", type="fact", description="deploy notes")
    before = snapshot(store)
    with pytest.raises(SecretFound, match="body"):
        store.edit("deploy-notes", body=KEY_BLOCK)
    with pytest.raises(SecretFound, match="description"):
        store.edit("deploy-notes", description="token: " + "ghp_" + "b" * 36)
    with pytest.raises(SecretFound, match="reason"):
        as_agent(store, "bob").confirm("deploy-notes", "checked with password" + "=hunter22")
    assert snapshot(store) == before


def test_allow_secret_per_call_saves_it(store: Store) -> None:
    store.add(
        "example-key",
        type="fact",
        description="AWS's documented example key",
        body="AKIA" + "Z7Q3KX2M4WBN5PLD",
        allow_secret=True,
    )
    assert "AKIA" in store.get("example-key").body


def test_a_store_can_allow_secrets_or_add_its_own_patterns(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="alice")
    (root / "memstore.yaml").write_text(
        "secret_patterns:\n  internal token: 'itk_[a-z0-9]{12}'\n", encoding="utf-8"
    )
    store = Store(root, agent="alice")
    with pytest.raises(SecretFound, match="internal token"):
        store.add("x", type="fact", description="uses itk_abcdef123456")
    commit_settings(root, "secrets: allow\n")
    Store(root, agent="alice").add("x", type="fact", description="key " + "ghp_" + "c" * 36)


@pytest.mark.parametrize(
    "config",
    ["secrets: maybe\n", "secret_patterns: [a, b]\n", "secret_patterns:\n  bad: '(['\n"],
)
def test_a_bad_secrets_setting_is_a_clear_error(tmp_path: Path, config: str) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="alice")
    (root / "memstore.yaml").write_text(config, encoding="utf-8")
    with pytest.raises(InvalidMemory, match="memstore.yaml|secret pattern"):
        Store(root, agent="alice")


def test_cli_refuses_with_the_pattern_and_allows_with_the_flag(store: Store) -> None:
    runner = CliRunner()
    args = ["--store", str(store.root), "--agent", "alice", "add", "k", "--type", "fact"]
    secret = "password" + "=hunter22"
    result = runner.invoke(main, [*args, "-d", "db", "--body", secret])
    assert result.exit_code == 1
    assert "password or secret assignment" in result.output and "hunter22" not in result.output
    assert "or pass --allow-secret if it is not a secret" in result.output
    assert "allow_secret" not in result.output
    result = runner.invoke(main, [*args, "-d", "db", "--body", secret, "--allow-secret"])
    assert result.exit_code == 0, result.output


@pytest.mark.anyio
async def test_an_agent_storing_a_credential_through_mcp_gets_a_readable_refusal(
    store: Store,
) -> None:
    before = snapshot(store)
    arguments = {
        "name": "db",
        "type": "fact",
        "description": "db access",
        "body": "postgres://app:" + "s3cretpw@db.internal/app",
    }
    async with Client(build_server(store, watch=False), raise_exceptions=True) as client:
        result = await client.call_tool("memory_store", arguments)
    assert result.is_error
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert "password in a URL" in block.text and "s3cretpw" not in block.text
    assert "agents have no override" in block.text
    assert "allow_secret" not in block.text and "pass --allow-secret" not in block.text
    assert snapshot(store) == before


def test_a_credential_in_a_ledger_entry_is_refused_and_nothing_is_appended(store: Store) -> None:
    ledger_io.record(store, "publish", "pkg@1.0.0", evidence="https://example.com/pkg/1.0.0")
    before = snapshot(store)
    commits = git(store.root, "rev-list", "--count", "HEAD")
    ledger_bytes = store.ledger_path.read_bytes()
    token = "ghp_" + "c" * 36
    with pytest.raises(SecretFound, match="evidence.*append-only"):
        ledger_io.record(
            store, "publish", "pkg@1.0.1", evidence=f"https://ci.example.com/1?t={token}"
        )
    with pytest.raises(SecretFound, match="note"):
        ledger_io.record(store, "publish", "pkg@1.0.1", note="password" + "=hunter22", failed=True)
    with pytest.raises(SecretFound, match="target"):
        ledger_io.claim(store, "rotate", f"key {token}")
    assert snapshot(store) == before and store.ledger_path.read_bytes() == ledger_bytes
    ledger_io.claim(store, "publish", "pkg@1.0.2")
    after_claim = snapshot(store)
    with pytest.raises(SecretFound, match="target"):
        ledger_io.release(store, "rotate", f"key {token}")
    assert snapshot(store) == after_claim
    ledger_io.release(store, "publish", "pkg@1.0.2")
    lines = store.ledger_path.read_text(encoding="utf-8")
    assert token not in lines and "hunter22" not in lines
    assert int(git(store.root, "rev-list", "--count", "HEAD")) == int(commits) + 2


def test_a_refused_ledger_record_leaves_file_and_commit_count_unchanged(store: Store) -> None:
    ledger_io.record(store, "publish", "pkg@1.0.0", evidence="https://example.com/pkg/1.0.0")
    before = snapshot(store)
    commits = git(store.root, "rev-list", "--count", "HEAD")
    with pytest.raises(SecretFound):
        ledger_io.record(
            store, "deploy", "prod", note="used token: " + "ghp_" + "d" * 36, failed=True
        )
    assert snapshot(store) == before
    assert git(store.root, "rev-list", "--count", "HEAD") == commits


def test_allow_secret_writes_a_credential_looking_ledger_note(store: Store) -> None:
    note = "rotated the key: " + "AKIA" + "Z7Q3KX2M4WBN5PLD" + " (a made-up one of the real shape)"
    event = ledger_io.record(store, "rotate", "aws-key", note=note, failed=True, allow_secret=True)
    assert event.note == note and "AKIA" in store.ledger_path.read_text(encoding="utf-8")


def test_cli_ledger_record_refuses_a_credential_note_and_takes_the_override(store: Store) -> None:
    runner = CliRunner()
    args = ["--store", str(store.root), "--agent", "alice", "ledger", "record", "rotate", "key"]
    note = "password" + "=hunter22"
    before = snapshot(store)
    result = runner.invoke(main, [*args, "--failed", "--note", note])
    assert result.exit_code == 1
    assert "append-only" in result.output and "hunter22" not in result.output
    assert snapshot(store) == before
    result = runner.invoke(main, [*args, "--failed", "--note", note, "--allow-secret"])
    assert result.exit_code == 0, result.output
    assert "hunter22" in store.ledger_path.read_text(encoding="utf-8")


# -- every write, every field (issue #11 item 15) ----------------------------------------------

# The issue's own example: a value starting with `$` once passed as a placeholder.
DOLLAR = "password: " + "$uperS3cret!x"


def _rule(store: Store) -> None:
    session.correct(store, "no-friday-deploys", description="no deploys on Fridays")


WRITES: dict[str, Callable[[Store], object]] = {
    "applies_when": lambda s: session.correct(
        s, "r", description="rule", applies_when=["deploy", DOLLAR]
    ),
    "evidence (rule)": lambda s: session.correct(s, "r", description="rule", evidence=DOLLAR),
    "severity-free extra": lambda s: s.add(
        "x", type="fact", description="d", extra={"runbook_notes": ["DB_PASSWORD=" + "Xk9vTq2LmP"]}
    ),
    "deprecate reason": lambda s: s.deprecate("no-friday-deploys", f"leaked: {DOLLAR}"),
    "confirm reason": lambda s: as_agent(s, "bob").confirm("no-friday-deploys", DOLLAR),
    "outcome evidence": lambda s: session.record_outcome(
        s, "no-friday-deploys", "heeded", "used redis://:" + "p4ss@h"
    ),
    "ledger note": lambda s: ledger_io.record(s, "deploy", "prod", note=DOLLAR, failed=True),
    "ledger evidence": lambda s: ledger_io.record(
        s, "deploy", "prod", evidence="https://ci.example.com/1?api_key=" + "Zq81mXr42LpQ0v"
    ),
    "ledger action": lambda s: ledger_io.claim(s, "rotate", "aws_secret_access_key=" + "wJalr9Kq2"),
}


@pytest.mark.parametrize("field", list(WRITES))
def test_every_write_refuses_a_credential_in_every_field_and_writes_nothing(
    store: Store, field: str
) -> None:
    _rule(store)
    before = snapshot(store)
    with pytest.raises(SecretFound, match="credential"):
        WRITES[field](store)
    assert snapshot(store) == before


def test_restore_reason_is_scanned(store: Store) -> None:
    _rule(store)
    store.deprecate("no-friday-deploys", "obsolete")
    before = snapshot(store)
    with pytest.raises(SecretFound, match="reason"):
        store.restore("no-friday-deploys", "back: " + DOLLAR)
    assert snapshot(store) == before


@pytest.mark.anyio
async def test_mcp_ledger_record_refuses_a_password_in_its_note(store: Store) -> None:
    """The issue's case: a password reached the permanent ledger through MCP."""
    before = snapshot(store)
    async with serve(store.root, "alice") as client:
        result = await client.call_tool(
            "ledger_record",
            {
                "action": "deploy",
                "target": "prod",
                "evidence": "https://ci.example.com/runs/1",
                "note": DOLLAR,
            },
        )
    assert result.is_error
    assert "note looks like it holds a credential" in text(result)
    assert "uperS3" not in text(result)
    after = snapshot(store)  # the server's own index aside, under the ignored .memstore/
    assert (after[0], after[2]) == (before[0], before[2])


@pytest.mark.anyio
async def test_mcp_memory_store_refuses_a_credential_in_a_rule_field(store: Store) -> None:
    before = snapshot(store)
    result = await call(
        store,
        "memory_store",
        name="db-rule",
        type="correction",
        description="use the replica",
        applies_when=["psql", "PGPASSWORD=" + "Tq84mWx2Lp"],
    )
    assert result.is_error and "applies_when" in text(result)
    assert snapshot(store) == before


# -- lint: what was committed by hand -----------------------------------------------------------


def _commit_all(store: Store, message: str) -> None:
    git(store.root, "add", "-A", ".")
    git(store.root, "commit", "-q", "-m", message)


def test_lint_reports_a_credential_in_reasons_extra_fields_and_record_lines(
    store: Store,
) -> None:
    memory = store.add("db-notes", type="fact", description="db notes", body="see runbook")
    path = store.root / "fact" / "db-notes.md"
    text_ = path.read_text(encoding="utf-8").replace(
        "tags:", "applies_when:\n- DB_PASSWORD=" + "Xk9vTq2LmP\ntags:", 1
    )
    if "applies_when" not in text_:  # no tags line: put it before the closing fence
        text_ = text_.replace("\n---\n", "\napplies_when:\n- DB_PASSWORD=Xk9vTq2LmP\n---\n", 1)
    path.write_text(text_, encoding="utf-8")
    event = ledger_io.record(store, "deploy", "prod", note=DOLLAR, failed=True, allow_secret=True)
    with store.outcomes_path.open("a", encoding="utf-8") as f:
        line = {"at": event.at, "actor": "alice", "name": memory.name, "outcome": "heeded"}
        f.write(json.dumps({**line, "status": "draft", "evidence": "Bearer " + "a8Fk2x9" * 4}))
        f.write("\n")
    _commit_all(store, "hand edits")
    found = [str(p) for p in lint.lint_store(store)]
    assert any(p.startswith("fact/db-notes.md: applies_when looks like") for p in found), found
    assert any(p.startswith("ledger.jsonl:1: note looks like") for p in found), found
    assert any(p.startswith("outcomes.jsonl:1: evidence looks like") for p in found), found
    assert not any("Xk9v" in p or "uperS3" in p or "a8Fk" in p for p in found)


def test_lint_reports_a_credential_in_a_confirmation_reason(store: Store) -> None:
    store.add("db-notes", type="fact", description="db notes")
    as_agent(store, "bob").confirm("db-notes", "checked with " + DOLLAR, allow_secret=True)
    found = [str(p) for p in lint.lint_store(store)]
    assert any("confirmed_reason looks like it holds a credential" in p for p in found), found
    commit_settings(store.root, "secrets: allow\n")
    assert not any("credential" in str(p) for p in lint.lint_store(Store(store.root, "alice")))


# -- detect-secrets is loaded only to scan -------------------------------------------------------


def _imports_detect_secrets(store: Store, *args: str) -> bool:
    code = (
        "import sys\n"
        "from memstore.faces.cli.main import main\n"
        "try:\n"
        f"    main({list(args)!r}, prog_name='memstore')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('detect_secrets' in sys.modules)\n"
    )
    env = {**os.environ, "MEMSTORE_DIR": str(store.root), "MEMSTORE_AGENT": "alice"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return done.stdout.strip().splitlines()[-1] == "True"


def test_detect_secrets_is_imported_only_by_a_write_whose_text_a_plugin_could_match(
    store: Store,
) -> None:
    store.add("notes", type="fact", description="plain notes")
    assert not _imports_detect_secrets(store, "--help")
    assert not _imports_detect_secrets(store, "list")
    assert not _imports_detect_secrets(store, "add", "more", "--type", "fact", "-d", "d")
    assert _imports_detect_secrets(
        store, "add", "keyed", "--type", "fact", "-d", "d", "--body", "the api key rotates"
    )


def test_every_detect_secrets_plugin_has_needles_or_runs_on_long_tokens() -> None:
    # A text with none of the needles and no long token skips detect-secrets (not even
    # imported): that is only safe while every plugin it would run is covered.
    from memstore.storage import secrets

    for plugin in secrets._detect_secrets():  # pyright: ignore[reportPrivateUsage]
        assert plugin.needles or plugin.long_run, plugin.name


def test_a_plain_memory_is_scanned_without_importing_detect_secrets() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from memstore.storage import secrets; "
        "secrets.scan({'d': 'Validate API input with zod schemas'}, secrets.compile_patterns()); "
        "print('detect_secrets' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_detect_secrets_plugins_load_and_match_without_loading_requests() -> None:
    # Its plugins import `requests` to verify a secret with its service, which memstore never
    # asks: loading it was most of loading detect-secrets.
    code = (
        "import sys; from memstore.storage import secrets; "
        "key = 'sk_live_' + '4eC39HqLyjWDarjtT1zdp7dc'; "
        "found = secrets.scan({'d': 'the api key is ' + key}, secrets.compile_patterns()); "
        "print('detect_secrets' in sys.modules, 'requests' in sys.modules, "
        "[f.pattern for f in found]); "
        "import requests; print(requests.Response.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["True False ['Stripe secret key']", "requests.models"]
