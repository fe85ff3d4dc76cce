"""Accuracy on the temporal holdout: train on the 2024 labeled papers, test on ICLR 2025.

    # every recipe, three seeds, pinned to one core (the figures of benchmarks/TEMPORAL_RESULTS.md)
    taskset -c 1 .venv/bin/python benchmarks/bench_temporal.py --seeds 42 7 123

    # a subset (the baseline recipe is always run: the paired intervals are against it)
    taskset -c 1 .venv/bin/python benchmarks/bench_temporal.py --only ensemble-tfidf lr-prior-em2025

Training side: ``iclr2024_topics.jsonl`` + ``icml2024_topics.jsonl`` (2024's "Applications · Genetics,
Cell Biology, etc" renamed to 2025's "Applications · Genetics, Cell Biology, Health, etc"), plus, for the
recipes that use unlabeled text, abstracts of the unlabeled file (ICML / NeurIPS 2025 for pseudo-labels
and prior estimation). Test side: ``iclr2025_dev_topics.jsonl``. Model text: the abstract only.

No fitted step sees a test abstract: every text that reaches a fit (vocabulary / IDF, classifiers,
ensemble weights, calibration, pseudo-labelling, prior estimation) goes through :func:`train_side`, which
asserts by ``abstract_key`` that none of them is an ICLR 2025 test abstract.

Per recipe and seed: temporal label top-3, top-1, area top-1, label macro-F1, and the predict cost
(``predict_proba`` over the test abstracts, ms per abstract, one core). Per recipe: mean ± sd over seeds
and a paired bootstrap interval (top-3 hit per test row, seeds pooled by averaging each row's hit
over seeds) against the baseline recipe. Recipes whose fit does not depend on the seed (lbfgs logistic
regression, complement NB, fixed pseudo-label thresholds) are fitted once and their figures repeated
(sd 0).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.utils.class_weight import compute_sample_weight

from papertrack.features.ingest import abstract_key
from papertrack.features.text import FEATURE_SETTINGS
from papertrack.models.catalogue import CANDIDATES
from papertrack.models.ensemble import combine, with_weights
from papertrack.models.hierarchy import LabelSpace
from papertrack.training.champion import paired_bootstrap
from papertrack.training.cv import cross_validate, fold_indices
from papertrack.training.dataset import load_dataset
from papertrack.training.ensemble_weights import select_weights
from papertrack.training.scoring import evaluate

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("PAPERTRACK_DATA_DIR", REPO.parent / "shared" / "data"))
TRAIN_FILES = ("iclr2024_topics.jsonl", "icml2024_topics.jsonl")
TEST_FILE = "iclr2025_dev_topics.jsonl"
UNLABELED_FILE = "ml_abstracts_unlabeled.jsonl.gz"
RENAME = {"Applications · Genetics, Cell Biology, etc": "Applications · Genetics, Cell Biology, Health, etc"}
BASELINE = "tfidf-word-logreg"
ENSEMBLE_MEMBERS = ("tfidf-word-logreg", "tfidf-word-svm", "tfidf-word-cnb", "tfidf-word12-cnb")
INNER_FOLDS = 3
SLOW = {"lr-union"}  # run only when named with --only: ~200 s fit, ~7 ms/abstract (over the 5 ms budget)
METRICS = ("label_top3", "label_top1", "area_top1", "label_macro_f1")


# --------------------------------------------------------------------------- data and the leak guard


@dataclass
class Context:
    texts: list[str]  # training side (2024 labeled abstracts)
    y: np.ndarray
    origin: np.ndarray  # "ICLR 2024" / "ICML 2024" per training row
    space: LabelSpace
    pool2025: list[str]  # unlabeled ICML 2025 + NeurIPS 2025 abstracts (test abstracts excluded)
    recent: list[str]  # unlabeled ICML/NeurIPS 2023-2025 + ICLR 2023-2024 abstracts (test excluded)
    test_keys: frozenset[str] = field(repr=False)
    cache: dict = field(default_factory=dict, repr=False)

    def train_side(self, texts: list[str]) -> list[str]:
        """``texts`` unchanged, after asserting that none of them is a test abstract (by abstract key)."""
        leaked = sum(abstract_key(t) in self.test_keys for t in texts)
        assert leaked == 0, f"{leaked} test (ICLR 2025) abstract(s) reached a fitted step"
        return texts


def load_context(data: Path) -> tuple[Context, list[str], np.ndarray]:
    train, _ = load_dataset([str(data / f) for f in TRAIN_FILES], None, labeled=True)
    test, _ = load_dataset([str(data / TEST_FILE)], None, labeled=True)
    labels = [RENAME.get(r.label, r.label) for r in train]
    space = LabelSpace.from_labels(labels)
    test_keys = frozenset(abstract_key(r.abstract) for r in test)
    train_keys = {abstract_key(r.abstract) for r in train}
    assert not (train_keys & test_keys), "a test abstract is also a training abstract"
    pool2025, recent, seen = [], [], set(test_keys)
    with gzip.open(data / UNLABELED_FILE, "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            abstract = (d.get("abstract") or "").strip()
            key = abstract_key(abstract)
            if not abstract or key in seen:  # test abstracts (none expected) and duplicates out
                continue
            seen.add(key)
            venue, year = d.get("venue"), int(d.get("year") or 0)
            if year == 2025 and venue in ("ICML", "NeurIPS"):
                pool2025.append(abstract)
            if year >= 2023 and key not in train_keys:
                recent.append(abstract)
    ctx = Context(
        [r.abstract for r in train],
        space.encode(labels),
        np.array([r.origin for r in train]),
        space,
        pool2025,
        recent,
        test_keys,
    )
    ctx.train_side(ctx.texts)
    ctx.train_side(ctx.pool2025)
    ctx.train_side(ctx.recent)
    y_test = space.encode([r.label for r in test])  # every 2025 label is in the (renamed) 2024 space
    return ctx, [r.abstract for r in test], y_test


# --------------------------------------------------------------------------- model pieces


class LinearText:
    """TF-IDF + a linear classifier, with optional sample weights and extra texts for the vocabulary/IDF."""

    def __init__(self, vectorizer: dict, classifier, n_labels: int):
        self.vectorizer, self.classifier, self.n_labels = vectorizer, classifier, n_labels

    def fit(self, ctx: Context, texts, y, sample_weight=None, vocab_texts=()):
        self.vec_ = TfidfVectorizer(**self.vectorizer).fit(ctx.train_side(list(texts) + list(vocab_texts)))
        X = self.vec_.transform(ctx.train_side(list(texts)))
        self.clf_ = clone(self.classifier).fit(X, y, sample_weight=sample_weight)
        return self

    def predict_proba(self, texts):
        return self.proba_X(self.vec_.transform(texts))

    def proba_X(self, X):
        full = np.zeros((X.shape[0], self.n_labels))
        full[:, self.clf_.classes_] = self.clf_.predict_proba(X)
        return full


class Adjusted:
    """A fitted model whose probabilities are multiplied by per-label factors (then renormalised)."""

    def __init__(self, model, factors: np.ndarray):
        self.model, self.factors = model, factors

    def predict_proba(self, texts):
        p = self.model.predict_proba(texts) * self.factors
        return p / p.sum(axis=1, keepdims=True)


class AreaMatched:
    """Label probabilities re-weighted so their area roll-up moves to an area classifier's (power b)."""

    def __init__(self, label_model, area_model, space: LabelSpace, b: float):
        self.label_model, self.area_model, self.space, self.b = label_model, area_model, space, b

    def predict_proba(self, texts):
        p = self.label_model.predict_proba(texts)
        rollup = self.space.area_proba(p)
        pa = self.area_model.predict_proba(texts)
        ratio = (np.clip(pa, 1e-9, None) / np.clip(rollup, 1e-9, None)) ** self.b
        out = p * ratio[:, self.space.label_area]
        return out / out.sum(axis=1, keepdims=True)


