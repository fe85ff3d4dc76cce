"""Explanations (models/explain.py) and the neighbour index (models/neighbors.py): exact linear terms, the
linear member of an ensemble, occlusion for other models; and the service's /explain, page and /parse_dump."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.decomposition import TruncatedSVD
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import ComplementNB
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from papertrack.features.text import tfidf
from papertrack.models.artifact import TrackPredictor
from papertrack.models.card import ModelCard
from papertrack.models.ensemble import WeightedEnsemble
from papertrack.models.estimators import TemperatureScaled, TextClassifier
from papertrack.models.explain import explain, explainer_for
from papertrack.models.hierarchy import LabelSpace
from papertrack.models.neighbors import NeighborIndex

TOPICS = {
    "Deep Learning · Attention Mechanisms": "attention transformer heads tokens sequence",
    "Reinforcement Learning · Offline": "policy reward offline agent value",
    "Theory · Optimization": "convergence gradient convex rate bound",
}


def corpus(n_per_label: int = 30, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    filler = "we study a method and show results on several benchmarks with strong baselines".split()
    texts, labels = [], []
    for label, words in TOPICS.items():
        vocab = words.split()
        for _ in range(n_per_label):
            chosen = list(rng.choice(vocab, 3)) + list(rng.choice(filler, 6))
            rng.shuffle(chosen)
            texts.append(" ".join(chosen).capitalize() + ".")
            labels.append(label)
    return texts, labels


def predictor_of(classifier_factory, name: str = "toy") -> tuple[TrackPredictor, list[str], list[str]]:
    texts, labels = corpus()
    space = LabelSpace.from_labels(labels)
    classifier = classifier_factory(space.n_labels).fit(texts, space.encode(labels))
    card = ModelCard(
        candidate=name, family="toy", data_digest="d", run_id="r", n_labels=space.n_labels, n_areas=len(space.areas)
    )
    index = NeighborIndex.build(texts, [f"id{i}" for i in range(len(texts))], [None] * len(texts), labels)
    return TrackPredictor(classifier, space, card, neighbors=index), texts, labels


def logreg(n):
    return TextClassifier(tfidf("word"), LogisticRegression(C=10, max_iter=300), n)


ABSTRACT = "A transformer with sparse attention heads over long token sequences; attention is all we need."


@pytest.mark.parametrize(
    "factory,family",
    [
        (logreg, "logreg"),
        (lambda n: TextClassifier(tfidf("word"), TemperatureScaled(LinearSVC(), random_state=0), n), "svm"),
        (lambda n: TextClassifier(tfidf("word"), TemperatureScaled(ComplementNB(alpha=0.3), random_state=0), n), "cnb"),
        (lambda n: TextClassifier(tfidf("union"), LogisticRegression(C=10, max_iter=300), n), "union"),
    ],
)
def test_linear_terms_are_coefficient_times_tfidf(factory, family):
    predictor, _, _ = predictor_of(factory)
    result = explain(predictor, ABSTRACT, top_k=3, n_terms=50)
    assert result["method"]["kind"] == "exact-linear"
    top = result["tracks"][0]["label"]
    assert top == "Deep Learning · Attention Mechanisms"
    terms = {t["term"]: t for t in result["explanations"][0]["terms"]}
    assert "attention" in terms and "transformer" in terms
    # recompute each weight from the fitted model itself
    model = predictor.classifier
    row = model.features_.transform([ABSTRACT]).toarray()[0]
    names = list(model.features_.get_feature_names_out())
    clf = model.classifier_
    scale = 1.0
    if isinstance(clf, TemperatureScaled):
        scale, clf = 1 / clf.temperature_, clf.estimator_
    weights = clf.coef_ if hasattr(clf, "coef_") else clf.feature_log_prob_ - clf.feature_log_prob_.mean(axis=0)
    label = predictor.space.labels.index(top)
    for name, term in terms.items():
        column = next(i for i, n in enumerate(names) if n.split("__", 1)[-1] == name and row[i] > 0)
        assert term["weight"] == pytest.approx(weights[label, column] * row[column] * scale, abs=1e-4)
    weights_sorted = [t["weight"] for t in result["explanations"][0]["terms"]]
    assert weights_sorted == sorted(weights_sorted, reverse=True) and min(weights_sorted) > 0
    # spans point at the words in the abstract
    for span in terms["attention"]["spans"]:
        assert ABSTRACT[span[0] : span[1]].lower() == "attention"
    assert len(terms["attention"]["spans"]) == 2
    assert len(result["explanations"]) == 3


def test_ensemble_uses_its_linear_member_and_says_so():
    def build(n):
        return WeightedEnsemble(
            [
                ("tfidf-word-logreg", logreg(n), 0.4),
                (
                    "svd-logreg",
                    TextClassifier(
                        make_pipeline(tfidf("word"), TruncatedSVD(5, random_state=0)),
                        LogisticRegression(max_iter=300),
                        n,
                    ),
                    0.6,
                ),
            ],
            n,
        )

    predictor, _, _ = predictor_of(build, "ens")
    result = explain(predictor, ABSTRACT)
    assert result["method"]["kind"] == "linear-member"
    assert "tfidf-word-logreg" in result["method"]["detail"]
    member = predictor.classifier.members_[0][1]  # the fitted logistic regression member
    assert explainer_for(predictor).linear.features is member.features_
    assert "attention" in [t["term"] for t in result["explanations"][0]["terms"]]


def test_other_models_are_explained_by_occlusion():
    def build(n):
        return TextClassifier(
            make_pipeline(tfidf("word"), TruncatedSVD(6, random_state=0)), LogisticRegression(max_iter=500), n
        )

    predictor, _, _ = predictor_of(build, "svd")
    result = explain(predictor, ABSTRACT, top_k=2, n_terms=5)
    assert result["method"]["kind"] == "occlusion"
    top = predictor.space.labels.index(result["tracks"][0]["label"])
    base = predictor.predict_proba([ABSTRACT])[0, top]
    terms = result["explanations"][0]["terms"]
    assert terms
    for term in terms:  # the weight is the real probability drop without the word
        without = " ".join(re.sub(rf"(?i)\b{term['term']}\b", " ", ABSTRACT).split())
        assert term["weight"] == pytest.approx(base - predictor.predict_proba([without])[0, top], abs=1e-4)
        assert all(ABSTRACT[a:b].lower() == term["term"] for a, b in term["spans"])


def test_neighbours_find_the_training_abstract_itself():
    predictor, texts, labels = predictor_of(logreg)
    for i in (0, 35, 70):
        found = predictor.neighbors.query(texts[i], k=3)
        assert found[0]["similarity"] >= found[1]["similarity"] >= found[2]["similarity"]
        assert texts.index(texts[i]) in [int(n["id"][2:]) for n in found if n["similarity"] == found[0]["similarity"]]
        assert found[0]["label"] == labels[i]
    # the query vector is exactly the vectorizer's transform
    columns, values = predictor.neighbors.vector(ABSTRACT + " Attention, attention!")
    expected = predictor.neighbors.vectorizer.transform([ABSTRACT + " Attention, attention!"]).toarray()[0]
    dense = np.zeros_like(expected)
    dense[columns] = values
    assert np.allclose(dense, expected, atol=1e-6) and len(columns) == np.count_nonzero(expected)
    result = explain(predictor, ABSTRACT, n_neighbors=4)
    assert len(result["neighbors"]) == 4
    assert result["neighbors"][0]["label"] == "Deep Learning · Attention Mechanisms"
    assert explain(predictor, ABSTRACT, n_neighbors=0)["neighbors"] == []


def test_the_trained_artifact_carries_a_compact_neighbour_index(trained):
    import pickle

    from papertrack import store
    from papertrack.models.loading import load_predictor

    with store.using(trained["store"]):
        predictor, _ = load_predictor(trained["model_uri"])
    records = [json.loads(line) for line in open(trained["data"], encoding="utf-8")]
    from papertrack.training.dataset import load_dataset

    assert len(predictor.neighbors) == len(load_dataset([trained["data"]])[0])  # every kept record (1 duplicate)
    found = predictor.neighbors.query(records[3]["abstract"], k=1)[0]
    assert found["id"] == records[3]["id"] and found["label"] == records[3]["label"]
    assert found["title"] == records[3]["title"]
    stored = pickle.dumps(predictor.neighbors, protocol=5)  # the index as the artifact stores it
    assert 0 < len(stored) < 2_000_000


# --------------------------------------------------------------------------- the service (over HTTP)


class Client:
    """httpx against the running service, with the TestClient-like calls these tests make."""

    def __init__(self, url: str):
        import httpx

        self.http = httpx.Client(base_url=url, timeout=60)

    def get(self, path):
        return self.http.get(path)

    def post(self, path, **kwargs):
        return self.http.post(path, **kwargs)


@pytest.fixture(scope="module")
def client(server):
    c = Client(server["url"])
    yield c
    c.http.close()


REAL = (
    "We propose a sparse attention mechanism for transformers that reduces the quadratic cost of "
    "self-attention on long sequences while matching dense attention on language modeling benchmarks."
)


@pytest.mark.slow
def test_explain_endpoint(client):
    predicted = client.post("/predict", json={"abstract": REAL, "top_k": 3}).json()
    assert {"prediction_set", "confident"} <= set(predicted)
    response = client.post("/explain", json={"abstract": REAL, "top_k": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["tracks"] == predicted["tracks"] and body["prediction_set"] == predicted["prediction_set"]
    assert body["method"]["kind"] in ("exact-linear", "linear-member", "occlusion")
    assert [e["label"] for e in body["explanations"]] == [t["label"] for t in body["tracks"]]
    assert body["explanations"][0]["terms"], body
    assert len(body["neighbors"]) == 5 and body["model"]["name"] == "papertrack"
    for bad, where in (
        ({"abstract": ""}, "abstract"),
        ({"abstract": "x" * 30_000}, "abstract"),
        ({"abstract": "ok", "top_k": 10_000}, "top_k"),
        ({"abstract": "ok", "neighbours": 3}, "neighbours"),
    ):
        response = client.post("/explain", json=bad)
        assert response.status_code == 400 and where in response.json()["error"], response.text


@pytest.mark.slow
def test_page_docs_and_static_files(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert 'id="abstract"' in page.text and "/page/page.js" in page.text
    links = re.findall(r'(?:src|href)="([^"]*)"', page.text)
    # same-origin paths, fragments, and the empty inline favicon (data:,) that keeps the browser from asking for one
    assert links and all(link.startswith(("/", "#", "data:")) and not link.startswith("//") for link in links), links
    for asset in ("/page/page.js", "/page/page.css"):
        assert client.get(asset).status_code == 200
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert "/explain" in client.get("/docs.json").json()["paths"]


@pytest.mark.slow
def test_parse_dump_reads_every_layout_with_the_ingest_messages(client, data_dir):
    dump = (data_dir / "samples" / "labeled_dump.txt").read_bytes()
    body = client.post(
        "/parse_dump?filename=labeled_dump.txt", content=dump, headers={"Content-Type": "application/octet-stream"}
    ).json()
    assert body["format"] == "text-labeled" and len(body["papers"]) > 5
    assert all(p["abstract"] and p["label"] for p in body["papers"])
    jsonl = b'{"abstract": "one"}\n{"abstract": ""}\n{"abstract": "three", "title": "T"}\n'
    body = client.post("/parse_dump?filename=d.jsonl", content=jsonl).json()
    assert [p["abstract"] for p in body["papers"]] == ["one", "three"]
    assert body["errors"][0]["line"] == 2 and body["errors"][0]["kind"] == "empty"
    cases = [
        ("d.csv", b"title,text\nA,some text\n", "d.csv:1: "),
        ("d.bin", bytes(range(256)) * 4, "d.bin"),
        ("e.jsonl", b"", "e.jsonl"),
    ]
    for name, content, prefix in cases:
        response = client.post(f"/parse_dump?filename={name}", content=content)
        assert response.status_code == 400, response.text
        assert response.json()["error"].startswith(prefix), response.json()
    assert "abstract" in client.post("/parse_dump?filename=d.csv", content=cases[0][1]).json()["error"]
