"""Ensembles: a weighted average of member classifiers' probabilities over the label space.

:func:`combine` is the one rule that turns member probabilities into ensemble probabilities; the
sweep applies it to the members' out-of-fold matrices (to choose and evaluate weights, see
:mod:`papertrack.training.ensemble`) and :class:`WeightedEnsemble` applies it at prediction time,
so the cross-validated figures describe exactly what the registered model computes.

The result is a valid distribution (rows sum to 1) whenever each member's is, and the areas are
rolled up from it by :meth:`LabelSpace.area_proba` like for any other model.
"""

from __future__ import annotations

from collections.abc import Sequence

import joblib
import numpy as np
from sklearn.base import clone

from papertrack.models.estimators import TextClassifier

COMBINE_RULES = ("mean", "geometric")
EPS = 1e-6


def normalise_weights(weights: Sequence[float]) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) == 0 or np.any(w < 0) or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError(f"ensemble weights must be non-negative with a positive sum, got {list(weights)}")
    return w / w.sum()


def combine(probas: Sequence[np.ndarray], weights: Sequence[float], rule: str = "mean") -> np.ndarray:
    """Combine member probability matrices (each (n, n_labels)) into one (n, n_labels) distribution.

    ``mean``: the weighted arithmetic mean (a mixture). ``geometric``: the weighted geometric mean,
    renormalised (a product of experts; member probabilities are floored at 1e-6 first, so a member
    that gives a label 0 — e.g. a label absent from its training fold — does not veto it).
    """
    w = normalise_weights(weights)
    if len(probas) != len(w):
        raise ValueError(f"{len(probas)} probability matrices but {len(w)} weights")
    if rule == "mean":
        out = sum(wi * p for wi, p in zip(w, probas) if wi > 0)
    elif rule == "geometric":
        logp = sum(wi * np.log(np.clip(p, EPS, 1.0)) for wi, p in zip(w, probas) if wi > 0)
        logp = logp - logp.max(axis=1, keepdims=True)
        out = np.exp(logp)
    else:
        raise ValueError(f"unknown combination rule {rule!r}; known: {', '.join(COMBINE_RULES)}")
    out = np.asarray(out, dtype=np.float64)
    return out / out.sum(axis=1, keepdims=True)


def feature_signature(features) -> str:
    """Identical unfitted feature steps have the same signature (so they can be fitted once)."""
    try:
        return joblib.hash(clone(features))
    except Exception:  # noqa: BLE001 - an uncloneable step is simply never shared
        return f"id-{id(features)}"


