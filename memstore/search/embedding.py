"""Semantic recall's parts: an embedding model loaded from this machine only — a BERT sentence
encoder such as all-MiniLM-L6-v2 run with numpy (`Transformer`), or a static model2vec model —
and the memories' vectors, a derived cache beside the search index (see docs/search.md).

Both are optional: numpy, tokenizers and model2vec come with `pip install 'memstore[semantic]'`,
and are imported only when the model is needed (`embedding_model:` in memstore.yaml names
it). Nothing here ever downloads: a model is a local folder or one already in the machine's
model cache.
"""

# numpy's and model2vec's types are only partly known to pyright (and optional at run time):
# the arrays are handled as `Any` here, behind typed functions.
# pyright: reportUnknownMemberType=false, reportUnknownVariableType=false
# pyright: reportUnknownArgumentType=false, reportMissingImports=false

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from memstore.errors import InvalidMemory

log = logging.getLogger(__name__)

EXTRA = "semantic"
"""The optional extra that brings the libraries: `pip install 'memstore[semantic]'`."""

TEXT_MAX = 2000
"""How many characters of a memory are embedded: a static model averages the pieces its
tokenizer cuts, so a long body only dilutes what the name and description say."""


class Embedder(Protocol):
    """What semantic recall needs of a model: texts in, one vector (a row) per text out."""

    def encode(self, sentences: Sequence[str]) -> Any: ...


def available() -> bool:
    """Whether the semantic extra's libraries are installed (nothing is imported)."""
    names = ("numpy", "tokenizers", "model2vec")
    return all(importlib.util.find_spec(name) is not None for name in names)


@dataclass(frozen=True, slots=True)
class Model:
    """A loaded embedding model and what identifies it (its vectors are only comparable with
    vectors of the same `ident`)."""

    spec: str
    """As `memstore.yaml` names it."""
    folder: Path
    ident: str
    """The folder and its weights file's size and modification time."""
    embedder: Embedder
    centre: bool = True
    """Compare vectors after taking away the store's mean vector: a static model's vectors
    share a common direction that makes every memory look somewhat like every question. An
    encoder's are compared as they are (the fusion was tuned on them so)."""

    def vectors(self, texts: Sequence[str]) -> Any:
        """Unit-length float32 rows, one per text (a zero row for a text with no known piece)."""
        import numpy as np

        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        rows = np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)
        if rows.ndim == 1:
            rows = rows.reshape(1, -1)
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return rows / norms


def resolve(spec: str, root: Path) -> Path:
    """The local folder `spec` names: a path (relative to the store `root`, or absolute, or
    `~`) or a model name (`owner/name`) already in this machine's Hugging Face cache.

    Raises:
        InvalidMemory: when no such folder is on this machine (nothing is downloaded).
    """
    path = Path(spec).expanduser()
    if not path.is_absolute():
        path = root / path
    if path.is_dir():
        return path
    if spec.count("/") == 1 and not spec.startswith((".", "/", "~")):
        cached = _cached(spec)
        if cached is not None:
            return cached
    raise InvalidMemory(
        f"embedding_model {spec!r} is neither a folder (looked at {path}) nor a model in this "
        "machine's model cache; memstore never downloads one: put the model's folder there "
        "(a sentence-transformers folder such as all-MiniLM-L6-v2's, or a model2vec model)"
    )


