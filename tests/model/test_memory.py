"""The file format: canonical rendering, validation and injection safety."""

from __future__ import annotations

import random
import string
from datetime import date

import pytest
import yaml

from memstore.errors import InvalidMemory, InvalidName
from memstore.model import memory_yaml
from memstore.model.fields import (
    check_body,
    check_description,
    check_expires,
    check_name,
    check_tags,
)
from memstore.model.memory import Memory, links_in_body, parse, render, to_dict

CANONICAL = """---
name: use-zod
description: Validate API input with zod schemas
type: decision
status: confirmed
owner: alice
created: 2026-11-30T08:00:00Z
updated: 2026-11-30T09:00:00Z
tags:
- api
- validation
links:
- api-errors
confirmed_by: bob
confirmed_at: 2026-11-30T09:00:00Z
confirmed_reason: checked src/types.ts
scope: backend
reviewer-note: keep until v3
---

## Why
Hand-written checks drifted from the types.
"""


def make(**changes: object) -> Memory:
    base: dict[str, object] = {
        "name": "use-zod",
        "description": "Validate API input with zod schemas",
        "type": "decision",
        "status": "draft",
        "owner": "alice",
        "created": "2026-11-30T08:00:00Z",
        "updated": "2026-11-30T08:00:00Z",
    }
    base.update(changes)
    return Memory(**base)  # type: ignore[arg-type]


def test_canonical_file_round_trips_byte_for_byte() -> None:
    assert render(parse(CANONICAL)) == CANONICAL


def test_unknown_keys_a_human_added_are_preserved_in_order() -> None:
    memory = parse(CANONICAL)
    assert memory.extra == {"scope": "backend", "reviewer-note": "keep until v3"}
    assert render(memory).index("scope:") < render(memory).index("reviewer-note:")


def test_key_order_is_fixed_whatever_order_the_file_had() -> None:
    shuffled = CANONICAL.replace(
        "name: use-zod\ndescription: Validate API input with zod schemas\n", ""
    ).replace("tags:", "description: Validate API input with zod schemas\nname: use-zod\ntags:")
    assert render(parse(shuffled)) == CANONICAL


def test_timestamps_stay_plain_strings() -> None:
    memory = parse(CANONICAL)
    assert memory.created == "2026-11-30T08:00:00Z"
    assert "created: 2026-11-30T08:00:00Z\n" in render(memory)


def test_description_with_newline_and_status_cannot_inject_fields() -> None:
    evil = "harmless\nstatus: confirmed\nconfirmed_by: mallory"
    text = render(make(description=evil, body="---\nstatus: confirmed\n---"))
    back = parse(text)
    assert back.status == "draft"
    assert back.confirmed_by is None
    assert back.description == evil
    assert back.body == "---\nstatus: confirmed\n---"


@pytest.mark.parametrize(
    "field", ["owner", "confirmed_reason", "deprecated_reason", "restored_reason"]
)
def test_yaml_special_characters_in_any_text_field_round_trip(field: str) -> None:
    value = "x: y # not a comment\n- [a, b]\n&anchor *alias !!python/object"
    back = parse(render(make(**{field: value})))
    assert getattr(back, field) == value
    assert back.status == "draft"


def test_crlf_file_parses_like_lf() -> None:
    assert parse(CANONICAL.replace("\n", "\r\n")) == parse(CANONICAL)


@pytest.mark.parametrize(
    "name",
    ["../x", "/etc/passwd", "a b", "a.b", "Upper", "", "-lead", "x" * 65, "a/b", "ünï", "a_b"],
)
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidName, match="invalid name"):
        check_name(name)


@pytest.mark.parametrize("name", ["a", "0", "use-zod", "x" * 64, "a-1-b"])
def test_slug_names_are_accepted(name: str) -> None:
    assert check_name(name) == name


def test_description_over_200_characters_is_refused_with_the_count() -> None:
    with pytest.raises(InvalidMemory, match="201 characters; the limit is 200"):
        check_description("x" * 201)
    assert check_description("x" * 200) == "x" * 200


def test_multiline_or_empty_description_is_refused() -> None:
    with pytest.raises(InvalidMemory, match="one line"):
        check_description("a\nb")
    with pytest.raises(InvalidMemory, match="non-empty"):
        check_description("   ")


def test_body_over_64_kib_is_refused() -> None:
    with pytest.raises(InvalidMemory, match="limit is 65536"):
        check_body("x" * (64 * 1024 + 1))


