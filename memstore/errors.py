"""The exceptions the core raises; each message is one sentence a person or a model can act on.

A message speaks of the store's files relative to the store (`decision/use-zod.md`) and of
the store itself as "the store": however a face shows it (CLI, MCP, HTTP, the console), it
never gives away where the server keeps its files, nor buries what matters in a long path.
Each store opened in the process names its folder here (`speak_within`); a message written
with the absolute path anywhere in the core is said that way when it is shown (`str(e)`).
"""

import os

_ROOTS: dict[str, None] = {}
"""The absolute folders of the stores opened in this process (insertion-ordered, the newest
last, at most `_ROOTS_KEPT`), each also as its resolved path where that differs."""
_ROOTS_KEPT = 64


def speak_within(root: str) -> None:
    """Let messages speak of paths under `root` (a store's folder) relative to it."""
    for path in {os.path.abspath(root), os.path.realpath(root)}:
        _ROOTS.pop(path, None)
        _ROOTS[path] = None
    while len(_ROOTS) > _ROOTS_KEPT:
        del _ROOTS[next(iter(_ROOTS))]


def within_stores(text: str) -> str:
    """`text` with each known store's absolute folder spelled as the store does: a path under
    it relative to it, the folder itself as "the store"."""
    for root in sorted(_ROOTS, key=len, reverse=True):  # a nested store's folder first
        if root not in text:
            continue
        text = text.replace(f"the store {root}", "the store").replace(f"{root}{os.sep}", "")
        text = text.replace(f"in {root}", "in the store").replace(root, "the store")
    return text


class MemstoreError(Exception):
    """Base class for every error memstore reports to a user."""

    # The message is face-neutral; where the way out differs by face (a CLI flag, or no
    # override for an agent), each face appends its own hint (#17).
    cli_hint = ""
    mcp_hint = ""

    def __str__(self) -> str:
        return within_stores(super().__str__())


class InvalidName(MemstoreError):
    """A memory name that is not a kebab-case slug."""


class InvalidMemory(MemstoreError):
    """A memory (or a file claiming to be one) that breaks the format."""


class InvalidWords(MemstoreError):
    """The word tables of action matching (`words.toml`) hold an entry the code cannot read."""


class MemoryNotFound(MemstoreError):
    """No memory with that name."""


class MemoryExists(MemstoreError):
    """A memory with that name already exists."""


class InvalidTransition(MemstoreError):
    """A status move the state machine does not allow."""


class EditDeprecated(InvalidTransition):
    """An edit of a deprecated memory, which would change retired knowledge unseen."""

    cli_hint = "; restore it first (memstore restore NAME --reason WHY), or pass --force"
    mcp_hint = (
        "; restore it first with memory_promote to 'draft' and a reason, then update it "
        "(agents cannot edit a deprecated memory in place)"
    )


class SelfApproval(InvalidTransition):
    """An identity tried to confirm its own memory."""


class RuleBinds(InvalidTransition):
    """An agent tried to change or remove, alone, a rule that binds it (see `storage.binding`)."""


class NoIdentity(MemstoreError):
    """A write was attempted with no acting identity."""


class StoreLocked(MemstoreError):
    """The store's lock could not be taken in time."""


class Conflict(MemstoreError):
    """The memory changed since the writer read it.

    `current_version` is the version now on disk; `detail` shows what changed since the version
    the writer read (a diff), or the current file when that version is not in the history.
    """

    def __init__(self, message: str, current_version: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.current_version = current_version
        self.detail = detail


class NotAStore(MemstoreError):
    """The directory is not a memstore store."""


class GitError(MemstoreError):
    """A git operation failed."""


class WriteFailed(MemstoreError):
    """The disk refused a write (full, read-only, an I/O error); what was written is put back."""


class SecretFound(InvalidMemory):
    """Text to be saved looks like a credential (a key, a token, a password)."""

    def __init__(self, message: str, findings: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.findings = findings
        """(field, pattern name) of each credential-like string found."""

    cli_hint = "; or pass --allow-secret if it is not a secret"
    mcp_hint = (
        "; agents have no override for this check: if it is not a secret, reword it, or ask a "
        "person to save it with the CLI's --allow-secret"
    )


class InvalidQuery(MemstoreError):
    """A search with an option out of range (budget, date, limit)."""


class IndexUnavailable(MemstoreError):
    """The search index could not be opened, even after retries."""


class InvalidLedgerEntry(MemstoreError):
    """A ledger action, target, evidence, note or TTL that the ledger does not accept."""


class LedgerCorrupt(MemstoreError):
    """The ledger file has a line that cannot be read or trusted, or lost committed lines."""


class ClaimHeld(MemstoreError):
    """Another identity holds a valid claim on the action."""


class AlreadyExecuted(MemstoreError):
    """The ledger already records the action as done."""


class UnsafePath(InvalidMemory):
    """A path memstore will not write or read through: a symlink, a FIFO or other special
    file, or a place outside the store."""


class SigningError(MemstoreError):
    """A commit that must be signed cannot be: no signing key, or ssh-keygen refused."""


class HookInTheWay(MemstoreError):
    """A git hook that is not memstore's is where memstore would install or remove its own."""


class TokenError(MemstoreError):
    """A bearer token could not be added, found or revoked."""


class UnsafeBind(MemstoreError):
    """`serve --http` asked to listen beyond this machine with no bearer token to check."""


class SyncFailed(MemstoreError):
    """A sync or a remote claim that could not complete; the local store is left consistent."""


class RemoteUnreachable(SyncFailed):
    """The git remote could not be reached (no network, no server, a wrong URL)."""
