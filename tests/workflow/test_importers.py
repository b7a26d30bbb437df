"""`memstore import` from the stores people leave: the official memory server's memory.jsonl,
basic-memory's notes and Claude Code's auto memory folder, through the real CLI command on
small fixtures written in each format (tests/data/import)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.faces.cli.main import main
from memstore.model.fields import NAME_RE
from memstore.storage.store import Store
from tests.conftest import DATA, git

FIXTURES = DATA / "import"


def run(*args: str, agent: str = "alice") -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--agent", agent, *args])
    return result.exit_code, result.output


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh store (`memory`) and a copy of the fixtures beside it, as the working folder."""
    Store.init(tmp_path / "memory", agent="alice")
    for name in ("memory-server", "basic-memory", "claude-memory"):
        shutil.copytree(FIXTURES / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _head(store: Path) -> str:
    return git(store, "rev-parse", "HEAD")


def _memory(store: Path, name: str) -> object:
    return Store(store).get(name)


def test_memory_server_graph_dry_run_shows_the_mapping_and_writes_nothing(here: Path) -> None:
    before = _head(here / "memory")
    code, out = run("import", "memory-server/memory.jsonl", "--dry-run")
    assert code == 0, out
    assert "would create 4 (1 decision, 2 fact, 1 runbook)" in out
    assert "+ fact/ada-lovelace" in out
    assert 'memory.jsonl:3: entity "Ada_Lovelace" (person → fact)' in out
    assert "links: billing-service" in out
    assert 'entity "Use Postgres Advisory Locks" (decision → decision)' in out
    assert _head(here / "memory") == before
    assert not (here / "memory" / "fact" / "ada-lovelace.md").exists()


def test_memory_server_graph_becomes_linked_drafts_of_the_importer_in_one_commit(
    here: Path,
) -> None:
    store = here / "memory"
    before = _head(store)
    code, out = run("import", "memory-server/memory.jsonl", agent="carol")
    assert code == 0, out
    assert git(store, "rev-list", "--count", f"{before.strip()}..HEAD").strip() == "1"
    assert git(store, "log", "-1", "--format=%an|%s") == (
        "carol|memory: import memory.jsonl (official memory server graph)\n"
    )
    ada = Store(store).get("ada-lovelace")
    assert (ada.type, ada.status, ada.owner) == ("fact", "draft", "carol")
    assert ada.links == ("billing-service",)
    assert ada.description == "Ada_Lovelace: Leads the payments team"
    assert "- Prefers morning meetings" in ada.body
    assert "person" in ada.tags
    billing = Store(store).get("billing-service")
    assert billing.links == ("use-postgres-advisory-locks",)
    assert "Ada_Lovelace owns Billing Service (`ada-lovelace`)" in billing.body
    assert Store(store).get("restart-the-billing-worker").type == "runbook"
    assert Store(store).get("use-postgres-advisory-locks").type == "decision"
    code, out = run("lint")
    assert code == 0 and "no problems" in out

    code, again = run("import", "memory-server/memory.jsonl", agent="carol")
    assert code == 0 and "created 0 (nothing new), skipped 4" in again


def test_a_link_follows_its_target_renamed_past_a_name_the_store_holds(here: Path) -> None:
    store = here / "memory"
    Store(store, agent="bob").add(
        "billing-service", type="fact", description="The old billing monolith, retired in 2024"
    )
    code, out = run("import", "memory-server/memory.jsonl")
    assert code == 0, out
    assert "+ fact/billing-service-2" in out
    assert Store(store).get("ada-lovelace").links == ("billing-service-2",)
    assert Store(store).get("billing-service-2").links == ("use-postgres-advisory-locks",)
    assert Store(store).get("billing-service").owner == "bob"  # left alone


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"type":"entity","name":"B","entityType":"x","observations":["two"]', "not JSON"),
        ('{"type":"entity","name":"B","entityType":"x","observations":"two"}', "observations"),
        ('{"type":"entity","name":"","entityType":"x","observations":[]}', "'name'"),
        ('{"type":"relation","from":"A","to":7,"relationType":"knows"}', "'to'"),
        ('{"type":"node","name":"B"}', "'type' must be"),
        ("[1, 2]", "not a JSON object"),
        ("[" * 100_000, "not JSON"),
    ],
)
def test_a_bad_line_of_a_graph_is_one_error_naming_file_and_line(
    here: Path, line: str, problem: str
) -> None:
    good = '{"type":"entity","name":"A","entityType":"x","observations":["one"]}'
    (here / "memory.jsonl").write_text(f"{good}\n\n{line}\n{good}\n", encoding="utf-8")
    before = _head(here / "memory")
    code, out = run("import", "memory.jsonl")
    assert code == 1
    assert out.startswith("Error: memory.jsonl:3: ") and problem in out
    assert len(out.strip().splitlines()) == 1 and "Traceback" not in out
    assert _head(here / "memory") == before


