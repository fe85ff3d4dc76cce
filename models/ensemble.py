"""Ensembles: a weighted average of member classifiers' probabilities over the label space.

:func:`combine` is the one rule that turns member probabilities into ensemble probabilities; the
sweep applies it to the members' out-of-fold matrices (to choose and evaluate weights, see
:mod:`papertrack.training.ensemble_weights`) and :class:`WeightedEnsemble` applies it at prediction time,
so the cross-validated figures describe exactly what the registered model computes.

The result is a valid distribution (rows sum to 1) whenever each member's is, and the areas are
rolled up from it by :meth:`LabelSpace.area_proba` like for any other model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import joblib
import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from papertrack.models.candidates import Candidate, EnsembleSpec
from papertrack.models.embedding_candidates import needs_embeddings
from papertrack.models.estimators import TextClassifier
from papertrack.models.fast_predict import tfidf_rows

COMBINE_RULES = ("mean", "geometric")
EPS = 1e-6


def normalise_weights(weights: Sequence[float] | np.ndarray) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) == 0 or np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError(f"ensemble weights must be non-negative with a positive sum, got {list(weights)}")
    return w / w.sum()


def combine(probas: Sequence[np.ndarray], weights: Sequence[float] | np.ndarray, rule: str = "mean") -> np.ndarray:
    """Combine member probability matrices (each (n, n_labels)) into one (n, n_labels) distribution.

    ``mean``: the weighted arithmetic mean (a mixture). ``geometric``: the weighted geometric mean,
    renormalised (a product of experts; member probabilities are floored at 1e-6 first, so a member
    that gives a label 0 — e.g. a label absent from its training fold — does not veto it).
    """
    w = normalise_weights(weights)
    if len(probas) != len(w):
        raise ValueError(f"{len(probas)} probability matrices but {len(w)} weights")
    if rule == "mean":
        out = np.asarray(sum(wi * p for wi, p in zip(w, probas) if wi > 0), dtype=np.float64)
        return out / out.sum(axis=1, keepdims=True)
    if rule == "geometric":
        return combine_logs([floored_log(p) if wi > 0 else p for wi, p in zip(w, probas)], weights)
    raise ValueError(f"unknown combination rule {rule!r}; known: {', '.join(COMBINE_RULES)}")


def floored_log(proba: np.ndarray) -> np.ndarray:
    """A member's probabilities as the geometric rule reads them: floored at ``EPS``, then their log."""
    return np.log(np.clip(proba, EPS, 1.0))


def combine_logs(logs: Sequence[np.ndarray], weights: Sequence[float] | np.ndarray) -> np.ndarray:
    """The geometric rule of :func:`combine` from the members' :func:`floored_log` matrices (computed once when
    many weightings of the same members are tried: the ensemble weight search)."""
    w = normalise_weights(weights)
    logp = sum(wi * lp for wi, lp in zip(w, logs) if wi > 0)
    logp = logp - logp.max(axis=1, keepdims=True)
    out = np.asarray(np.exp(logp), dtype=np.float64)
    return out / out.sum(axis=1, keepdims=True)


def feature_signature(features) -> str:
    """Identical unfitted feature steps have the same signature (so they can be fitted once)."""
    return joblib.hash(clone(features))


def _fit_member(model, features, matrix, texts: list[str], y: np.ndarray):
    """One member fitted: on its shared feature step's rows, or (``features`` None) on the texts."""
    return model.fit(texts, y) if features is None else model.fit_from_features(features, matrix, y)


