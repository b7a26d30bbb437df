"""`lint` on hand-made files: broken ones, self-approvals and forged confirmations."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memstore.model.memory import render
from memstore.storage.store import Store
from memstore.workflow.care import lint
from tests.conftest import GIT_ENV, as_agent, git


def write(store: Store, rel: str, text: str | bytes) -> Path:
    path = store.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def good(name: str = "good", **overrides: str) -> str:
    fields = {
        "name": name,
        "description": "A valid memory",
        "type": "fact",
        "status": "draft",
        "owner": "alice",
        "created": "2026-11-30T08:00:00Z",
        "updated": "2026-11-30T08:00:00Z",
    }
    fields.update(overrides)
    head = "".join(f"{k}: {v}\n" for k, v in fields.items())
    return f"---\n{head}tags: []\n---\n\nBody.\n"


def messages(store: Store) -> list[str]:
    return [str(p) for p in lint.lint_store(store)]


def human_commit(store: Store, author: str, message: str = "hand edit") -> None:
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": author, "GIT_COMMITTER_NAME": author}
    subprocess.run(["git", "add", "-A"], cwd=store.root, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", message], cwd=store.root, env=env, check=True)


def test_a_clean_store_has_no_problems(store: Store) -> None:
    store.add("a", type="fact", description="d", links=[])
    as_agent(store, "bob").confirm("a", "ok")
    assert messages(store) == []


@pytest.mark.parametrize(
    ("rel", "text", "expected"),
    [
        (
            "fact/bad.md",
            "---\nname: [oops\n---\n",
            "fact/bad.md: front matter is not valid YAML at line 2",
        ),
        ("fact/list.md", "---\n- a\n---\n", "must be a mapping"),
        ("fact/empty.md", "", "empty file"),
        ("fact/bin.md", b"\xff\xfe\x00binary", "not UTF-8"),
        ("fact/crlf.md", good("crlf").replace("\n", "\r\n"), "CRLF line endings"),
        ("fact/Bad_Name.md", good("Bad_Name"), "invalid name 'Bad_Name'"),
        ("fact/mismatch.md", good("other"), "does not match the file name 'mismatch.md'"),
        (
            "fact/wrong-folder.md",
            good("wrong-folder", type="decision"),
            "does not match its folder",
        ),
        ("opinion/typed.md", good("typed", type="opinion"), "unknown type 'opinion'"),
        ("fact/odd.md", good("odd", status="approved"), "unknown status 'approved'"),
        ("fact/long.md", good("long", description="x" * 250), "250 characters; the limit is 200"),
        ("fact/nobody.md", good("nobody", status="confirmed"), "has no confirmed_by"),
        ("fact/gone.md", good("gone", status="deprecated"), "no deprecated_reason"),
        ("fact/.good.md.abc.tmp", "partial", "temp file left by an interrupted write"),
    ],
)
def test_lint_names_each_broken_hand_made_file(
    store: Store, rel: str, text: str | bytes, expected: str
) -> None:
    write(store, rel, text)
    found = messages(store)
    assert any(expected in m and m.startswith(rel) for m in found), found


def test_lint_reports_duplicate_names_in_two_folders(store: Store) -> None:
    write(store, "fact/twin.md", good("twin"))
    write(store, "decision/twin.md", good("twin", type="decision"))
    found = messages(store)
    assert sum("duplicate name 'twin'" in m for m in found) == 2


def test_lint_reports_a_hand_made_self_approval(store: Store) -> None:
    write(store, "fact/mine.md", good("mine", status="confirmed", confirmed_by="alice"))
    assert any("confirmed by its own owner (alice)" in m for m in messages(store))


def test_lint_reports_a_confirmation_committed_by_the_owner_under_another_name(
    store: Store,
) -> None:
    store.add("claim", type="fact", description="A claim")
    path = store.root / "fact" / "claim.md"
    memory = store.get("claim")
    from memstore.model.memory import evolve

    forged = evolve(memory, status="confirmed", confirmed_by="bob", confirmed_at="x")
    path.write_text(render(forged), encoding="utf-8")
    human_commit(store, "alice", "confirm it myself, pretending to be bob")
    found = messages(Store(store.root, agent="carol"))
    assert any("self-approval" in m and "(alice)" in m for m in found), found


def test_lint_reports_a_confirmation_forged_by_a_third_party(store: Store) -> None:
    store.add("claim", type="fact", description="A claim")
    path = store.root / "fact" / "claim.md"
    text = (
        path.read_text(encoding="utf-8")
        .replace("status: draft", "status: confirmed")
        .replace("tags: []", "tags: []\nconfirmed_by: bob")
    )
    path.write_text(text, encoding="utf-8")
    human_commit(store, "mallory")
    found = messages(Store(store.root, agent="carol"))
    assert any("forged confirmation" in m and "'mallory'" in m for m in found), found


def test_lint_checks_an_uncommitted_confirmation_against_the_current_identity(
    store: Store,
) -> None:
    store.add("claim", type="fact", description="A claim")
    path = store.root / "fact" / "claim.md"
    text = path.read_text(encoding="utf-8")
    text = text.replace("status: draft", "status: confirmed").replace(
        "tags: []", "tags: []\nconfirmed_by: bob"
    )
    path.write_text(text, encoding="utf-8")
    assert messages(Store(store.root, agent="bob")) == []
    found = messages(Store(store.root, agent="mallory"))
    assert any(
        "forged confirmation" in m and "confirmed_by says 'bob'" in m and "you ('mallory')" in m
        for m in found
    ), found


def test_a_genuine_confirmation_by_a_human_commit_passes(store: Store) -> None:
    store.add("claim", type="fact", description="A claim")
    path = store.root / "fact" / "claim.md"
    text = path.read_text(encoding="utf-8").replace("status: draft", "status: confirmed")
    path.write_text(text.replace("tags: []", "tags: []\nconfirmed_by: bob"), encoding="utf-8")
    human_commit(store, "bob")
    assert messages(store) == []


def test_the_pre_commit_hook_refuses_a_self_approval(store: Store) -> None:
    env = {**os.environ, "MEMSTORE_DIR": str(store.root)}
    subprocess.run(
        [sys.executable, "-m", "memstore", "--agent", "alice", "install-hook"],
        env=env,
        check=True,
        capture_output=True,
    )
    store.add("claim", type="fact", description="A claim")
    path = store.root / "fact" / "claim.md"
    text = path.read_text(encoding="utf-8").replace("status: draft", "status: confirmed")
    path.write_text(text.replace("tags: []", "tags: []\nconfirmed_by: bob"), encoding="utf-8")
    before = git(store.root, "rev-parse", "HEAD")
    hook_env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": "alice"}
    subprocess.run(["git", "add", "-A"], cwd=store.root, env=hook_env, check=True)
    done = subprocess.run(
        ["git", "commit", "-qm", "sneaky"],
        cwd=store.root,
        env=hook_env,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "self-approval" in done.stdout + done.stderr
    assert git(store.root, "rev-parse", "HEAD") == before
    hook_env["GIT_AUTHOR_NAME"] = "bob"
    done = subprocess.run(
        ["git", "commit", "-qm", "bob confirms"],
        cwd=store.root,
        env=hook_env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_other_commands_keep_serving_valid_memories_beside_broken_files(store: Store) -> None:
    store.add("fine", type="fact", description="Still here")
    write(store, "fact/broken.md", "---\n: : :\n---\n")
    write(store, "fact/binary.md", b"\x00\x01\x02")
    assert [m.name for m in store.list()] == ["fine"]
    assert store.get("fine").description == "Still here"


@pytest.mark.parametrize("folder", ["mémoire", "my memory", "記憶", 'odd"name'])
def test_a_real_confirmation_passes_in_a_store_folder_with_any_name(
    tmp_path: Path, folder: str
) -> None:
    git(tmp_path, "init", "-q", "repo")  # the store is a folder inside a bigger repository
    store = Store.init(tmp_path / "repo" / folder, agent="alice")
    store.add("claim", type="fact", description="A claim")
    as_agent(store, "bob").confirm("claim", "checked")
    assert messages(store) == []
    path = store.root / "fact" / "claim.md"
    text = path.read_text(encoding="utf-8").replace("confirmed_by: bob", "confirmed_by: carol")
    path.write_text(text, encoding="utf-8")
    human_commit(store, "mallory")
    assert any("forged confirmation" in m for m in messages(store))


@pytest.mark.parametrize(
    "head",
    [
        "a: 1\nb: [x, 2, 3.5, null, true, ~, .inf]\nc: {d: e}\n",
        "a: &x [1]\nb: *x\n",
        "base: &b {k: v}\nm:\n  <<: *b\n  z: 1\n",
        "a: !!binary aGVsbG8=\nb: !!set {x, y}\nc: !!omap [{x: 1}]\n",
        "? [a]\n: 1\n",
        "a: !!int abc\n",
        "a: !!python/object:os.system x\n",
        "created: 2026-11-30T08:00:00Z\nd: 2026-11-30\n",
        "a: 0x1F\nb: 1_000\nc: 0o17\nd: yes\ne: Off\nf: -.5\n",
        "a: !!str 12\nb: '12'\nc: |\n  two\n  lines\n",
        "a: !custom x\n",
        "- a\n- b\n",
    ],
)
def test_front_matter_reads_as_pyyaml_builds_it(head: str) -> None:
    """The loader's quick path for plain front matter gives PyYAML's values and errors."""
    import yaml

    from memstore.model import memory_yaml

    loader = memory_yaml._yaml()[0]  # pyright: ignore[reportPrivateUsage]

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Plain(base):
        pass

    memory_yaml._without_timestamps(Plain)  # pyright: ignore[reportPrivateUsage]

    def read(loader: type) -> tuple[str, str]:
        try:
            return "ok", repr(yaml.load(head, Loader=loader))  # noqa: S506 - safe loaders
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            return type(e).__name__, str(e)

    assert read(loader) == read(Plain)


def test_lint_parses_each_file_once_and_counts_from_that_pass(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from memstore.faces.cli.main import main
    from memstore.model import memory_yaml

    for i in range(5):
        store.add(f"m{i}", type="fact", description=f"memory number {i}")
    as_agent(store, "bob").confirm("m0", "checked")
    texts = {p.read_text(encoding="utf-8") for p in store.root.glob("*/*.md")}
    parsed: list[str] = []
    split = memory_yaml.split

    def counted(text: str) -> Any:
        parsed.append(text)
        return split(text)

    monkeypatch.setattr(memory_yaml, "split", counted)
    (store.cache / "trust.json").unlink(missing_ok=True)  # as in a fresh clone
    result = CliRunner().invoke(main, ["--store", str(store.root), "lint"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "ok: 5 memories, no problems"
    # Each file's text: once by the file checks, at most once more where the history replay
    # meets it; no second pass over the files to count them.
    assert all(1 <= parsed.count(t) <= 2 for t in texts), [parsed.count(t) for t in texts]
