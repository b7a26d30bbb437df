"""The word tables as data: an edited copy of `words.toml` changes what `check` sees, and every
malformed entry is refused with the file, the entry and what it may hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstore.errors import InvalidWords, MemstoreError
from memstore.workflow.rules import concepts, guards, words
from memstore.workflow.rules import rules as workflow
from memstore.workflow.rules.rules import Verdict


def _copy(tmp_path: Path, old: str = "", new: str = "") -> Path:
    """A copy of the shipped tables, with `old` replaced by `new` (once)."""
    text = words.DEFAULT.read_text(encoding="utf-8")
    if old:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / "words.toml"
    path.write_text(text, encoding="utf-8", newline="\n")
    return path


def _deploy_rule() -> workflow.Rule:
    return workflow.Rule(
        name="deploy-freeze",
        type="correction",
        status="confirmed",
        severity="p0",
        applies_when=("deploy",),
        description="no deploys during the freeze",
        binding=True,
    )


def test_the_shipped_tables_are_read_once_per_process() -> None:
    assert words.load(words.DEFAULT) is words.load(words.DEFAULT)
    assert words.table() is words.load(words.DEFAULT)
    assert guards.GUARD_NAMES == tuple(words.table().guards)


def test_a_synonym_added_to_a_copy_of_the_tables_is_matched_by_check(tmp_path: Path) -> None:
    path = _copy(tmp_path, '"deploy", "deployment",', '"deploy", "deployment", "hoist",')
    rule = _deploy_rule()
    assert workflow.decide("hoist the new build", [rule]).verdict is Verdict.ALLOW
    with words.using(path) as table:
        assert table.path == path
        assert concepts.analyse("hoist the new build").has("deploy")
        assert workflow.decide("hoist the new build", [rule]).verdict is Verdict.BLOCK
    # outside the block the shipped tables are back, caches and all
    assert not concepts.analyse("hoist the new build").has("deploy")
    assert workflow.decide("hoist the new build", [rule]).verdict is Verdict.ALLOW


def test_a_word_and_a_reason_changed_in_a_copy_change_the_guard_warnings(tmp_path: Path) -> None:
    path = _copy(tmp_path, "table tables database", "ledger table tables database")
    reason = "drops, truncates or wipes database tables or data"
    path.write_text(
        path.read_text(encoding="utf-8").replace(reason, "loses data nobody can bring back"),
        encoding="utf-8",
    )
    assert workflow.decide("wipe the ledger", []).reasons == ()
    with words.using(path):
        (warning,) = workflow.decide("wipe the ledger", []).reasons
    assert (warning.name, warning.message) == ("drop-data", "loses data nobody can bring back")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "[concepts.publish]\n",
            "[concepts.publish]\nsynonyms = []\n",
            "concepts.publish.synonyms is not a known key; concepts.publish holds: phrases, pairs",
        ),
        (
            'reason = "a recursive delete outside temp and build folders: nothing brings it back"',
            "",
            "guards.rm-rf.reason is missing",
        ),
        (
            'reason = "drops, truncates or wipes database tables or data"',
            'reason = ""',
            "guards.drop-data.reason must be a non-blank string",
        ),
        (
            '"publish", "release",',
            '"publish", 3,',
            "concepts.publish.phrases[1] must be a non-blank string, not 3",
        ),
        (
            'nouns = ["credential", "production", "registry"]',
            'nouns = ["credential", "production", "registry", "secrets"]',
            "nouns[3] names 'secrets', which is not a concept; concepts: publish, deploy,",
        ),
        (
            'concept = "delete"',
            'concept = "remove"',
            "commands[1].concept names 'remove', which is not a concept",
        ),
        (
            "pattern = '\\brm\\s+-'",
            "pattern = '\\brm\\s+-('",
            "commands[1].pattern is not a regular expression: missing ), unterminated subpattern",
        ),
        (
            "pattern = '\\brm\\s+-'",
            "pattern = 7",
            "commands[1].pattern must be a regular expression: a string or a list of strings",
        ),
        (
            "possessives = 'my our your their his her its this that these those'\n",
            "",
            "words.possessives is missing",
        ),
        (
            "possessives = 'my our your their his her its this that these those'",
            'possessives = ["my", "our"]',
            "words.possessives must be a string of words separated by spaces",
        ),
        (
            "[terms]\n",
            "[terms]\nsynonyms = 'x'\n",
            "terms.synonyms is not a known key; terms holds:",
        ),
        ("[read_subcommands]\n", "[read_subcommands]\nmake = 3\n", "read_subcommands.make must be"),
        ("[foreign]\n", "[foreign]\nlanguages = []\n", "foreign.languages is not a known key"),
        ('[[commands]]\nconcept = "delete"\n', "[[commands]]\n", "commands[1].concept is missing"),
        ("nouns = ", "verbs = []\nnouns = ", "verbs is not a known key; the file holds: nouns,"),
        ("[[commands]]", "[[commands", "not valid TOML"),
    ],
)
def test_a_malformed_entry_is_refused_naming_the_file_and_the_entry(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    path = _copy(tmp_path, old, new)
    with pytest.raises(InvalidWords) as caught:
        words.load(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
    assert isinstance(caught.value, MemstoreError)


def test_a_guard_the_code_has_no_test_for_is_refused_when_the_guards_are_read(
    tmp_path: Path,
) -> None:
    path = _copy(
        tmp_path, "[guards.rm-rf]", '[guards.fork-bomb]\nreason = "a fork bomb"\n\n[guards.rm-rf]'
    )
    with words.using(path), pytest.raises(InvalidWords, match="guards.fork-bomb is not a built-in"):
        guards.guards()
    (tmp_path / "fewer").mkdir()
    reason = "a recursive delete outside temp and build folders: nothing brings it back"
    fewer = _copy(tmp_path / "fewer", f'[guards.rm-rf]\nreason = "{reason}"\n')
    with words.using(fewer), pytest.raises(InvalidWords, match="guards.rm-rf is missing"):
        guards.guards()


def test_missing_tables_are_refused_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidWords, match="cannot read the word tables"):
        words.load(tmp_path / "nowhere.toml")
