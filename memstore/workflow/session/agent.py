"""What an agent does over a store as it works: saving, corrections, the check before acting,
and outcomes.

`workflow/rules/rules.py` holds the rules and verdicts as pure functions; these feed them the
store's memories, search index and ledger. The faces call these functions directly.
"""

from __future__ import annotations

import functools
import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from memstore.errors import InvalidLedgerEntry, InvalidMemory, LedgerCorrupt
from memstore.limits import DEFAULT_SEVERITY
from memstore.model.fields import SCOPE_KEY, check_scope, scopes_of
from memstore.model.memory import Memory, now
from memstore.model.status import Status
from memstore.search.query import QUERY_MAX, Hit
from memstore.search.upkeep import Query, search, upkeep
from memstore.storage import binding, settings, transaction
from memstore.storage.files import read_regular
from memstore.workflow.care import stats
from memstore.workflow.ledger import book as ledger_io
from memstore.workflow.rules import rules as workflow
from memstore.workflow.rules.guards import GUARD_NAMES

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from memstore.storage.store import Store
    from memstore.workflow.care.steward import Similar

log = logging.getLogger(__name__)


def correct(
    store: Store,
    name: str,
    *,
    description: str,
    severity: str | None = None,
    applies_when: tuple[str, ...] | list[str] = (),
    evidence: str | None = None,
    body: str = "",
    tags: tuple[str, ...] | list[str] = (),
    links: tuple[str, ...] | list[str] = (),
    type: str = "correction",
    extra: dict[str, Any] | None = None,
) -> Memory:
    """Record a correction (or warning) as a draft; it acts in `brief` and `check` at once.
    `extra` adds other front-matter fields (`files`, `expires`).

    Raises:
        InvalidMemory (bad severity, pattern or evidence), InvalidName, MemoryExists.
    """
    if type not in workflow.RULE_TYPES:
        raise InvalidMemory(f"a rule is a {' or a '.join(workflow.RULE_TYPES)}, not a {type!r}")
    fields = workflow.rule_fields(severity or DEFAULT_SEVERITY[type], list(applies_when), evidence)
    return store.add(
        name,
        type=type,
        description=description,
        body=body,
        tags=tags,
        links=links,
        extra={**(extra or {}), **fields},
    )


def save(
    store: Store,
    name: str,
    *,
    type: str,
    description: str,
    body: str = "",
    tags: tuple[str, ...] | list[str] = (),
    links: tuple[str, ...] | list[str] = (),
    severity: str | None = None,
    applies_when: tuple[str, ...] | list[str] = (),
    evidence: str | None = None,
    files: tuple[str, ...] | list[str] = (),
    expires: str | None = None,
    scope: tuple[str, ...] | list[str] = (),
) -> Memory:
    """Save a new draft: a rule (`correct`) when its type is a rule type or rule fields are
    given, else a plain memory (`Store.add`). `files` names the repository paths it is about;
    `expires` (7d, 2026-12-31) when it leaves recall; `scope` the agents' areas it is for
    (none: every agent).

    Raises:
        InvalidMemory, InvalidName, MemoryExists, SecretFound, NoIdentity.
    """
    scopes = list(check_scope(list(scope)))
    extra: dict[str, Any] = {
        "files": list(files) or None,
        "expires": expires,
        SCOPE_KEY: scopes or None,
    }
    extra = {k: v for k, v in extra.items() if v is not None}
    if type in workflow.RULE_TYPES or severity or applies_when or evidence:
        return correct(
            store,
            name,
            type=type,
            description=description,
            body=body,
            tags=tags,
            links=links,
            severity=severity,
            applies_when=applies_when,
            evidence=evidence,
            extra=extra,
        )
    return store.add(
        name,
        type=type,
        description=description,
        body=body,
        tags=tags,
        links=links,
        extra=extra,
    )


@functools.cache
def _hints() -> ThreadPoolExecutor:
    """Looks up the memories like one being saved while its write runs (see `save_with_hint`)."""
    from concurrent.futures import ThreadPoolExecutor  # only a write needs it

    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="memstore-hint")