def _cached(name: str) -> Path | None:
    """The newest snapshot of model `name` in the Hugging Face cache, read from disk only."""
    home = os.environ.get("HF_HOME") or str(Path("~/.cache/huggingface").expanduser())
    hub = os.environ.get("HF_HUB_CACHE") or str(Path(home) / "hub")
    snapshots = Path(hub) / f"models--{name.replace('/', '--')}" / "snapshots"
    try:
        found = [p for p in snapshots.iterdir() if (p / "tokenizer.json").is_file()]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def load(spec: str, root: Path) -> Model:
    """The model `spec` names (see `resolve`), from this machine only: a BERT sentence encoder
    (a sentence-transformers folder, e.g. all-MiniLM-L6-v2, see `Transformer`) or a static
    model2vec model.

    Raises:
        InvalidMemory: when the model is not on this machine, the semantic extra is not
            installed, or the folder holds neither kind of model.
    """
    folder = resolve(spec, root)
    if not available():
        raise InvalidMemory(
            f"embedding_model is set but the semantic extra is not installed: "
            f"pip install 'memstore[{EXTRA}]'"
        )
    if _transformer(folder):
        if "numpy" not in sys.modules:
            # A query's matrices are small: BLAS threads cost more than they give (2.3x slower
            # on a busy 2-core machine), and must be chosen before numpy loads.
            os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        try:
            encoder = Transformer(folder)
        except Exception as e:  # the tokenizers library raises plain Exception for a bad file
            raise InvalidMemory(
                f"embedding_model {spec!r}: cannot read the encoder in {folder} ({e})"
            ) from e
        return Model(spec, folder, _ident(folder), encoder, centre=False)
    # Belt and braces: the folder is local, and the hub client is told not to go online.
    os.environ["HF_HUB_OFFLINE"] = "1"
    from model2vec import StaticModel

    try:
        model = StaticModel.from_pretrained(folder, force_download=False)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise InvalidMemory(
            f"embedding_model {spec!r}: {folder} holds no model2vec model ({e})"
        ) from e
    return Model(spec, folder, _ident(folder), model)


def static(spec: str, root: Path) -> bool:
    """Whether the model `spec` names is a static one (not a sentence encoder), read from its
    folder's config without loading it; False when there is no such folder."""
    if not spec:
        return False
    try:
        return not _transformer(resolve(spec, root))
    except InvalidMemory:
        return False


