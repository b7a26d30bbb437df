"""A store's own settings, in `memstore.yaml` at its root: extra types, who is human, secrets,
documents, the embedding model, signatures, sync, guards and upkeep. Each reader checks its
setting's shape and names the file and the setting in its error."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memstore.config import STORE_CONFIG
from memstore.errors import GitError, InvalidMemory
from memstore.git import objects, refs, repository

# yaml and the memory format load when a store's settings are read, not when a CLI command
# only resolves its flags (`memstore --help` stays fast).

KNOWN = (
    "types",
    "humans",
    "require_signatures",
    "allowed_signers",
    "guards",
    "secrets",
    "secret_patterns",
    "docs",
    "embedding_model",
    "claims",
    "remote",
    "branch",
    "working_expires",
    "stale_after",
)
"""Every setting `memstore.yaml` may hold; any other key is refused, naming the nearest."""
TRUSTED = ("humans", "require_signatures", "allowed_signers", "guards", "secrets")
"""The settings that change who or what is trusted: whose drafts bind, whether a commit must
be signed and by which keys, which guards and credential checks hold. They count only as
committed at HEAD; a change in the working tree is reported, never obeyed, until committed."""


def _settings(root: Path) -> tuple[Path, Any]:
    """`memstore.yaml` at `root` as the working tree holds it, and what it holds (None when
    there is no such file).

    Raises:
        InvalidMemory: for a file that is not YAML, not a mapping, or names a setting that
            does not exist.
    """
    path = root / STORE_CONFIG
    if not path.is_file():
        return path, None
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InvalidMemory(f"cannot read {path}: {e}") from e
    return path, _parsed(path, data)


_memo: dict[str, Any] = {}
"""Settings parsed, by the blob sha of the bytes they were parsed from."""
_memo_lock = threading.Lock()


def _parsed(path: Path | str, data: bytes) -> dict[str, Any]:
    """The settings in `data` (the bytes of `memstore.yaml`), parsed once per content.

    Raises:
        InvalidMemory: as `_settings` does.
    """
    sha = objects.blob_sha(data)
    with _memo_lock:
        found = _memo.get(sha)
    if found is not None:
        return found
    import yaml

    try:
        loaded: Any = yaml.safe_load(data.decode("utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise InvalidMemory(f"{path} is not valid YAML: {e}") from e
    if not isinstance(loaded, dict):
        raise InvalidMemory(f"{path} must hold settings as `name: value` lines")
    mapping: dict[Any, Any] = loaded  # pyright: ignore[reportUnknownVariableType]
    for key in mapping:
        if key not in KNOWN:
            raise InvalidMemory(f"{path}: unknown setting {key!r}{_nearest(key)}")
    settings: dict[str, Any] = {str(k): v for k, v in mapping.items()}
    with _memo_lock:
        if len(_memo) > 64:
            _memo.clear()
        _memo[sha] = settings
    return settings


def _nearest(key: object) -> str:
    """`; did you mean 'humans'?` for the known setting nearest `key`, else the known ones."""
    import difflib  # only a misspelled setting needs it

    close = difflib.get_close_matches(str(key), KNOWN, n=1, cutoff=0.5)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; the settings are: {', '.join(KNOWN)}"


_repos: dict[Path, repository.Repo | None] = {}


def _repo(root: Path) -> repository.Repo | None:
    found = _repos.get(root)
    if found is None:
        found = _repos[root] = repository.find_repo(root)
    return found


_blob_ids: dict[tuple[Path, str, str], str | None] = {}
"""(store, HEAD, file) → the file's blob at that commit: a commit never changes, so a command
reads HEAD's ref files and nothing else once it has looked."""


def committed_blob(root: Path, name: str) -> str | None:
    """The blob sha of file `name` (relative to the store's root) at HEAD, or None when HEAD
    holds no such file (or there is no history yet). Reads git's objects in-process, once
    per HEAD."""
    repo = _repo(root)
    head = refs.head(repo) if repo is not None else None
    if repo is None or head is None:
        return None
    key = (root, head, name)
    if key in _blob_ids:
        return _blob_ids[key]
    try:
        found = objects.blob_at(repo, head, repository.repo_path(repo, root / name))
    except GitError:
        return None
    if len(_blob_ids) > 256:
        _blob_ids.clear()
    _blob_ids[key] = found
    return found


