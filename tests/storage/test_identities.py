"""Who may act: no identity that is empty, looks like a credential, or looks like another
identity the store knew first (UTS #39 skeletons); and a confirmation by a look-alike of the
owner is the owner's own. Real `memstore` processes, `memstore serve` with the SDK client and
hand commits in a real repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memstore.git.repository import find_repo
from memstore.model import identity
from memstore.storage import identities
from memstore.storage.store import Store
from memstore.workflow.care import lint
from tests.conftest import GIT_ENV, git
from tests.mcp_client import serve

ROOT = Path(__file__).resolve().parent.parent.parent

LOOK_ALIKES_OF_BOB = [
    "bοb",  # Greek small omicron
    "bоb",  # Cyrillic small o
    "BОB",  # Cyrillic capital O
    "b0b",  # digit zero
    "ｂοｂ",  # full-width b around a Greek omicron
    "Ƅob",  # Latin small tone six
]
CREDENTIALS = [
    "ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5",
    "AKIAZ7Q3KX2M4WBN5PLD",
    "xoxb-2952740156-8472093316-Yb3Kq9XvTz2mWp",
    "glpat-Q8xY2kWp9sV4mZ1rT6bN",
]


def cli(
    store: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=120,
    )


def commits(store: Store) -> int:
    return int(git(store.root, "rev-list", "--count", "HEAD"))


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    return lines[0]


@pytest.fixture
def bobs(store: Store) -> Store:
    """bob's draft `use-zod` in alice's store."""
    done = cli(
        store.root,
        "--agent",
        "bob",
        "add",
        "use-zod",
        "--type",
        "decision",
        "--description",
        "Validate API input with zod",
        "--body",
        "Why: types.",
    )
    assert done.returncode == 0, done.stderr
    return store


@pytest.mark.parametrize("name", LOOK_ALIKES_OF_BOB)
def test_a_look_alike_of_a_known_identity_cannot_act(bobs: Store, name: str) -> None:
    before = commits(bobs)
    done = cli(bobs.root, "--agent", name, "confirm", "use-zod", "--reason", "looks right")
    line = one_line_error(done)
    assert "looks like 'bob', another identity of this store" in line
    assert commits(bobs) == before
    assert bobs.get("use-zod").status == "draft"
    # Nor can it add memories of its own, or claim in the ledger.
    assert cli(bobs.root, "--agent", name, "ledger", "claim", "deploy", "api").returncode == 1
    assert commits(bobs) == before


def test_names_that_read_differently_still_act_and_the_first_comer_keeps_its_name(
    bobs: Store,
) -> None:
    done = cli(bobs.root, "--agent", "carol", "confirm", "use-zod", "--reason", "checked")
    assert done.returncode == 0, done.stderr
    # A look-alike that got into history by hand later does not lock bob out.
    (bobs.root / "notes.txt").write_text("x\n", encoding="utf-8")
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": "bοb", "GIT_COMMITTER_NAME": "bοb"}
    subprocess.run(["git", "add", "-A"], cwd=bobs.root, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "hand"], cwd=bobs.root, env=env, check=True)
    assert cli(bobs.root, "--agent", "bob", "ledger", "claim", "deploy", "api").returncode == 0
    line = one_line_error(cli(bobs.root, "--agent", "bοb", "ledger", "claim", "x", "y"))
    assert "'bob'" in line


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--agent", ""], {}),
        (["--agent", "   "], {}),
        ([], {"MEMSTORE_AGENT": ""}),
        ([], {"MEMSTORE_AGENT": " \t"}),
    ],
)
def test_an_empty_identity_is_refused_not_replaced_by_git_user_name(
    store: Store, args: list[str], env: dict[str, str]
) -> None:
    before = commits(store)
    done = cli(
        store.root,
        *args,
        "add",
        "x",
        "--type",
        "fact",
        "--description",
        "d",
        env={**env, **GIT_ENV},
    )
    line = one_line_error(done)
    assert "is empty" in line
    assert commits(store) == before


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_a_credential_is_never_an_identity(store: Store, credential: str) -> None:
    before = commits(store)
    for args, env in (
        (["--agent", credential], {}),
        ([], {"MEMSTORE_AGENT": credential}),
    ):
        done = cli(store.root, *args, "add", "x", "--type", "fact", "--description", "d", env=env)
        line = one_line_error(done)
        assert "looks like a credential" in line and credential not in line
    token = cli(store.root, "token", "add", credential)
    assert "looks like a credential" in one_line_error(token)
    assert commits(store) == before
    assert credential not in git(store.root, "log", "--format=%an %cn")


@pytest.mark.anyio
async def test_memstore_serve_refuses_to_start_as_a_look_alike_or_a_credential(
    bobs: Store,
) -> None:
    for name in ("bοb", CREDENTIALS[0]):
        done = subprocess.run(
            [sys.executable, "-m", "memstore", "--store", str(bobs.root), "serve"],
            input="",
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "MEMSTORE_AGENT": name},
            timeout=120,
        )
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert "Error: " in done.stderr
    async with serve(bobs.root, "carol") as client:  # a name of its own serves
        result = await client.call_tool("memory_recall", {"query": "zod"})
        assert not result.is_error


def test_http_refuses_a_token_for_a_look_alike_and_a_server_with_one(bobs: Store) -> None:
    line = one_line_error(cli(bobs.root, "token", "add", "bοb"))
    assert "looks like 'bob'" in line
    from memstore.faces import bearer

    bearer.add(bobs.cache, "bоb")  # written around the check, as by an older memstore
    done = subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(bobs.root), "serve", "--http"]
        + ["--port", "0"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 1 and "serving" not in done.stderr
    assert "looks like 'bob'" in one_line_error(done)


def test_a_hand_confirmation_by_a_look_alike_of_the_owner_is_self_approval(bobs: Store) -> None:
    path = next(bobs.root.glob("*/use-zod.md"))
    text = path.read_text("utf-8").replace("status: draft", "status: confirmed")
    path.write_text(text.replace("tags: []", "tags: []\nconfirmed_by: bοb"), encoding="utf-8")
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": "bοb", "GIT_COMMITTER_NAME": "bοb"}
    subprocess.run(["git", "add", "-A"], cwd=bobs.root, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "confirm"], cwd=bobs.root, env=env, check=True)
    assert any("self-approval" in str(p) for p in lint.lint_store(bobs))
    shown = cli(bobs.root, "--agent", "carol", "get", "use-zod", "--json")
    assert json.loads(shown.stdout)[0]["status"] == "unverified"


def test_known_identities_are_cached_by_head_and_brought_up_to_date(store: Store) -> None:
    repo = find_repo(store.root)
    assert repo is not None
    first = [n for n, _ in identities.known(repo)]
    assert "alice" in first
    kept = json.loads(identities.cache_file(repo).read_text("utf-8"))
    assert kept["head"] == git(store.root, "rev-parse", "HEAD").strip()
    (store.root / "a.txt").write_text("a\n", encoding="utf-8")
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": "dora", "GIT_COMMITTER_NAME": "dora"}
    subprocess.run(["git", "add", "-A"], cwd=store.root, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "a"], cwd=store.root, env=env, check=True)
    assert [n for n, _ in identities.known(repo)] == [*first, "dora"]
    # A cached HEAD that is no longer a commit here: the whole history is read again.
    kept["head"] = "f" * 40
    kept["names"] = []
    identities.cache_file(repo).write_text(json.dumps(kept), encoding="utf-8")
    assert [n for n, _ in identities.known(repo)] == [*first, "dora"]


def test_the_ascii_table_is_the_confusables_table_restricted_to_ascii() -> None:
    table = identity._prototypes()  # pyright: ignore[reportPrivateUsage]
    ascii_part = {k: v for k, v in table.items() if k.isascii()}
    assert ascii_part == identity._ASCII_PROTOTYPES  # pyright: ignore[reportPrivateUsage]
    assert identity.same_identity("bob", "bοb") and identity.same_identity("Ian", "lan")
    assert not identity.same_identity("bob", "rob") and not identity.same_identity("José", "Jose")


def test_a_blank_git_user_name_is_no_identity_not_the_global_one(
    store: Store, tmp_path: Path
) -> None:
    glob = tmp_path / "global.gitconfig"
    glob.write_text("[user]\n\tname = global-person\n\temail = g@example.com\n", encoding="utf-8")
    git(store.root, "config", "user.name", "   ")
    before = commits(store)
    done = cli(
        store.root,
        "add",
        "x",
        "--type",
        "fact",
        "--description",
        "d",
        env={"GIT_CONFIG_GLOBAL": str(glob)},
    )
    assert "no identity" in one_line_error(done)
    assert commits(store) == before
    assert "global-person" not in git(store.root, "log", "--format=%an")
