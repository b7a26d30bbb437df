"""What `memstore serve --http` refuses before it listens, and the socket it listens on: checked
before the web stack loads, so a refusal comes at once."""

from __future__ import annotations

import ipaddress
import socket

from memstore.errors import UnsafeBind
from memstore.faces import bearer
from memstore.storage import identities
from memstore.storage.store import Store

SETUP = (
    "add a token for each agent first (memstore token add NAME, and memstore token add NAME "
    "--human for each person who reviews in the console), then give each its own token"
)


def loopback(host: str) -> bool:
    """Whether `host` only reaches this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, keeper: bearer.Keeper) -> None:
    """Refuse to listen beyond this machine when no bearer token exists.

    Raises:
        UnsafeBind: for a non-loopback host and an empty token file.
    """
    if not loopback(host) and not keeper.current():
        raise UnsafeBind(
            f"refusing to listen on {host} with no tokens: anyone who reaches it could act on "
            f"the store; {SETUP}"
        )


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port` (port 0: any free one).

    Raises:
        UnsafeBind: when the address cannot be bound (in use, not this machine's).
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        raise UnsafeBind(f"cannot listen on {host}:{port}: {e.strerror or e}") from e
    return sock


def bind(store: Store, host: str, port: int) -> tuple[bearer.Keeper, socket.socket]:
    """Check that `store` may be served over HTTP on `host`; its token keeper and a socket
    listening on `host`:`port`.

    Raises:
        UnsafeBind: for a non-loopback host with no bearer tokens, an address that cannot be
            bound, or a store that requires signed commits.
        TokenError: for a damaged token file.
        InvalidMemory: for a token naming an identity that looks like a credential or like
            another identity of the store.
    """
    if store.signing.required:
        raise UnsafeBind(
            "this store requires signed commits, and one HTTP server signs every identity's "
            "commits with its one MEMSTORE_SIGNING_KEY; give each agent its own `memstore "
            "serve` (stdio) with its own key"
        )
    for name in bearer.read(store.cache):  # a damaged token file: refused before "serving"
        identities.admit(store.repo, name, store.secret_patterns)
    keeper = bearer.Keeper(store.cache)
    check_bind(host, keeper)
    return keeper, listen(host, port)
