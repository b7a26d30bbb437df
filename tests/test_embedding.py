"""Semantic recall: a tiny model2vec model built here from a seeded matrix, loaded through the
real loading code, its vectors kept beside the index, and its list fused with BM25's."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import as_agent
from test_index import find, names, write_memory

from memstore import embedding, search
from memstore.errors import InvalidMemory
from memstore.store import Store

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
    assert names(store, "docker images") == ["ci-runner-disk"]  # by words, as without it
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
    from memstore import config

    (store.root / "memstore.yaml").write_text("embedding_model: [1, 2]\n", encoding="utf-8")
    with pytest.raises(InvalidMemory, match="embedding_model"):
        config.embedding_model(store.root)


def test_another_identity_sees_the_same_vectors(semantic: Store) -> None:
    seed(semantic)
    assert names(semantic, "storage full") == ["ci-runner-disk"]
    bob = as_agent(semantic, "bob")
    assert names(bob, "storage full") == ["ci-runner-disk"]


def test_doctor_says_once_how_searches_find_memories(semantic: Store, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memstore.cli import main

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
    from memstore import session, workflow

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
