"""The `memory_upkeep` tool's work: keeping knowledge true from the agent's side.

Each op calls the core the CLI calls (`Store.verify`, `Store.pin`, `Store.forget`,
`gitlog.log`, `steward.doctor`, `steward.figures`, `agent.heed_rates`) and says what it found
in memstore's words, with everything a file or an agent wrote fenced as data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args

from memstore.errors import InvalidTransition
from memstore.model import render_text
from memstore.model.fields import check_name

if TYPE_CHECKING:
    from memstore.model.memory import Memory
    from memstore.storage.store import Store
    from memstore.workflow.care.steward import Finding

Op = Literal["health", "history", "verify", "pin", "unpin", "forget"]
OPS: tuple[str, ...] = get_args(Op)
WRITES = ("verify", "pin", "unpin", "forget")
TAKES: dict[str, tuple[str, ...]] = {
    "health": (),
    "history": ("name",),
    "verify": ("name", "reason", "version"),
    "pin": ("name",),
    "unpin": ("name",),
    "forget": ("name", "reason"),
}
"""The arguments each op uses; any other given is refused, so nothing is silently ignored."""
NEEDS: dict[str, tuple[str, ...]] = {"verify": ("name", "reason"), "forget": ("name", "reason")}

SHOWN = 10
"""How many of each kind of finding health names (the count is always whole)."""
MORE = "more (health names the next ones as these are dealt with)"
HISTORY = 20
"""How many commits history shows, newest first."""


def check_args(op: str, given: dict[str, str | None]) -> None:
    """Refuse an op with an argument it does not use or without one it needs, naming both.

    Raises:
        InvalidTransition: naming what is wrong and what the op takes.
    """
    takes = TAKES.get(op)
    if takes is None:  # the schema's enum refuses it first; this keeps the core honest
        raise InvalidTransition(f"unknown op '{op}'; ops are: {', '.join(OPS)}")
    needs = NEEDS.get(op, ("name",) if "name" in takes else ())
    extra = [k for k, v in given.items() if v is not None and k not in takes]
    missing = [k for k in needs if not (given.get(k) or "").strip()]
    if extra or missing:
        wants = ", ".join(takes) or "no other argument"
        wrong = "; ".join(
            part
            for part in (
                f"needs {', '.join(missing)}" if missing else "",
                f"does not take {', '.join(extra)}" if extra else "",
            )
            if part
        )
        raise InvalidTransition(f"op '{op}' {wrong} (it takes: {wants}); nothing was changed")


def write(store: Store, op: str, name: str, reason: str | None, version: str | None) -> Memory:
    """Run write op `op` on memory `name` as the store's identity (one commit, or none when
    a pin is already as asked); the memory after it, or the one removed for `forget`."""
    if op == "verify":
        return store.verify(name, reason or "", expected_version=version)
    if op == "forget":
        return store.forget(name, reason or "")
    return store.pin(name, op == "pin")


def history(store: Store, name: str) -> tuple[str, dict[str, Any]]:
    """Memory `name`'s commits, newest first (at most HISTORY), as text and data.

    Raises:
        InvalidName, MemoryNotFound.
    """
    from memstore.git import gitlog

    check_name(name)
    revisions = gitlog.log(store.repo, store.path_for(name), limit=HISTORY + 1)
    shown, more = revisions[:HISTORY], len(revisions) > HISTORY
    fence = render_text.fence_for([r.message for r in shown] + [r.author for r in shown])
    lines = [
        f"history of {name}, newest first: {len(shown)}{'+' if more else ''} commit(s). "
        f"{fence.preamble}"
    ]
    for rev in shown:
        who = render_text.word(rev.author)
        hidden = render_text.unshown([("author", rev.author, who)])
        said = " · ".join([rev.message, *hidden])
        lines.append(
            f"- {render_text.stamp(rev.date, 25)} · {rev.commit[:10]} · by {who} · "
            f"{fence.inline(said)}"
        )
    if not shown:
        lines.append("no commits yet: the file is not committed")
    if more:
        lines.append(f"older commits: `git log --follow` on its file ({name}.md)")
    data = {
        "history": [
            {"commit": r.commit, "author": r.author, "date": r.date, "message": r.message}
            for r in shown
        ],
        "more": more,
    }
    return "\n".join(lines), data


def health(store: Store) -> tuple[str, dict[str, Any]]:
    """The store's health: its figures, then doctor's findings (stale, drifted, expired,
    duplicates, broken links, lint) and the corrections to rewrite, SHOWN of each named."""
    from memstore.workflow.care import stats, steward
    from memstore.workflow.session import agent as session

    report = steward.doctor(store)
    figures = steward.figures(store)
    rates, overall = session.heed_rates(store)
    rewrite = [r.name for r in rates if r.rewrite]
    kinds: list[tuple[str, list[Finding], str]] = [
        (
            "stale",
            report.stale,
            "confirmed, not verified lately: re-check each, then memory_upkeep verify with what "
            "you checked, or memory_promote it to deprecated",
        ),
        (
            "drifted",
            report.drifted,
            "a file it is about changed since it was confirmed: re-read the file, then verify, "
            "update or deprecate",
        ),
        ("expired", report.expired, "past its expires date: deprecate it, or update it"),
        ("broken_links", report.broken_links, "links to memories that do not exist"),
    ]
    texts = [f.detail for _, found, _ in kinds for f in found[:SHOWN]] + report.lint[:SHOWN]
    fence = render_text.fence_for(texts)
    statuses = ", ".join(f"{k} {v}" for k, v in figures.by_status.items()) or "none"
    age = (
        f" (median age {figures.draft_median_age_days:g} days)"
        if figures.draft_median_age_days is not None
        else ""
    )
    share = (
        f"{figures.recalls_with_confirmed / figures.recalls:.0%} of {figures.recalls} recalls "
        "found a confirmed memory"
        if figures.recalls
        else "no recalls counted"
    )
    lines = [
        f"store health: {figures.memories} memor{'y' if figures.memories == 1 else 'ies'} "
        f"({statuses}); {figures.drafts_awaiting_review} draft(s) awaiting review{age}; "
        f"heed rate {stats.describe(overall)}; {share}. "
        f"{fence.preamble}"
    ]
    for title, found, advice in kinds:
        lines.append(f"{title}: {len(found) or 'none'}" + (f" — {advice}" if found else ""))
        lines += [f"- {f.name} · {fence.inline(f.detail)}" for f in found[:SHOWN]]
        if len(found) > SHOWN:
            lines.append(f"  … and {len(found) - SHOWN} {MORE}")
    dupes = report.duplicates
    lines.append(
        f"duplicate clusters: {len(dupes) or 'none'}"
        + (" — say the same: keep one, deprecate the rest with superseded_by" if dupes else "")
    )
    lines += [f"- {', '.join(c)}" for c in dupes[:SHOWN]]
    if len(dupes) > SHOWN:
        lines.append(f"  … and {len(dupes) - SHOWN} {MORE}")
    lines.append(
        f"corrections to rewrite: {len(rewrite) or 'none'}"
        + (" — recurred after they were confirmed: the wording is not working" if rewrite else "")
    )
    lines += [f"- {n}" for n in rewrite[:SHOWN]]
    lines.append(f"lint problems: {len(report.lint) or 'none'}")
    lines += [f"- {fence.inline(p)}" for p in report.lint[:SHOWN]]

    def named(found: list[Finding]) -> dict[str, Any]:
        return {
            "count": len(found),
            "shown": [{"name": f.name, "detail": f.detail} for f in found[:SHOWN]],
        }

    data: dict[str, Any] = {
        "memories": figures.memories,
        "by_status": figures.by_status,
        "drafts_awaiting_review": figures.drafts_awaiting_review,
        "draft_median_age_days": figures.draft_median_age_days,
        "by_type": figures.by_type,
        "confirmation_latency_median_days": figures.confirmation_latency_median_days,
        "recalls": figures.recalls,
        "recalls_with_confirmed": figures.recalls_with_confirmed,
        "heed_rate": {"heeded": overall.heeded, "recurred": overall.recurred, "n": overall.n},
        **{title: named(found) for title, found, _ in kinds},
        "duplicates": {"count": len(dupes), "shown": dupes[:SHOWN]},
        "rewrite": {"count": len(rewrite), "shown": rewrite[:SHOWN]},
        "lint": {"count": len(report.lint), "shown": report.lint[:SHOWN]},
        "index": report.index,
    }
    return "\n".join(lines), {"health": data}


def forgot_text(memory: Memory) -> str:
    """The receipt of `forget`: what went, and that git keeps its history."""
    return (
        f"forgot {memory.name} · {render_text.kind(memory.type)}: its file is removed in one "
        "commit; its history stays in git"
    )
