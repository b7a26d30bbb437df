"""`memstore.yaml`: unknown settings are refused, the trust settings count only as committed
(an uncommitted change is reported, never obeyed), who changed them is judged, and verdicts
cached under other trust settings are never served. Real git repositories throughout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidMemory
from memstore.faces.cli.main import main
from memstore.storage import settings
from memstore.storage.store import Store
from memstore.workflow.care import lint
from memstore.workflow.rules.rules import Verdict
from memstore.workflow.session import agent as session
from tests.conftest import GIT_ENV, as_agent, git


def commit_as(root: Path, who: str, rel: str, text: str, message: str = "settings") -> None:
    """Write `rel` and commit it by hand as `who` (author and committer)."""
    (root / rel).write_text(text, encoding="utf-8")
    env = {**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": who, "GIT_COMMITTER_NAME": who}
    subprocess.run(["git", "add", rel], cwd=root, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, env=env, check=True)


def cli(*args: str, agent: str = "coder") -> tuple[int, str, str]:
    done = CliRunner().invoke(main, ["--agent", agent, *args])
    return done.exit_code, done.stdout, done.stderr


def run(store: Store, *args: str, agent: str = "coder") -> tuple[int, str, str]:
    """`memstore` in a process of its own, as a person or an agent runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "memstore", "--store", str(store.root), "--agent", agent, *args],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


# -- unknown settings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "named", "nearest"),
    [
        ("human: [alice]", "'human'", "did you mean 'humans'?"),
        ("require_signature: true", "'require_signature'", "did you mean 'require_signatures'?"),
        ("gaurds: false", "'gaurds'", "did you mean 'guards'?"),
        ("allowed_signer: keys", "'allowed_signer'", "did you mean 'allowed_signers'?"),
        ("colour: blue", "'colour'", "the settings are: types, humans"),
    ],
)
def test_an_unknown_setting_is_an_error_naming_it_and_the_nearest(
    store: Store, line: str, named: str, nearest: str
) -> None:
    (store.root / "memstore.yaml").write_text(f"types: [adr]\n{line}\n", encoding="utf-8")
    with pytest.raises(InvalidMemory, match="unknown setting") as caught:
        Store(store.root, agent="alice")
    assert named in str(caught.value) and nearest in str(caught.value)
    for command in (["list"], ["check", "ls"], ["lint"], ["doctor"]):
        code, out, err = cli(*command)
        assert code == 1, command
        lines = (out + err).strip().splitlines()
        assert len(lines) == 1 and "unknown setting" in lines[0] and named in lines[0], lines
        assert "Traceback" not in out + err


def test_an_unknown_setting_committed_is_refused_too(store: Store) -> None:
    commit_as(store.root, "human", "memstore.yaml", "require_signature: true\n")
    (store.root / "memstore.yaml").write_text("require_signatures: true\n", encoding="utf-8")
    with pytest.raises(InvalidMemory, match=r"as committed.*'require_signature'"):
        settings.signing_settings(store.root)


# -- trust settings count only as committed ------------------------------------------------------


def human_p0(store: Store) -> None:
    session.correct(
        as_agent(store, "human"),
        "no-deploy",
        description="Never deploy prod by hand",
        severity="p0",
        applies_when=["deploy prod"],
    )


def test_humans_written_but_not_committed_are_reported_not_obeyed(store: Store) -> None:
    human_p0(store)
    with (store.root / "memstore.yaml").open("a", encoding="utf-8") as f:
        f.write("humans: [human]\n")  # as the README's step would, before any commit
    coder = as_agent(store, "coder")
    assert session.check(coder, "deploy prod").verdict is Verdict.WARN
    code, out, err = run(store, "check", "deploy prod")
    assert code == 3 and "in force" not in out, (code, out)  # warns, does not block
    assert "'humans' changed but not committed, so not in force" in err
    assert len(err.strip().splitlines()) == 1, err
    found = [str(p) for p in lint.lint_store(coder)]
    assert any(p.startswith("memstore.yaml: 'humans' changed but not committed") for p in found)
    code, out, err = run(store, "doctor")
    assert code == 1 and "'humans' changed but not committed" in out, out
    # Committed by the person it names, it is in force at once and nothing is reported.
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    assert session.check(as_agent(store, "coder"), "deploy prod").verdict is Verdict.BLOCK
    code, out, err = run(store, "check", "deploy prod")
    assert code == 4 and "in force" in out and err == "", (code, out, err)
    assert [str(p) for p in lint.lint_store(as_agent(store, "coder"))] == []


