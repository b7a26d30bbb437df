"""The briefing ranks in the catalog: the drafts offered for review and the rules listed are
those the old way (every draft and every rule read as an entry, sorted in Python) chose, in
the same order, and only the rows shown are read."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest

from memstore.errors import InvalidMemory
from memstore.model import when
from memstore.model.identity import same_identity
from memstore.model.render_text import word
from memstore.model.status import Status
from memstore.storage import uses
from memstore.storage.store import Store
from memstore.workflow.care import catalog, reviews
from memstore.workflow.rules import concepts
from memstore.workflow.rules import rules as workflow
from memstore.workflow.session import agent as session
from memstore.workflow.session import briefing, offers
from tests.conftest import as_agent

TASK = "deploy the postgres migration and roll back the cache"


def _offers_as_they_were(
    store: Store,
    identity: str | None,
    drafts: list[catalog.Entry],
    for_text: str | None,
    found: catalog.Catalog,
    shown: int,
) -> offers.Offers:
    """The ranking as it was: every draft an entry, filtered and sorted in Python."""
    moment = when.utcnow()
    record = reviews.read(store)
    counted = uses.counts(store)
    try:
        records = session.outcomes(store)
    except InvalidMemory:
        records = []
    heeded = {
        r.name
        for r in records
        if identity
        and r.outcome == "heeded"
        and r.status == Status.DRAFT
        and same_identity(r.actor, identity)
    }
    used = counted.used(identity)
    mine: list[catalog.Entry] = []
    for e in drafts:
        if e.status != Status.DRAFT or (identity and same_identity(e.owner, identity)):
            continue
        if record.deferred_by(e.name, identity, moment):
            continue
        mine.append(e)
    relied: list[offers.Offer] = []
    rest: list[catalog.Entry] = []
    for e in mine:
        if e.name in heeded:
            relied.append(offers.Offer(e, "you recorded heeding it"))
        elif e.name in used:
            relied.append(offers.Offer(e, "you recalled it and read it whole"))
        else:
            rest.append(e)
    task = {f for f in concepts.features(for_text or "") if len(f) > 2 and not f.isdigit()}
    shared = found.shared(task) if task else {}
    rest.sort(key=lambda e: (e.updated, e.name))
    rest.sort(
        key=lambda e: (
            record.asked_by(e.name, identity) is None,
            -shared.get(e.path, 0),
            e.type not in workflow.RULE_TYPES,
            -counted.recalled[e.name],
        )
    )
    others: list[offers.Offer] = []
    for e in rest:
        asker = record.asked_by(e.name, identity)
        worth = e.type in workflow.RULE_TYPES or counted.recalled[e.name] >= offers.WORTH_RECALLS
        if for_text and not asker and not shared.get(e.path) and not worth:
            continue
        why = [f"{word(asker)} asked you"] if asker else []
        if shared.get(e.path):
            why.append("bears on your task")
        if e.type in workflow.RULE_TYPES:
            why.append("a rule: it acts already")
        if counted.recalled[e.name]:
            why.append(f"recalled {counted.recalled[e.name]}×")
        others.append(offers.Offer(e, ", ".join(why) or "awaits review"))
    return offers.Offers(
        tuple(relied[:shown]), tuple(others[:shown]), len(rest) - len(others[:shown])
    )


WORDS = ("deploy", "postgres", "migration", "cache", "billing", "report", "frontend", "roll")


def _busy_store(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Drafts whose orders differ by every key the ranking has: asked, shared task words,
    rules, recalls, waiting time (with ties in `updated`), owners, deferrals, reliance."""
    rng = random.Random(5)
    start = when.utcnow() - timedelta(days=30)
    owners = {"bob": as_agent(store, "bob"), "carol": as_agent(store, "carol")}
    owners["ALICE"] = as_agent(store, "ALICE")  # the reader's own, spelled otherwise
    made: list[str] = []
    for i in range(60):
        day = rng.randint(0, 4)  # few distinct moments: many ties in `updated`
        monkeypatch.setattr(when, "utcnow", lambda d=day: start + timedelta(days=d))
        owner = owners[rng.choice(["bob", "bob", "carol", "ALICE"])]
        words = " ".join(rng.sample(WORDS, rng.randint(0, 3)))
        name = f"d{rng.randint(0, 999):03d}-{i:02d}"
        kind = rng.choice(["fact", "fact", "decision", "correction", "warning"])
        extra: dict[str, Any] = (
            {"severity": rng.choice(["p1", "p2"])}
            if kind
            in (
                "correction",
                "warning",
            )
            else {}
        )
        if rng.random() < 0.08:
            extra["expires"] = "2020-01-01"  # expired: left out
        owner.add(name, type=kind, description=f"Note {i} about {words}".strip(), extra=extra)
        made.append(name)
    monkeypatch.undo()
    bob = owners["bob"]
    for name in rng.sample([n for n in made if store.get(n).owner != "bob"], 6):
        bob.confirm(name, "checked")
    carol = owners["carol"]
    theirs = [n for n in made if store.get(n).owner == "bob" and store.get(n).status == "draft"]
    reviews.ask(carol, rng.sample(theirs, 4), "alice")
    reviews.ask(carol, rng.sample(theirs, 2), "dave")
    drafts = [n for n in made if store.get(n).status == "draft"]
    reviews.defer(store, rng.sample(drafts, 4), "3d")
    reviews.defer(bob, rng.sample(drafts, 3), "3d")
    for name in rng.sample(drafts, 20):
        for who in rng.sample(["alice", "bob", "carol", "erin"], rng.randint(1, 4)):
            uses.note(as_agent(store, who), uses.RECALL, [name])
    relied = rng.sample(drafts, 3)
    uses.note(store, uses.RECALL, relied[:2])
    uses.note(store, uses.GET, relied[:2])
    rule = next(n for n in drafts if store.get(n).type in ("correction", "warning"))
    session.record_outcome(store, rule, "heeded")


