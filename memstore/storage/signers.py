"""A store's allowed-signers file: who may sign as whom, changed through the write path."""

from __future__ import annotations

from memstore.errors import InvalidMemory
from memstore.git import signing
from memstore.model.identity import identity_key
from memstore.storage import transaction
from memstore.storage.files import read_regular
from memstore.storage.store import Store, subject


def allowed(store: Store) -> tuple[list[signing.AllowedKey], list[str]]:
    """The usable lines of the store's allowed-signers file as it is on disk, and a message
    for each line that is not (see `signing.read_allowed`); empty when there is no file."""
    data = read_regular(store.allowed_signers)
    return signing.read_allowed(data.decode("utf-8", "replace") if data is not None else "")


def add(store: Store, identity: str, public_key: str) -> signing.AllowedKey | None:
    """Let `public_key` (an OpenSSH `.pub` line) sign as `identity`, committed by the acting
    identity. Returns the new line's key, or None when it was already allowed for `identity`.

    Raises:
        InvalidMemory: a bad identity or key, or a key already allowed for someone else.
        NoIdentity, SigningError, Conflict (hand edits to the file not committed), GitError.
    """
    actor = store.require_identity()
    line = signing.allowed_line(identity, public_key)
    new = signing.read_allowed(line)[0][0]
    path = transaction.check_path(store, store.allowed_signers)
    with transaction.locked(store):
        keys, _ = allowed(store)
        for key in keys:
            if key.fingerprint != new.fingerprint:
                continue
            if identity_key(key.identity) == identity_key(new.identity):
                return None
            raise InvalidMemory(
                f"key {new.fingerprint} is already allowed for {key.identity}; a key belongs "
                "to one identity: give each identity its own key"
            )
        data = read_regular(path)
        try:
            old = data.decode("utf-8") if data is not None else ""
        except UnicodeDecodeError:
            raise InvalidMemory(f"{path} is not UTF-8 text; fix it by hand first") from None
        sep = "" if not old or old.endswith("\n") else "\n"
        message = subject(f"memory: allow signer {new.identity}", new.fingerprint)
        change = transaction.Write(path, f"{old}{sep}{line}\n")
        transaction.commit(store, [change], message, actor)
    return new