class WeightedEnsemble(ClassifierMixin, BaseEstimator):
    """Members (name, unfitted classifier, weight) whose probabilities are combined by :func:`combine`.

    A scikit-learn estimator: ``members``, ``n_labels`` and ``rule`` are kept as given (checked by
    :meth:`fit`, never rewritten), so ``sklearn.base.clone`` works. ``fit`` fits clones of every member
    with a positive weight into ``members_`` — (name, fitted classifier, normalised weight) — and
    leaves the members passed in unfitted. Members whose feature steps are identical (e.g. two
    classifiers on the same TF-IDF settings, or on the same sentence embeddings) share one fitted
    feature step: it is fitted once, transforms once per prediction and is stored once in the pickle.
    """

    def __init__(
        self, members: Sequence[tuple[str, Any, float]], n_labels: int, rule: str = "mean", n_jobs: int | None = None
    ):
        self.members = members
        self.n_labels = n_labels
        self.rule = rule
        self.n_jobs = n_jobs  # members fitted side by side in ``fit`` (joblib's convention: None is one)

    @property
    def weights(self) -> dict[str, float]:
        """Normalised weights of the members that take part (weight > 0), by name."""
        w = normalise_weights([weight for _, _, weight in self.members])
        return {name: float(wi) for (name, _, _), wi in zip(self.members, w) if wi > 0}

    def fit(self, texts: Sequence[str], y: np.ndarray) -> WeightedEnsemble:
        if self.rule not in COMBINE_RULES:
            raise ValueError(f"unknown combination rule {self.rule!r}; known: {', '.join(COMBINE_RULES)}")
        texts = list(texts)
        weights = self.weights
        active = [(name, model) for name, model, _ in self.members if name in weights]
        groups: dict[str, list[int]] = {}
        for i, (_, model) in enumerate(active):
            key = feature_signature(model.features) if isinstance(model, TextClassifier) else f"own-{i}"
            groups.setdefault(key, []).append(i)
        # A step two members share is fitted here, once, before them; a step one member uses is fitted by that
        # member, in its worker, side by side with the others (those jobs go first: they do the most)
        alone: list[tuple[int, Any, Any, Any]] = []  # (member, unfitted copy, fitted shared step or None, its rows)
        jobs: list[tuple[int, Any, Any, Any]] = []
        steps: dict[int, Any] = {}  # the shared steps, by their first member
        for key, indices in groups.items():
            if key.startswith("own-") or len(indices) == 1:
                alone.append((indices[0], clone(active[indices[0]][1]), None, None))
                continue
            features = steps[indices[0]] = clone(active[indices[0]][1].features)
            matrix = features.fit_transform(texts, y)
            jobs += [(i, clone(active[i][1]), features, matrix) for i in indices]
        jobs = alone + jobs
        fits = (delayed(_fit_member)(model, features, matrix, texts, y) for _, model, features, matrix in jobs)
        fitted: list[Any] = [None] * len(active)
        for (i, _, features, _), model in zip(jobs, Parallel(n_jobs=self.n_jobs)(fits)):
            if features is not None:  # shared: one fitted step, one copy in the pickle (a worker returns its own)
                model.features_ = features
            fitted[i] = model
        self.groups_ = [
            (None if key.startswith("own-") else steps.get(indices[0], fitted[indices[0]].features_), indices)
            for key, indices in groups.items()
        ]
        self.members_ = [(name, model, weights[name]) for (name, _), model in zip(active, fitted)]
        self.classes_ = np.arange(self.n_labels)
        return self

    def member_proba(self, texts: Sequence[str]) -> list[np.ndarray]:
        texts = list(texts)
        probas: list[np.ndarray | None] = [None] * len(self.members_)
        # the shared feature steps' rows, together: TF-IDF vectorizers with the same text settings tokenise once
        rows = iter(tfidf_rows([features for features, _ in self.groups_ if features is not None], texts))
        for features, indices in self.groups_:
            if features is None:
                probas[indices[0]] = self.members_[indices[0]][1].predict_proba(texts)
                continue
            matrix = next(rows)
            for i in indices:
                probas[i] = self.members_[i][1].proba_from_features(matrix)
        return [p for p in probas if p is not None]  # every member has answered

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return combine(self.member_proba(texts), [w for _, _, w in self.members_], self.rule)

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.predict_proba(texts).argmax(axis=1)

    def text_features(self, texts: Sequence[str]):
        """Every distinct feature step's rows side by side, each block scaled to unit length times the
        square root of its members' total weight: the cosine of two rows is then the weight-averaged
        cosine of the members' own features."""
        from scipy import sparse
        from sklearn.preprocessing import normalize

        texts = list(texts)
        blocks = []
        for features, indices in self.groups_:
            model = self.members_[indices[0]][1]
            if features is not None:
                matrix = features.transform(texts)
            elif hasattr(model, "text_features"):
                matrix = model.text_features(texts)
            else:
                continue
            weight = sum(self.members_[i][2] for i in indices)
            blocks.append(sparse.csr_matrix(normalize(matrix)) * np.sqrt(weight))
        if not blocks:
            raise NotImplementedError("no member of this ensemble exposes its text features")
        return sparse.hstack(blocks, format="csr")