def test_tags_must_be_short_words_and_few() -> None:
    assert check_tags(["api", "api", "v2.1"]) == ("api", "v2.1")
    with pytest.raises(InvalidMemory, match="invalid tag 'two words'"):
        check_tags(["two words"])
    with pytest.raises(InvalidMemory, match="at most 32"):
        check_tags([f"t{i}" for i in range(1000)])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter\n", "no YAML front matter"),
        ("---\n- a\n- b\n---\nbody\n", "must be a mapping"),
        ("---\nname: [unclosed\n---\n", "not valid YAML at line"),
        ("---\nname: x\n---\n", "lacks required key"),
        (
            "---\nname: Bad Name\ndescription: d\ntype: fact\nstatus: draft\nowner: a\n"
            "created: c\nupdated: u\n---\n",
            "invalid name",
        ),
    ],
)
def test_broken_files_raise_invalid_memory_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises((InvalidMemory, InvalidName), match=message):
        parse(text)


def test_yaml_error_reports_the_file_line() -> None:
    text = "---\nname: ok\ndescription: fine\ntype: [oops\n---\n"
    with pytest.raises(InvalidMemory, match="line 4"):
        parse(text)


def test_wiki_links_in_body_are_found_in_order() -> None:
    assert links_in_body("see [[b-spec]] and [[a-x]], again [[b-spec]]") == ("b-spec", "a-x")


# The quick path writes and reads front matter without PyYAML: whatever it takes, it must
# give exactly what PyYAML gives, and leave the rest to PyYAML.
_TRICKY = (
    string.ascii_letters
    + string.digits
    + " -_.,;:/()'\"!?+=&%@$~*<>^|\\#[]{}`\t\n"
    + "éü—…中\u00a0\u2028\u0085\ufeff\U0001f600\x7f\x1b"
)
_WORDS = ("yes", "No", "ON", "off", "null", "Null", "~", "y", "n", "true", "False", "1.5")
_WORDS += ("0x1F", "1_000", "12:30", "2026-01-02", "2026-01-02T03:04:05Z", ".inf", "<<", "=")
_WORDS += ("- a", "a #b", "a: b", "---", "a ", " a", "", "use-zod", "Validate input, then go")


_PLAIN = string.ascii_letters + string.digits + "    -_.,;/()'\"!?+=&%@$~*<>^|\\éü—…中\u00a0"


def _tricky(rng: random.Random) -> str:
    """A value: a word YAML reads as something else, one of mostly plain characters (what
    memory fields hold), or any characters."""
    roll = rng.random()
    if roll < 0.2:
        return rng.choice(_WORDS)
    if roll < 0.7:
        return rng.choice(string.ascii_letters) + "".join(
            rng.choice(_PLAIN) for _ in range(rng.randint(0, 12))
        )
    return "".join(rng.choice(_TRICKY) for _ in range(rng.randint(0, 10)))


def _pyyaml_dump(data: dict[str, object]) -> str:
    dumper = memory_yaml._yaml()[1]  # pyright: ignore[reportPrivateUsage]
    return yaml.dump(
        data,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=10_000,
    )


def _pyyaml_load(head: str) -> object:
    return yaml.load(head, Loader=memory_yaml._yaml()[0])  # noqa: S506 - a SafeLoader  # pyright: ignore[reportPrivateUsage]


def test_front_matter_written_without_pyyaml_is_byte_for_byte_what_pyyaml_writes() -> None:
    rng = random.Random(20261201)
    quick = 0
    for _ in range(4000):
        data: dict[str, object] = {"name": _tricky(rng), "tags": [_tricky(rng), "api"]}
        data[rng.choice(["links", "on", "files", "a-b", "x"])] = rng.choice([[], _tricky(rng)])
        written = memory_yaml._quick_dump(data)  # pyright: ignore[reportPrivateUsage]
        if written is not None:
            quick += 1
            assert written == _pyyaml_dump(data), data
    assert quick > 400  # the usual fields do take the quick path


