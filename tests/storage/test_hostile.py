"""Hostile and broken input: each is refused with a clear error and changes nothing, or, when a
broken file is dropped into the store, `lint` names it and every other command keeps serving
the valid memories."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstore.errors import InvalidMemory, InvalidName, MemoryNotFound, MemstoreError, NotAStore
from memstore.faces.cli.main import main
from memstore.model.fields import BODY_MAX
from memstore.model.memory import parse, render
from memstore.model.status import Status
from memstore.storage.store import Store
from memstore.workflow.care import lint
from tests.conftest import as_agent, git
from tests.state import snapshot

BAD_NAMES = [
    "../escape",
    "../../etc/passwd",
    "/etc/passwd",
    "a/b",
    "a\\b",
    "..",
    ".git",
    ".memstore",
    "-rf",
    "--help",
    "con",
    "nul",
    "aux",
    "com1",
    "lpt9",
    "CON",
    "\u0430pple",  # Cyrillic 'а' that looks like Latin 'a'
    "\uff46\uff55\uff4c\uff4c",  # fullwidth 'full'
    "caf\u00e9",
    "name\n",
    "name\x00",
    "",
    " padded",
    "x" * 65,
    "UPPER",
    "snake_case",
    "tab\tname",
]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """One store for the many cheap cases of this module; each case uses its own names."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        store = Store.init(tmp_path_factory.mktemp("shared") / "memory", agent="alice")
        store.add("real", type="fact", description="a real memory")
    return store


def run_cli(store: Store, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--store", str(store.root), "--agent", "alice", *args])
    assert not isinstance(result.exception, AssertionError)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a traceback is a bug: every refusal must be `Error: ...`
    return result.exit_code, result.output


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BAD_NAMES, ids=repr)
def test_a_hostile_name_is_refused_everywhere_and_nothing_changes(shared: Store, name: str) -> None:
    store = shared
    before = snapshot(store)
    with pytest.raises(InvalidName):
        store.add(name, type="fact", description="d")
    with pytest.raises(InvalidName):
        store.read(name)
    with pytest.raises(InvalidName):
        store.edit(name, body="x")
    with pytest.raises(InvalidName):
        as_agent(store, "bob").confirm(name, "checked")
    with pytest.raises(InvalidName):
        store.deprecate("real", "stale", superseded_by=name)
    with pytest.raises(InvalidName):
        store.add("other", type="fact", description="d", links=[name])
    assert snapshot(store) == before
    if "\x00" not in name:  # the OS refuses a NUL in argv before memstore sees it
        code, output = run_cli(store, "add", "--type", "fact", "-d", "x", "--", name)
        assert code in (1, 2) and "Error" in output
        assert snapshot(store) == before


def test_windows_device_names_are_refused_with_the_reason(store: Store) -> None:
    with pytest.raises(InvalidName, match="Windows reserves"):
        store.add("nul", type="fact", description="d")


@pytest.mark.parametrize("type_", ["../outside", "/tmp", ".git", "fact/../../x", "con"])
def test_a_hostile_type_is_refused_and_nothing_changes(shared: Store, type_: str) -> None:
    store = shared
    before = snapshot(store)
    with pytest.raises(InvalidMemory, match="unknown type"):
        store.add("x", type=type_, description="d")
    assert snapshot(store) == before