# --------------------------------------------------------------------------- ensemble candidates
# Members' out-of-fold matrices exist anyway (they are candidates of the sweep), so an ensemble costs
# no extra cross-validation; the weight search leaves useless members at weight 0 and the refit only
# fits the others.
#
# ensemble-tfidf: every TF-IDF single of the default sweep (needs no torch).
# ensemble-tfidf-minilm: the three cheap word-level TF-IDF models plus the two embedding models
#   that carry weight. With all ten singles as members the greedy search overfits its folds a little
#   (nested CV: top-3 0.728, macro-F1 0.253 — below emb-minilm-logreg's 0.255); these five give
#   0.735 / 0.263, and a refit of ~10 s instead of ~30 s. See benchmarks/embeddings.md.

ENSEMBLE_TFIDF_MINILM = (
    "tfidf-word-logreg",
    "tfidf-word12-cnb",
    "tfidf-word-svm",
    "emb-minilm-logreg",
    "emb-minilm-knn",
)


def ensemble_of(
    name: str,
    members: Sequence[Candidate],
    *,
    rule: str = "mean",
    steps: int = 20,
    objective: str = "top3+f1",
    default: bool = True,
    description: str = "",
) -> Candidate:
    """A sweep candidate averaging the probabilities of the given member candidates.

    Its weights are chosen by the sweep on the members' out-of-fold probabilities (see
    :mod:`papertrack.training.ensemble_weights`); until then ``build`` gives equal weights, and
    :func:`with_weights` gives the candidate whose ``build`` uses chosen weights. ``requirements`` is
    the union of the members' requirements.
    """
    if rule not in COMBINE_RULES:
        raise ValueError(f"ensemble {name!r}: unknown combination rule {rule!r}; known: {', '.join(COMBINE_RULES)}")
    members = tuple(members)
    names = tuple(m.name for m in members)
    requirements = tuple(dict.fromkeys(r for m in members for r in m.requirements))
    kinds = dict.fromkeys(m.features.split("-")[0] for m in members)
    features = "ensemble(" + "+".join(kinds) + ")"
    params = {
        "members": ", ".join(names),
        "rule": rule,
        "weight_search": "greedy forward selection with replacement on members' out-of-fold probabilities",
        "steps": steps,
        "objective": objective,
        "evaluation": "nested: weights chosen without each outer fold",
        **({"description": description} if description else {}),
    }
    return Candidate(
        name,
        "ensemble",
        features,
        params,
        partial(_build, members, rule),
        default=default,
        requirements=requirements,
        ensemble=EnsembleSpec(names, rule, steps, objective),
        expected_ms=_expected_ms(members),
    )


def _expected_ms(members: Sequence[Candidate]) -> float:
    """Members' costs, an embedding backend counted once (members sharing it embed each abstract once)."""
    from papertrack.features.embeddings import BACKENDS

    embedding = {
        b.name: b.ms_per_abstract
        for m in members
        for b in BACKENDS.values()
        if m.features.startswith(f"embedding-{b.name}")
    }
    own = sum(
        m.expected_ms - next((ms for name, ms in embedding.items() if m.features.startswith(f"embedding-{name}")), 0.0)
        for m in members
    )
    return own + sum(embedding.values())


def _build(
    members: tuple[Candidate, ...], rule: str, n_labels: int, seed: int, weights: Sequence[float] | None = None
) -> WeightedEnsemble:
    chosen = weights if weights is not None else [1.0] * len(members)
    return WeightedEnsemble(
        [(m.name, m.build(n_labels, seed), float(w)) for m, w in zip(members, chosen) if w > 0], n_labels, rule
    )


def with_weights(candidate: Candidate, weights: Sequence[float]) -> Candidate:
    """The ensemble candidate whose build uses ``weights`` (one per member; logged as ``weights``)."""
    weights = [float(w) for w in weights]
    params = {**candidate.params, "weights": ", ".join(f"{w:g}" for w in np.round(weights, 4))}
    return dataclasses.replace(candidate, params=params, build=partial(candidate.build, weights=weights))


def ensemble_candidates(singles: Mapping[str, Candidate]) -> list[Candidate]:
    """The ensembles of the catalogue, over the given single candidates (by name)."""
    tfidf_singles = [c for c in singles.values() if c.default and c.family != "baseline" and not needs_embeddings(c)]
    return [
        ensemble_of(
            "ensemble-tfidf",
            tfidf_singles,
            rule="geometric",
            description="every TF-IDF single of the default sweep: needs no torch",
        ),
        ensemble_of(
            "ensemble-tfidf-minilm",
            [singles[m] for m in ENSEMBLE_TFIDF_MINILM],
            rule="geometric",
            description="word-level TF-IDF models and MiniLM sentence-embedding models",
        ),
    ]


def is_ensemble(candidate: Candidate) -> bool:
    return candidate.is_ensemble