def _committed(root: Path) -> tuple[str, dict[str, Any]]:
    """`memstore.yaml` as HEAD holds it (named for messages) and its settings, parsed once
    per version ({} when it is not committed).

    Raises:
        InvalidMemory: for a committed file that is not valid settings.
    """
    label = f"{root / STORE_CONFIG} (as committed)"
    sha = committed_blob(root, STORE_CONFIG)
    if sha is None:
        return label, {}
    with _memo_lock:
        found = _memo.get(sha)
    if found is not None:
        return label, found
    repo = _repo(root)
    assert repo is not None
    try:
        data = objects.read_blob(repo, sha)
    except GitError as e:
        raise InvalidMemory(f"cannot read {label}: {e}") from e
    return label, _parsed(label, data)


def _trusted(root: Path) -> tuple[str, dict[str, Any]]:
    """What the trust settings are read from: HEAD's `memstore.yaml` (the working tree's
    file is still checked, so a misspelled key is refused wherever it is).

    Raises:
        InvalidMemory: for a settings file, here or committed, that is not valid settings.
    """
    path, work = _settings(root)
    if work is not None:  # a bad shape is refused at once, committed or not
        _humans(str(path), work)
        _signing(str(path), work)
    return _committed(root)


def basis(root: Path) -> str:
    """A digest of everything committed the verdicts on a store's history depend on besides
    the history itself: the trust settings and the allowed-signers file at HEAD. It changes
    whenever one of them does, so verdicts cached under another basis are replayed.

    Raises:
        InvalidMemory: for a settings file that is not valid settings.
    """
    _, data = _committed(root)
    signing = signing_settings(root)
    parts = [f"{k}={data.get(k)!r}" for k in TRUSTED]
    parts.append(f"signers={committed_blob(root, signing.allowed_signers)}")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def uncommitted(root: Path) -> list[tuple[str, str]]:
    """(file, message) for each trust setting (see `TRUSTED`) whose value in the working
    tree's `memstore.yaml` differs from HEAD's, and for an allowed-signers file that differs
    from HEAD's: changes that are not in force until someone commits them. `file` is relative
    to the store.

    Raises:
        InvalidMemory: for a settings file that is not valid settings.
    """
    _, work = _settings(root)
    _, committed = _committed(root)
    mine: dict[str, Any] = work if isinstance(work, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    found: list[tuple[str, str]] = []
    changed = [k for k in TRUSTED if mine.get(k) != committed.get(k)]
    if changed:
        listed = ", ".join(f"'{k}'" for k in changed)
        found.append(
            (
                STORE_CONFIG,
                f"{listed} changed but not committed, so not in force: the committed value "
                f"holds until someone commits it (git add {STORE_CONFIG} && git commit)",
            )
        )
    rel = signing_settings(root).allowed_signers
    sha = committed_blob(root, rel)
    try:
        now = objects.blob_sha((root / rel).read_bytes()) if (root / rel).is_file() else None
    except OSError:
        now = None
    if now != sha:
        found.append(
            (
                rel,
                "changed but not committed, so not in force: signatures are checked against "
                f"the committed file until someone commits it (git add {rel} && git commit)",
            )
        )
    return found


_warned: set[str] = set()


def warn_uncommitted(root: Path) -> None:
    """Log each `uncommitted` change once per process (a command it would affect says so).

    Raises:
        InvalidMemory: for a settings file that is not valid settings.
    """
    for rel, message in uncommitted(root):
        line = f"warning: {root / rel}: {message}"
        if line not in _warned:
            import logging  # only a warning needs it: a plain `memstore add` never loads it

            _warned.add(line)
            logging.getLogger(__name__).warning("%s", line)


def store_types(root: Path) -> tuple[str, ...]:
    """The memory types: the defaults, then any `types` listed in `memstore.yaml`.

    Raises:
        InvalidMemory: for a settings file that is not YAML or a bad type name.
    """
    from memstore.model.fields import check_name
    from memstore.model.memory import DEFAULT_TYPES

    path, data = _settings(root)
    if data is None:
        return DEFAULT_TYPES
    mapping: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    extra: Any = mapping.get("types", []) if isinstance(data, dict) else None
    if not isinstance(extra, list):
        raise InvalidMemory(f"{path}: 'types' must be a list of type names")
    items: list[Any] = extra  # pyright: ignore[reportUnknownVariableType]
    added = tuple(check_name(t, "type") for t in items)
    return DEFAULT_TYPES + tuple(t for t in added if t not in DEFAULT_TYPES)


def secret_settings(root: Path) -> tuple[bool, dict[str, str]]:
    """From `memstore.yaml`: whether secrets are allowed (`secrets: allow`), and the store's
    own patterns (name → regex; `secrets.compile_patterns` adds the built-in ones). `secrets`
    counts as committed at HEAD; the patterns, which only add checks, as the working tree says.

    Raises:
        InvalidMemory: for a setting of the wrong shape or a pattern that is not a regex.
    """
    path, data = _settings(root)
    mapping: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    label, committed = _committed(root)
    policy = committed.get("secrets", "refuse")  # turning the check off counts once committed
    if policy not in ("refuse", "allow"):
        raise InvalidMemory(f"{label}: 'secrets' must be 'refuse' (the default) or 'allow'")
    if mapping.get("secrets", "refuse") not in ("refuse", "allow"):
        raise InvalidMemory(f"{path}: 'secrets' must be 'refuse' (the default) or 'allow'")
    extra: Any = mapping.get("secret_patterns") or {}
    if not isinstance(extra, dict) or not all(
        isinstance(k, str) and isinstance(v, str)
        for k, v in extra.items()  # pyright: ignore[reportUnknownVariableType]
    ):
        raise InvalidMemory(f"{path}: 'secret_patterns' must map a name to a regular expression")
    patterns: dict[str, str] = extra  # pyright: ignore[reportUnknownVariableType]
    for name, rx in patterns.items():
        try:
            re.compile(rx)
        except re.error as e:
            raise InvalidMemory(
                f"{path}: secret pattern {name!r} is not a valid regular expression: {e}"
            ) from e
    return policy == "allow", patterns


def store_humans(root: Path) -> tuple[str, ...]:
    """The identities `memstore.yaml` names as people (`humans: [alice, bob]`): a correction one
    of them makes binds at once, an agent's only once someone else confirms it. As committed at
    HEAD: a list only written in the working tree is not in force (see `uncommitted`).

    Raises:
        InvalidMemory: for a settings file that is not YAML, or `humans` not a list of
            identities.
    """
    path, mapping = _trusted(root)
    return _humans(path, mapping)


def _humans(path: str, mapping: dict[str, Any]) -> tuple[str, ...]:
    from memstore.model.identity import check_identity

    listed: Any = mapping.get("humans") or []
    if isinstance(listed, str):
        listed = [listed]
    if not isinstance(listed, list):
        raise InvalidMemory(f"{path}: 'humans' must be a list of identities, e.g. humans: [alice]")
    items: list[Any] = listed  # pyright: ignore[reportUnknownVariableType]
    humans: list[str] = []
    for item in items:
        try:
            humans.append(check_identity(item))
        except InvalidMemory as e:
            raise InvalidMemory(f"{path}: 'humans' lists {item!r}, not an identity: {e}") from e
    return tuple(humans)


def doc_globs(root: Path) -> tuple[str, ...]:
    """From `memstore.yaml`: `docs:` globs naming the project's documents, relative to the top
    of the store's git working tree (e.g. `["docs/**/*.md", "RUNBOOK.md"]`).

    Raises:
        InvalidMemory: for a setting that is not a list of relative globs inside the tree.
    """
    path, data = _settings(root)
    mapping: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    listed: Any = mapping.get("docs") or []
    if isinstance(listed, str):
        listed = [listed]
    if not isinstance(listed, list):
        raise InvalidMemory(
            f"{path}: 'docs' must be a list of globs, e.g. docs: [\"docs/**/*.md\"]"
        )
    items: list[Any] = listed  # pyright: ignore[reportUnknownVariableType]
    for item in items:
        parts = item.split("/") if isinstance(item, str) else []
        if not parts or item.startswith(("/", "~", "-")) or any(p in ("", "..") for p in parts):
            raise InvalidMemory(
                f"{path}: 'docs' lists {item!r}; use a glob relative to the repository's top, "
                "without '..', such as 'docs/**/*.md'"
            )
    return tuple(dict.fromkeys(str(i) for i in items))


def embedding_model(root: Path) -> str | None:
    """From `memstore.yaml`: `embedding_model:`, the model semantic recall uses (a folder,
    relative to the store, or a model name in this machine's cache); None turns it off.

    Raises:
        InvalidMemory: for a setting that is not a string.
    """
    path, data = _settings(root)
    mapping: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    value: Any = mapping.get("embedding_model")
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidMemory(
            f"{path}: 'embedding_model' must be a folder or a model name, e.g. "
            "embedding_model: models/potion-base-8M"
        )
    return value


ALLOWED_SIGNERS = "allowed_signers"
"""The default allowed-signers file, at the store's root (git's `principal key-type key`)."""


@dataclass(frozen=True, slots=True)
class Signing:
    """A store's signature settings from `memstore.yaml`."""

    required: bool
    """`require_signatures: true`: every commit memstore makes is signed, or refused."""
    allowed_signers: str
    """The allowed-signers file, relative to the store's root (`allowed_signers`)."""


def signing_settings(root: Path) -> Signing:
    """From `memstore.yaml` as committed at HEAD: `require_signatures` (default false) and
    `allowed_signers`.

    Raises:
        InvalidMemory: for a setting of the wrong shape, or a file outside the store.
    """
    path, mapping = _trusted(root)
    return _signing(path, mapping)


def _signing(path: str, mapping: dict[str, Any]) -> Signing:
    required = mapping.get("require_signatures", False)
    if not isinstance(required, bool):
        raise InvalidMemory(f"{path}: 'require_signatures' must be true or false")
    where = mapping.get("allowed_signers", ALLOWED_SIGNERS)
    parts = where.split("/") if isinstance(where, str) else []
    if (
        not parts
        or where.startswith("-")
        or parts[0] == ".memstore"  # git-ignored: the file must be committed to count
        or any(p in ("", ".", "..", ".git") for p in parts)
    ):
        raise InvalidMemory(
            f"{path}: 'allowed_signers' must be a file path inside the store, such as "
            f"{ALLOWED_SIGNERS!r}"
        )
    return Signing(required, where)


@dataclass(frozen=True, slots=True)
class SyncSettings:
    """A store's sync settings from `memstore.yaml`."""

    claims: str
    """`local` (default): claims hold on this clone; `remote`: a claim is won only once the
    remote accepted the push carrying it, and `ledger check` fetches first."""
    remote: str
    """The git remote `memstore sync` uses (`origin`)."""
    branch: str | None
    """The remote branch (default: the branch HEAD is on)."""


def sync_settings(root: Path) -> SyncSettings:
    """From `memstore.yaml`: `claims` (`local` or `remote`), `remote`, `branch`.

    Raises:
        InvalidMemory: for a setting of the wrong shape.
    """
    path, data = _settings(root)
    mapping: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    claims = mapping.get("claims", "local")
    if claims not in ("local", "remote"):
        raise InvalidMemory(f"{path}: 'claims' must be local or remote, not {claims!r}")
    remote = mapping.get("remote", "origin")
    branch = mapping.get("branch")
    for key, value in (("remote", remote), ("branch", branch)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidMemory(f"{path}: '{key}' must be a name, such as 'origin' or 'main'")
    return SyncSettings(claims, remote, branch)


def disabled_guards(root: Path, known: Collection[str]) -> frozenset[str]:
    """From `memstore.yaml`: the built-in guards turned off. `guards: false` turns off all of
    them, `guards: {disable: [rm-rf, force-push]}` those named; on by default. `known` are the
    guards that exist (the rules' own table, so the settings need not import the workflow).
    As committed at HEAD: a guard turned off only in the working tree still holds.

    Raises:
        InvalidMemory: for a setting of the wrong shape or a guard that does not exist.
    """
    names_known = tuple(known)
    path, work = _settings(root)
    if work is not None:  # a bad shape is refused at once, committed or not
        _guards(str(path), work, names_known)
    label, mapping = _trusted(root)
    return _guards(label, mapping, names_known)


def _guards(path: str, mapping: dict[str, Any], names_known: tuple[str, ...]) -> frozenset[str]:
    setting: Any = mapping.get("guards", True)
    if setting is True or setting is None:
        return frozenset()
    if setting is False:
        return frozenset(names_known)
    options: dict[str, Any] = setting if isinstance(setting, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    listed: Any = options.get("disable")
    if isinstance(listed, str):
        listed = [listed]
    if not isinstance(listed, list) or set(options) - {"disable"}:
        raise InvalidMemory(
            f"{path}: 'guards' must be true, false, or {{disable: [names]}}; guards: "
            f"{', '.join(names_known)}"
        )
    names: list[Any] = listed  # pyright: ignore[reportUnknownVariableType]
    unknown = [n for n in names if n not in names_known]
    if unknown:
        raise InvalidMemory(
            f"{path}: 'guards' disables {unknown[0]!r}, which is not a guard; guards: "
            f"{', '.join(names_known)}"
        )
    return frozenset(names)


WORKING_EXPIRES = "30d"
"""How long a `working` memory lives when it names no `expires` (`working_expires:`)."""
STALE_AFTER_DAYS = 90
"""How long a confirmation holds before `doctor` lists it as stale (`stale_after:`)."""


@dataclass(frozen=True, slots=True)
class Upkeep:
    """A store's settings for keeping memories current: expiry and re-verification."""

    working_expires: str | None
    """`7d`, `2w`, … for new `working` memories; None when they never expire by default."""
    stale_after_days: int


def upkeep_settings(root: Path) -> Upkeep:
    """`working_expires:` (default 30d; `never` turns it off) and `stale_after:` (days, or
    `90d`; default 90) from `memstore.yaml`.

    Raises:
        InvalidMemory: for a settings file that is not YAML, or a value of the wrong shape.
    """
    import re

    from memstore.model import when
    from memstore.model.fields import EXPIRES_UNITS

    path, data = _settings(root)
    mapping: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    working: Any = mapping.get("working_expires", WORKING_EXPIRES)
    if working in (None, False, "never"):
        working = None
    elif not isinstance(working, str) or when.seconds(working, EXPIRES_UNITS) is None:
        raise InvalidMemory(
            f"{path}: 'working_expires' must be a time such as 30d, 2w or 24h, or never"
        )
    stale: Any = mapping.get("stale_after", STALE_AFTER_DAYS)
    if isinstance(stale, str) and re.fullmatch(r"\d{1,5}d", stale):
        stale = int(stale[:-1])
    if not isinstance(stale, int) or isinstance(stale, bool) or stale < 1:
        raise InvalidMemory(f"{path}: 'stale_after' must be a number of days, e.g. 90 or 90d")
    return Upkeep(working, stale)


# -- the trust settings of one committed version ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Trusted:
    """The trust settings one version of `memstore.yaml` holds (see `TRUSTED`)."""

    values: dict[str, Any]
    """Each trust setting the file names, as written."""
    humans: tuple[str, ...]
    signing: Signing


def trusted_in(label: str, data: bytes | None) -> Trusted:
    """The trust settings in `data`, the bytes of one version of `memstore.yaml` (None: no
    such file then), named `label` in errors.

    Raises:
        InvalidMemory: for a file that is not valid settings.
    """
    mapping = _parsed(label, data) if data is not None else {}
    return Trusted(
        {k: mapping[k] for k in TRUSTED if k in mapping},
        _humans(label, mapping),
        _signing(label, mapping),
    )