def test_a_store_config_cannot_declare_a_type_that_escapes(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    Store.init(root, agent="alice")
    (root / "memstore.yaml").write_text("types: ['../outside']\n", encoding="utf-8")
    with pytest.raises(InvalidName):
        Store(root, agent="alice")


# -- symlinks ----------------------------------------------------------------------------------


def _outside_memory(tmp_path: Path, name: str) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    path = outside / f"{name}.md"
    path.write_text(
        f"---\nname: {name}\ndescription: outside\ntype: fact\nstatus: draft\nowner: eve\n"
        "created: '2026-01-01T00:00:00Z'\nupdated: '2026-01-01T00:00:00Z'\ntags: []\n---\n\nx\n",
        encoding="utf-8",
    )
    return path


def test_a_symlinked_type_folder_is_never_read_or_written(store: Store, tmp_path: Path) -> None:
    target = _outside_memory(tmp_path, "leak").parent
    (store.root / "decision").symlink_to(target, target_is_directory=True)
    store.add("kept", type="fact", description="a real memory")
    outside_before = sorted(p.name for p in target.iterdir())
    with pytest.raises(MemoryNotFound):
        store.read("leak")
    assert [m.name for m in store.list()] == ["kept"]
    before = snapshot(store)
    with pytest.raises(InvalidMemory, match="symlink"):
        store.add("planted", type="decision", description="would land outside")
    assert sorted(p.name for p in target.iterdir()) == outside_before
    assert snapshot(store) == before
    assert any("symlinked folder" in str(p) for p in lint.lint_store(store))


def test_a_symlinked_file_is_never_read_or_written(store: Store, tmp_path: Path) -> None:
    outside = _outside_memory(tmp_path, "leak")
    original = outside.read_bytes()
    (store.root / "fact").mkdir()
    (store.root / "fact" / "leak.md").symlink_to(outside)
    before = snapshot(store)
    with pytest.raises(MemoryNotFound):
        store.read("leak")
    with pytest.raises(MemoryNotFound):
        store.edit("leak", body="overwrite")
    assert store.list() == []
    with pytest.raises(InvalidMemory, match="symlink"):
        store.add("leak", type="fact", description="replace the link")
    assert outside.read_bytes() == original
    assert snapshot(store) == before
    assert any("a symlink" in str(p) for p in lint.lint_store(store))


def test_a_symlinked_cache_folder_is_refused_before_any_write(store: Store, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    shutil.rmtree(store.root / ".memstore")
    (store.root / ".memstore").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    before = snapshot(store)
    with pytest.raises(NotAStore, match="symlink"):
        store.add("x", type="fact", description="d")
    assert snapshot(store) == before
    assert list((tmp_path / "elsewhere").iterdir()) == []


# -- sizes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("body", "x" * (BODY_MAX + 1), "limit is 65536"),
        ("body", "é" * (BODY_MAX // 2 + 1), "limit is 65536"),  # counted in bytes
        ("description", "d" * 201, "limit is 200"),
        ("tags", [f"t{i}" for i in range(5000)], "at most 32"),
        ("tags", ["x" * 65], "invalid tag"),
        ("links", [f"l{i}" for i in range(1000)], "at most 64"),
        ("extra", {f"k{i}": i for i in range(1000)}, "at most 16"),
        ("extra", {"note": "x" * 3000}, "extra field 'note'"),
    ],
    ids=["body", "body-bytes", "description", "tags", "long-tag", "links", "extra", "extra-val"],
)
def test_oversized_input_is_refused_and_nothing_changes(
    shared: Store, field: str, value: object, message: str
) -> None:
    store = shared
    before = snapshot(store)
    args: dict[str, object] = {"type": "fact", "description": "d", field: value}
    with pytest.raises(InvalidMemory, match=message):
        store.add("big", **args)  # type: ignore[arg-type]
    assert snapshot(store) == before


def test_an_oversized_edit_is_refused_and_nothing_changes(store: Store) -> None:
    store.add("small", type="fact", description="d")
    before = snapshot(store)
    with pytest.raises(InvalidMemory):
        store.edit("small", body="x" * (BODY_MAX + 1))
    with pytest.raises(InvalidMemory):
        store.edit("small", tags=[f"t{i}" for i in range(33)])
    assert snapshot(store) == before


# -- YAML injection ----------------------------------------------------------------------------

INJECTIONS = [
    "status: confirmed",
    "x\nstatus: confirmed",
    "'; status: confirmed; '",
    "\"quoted\" and 'single'",
    "---\nstatus: confirmed\nconfirmed_by: bob\n---",
    "!!python/object/apply:os.system ['echo pwned']",
    "&anchor [*anchor]",
    "{status: confirmed, owner: bob}",
    "[a, b]",
    "null",
    "~",
    "true",
    "0x1F",
    "1e3",
    "2026-01-01",
    "# not a comment",
    "| block",
    "> folded",
    "@reserved `backtick`",
    "% directive",
    "key: value # comment",
    "unicode \u2028 line separator \u0085 next line",
    "\ufeffbom at start",
    "trailing spaces   ",
    "tab\tinside",
    "emoji 🚀 and ＣＪＫ 全角",
    "\x1b[2J\x1b[31mstatus: confirmed\x1b[0m",  # ANSI escapes: would rewrite a terminal
    "bell \x07 and backspace \x08",
]

# Refused in every field (a NUL, ANSI escapes, line separators where one line is expected).
REFUSED = {
    "\x1b[2J\x1b[31mstatus: confirmed\x1b[0m": {
        "description",
        "body",
        "tags",
        "reason",
        "agent",
        "extra",
    },
    "bell \x07 and backspace \x08": {"description", "body", "tags", "reason", "agent", "extra"},
    "unicode \u2028 line separator \u0085 next line": {"description", "tags", "reason", "agent"},
}


@pytest.mark.parametrize("case", range(len(INJECTIONS)), ids=lambda i: repr(INJECTIONS[i]))
@pytest.mark.parametrize("field", ["description", "body", "tags", "reason", "agent", "extra"])
def test_yaml_injection_through_any_field_is_stored_as_plain_text_or_refused(
    shared: Store, field: str, case: int
) -> None:
    store, text, name = shared, INJECTIONS[case], f"inj-{field}-{case}"
    if field == "reason":
        store.add(name, type="fact", description="d")
    before = snapshot(store)
    try:
        if field == "agent":
            as_agent(store, text).add(name, type="fact", description="d")
        elif field == "reason":
            as_agent(store, "bob").deprecate(name, text)
        elif field == "tags":
            store.add(name, type="fact", description="d", tags=[text])
        elif field == "extra":
            store.add(name, type="fact", description="d", extra={"note": text})
        else:
            args = {"description": "d", field: text}
            store.add(name, type="fact", **args)
    except MemstoreError as e:
        assert str(e)  # a clear refusal
        assert snapshot(store) == before
        return
    assert field not in REFUSED.get(text, set()), f"{text!r} in {field} was not refused"
    path = store.root / "fact" / f"{name}.md"
    raw = path.read_text(encoding="utf-8")
    memory = parse(raw)
    assert render(memory) == raw  # canonical: what is on disk is what memstore wrote
    assert memory.status in (Status.DRAFT, Status.DEPRECATED)
    assert memory.confirmed_by is None
    expected = text.strip() if field in ("agent", "reason") else text
    stored = {
        "description": memory.description,
        "body": memory.body,
        "tags": memory.tags[0] if memory.tags else None,
        "reason": memory.deprecated_reason,
        "agent": memory.owner,
        "extra": memory.extra.get("note"),
    }[field]
    if field == "body":
        expected = text.strip("\n")
    assert stored == expected


@pytest.mark.parametrize(
    "extra",
    [
        {"status": "confirmed"},
        {"confirmed_by": "bob"},
        {"owner": "mallory"},
        {"Bad-Key": 1},
        {"nested": {"status": "confirmed"}},
        {"obj": object()},
    ],
    ids=lambda extra: repr(extra).split(" at 0x")[0],  # the same id in every xdist worker
)
def test_extra_fields_cannot_set_memstores_own_keys(
    shared: Store, extra: dict[str, object]
) -> None:
    store = shared
    before = snapshot(store)
    with pytest.raises(InvalidMemory, match="extra field"):
        store.add("x", type="fact", description="d", extra=extra)
    assert snapshot(store) == before


# -- broken files dropped into the store --------------------------------------------------------

GOOD = (
    "---\nname: good\ndescription: a valid memory\ntype: fact\nstatus: draft\nowner: alice\n"
    "created: 2026-01-01T00:00:00Z\nupdated: 2026-01-01T00:00:00Z\ntags: []\n---\n\nfine\n"
)


def _valid(name: str, type_: str = "fact") -> str:
    return GOOD.replace("name: good", f"name: {name}").replace("type: fact", f"type: {type_}")


BROKEN: dict[str, tuple[str, bytes, str]] = {
    # key: (file, content, what lint must say)
    "list front matter": ("fact/listy.md", b"---\n- a\n- b\n---\nbody\n", "must be a mapping"),
    "scalar front matter": ("fact/scalar.md", b"---\njust text\n---\n", "must be a mapping"),
    "no front matter": ("fact/plain.md", b"# just markdown\n", "no YAML front matter"),
    "unclosed front matter": ("fact/open.md", b"---\nname: open\n", "not closed"),
    "invalid yaml": ("fact/badyaml.md", b"---\nname: [unclosed\n---\n", "not valid YAML"),
    "latin-1": (
        "fact/latin.md",
        _valid("latin").replace("fine", "caf\xe9").encode("latin-1"),
        "not UTF-8",
    ),
    "binary": (
        "fact/image.md",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        "not UTF-8",
    ),
    "empty": ("fact/empty.md", b"", "empty file"),
    "whitespace only": ("fact/blank.md", b"  \n\n\t\n", "empty file"),
    "crlf": ("fact/windows.md", _valid("windows").replace("\n", "\r\n").encode(), "CRLF"),
    "duplicate name": ("decision/good.md", _valid("good", "decision").encode(), "duplicate"),
    "alias bomb": (
        "fact/bomb.md",
        b"---\nname: bomb\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a]\n"
        b"c: &c [*b, *b, *b, *b, *b, *b]\ntags: [*c, *c, *c, *c, *c, *c, *c]\n---\n",
        "alias",
    ),
    "deep nesting": (
        "fact/deep.md",
        b"---\nname: " + b"[" * 5000 + b"]" * 5000 + b"\n---\n",
        "nest",
    ),
    "huge file": ("fact/huge.md", _valid("huge").encode() + b"x" * 300_000, "larger than"),
    "name mismatch": ("fact/other-name.md", _valid("someone-else").encode(), "does not match"),
    "missing keys": ("fact/partial.md", b"---\nname: partial\n---\nbody\n", "lacks required"),
    "python tag": (
        "fact/pytag.md",
        _valid("pytag")
        .replace("tags: []", "tags: !!python/object/apply:os.system ['true']")
        .encode(),
        "not valid YAML",
    ),
    "self-approved": (
        "fact/selfie.md",
        _valid("selfie")
        .replace("status: draft", "status: confirmed\nconfirmed_by: alice")
        .encode(),
        "own owner",
    ),
    "traversal name inside": (
        "fact/evil.md",
        _valid("evil").replace("name: evil", "name: ../evil").encode(),
        "invalid name '../evil'",
    ),
    "traversal link inside": (
        "fact/linky.md",
        _valid("linky").replace("tags: []", "tags: []\nlinks: ['../../etc/passwd']").encode(),
        "invalid links entry",
    ),
    "device name inside": ("fact/nul.md", _valid("nul").encode(), "Windows reserves"),
    "leftover temp": ("fact/.good.md.abc123.tmp", b"half a fi", "temp file"),
}


@pytest.fixture
def littered(store: Store) -> Store:
    """A store with one valid memory and every kind of broken file next to it."""
    store.add("good", type="fact", description="a valid memory", body="fine")
    for path, content, _ in BROKEN.values():
        target = store.root / path
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(content)
    os.mkfifo(store.root / "fact" / "pipe.md")
    (store.root / "fact" / "folder.md").mkdir()
    return store


@pytest.mark.parametrize("kind", list(BROKEN))
def test_lint_names_each_broken_file_and_its_problem(littered: Store, kind: str) -> None:
    path, _, message = BROKEN[kind]
    problems = [p for p in lint.lint_store(littered) if p.path == path]
    assert any(message in p.message for p in problems), (path, [str(p) for p in problems])


def test_lint_names_special_files_without_reading_them(littered: Store) -> None:
    problems = {p.path: p.message for p in lint.lint_store(littered)}
    assert "not a regular file" in problems["fact/pipe.md"]
    assert "not a regular file" in problems["fact/folder.md"]


def test_every_other_command_keeps_serving_the_valid_memories(littered: Store) -> None:
    names = {m.name for m in littered.list()}
    assert {"windows", "someone-else"} <= names  # a CRLF file and a misnamed one still parse
    assert "listy" not in names and "bomb" not in names and "huge" not in names
    assert "evil" not in names and "../evil" not in names and "linky" not in names
    littered.add("new-one", type="fact", description="still writable")
    as_agent(littered, "bob").confirm("new-one", "checked")
    assert littered.read("new-one").memory.status == "confirmed"
    code, output = run_cli(littered, "list")
    assert code == 0 and "new-one" in output
    code, output = run_cli(littered, "show", "new-one")
    assert code == 0 and "still writable" in output
    code, output = run_cli(littered, "lint")
    assert code == 1 and "fact/image.md" in output


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("good", "two files claim the name 'good'"),
        ("listy", "must be a mapping"),
        ("image", "not UTF-8"),
        ("empty", "no YAML front matter"),
        ("bomb", "alias"),
        ("huge", "larger than"),
        ("pipe", "no memory named"),
    ],
)
def test_show_of_a_broken_memory_is_a_clear_error_naming_it(
    littered: Store, name: str, message: str
) -> None:
    code, output = run_cli(littered, "show", name)
    assert code == 1 and message in output, output


def test_a_crlf_file_is_read_and_an_edit_writes_it_back_with_lf(store: Store) -> None:
    (store.root / "fact").mkdir()
    (store.root / "fact" / "windows.md").write_bytes(
        _valid("windows").replace("\n", "\r\n").encode()
    )
    git(store.root, "add", "-A")
    git(store.root, "commit", "-qm", "hand-written on Windows")
    assert store.read("windows").memory.body == "fine"
    store.edit("windows", body="fine, now LF")
    assert b"\r\n" not in (store.root / "fact" / "windows.md").read_bytes()