def _transformer(folder: Path) -> bool:
    """Whether `folder` holds a BERT encoder's weights (rather than a static model's)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and config.get("model_type") == "bert"


LENGTH_MAX = 128
"""The most tokenizer pieces of a text the encoder reads: a memory's name, description and
first lines say what it is about; reading all 256 the model allows costs twice as much per
memory for no gain on the banks (docs/benchmarks.md)."""


class Transformer:
    """A BERT sentence encoder run with numpy: the folder's `tokenizer.json` (the `tokenizers`
    library) and `model.safetensors`, memory-mapped (a process touches only the pages it uses),
    mean pooling over the tokens as sentence-transformers' all-MiniLM-L6-v2 does.

    Inference only, in float32 (a float64 operand sends numpy's matmul down a loop a hundred
    times slower)."""

    def __init__(self, folder: Path) -> None:
        import numpy as np
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = np.float32(config.get("layer_norm_eps", 1e-12))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(
            min(LENGTH_MAX, int(config.get("max_position_embeddings", 512)))
        )
        self.w = _safetensors(folder / "model.safetensors")
        for name in ("embeddings.word_embeddings.weight", "encoder.layer.0.output.dense.bias"):
            if name not in self.w:
                raise KeyError(f"no {name} in model.safetensors")

    def encode(self, sentences: Sequence[str]) -> Any:
        """One mean-pooled vector per sentence; sentences of like length are run together."""
        import numpy as np

        encoded = [e.ids for e in self.tokenizer.encode_batch(list(sentences))]
        out = np.zeros(
            (len(encoded), self.w["embeddings.word_embeddings.weight"].shape[1]), dtype=np.float32
        )
        order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
        batch = 32
        for start in range(0, len(order), batch):
            chunk = order[start : start + batch]
            length = max(len(encoded[i]) for i in chunk)
            ids = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.float32)
            for row, i in enumerate(chunk):
                ids[row, : len(encoded[i])] = encoded[i]
                mask[row, : len(encoded[i])] = 1.0
            hidden = self._forward(ids, mask)
            sums = (hidden * mask[:, :, None]).sum(1)
            out[chunk] = sums / np.maximum(mask.sum(1, keepdims=True), 1.0)
        return out

    def _norm(self, x: Any, name: str) -> Any:
        import numpy as np

        mean = x.mean(-1, keepdims=True)
        centred = x - mean
        var = (centred * centred).mean(-1, keepdims=True)
        return centred / np.sqrt(var + self.eps) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _linear(self, x: Any, name: str) -> Any:
        # torch's Linear keeps (out, in): its transpose is a view BLAS reads as it is.
        flat = x.reshape(-1, x.shape[-1]) @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]
        return flat.reshape(*x.shape[:-1], -1)

    def _forward(self, ids: Any, mask: Any) -> Any:
        import numpy as np

        w = self.w
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0][None, None]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        hidden = x.shape[-1]
        size = hidden // self.heads
        bias = (1.0 - mask[:, None, None, :]) * np.float32(-1e9)
        scale = np.float32(1 / np.sqrt(size))

        def split(t: Any) -> Any:
            return t.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

        for i in range(self.layers):
            p = f"encoder.layer.{i}"
            q = split(self._linear(x, f"{p}.attention.self.query"))
            k = split(self._linear(x, f"{p}.attention.self.key"))
            v = split(self._linear(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) * scale + bias
            scores -= scores.max(-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            x = self._norm(
                self._linear(context, f"{p}.attention.output.dense") + x,
                f"{p}.attention.output.LayerNorm",
            )
            inner = self._linear(x, f"{p}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + _erf(inner * np.float32(1 / np.sqrt(2.0))))
            x = self._norm(self._linear(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        return x


def _erf(x: Any) -> Any:
    """erf by Abramowitz and Stegun 7.1.26 (absolute error under 1.5e-7), for BERT's exact
    GELU without scipy."""
    import numpy as np

    a = np.abs(x)
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return np.sign(x) * (1.0 - poly.astype(np.float32) * np.exp(-a * a))


_DTYPES = {"F32": "<f4", "F16": "<f2"}


def _safetensors(path: Path) -> dict[str, Any]:
    """The floating-point tensors of a safetensors file as float32 arrays over a read-only
    memory map (no copy for float32 weights), names without a `bert.` prefix."""
    import numpy as np

    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    data = np.memmap(path, dtype=np.uint8, mode="r")
    start = 8 + size
    tensors: dict[str, Any] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            continue  # e.g. BERT's int64 position ids: no weight the forward pass reads
        begin, end = info["data_offsets"]
        array = data[start + begin : start + end].view(dtype).reshape(info["shape"])
        # Plain arrays over the map (np.memmap's subclass slows each small matmul by ~7%).
        tensors[name.removeprefix("bert.")] = np.asarray(array, dtype=np.float32)
    return tensors


def _ident(folder: Path) -> str:
    parts = [str(folder.resolve())]
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        try:
            st = (folder / name).stat()
            parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            continue
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]


# -- the vectors cache ------------------------------------------------------------------------

SAVE_ALWAYS = 2000
"""Up to this many memories, the cache on disk is rewritten at every change."""
SAVE_CHANGED = 32
"""Above it, only when at least this many memories were embedded or dropped at once (for a
static model; an encoder's rows are always kept)."""

CHUNK = 256
"""An encoder embeds this many memories at a time, merging and saving the rows after each."""
BUDGET_CHUNK = 16
"""The chunk when a search gives the encoder a time budget (a few seconds at most)."""
SEARCH_BUDGET = 2.0
"""Seconds a search spends embedding memories the encoder has not seen yet; the rest are
embedded by later searches and by the server's watcher, and found by words meanwhile."""

VECTORS = "vectors"
"""The cache's folder in `.memstore/`, beside `index/`."""


class Vectors:
    """The store's memories as unit vectors (one row each) for one model, kept in `directory`:
    `vectors.npy` and `vectors.json` (the model, each row's path and its content digest).

    A derived cache: compared with the search index's manifest (path → digest) before each
    search, and only what differs is embedded. Written atomically without a lock: two processes
    that both bring it up to date write the same rows, and a stale file is caught by its
    digests on the next look.
    """

    def __init__(self, directory: Path, model: Model) -> None:
        self.dir = directory
        self.model = model
        self._mutex = threading.Lock()
        """Guards the rows (held briefly: never while embedding)."""
        self._embedding = threading.Lock()
        """Held by the one thread bringing the rows in step (see `sync`)."""
        self.paths: list[str] = []
        self.digests: list[str] = []
        self.matrix: Any = None
        self._row: dict[str, int] = {}
        self._synced: object = None
        """The manifest state last brought in step with (see `sync`)."""
        self._stamp: tuple[int, int] | None = None
        self._centre: tuple[Any, Any, Any] | None = None
        self._load()

    def _load(self) -> None:
        import numpy as np

        meta_path, data_path = self.dir / "vectors.json", self.dir / "vectors.npy"
        try:
            st = meta_path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp == self._stamp:
                return
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            # Memory-mapped: a process that asks one question reads only what it needs.
            matrix = np.load(data_path, mmap_mode="r", allow_pickle=False)
            paths, digests = list(meta["paths"]), list(meta["digests"])
            if meta.get("model") != self.model.ident or len(paths) != matrix.shape[0]:
                raise ValueError("another model's vectors")
        except (OSError, ValueError, KeyError, TypeError) as e:
            log.debug("vectors cache at %s not used: %s", self.dir, e)
            self.paths, self.digests, self.matrix, self._row = [], [], None, {}
            self._stamp = None
            return
        self.paths, self.digests = paths, digests
        self.matrix = matrix.astype(np.float32, copy=False)
        self._row = {p: i for i, p in enumerate(paths)}
        self._stamp = stamp

    def sync(
        self,
        state: object,
        digests: Mapping[str, str],
        text: Callable[[str], str | None],
        budget: float | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> int:
        """Bring the rows in step with `digests` (path → content digest, as the search index
        holds them): embed `text(path)` for new or changed paths, drop gone ones. `state`
        identifies `digests` (e.g. the manifest's stamp): the same state again costs nothing.
        While another thread of this process is embedding, returns at once: a search then
        reads the rows there are. With `budget` (seconds), an encoder stops after the small
        chunk that went past it, and the next call goes on from there: a search stays quick
        while a large store's first pass is spread over searches (and the server's watcher).
        `progress(done, total)` is told after each chunk. Returns how many texts were
        embedded."""
        if not self._embedding.acquire(blocking=False):
            return 0
        try:
            with self._mutex:
                if state is not None and state == self._synced:
                    return 0
                self._load()  # another process may have brought it further
                held = dict(zip(self.paths, self.digests, strict=True))
            changed = [p for p, d in digests.items() if held.get(p) != d]
            gone = {p for p in held if p not in digests}
            static = not isinstance(self.model.embedder, Transformer)
            # An encoder's first pass over a large store takes many minutes: it is embedded
            # in chunks outside the mutex, so searches meanwhile read the rows so far, and
            # each chunk is kept on disk as it is done.
            chunk = len(changed) if static else CHUNK if budget is None else BUDGET_CHUNK
            deadline = None if budget is None else time.monotonic() + budget
            done = 0
            for start in range(0, len(changed), max(chunk, 1)):
                part = changed[start : start + chunk]
                texts: list[str] = []
                kept_new: list[tuple[str, str]] = []
                for path in part:
                    found = text(path)
                    if found is not None:
                        texts.append(found[:TEXT_MAX])
                        kept_new.append((path, digests[path]))
                fresh = self.model.vectors(texts) if texts else None
                self._merge(set(part) | gone, kept_new, fresh, static, len(texts) + len(gone))
                gone = set()
                done += len(texts)
                if progress is not None:
                    progress(min(start + chunk, len(changed)), len(changed))
                if deadline is not None and time.monotonic() > deadline:
                    if start + chunk < len(changed):
                        return done  # the rest later; the state is not marked in step

            if gone:
                self._merge(gone, [], None, static, len(gone))
            with self._mutex:
                self._synced = state
            return done
        finally:
            self._embedding.release()

    def _merge(
        self,
        drop: set[str],
        new: list[tuple[str, str]],
        fresh: Any,
        static: bool,
        count: int,
    ) -> None:
        """Replace the rows of `drop` by `new`'s (path, digest) with `fresh` rows, and keep the
        cache on disk in step (see `SAVE_ALWAYS`)."""
        import numpy as np

        with self._mutex:
            keep = [i for i, p in enumerate(self.paths) if p not in drop]
            rows: list[Any] = []
            if self.matrix is not None and keep:
                rows.append(self.matrix[keep])
            if fresh is not None and len(fresh):
                rows.append(fresh)
            paths = [self.paths[i] for i in keep] + [p for p, _ in new]
            sums = [self.digests[i] for i in keep] + [d for _, d in new]
            matrix = np.concatenate(rows, axis=0) if rows else np.zeros((0, 0), np.float32)
            self.paths, self.digests, self.matrix = paths, sums, matrix
            self._row = {p: i for i, p in enumerate(paths)}
            # For a static model, rewriting the whole matrix for a few rows costs more than
            # embedding them again: a large store's cache is written when many changed, and a
            # process that reads an older one embeds the few rows it lacks. An encoder takes a
            # tenth of a second or more per memory: what it embedded is always kept.
            if not static or len(paths) <= SAVE_ALWAYS or count >= SAVE_CHANGED:
                self._save()

    def current(self, state: object) -> bool:
        """Whether the rows were last brought in step with this manifest `state`."""
        return state is not None and state == self._synced

    def clear(self) -> None:
        """Forget every row (a rebuild embeds everything again)."""
        with self._mutex:
            self.paths, self.digests, self.matrix, self._row = [], [], None, {}
            self._synced, self._stamp = None, None
            for name in ("vectors.json", "vectors.npy"):
                (self.dir / name).unlink(missing_ok=True)

    def _save(self) -> None:
        import numpy as np

        self.dir.mkdir(parents=True, exist_ok=True)
        tag = f"{os.getpid()}.{threading.get_ident()}"
        data_tmp = self.dir / f".vectors.{tag}.npy"
        meta_tmp = self.dir / f".vectors.{tag}.json"
        try:
            with open(data_tmp, "wb") as f:
                np.save(f, self.matrix, allow_pickle=False)
            meta = {"model": self.model.ident, "paths": self.paths, "digests": self.digests}
            meta_tmp.write_text(json.dumps(meta, separators=(",", ":")), encoding="utf-8")
            # The matrix first: a reader takes the JSON's row count as the check that both
            # files belong together.
            os.replace(data_tmp, self.dir / "vectors.npy")
            os.replace(meta_tmp, self.dir / "vectors.json")
            st = (self.dir / "vectors.json").stat()
            self._stamp = (st.st_mtime_ns, st.st_size)
        except OSError as e:
            log.warning("cannot keep the vectors cache in %s: %s", self.dir, e)
            data_tmp.unlink(missing_ok=True)
            meta_tmp.unlink(missing_ok=True)

    def nearest(self, text: str, count: int) -> list[tuple[str, float]]:
        """The `count` paths whose vectors are closest to `text`'s (cosine), best first."""
        import numpy as np

        with self._mutex:
            matrix, paths = self.matrix, self.paths
        if matrix is None or not len(paths) or count < 1:
            return []
        query = self.model.vectors([text])[0]
        if not query.any():
            return []  # no word of the query is known to the model
        if self.model.centre and len(paths) > 1:
            centred, mean = self._centred()
            query = query - mean
            query = query / (np.linalg.norm(query) or 1.0)
            scores = centred @ query
        else:
            scores = matrix @ query
        if count < len(scores):
            top = np.argpartition(-scores, count - 1)[:count]
        else:
            top = np.arange(len(scores))
        order = top[np.lexsort((top, -scores[top]))]
        return [(paths[i], round(float(scores[i]), 4)) for i in order]

    def _centred(self) -> tuple[Any, Any]:
        """The rows less their mean, each scaled to unit length again, and the mean (worked out
        once per version of the matrix)."""
        import numpy as np

        matrix = self.matrix
        if self._centre is None or self._centre[0] is not matrix:
            mean = matrix.mean(axis=0)
            rows = matrix - mean
            norms = np.linalg.norm(rows, axis=1, keepdims=True)
            norms[norms == 0] = 1.0
            self._centre = (matrix, rows / norms, mean)
        return self._centre[1], self._centre[2]

    def __len__(self) -> int:
        return len(self.paths)


def memory_text(name: str, description: str, tags: Sequence[str], body: str) -> str:
    """What of a memory is embedded: its name's words, description, tags and body."""
    return "\n".join(
        part for part in (name.replace("-", " "), description, " ".join(tags), body) if part
    )
