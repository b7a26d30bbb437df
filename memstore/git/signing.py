"""Signed identities: memstore's commits signed as `git commit -S` signs with
`gpg.format=ssh`, and the batched check of which identity's allowed key signed a commit.

A signature counts for an identity when its key is listed for that identity in the store's
allowed-signers file both as the file was just before the commit (its first parent) and as it
is at HEAD. The first rule means no commit can vouch for itself (a key added in the commit it
signs is not yet allowed); the second means a key removed from the file no longer vouches for
anything, old commits included.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memstore import config
from memstore.errors import GitError, InvalidMemory, SigningError
from memstore.git import commit, objects, repository
from memstore.model.identity import check_identity, identity_key, same_identity

NAMESPACE = "git"
"""The namespace git signs commits in (`ssh-keygen -Y sign -n git`)."""
SIGN_TIMEOUT = 30.0
"""Seconds ssh-keygen may take to sign (an agent asking for confirmation); then the write fails."""

_KEY = re.compile(r"(?:^|\s)((?:ssh|ecdsa|sk)-[A-Za-z0-9@._-]+)\s+([A-Za-z0-9+/]+={0,2})(?=\s|$)")
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


# -- signing ----------------------------------------------------------------------------------


def signer(repo: repository.Repo, required: bool, allowed_signers: Path) -> commit.Signer | None:
    """How memstore signs its commits in `repo`: with `MEMSTORE_SIGNING_KEY` when set, else,
    when signatures are `required`, with git's `user.signingkey` (if `gpg.format` is ssh).
    None when there is no key and none is required.

    When signatures are `required`, each signature is checked before the commit exists: the
    key must be allowed for the commit's committer in `allowed_signers` (the file's path in
    the working tree) as the commit's parent holds it and as the commit itself does, which is
    when `signers` will count it; otherwise the write is refused with the reason.

    Raises:
        SigningError: signatures are required and no key is set, or the key is not a file.
    """
    sign = _signer(repo, required)
    if sign is None or not required:
        return sign
    return functools.partial(_allowed_only, repo, repository.repo_path(repo, allowed_signers), sign)


def _signer(repo: repository.Repo, required: bool) -> commit.Signer | None:
    key = config.signing_key()
    source = config.SIGNING_KEY_VAR
    if key is None and required:
        key, source = _git_signing_key(repo), "git's user.signingkey"
    if key is None:
        if required:
            raise SigningError(
                "this store requires signed commits (require_signatures: true in "
                f"{config.STORE_CONFIG}) and no signing key is set: set "
                f"{config.SIGNING_KEY_VAR}=~/.ssh/id_ed25519 (an SSH private key, made with "
                "`ssh-keygen -t ed25519`) and add its public key to the allowed signers with "
                "`memstore signers add NAME ~/.ssh/id_ed25519.pub`"
            )
        return None
    if key.startswith(("key::", "ssh-")):  # a public key itself, as git allows: the agent signs
        return functools.partial(_sign_with_agent, key.removeprefix("key::"))
    path = Path(key).expanduser().absolute()
    if not path.is_file():
        raise SigningError(
            f"{source} names {path}, which is not a file; point it at an SSH private key "
            "(e.g. ~/.ssh/id_ed25519)"
        )
    return functools.partial(_sign, path)


def _git_signing_key(repo: repository.Repo) -> str | None:
    """git's `user.signingkey`, when `gpg.format` is ssh (else it names an OpenPGP key)."""
    try:
        out = _git(repo, ["config", "-z", "--get-regexp", r"^(gpg\.format|user\.signingkey)$"])
    except GitError:
        return None  # neither is set
    values: dict[str, str] = {}
    for item in out.split("\0"):
        name, _, value = item.partition("\n")
        values[name] = value
    if values.get("gpg.format") != "ssh":
        return None
    return values.get("user.signingkey") or None