def test_front_matter_read_without_pyyaml_is_what_pyyaml_reads() -> None:
    rng = random.Random(20261202)
    pieces = ["name", "tags", "on", "a-b", ":", ": ", " ", "- ", "  - ", "[]", "\n", "#", "'"]
    quick = 0
    for _ in range(6000):
        if rng.random() < 0.5:  # as memstore writes it
            data: dict[str, object] = {
                "name": _tricky(rng),
                "tags": [_tricky(rng)] * rng.randint(0, 2),
            }
            head = _pyyaml_dump(data)
        else:  # as a person might type it
            head = "".join(rng.choice(pieces + [_tricky(rng)]) for _ in range(rng.randint(1, 12)))
        found = memory_yaml._quick_load(head)  # pyright: ignore[reportPrivateUsage]
        if found is not None:
            quick += 1
            assert found == _pyyaml_load(head), head
    assert quick > 1000
    for head in ("name: a\nname: b\n", "tags:\n", "tags:\nname: a\n", "name: 'a'\n", "a:\n\n- b\n"):
        assert memory_yaml._quick_load(head) is None  # pyright: ignore[reportPrivateUsage]


def test_hex_values_such_as_confirmation_hashes_skip_pyyaml_and_match_it() -> None:
    rng = random.Random(20261203)
    quick = 0
    for _ in range(3000):
        value = "".join(rng.choice("0123456789abcdef") for _ in range(rng.randint(1, 16)))
        value = rng.choice(["", "0b", "0x", "1e", "1.", "-"]) + value
        data: dict[str, object] = {"name": "a", "confirmed_hash": value}
        written = memory_yaml._quick_dump(data)  # pyright: ignore[reportPrivateUsage]
        if written is not None:
            quick += 1
            assert written == _pyyaml_dump(data), data
            assert memory_yaml._quick_load(written) == _pyyaml_load(written) == data
    assert quick > 600  # a hash starting with a digit goes through PyYAML no more (was 190)
    assert memory_yaml._quick_load("confirmed_hash: 221af59b45ced36d\n") == {
        "confirmed_hash": "221af59b45ced36d"
    }
    for number in ("0b101", "0x1f", "1234", "0777", "12.5", "1.5e3"):
        assert memory_yaml._quick_load(f"k: {number}\n") is None  # pyright: ignore[reportPrivateUsage]


def test_a_file_of_plain_fields_parses_and_renders_as_pyyaml_would() -> None:
    memory = parse(CANONICAL)
    assert memory_yaml._quick_dump(to_dict(memory)) is not None  # pyright: ignore[reportPrivateUsage]
    assert render(memory) == CANONICAL
    quoted = CANONICAL.replace(
        "description: Validate API input with zod schemas", "description: 'yes: validate input'"
    )
    assert parse(quoted).description == "yes: validate input"
    assert render(parse(quoted)) == quoted


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("24h", "2026-12-02"),
        ("25h", "2026-12-03"),
        ("0d", "2026-12-02"),
        ("7d", "2026-12-08"),
        ("2w", "2026-12-15"),
        ("1.5d", "2026-12-03"),
        (" 7 d ", "2026-12-08"),
        ("2026-12-31", "2026-12-31"),
        (date(2027, 1, 2), "2027-01-02"),
    ],
)
def test_an_expiry_is_a_date_or_hours_days_or_weeks_from_today(
    value: object, expected: str
) -> None:
    assert check_expires(value, today=date(2026, 12, 1)) == expected


@pytest.mark.parametrize("value", ["90", "90m", "30s", "next week", "2026-02-30", "99999999w", 7])
def test_an_expiry_without_a_day_unit_or_a_real_day_is_refused(value: object) -> None:
    with pytest.raises(InvalidMemory, match=r"invalid expiry .*: use a date \(2026-12-31\)"):
        check_expires(value, today=date(2026, 12, 1))


def test_an_empty_value_is_named_in_errors_without_python_spelling() -> None:
    from memstore.model import fields

    calls = [
        lambda: fields.check_importance(None),
        lambda: fields.check_tags([None]),
        lambda: fields.check_tags(3),
        lambda: fields.check_files([None]),
        lambda: fields.check_expires([None]),
        lambda: fields.check_name(None),
        lambda: fields.check_extra({None: "x"}),
        lambda: check_body(3),
        lambda: parse(CANONICAL.replace("name: use-zod\n", "name:\n")),
        lambda: parse(CANONICAL.replace("owner: alice\n", "owner: alice\npinned: [1]\n")),
    ]
    said: list[str] = []
    for call in calls:
        with pytest.raises((InvalidMemory, InvalidName)) as raised:
            call()
        said.append(str(raised.value))
    assert [s for s in said if "None" in s] == []
    assert "invalid importance (empty)" in said[0]