def save_with_hint(
    store: Store, name: str, *, description: str, **fields: Any
) -> tuple[Memory, list[Similar]]:
    """`save`, and the existing memories most like the new one (`steward.similar`, a hint).

    The hint is a search: once the store has an index, it runs while the write waits for its
    files and git, so the two take about as long as the write alone (a refused write may then
    have brought that ignored cache up to date, nothing else). The new memory is never among
    the hints.

    Raises:
        As `save` does.
    """
    from memstore.workflow.care import (
        steward,  # the CLI's other commands never load the duplicate check
    )

    if not (store.cache / "index").is_dir():
        # No index yet: the hint's search would build one even for a write that is refused,
        # and a refused write changes nothing. Write first, then look.
        memory = save(store, name, description=description, **fields)
        return memory, steward.similar(store, name, description)
    hint = _hints().submit(steward.similar, store, name, description)
    memory = save(store, name, description=description, **fields)
    return memory, hint.result()


def rules(
    store: Store, memories: list[Memory] | None = None, scopes: tuple[str, ...] = ()
) -> list[workflow.Rule]:
    """Every correction and warning that is not deprecated, most severe first; a rule binds
    when it is confirmed or one of the store's `humans` made it. With `scopes`, only the
    rules for one of them or for no scope in particular.

    Raises:
        InvalidMemory: for a `humans` setting in `memstore.yaml` of the wrong shape.
    """
    # Only the rule types' folders: a check reads a few folders, not the whole store.
    pool = list(store.memories(workflow.RULE_TYPES)) if memories is None else memories
    if scopes:
        pool = [m for m in pool if in_scope(m, scopes)]
    humans = settings.store_humans(store.root)
    found: list[workflow.Rule] = []
    for item in _in_force(store, pool):
        if scopes and not in_scope(item.memory if isinstance(item, binding.Held) else item, scopes):
            continue  # a version held in force is for the scopes it names too
        if isinstance(item, binding.Held):
            rule = workflow.rule_of(item.memory, humans)
            if rule is not None:
                found.append(replace(rule, held=item.why))
        elif (rule := workflow.rule_of(item, humans)) is not None:
            found.append(rule)
    return sorted(found, key=lambda r: r.rank)


def in_scope(memory: Memory, scopes: tuple[str, ...]) -> bool:
    """Whether an agent of `scopes` sees `memory`: it names no scope, or one of them."""
    mine = scopes_of(memory.extra)
    return not mine or not scopes or any(s.lower() in mine for s in scopes)


def _in_force(store: Store, pool: list[Memory]) -> list[Memory | binding.Held]:
    """`pool` with each rule that binds the agents in the version in force (see `binding`):
    a change an agent made alone, or an uncommitted one, is not obeyed."""
    from memstore.git import objects
    from memstore.storage import trust, verdicts

    snapshot = verdicts.snapshot(store.trust)
    if snapshot is None or not snapshot.binding:
        return list(pool)
    return binding.in_force(
        snapshot.binding,
        store.trust.prefix,
        store.root,
        pool,
        read_regular,
        lambda blob: trust.parse_blob(store.repo, blob),
        objects.blob_sha,
    )


def check(
    store: Store,
    description: str,
    *,
    action: str | None = None,
    target: str | None = None,
    scopes: tuple[str, ...] = (),
    path: str | None = None,
) -> workflow.CheckResult:
    """The verdict on an action before it is taken: allow, warn or block, with reasons.

    Matching corrections and warnings give their verdict (a binding p0 blocks, the rest
    warn); the built-in guards not turned off in `memstore.yaml` warn. With `action` and
    `target`, the ledger too: executed, or claimed by someone else, blocks (a damaged ledger
    blocks: fail closed). Confirmed runbooks about the action are listed to follow. With
    `scopes`, only the rules and runbooks for one of them or for no scope in particular.
    `path` is a file the action changes (a hook's edit): rules' globs match it, the ledger
    never reads it.

    Raises:
        InvalidMemory: for an empty description, or a bad `guards` setting.
        InvalidLedgerEntry: for only one of `action` and `target`, or a bad one.
    """
    description = " ".join(description.split())
    if not description and not action:
        raise InvalidMemory("describe the action to check, e.g. 'npm publish 1.4.1'")
    text = " ".join(x for x in (description, action, target) if x)
    targets = tuple(x for x in (target, path) if x)
    extra: list[workflow.Reason] = []
    if action is not None or target is not None:
        if not action or not target:
            raise InvalidLedgerEntry(
                "give both --action and --target to check the ledger, e.g. "
                "--action publish --target pkg@1.4.1"
            )
        try:
            extra.append(
                workflow.ledger_reason(ledger_io.check(store, action, target), store.identity)
            )
        except LedgerCorrupt as e:  # fail closed, as the ledger does
            extra.append(
                workflow.Reason("ledger", f"{action} {target}", workflow.Verdict.BLOCK, str(e))
            )
    pool = rules(store, scopes=scopes)
    extra += _similar(store, text, pool, targets)
    runbooks = [
        workflow.Reason(
            kind="runbook", name=h.name, verdict=workflow.Verdict.ALLOW, message=h.description
        )
        for h in relevant(store, text, ("runbook",), 3, scopes)
    ]
    return workflow.decide(
        text,
        pool,
        targets,
        extra=extra,
        runbooks=runbooks,
        disabled_guards=settings.disabled_guards(store.root, GUARD_NAMES),
    )


