"""Semantic recall: a tiny model2vec model built here from a seeded matrix, loaded through the
real loading code, its vectors kept beside the index, and its list fused with BM25's."""

from __future__ import annotations

import json
import math
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import as_agent

from memstore.errors import InvalidMemory
from memstore.search import embedding
from memstore.search import upkeep as search
from memstore.search.upkeep import Query
from memstore.storage.store import Store
from tests.search.test_index import find, names, write_memory

np = pytest.importorskip("numpy")
pytest.importorskip("model2vec")

# Words that mean the same thing share a concept's vector (plus a little seeded noise), so
# the model "knows" that a full disk and pruned docker images are one subject.
CONCEPTS = {
    "disk": "disk storage full fills space prune docker images runner runners volume",
    "secret": "secret secrets key credentials vault api password token repo",
    "cache": "phone mobile app clients stale yesterday prices catalogue cache header",
    "deploy": "deploy release friday freeze production rollout ship",
}
OTHER = "the a is it to do what should when on in we our of and keep nightly under never"


def build_model(folder: Path, dim: int = 24, seed: int = 7) -> Path:
    """A model2vec model folder (safetensors, tokenizer.json, config.json) from a seeded
    matrix: one row per word, its concept's vector plus noise."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    rng = np.random.default_rng(seed)
    vocab: dict[str, int] = {"[UNK]": 0, "[PAD]": 1}
    rows = [np.zeros(dim), np.zeros(dim)]
    for concept in CONCEPTS.values():
        centre = rng.normal(size=dim)
        for word in concept.split():
            vocab[word] = len(vocab)
            rows.append(centre + rng.normal(scale=0.1, size=dim))
    for word in OTHER.split():
        vocab.setdefault(word, len(vocab))
        rows.append(rng.normal(scale=0.01, size=dim))  # function words: near zero
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    vectors = np.asarray(rows, dtype=np.float32)
    StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True).save_pretrained(folder)
    return folder


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every connection attempt fails the test: no model hub is ever asked for anything."""
    attempts: list[object] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError(f"network use in a test: {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: refuse(None, a))  # pyright: ignore[reportArgumentType]
    yield attempts
    assert attempts == [], f"a network request was attempted: {attempts}"


@pytest.fixture
def encoder_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fusion a sentence encoder gets (`rank.DENSE_*`), for the tiny static model: it
    stands in for an encoder, whose passes these tests need not pay."""
    monkeypatch.setattr(embedding, "static", lambda spec, root: False)  # pyright: ignore[reportUnknownLambdaType]


@pytest.fixture
def semantic(store: Store, tmp_path: Path) -> Store:
    """`store` with semantic recall on: a model folder beside it, named in memstore.yaml."""
    build_model(tmp_path / "model")
    (store.root / "memstore.yaml").write_text("embedding_model: ../model\n", encoding="utf-8")
    return store


def seed(store: Store) -> None:
    write_memory(
        store,
        "ci-runner-disk",
        "CI runners: prune docker images nightly to keep /var/lib/docker under 80%",
    )
    write_memory(store, "secrets-in-vault", "Secrets live in Vault; never commit credentials")
    write_memory(
        store,
        "catalogue-cache",
        "Mobile clients cache the catalogue for 24 h; bust it with the catalogue-version header",
    )
    write_memory(store, "friday-freeze", "No deploy on Friday: the release freeze holds")


def vectors_of(store: Store) -> dict[str, str]:
    meta = json.loads((store.cache / "vectors" / "vectors.json").read_text(encoding="utf-8"))
    return dict(zip(meta["paths"], meta["digests"], strict=True))


def test_a_reworded_question_finds_the_memory_only_with_semantic_recall(
    semantic: Store, tmp_path: Path
) -> None:
    seed(semantic)
    assert names(semantic, "storage space is full") == ["ci-runner-disk"]
    assert names(semantic, "is the api key fine in the repo")[0] == "secrets-in-vault"
    plain = Store(semantic.root, agent="alice")
    (semantic.root / "memstore.yaml").unlink()
    assert names(plain, "storage space is full") == []


def test_without_a_model_setting_search_is_unchanged_and_no_vectors_are_kept(
    store: Store,
) -> None:
    seed(store)
    assert names(store, "docker images") == ["ci-runner-disk"]
    assert names(store, "storage space is full") == []
    assert not (store.cache / "vectors").exists()
    assert search.upkeep(store).semantic_off == "no embedding_model in memstore.yaml"


def test_vectors_follow_writes_hand_edits_and_removals(semantic: Store) -> None:
    semantic.add("volume-alerts", type="fact", description="Alert when a volume is 90% full")
    assert names(semantic, "storage space")[0] in ("volume-alerts", "ci-runner-disk")
    assert "fact/volume-alerts.md" in vectors_of(semantic)
    # A hand edit changes the subject: the memory is embedded again.
    path = write_memory(semantic, "volume-alerts", "Rotate the vault password yearly")
    semantic = Store(semantic.root, agent="alice")  # an in-place edit: a process that looks
    hits = names(semantic, "credentials token")
    assert hits == ["volume-alerts"]
    digest = vectors_of(semantic)["fact/volume-alerts.md"]
    assert digest == search.upkeep(semantic).index.files()[1]["fact/volume-alerts.md"]  # type: ignore[index]
    path.unlink()
    assert names(semantic, "credentials token") == []
    assert "fact/volume-alerts.md" not in vectors_of(semantic)


def test_an_agent_finds_its_own_write_by_meaning_in_its_next_recall(semantic: Store) -> None:
    seed(semantic)
    assert names(semantic, "storage full") == ["ci-runner-disk"]
    semantic.add("mobile-stale", type="fact", description="Phone app prices lag by one day")
    assert names(semantic, "stale catalogue on clients")[:2] == [
        "catalogue-cache",
        "mobile-stale",
    ] or names(semantic, "stale catalogue on clients")[:2] == ["mobile-stale", "catalogue-cache"]


def test_reindex_and_a_damaged_cache_rebuild_the_vectors(semantic: Store) -> None:
    seed(semantic)
    assert names(semantic, "storage full") == ["ci-runner-disk"]
    (semantic.cache / "vectors" / "vectors.npy").write_bytes(b"not an array")
    fresh = Store(semantic.root, agent="alice")  # another process: reads the cache from disk
    assert names(fresh, "storage full") == ["ci-runner-disk"]
    assert len(vectors_of(fresh)) == 4
    search.reindex(fresh)
    assert len(vectors_of(fresh)) == 4
    assert names(fresh, "storage full") == ["ci-runner-disk"]


def test_status_rules_hold_for_the_dense_list(semantic: Store) -> None:
    seed(semantic)
    write_memory(semantic, "a-disk-draft", "Prune docker images nightly")
    write_memory(semantic, "b-disk-confirmed", "Prune docker images nightly", status="confirmed")
    write_memory(semantic, "c-disk-old", "Prune docker images weekly", status="deprecated")
    found = names(semantic, "storage full")
    assert found.index("b-disk-confirmed") < found.index("a-disk-draft")
    assert "c-disk-old" not in found
    assert "c-disk-old" in names(semantic, "storage full", include_deprecated=True)
    assert names(semantic, "storage full", type="warning") == []


def test_explain_shows_both_engines_ranks(semantic: Store) -> None:
    seed(semantic)
    hit = find(semantic, "docker storage", explain=True)[0]
    assert hit.name == "ci-runner-disk"
    fused = [line for line in hit.explain if line.startswith("fused")]
    assert len(fused) == 1 and "bm25 #1" in fused[0] and "dense #1" in fused[0]


@pytest.mark.usefixtures("encoder_rules")
def test_a_confident_nearest_memory_leads_though_both_word_lists_prefer_another(
    semantic: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.search import rank

    seed(semantic)
    # Holds two of the question's words, and is about something else (a release).
    write_memory(semantic, "api-release-notes", "Release notes for the api live in the repo")
    question = "is the api key fine in the repo"
    hits = find(semantic, question, explain=True)
    assert hits[0].name == "secrets-in-vault"
    fused = next(line for line in hits[0].explain if line.startswith("fused"))
    assert "dense #1" in fused and "lead #1" in fused and "bm25" not in fused
    words = next(h for h in hits if h.name == "api-release-notes")
    fused = next(line for line in words.explain if line.startswith("fused"))
    assert "bm25 #1" in fused and "feedback #1" in fused
    # A deprecated memory nearer still is hidden, and does not take the lead away.
    write_memory(semantic, "old-secrets", "Secrets key credentials vault", status="deprecated")
    assert names(semantic, question)[0] == "secrets-in-vault"
    assert "old-secrets" not in names(semantic, question)
    assert "old-secrets" in names(semantic, question, include_deprecated=True)
    # Without the rule, reciprocal rank fusion puts the words' choice first.
    monkeypatch.setattr(rank, "DENSE_LEAD_MARGIN", 1e9)
    assert names(semantic, question)[0] == "api-release-notes"


def test_a_memory_the_words_found_low_is_ranked_by_meaning_like_any_other(
    semantic: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.search import rank

    seed(semantic)
    # It holds two of the question's words, about the mobile app; the vault memory holds
    # one, "vault", so the words rank it second. The meaning finds it nearest.
    write_memory(semantic, "changelog-layout", "Changelog layout for the mobile app")
    question = "vault changelog layout"
    assert names(semantic, "vault")[0] == "secrets-in-vault"  # the index is built
    by_words = [h.name for h in search.upkeep(semantic).index.search(Query(question))]
    assert by_words.index("secrets-in-vault") > 0
    # For a question the words answer poorly, no floor of its own keeps a memory the words
    # found out of the meaning's list: however high `DENSE_MIN_COSINE` is, the vault memory
    # is the dense list's first, and leads.
    monkeypatch.setattr(rank, "DENSE_MIN_COSINE", 1.01)
    hits = find(semantic, question, explain=True)
    assert hits[0].name == "secrets-in-vault"
    fused = next(line for line in hits[0].explain if line.startswith("fused"))
    assert "lead #1" in fused and "dense #1" in fused and "bm25" in fused


def test_a_question_in_a_memorys_own_words_is_not_embedded(
    semantic: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.search import rank

    seed(semantic)
    asked = questions_embedded(monkeypatch)
    # Every word is in one memory: its BM25F score is low (a short question, a small store),
    # yet the words found it; the model is not even loaded.
    assert names(semantic, "prune docker images") == ["ci-runner-disk"]
    assert asked == [] and search.upkeep(semantic).vectors is None
    # A word of it in no memory: asked in other words, so embedded.
    assert names(semantic, "prune docker storage")[0] == "ci-runner-disk"
    assert asked == ["prune docker storage"]
    monkeypatch.setattr(rank, "DENSE_COVERED", False)  # by the score alone, it is weak
    names(semantic, "prune docker images")
    assert asked[-1] == "prune docker images"


def questions_embedded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts the dense list embeds from now on (a list filled as searches ask)."""
    asked: list[str] = []
    nearest = embedding.Vectors.nearest

    def counted(self: embedding.Vectors, text: str, count: int) -> list[tuple[str, float]]:
        asked.append(text)
        return nearest(self, text, count)

    monkeypatch.setattr(embedding.Vectors, "nearest", counted)
    return asked


def seed_rare_words(store: Store) -> None:
    """`seed`'s memories, thirty alike others (so rare words score high by BM25F) and one
    memory of rare words: "gradle wrapper jars pinned lockfile hash" scores it above 24."""
    seed(store)
    for i in range(30):
        write_memory(store, f"other-{i}", f"Release note {i} for the payments service")
    write_memory(
        store,
        "ci-cache-keys",
        "Runner cache keys hash the lockfile; gradle wrapper jars are pinned per branch",
    )


@pytest.mark.usefixtures("encoder_rules")
def test_a_long_question_that_scores_high_by_words_is_embedded_unless_one_memory_holds_it(
    semantic: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.search import rank

    seed_rare_words(semantic)
    asked = questions_embedded(monkeypatch)
    # Many of its words, rare ones, are in one memory, which scores high; "storage" is in
    # none: the question is not in that memory's words, so the meaning is asked too.
    question = "gradle wrapper jars pinned lockfile hash storage"
    hit = next(h for h in find(semantic, question, explain=True) if h.name == "ci-cache-keys")
    assert float(hit.explain[0].split()[1]) >= 24  # "bm25 <score>"
    assert asked == [question]
    # By the score alone (as before), such a question was taken as found by its words.
    monkeypatch.setattr(rank, "DENSE_WEAK_BM25", 24.0)
    names(semantic, question)
    assert asked == [question]


def test_a_model_name_not_on_this_machine_is_refused_without_a_download(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(InvalidMemory, match="never downloads"):
        embedding.load("someone/some-model", store.root)
    (store.root / "memstore.yaml").write_text(
        "embedding_model: someone/some-model\n", encoding="utf-8"
    )
    seed(store)
    # "storage" is in no memory, so the model is asked for: the search goes on by words.
    assert names(store, "docker images storage") == ["ci-runner-disk"]
    assert "never downloads" in str(search.upkeep(store).semantic_off)


def test_a_model_name_in_the_machine_cache_is_loaded_from_there(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    snapshot = tmp_path / "hf" / "hub" / "models--someone--tiny" / "snapshots" / "abc123"
    build_model(snapshot)
    model = embedding.load("someone/tiny", store.root)
    assert model.folder == snapshot
    rows = model.vectors(["disk full", "vault secrets"])
    assert rows.shape == (2, 24)
    assert float(rows[0] @ rows[1]) < 0.5


def test_a_folder_without_a_model_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidMemory, match="holds no model2vec model"):
        embedding.load(str(tmp_path / "empty"), store.root)


def test_a_bad_setting_is_refused(store: Store) -> None:
    from memstore.storage import settings

    (store.root / "memstore.yaml").write_text("embedding_model: [1, 2]\n", encoding="utf-8")
    with pytest.raises(InvalidMemory, match="embedding_model"):
        settings.embedding_model(store.root)


def test_another_identity_sees_the_same_vectors(semantic: Store) -> None:
    seed(semantic)
    assert names(semantic, "storage full") == ["ci-runner-disk"]
    bob = as_agent(semantic, "bob")
    assert names(bob, "storage full") == ["ci-runner-disk"]


def test_doctor_says_once_how_searches_find_memories(semantic: Store, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memstore.faces.cli.main import main

    seed(semantic)
    done = CliRunner().invoke(main, ["--store", str(semantic.root), "doctor"])
    said = [line for line in done.output.splitlines() if line.startswith("search:")]
    assert said == ["search:     by words (BM25) and meaning: ../model (4 memories embedded)"]
    (semantic.root / "memstore.yaml").unlink()
    done = CliRunner().invoke(main, ["--store", str(semantic.root), "doctor"])
    said = [line for line in done.output.splitlines() if line.startswith("search:")]
    assert len(said) == 1 and "semantic recall is off" in said[0]


def test_check_warns_never_blocks_on_an_action_similar_in_meaning_to_a_rule(
    semantic: Store,
) -> None:
    from memstore.workflow.rules import rules as workflow
    from memstore.workflow.session import agent as session

    session.correct(
        semantic,
        "vault-only",
        description="Keep credentials in Vault only",
        severity="p0",
        applies_when=["vault password"],
    )
    as_agent(semantic, "bob").confirm(
        "vault-only", "seen it"
    )  # binding: its word match would block
    assert session.check(semantic, "change the vault password").verdict is workflow.Verdict.BLOCK
    similar = session.check(semantic, "paste the api token key")
    assert similar.verdict is workflow.Verdict.WARN
    (reason,) = similar.reasons
    assert reason.name == "vault-only" and "similar in meaning to 'vault password'" in (
        reason.message
    )
    assert session.check(semantic, "prune docker images").verdict is workflow.Verdict.ALLOW
    (semantic.root / "memstore.yaml").unlink()
    plain = Store(semantic.root, agent="alice")
    assert session.check(plain, "paste the api token key").verdict is workflow.Verdict.ALLOW


# -- a transformer encoder (a BERT folder, as sentence-transformers saves all-MiniLM-L6-v2) --

BERT = {"hidden": 16, "heads": 2, "layers": 2, "inner": 32, "positions": 64}


def build_bert(folder: Path, seed: int = 5) -> Path:
    """A tiny BERT sentence encoder's folder (config.json, tokenizer.json, model.safetensors)
    with seeded random weights, laid out as all-MiniLM-L6-v2's."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    words = " ".join(CONCEPTS.values()).split() + OTHER.split()
    vocab: dict[str, int] = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for word in words:
        vocab.setdefault(word, len(vocab))
    tokenizer = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    # As the real model's file: padding to a fixed length is switched on in it.
    tokenizer.enable_padding(length=24, pad_id=0, pad_token="[PAD]")
    folder.mkdir(parents=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    h, inner = BERT["hidden"], BERT["inner"]
    rng = np.random.default_rng(seed)

    def normal(*shape: int) -> Any:
        return rng.normal(scale=0.3, size=shape).astype(np.float32)

    w: dict[str, Any] = {
        "embeddings.word_embeddings.weight": normal(len(vocab), h),
        "embeddings.position_embeddings.weight": normal(BERT["positions"], h),
        "embeddings.token_type_embeddings.weight": normal(2, h),
        "embeddings.LayerNorm.weight": 1 + normal(h),
        "embeddings.LayerNorm.bias": normal(h),
        "embeddings.position_ids": np.arange(BERT["positions"])[None],  # int64, not a weight
    }
    for i in range(BERT["layers"]):
        p = f"encoder.layer.{i}"
        for name, out, into in (
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", inner, h),
            ("output.dense", h, inner),
        ):
            w[f"{p}.{name}.weight"], w[f"{p}.{name}.bias"] = normal(out, into), normal(out)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"{p}.{name}.weight"], w[f"{p}.{name}.bias"] = 1 + normal(h), normal(h)
    save_file(w, str(folder / "model.safetensors"))
    config = {
        "model_type": "bert",
        "hidden_size": h,
        "num_attention_heads": BERT["heads"],
        "num_hidden_layers": BERT["layers"],
        "intermediate_size": inner,
        "max_position_embeddings": BERT["positions"],
        "layer_norm_eps": 1e-12,
    }
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def reference_vector(folder: Path, text: str) -> Any:
    """BERT's forward pass and mean pooling written out plainly, one sentence, one head at a
    time, with math.erf's GELU: what the module's batched pass must agree with."""
    import math

    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    w = {k: v.astype(np.float64) for k, v in load_file(folder / "model.safetensors").items()}
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_padding()
    ids = tokenizer.encode(text).ids

    def norm(x: Any, name: str) -> Any:
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def linear(x: Any, name: str) -> Any:
        return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]

    x = np.stack(
        [
            w["embeddings.word_embeddings.weight"][t]
            + w["embeddings.position_embeddings.weight"][i]
            + w["embeddings.token_type_embeddings.weight"][0]
            for i, t in enumerate(ids)
        ]
    )
    x = norm(x, "embeddings.LayerNorm")
    size = BERT["hidden"] // BERT["heads"]
    gelu = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    for i in range(BERT["layers"]):
        p = f"encoder.layer.{i}"
        q, k, v = (linear(x, f"{p}.attention.self.{n}") for n in ("query", "key", "value"))
        heads = []
        for head in range(BERT["heads"]):
            cols = slice(head * size, (head + 1) * size)
            scores = q[:, cols] @ k[:, cols].T / math.sqrt(size)
            probs = np.exp(scores - scores.max(-1, keepdims=True))
            heads.append(probs / probs.sum(-1, keepdims=True) @ v[:, cols])
        x = norm(
            linear(np.hstack(heads), f"{p}.attention.output.dense") + x,
            f"{p}.attention.output.LayerNorm",
        )
        x = norm(
            linear(gelu(linear(x, f"{p}.intermediate.dense")), f"{p}.output.dense") + x,
            f"{p}.output.LayerNorm",
        )
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def test_a_transformer_encoder_agrees_with_a_plain_forward_pass(
    store: Store, tmp_path: Path
) -> None:
    folder = build_bert(tmp_path / "bert")
    model = embedding.load(str(folder), store.root)
    assert isinstance(model.embedder, embedding.Transformer) and not model.centre
    # Sentences of different lengths run together, padded: each must come out as alone.
    texts = ["disk full", "is it fine to keep the api key in the repo", "deploy on friday"]
    rows = model.vectors(texts)
    assert rows.shape == (3, BERT["hidden"])
    for row, text in zip(rows, texts, strict=True):
        assert float(row @ reference_vector(folder, text)) == pytest.approx(1.0, abs=1e-5)
    assert float(rows[0] @ rows[1]) < 0.999  # not one vector for everything


def test_a_folder_with_a_broken_encoder_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    folder = build_bert(tmp_path / "bert")
    (folder / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(InvalidMemory, match="cannot read the encoder"):
        embedding.load(str(folder), store.root)


def test_the_encoder_is_loaded_only_for_a_question_the_words_answer_poorly(
    store: Store, tmp_path: Path
) -> None:
    build_bert(tmp_path / "bert")
    (store.root / "memstore.yaml").write_text("embedding_model: ../bert\n", encoding="utf-8")
    seed(store)
    for i in range(30):  # other memories, so a rare word scores high by BM25F
        write_memory(store, f"other-{i}", f"Release note {i} for the payments service")
    up = search.upkeep(store)
    assert names(store, "prune docker images nightly")[0] == "ci-runner-disk"
    assert up.vectors is None  # the words found it clearly: no model loaded, nothing embedded
    assert not (store.cache / "vectors").exists()
    names(store, "storage space")  # no word of it is in any memory: the encoder is asked
    assert up.vectors is not None and len(vectors_of(store)) == 34


def test_a_search_does_not_wait_while_another_thread_embeds(semantic: Store) -> None:
    seed(semantic)
    assert names(semantic, "storage full") == ["ci-runner-disk"]
    vectors = search.upkeep(semantic).vectors
    assert vectors is not None
    semantic.add("volume-alerts", type="fact", description="Alert when a volume is 90% full")
    with vectors._embedding:  # pyright: ignore[reportPrivateUsage]  # as a watcher's long pass
        assert "volume-alerts" in names(semantic, "volume alerts")  # by words, at once
        assert "fact/volume-alerts.md" not in vectors_of(semantic)
    names(semantic, "storage full")
    assert "fact/volume-alerts.md" in vectors_of(semantic)


def encoder_store(store: Store, tmp_path: Path) -> search.Upkeep:
    """`store` with a tiny BERT encoder set, ten memories and its index built (the vectors
    follow the index's manifest), none embedded yet."""
    build_bert(tmp_path / "bert")
    (store.root / "memstore.yaml").write_text("embedding_model: ../bert\n", encoding="utf-8")
    seed(store)
    for i in range(6):
        write_memory(store, f"other-{i}", f"Release note {i} for the payments service")
    up = search.upkeep(store)
    up.catch_up(store)
    return up


def test_an_encoder_embeds_a_store_in_chunks_kept_as_they_are_done(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding, "CHUNK", 3)
    up = encoder_store(store, tmp_path)
    saved: list[int] = []
    monkeypatch.setattr(
        embedding.Vectors,
        "_save",
        lambda self: saved.append(len(self.paths)),  # pyright: ignore[reportUnknownLambdaType, reportUnknownMemberType, reportUnknownArgumentType]
    )
    assert up.embed(store) == 10
    assert saved == [3, 6, 9, 10]
    vectors = up.vectors
    assert vectors is not None and sorted(vectors.paths) == sorted(
        up.index.files()[1]  # type: ignore[index]
    )


def test_a_search_spends_at_most_its_budget_on_an_encoders_first_pass(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding, "BUDGET_CHUNK", 2)
    up = encoder_store(store, tmp_path)
    # A budget already spent: one small chunk, then the search goes on with the rows done.
    assert up.embed(store, budget=0.0) == 2
    assert len(vectors_of(store)) == 2
    assert up.embed(store, budget=0.0) == 2  # the next search carries on from there
    assert up.embed(store) == 6  # without a budget (reindex, the watcher) the rest at once
    assert len(vectors_of(store)) == 10
    assert up.embed(store, budget=0.0) == 0


def test_reindex_and_doctor_show_the_pace_of_an_encoders_pass(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from memstore.faces.cli.main import main

    monkeypatch.setattr(embedding, "CHUNK", 4)
    encoder_store(store, tmp_path)
    # A first pass over a large store takes minutes: each chunk done is said on stderr.
    done = CliRunner().invoke(main, ["--store", str(store.root), "doctor", "--no-lint"])
    assert done.exit_code == 0, done.output
    paced = [line for line in done.stderr.splitlines() if line.startswith("embedded ")]
    assert paced == [f"embedded {n}/10 memories for semantic recall" for n in (4, 8, 10)]
    assert "(10 memories embedded)" in done.stdout
    done = CliRunner().invoke(main, ["--store", str(store.root), "doctor", "--no-lint"])
    assert "embedded " not in done.stderr  # nothing left to embed: nothing said
    done = CliRunner().invoke(main, ["--store", str(store.root), "reindex"])
    assert done.exit_code == 0, done.output
    assert done.stderr.splitlines()[-1] == "embedded 10/10 memories for semantic recall"
    assert done.stdout == "reindexed 10 memories\n"


def test_a_static_model_is_trusted_on_its_own_settings(
    semantic: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.search import rank

    assert embedding.static("../model", semantic.root)  # model2vec's folder
    assert not embedding.static(str(build_bert(tmp_path / "bert")), semantic.root)
    assert not embedding.static("../nowhere", semantic.root)
    seed_rare_words(semantic)
    asked = questions_embedded(monkeypatch)
    # The words score this question high: a static model's weaker list is not asked
    # (`STATIC_WEAK_BM25`), where an encoder's would be (see the test above).
    question = "gradle wrapper jars pinned lockfile hash storage"
    assert names(semantic, question)[0] == "ci-cache-keys"
    assert asked == []
    monkeypatch.setattr(rank, "STATIC_WEAK_BM25", math.inf)
    names(semantic, question)
    assert asked == [question]


def test_an_encoder_is_known_for_one_whether_or_not_its_model_is_loaded(
    store: Store, tmp_path: Path
) -> None:
    encoder_store(store, tmp_path)
    search.reindex(store)  # loads the model (and embeds) before any search asks for it
    ranker = search.upkeep(store).dense(store, "payments release")
    assert ranker is not None and not ranker.static
    fresh = as_agent(store, "bob")  # another process: nothing loaded yet
    ranker = search.upkeep(fresh).dense(fresh, "payments release")
    assert ranker is not None and not ranker.static


def _dense_weight(hit: Any) -> float:
    """The dense list's weight, from explain's `dense #rank (share)` (reciprocal rank fusion
    shows a list's #rank weight * RRF_K / (RRF_K + rank))."""
    from memstore.search import fusion

    fused = next(line for line in hit.explain if line.startswith("fused"))
    part = next(p for p in fused.split(" + ") if "dense #" in p)
    rank = int(part.split("dense #")[1].split()[0])
    share = float(part.split("(")[1].rstrip(")"))
    return share * (fusion.RRF_K + rank) / fusion.RRF_K


@pytest.mark.usefixtures("encoder_rules")
def test_a_question_in_other_words_altogether_weighs_the_meaning_more(
    semantic: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.search import rank

    seed(semantic)
    write_memory(semantic, "api-release-notes", "Release notes for the api live in the repo")
    # The words' best match holds none of these words: the dense list weighs
    # `DENSE_WEIGHT_STRANGE`, not `DENSE_WEIGHT_WEAK`.
    hits = find(semantic, "storage space is full", explain=True)
    assert hits[0].name == "ci-runner-disk"
    assert _dense_weight(hits[0]) == pytest.approx(rank.DENSE_WEIGHT_STRANGE, abs=0.01)
    assert rank.DENSE_WEIGHT_STRANGE != rank.DENSE_WEIGHT_WEAK
    # Here it holds two of four ("api", "repo"): weak, yet not in other words altogether.
    hits = find(semantic, "is the api key fine in the repo", explain=True)
    dense = next(h for h in hits if any("dense #" in line for line in h.explain))
    assert _dense_weight(dense) == pytest.approx(rank.DENSE_WEIGHT_WEAK, abs=0.01)
    # Without the rule, the first question's list weighs as any weak question's.
    monkeypatch.setattr(rank, "DENSE_STRANGE_SHARE", 0.0)
    hits = find(semantic, "storage space is full", explain=True)
    assert _dense_weight(hits[0]) == pytest.approx(rank.DENSE_WEIGHT_WEAK, abs=0.01)


@pytest.mark.usefixtures("encoder_rules")
def test_for_a_question_in_other_words_altogether_the_words_step_aside(
    semantic: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstore.search import rank

    seed(semantic)
    # Two memories on the subject, too alike for the nearest to lead (`DENSE_LEAD_MARGIN`),
    # and one that holds a word of the question ("full"), further in meaning.
    write_memory(semantic, "runner-volumes", "Docker images fill the runner volume; prune them")
    write_memory(
        semantic, "vault-quota", "The vault volume is full: prune docker images of old secrets"
    )
    question = "storage space is full"  # the words' best match holds one word of three
    hits = find(semantic, question, explain=True)
    assert hits[0].name in {"ci-runner-disk", "runner-volumes"}
    fused = next(line for line in hits[0].explain if line.startswith("fused"))
    assert "dense #1" in fused and "lead" not in fused
    words = next(h for h in hits if h.name == "vault-quota")
    fused = next(line for line in words.explain if line.startswith("fused"))
    assert "bm25 #1" in fused and "feedback #1" in fused and "dense #3" in fused
    # Without the rule, both word lists' first place outweighs the meaning's first choice.
    monkeypatch.setattr(rank, "DENSE_STRANGE_WORDS", 1.0)
    assert names(semantic, question)[0] == "vault-quota"
