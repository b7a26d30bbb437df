"""HEAD and the branch it is on, read from git's ref files, and HEAD moved by
`git update-ref HEAD NEW OLD`: git's compare-and-swap, so a commit that landed first is never
overwritten."""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

from memstore.errors import GitError
from memstore.git.repository import Repo, git, stop, wait_for_lock

ZERO = "0" * 40
"""The null object id: "no ref yet" as `update-ref`'s old value, "remove" in an index line."""


def head(repo: Repo) -> str | None:
    """The sha of the commit HEAD points at, or None before the first commit.

    Read from git's ref files (loose or packed) without running git.
    """
    ref = "HEAD"
    for _ in range(5):  # a symbolic ref may point at another
        folder = repo.git_dir if ref == "HEAD" else repo.common_dir
        try:
            value = (folder / ref).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            value = _packed_ref(repo, ref) or ""
        except (OSError, UnicodeDecodeError):
            return None
        if value.startswith("ref:"):
            ref = value[4:].strip()
            continue
        return value if re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", value) else None
    return None


def _packed_ref(repo: Repo, ref: str) -> str | None:
    try:
        text = (repo.common_dir / "packed-refs").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return sha
    return None


def current_branch(repo: Repo) -> str | None:
    """The branch HEAD is on (`main`), or None when HEAD is detached. Runs no git process."""
    try:
        value = (repo.git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    prefix = "ref: refs/heads/"
    return value[len(prefix) :] if value.startswith(prefix) else None


def is_ancestor(repo: Repo, older: str, newer: str) -> bool:
    """Whether commit `older` is reachable from commit `newer` (both full shas)."""
    for sha in (older, newer):
        if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
            raise GitError(f"not a full commit id: {sha!r}")
    try:
        git(repo, "merge-base", "--is-ancestor", older, newer)
    except GitError:
        return False
    return True


_LOCK_RE = re.compile(r"Unable to create '([^']+\.lock)'")


def move_head(
    repo: Repo,
    new: str,
    old: str | None,
    message: str,
    deadline: float,
    prepared: Callable[[], None] | None = None,
) -> bool:
    """Compare-and-swap HEAD from `old` to `new`; False when another commit moved it first.

    `prepared` runs once git holds HEAD's lock and has checked that HEAD is still `old`, right
    before the swap is committed (an error from it aborts the swap): what must be in place by
    the time any git reads the new HEAD (the index) goes in place there."""
    subject = message.splitlines()[0] if message else ""
    waited = False
    while True:
        code, err = _swap(repo, new, old or ZERO, subject, prepared)
        if code == 0:
            return True
        match = _LOCK_RE.search(err)
        if match is not None:
            waited = wait_for_lock(Path(match.group(1)), deadline, waited)
        elif "but expected" in err or "already exists" in err:
            return False  # HEAD moved: rebuild on top of the new one
        else:
            raise GitError(f"git update-ref failed: {err}")


def _swap(
    repo: Repo, new: str, old: str, subject: str, prepared: Callable[[], None] | None = None
) -> tuple[int, str]:
    """`git update-ref HEAD NEW OLD` in one transaction of the repository's long-running
    `git update-ref --stdin`, calling `prepared` between its prepare and its commit; (0, "")
    when HEAD moved, else (exit code, git's message)."""
    with _swappers_lock:
        found = _swappers.get(repo)
        if found is None:
            found = _swappers[repo] = _Swapper(repo)
    return found.swap(new, old, subject, prepared)


class _Swapper:
    """A `git update-ref --stdin` process: each swap is one transaction, with no fork.

    git ends the process when a transaction fails (a moved HEAD, a lock in the way); the next
    swap starts another. It runs in a session of its own: a kill of memstore leaves it
    reading end-of-input, and git then aborts the open transaction and removes its locks.
    """

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def swap(
        self, new: str, old: str, subject: str, prepared: Callable[[], None] | None = None
    ) -> tuple[int, str]:
        with self.lock:
            proc = self._started()
            assert proc.stdin is not None and proc.stdout is not None
            # "commit" goes only after "prepare" succeeded, so git holds HEAD's lock from
            # before it may commit until it did: a writer killed before sending "commit" leaves
            # a git that aborts at end of input, and one killed after leaves a git whose lock
            # shows it may still commit (see `settle`).
            request = f"start\nupdate HEAD {new} {old}\nprepare\n"
            try:
                proc.stdin.write(request.encode("ascii"))
                proc.stdin.flush()
                answers = [proc.stdout.readline() for _ in range(2)]
            except OSError:
                answers = []
            if answers == [b"start: ok\n", b"prepare: ok\n"]:
                if prepared is not None:
                    self._before_commit(proc, prepared)
                try:
                    proc.stdin.write(b"commit\n")
                    proc.stdin.flush()
                    answers.append(proc.stdout.readline())
                except OSError:
                    answers = []
            if answers == [b"start: ok\n", b"prepare: ok\n", b"commit: ok\n"]:
                return 0, ""
            return self._ended()

    def _before_commit(self, proc: subprocess.Popen[bytes], prepared: Callable[[], None]) -> None:
        """Run `prepared`; when it fails, abort the prepared swap (HEAD stays) and re-raise."""
        assert proc.stdin is not None and proc.stdout is not None
        try:
            prepared()
        except BaseException:
            try:
                proc.stdin.write(b"abort\n")
                proc.stdin.flush()
                proc.stdout.readline()
            except OSError:
                self._ended()
            raise

    def _started(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                ["git", "update-ref", "-m", "commit (memstore)", "--stdin"],
                cwd=self.repo.top,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, "LC_ALL": "C", "LANGUAGE": "C"},
                start_new_session=True,
            )
            weakref.finalize(self.repo, stop, self.proc)
        return self.proc

    def _ended(self) -> tuple[int, str]:
        proc, self.proc = self.proc, None
        if proc is None:
            return 1, "git update-ref did not start"
        err = b""
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            if proc.stderr is not None:
                err = proc.stderr.read()
        except OSError:
            pass
        stop(proc)
        return proc.returncode or 1, err.decode("utf-8", "replace").strip()


_swappers: weakref.WeakKeyDictionary[Repo, _Swapper] = weakref.WeakKeyDictionary()
_swappers_lock = threading.Lock()


def settle(repo: Repo, lock_wait: float) -> None:
    """Wait until no git holds the lock of HEAD or of the branch it names: a git a killed
    writer left may be committing, and what HEAD holds is known only once it is done.

    Raises:
        GitError: when a lock stays for `lock_wait` seconds, naming it.
    """
    deadline = time.monotonic() + lock_wait
    locks = [repo.git_dir / "HEAD.lock"]
    try:
        target = (repo.git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        target = ""
    if target.startswith("ref:"):
        locks.append(repo.common_dir / f"{target[4:].strip()}.lock")
    waited = False
    for lock in locks:
        while lock.exists():
            waited = wait_for_lock(lock, deadline, waited)
