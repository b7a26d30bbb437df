"""The exceptions the core raises; each message is one sentence a person or a model can act on."""


class MemstoreError(Exception):
    """Base class for every error memstore reports to a user."""


class InvalidName(MemstoreError):
    """A memory name that is not a kebab-case slug."""


class InvalidMemory(MemstoreError):
    """A memory (or a file claiming to be one) that breaks the format."""


class MemoryNotFound(MemstoreError):
    """No memory with that name."""


class MemoryExists(MemstoreError):
    """A memory with that name already exists."""


class InvalidTransition(MemstoreError):
    """A status move the state machine does not allow."""


class SelfApproval(InvalidTransition):
    """An identity tried to confirm its own memory."""


class NoIdentity(MemstoreError):
    """A write was attempted with no acting identity."""


class StoreLocked(MemstoreError):
    """The store's lock could not be taken in time."""


class Conflict(MemstoreError):
    """The memory changed since the writer read it."""


class NotAStore(MemstoreError):
    """The directory is not a memstore store."""


class GitError(MemstoreError):
    """A git operation failed."""


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
