"""The docs name every CLI command (and, when the server exists, every MCP tool)."""

from __future__ import annotations

from pathlib import Path

import click

from memstore.faces.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


def commands(group: click.Group, prefix: str = "") -> list[str]:
    found: list[str] = []
    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        assert command is not None, name
        found.append(f"{prefix}{name}")
        if isinstance(command, click.Group):
            found.extend(commands(command, f"{prefix}{name} "))
    return found


def test_cli_doc_names_every_command() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [c for c in commands(main) if f"`{c}" not in text]
    assert missing == []


def test_readme_names_the_two_setup_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make serve" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_architecture_doc_names_every_module_and_only_modules_that_exist() -> None:
    """docs/architecture.md is the folder map: a table row per module, `folder/module.py` first."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = ROOT / "memstore"
    named = set(re.findall(r"^\| `((?:[a-z_]+/)*[a-z_]+\.(?:py|toml))` \|", text, re.MULTILINE))
    modules = {
        p.relative_to(package).as_posix()
        for p in [*package.rglob("*.py"), *package.rglob("*.toml")]
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    }
    assert sorted(named - modules) == [], "named in the doc but not in the package"
    assert sorted(modules - named) == [], "in the package but not in the doc"