def _similar(
    store: Store, text: str, pool: list[workflow.Rule], targets: tuple[str, ...]
) -> list[workflow.Reason]:
    """With semantic recall on, warnings from the rules whose `applies_when` the action
    resembles in meaning though no pattern matches its words (see `workflow.similar_reasons`)."""
    if not pool:
        return []
    vectors = upkeep(store).semantic(store)
    if vectors is None:
        return []
    model = vectors.model

    def cosines(action: str, patterns: list[str]) -> list[float]:
        rows = model.vectors([action, *patterns])
        return [float(x) for x in rows[1:] @ rows[0]]

    return workflow.similar_reasons(pool, text, targets, cosines)


def relevant(
    store: Store, text: str, types: tuple[str, ...], limit: int, scopes: tuple[str, ...] = ()
) -> list[Hit]:
    """Confirmed memories of `types` about `text`, best first, from the search index (with
    `scopes`, those for one of them or for none in particular)."""
    # Only the words, lower-cased: a shell command's quotes, colons and brackets, and words
    # such as NOT and AND, are query syntax.
    query = " ".join(re.findall(r"\w+", text.lower()))
    if len(query) > QUERY_MAX:  # a long text: its leading words
        query = query[: QUERY_MAX + 1].rpartition(" ")[0]
    if not query:
        return []
    hits = [
        hit
        for type_ in types
        for hit in search(
            store,
            Query(query, type=type_, status=Status.CONFIRMED.value, limit=limit, scopes=scopes),
        )
    ]
    return sorted(hits, key=lambda h: (-h.score, h.name))[:limit]


def record_outcome(
    store: Store, name: str, outcome: str, evidence: str | None = None
) -> stats.OutcomeRecord:
    """Append whether correction `name` was heeded or recurred, and commit it.

    Raises:
        MemoryNotFound, InvalidMemory (not a correction or warning; unknown outcome),
        SecretFound (the evidence looks like a credential).
    """
    values = [o.value for o in stats.Outcome]
    if outcome not in values:
        raise InvalidMemory(f"unknown outcome {outcome!r}; outcomes are: {', '.join(values)}")
    note = stats.check_note(evidence)
    store.refuse_secrets({"evidence": note}, allow_secret=False)
    actor = store.require_identity()
    with transaction.locked(store):
        memory = store.get(name)
        if memory.type not in workflow.RULE_TYPES:
            raise InvalidMemory(
                f"'{name}' is a {memory.type}; outcomes are recorded for "
                f"{' and '.join(workflow.RULE_TYPES)} memories"
            )
        record = stats.OutcomeRecord(
            at=now(),
            actor=actor,
            name=name,
            outcome=stats.Outcome(outcome),
            status=memory.status,
            evidence=note,
        )
        message = f"outcome: {name} {outcome}" + (f" — {note}" if note else "")
        change = transaction.Append(store.outcomes_path, stats.to_line(record))
        transaction.commit(store, [change], message, actor)
    return record


def outcomes(store: Store) -> list[stats.OutcomeRecord]:
    """Every recorded outcome, oldest first.

    Raises:
        InvalidMemory: naming a line that is not a valid record.
    """
    data = read_regular(store.outcomes_path)
    if data is None:
        return []
    text = data.decode("utf-8", "replace")
    return [
        stats.from_line(line, i)
        for i, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]


def heed_rates(store: Store) -> tuple[list[stats.HeedRate], stats.HeedRate]:
    """Heed rates per correction (most observed first) and overall, with Wilson intervals."""
    return stats.heed_rates(outcomes(store))