@pytest.mark.parametrize("reader", ["alice", "carol", None])
def test_drafts_offered_for_review_are_those_the_old_ranking_chose(
    store: Store, monkeypatch: pytest.MonkeyPatch, reader: str | None
) -> None:
    _busy_store(store, monkeypatch)
    me = as_agent(store, reader) if reader else Store(store.root, agent=None)
    today = when.utcnow().strftime("%Y-%m-%d")
    live = "NOT (expires != '' AND expires < ?)"
    checked = 0
    with catalog.opened(me) as found:
        drafts = found.entries(f"status = 'draft' AND {live}", (today,))
        for task in (None, TASK, "write the billing report", "feed the office plants"):
            for shown in (1, 3, 5, 100):
                old = _offers_as_they_were(me, reader, drafts, task, found, shown)
                new = offers.offers(
                    me, reader, found, f"status = 'draft' AND {live}", (today,), task, shown
                )
                assert new == old, (task, shown)
                checked += bool(old.others) and len(old.others) > 1
    assert checked  # the orders were not trivial


def test_the_ranking_differs_by_each_key(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The store of the comparison above exercises every key: asked first, then shared words,
    then rules, then recalls, then the longest waiting."""
    _busy_store(store, monkeypatch)
    today = when.utcnow().strftime("%Y-%m-%d")
    with catalog.opened(store) as found:
        ranked = offers.offers(
            store, "alice", found, "status = 'draft' AND expires = ''", (), TASK, 100
        )
    whys = [o.why for o in ranked.others]
    assert whys[0].startswith("carol asked you")
    assert any(w.startswith("bears on your task") for w in whys)
    assert any(w.startswith("a rule") for w in whys)
    assert any("recalled" in w and "bears" not in w and "rule" not in w for w in whys)
    assert ranked.relied and ranked.more > 0 and today


def _rules_as_they_were(
    store: Store, for_text: str | None
) -> tuple[list[workflow.Rule], list[workflow.Rule]]:
    """The rules that apply and the others, as the briefing listed them before it ranked
    them in the catalog: every rule an entry, the versions in force merged, sorted by rank."""
    from dataclasses import replace

    from memstore.git import objects
    from memstore.storage import binding, settings, trust, verdicts
    from memstore.storage.files import read_regular

    today = when.utcnow().strftime("%Y-%m-%d")
    humans = settings.store_humans(store.root)
    with catalog.opened(store) as found:
        ruled = [
            (e.path, r)
            for e in found.entries(
                "severity IS NOT NULL AND NOT (expires != '' AND expires < ?)", (today,)
            )
            if (r := catalog.rule_of(e, humans)) is not None
        ]
        snapshot = verdicts.snapshot(store.trust)
        held: set[str] = set()
        if snapshot is not None and snapshot.binding:
            prefix = store.trust.prefix
            protected = {p[len(prefix) :] for p in snapshot.binding if p.startswith(prefix)}
            out: list[tuple[str, workflow.Rule]] = []
            for item in binding.in_force(
                snapshot.binding,
                prefix,
                store.root,
                [],
                read_regular,
                lambda blob: trust.parse_blob(store.repo, blob),
                objects.blob_sha,
            ):
                if isinstance(item, binding.Held) and (
                    rule := workflow.rule_of(item.memory, humans)
                ):
                    path = f"{item.memory.type}/{item.memory.name}.md"
                    held.add(path)
                    out.append((path, replace(rule, held=item.why)))
            for path, rule in ruled:
                if path in held:
                    continue
                if path in protected:
                    mine = workflow.rule_of(store.read_file(store.root / path)[0], humans)
                    rule = replace(rule, proposal=mine.proposal if mine is not None else "")
                out.append((path, rule))
            ruled = out
        ruled.sort(key=lambda pr: pr[1].rank)
        if not for_text:
            return [r for _, r in ruled], []
        maybe = found.rule_candidates(for_text) | held
        applies = {p for p, r in ruled if p in maybe and workflow.related(r, for_text)}
    return [r for p, r in ruled if p in applies], [r for p, r in ruled if p not in applies]


def _listed(text: str, title: str) -> list[str]:
    if f"## {title}\n" not in text:
        return []
    return [
        line
        for line in text.split(f"## {title}\n", 1)[1].split("\n\n")[0].splitlines()
        if line.startswith("- ")
    ]


def _many_rules(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rules of every rank (severities, confirmed or not, a person's drafts that bind, names
    that tie), some binding the agents: one with an agent's edit not in effect, one with an
    uncommitted edit, one with a deprecation proposal."""
    from tests.conftest import git, name_humans

    rng = random.Random(11)
    name_humans(store.root, "erin")
    who = {n: as_agent(store, n) for n in ("bob", "carol", "erin")}
    for i in range(70):
        author = who[rng.choice(["bob", "bob", "carol", "erin"])]
        words = " ".join(rng.sample(WORDS, rng.randint(1, 2)))
        patterns = [words] if rng.random() < 0.7 else []
        if rng.random() < 0.3:
            patterns.append(rng.choice(["migrations/*.sql", "deploy*", "src/mod*.py"]))
        session.correct(
            author,
            f"r{rng.randint(0, 99):02d}-{i:02d}",
            description=f"Rule {i} on {' '.join(rng.sample(WORDS, 2))}",
            severity=rng.choice(["p0", "p1", "p2", "p3"]),
            applies_when=patterns,
            type=rng.choice(["correction", "warning"]),
        )
    rules = [m for m in store.memories() if m.type in ("correction", "warning")]
    for m in rng.sample(rules, 30):
        confirmer = who["carol"] if m.owner != "carol" else who["bob"]
        confirmer.confirm(m.name, "checked")
    p0 = [
        m for m in store.memories() if m.extra.get("severity") == "p0" and m.status == "confirmed"
    ]
    assert len(p0) >= 3
    committed, loose, proposed = p0[:3]
    path = store.root / committed.type / f"{committed.name}.md"
    path.write_text(path.read_text(encoding="utf-8").replace("severity: p0", "severity: p3"))
    git(store.root, "commit", "-qam", "an agent lowers a rule by hand")
    path = store.root / loose.type / f"{loose.name}.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Rule", "Ignore this rule"))
    as_agent(store, "dave").deprecate(proposed.name, "no longer needed")


