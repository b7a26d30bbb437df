"""Where a newcomer or an agent stands: who would act and why, which store, repository and
branch, whether the pre-commit hook checks hand edits, the index, and the drafts awaiting
them. One screen, read-only (the index cache may catch up; no tracked file is written)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstore.errors import MemstoreError
from memstore.git import precommit, refs
from memstore.model.identity import same_identity
from memstore.model.memory import Memory
from memstore.model.words import plural
from memstore.search import upkeep as search
from memstore.storage.files import shown

if TYPE_CHECKING:
    from memstore.search.index import Progress, Sync
    from memstore.storage.store import Store


@dataclass(frozen=True, slots=True)
class Orientation:
    """The set-up, as facts a reader can act on."""

    identity: str | None
    identity_from: str
    """`--agent`, `$MEMSTORE_AGENT`, `git user.name` or `nobody`."""
    store: str
    repository: str
    branch: str | None
    hook_ok: bool
    hook: str
    index: str
    search: str
    """By words only, or by words and meaning (semantic recall), and why."""
    awaiting: int
    """Drafts the identity may review: other identities' drafts."""
    own_drafts: int


def orient(
    store: Store,
    flag: str | None,
    memories: Iterable[Memory] | None = None,
    synced: Sync | None = None,
    embedded: Progress | None = None,
) -> Orientation:
    """The set-up of `store` as `flag` (the `--agent` given, if any) and the environment
    make it. `memories` (the store's memories as `Store.memories` reads them) and `synced`
    (the index's catch-up), when the caller has them already (`doctor`), so nothing is read
    twice."""
    env = os.environ.get("MEMSTORE_AGENT")
    identity = store.identity
    if flag:
        source = "--agent"
    elif env:
        source = "$MEMSTORE_AGENT"
    elif identity:
        source = "git user.name"
    else:
        source = "nobody"
    hook_ok, hook = precommit.state(store.repo, store.root)
    every = list(store.memories() if memories is None else memories)
    try:
        sync = search.catch_up(store) if synced is None else synced
        count = len(every)
        what = "rebuilt just now" if sync.rebuilt else "up to date"
        index = f"{plural(count, 'memory')}, {what}"
        if sync.skipped:
            index += f"; {len(sync.skipped)} malformed file(s) left out (see `memstore lint`)"
    except MemstoreError as e:
        index = f"cannot be read: {e}"
    try:
        searching = search.semantic_state(store, embedded)
    except MemstoreError as e:
        searching = f"by words (BM25) only: {e}"
    drafts = [m for m in every if m.status == "draft"]
    own = sum(1 for m in drafts if identity and same_identity(m.owner, identity))
    return Orientation(
        identity=identity,
        identity_from=source,
        store=shown(store.root),
        repository=shown(store.repo.top),
        branch=refs.current_branch(store.repo),
        hook_ok=hook_ok,
        hook=hook,
        index=index,
        search=searching,
        awaiting=len(drafts) - own,
        own_drafts=own,
    )


def lines(o: Orientation, *, index: bool = True) -> list[str]:
    """The orientation as one short screen of text (without the index line when the caller
    reports the index itself)."""
    who = (
        f"{o.identity} (from {o.identity_from})"
        if o.identity
        else "nobody: writes need --agent NAME, $MEMSTORE_AGENT or git's user.name"
    )
    review = (
        f"{o.awaiting} draft(s) by others await your review (`memstore review`)"
        if o.identity
        else f"{o.awaiting} draft(s)"
    )
    return [
        f"identity:   {who}",
        f"store:      {o.store} in the git repository {o.repository}"
        + (f", branch {o.branch}" if o.branch else ", HEAD detached"),
        f"hook:       {o.hook}",
        *([f"index:      {o.index}"] if index else []),
        f"search:     {o.search}",
        f"review:     {review}; {o.own_drafts} of your own await someone else",
    ]