def _sign(key: Path, payload: bytes) -> bytes:
    """The armored SSH signature of `payload` made with `key`, as git makes it.

    Raises:
        SigningError: with ssh-keygen's message.
    """
    try:
        proc = subprocess.run(
            ["ssh-keygen", "-Y", "sign", "-n", NAMESPACE, "-f", str(key)],
            input=payload,
            capture_output=True,
            env={**os.environ, "LC_ALL": "C"},
            timeout=SIGN_TIMEOUT,
            check=False,
            start_new_session=True,  # no terminal to ask a passphrase on: fail, never hang
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SigningError(f"cannot sign the commit with {key}: {e}") from e
    signature = proc.stdout
    if proc.returncode != 0 or not signature.startswith(b"-----BEGIN SSH SIGNATURE-----"):
        err = " ".join(proc.stderr.decode("utf-8", "replace").split()) or f"exit {proc.returncode}"
        raise SigningError(f"ssh-keygen could not sign the commit with {key}: {err}")
    return signature


def _sign_with_agent(public_key: str, payload: bytes) -> bytes:
    with tempfile.TemporaryDirectory(prefix="memstore-sign-") as folder:
        path = Path(folder) / "key.pub"
        path.write_text(public_key.strip() + "\n", encoding="utf-8")
        return _sign(path, payload)


_COMMITTER = re.compile(rb"^committer (.*) <[^<>]*> -?\d+ [+-]\d{4}$", re.MULTILINE)


def _allowed_only(
    repo: repository.Repo, allowed_rel: str, sign: commit.Signer, payload: bytes
) -> bytes:
    """`sign(payload)`, refused unless the key that made the signature is allowed for the
    commit's committer both in its parent's allowed-signers file and in its own tree's.

    Raises:
        SigningError: naming the key, the identity and why the signature would not count.
    """
    signature = sign(payload)
    head, _, _ = payload.partition(b"\n\n")
    lines = head.split(b"\n")
    tree = next((x[5:] for x in lines if x.startswith(b"tree ")), b"").decode("ascii", "replace")
    parent = next((x[7:] for x in lines if x.startswith(b"parent ")), b"")  # the first
    found = _COMMITTER.search(head)
    identity = found.group(1).decode("utf-8", "replace") if found else ""
    fingerprint = signature_fingerprint(signature)
    where = f"{allowed_rel} as committed"
    versions: list[list[AllowedKey]] = []
    for data in (
        _blob_in(repo, parent.decode("ascii", "replace"), allowed_rel, commit_sha=True)
        if parent
        else None,
        _blob_in(repo, tree, allowed_rel),
    ):
        versions.append(read_allowed(data.decode("utf-8", "replace"))[0] if data else [])
    mine = [
        k
        for k in versions[0]
        if k.fingerprint == fingerprint and same_identity(k.identity, identity)
    ]
    still = {(identity_key(k.identity), k.fingerprint) for k in versions[1]}
    if any((identity_key(k.identity), k.fingerprint) in still for k in mine):
        return signature
    others = sorted(
        {
            k.identity
            for v in versions
            for k in v
            if k.fingerprint == fingerprint and not same_identity(k.identity, identity)
        }
    )
    if not parent:
        why = "nothing is committed yet, so no key is allowed"
    elif mine:
        why = f"this commit removes it from {allowed_rel}"
    elif others:
        why = f"that key is allowed for {', '.join(others)}, not for '{identity}'"
    else:
        why = f"{where} does not list it for '{identity}'"
    raise SigningError(
        f"refused: this store requires signatures and the signing key ({fingerprint}) is not "
        f"an allowed signer for '{identity}': {why}; the commit would count for nobody. Sign "
        f"with {identity}'s own allowed key (MEMSTORE_SIGNING_KEY), or have someone already "
        f"allowed add it first (`memstore signers add {identity} KEY.pub`)"
    )


def _blob_in(
    repo: repository.Repo, sha: str, rel: str, *, commit_sha: bool = False
) -> bytes | None:
    """The bytes of `rel` in a commit (`commit_sha`) or a tree, or None; read in-process."""
    try:
        tree: str | None = objects.commit_tree(repo, sha) if commit_sha else sha
        parts = rel.split("/")
        for i, name in enumerate(parts):
            entry = objects.tree_entries(repo, tree).get(name.encode("utf-8"))
            if entry is None:
                return None
            mode, binsha = entry
            if i == len(parts) - 1:
                return None if mode == objects.TREE_MODE else objects.read_blob(repo, binsha.hex())
            if mode != objects.TREE_MODE:
                return None
            tree = binsha.hex()
    except GitError:
        return None
    return None


def signature_fingerprint(signature: bytes) -> str:
    """The `SHA256:…` fingerprint of the public key inside an armored SSH signature (as
    `ssh-keygen -Y sign` makes it: `SSHSIG`, a version, then the key), or "" when it holds
    none."""
    body = b"".join(
        line.strip() for line in signature.splitlines() if line and not line.startswith(b"-----")
    )
    try:
        blob = base64.b64decode(body, validate=True)
    except binascii.Error:
        return ""
    if not blob.startswith(b"SSHSIG") or len(blob) < 14:
        return ""
    size = int.from_bytes(blob[10:14], "big")
    key = blob[14 : 14 + size]
    if len(key) != size:
        return ""
    digest = base64.b64encode(hashlib.sha256(key).digest()).decode("ascii").rstrip("=")
    return f"SHA256:{digest}"


# -- the allowed-signers file -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AllowedKey:
    """One usable line of an allowed-signers file."""

    identity: str
    """The identity the key signs for (the line's first principal, as written)."""
    fingerprint: str
    """The key's `SHA256:…` fingerprint, as `ssh-keygen -l` shows it."""
    line: str


def read_allowed(text: str) -> tuple[list[AllowedKey], list[str]]:
    """The usable lines of an allowed-signers file, and one message for each line that is not
    (`line N: …`). A key listed for two identities is not usable: it would let one of them
    pass for the other.
    """
    keys: list[AllowedKey] = []
    problems: list[str] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            keys.append(_allowed_line(line))
        except InvalidMemory as e:
            problems.append(f"line {number}: {e}")
    owners: dict[str, set[str]] = {}
    for key in keys:
        owners.setdefault(key.fingerprint, set()).add(identity_key(key.identity))
    shared = {fp for fp, who in owners.items() if len(who) > 1}
    for fp in sorted(shared):
        names = sorted({k.identity for k in keys if k.fingerprint == fp})
        problems.append(
            f"key {fp} is allowed for {', '.join(names)}; a key must belong to one identity"
        )
    return [k for k in keys if k.fingerprint not in shared], problems


def _allowed_line(line: str) -> AllowedKey:
    principals, _, rest = line.partition(" ")
    names = principals.split(",")
    for name in names:
        if any(c in name for c in '*?!"'):
            raise InvalidMemory(
                f"principal {name!r} is a pattern or quoted; list each identity by its name"
            )
        check_identity(name)
    if len({identity_key(n) for n in names}) > 1:
        raise InvalidMemory(f"{principals!r} names several identities; give each its own line")
    match = _KEY.search(rest)
    if match is None:
        raise InvalidMemory("expected `identity [options] key-type base64-key`")
    if "cert-authority" in rest[: match.start()]:
        raise InvalidMemory("certificate authorities are not supported; list each key")
    try:
        blob = base64.b64decode(match.group(2), validate=True)
    except binascii.Error:
        raise InvalidMemory("the key is not valid base64") from None
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode("ascii").rstrip("=")
    return AllowedKey(names[0], f"SHA256:{digest}", line)


def allowed_line(identity: str, public_key: str) -> str:
    """The allowed-signers line that lets `public_key` (an OpenSSH `.pub` line) sign as
    `identity`.

    Raises:
        InvalidMemory: for a bad identity or something that is not a public key.
    """
    name = check_identity(identity)
    if any(c.isspace() or c in ',*?!"' for c in name):
        raise InvalidMemory(
            f"identity {name!r} cannot be an allowed signer: it holds a space, comma, quote "
            "or pattern character"
        )
    match = _KEY.search(public_key.strip())
    if match is None or public_key.strip().startswith("-----"):
        raise InvalidMemory(
            "expected an OpenSSH public key (`ssh-ed25519 AAAA… comment`, a .pub file), "
            "not a private key"
        )
    line = f"{name} {match.group(1)} {match.group(2)}"
    _allowed_line(line)
    return line


# -- verification -----------------------------------------------------------------------------


def signers(
    repo: repository.Repo, commits: Iterable[str], allowed_signers: Path
) -> dict[str, str | None]:
    """For each commit (a full sha), the identity whose allowed key made its good signature,
    or None: unsigned, a bad signature, a key not allowed, or no allowed-signers file.

    `allowed_signers` is the file's path in the working tree; its committed versions are read
    (just before each commit, and at HEAD: see the module's docstring). Compare the result
    with `identity.same_identity`. Costs one `git log` for the parents, then one `git log` per
    version of the file the commits were made on, each running ssh-keygen twice per signature.

    Raises:
        GitError: for something that is not a full sha, or a commit the repository lacks.
    """
    shas = list(dict.fromkeys(commits))
    for sha in shas:
        if not _SHA.fullmatch(sha):
            raise GitError(f"not a full commit id: {sha!r}")
    found: dict[str, str | None] = dict.fromkeys(shas)
    at_head = objects.blob(repo, "HEAD", allowed_signers) if shas else None
    if at_head is None:
        return found
    still = {
        (identity_key(k.identity), k.fingerprint)
        for k in read_allowed(at_head.decode("utf-8", "replace"))[0]
    }
    versions: dict[bytes, list[str]] = {}
    for sha, parent in _first_parents(repo, shas).items():
        before = objects.blob(repo, parent, allowed_signers) if parent else None
        if before is not None:
            versions.setdefault(before, []).append(sha)
    for before, group in versions.items():
        lines = [
            k.line
            for k in read_allowed(before.decode("utf-8", "replace"))[0]
            if (identity_key(k.identity), k.fingerprint) in still
        ]
        if lines:
            found.update(_verify(repo, group, "\n".join(lines) + "\n"))
    return found


def _first_parents(repo: repository.Repo, shas: list[str]) -> dict[str, str | None]:
    out = _git(repo, ["log", "--no-walk=unsorted", "--stdin", "--format=%H %P"], shas)
    parents: dict[str, str | None] = {}
    for line in out.splitlines():
        sha, *rest = line.split()
        parents[sha] = rest[0] if rest else None
    return parents


def _verify(repo: repository.Repo, shas: list[str], allowed: str) -> dict[str, str | None]:
    """Each commit's good signer among the `allowed` lines, in one `git log`."""
    with tempfile.TemporaryDirectory(prefix="memstore-verify-") as folder:
        path = Path(folder) / "allowed_signers"
        path.write_text(allowed, encoding="utf-8")
        out = _git(
            repo,
            ["log", "--no-walk=unsorted", "--stdin", "--format=%H%x00%G?%x00%GS"],
            shas,
            settings=[f"gpg.ssh.allowedSignersFile={path}", "log.showSignature=false"],
        )
    found: dict[str, str | None] = {}
    for line in out.splitlines():
        sha, status, principal = (line.split("\0") + ["", ""])[:3]
        # G: a good signature by a key the file allows for `principal`. U (good, key not
        # listed), B (bad), N (none) and the rest vouch for nobody.
        found[sha] = principal if status == "G" and principal else None
    return found


def _git(
    repo: repository.Repo,
    args: list[str],
    revisions: list[str] | None = None,
    settings: Iterable[str] = (),
) -> str:
    """Run git in the repository, with `settings` (`-c name=value`) and `revisions` fed on
    stdin, and return its output.

    Raises:
        GitError: with git's message.
    """
    stdin = "".join(f"{r}\n" for r in revisions).encode("ascii") if revisions else None
    options = [x for setting in settings for x in ("-c", setting)]
    try:
        proc = subprocess.run(
            ["git", *options, *args],
            cwd=repo.top,
            input=stdin,
            capture_output=True,
            env={**os.environ, "LC_ALL": "C", "LANGUAGE": "C", "GIT_OPTIONAL_LOCKS": "0"},
            check=False,
            start_new_session=True,
        )
    except OSError as e:
        raise GitError(f"cannot run git: {e}") from e
    if proc.returncode != 0:
        err = " ".join(proc.stderr.decode("utf-8", "replace").split())
        raise GitError(f"git {args[0]} failed: {err or f'exit {proc.returncode}'}")
    return proc.stdout.decode("utf-8", "replace")