def logreg(C=10.0, balanced=True):
    return LogisticRegression(C=C, class_weight="balanced" if balanced else None, max_iter=300)


def em_prior(proba: np.ndarray, source_prior: np.ndarray, iters: int = 10) -> np.ndarray:
    """Saerens et al. (2002) EM estimate of the label prior of the texts behind ``proba`` (posteriors under
    ``source_prior``); a fixed, small number of iterations (run to convergence it collapses on 85 labels)."""
    prior = source_prior.copy()
    for _ in range(iters):
        adj = proba * (prior / source_prior)
        adj /= adj.sum(axis=1, keepdims=True)
        prior = adj.mean(axis=0)
    return prior


def fit_ensemble(ctx: Context, seed: int, texts=None, y=None):
    """``ensemble-tfidf`` as the sweep builds it: weights by greedy selection (geometric mean) on the
    training side's inner 3-fold out-of-fold probabilities, then every member with weight > 0 refit."""
    texts = ctx.train_side(list(ctx.texts if texts is None else texts))
    y = ctx.y if y is None else y
    candidate = CANDIDATES["ensemble-tfidf"]
    assert tuple(candidate.members) == ENSEMBLE_MEMBERS, candidate.members
    split = fold_indices(y, ctx.space, INNER_FOLDS, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oof = [
            cross_validate(
                lambda m=m: CANDIDATES[m].build(ctx.space.n_labels, seed), texts, y, ctx.space, split
            ).oof_proba
            for m in ENSEMBLE_MEMBERS
        ]
        weights = select_weights(
            oof, y, rule=candidate.ensemble.rule, steps=candidate.ensemble.steps, objective=candidate.ensemble.objective
        )
        model = with_weights(candidate, weights).build(ctx.space.n_labels, seed).fit(texts, y)
    model.chosen_weights = dict(zip(ENSEMBLE_MEMBERS, np.round(weights, 3).tolist()))
    return model


def base(ctx: Context, name: str, seed: int, fit: Callable[[], object], seeded: bool):
    """A fitted model, fitted once per (name, seed) — once overall when its fit does not use the seed."""
    key = (name, seed if seeded else None)
    if key not in ctx.cache:
        ctx.cache[key] = fit()
    return ctx.cache[key]


# --------------------------------------------------------------------------- recipes


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    fit: Callable[[Context, int], object]  # -> fitted model with predict_proba(texts)
    seeded: bool = False  # does the fit depend on the seed


RECIPES: dict[str, Recipe] = {}


def recipe(name: str, description: str, seeded: bool = False):
    def register(fn):
        RECIPES[name] = Recipe(name, description, fn, seeded)
        return fn

    return register


WORD = FEATURE_SETTINGS["word"]
n_of = lambda ctx: ctx.space.n_labels  # noqa: E731


def lr_variant(ctx, vec=None, C=10.0, balanced=True, sample_weight=None, vocab_texts=()):
    return LinearText(vec or WORD, logreg(C, balanced), n_of(ctx)).fit(
        ctx, ctx.texts, ctx.y, sample_weight, vocab_texts
    )


@recipe(BASELINE, "catalogue tfidf-word-logreg (word TF-IDF, LR C=10 balanced)")
def _baseline(ctx, seed):
    return base(
        ctx,
        BASELINE,
        seed,
        lambda: CANDIDATES[BASELINE].build(n_of(ctx), seed).fit(ctx.train_side(ctx.texts), ctx.y),
        seeded=False,
    )


@recipe(
    "ensemble-tfidf",
    "catalogue ensemble-tfidf: 4 TF-IDF singles, geometric mean, weights by inner 3-fold CV",
    seeded=True,
)
def _ensemble(ctx, seed):
    return base(ctx, "ensemble-tfidf", seed, lambda: fit_ensemble(ctx, seed), seeded=True)


@recipe("lr-unbalanced", "word LR C=10, no class weights")
def _unbalanced(ctx, seed):
    return lr_variant(ctx, balanced=False)


@recipe("lr-C3", "word LR C=3 balanced")
def _c3(ctx, seed):
    return lr_variant(ctx, C=3.0)


@recipe("lr-C30", "word LR C=30 balanced")
def _c30(ctx, seed):
    return lr_variant(ctx, C=30.0)


@recipe("lr-word12", "word 1-2-gram TF-IDF (max 100k features) + LR C=10 balanced")
def _word12(ctx, seed):
    return lr_variant(ctx, vec=FEATURE_SETTINGS["word12"])


@recipe("lr-mindf1-maxdf05", "word TF-IDF min_df=1 max_df=0.5 + LR C=10 balanced")
def _mindf(ctx, seed):
    return lr_variant(ctx, vec={**WORD, "min_df": 1, "max_df": 0.5})


@recipe("lr-rawtf", "word TF-IDF without sublinear tf + LR C=10 balanced")
def _rawtf(ctx, seed):
    return lr_variant(ctx, vec={**WORD, "sublinear_tf": False})


def venue_weights(ctx, iclr: float):
    return np.where(ctx.origin == "ICLR 2024", iclr, 1.0)


@recipe("lr-venue-iclr2", "word LR C=10 balanced, ICLR 2024 rows weight 2 (ICML 1)")
def _venue2(ctx, seed):
    return lr_variant(ctx, sample_weight=venue_weights(ctx, 2.0))


@recipe("lr-venue-iclr3", "word LR C=10 balanced, ICLR 2024 rows weight 3 (ICML 1)")
def _venue3(ctx, seed):
    return lr_variant(ctx, sample_weight=venue_weights(ctx, 3.0))


def train_prior(ctx, smoothing=1.0):
    counts = np.bincount(ctx.y, minlength=n_of(ctx)) + smoothing
    return counts / counts.sum()


@recipe("lr-prior-train0.5", "baseline LR x (2024 label frequency)^0.5: half-undoes the class balancing")
def _prior_train(ctx, seed):
    return Adjusted(_baseline(ctx, seed), train_prior(ctx) ** 0.5)


def em2025_factors(ctx, model, a: float, iters: int = 10):
    """(EM prior on the unlabeled ICML/NeurIPS 2025 abstracts / uniform)^a for a class-balanced model."""
    key = ("em2025", id(model), iters)
    if key not in ctx.cache:
        proba = model.predict_proba(ctx.train_side(ctx.pool2025))
        uniform = np.full(proba.shape[1], 1.0 / proba.shape[1])
        ctx.cache[key] = em_prior(proba, uniform, iters) / uniform
    return ctx.cache[key] ** a


@recipe("lr-prior-em2025-0.5", "baseline LR x (EM prior of unlabeled ICML+NeurIPS 2025 abstracts / uniform)^0.5")
def _prior_em05(ctx, seed):
    m = _baseline(ctx, seed)
    return Adjusted(m, em2025_factors(ctx, m, 0.5))


@recipe("lr-prior-em2025-1", "baseline LR x (EM prior of unlabeled ICML+NeurIPS 2025 abstracts / uniform)^1")
def _prior_em1(ctx, seed):
    m = _baseline(ctx, seed)
    return Adjusted(m, em2025_factors(ctx, m, 1.0))


@recipe("lr-idf-recent", "word LR C=10 balanced, vocabulary/IDF fitted on training + unlabeled 2023-2025 abstracts")
def _idf_recent(ctx, seed):
    return lr_variant(ctx, vocab_texts=ctx.recent)


def self_trained(ctx, teacher, threshold: float, weight: float, vocab_from_pool: bool, C=10.0):
    pool = ctx.train_side(ctx.pool2025)
    proba = teacher.predict_proba(pool)
    keep = proba.max(axis=1) > threshold
    texts = ctx.texts + [t for t, k in zip(pool, keep) if k]
    y = np.concatenate([ctx.y, proba.argmax(axis=1)[keep]])
    # balanced class weights of the labeled rows, pseudo-labeled rows at ``weight`` times theirs
    sw = compute_sample_weight("balanced", y) * np.concatenate([np.ones(len(ctx.y)), np.full(keep.sum(), weight)])
    model = LinearText(WORD, LogisticRegression(C=C, max_iter=300), n_of(ctx))
    model.fit(ctx, texts, y, sw, vocab_texts=pool if vocab_from_pool else ())
    model.n_pseudo = int(keep.sum())
    return model


@recipe(
    "lr-selftrain2025",
    "word LR + pseudo-labelled ICML/NeurIPS 2025 abstracts (baseline LR teacher, "
    "conf > 0.3, weight 0.5), vocabulary/IDF fitted on training + that 2025 pool",
)
def _selftrain(ctx, seed):
    return self_trained(ctx, _baseline(ctx, seed), 0.3, 0.5, vocab_from_pool=True)


@recipe("lr-selftrain2025-all", "as lr-selftrain2025 but every pool abstract pseudo-labelled (conf > 0), weight 0.3")
def _selftrain_all(ctx, seed):
    return self_trained(ctx, _baseline(ctx, seed), 0.0, 0.3, vocab_from_pool=True)


def area_model(ctx):
    key = ("area-lr",)
    if key not in ctx.cache:
        y_area = ctx.space.area_of(ctx.y)
        ctx.cache[key] = LinearText(WORD, logreg(10.0), len(ctx.space.areas)).fit(ctx, ctx.texts, y_area)
    return ctx.cache[key]


@recipe(
    "lr-area-matched",
    "baseline LR, label probabilities re-weighted so the area roll-up matches an 8-area word LR (C=10 balanced)",
)
def _area_matched(ctx, seed):
    return AreaMatched(_baseline(ctx, seed), area_model(ctx), ctx.space, 1.0)


# ensemble-based combinations (the ensemble is fitted once per seed and shared)


@recipe("ens-prior-em2025-0.5", "ensemble-tfidf x (EM prior of unlabeled ICML+NeurIPS 2025 / uniform)^0.5", seeded=True)
def _ens_em05(ctx, seed):
    m = _ensemble(ctx, seed)
    return Adjusted(m, em2025_factors(ctx, m, 0.5))


@recipe("ens-prior-em2025-1", "ensemble-tfidf x (EM prior of unlabeled ICML+NeurIPS 2025 / uniform)^1", seeded=True)
def _ens_em1(ctx, seed):
    m = _ensemble(ctx, seed)
    return Adjusted(m, em2025_factors(ctx, m, 1.0))


@recipe("ens-area-matched", "ensemble-tfidf re-weighted to an 8-area word LR's area probabilities", seeded=True)
def _ens_area(ctx, seed):
    return AreaMatched(_ensemble(ctx, seed), area_model(ctx), ctx.space, 1.0)


@recipe(
    "lr-prior-soft2025",
    "baseline LR x (its mean probability on the unlabeled ICML+NeurIPS 2025 abstracts / "
    "its mean probability on the training abstracts): a one-step prior-shift estimate",
)
def _prior_soft(ctx, seed):
    m = _baseline(ctx, seed)
    return Adjusted(m, soft_shift(ctx, m))


def soft_shift(ctx, model):
    pool = model.predict_proba(ctx.train_side(ctx.pool2025)).mean(axis=0)
    train = model.predict_proba(ctx.train_side(ctx.texts)).mean(axis=0)
    return np.clip(pool, 1e-6, None) / np.clip(train, 1e-6, None)


@recipe("lr-selftrain2025-all-w1", "as lr-selftrain2025-all but pseudo-labelled rows at full weight (1.0)")
def _selftrain_all_w1(ctx, seed):
    return self_trained(ctx, _baseline(ctx, seed), 0.0, 1.0, vocab_from_pool=True)


@recipe("lr-selftrain2025-all-novocab", "as lr-selftrain2025-all but vocabulary/IDF from the training abstracts only")
def _selftrain_all_novocab(ctx, seed):
    return self_trained(ctx, _baseline(ctx, seed), 0.0, 0.3, vocab_from_pool=False)


def no_area_only(ctx):
    """1 for labels naming a subarea, 0 for the 8 area-only labels ("Deep Learning", ...)."""
    return np.array([0.0 if not sub else 1.0 for sub in ctx.space.subareas])


@recipe(
    "lr-no-area-only",
    "TAXONOMY ASSUMPTION: baseline LR with the 8 area-only labels never predicted (2025 "
    "has none; learnt from the test labels' taxonomy, see TEMPORAL_RESULTS.md)",
)
def _lr_no_area_only(ctx, seed):
    return Adjusted(_baseline(ctx, seed), no_area_only(ctx))


def ens_selftrained(ctx, seed):
    """ensemble-tfidf's weights (inner CV on the 2024 rows), members refit on the 2024 rows + every unlabeled
    ICML/NeurIPS 2025 abstract pseudo-labelled by the 2024 ensemble (full weight; the catalogue members take
    no sample weights), vocabulary/IDF from both."""

    def fit():
        teacher = _ensemble(ctx, seed)
        pool = ctx.train_side(ctx.pool2025)
        pseudo = teacher.predict_proba(pool).argmax(axis=1)
        weights = [teacher.chosen_weights[m] for m in ENSEMBLE_MEMBERS]
        texts = ctx.train_side(ctx.texts + pool)
        student = with_weights(CANDIDATES["ensemble-tfidf"], weights).build(n_of(ctx), seed)
        student.fit(texts, np.concatenate([ctx.y, pseudo]))
        student.chosen_weights = teacher.chosen_weights
        student.n_pseudo = len(pool)
        return student

    return base(ctx, "ens-selftrain2025", seed, fit, seeded=True)


@recipe(
    "ens-selftrain2025",
    "ensemble-tfidf (weights from the 2024 inner CV) refit on 2024 + all ICML/NeurIPS 2025 "
    "unlabeled abstracts pseudo-labelled by the 2024 ensemble",
    seeded=True,
)
def _ens_selftrain(ctx, seed):
    return ens_selftrained(ctx, seed)


@recipe("ens+lr-selftrain", "geometric mean (fixed 1:1) of ensemble-tfidf and lr-selftrain2025-all", seeded=True)
def _ens_plus_st(ctx, seed):
    st = base(ctx, "lr-selftrain2025-all", seed, lambda: _selftrain_all(ctx, seed), seeded=False)
    return Combined([_ensemble(ctx, seed), st], [0.5, 0.5])


@recipe(
    "ens-no-area-only", "TAXONOMY ASSUMPTION: ensemble-tfidf with the 8 area-only labels never predicted", seeded=True
)
def _ens_no_area_only(ctx, seed):
    return Adjusted(_ensemble(ctx, seed), no_area_only(ctx))


@recipe(
    "ens-selftrain2025-no-area-only",
    "TAXONOMY ASSUMPTION: ens-selftrain2025 with the 8 area-only labels never predicted",
    seeded=True,
)
def _ens_st_no_area_only(ctx, seed):
    return Adjusted(ens_selftrained(ctx, seed), no_area_only(ctx))


@recipe("lr-union", "catalogue tfidf-union-logreg (word + char 3-5 TF-IDF, LR C=10 balanced)")
def _union(ctx, seed):
    return CANDIDATES["tfidf-union-logreg"].build(n_of(ctx), seed).fit(ctx.train_side(ctx.texts), ctx.y)


@recipe(
    "lr-area-only-to-else",
    "TAXONOMY ASSUMPTION: word LR C=10 balanced trained with each area-only label "
    '"X" renamed "X · Everything Else" (2025 has no area-only label)',
)
def _area_only_to_else(ctx, seed):
    return LinearText(WORD, logreg(10.0), n_of(ctx)).fit(ctx, ctx.texts, area_only_to_else(ctx))


def area_only_to_else(ctx) -> np.ndarray:
    """The training labels with each area-only label "X" replaced by "X · Everything Else"."""
    labels = list(ctx.space.labels)
    target = {
        i: labels.index(f"{lab} · Everything Else")
        for i, lab in enumerate(labels)
        if not ctx.space.subareas[i] and f"{lab} · Everything Else" in labels
    }
    return np.array([target.get(int(v), int(v)) for v in ctx.y])


@recipe(
    "ens-area-only-to-else",
    "TAXONOMY ASSUMPTION: ensemble-tfidf (weights by inner 3-fold CV) trained with "
    'each area-only label "X" renamed "X · Everything Else"',
    seeded=True,
)
def _ens_area_only_to_else(ctx, seed):
    return base(
        ctx, "ens-area-only-to-else", seed, lambda: fit_ensemble(ctx, seed, y=area_only_to_else(ctx)), seeded=True
    )


class Combined:
    def __init__(self, models, weights, rule="geometric"):
        self.models, self.weights, self.rule = models, weights, rule

    def predict_proba(self, texts):
        return combine([m.predict_proba(texts) for m in self.models], self.weights, self.rule)


# --------------------------------------------------------------------------- running


def run(ctx: Context, test_texts: list[str], y_test: np.ndarray, names: list[str], seeds: list[int]) -> dict:
    results = {}
    for name in names:
        r = RECIPES[name]
        per_seed, hits, fitted_once = [], [], None
        for seed in seeds:
            if not r.seeded and fitted_once is not None:
                per_seed.append(per_seed[0])
                hits.append(hits[0])
                continue
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = r.fit(ctx, seed)
            fit_s = time.perf_counter() - started
            model.predict_proba(test_texts[:5])  # warm-up
            started = time.perf_counter()
            proba = model.predict_proba(test_texts)
            ms = 1000.0 * (time.perf_counter() - started) / len(test_texts)
            m = evaluate(proba, y_test, ctx.space)
            top3 = np.argsort(-proba, axis=1, kind="stable")[:, :3]
            hits.append(np.any(top3 == y_test[:, None], axis=1).astype(float))
            row = {k: m[k] for k in METRICS} | {"ms": ms, "fit_s": fit_s}
            extra = getattr(model, "chosen_weights", None) or getattr(
                getattr(model, "model", None), "chosen_weights", None
            )
            if getattr(model, "n_pseudo", None) is not None:
                extra = f"{model.n_pseudo} pseudo-labelled"
            print(
                f"  {name} seed {seed}: "
                + " ".join(f"{k}={v:.4f}" for k, v in row.items())
                + (f"  [{extra}]" if extra else ""),
                file=sys.stderr,
                flush=True,
            )
            per_seed.append(row)
            fitted_once = True
        results[name] = {"rows": per_seed, "hits": np.mean(hits, axis=0)}
    return results


def fmt(values: list[float], digits: int = 3) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.{digits}f} ± {sd:.{digits}f}"