@pytest.mark.parametrize(
    ("committed", "work", "key"),
    [
        ("humans: [human]\n", "humans: [human, coder]\n", "'humans'"),
        ("guards: true\n", "guards: false\n", "'guards'"),
        ("require_signatures: false\n", "require_signatures: true\n", "'require_signatures'"),
        ("secrets: refuse\n", "secrets: allow\n", "'secrets'"),
        (None, "allowed_signers: keys\n", "'allowed_signers'"),
    ],
)
def test_each_trust_setting_changed_in_the_working_tree_is_reported_and_the_committed_holds(
    store: Store, committed: str | None, work: str, key: str
) -> None:
    if committed is not None:
        commit_as(store.root, "human", "memstore.yaml", committed)
    before = (
        settings.store_humans(store.root),
        settings.disabled_guards(store.root, ["rm-rf"]),
        settings.signing_settings(store.root),
        settings.secret_settings(store.root)[0],
    )
    (store.root / "memstore.yaml").write_text(work, encoding="utf-8")
    after = (
        settings.store_humans(store.root),
        settings.disabled_guards(store.root, ["rm-rf"]),
        settings.signing_settings(store.root),
        settings.secret_settings(store.root)[0],
    )
    assert after == before
    messages = [m for _, m in settings.uncommitted(store.root)]
    assert len(messages) == 1 and messages[0].startswith(f"{key} changed but not committed")


def test_a_setting_removed_but_not_committed_still_holds(store: Store) -> None:
    commit_as(store.root, "human", "memstore.yaml", "guards: false\n")
    (store.root / "memstore.yaml").unlink()
    assert settings.disabled_guards(store.root, ["rm-rf"]) == {"rm-rf"}
    assert [m for _, m in settings.uncommitted(store.root)][0].startswith("'guards' changed")


def test_other_settings_follow_the_working_tree(store: Store) -> None:
    (store.root / "memstore.yaml").write_text("types: [adr]\nstale_after: 30\n", "utf-8")
    assert "adr" in settings.store_types(store.root)
    assert settings.upkeep_settings(store.root).stale_after_days == 30
    assert settings.uncommitted(store.root) == []


def test_an_uncommitted_allowed_signers_file_is_reported(store: Store) -> None:
    (store.root / "allowed_signers").write_text("alice ssh-ed25519 AAAA\n", encoding="utf-8")
    found = [str(p) for p in lint.lint_store(store)]
    assert any(p.startswith("allowed_signers: changed but not committed") for p in found), found