def test_a_relation_from_no_entity_is_skipped_and_said(here: Path) -> None:
    (here / "memory.jsonl").write_text(
        '{"type":"entity","name":"A","entityType":"x","observations":["one"]}\n'
        '{"type":"relation","from":"Gone","to":"A","relationType":"knew"}\n'
        '{"type":"relation","from":"A","to":"Gone","relationType":"knew"}\n',
        encoding="utf-8",
    )
    code, out = run("import", "memory.jsonl", "-v")
    assert code == 0, out
    assert "= memory.jsonl:2: relation Gone knew A: its 'from' is no entity" in out
    a = Store(here / "memory").get("a")
    assert a.links == () and "- A knew Gone\n" in a.body


def test_graph_names_are_valid_unique_and_the_same_in_every_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entities = ["Ünïcode Café", "con", "x" * 300, "A/B", "a b", "A B", "!!!", "42"]
    lines = [
        json.dumps({"type": "entity", "name": n, "entityType": "thing", "observations": [f"#{i}"]})
        for i, n in enumerate(entities)
    ]
    lines.append(json.dumps({"type": "relation", "from": "a b", "to": "A B", "relationType": "r"}))
    (tmp_path / "memory.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    made: list[list[str]] = []
    for folder in ("one", "two"):
        Store.init(tmp_path / folder, agent="alice")
        code, out = run("--store", folder, "import", "memory.jsonl", "--json")
        assert code == 0, out
        made.append(json.loads(out)["created"])
    assert made[0] == made[1]
    names = [c.split("/", 1)[1] for c in made[0]]
    assert len(names) == len(entities) == len(set(names))
    assert all(NAME_RE.fullmatch(n) and n != "con" for n in names)
    assert Store(tmp_path / "one").get("a-b-2").links == ("a-b-3",)  # "a b" → "A B"


def test_basic_memory_notes_keep_types_tags_and_wiki_links(here: Path) -> None:
    code, out = run("import", "basic-memory", "--dry-run")
    assert code == 0, out
    assert 'note "Session Cache Choice" (type decision → decision)' in out
    assert 'note "Release Checklist" (type note, observations mostly runbook → runbook)' in out
    code, out = run("import", "basic-memory")
    assert code == 0, out
    store = Store(here / "memory")
    checklist = store.get("release-checklist")
    assert (checklist.type, checklist.status, checklist.owner) == ("runbook", "draft", "alice")
    assert checklist.links == ("deploy-pipeline",)  # the other two targets are not imported
    assert {"release", "deploy", "ci", "versioning"} <= set(checklist.tags)
    assert checklist.extra["permalink"] == "release-checklist"
    assert "- [procedure] Tag from main only" in checklist.body
    pipeline = store.get("deploy-pipeline")  # permalink deploy/deploy-pipeline
    assert pipeline.type == "fact" and pipeline.links == ("release-checklist",)
    assert {"deploy", "ci"} <= set(pipeline.tags)  # tags as a comma-separated string
    cache = store.get("session-cache-choice")
    assert cache.type == "decision" and cache.links == ("deploy-pipeline",)
    assert cache.description.startswith("Session Cache Choice: Keep sessions in Redis")
    assert git(here / "memory", "log", "-1", "--format=%s") == (
        "memory: import 3 files from basic-memory (basic-memory notes)\n"
    )
    code, again = run("import", "basic-memory")
    assert code == 0 and "created 0 (nothing new), skipped 3" in again


def test_plain_markdown_is_no_note_and_a_note_needs_no_permalink(here: Path) -> None:
    project = here / "project"
    project.mkdir()
    (project / "README.md").write_text("# App\n\n- [WIP] the new importer\n", encoding="utf-8")
    (project / "CHANGELOG.md").write_text("## 1.2\n- [#12] fix the build\n", encoding="utf-8")
    (project / "idea.md").write_text(
        "---\ntitle: Queue Idea\n---\n- [idea] Batch the webhooks #queue\n", encoding="utf-8"
    )
    code, out = run("import", "project", "-v")
    assert code == 0, out
    assert "created 1 (1 fact)" in out and "+ fact/queue-idea" in out


def test_bad_front_matter_in_a_note_names_the_file_and_line(here: Path) -> None:
    (here / "basic-memory" / "broken.md").write_text(
        "---\ntitle: Broken\ntags: [one, two\npermalink: broken\n---\n- [fact] x\n",
        encoding="utf-8",
    )
    before = _head(here / "memory")
    code, out = run("import", "basic-memory")
    assert code == 1
    assert out.startswith("Error: basic-memory/broken.md:") and "front matter" in out
    assert len(out.strip().splitlines()) == 1
    assert _head(here / "memory") == before  # the good notes are not written either


def test_claude_code_auto_memory_folder_maps_topic_files_and_index_lines(here: Path) -> None:
    code, out = run("import", "claude-memory", "--dry-run")
    assert code == 0, out
    assert 'topic file "No default exports" (type feedback → correction)' in out
    assert 'topic file "Grafana board" (type reference → reference)' in out
    assert "MEMORY.md:13: index line (a rule → correction)" in out
    code, out = run("import", "claude-memory")
    assert code == 0, out
    store = Store(here / "memory")
    rule = store.get("no-default-exports")
    assert (rule.type, rule.owner) == ("correction", "alice")
    assert rule.description == "No default exports: Never use default exports in TypeScript modules"
    assert rule.extra["applies_when"] == ["use default exports in TypeScript modules"]
    assert "**Why:** the reviewer asked" in rule.body
    assert store.get("test-against-a-real-database").type == "pattern"
    assert store.get("release-freeze").type == "fact"
    assert store.get("grafana-board").type == "reference"
    assert store.get("debugging").type == "fact"  # no front matter: an older topic file
    push = store.get("never-push-to-main-directly-open-a-pull-request")
    assert push.type == "correction" and "notes" in push.tags
    staging = store.get("the-staging-deploy-takes-about-12-minutes-wait-for-the")
    assert staging.type == "fact"
    # the index's pointers are not memories of their own
    assert "created 7 (2 correction, 3 fact, 1 pattern, 1 reference)" in out
    code, again = run("import", "claude-memory")
    assert code == 0 and "created 0 (nothing new), skipped 7" in again


def test_memory_md_given_alone_brings_the_topic_files_it_points_to(here: Path) -> None:
    (here / "claude-memory" / "MEMORY.md").write_text(
        "- [Grafana board](reference_grafana.md) — graphs\n- [Gone](gone.md) — deleted\n",
        encoding="utf-8",
    )
    code, out = run("import", "claude-memory/MEMORY.md", "-v")
    assert code == 0, out
    assert "created 1 (1 reference)" in out  # not the unlisted topic files
    assert "= MEMORY.md:2: gone.md: the index points to a file that is not in the folder" in out


def test_a_secret_in_an_import_refuses_that_source_and_writes_nothing(here: Path) -> None:
    path = here / "claude-memory" / "reference_grafana.md"
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    path.write_text(
        path.read_text(encoding="utf-8") + f"\nThe API token is {token}\n", encoding="utf-8"
    )
    before = _head(here / "memory")
    code, out = run("import", "claude-memory")
    assert code == 1
    assert out.startswith("Error: claude-memory/reference_grafana.md body looks like it holds")
    assert "--allow-secret" in out and token not in out
    assert _head(here / "memory") == before


def test_import_json_names_the_formats_and_each_origin(here: Path) -> None:
    code, out = run("import", "memory-server/memory.jsonl", "--dry-run", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert data["formats"] == ["memory-server"] and data["dry_run"] is True
    assert len(data["origins"]) == len(data["created"]) == 4
    assert data["origins"][0].startswith("memory.jsonl:1: entity")
