"""The README is a test: its ```console blocks, run in order in a fresh directory with the real
`memstore`, print what the README shows.

The convention, for README.md (and any doc listed in `DOCS`):
- A ```console block is run. Any other block that shows a `$ ` prompt must follow a line
  `<!-- not run: why -->`, so a transcript is never silently left untested.
- In a console block, a line starting with `$ ` is a command. It continues on the next lines when
  it ends with `\\` or opens a heredoc (`<<'EOF'` up to the line `EOF`). Every other line, up to
  the next command, is what the command prints (stdout and stderr together); blank lines at the
  end of it are ignored.
- A line `…` alone in printed output stands for any number of lines.
- All blocks of one file run in one shell, in order, starting in an empty directory that stands
  for `/home/me` (also `$HOME`), with no identity set and git's global config ignored.
- Before comparing, both sides lose what varies from run to run: dates, times, commit shas and
  decimal numbers (search scores) become placeholders, and runs of spaces become one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ["README.md", "docs/clients.md"]
HOME = "/home/me"

_FENCE = re.compile(r"^```console\n(.*?)^```$", re.DOTALL | re.MULTILINE)
_HEREDOC = re.compile(r"<<-?\s*'?(\w+)'?")
_PLACEHOLDERS = [
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?"),
        "<time>",
    ),
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "<date>"),
    (re.compile(r"\b\d{2}:\d{2}\b"), "<time>"),
    # Any 7+ hex digits: a short sha is all digits about one time in a hundred.
    (re.compile(r"\b[0-9a-f]{7,64}\b"), "<sha>"),
    (re.compile(r"(?<![\w.])\d+\.\d+(?![\w.])"), "<n>"),
    # Whichever venv runs memstore, and its python named python, python3 or python3.12.
    (re.compile(r"[^\s\"']*/bin/python[\d.]*"), "<python>"),
]


@dataclass(frozen=True, slots=True)
class Step:
    """One `$ ` command of a console block and the lines the doc says it prints."""

    command: str
    expected: list[str]


def steps(text: str) -> list[Step]:
    """Every command of every ```console block in `text`, in order."""
    found: list[Step] = []
    for block in _FENCE.findall(text):
        lines: list[str] = block.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                assert not lines[i].strip(), f"output before any command: {lines[i]!r}"
                i += 1
                continue
            command = [lines[i][2:]]
            i += 1
            while command[-1].endswith("\\") and i < len(lines):
                command.append(lines[i])
                i += 1
            if heredoc := _HEREDOC.search("\n".join(command)):
                while i < len(lines) and lines[i - 1] != heredoc.group(1):
                    command.append(lines[i])
                    i += 1
            expected: list[str] = []
            while i < len(lines) and not lines[i].startswith("$ "):
                expected.append(lines[i])
                i += 1
            while expected and not expected[-1].strip():
                expected.pop()
            found.append(Step("\n".join(command), expected))
    return found


def normalise(line: str) -> str:
    for pattern, placeholder in _PLACEHOLDERS:
        line = pattern.sub(placeholder, line)
    return re.sub(r"[ \t]+", " ", line).strip()


def run(steps_: list[Step], home: Path) -> list[list[str]]:
    """Run the commands in one bash, in `home`; return what each printed."""
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "memstore").exists(), (
        f"no memstore next to {sys.executable}: pip install -e ."
    )
    marker = "@@readme-step@@"
    script = ["exec 2>&1", f"cd {home}"]
    for step in steps_:
        script += [f"printf '\\n{marker}\\n'", step.command]
    env = {
        "PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONUNBUFFERED": "1",
        "LANG": "C.UTF-8",
        "TZ": "UTC",
    }
    result = subprocess.run(
        ["bash", "--noprofile", "--norc"],
        input="\n".join(script) + "\n",
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
        check=False,
    )
    output = result.stdout.replace(str(home), HOME)
    return [chunk.splitlines() for chunk in output.split(f"\n{marker}\n")[1:]]


def matches(expected: list[str], actual: list[str]) -> bool:
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line.strip() == "…" else re.escape(normalise(line)) + "\n"
        for line in expected
    )
    return re.fullmatch(pattern, "".join(normalise(a) + "\n" for a in actual)) is not None


_ANY_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def test_every_transcript_in_the_docs_is_run_or_says_why_not() -> None:
    unmarked: list[str] = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for fence in _ANY_FENCE.finditer(text):
            shows_prompt = re.search(r"^\$ ", fence.group(2), re.MULTILINE)
            before = text[: fence.start()].rstrip().rpartition("\n")[2]
            if (
                shows_prompt
                and fence.group(1) != "console"
                and not before.startswith("<!-- not run:")
            ):
                line = text.count("\n", 0, fence.start()) + 1
                unmarked.append(f"{doc.relative_to(ROOT)}:{line}")
            if fence.group(1) == "console" and doc.relative_to(ROOT).as_posix() not in DOCS:
                unmarked.append(f"{doc.relative_to(ROOT)}: console block, but not in DOCS")
    assert unmarked == []


@pytest.mark.parametrize("doc", DOCS)
def test_console_blocks_print_what_the_doc_shows(doc: str, tmp_path: Path) -> None:
    todo = steps((ROOT / doc).read_text(encoding="utf-8"))
    assert todo, f"{doc} has no ```console block"
    printed = run(todo, tmp_path)
    assert len(printed) == len(todo), "the shell stopped early"
    for step, actual in zip(todo, printed, strict=True):
        while actual and not actual[-1].strip():
            actual.pop()
        if not matches(step.expected, actual):
            shown = "\n".join(normalise(line) for line in step.expected)
            got = "\n".join(normalise(line) for line in actual)
            assert got == shown, f"{doc}: `$ {step.command}` printed something else"


def test_a_console_block_splits_into_commands_with_continuations_heredocs_and_output() -> None:
    text = (
        "```console\n$ a \\\n  b <<'EOF'\nbody\nEOF\nout 1\n\n$ c\n…\n```\n```sh\n$ not run\n```\n"
    )
    assert steps(text) == [Step("a \\\n  b <<'EOF'\nbody\nEOF", ["out 1"]), Step("c", ["…"])]


def test_placeholders_hide_what_varies_and_ellipsis_stands_for_any_lines() -> None:
    assert normalise("2026-11-30 09:12  3f1c2a9e0b  bob   1.87") == "<time> <sha> bob <n>"
    assert normalise("09:12  3141592653  alice") == "<time> <sha> alice"
    assert matches(["BLOCK: x", "…", "4"], ["BLOCK: x", "- a", "- b", "4"])
    assert not matches(["ok: 2 memories"], ["ok: 1 memories"])