def report(results: dict, seeds: list[int], n_test: int) -> None:
    print(
        f"\nTemporal holdout: train 2024 (ICLR + ICML), test ICLR 2025 ({n_test} abstracts); seeds "
        f"{' '.join(map(str, seeds))}; paired bootstrap of top-3 hits vs {BASELINE}\n"
    )
    print("| recipe | top-3 | top-1 | area top-1 | macro-F1 | ms/abstract | top-3 vs baseline [95% CI] |")
    print("|---|---|---|---|---|---:|---|")
    base_hits = results[BASELINE]["hits"]
    for name, res in results.items():
        rows = res["rows"]
        cols = [fmt([r[k] for r in rows]) for k in METRICS]
        ms = statistics.mean(r["ms"] for r in rows)
        if name == BASELINE:
            vs = "baseline"
        else:
            d, lo, hi = paired_bootstrap(res["hits"], base_hits)
            vs = f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" + (" *" if lo > 0 or hi < 0 else "")
        print(f"| {name} | " + " | ".join(cols) + f" | {ms:.2f} | {vs} |")
    if "ensemble-tfidf" in results:
        print("\nvs ensemble-tfidf (paired bootstrap of top-3 hits):")
        eh = results["ensemble-tfidf"]["hits"]
        for name, res in results.items():
            if name != "ensemble-tfidf":
                d, lo, hi = paired_bootstrap(res["hits"], eh)
                print(f"  {name}: {d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
    print("\nRecipes:")
    for name in results:
        print(f"- `{name}`: {RECIPES[name].description}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="shared data folder (default: $PAPERTRACK_DATA_DIR, else ../shared/data relative to the repository root)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 7, 123])
    parser.add_argument("--only", nargs="+", choices=sorted(RECIPES), help="recipes to run (plus the baseline)")
    args = parser.parse_args(argv)
    names = [BASELINE] + [n for n in (args.only or [r for r in RECIPES if r not in SLOW]) if n != BASELINE]
    ctx, test_texts, y_test = load_context(args.data)
    print(
        f"train {len(ctx.texts)}  test {len(test_texts)}  pool2025 {len(ctx.pool2025)}  recent {len(ctx.recent)}  "
        f"labels {ctx.space.n_labels}",
        file=sys.stderr,
        flush=True,
    )
    started = time.perf_counter()
    results = run(ctx, test_texts, y_test, names, args.seeds)
    report(results, args.seeds, len(test_texts))
    print(f"\n(total {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
