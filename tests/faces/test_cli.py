"""The CLI: exit codes, messages and output a person or script relies on."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.search.upkeep import Query, search
from memstore.storage.store import Store
from tests.conftest import git


def run(*args: str, input: str | None = None, agent: str | None = "alice") -> tuple[int, str]:
    prefix = ["--agent", agent] if agent else []
    result = CliRunner().invoke(main, [*prefix, *args], input=input)
    return result.exit_code, result.output


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    code, out = run("init")
    assert code == 0, out
    return tmp_path / "memory"


def test_init_creates_the_default_store_from_memstore_dir(store_dir: Path) -> None:
    assert (store_dir / ".git").is_dir()
    assert (store_dir / ".gitignore").is_file()


def test_add_reads_the_body_from_stdin(store_dir: Path) -> None:
    code, out = run(
        "add",
        "use-zod",
        "--type",
        "decision",
        "-d",
        "Use zod",
        "--tags",
        "api, ts",
        input="## Why\nDrift.\n",
    )
    assert code == 0 and "added decision/use-zod [draft]" in out
    text = (store_dir / "decision" / "use-zod.md").read_text(encoding="utf-8")
    assert text.endswith("---\n\n## Why\nDrift.\n")
    assert "tags:\n- api\n- ts\n" in text


def test_show_json_has_fields_and_version(store_dir: Path) -> None:
    run("add", "n1", "--type", "fact", "-d", "A fact", "--body", "b")
    code, out = run("show", "n1", "--json")
    data = json.loads(out)
    assert code == 0
    assert (data["name"], data["status"], data["owner"], data["body"]) == (
        "n1",
        "draft",
        "alice",
        "b",
    )
    assert len(data["version"]) == 12


def test_list_json_and_filters(store_dir: Path) -> None:
    run("add", "a", "--type", "fact", "-d", "A", "--tags", "x", "--body", "")
    run("add", "b", "--type", "decision", "-d", "B", "--body", "")
    code, out = run("list", "--type", "fact", "--json")
    assert code == 0 and [m["name"] for m in json.loads(out)] == ["a"]
    code, out = run("list", "--tag", "x")
    assert code == 0 and out.startswith("a ")


def test_a_mistyped_name_gets_the_closest_existing_names(store_dir: Path) -> None:
    run("add", "deploy-notes", "--type", "fact", "-d", "Deploy", "--body", "")
    run("add", "deploy-steps", "--type", "fact", "-d", "Steps", "--body", "")
    code, out = run("show", "deploy-note")
    assert code == 1
    assert out.splitlines() == [
        "Error: no memory named 'deploy-note' in the store; "
        "did you mean 'deploy-notes' or 'deploy-steps'?"
    ]


def test_edit_of_a_deprecated_memory_is_refused_unless_forced(store_dir: Path) -> None:
    run("add", "old", "--type", "fact", "-d", "Old", "--body", "")
    run("deprecate", "old", "-r", "wrong")
    before = git(store_dir, "rev-parse", "HEAD")
    code, out = run("edit", "old", "--body", "new text")
    assert code == 1
    assert out.splitlines() == [
        "Error: 'old' is deprecated (wrong), so an edit would go unseen; restore it first "
        "(memstore restore NAME --reason WHY), or pass --force"
    ]
    assert git(store_dir, "rev-parse", "HEAD") == before
    code, out = run("edit", "old", "--body", "new text", "--force")
    assert code == 0 and "[deprecated]" in out
    assert "new text" in run("show", "old")[1]


def test_list_columns_align_to_the_longest_value_shown(store_dir: Path) -> None:
    long_name = "a-name-longer-than-thirty-two-characters-here"
    run("add", long_name, "--type", "fact", "-d", "Long", "--body", "")
    run("add", "b", "--type", "decision", "-d", "Short", "--body", "")
    code, out = run("list")
    rows = out.splitlines()
    assert code == 0 and len(rows) == 2
    assert len({row.index("draft") for row in rows}) == 1
    short = next(row for row in rows if row.startswith("b "))
    long = next(row for row in rows if row.startswith(long_name))
    assert short.index("Short") == long.index("Long")
    assert short.startswith("b" + " " * len(long_name))


def test_self_confirm_is_an_error_with_exit_1_and_changes_nothing(store_dir: Path) -> None:
    run("add", "n1", "--type", "fact", "-d", "A fact", "--body", "")
    before = git(store_dir, "rev-parse", "HEAD")
    code, out = run("confirm", "n1", "--reason", "sure")
    assert code == 1
    assert "Error: cannot confirm 'n1'" in out
    assert git(store_dir, "rev-parse", "HEAD") == before


def test_confirm_deprecate_restore_and_history(store_dir: Path) -> None:
    run("add", "old", "--type", "fact", "-d", "Old", "--body", "")
    run("add", "new", "--type", "fact", "-d", "New", "--body", "")
    assert run("confirm", "old", "-r", "checked", agent="bob")[0] == 0
    code, out = run("deprecate", "old", "-r", "replaced", "--superseded-by", "new")
    assert code == 0 and "deprecated fact/old [deprecated]" in out
    code, out = run("history", "old")
    lines = out.splitlines()
    assert "memory: deprecate fact/old — replaced (superseded by new)" in lines[0]
    assert "bob" in lines[1] and "memory: confirm fact/old — checked" in lines[1]
    assert run("restore", "old", "-r", "back")[0] == 0


def test_bad_name_is_an_error_and_writes_nothing(store_dir: Path) -> None:
    code, out = run("add", "../evil", "--type", "fact", "-d", "x", "--body", "")
    assert code == 1 and "Error: invalid name '../evil'" in out
    assert not list(store_dir.rglob("*.md"))


def test_missing_identity_error_says_how_to_set_one(store_dir: Path) -> None:
    code, out = run("add", "x", "--type", "fact", "-d", "x", "--body", "", agent=None)
    assert code == 1 and "MEMSTORE_AGENT" in out


def test_edit_with_stale_version_is_refused(store_dir: Path) -> None:
    run("add", "n1", "--type", "fact", "-d", "A fact", "--body", "")
    version = json.loads(run("show", "n1", "--json")[1])["version"]
    assert run("edit", "n1", "--body", "bob was here", agent="bob")[0] == 0
    code, out = run("edit", "n1", "--body", "mine", "--expect-version", version)
    assert code == 1 and "changed since you read it" in out


def test_edit_with_nothing_to_change_is_a_usage_error(store_dir: Path) -> None:
    run("add", "n1", "--type", "fact", "-d", "A fact", "--body", "")
    code, out = run("edit", "n1")
    assert code == 2 and "nothing to change" in out


def test_lint_exit_codes(store_dir: Path) -> None:
    run("add", "n1", "--type", "fact", "-d", "A fact", "--body", "")
    code, out = run("lint")
    assert code == 0 and "ok: 1 memory, no problems" in out
    (store_dir / "fact" / "bad.md").write_text("---\nname: [x\n---\n", encoding="utf-8")
    code, out = run("lint")
    assert code == 1 and "fact/bad.md" in out and "1 problem in 1 file" in out


def test_store_flag_wins_over_environment(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere"
    assert run("--store", str(other), "init")[0] == 0
    assert run("--store", str(other), "add", "x", "--type", "fact", "-d", "x", "--body", "")[0] == 0
    assert (other / "fact" / "x.md").is_file()


@pytest.mark.parametrize(
    "command",
    [
        "init",
        "add",
        "show",
        "list",
        "edit",
        "confirm",
        "deprecate",
        "restore",
        "history",
        "timeline",
        "mv",
        "retype",
        "forget",
        "review",
        "lint",
        "install-hook",
        "uninstall-hook",
    ],
)
def test_every_command_has_help_with_an_example(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output and "memstore" in result.output


def test_the_choices_the_cli_spells_out_are_the_cores() -> None:
    # The CLI names them itself so that `memstore --help` imports no core module.
    from memstore.faces.cli import ledger as ledger_cli
    from memstore.faces.cli import workflow as workflow_cli
    from memstore.workflow.care import stats
    from memstore.workflow.ledger import claims
    from memstore.workflow.rules import rules as workflow

    assert workflow_cli.RULE_TYPES == workflow.RULE_TYPES
    assert workflow_cli.OUTCOMES == tuple(o.value for o in stats.Outcome)
    assert set(ledger_cli.CHECK_EXIT) == {s.value for s in claims.State}


def loaded_by(args: list[str], modules: set[str]) -> tuple[str, list[str]]:
    """Run `memstore ARGS` in a fresh interpreter: what it printed, and which of `modules`
    it had loaded by the end."""
    code = (
        "import sys\n"
        "from memstore.faces.cli.main import main\n"
        "try:\n"
        f"    main({args!r}, prog_name='memstore')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(set({sorted(modules)!r}) & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *printed, loaded = done.stdout.strip().splitlines()
    return "\n".join(printed), ast.literal_eval(loaded)


def test_help_imports_no_core_module() -> None:
    heavy = {"git", "whoosh", "mcp", "yaml", "frontmatter", "memstore.storage.store"}
    assert loaded_by(["--help"], heavy)[1] == []


def test_an_add_of_plain_fields_loads_neither_yaml_nor_logging_nor_a_history_reader(
    store: Store,
) -> None:
    store.add("seed", type="fact", description="something else")
    search(store, Query("seed"))  # the index exists: the duplicate hint reads its manifest
    args = ["--store", str(store.root), "--agent", "bob", "add", "port", "--type", "fact"]
    args += ["-d", "The API listens on 8080", "--tags", "api,net"]
    heavy = {"yaml", "frontmatter", "logging", "memstore.storage.trust", "memstore.git.gitlog"}
    heavy |= {"tempfile", "ctypes", "memstore.git.remote"}
    printed, loaded = loaded_by(args, heavy)
    assert "added fact/port [draft]" in printed
    assert loaded == []
    assert store.read("port").memory.tags == ("api", "net")


def test_a_search_loads_neither_the_credential_check_nor_a_web_client(store: Store) -> None:
    store.add("port", type="fact", description="The API listens on 8080", body="b")
    heavy = {"memstore.storage.secrets", "detect_secrets", "memstore.git.signing", "urllib.request"}
    heavy |= {"http.client", "mcp", "whoosh.lang.morph_en"}
    printed, loaded = loaded_by(["--store", str(store.root), "search", "port"], heavy)
    assert "port" in printed
    assert loaded == []


def test_serve_started_at_a_terminal_says_what_it_waits_for(store: Store) -> None:
    import os
    import pty
    import subprocess
    import sys

    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memstore", "--store", str(store.root), "--agent", "a", "serve"],
        stdin=terminal,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "waiting for an MCP client" in line and "Ctrl-C" in line
        assert str(store.root) in line and " as a;" in line
    finally:
        proc.kill()
        proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
        os.close(controller)
        os.close(terminal)


def test_paths_in_errors_are_relative_to_where_the_user_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    monkeypatch.setenv("MEMSTORE_DIR", str(project / "memory"))
    assert run("init")[0] == 0
    assert (
        run("add", "port", "--type", "fact", "-d", "The API listens on 8080", "--body", "b")[0] == 0
    )
    path = project / "memory" / "fact" / "port.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nA hand edit.\n", encoding="utf-8")

    monkeypatch.chdir(project / "memory" / "fact")
    code, out = run("edit", "port", "-d", "The API listens on 9090")
    assert code == 1
    assert "git commit -- port.md" in out

    monkeypatch.chdir(project)
    code, out = run("edit", "port", "-d", "The API listens on 9090")
    assert code == 1
    assert "git commit -- memory/fact/port.md" in out
    # The advice works as printed, from where the user stands.
    git(project, "commit", "-q", "-m", "my hand edit", "--", "memory/fact/port.md")
    code, out = run("edit", "port", "-d", "The API listens on 9090")
    assert code == 0, out


def test_lint_names_files_relative_to_where_the_user_stands(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (store_dir / "decision").mkdir(exist_ok=True)
    (store_dir / "decision" / "broken.md").write_text("---\nname: [\n---\n", encoding="utf-8")
    monkeypatch.chdir(store_dir.parent)
    code, out = run("lint")
    assert code == 1
    assert out.startswith("memory/decision/broken.md")


def test_init_outside_a_repository_explains_and_offers_git_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["--agent", "alice", "init", "memory"])
    assert result.exit_code == 0, result.output
    assert "was in no git repository" in result.stderr and "--git-root" in result.stderr
    assert (project / "memory" / ".git").is_dir()


def test_init_with_git_root_puts_code_and_store_in_one_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["--agent", "alice", "init", "memory", "--git-root", "."])
    assert result.exit_code == 0, result.output
    assert "was in no git repository" not in result.stderr
    assert (project / ".git").is_dir() and not (project / "memory" / ".git").exists()
    (project / "app.py").write_text("print(1)\n", encoding="utf-8")
    git(project, "add", ".")  # no embedded repository: the store's files are plain files
    assert "memory/.gitignore" in git(project, "ls-files")
    code, out = run(
        "--store", "memory", "add", "port", "--type", "fact", "-d", "8080", "--body", "b"
    )
    assert code == 0, out
    assert "memory/fact/port.md" in git(project, "ls-files")


@pytest.mark.parametrize("where", ["elsewhere", "inside"])
def test_init_refuses_a_git_root_that_cannot_hold_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    monkeypatch.chdir(project)
    if where == "inside":  # already in a repository: --git-root must not make another
        git(project, "init", "-q")
        args = ["init", "memory", "--git-root", "sub"]
    else:
        args = ["init", "memory", "--git-root", str(tmp_path / "other")]
    result = CliRunner().invoke(main, ["--agent", "alice", *args])
    assert result.exit_code == 1
    assert "Error: --git-root" in result.output or "already in the git repository" in result.output
    assert not (project / "memory").exists()


def test_shell_completion_as_the_readme_sets_it_up_completes_commands() -> None:
    memstore = str(Path(sys.executable).parent / "memstore")
    script = subprocess.run(
        [memstore], env={"_MEMSTORE_COMPLETE": "bash_source"}, capture_output=True, text=True
    )
    assert "complete -o nosort -F _memstore_completion memstore" in script.stdout
    env = {"_MEMSTORE_COMPLETE": "bash_complete", "COMP_WORDS": "memstore se", "COMP_CWORD": "1"}
    done = subprocess.run([memstore], env=env, capture_output=True, text=True)
    assert done.stdout.splitlines() == ["plain,search", "plain,serve"]


def test_show_says_pinned_verified_and_never_none(store_dir: Path) -> None:
    run("add", "n1", "--type", "fact", "-d", "One", "--body", "b", "--importance", "high")
    run("confirm", "n1", "-r", "read it", agent="bob")
    run("verify", "n1", "-r", "re-read src/x.py", agent="carol")
    run("pin", "n1")
    code, out = run("show", "n1")
    assert code == 0, out
    assert "pinned: yes" in out and "importance: high" in out
    assert "verified by carol at " in out and ": re-read src/x.py" in out
    # A hand-edited trail without its time or reason, and an empty key, shows no `None`.
    path = store_dir / "fact" / "n1.md"
    text = path.read_text("utf-8")
    text = "\n".join(
        line
        for line in text.splitlines()
        if not line.startswith(("confirmed_at:", "confirmed_reason:"))
    )
    path.write_text(text.replace("importance: high", "importance:") + "\n", "utf-8")
    code, out = run("show", "n1")
    assert code == 0, out
    assert "None" not in out and "confirmed by bob\n" in out and "importance" not in out
