"""Who wrote a repository's history: the names of its authors and committers, in the order
they first appear."""

from __future__ import annotations

from memstore.errors import GitError
from memstore.git.repository import READ_ONLY, Repo, git


def names(repo: Repo, head: str, since: str | None = None) -> list[str] | None:
    """Author and committer names of the commits `head` reaches (and `since` does not, when
    given), oldest first, each once; None when `since` is no longer a commit here (the
    caller then asks for the whole history).

    Raises:
        GitError: when git cannot read `head`.
    """
    span = f"{since}..{head}" if since else head
    try:
        out = git(repo, "log", "--reverse", "--format=%an%x00%cn", span, "--", env=READ_ONLY)
    except GitError:
        if since is None:
            raise
        return None  # `since` was rewritten away and collected: start over
    found: dict[str, None] = {}
    for line in out.split("\n"):
        for name in line.split("\0"):
            if name.strip():
                found.setdefault(name.strip(), None)
    return list(found)
