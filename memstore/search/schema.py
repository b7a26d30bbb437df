"""What the index holds: its fields, each memory's document (how much each part weighs in the
`text` field queries score), the status and type boosts, and BM25's parameters."""

# Whoosh ships no type information; the unknown-type reports would flag every call into it.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingTypeStubs=false
# pyright: reportUnknownParameterType=false, reportMissingParameterType=false
# pyright: reportUnknownLambdaType=false

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memstore.model.fields import UNSCOPED, scopes_of
from memstore.model.memory import Memory, expiry, links_in_body
from memstore.search.analysis import analyzer
from memstore.search.stubs import without_unused_modules

with without_unused_modules():
    from whoosh import formats, scoring
    from whoosh.fields import ID, KEYWORD, TEXT, Schema

STATUS_BOOST = {"confirmed": 1.2, "draft": 1.0, "deprecated": 0.5}
TYPE_BOOST = {"warning": 1.15, "correction": 1.15}
TEXT_WEIGHTS = {"name_text": 1, "description": 2, "tags_text": 1, "body": 1}
"""How many times each part goes into the `text` field that queries score (BM25F-style:
weighted term frequencies saturate together, instead of one BM25 sum per field)."""

REPEAT_SHARE = 0.9
"""A description this much of whose words the body also holds repeats the body (its first
line, cut short): it goes into `text` once, like the body, not `TEXT_WEIGHTS` times, or the
words it repeats would count three times (chosen on LoCoMo's tuning part, where every
description is the body's first 150 characters)."""

BM25_B = 0.4
BM25_K1 = 0.9
"""BM25's length normalisation and term-frequency saturation, chosen on the tuning part of
LoCoMo (docs/benchmarks.md): memories are short, and a word said twice is not twice as
relevant."""


def weighting() -> Any:
    """How documents are scored: BM25F with `BM25_B` and `BM25_K1`."""
    return scoring.BM25F(B=BM25_B, K1=BM25_K1)


def index_schema(vectors: bool = True) -> Schema:
    """The index's fields; `vectors`: each document's `text` terms and frequencies too, which
    only pseudo-relevance feedback reads (and which cost about a tenth of indexing)."""
    text = analyzer()
    return Schema(
        path=ID(stored=True, unique=True),
        name=ID(stored=True),
        text=TEXT(analyzer=text, vector=formats.Frequency() if vectors else None),
        name_text=TEXT(analyzer=text, phrase=False),
        description=TEXT(analyzer=text, phrase=False, stored=True),
        tags=KEYWORD(stored=True, commas=True),
        tags_text=TEXT(analyzer=text, phrase=False),
        type=ID(stored=True),
        status=ID(stored=True),
        owner=ID(stored=True),
        scope=KEYWORD(stored=True, commas=True),
        created=ID(stored=True),
        updated=ID(stored=True),
        expires=ID(stored=True),
        links=KEYWORD(stored=True, commas=True),
        kind=ID(stored=True),
        source=ID(stored=True),
    )


def document(path: str, memory: Memory) -> dict[str, str]:
    """The index document of the memory at store-relative `path`."""
    return document_parts(path, memory)[0]


def document_parts(path: str, memory: Memory) -> tuple[dict[str, str], list[str]]:
    """The index document of the memory at store-relative `path`, and the parts its `text`
    joins with newlines (what a whole index written at once analyses only once each)."""
    links = list(memory.links)
    links += [n for n in links_in_body(memory.body) if n not in links and n != memory.name]
    scopes = scopes_of(memory.extra)
    parts = {
        "name_text": memory.name.replace("-", " "),
        "description": memory.description,
        "tags_text": " ".join(memory.tags),
        "body": memory.body,
    }
    weights = dict(TEXT_WEIGHTS)
    if _repeats(memory.description, memory.body):
        weights["description"] = 0
    pieces = [value for key, value in parts.items() for _ in range(weights[key])]
    text = "\n".join(pieces)
    return {
        "path": path,
        "name": memory.name,
        "name_text": parts["name_text"],
        "description": parts["description"],
        "tags_text": parts["tags_text"],
        "text": text,
        "tags": ",".join(memory.tags),
        "type": memory.type,
        "status": memory.status,
        "owner": memory.owner,
        "scope": ",".join(scopes) or UNSCOPED,
        "created": memory.created,
        "updated": memory.updated,
        "expires": expiry(memory),
        "links": ",".join(links),
    }, pieces


_LOWER_WORD = re.compile(r"[^\W_]+")


def _repeats(description: str, body: str) -> bool:
    """Whether `description` only repeats the body's words (`REPEAT_SHARE` of its own)."""
    words = _LOWER_WORD.findall(description.lower())
    if not words:
        return False
    held = set(_LOWER_WORD.findall(body.lower()))
    said = set(words)
    if words[-1] not in held and any(w.startswith(words[-1]) for w in held):
        said.discard(words[-1])  # the last word cut short ("maxmem" of "maxmemory")
        held.add(words[-1])
        said.add(words[-1])
    return len(said & held) >= REPEAT_SHARE * len(said)


DOC = "doc"
"""The `type`, `status` and `kind` of a project document's section in the index: it is read, not
reviewed knowledge, so it is never shown as a memory's status."""
DOC_PREFIX = "doc:"
"""Index paths of document sections start so; memory paths are `<type>/<name>.md`."""


@dataclass(frozen=True, slots=True)
class DocSection:
    """One section of a project document, to index: its file (relative to the repository's
    top), heading, fragment and text."""

    path: str
    heading: str
    anchor: str
    text: str


def doc_document(section: DocSection, number: int, updated: str) -> dict[str, str]:
    heading = section.heading
    text = "\n".join([heading, heading, section.text])  # a heading weighs as a description
    return {
        "path": f"{DOC_PREFIX}{section.path}#{number}",
        "name": f"{section.path}#{section.anchor}",
        "name_text": "",
        "description": heading,
        "tags_text": "",
        "text": text,
        "tags": "",
        "type": DOC,
        "status": DOC,
        "owner": "",
        "scope": UNSCOPED,
        "created": updated,
        "updated": updated,
        "expires": "",
        "links": "",
        "kind": DOC,
        "source": f"{DOC_PREFIX}{section.path}",
    }


POSITIONS = {
    name: bool(field.format and field.format.supports("positions"))
    for name, field in index_schema().items()
}
"""Which fields can match a phrase."""