def test_the_settings_are_parsed_once_per_version(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    settings.store_humans(store.root)
    loads: list[object] = []
    real = yaml.safe_load

    def counting(stream: str) -> object:
        loads.append(stream)
        return real(stream)

    monkeypatch.setattr(yaml, "safe_load", counting)
    for _ in range(3):
        assert settings.store_humans(store.root) == ("human",)
        assert not settings.signing_settings(store.root).required
    assert loads == []
    (store.root / "memstore.yaml").write_text("humans: [human]\ntypes: [adr]\n", "utf-8")
    assert "adr" in settings.store_types(store.root)
    assert len(loads) == 1


# -- who changes the trust settings --------------------------------------------------------------


def settings_problems(store: Store) -> list[str]:
    return [str(p) for p in lint.lint_store(store) if p.path == "memstore.yaml"]


def test_humans_named_by_an_agent_not_among_them_is_flagged(store: Store) -> None:
    commit_as(store.root, "coder", "memstore.yaml", "humans: [human]\n")
    found = settings_problems(store)
    assert len(found) == 1 and "changed 'humans'" in found[0] and "('coder')" in found[0]
    assert "not by one of the store's humans (human)" in found[0]


def test_a_human_changing_the_settings_is_not_flagged(store: Store) -> None:
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    commit_as(store.root, "human", "memstore.yaml", "humans: [human, carol]\nguards: false\n")
    commit_as(store.root, "human", "memstore.yaml", "humans: [carol]\n")  # hands over
    commit_as(store.root, "carol", "memstore.yaml", "humans: [carol]\ntypes: [adr]\n")
    assert settings_problems(store) == []


@pytest.mark.parametrize(
    "change",
    [
        "humans: [human, coder]\n",
        "humans: [human]\nguards: false\n",
        "humans: [human]\nsecrets: allow\n",
    ],
)
def test_an_agent_changing_who_is_trusted_is_flagged(store: Store, change: str) -> None:
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    commit_as(store.root, "coder", "memstore.yaml", change)
    found = settings_problems(store)
    assert len(found) == 1 and "('coder')" in found[0], found


def test_an_agent_changing_the_allowed_signers_is_flagged(store: Store) -> None:
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    commit_as(store.root, "coder", "allowed_signers", "bob ssh-ed25519 AAAA\n")
    found = settings_problems(store)
    assert len(found) == 1 and "changed the allowed signers" in found[0], found


def test_an_agent_changing_a_non_trust_setting_is_not_flagged(store: Store) -> None:
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    commit_as(store.root, "coder", "memstore.yaml", "humans: [human]\ntypes: [adr]\n")
    assert settings_problems(store) == []


def test_a_merge_that_takes_an_agents_side_is_flagged_by_that_side(store: Store) -> None:
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    git(store.root, "checkout", "-q", "-b", "side")
    commit_as(store.root, "coder", "memstore.yaml", "humans: [human, coder]\n", "mine")
    side = git(store.root, "rev-parse", "HEAD").strip()
    git(store.root, "checkout", "-q", "main")
    commit_as(store.root, "human", "notes.txt", "unrelated\n", "notes")
    git(store.root, "merge", "-q", "--no-edit", "side")
    found = settings_problems(store)
    assert len(found) == 1 and side[:10] in found[0] and "('coder')" in found[0], found


def test_a_flagged_change_clears_once_a_person_reverts_it(store: Store) -> None:
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    commit_as(store.root, "coder", "memstore.yaml", "humans: [human, coder]\n")
    commit_as(store.root, "coder", "notes.txt", "unrelated\n")
    assert len(settings_problems(store)) == 1
    git(store.root, "revert", "--no-edit", "HEAD~1")  # as the person (GIT_ENV's 'human')
    assert settings_problems(store) == []


def test_a_flagged_change_clears_once_a_person_makes_it_theirs(store: Store) -> None:
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\nguards: true\n")
    commit_as(store.root, "coder", "memstore.yaml", "humans: [human]\nguards: false\n")
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\nguards: false\n")
    assert settings_problems(store) == []


def test_a_key_an_agent_added_is_flagged_while_it_is_allowed(store: Store) -> None:
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    commit_as(store.root, "human", "allowed_signers", "alice ssh-ed25519 AAAA\n")
    commit_as(
        store.root, "coder", "allowed_signers", "alice ssh-ed25519 AAAA\nbob ssh-ed25519 BBBB\n"
    )
    found = settings_problems(store)
    assert len(found) == 1 and "changed the allowed signers" in found[0]
    commit_as(store.root, "coder", "allowed_signers", "alice ssh-ed25519 AAAA\n")  # gone again
    assert settings_problems(store) == []


def test_a_staged_change_of_who_is_trusted_is_refused_before_an_agent_commits_it(
    store: Store,
) -> None:
    commit_as(store.root, "human", "memstore.yaml", "humans: [human]\n")
    (store.root / "memstore.yaml").write_text("humans: [human, coder]\n", encoding="utf-8")
    git(store.root, "add", "memstore.yaml")
    found = [str(p) for p in lint.lint_store(as_agent(store, "coder"), staged=True)]
    assert len(found) == 1 and "staged change of 'humans' would be committed by 'coder'" in found[0]
    assert lint.lint_store(as_agent(store, "human"), staged=True) == []
    (store.root / "allowed_signers").write_text("coder ssh-ed25519 AAAA\n", encoding="utf-8")
    git(store.root, "add", "allowed_signers")
    found = [str(p) for p in lint.lint_store(as_agent(store, "coder"), staged=True)]
    assert len(found) == 1 and "'humans', the allowed signers would be" in found[0], found
