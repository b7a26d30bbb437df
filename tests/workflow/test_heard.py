"""A person's correction caught as it is said: the UserPromptSubmit hook turns a prompt's
standing rule into a draft correction of that person, and leaves ordinary requests alone."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.storage.store import Store
from memstore.workflow.session import agent as session
from memstore.workflow.session import heard
from tests.conftest import git
from tests.workflow.test_workflow import ROOT, hook_command, run_hook

CORRECTIONS = {
    # prompt: the correction saved
    "no — never bump the version without asking": "Never bump the version without asking",
    "No, don't deploy on Fridays.": "Don't deploy on Fridays.",
    "Never push directly to main.": "Never push directly to main.",
    "From now on, run the linter before you commit.": (
        "From now on, run the linter before you commit."
    ),
    "stop adding comments to every line": "Stop adding comments to every line",
    "Always use pnpm in this repo, not npm.": "Always use pnpm in this repo, not npm.",
    "nope. don't ever force-push to a shared branch": "Don't ever force-push to a shared branch",
    "Please never edit the generated files under dist/": (
        "Never edit the generated files under dist/"
    ),
    "No, that's wrong. Use pnpm, not npm.": "Use pnpm, not npm.",
    "going forward, write the tests first": "Going forward, write the tests first",
    "I told you never to run migrations against prod": "Never run migrations against prod",
    "ugh, stop rewriting my commit messages": "Stop rewriting my commit messages",
    "no more emojis in commit messages": "No more emojis in commit messages",
    "wrong — you shouldn't touch the lockfile by hand": "You shouldn't touch the lockfile by hand",
    "Actually, always ask before deleting a branch.": "Always ask before deleting a branch.",
    "ok that worked. From now on keep PRs under 300 lines please.": (
        "From now on keep PRs under 300 lines"
    ),
    "Remember to always run make check before pushing.": "Always run make check before pushing.",
}

REQUESTS = [
    "Add a --json flag to the list command",
    "Can you fix the failing test in tests/test_cli.py?",
    "Don't worry about the docs for now, just fix the bug",
    "Please stop the dev server",
    "Never mind, let's do the other approach",
    "Always the same error when I run the tests: ImportError",
    "It never finishes, can you look at why the build hangs?",
    "Make the parser always return a list",
    "Why do you always add a trailing newline?",
    "don't change the public API in this PR",
    "Please don't delete the migration file",
    "ok, don't change the public API in this PR",
    "Actually, don't run the full suite, just the unit tests",
    "wait, don't push yet",
    "Stop.",
    "no",
    "no, the other file",
    "No, I meant the staging config, not prod",
    "The function should never return None",
    "/review never push to main",
    "Refactor the order service and run the tests",
    "I never said that",
    "Use a dict instead of a list here",
    "Does it always fail on CI or only locally?",
    "never had this problem before, what changed?",
    "We always deployed on Fridays before the incident",
    "Here's the log:\n```\nnever call close twice\n```\nwhat does it mean",
    "> Never push to main\nis this rule in CLAUDE.md still needed?",
    "Next time?",
    "stop doing that",
    "never do that again",
    "always works on my machine",
    "<task-notification>Never push to main</task-notification>",
    "Fix the release notes.\n" + "Always check the changelog entry. " * 80,  # a pasted text
]


def test_corrections_are_the_standing_rules_a_person_sets() -> None:
    for prompt, said in CORRECTIONS.items():
        assert [h.said for h in heard.corrections(prompt)] == [said], prompt


def test_an_ordinary_request_is_no_correction() -> None:
    for prompt in REQUESTS:
        assert heard.corrections(prompt) == [], prompt


def test_a_prohibition_with_a_condition_applies_to_the_action_alone_too() -> None:
    (found,) = heard.corrections("no — never bump the version without asking")
    assert heard.patterns(found) == ("bump the version", "bump the version without asking")
    (cand,) = heard.candidates("no — never bump the version without asking", "s1")
    assert (cand.name, cand.type, cand.source) == (
        "never-bump-version-without-asking",
        "correction",
        "prompt:s1",
    )
    assert dict(cand.extra)["evidence"] == "no — never bump the version without asking"


def prompt_payload(prompt: str, project: Path) -> str:
    return json.dumps(
        {
            "session_id": "0f9c2a51-7d3e-4b8e-9a61-2f4c8d7e1b30",
            "transcript_path": str(project / "transcript.jsonl"),
            "cwd": str(project),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": prompt,
        }
    )


def test_documented_prompt_hook_saves_the_persons_correction(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "memory", agent="alice")
    git(store.root, "config", "user.name", "bob")  # the person at the keyboard
    before = git(store.root, "rev-list", "--count", "HEAD")
    said = "no — never bump the version without asking"
    done = run_hook(hook_command("UserPromptSubmit"), tmp_path, prompt_payload(said, tmp_path))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "UserPromptSubmit"
    assert "`never-bump-version-without-asking` [draft]" in out["additionalContext"]
    assert "of bob" in out["additionalContext"]
    memory = store.get("never-bump-version-without-asking")
    # The person's, not the agent's $MEMSTORE_AGENT the hook's settings set.
    assert (memory.owner, memory.status, memory.type) == ("bob", "draft", "correction")
    assert memory.extra["evidence"] == said
    assert memory.extra["applies_when"][0] == "bump the version"
    assert int(git(store.root, "rev-list", "--count", "HEAD")) == int(before) + 1
    assert session.check(store, "bump the version to 1.5.0").verdict.value == "warn"
    # The same words again: nothing new.
    again = run_hook(hook_command("UserPromptSubmit"), tmp_path, prompt_payload(said, tmp_path))
    assert again.returncode == 0 and again.stdout == ""
    assert int(git(store.root, "rev-list", "--count", "HEAD")) == int(before) + 1


def test_prompt_hook_never_breaks_the_prompt(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "memory", agent="alice")
    git(store.root, "config", "user.name", "bob")
    before = git(store.root, "rev-list", "--count", "HEAD")
    command = hook_command("UserPromptSubmit")
    for stdin in (
        prompt_payload("Can you fix the failing test?", tmp_path),  # an ordinary request
        "not json",
        json.dumps({"hook_event_name": "UserPromptSubmit"}),  # no prompt
        json.dumps([1, 2]),
    ):
        done = run_hook(command, tmp_path, stdin)
        assert (done.returncode, done.stdout) == (0, ""), stdin
        assert "Traceback" not in done.stderr
    # A store that is not there, or no person to own the draft: still exit 0, nothing said.
    nowhere = run_hook(
        command, tmp_path / "elsewhere", prompt_payload("never push to main", tmp_path)
    )
    assert (nowhere.returncode, nowhere.stdout) == (0, "")
    git(store.root, "config", "--unset", "user.name")
    nobody = run_hook(command, tmp_path, prompt_payload("never push to main", tmp_path))
    assert (nobody.returncode, nobody.stdout) == (0, "")
    assert "Traceback" not in nobody.stderr
    assert git(store.root, "rev-list", "--count", "HEAD") == before


def test_config_hooks_prints_the_documented_settings(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "memory", agent="alice")
    runner = CliRunner()
    done = runner.invoke(main, ["--store", str(store.root), "config", "claude-code", "--hooks"])
    assert done.exit_code == 0, done.output
    printed = json.loads(done.stdout)
    prefix = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "memstore"])
    documented = (ROOT / "docs" / "hooks" / "claude-code-settings.json").read_text("utf-8")
    documented = documented.replace(
        'memstore --store \\"$CLAUDE_PROJECT_DIR/memory\\"',
        f"{prefix} --store {shlex.quote(str(store.root))}".replace('"', '\\"'),
    )
    assert printed == json.loads(documented)
    assert "UserPromptSubmit" in printed["hooks"]
    assert "Edit" in printed["hooks"]["PreToolUse"][0]["matcher"]
    other = runner.invoke(main, ["--store", str(store.root), "config", "cursor", "--hooks"])
    assert other.exit_code == 2 and "--hooks is for claude-code" in other.output
    assert os.environ.get("MEMSTORE_AGENT") is None


def test_short_names_stay_unique_against_the_store(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "memory", agent="alice")
    first = heard.capture(store, "Never push to main branch directly without a review")
    second = heard.capture(store, "no, never push to main branch directly on Fridays")
    assert first.created == ("correction/never-push-main-branch-directly",)
    assert second.created == ("correction/never-push-main-branch-directly-2",)
    assert store.get("never-push-main-branch-directly-2").description == (
        "Never push to main branch directly on Fridays"
    )
