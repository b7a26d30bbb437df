"""Import (instruction files, ADRs, memstore's export) and export: what a team moving its
knowledge into or out of a store relies on."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidMemory, SecretFound
from memstore.faces.cli.main import main
from memstore.model.status import Status
from memstore.storage.store import Store
from memstore.workflow.care import lint, porting, sources
from tests.conftest import DATA, as_agent, git

PROJECT = DATA / "project"
INSTRUCTION_FILES = ("CLAUDE.md", "AGENTS.md", ".cursorrules")

# Every rule line of the fixture's instruction files, as a person reading them would list them.
RULE_LINES = {
    "CLAUDE.md": [
        "NEVER commit directly to `main`; open a pull request, even for a one-line fix.",
        "Always run `make lint` before pushing.",
        "Don't edit files under `src/generated/` by hand: run `make codegen` instead.",
        "Use `uv` for dependencies, not pip.",
        "Do not run `alembic downgrade` against the staging database.",
        "Prefer small commits with messages that say why.",
        "**Never** log request bodies: they hold card data.",
        "Tests use a real Postgres started by `docker compose up db`; do not mock the database.",
        "When a test is flaky, fix it or quarantine it with `@pytest.mark.flaky` and open an "
        "issue; never just rerun CI until it passes.",
        "IMPORTANT: you must ask before deleting any migration file.",
    ],
    "AGENTS.md": [
        "Install deps: `pnpm install`",
        "Start dev server: `pnpm dev`",
        "TypeScript strict mode.",
        "Single quotes, no semicolons.",
        "Use functional components and hooks; no class components.",
        "Title format: [<project_name>] <Title>",
        "Always run `pnpm lint` and `pnpm test` before committing.",
        "Don't bump versions in `package.json`; the release workflow does it.",
        "Never put API keys in the frontend bundle.",
    ],
    ".cursorrules": [
        "Write concise, technical responses with accurate Python examples.",
        "Use type hints for all function signatures.",
        "Avoid global state; pass dependencies explicitly.",
        "Don't use `print` for logging; use the `structlog` logger.",
        "Always validate request input with Pydantic models.",
        "Handle errors at the beginning of functions; use early returns.",
        "Never swallow exceptions with a bare `except:`.",
    ],
}
IMPERATIVE = ("never", "always", "don't", "do not", "must", "avoid")
ADRS = {
    "adr-0001-record-architecture-decisions": ("accepted", "2024-03-02"),  # Nygard
    "adr-0002-use-postgresql": ("superseded by 5. move orders to aurora", "2024-03-10"),
    "adr-0003-use-celery-for-background-jobs": ("accepted", "2024-05-21"),  # MADR 3
    "adr-0004-frontend-state": ("proposed", "2024-07-01"),  # MADR 2
}


def commits(store: Store) -> int:
    return int(git(store.root, "rev-list", "--count", "HEAD").strip())


def memory_tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.md"))
        if ".memstore" not in p.parts and ".git" not in p.parts
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy)
    return copy


def test_import_recovers_every_rule_line_and_adr_as_drafts_in_one_commit(
    store: Store, project: Path
) -> None:
    before = commits(store)
    result = porting.import_path(store, project)

    rules = sum(len(lines) for lines in RULE_LINES.values())
    print(f"fixture: {rules} rule lines, {len(ADRS)} ADRs; imported {len(result.created)}")
    assert result.found == rules + len(ADRS)
    assert len(result.created) == rules + len(ADRS)
    assert commits(store) == before + 1
    assert "memory: import" in git(store.root, "log", "-1", "--format=%s")
    memories = {m.name: m for m in store.list()}
    assert all(m.status == Status.DRAFT and m.owner == "alice" for m in memories.values())
    by_description = {m.description: m for m in memories.values()}
    for file, lines in RULE_LINES.items():
        for line in lines:
            plain = line.replace("**", "")
            memory = by_description[plain]
            assert memory.extra["source"].startswith(f"project/{file}:")
            if any(word in plain.lower() for word in IMPERATIVE):
                assert memory.type == "correction", plain
                assert memory.extra["applies_when"], plain
            else:
                assert memory.type == "decision", plain
    for name, (status, date) in ADRS.items():
        adr = memories[name]
        assert adr.type == "decision" and "adr" in adr.tags
        assert (adr.extra["adr_status"], adr.extra["adr_date"]) == (status, date)
    assert "Celery with Redis" in memories["adr-0003-use-celery-for-background-jobs"].description
    assert "Michael Nygard" in memories["adr-0001-record-architecture-decisions"].body


def test_an_imperative_line_keeps_its_wording_as_applies_when_patterns(store: Store) -> None:
    taken: set[str] = set()
    text = "- Do not run `alembic downgrade` against the staging database.\n"
    (candidate,) = sources.instruction_candidates(text, "CLAUDE.md", taken)
    assert candidate.type == "correction"
    assert candidate.applies_when == (
        "alembic downgrade",
        "run alembic downgrade against the staging database",
    )


def test_an_imported_correction_acts_in_check_through_its_patterns(
    store: Store, project: Path
) -> None:
    from memstore.workflow.session import agent as session

    porting.import_path(store, project / "CLAUDE.md")
    verdict = session.check(store, "alembic downgrade -1 on staging")
    assert "do-not-run-alembic-downgrade-against-the-staging" in {r.name for r in verdict.reasons}


def test_importing_the_same_sources_again_creates_nothing(store: Store, project: Path) -> None:
    porting.import_path(store, project)
    tree, before = memory_tree(store.root), commits(store)

    again = porting.import_path(store, project)
    assert again.created == ()
    assert len(again.skipped) == again.found
    assert commits(store) == before
    assert memory_tree(store.root) == tree


def test_an_edited_instruction_file_imports_only_its_new_rule(store: Store, project: Path) -> None:
    porting.import_path(store, project / "CLAUDE.md")
    claude = project / "CLAUDE.md"
    text = claude.read_text(encoding="utf-8")
    claude.write_text("\n\n" + text + "- Never force-push to a shared branch.\n", encoding="utf-8")
    result = porting.import_path(store, claude)
    assert result.created == ("correction/never-force-push-to-a-shared-branch",)


def test_a_dry_run_lists_the_drafts_and_writes_nothing(store: Store, project: Path) -> None:
    before = commits(store)
    result = porting.import_path(store, project, dry_run=True)
    assert len(result.created) == 30 and result.commit is None
    assert commits(store) == before
    assert store.list() == []


def test_an_import_holding_a_credential_is_refused_whole(store: Store, tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    key = "AKIA" + "Z7Q3KX2M4WBN5PLD"
    agents.write_text(f"- Always use the staging key {key}\n- Never push to main\n")
    before = commits(store)
    with pytest.raises(SecretFound, match=r"AGENTS.md:1"):
        porting.import_path(store, agents)
    assert commits(store) == before and store.list() == []


def test_nothing_to_import_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("buy milk\n")
    with pytest.raises(InvalidMemory, match="found nothing to import"):
        porting.import_path(store, tmp_path / "notes")


def test_export_then_exact_import_into_a_fresh_store_gives_the_same_files(
    store: Store, project: Path, tmp_path: Path
) -> None:
    porting.import_path(store, project)
    as_agent(store, "bob").confirm("adr-0001-record-architecture-decisions", "read it")
    store.deprecate("typescript-strict-mode", "we moved to JSDoc types")
    for format in ("jsonl", "json"):
        export = tmp_path / f"export.{format}"
        export.write_text(porting.export(store, format), encoding="utf-8")
        fresh = Store.init(tmp_path / f"fresh-{format}", agent="carol")
        before = commits(fresh)
        result = porting.import_path(fresh, export, exact=True)
        assert len(result.created) == 30
        assert commits(fresh) == before + 1
        assert memory_tree(fresh.root) == memory_tree(store.root)
        done = subprocess.run(
            ["diff", "-r", "-x", ".git", "-x", ".memstore", str(store.root), str(fresh.root)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout
        assert porting.import_path(fresh, export, exact=True).created == ()


def test_an_imported_export_is_drafts_of_the_importer_by_default(
    store: Store, project: Path, tmp_path: Path
) -> None:
    porting.import_path(store, project / "docs" / "adr")
    as_agent(store, "bob").confirm("adr-0001-record-architecture-decisions", "read it")
    store.deprecate("adr-0002-use-postgresql", "moved to Aurora")
    export = tmp_path / "export.jsonl"
    export.write_text(porting.export(store, "jsonl"), encoding="utf-8")

    fresh = Store.init(tmp_path / "fresh", agent="carol")
    result = porting.import_path(fresh, export)
    assert (
        "decision/adr-0002-use-postgresql.md",
        "deprecated (import it with --exact to keep it)",
    ) in (result.skipped)
    memories = fresh.list()
    assert {m.name for m in memories} == set(ADRS) - {"adr-0002-use-postgresql"}
    assert all(m.status == "draft" and m.owner == "carol" for m in memories)
    first = fresh.get("adr-0001-record-architecture-decisions")
    assert first.confirmed_by is None
    assert first.body == store.get("adr-0001-record-architecture-decisions").body
    assert lint.lint_store(fresh) == []


def test_export_filters_by_type_status_and_tag(store: Store, project: Path) -> None:
    porting.import_path(store, project)
    records = [
        json.loads(line) for line in porting.export(store, "jsonl", type="decision").splitlines()
    ]
    assert records[0] == {"memstore_export": 1, "count": len(records) - 1}
    assert {r["type"] for r in records[1:]} == {"decision"}
    tagged = json.loads(porting.export(store, "json", tags=("adr",)))
    assert len(tagged["memories"]) == len(ADRS)
    assert json.loads(porting.export(store, "json", status="confirmed"))["memories"] == []


def test_markdown_export_is_one_context_file_rules_first(store: Store, project: Path) -> None:
    porting.import_path(store, project)
    store.deprecate("typescript-strict-mode", "we moved to JSDoc types")
    text = porting.export(store, "markdown")
    assert text.startswith("# Project memory\n")
    assert text.index("## Correction") < text.index("## Decision")
    assert "### Always run `make lint` before pushing." in text
    assert "`always-run-make-lint-before-pushing` · draft · alice" in text
    assert "TypeScript strict mode." not in text  # deprecated: not what holds
    assert "\n# " not in text.partition("\n")[2]  # bodies' headings sit below the file's


def test_cli_import_and_export(tmp_path: Path, project: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(main, ["--agent", "alice", "init"]).exit_code == 0
    dry = runner.invoke(main, ["--agent", "alice", "import", str(project), "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.startswith("found 30, would create 30 (15 correction, 15 decision)")
    done = runner.invoke(main, ["--agent", "alice", "import", str(project)])
    assert done.exit_code == 0 and "— commit " in done.output
    again = runner.invoke(main, ["--agent", "alice", "import", str(project), "-v"])
    assert again.output.startswith("found 30, created 0 (nothing new), skipped 30")
    out = tmp_path / "context.md"
    exported = runner.invoke(main, ["export", "--format", "markdown", "-o", str(out)])
    assert exported.exit_code == 0 and out.read_text(encoding="utf-8").startswith("# Project")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    refused = runner.invoke(main, ["--agent", "alice", "import", str(bad)])
    assert refused.exit_code == 1 and "Error: " in refused.output and "export" in refused.output


def test_an_export_is_never_written_into_the_store(store: Store) -> None:
    result = CliRunner().invoke(main, ["export", "-o", str(store.root / "decision" / "x.jsonl")])
    assert result.exit_code == 1 and "inside the store" in result.output
    assert not (store.root / "decision").exists()


def test_a_folder_import_finds_instruction_files_in_hidden_tool_folders(
    store: Store, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    (repo / ".github" / "copilot-instructions.md").write_text("- Never commit `.env` files.\n")
    (repo / ".cursor" / "rules").mkdir(parents=True)
    (repo / ".cursor" / "rules" / "python.mdc").write_text(
        "---\ndescription: Python rules\nglobs: ['**/*.py']\n---\n- Always use `ruff format`.\n"
    )
    (repo / ".git").mkdir()
    (repo / ".git" / "AGENTS.md").write_text("- Never read this.\n")
    result = porting.import_path(store, repo)
    assert sorted(result.created) == [
        "correction/always-use-ruff-format",
        "correction/never-commit-env-files",
    ]