@pytest.mark.parametrize("task", [None, TASK, "write the billing report", "nothing at all"])
def test_the_rules_listed_are_those_the_old_lists_held(
    store: Store, monkeypatch: pytest.MonkeyPatch, task: str | None
) -> None:
    _many_rules(store, monkeypatch)
    reader = as_agent(store, "alice")
    applying, others = _rules_as_they_were(reader, task)
    assert any(r.held for r in applying + others) and any(r.proposal for r in applying + others)
    text = briefing.brief(reader, for_text=task, mark=False, budget_tokens=20_000).text
    assert _listed(text, "Corrections and warnings that apply") == (
        [workflow.rule_line(r).render() for r in applying] or ["- none"]
    )
    assert _listed(text, "Other corrections and warnings") == [
        workflow.rule_line(r).render() for r in others
    ]
    # Cut to a small budget, the note counts every rule all the same.
    cut = briefing.brief(reader, for_text=task, mark=False, budget_tokens=300).cut
    for listed, title in (
        (applying, "corrections and warnings that apply"),
        (others, "other corrections and warnings"),
    ):
        if listed:
            n = len(listed)
            assert any(c.endswith(f" of {n} {title}") or c == f"{title} ({n})" for c in cut), cut


def test_a_briefing_reads_only_the_rows_it_shows(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of a store of many drafts and rules, the briefing reads the few it shows: the
    catalog's rows it builds entries of, and the memory files it opens."""
    _busy_store(store, monkeypatch)
    _many_rules(store, monkeypatch)
    reader = as_agent(store, "alice")
    briefing.brief(reader, for_text=TASK, mark=False)  # the catalog brought in step
    rows: list[str] = []
    made = catalog._entry  # pyright: ignore[reportPrivateUsage]

    def counted(row: Any) -> catalog.Entry:
        rows.append(row[0])
        return made(row)

    files: list[str] = []
    read = Store.read_file

    def opened(self: Store, path: Any, *args: Any, **kwargs: Any) -> Any:
        files.append(str(path))
        return read(self, path, *args, **kwargs)

    memories = len(list(store.memories()))
    plants = len(_rules_as_they_were(reader, "feed the office plants")[0])  # each one judged
    assert memories > 120
    monkeypatch.setattr(catalog, "_entry", counted)
    monkeypatch.setattr(Store, "read_file", opened)
    for task, judged in (("feed the office plants", plants), (None, 0)):
        rows.clear()
        files.clear()
        text = briefing.brief(reader, for_text=task, mark=False, budget_tokens=400).text
        assert "Cut to fit the budget" in text
        # A few pages of rules, the drafts shown, the pinned and the latest knowledge.
        assert len(rows) < judged + 70 and len(files) < 12, (len(rows), len(files), judged)


def test_a_glob_matches_only_a_task_holding_its_literal_pieces() -> None:
    """The catalog tries a glob on a task only when the task holds its literal pieces: no
    task a glob matches lacks one."""
    rng = random.Random(3)
    globs = [
        "migrations/*.sql",
        "deploy*",
        "git push --force*",
        "*.PY",
        "src/[ab]*/x?.py",
        "[!a]bc*",
        "a[b",
        "*",
        "Db/Seed.sql",
        "*/cache?/*",
        "rm -rf *",
    ]
    parts = [
        "edit",
        "db/migrations/001.sql",
        "Deploy",
        "deployment",
        "git push --force origin",
        "main.py",
        "src/a1/x2.py",
        "xbcd",
        "a[b",
        "db/seed.sql",
        "var/cache1/x",
        "rm -rf /tmp",
        "(src/b/xy.py)",
    ]
    matched = 0
    for _ in range(400):
        task = " ".join(rng.sample(parts, rng.randint(1, 4)))
        for glob in globs:
            if workflow.match(glob, task):
                matched += 1
                assert all(p in task.lower() for p in workflow.glob_pieces(glob)), (glob, task)
    assert matched > 400