class WeightedEnsemble:
    """Members (name, unfitted classifier, weight) whose probabilities are combined by :func:`combine`.

    ``fit`` refits every member with a positive weight on all the data given. Members whose feature
    steps are identical (e.g. two classifiers on the same TF-IDF settings, or on the same sentence
    embeddings) share one fitted feature step: it is fitted once, transforms once per prediction and
    is stored once in the pickle.
    """

    def __init__(self, members: Sequence[tuple[str, object, float]], n_labels: int, rule: str = "mean"):
        if rule not in COMBINE_RULES:
            raise ValueError(f"unknown combination rule {rule!r}; known: {', '.join(COMBINE_RULES)}")
        weights = normalise_weights([w for _, _, w in members])
        self.members = [(name, model, float(w)) for (name, model, _), w in zip(members, weights) if w > 0]
        self.n_labels = n_labels
        self.rule = rule

    @property
    def weights(self) -> dict[str, float]:
        return {name: w for name, _, w in self.members}

    def _groups(self) -> dict[str, list[int]]:
        groups: dict[str, list[int]] = {}
        for i, (_, model, _) in enumerate(self.members):
            key = feature_signature(model.features) if isinstance(model, TextClassifier) else f"own-{i}"
            groups.setdefault(key, []).append(i)
        return groups

    def fit(self, texts: Sequence[str], y: np.ndarray) -> "WeightedEnsemble":
        texts = list(texts)
        self.groups_ = []
        for key, indices in self._groups().items():
            if key.startswith("own-"):
                self.members[indices[0]][1].fit(texts, y)
                self.groups_.append((None, indices))
                continue
            features = self.members[indices[0]][1].features
            matrix = features.fit_transform(texts, y)
            for i in indices:
                model = self.members[i][1]
                model.features = features  # shared: one fitted step, one copy in the pickle
                model.classifier.fit(matrix, y)
            self.groups_.append((features, indices))
        return self

    def member_proba(self, texts: Sequence[str]) -> list[np.ndarray]:
        texts = list(texts)
        probas: list[np.ndarray | None] = [None] * len(self.members)
        for features, indices in self.groups_:
            if features is None:
                probas[indices[0]] = self.members[indices[0]][1].predict_proba(texts)
                continue
            matrix = features.transform(texts)
            for i in indices:
                probas[i] = self.members[i][1].proba_from_features(matrix)
        return probas

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        return combine(self.member_proba(texts), [w for _, _, w in self.members], self.rule)

    def text_features(self, texts: Sequence[str]):
        """Every distinct feature step's rows side by side, each block scaled to unit length times the
        square root of its members' total weight: the cosine of two rows is then the weight-averaged
        cosine of the members' own features."""
        from scipy import sparse
        from sklearn.preprocessing import normalize

        texts = list(texts)
        blocks = []
        for features, indices in self.groups_:
            model = self.members[indices[0]][1]
            if features is not None:
                matrix = features.transform(texts)
            elif hasattr(model, "text_features"):
                matrix = model.text_features(texts)
            else:
                continue
            weight = sum(self.members[i][2] for i in indices)
            blocks.append(sparse.csr_matrix(normalize(matrix)) * np.sqrt(weight))
        if not blocks:
            raise NotImplementedError("no member of this ensemble exposes its text features")
        return sparse.hstack(blocks, format="csr")


# --------------------------------------------------------------------------- ensemble candidates


def ensemble_candidate(name: str, members: Sequence[str], *, rule: str = "mean", steps: int = 20,
                       objective: str = "top3+f1", default: bool = True, description: str = ""):
    """A sweep candidate averaging the probabilities of other (registered) candidates.

    Its weights are chosen by the sweep on the members' out-of-fold probabilities (see
    :mod:`papertrack.training.ensemble`); until then ``build`` gives equal weights. ``requirements``
    is the union of the members' requirements (members must be registered first).
    """
    from papertrack.models.candidates import CANDIDATES, Candidate

    missing = [m for m in members if m not in CANDIDATES]
    if missing:
        raise ValueError(f"ensemble {name!r}: member(s) {', '.join(missing)} are not registered candidates")
    requirements = tuple(dict.fromkeys(r for m in members for r in CANDIDATES[m].requirements))
    kinds = dict.fromkeys(CANDIDATES[m].features.split("-")[0] for m in members)
    features = "ensemble(" + "+".join(kinds) + ")"
    params = {"members": ", ".join(members), "rule": rule, "weight_search": "greedy forward selection with "
              "replacement on members' out-of-fold probabilities", "steps": steps, "objective": objective,
              "evaluation": "nested: weights chosen without each outer fold", **({"description": description}
                                                                                 if description else {})}

    def build(n_labels: int, seed: int, weights: Sequence[float] | None = None) -> WeightedEnsemble:
        chosen = weights if weights is not None else [1.0] * len(members)
        return WeightedEnsemble([(m, CANDIDATES[m].build(n_labels, seed), w) for m, w in zip(members, chosen)
                                 if w > 0], n_labels, rule)

    return Candidate(name, "ensemble", features, params, build, default=default, requirements=requirements)


def is_ensemble(candidate) -> bool:
    return candidate.family == "ensemble"


def members_of(candidate) -> list[str]:
    return [m.strip() for m in candidate.params["members"].split(",")]
