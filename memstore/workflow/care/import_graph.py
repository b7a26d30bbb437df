"""The official MCP memory server's knowledge graph (`memory.jsonl`) read into candidate
memories: each entity a draft (its observations the body), each relation a link from one
entity's draft to the other's. Pure functions: nothing here opens a store.

The file holds one JSON object a line, `{"type": "entity", "name", "entityType",
"observations": [...]}` or `{"type": "relation", "from", "to", "relationType"}` (the
server's `saveGraph`). Where the server skips a line it cannot read, an import stops: a
one-line error names the file and line, and nothing is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memstore.errors import InvalidMemory
from memstore.model.fields import BODY_MAX, LINKS_MAX
from memstore.workflow.care import sources

SOURCE = "official memory server"


@dataclass
class _Entity:
    name: str
    kind: str
    line: int
    observations: list[str] = field(default_factory=list[str])
    out: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """(relation type, target entity) of each relation from it."""
    into: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """(relation type, source entity) of each relation to it."""


def is_graph(text: str) -> bool:
    """Whether a file's text reads as the memory server's graph: one of its first lines a
    JSON object whose `type` is `entity` or `relation` (so that a damaged first line is
    reported as the graph's, by line)."""
    lines = [line for line in text.splitlines()[:200] if line.strip()][:20]
    for line in lines:
        if not line.lstrip().startswith("{"):
            continue
        try:
            record: Any = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            return record.get("type") in ("entity", "relation")  # pyright: ignore[reportUnknownMemberType]
    return False


def _text(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidMemory(f"{where}: '{key}' must be a non-empty string")
    return value.strip()


def read_graph(text: str, label: str) -> tuple[list[_Entity], list[tuple[int, str]]]:
    """The entities of a graph file (relations attached) and the relations from no entity of
    the file, as (line, what).

    Raises:
        InvalidMemory: `label:line: …` for a line that is not JSON, not an object, of another
            type, or missing a field.
    """
    entities: dict[str, _Entity] = {}
    relations: list[tuple[int, str, str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{label}:{number}"
        try:
            raw: Any = json.loads(line)
        except json.JSONDecodeError as e:
            raise InvalidMemory(f"{where}: not JSON ({e.msg} at column {e.colno})") from e
        except (ValueError, RecursionError) as e:
            raise InvalidMemory(f"{where}: not JSON ({type(e).__name__})") from e
        if not isinstance(raw, dict):
            raise InvalidMemory(f"{where}: not a JSON object")
        record: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
        kind = record.get("type")
        if kind == "entity":
            name = _text(record, "name", where)
            entity_type = _text(record, "entityType", where)
            observed: Any = record.get("observations", [])
            if not isinstance(observed, list) or not all(isinstance(o, str) for o in observed):  # pyright: ignore[reportUnknownVariableType]
                raise InvalidMemory(f"{where}: 'observations' must be a list of strings")
            items: list[str] = [o.strip() for o in observed if o.strip()]  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
            known = entities.get(name)
            if known is None:
                entities[name] = _Entity(name, entity_type, number, items)
            else:  # the same name twice: the server's reads would show both, one node here
                known.observations += [o for o in items if o not in known.observations]
        elif kind == "relation":
            relations.append(
                (
                    number,
                    _text(record, "from", where),
                    _text(record, "relationType", where),
                    _text(record, "to", where),
                )
            )
        else:
            raise InvalidMemory(
                f'{where}: \'type\' must be "entity" or "relation", not {json.dumps(kind)}'
            )
    dangling: list[tuple[int, str]] = []
    for number, start, relation, end in dict.fromkeys(relations):
        if start not in entities:
            dangling.append((number, f"{start} {relation} {end}"))
            continue
        entities[start].out.append((relation, end))
        if end in entities:
            entities[end].into.append((relation, start))
    return list(entities.values()), dangling


def graph_candidates(
    text: str, label: str, taken: set[str]
) -> tuple[list[sources.Candidate], list[tuple[str, str]]]:
    """A draft for each entity of a memory server graph file: named after the entity, typed
    by its entityType (`sources.kind_of`), its observations as the body and description, its
    relations as links to the other entities' drafts. `taken` holds the names already used
    (it is extended). Also (what, why) for each relation left out.

    Raises:
        InvalidMemory: for a line that is not the graph's (see `read_graph`).
    """
    entities, dangling = read_graph(text, label)
    skipped = [(f"{label}:{n}: relation {what}", "its 'from' is no entity") for n, what in dangling]
    names = {e.name: sources.unique(sources.slug(e.name), taken) for e in entities}
    out: list[sources.Candidate] = []
    for entity in entities:
        kind = sources.kind_of(entity.kind)
        first = entity.observations[0] if entity.observations else f"a {entity.kind}"
        lines = [f"{entity.name} ({entity.kind}), from the {SOURCE}'s knowledge graph."]
        if entity.observations:
            lines += ["", "## Observations", ""] + [f"- {o}" for o in entity.observations]
        if entity.out or entity.into:
            lines += ["", "## Relations", ""]
            lines += [
                f"- {entity.name} {r} {t}" + (f" (`{names[t]}`)" if t in names else "")
                for r, t in entity.out
            ]
            lines += [f"- {s} {r} {entity.name} (`{names[s]}`)" for r, s in entity.into]
        body = "\n".join(lines)
        if len(body) > BODY_MAX - 200:
            body = body[: BODY_MAX - 200].rsplit("\n", 1)[0] + "\n\n[…]"
        links = tuple(dict.fromkeys(names[t] for _, t in entity.out if t in names))[:LINKS_MAX]
        tag = sources.slug(entity.kind, 32)
        out.append(
            sources.Candidate(
                name=names[entity.name],
                type=kind,
                description=sources.describe(f"{entity.name}: {first}"),
                body=f"{body}\n\nImported from `{label}:{entity.line}`.",
                tags=("imported", *(t for t in [tag] if t != "note")),
                source=f"{label}:{entity.line}",
                links=links,
                origin=(
                    f"entity {json.dumps(entity.name, ensure_ascii=False)} ({entity.kind} → "
                    f"{kind}), {len(entity.observations)} observation(s), "
                    f"{len(entity.out)} relation(s) out"
                ),
            )
        )
    return out, skipped
