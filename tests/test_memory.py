"""The file format: canonical rendering, validation and injection safety."""

from __future__ import annotations

import pytest

from memstore.errors import InvalidMemory, InvalidName
from memstore.memory import (
    Memory,
    check_body,
    check_description,
    check_name,
    check_tags,
    links_in_body,
    parse,
    render,
)

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
