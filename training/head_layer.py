"""Heads that share the work (issue 36): a crosswalked taxonomy's "new names known" k-fold on the main taxonomy's
members.

The main taxonomy's evaluation (:func:`papertrack.training.evaluation.evaluate_candidates` with ``extra`` texts:
every other taxonomy's own papers) leaves, per single candidate, an answer in the main names for every paper any
head holds, each from models that never saw that paper: a main paper's out-of-fold answer; another paper's (a
taxonomy's own, never a main training row) the mean of the k fold models' answers.

A head's "new names known" k-fold (over its own papers, the older papers on every training side) then fits, per
fold, only a :class:`~papertrack.models.layered_head.NameLayer` — a table counted from the fold's training rows (a
main paper by its main label, a venue's own paper by its answer): no TF-IDF and no classifier fit. A fold's layer
never sees its test papers' labels, and their answers come from models that never saw them. The refit head is the
main taxonomy's fitted members and the layers counted on every row (:class:`~papertrack.models.layered_head.
LayeredHead`).

The temporal holdout is still fitted (its training side is the earlier years' papers, in the taxonomy's names: the
small fits of the head): the main members' answers mapped through a layer counted on the earlier years scored
0.538 against 0.580 fitted on NeurIPS 2025 (seed 42, BENCHMARKS.md "Heads that share the work"), below the figure
the issue keeps. Ensembles choose their known k-fold's weights as in the main taxonomy, on their members' answers;
their temporal holdout takes the main taxonomy's temporal weights (chosen on the inner folds of the same earlier
years' papers), so the temporal side has no inner folds to fit. Against weights chosen again per taxonomy (its own
inner folds: three of each head's four temporal fits), the ensemble's temporal top-3 moved by +0.0003 [-0.0037,
+0.0046] on ICML 2025 and -0.0004 [-0.0029, +0.0019] on NeurIPS 2025 (paired per paper, seeds 0-2; BENCHMARKS.md
"The venue's share of the sweep, session 16").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from papertrack.models.candidates import Candidate
from papertrack.models.layered_head import NameLayer
from papertrack.training.data import Direction, TrainingSet
from papertrack.training.evaluation import SingleFits, Split, evaluate_ensemble, sharing_features
from papertrack.training.fits import FitOutput, run_fits, run_shared_fits
from papertrack.training.results import CandidateResult


@dataclass
class SharedMembers:
    """The main taxonomy's evaluation as the heads read it: its rows, the extra texts' rows
    (by record identity) and every single candidate's result (with ``extra_proba``)."""

    main: TrainingSet
    extra_rows: dict[int, int]  # id(record) -> row of the extra texts
    results: dict[str, CandidateResult]

    @classmethod
    def extra_texts(cls, main: TrainingSet, heads: Sequence[TrainingSet]) -> tuple[list[str], dict[int, int]]:
        """The texts of every head's papers that are not main rows (each record once), and their rows by identity."""
        in_main = {id(r) for r in main.records}
        rows: dict[int, int] = {}
        texts: list[str] = []
        for data in heads:
            for record, text in zip(data.records, data.texts):
                if id(record) not in in_main and id(record) not in rows:
                    rows[id(record)] = len(texts)
                    texts.append(text)
        return texts, rows

    def can_layer(self, candidate: Candidate) -> bool:
        """A single candidate whose main result has everything a layer reads (ensemble members do)."""
        result = self.results.get(candidate.name)
        if result is None or candidate.is_ensemble or candidate.family == "baseline":
            return False
        return "cv" in result.extra_proba

    def layerable(self, candidates: Sequence[Candidate], data: TrainingSet) -> list[Candidate]:
        """The ``candidates`` a layer can evaluate in the taxonomy of ``data``: singles :meth:`can_layer` covers and
        ensembles whose members all are — none when some row of ``data`` has no shared answer (every candidate is
        then fitted)."""
        main_rows = {id(r) for r in self.main.records}
        if any(id(r) not in main_rows and id(r) not in self.extra_rows for r in data.records):
            return []
        singles = {c.name for c in candidates if self.can_layer(c)}
        return [c for c in candidates if c.name in singles or (c.is_ensemble and all(m in singles for m in c.members))]

    def temporal_weights(self, name: str) -> list[float] | None:
        """The weights candidate ``name`` (an ensemble) chose for the main taxonomy's temporal holdout; None: none."""
        result = self.results.get(name)
        later = result.temporal if result is not None else None
        return next(iter(later.weights.values())) if later is not None and later.weights else None

    def main_labels(self, data: TrainingSet) -> np.ndarray:
        """Each row's label in the main taxonomy (-1: not a main paper)."""
        rows = {id(r): i for i, r in enumerate(self.main.records)}
        return np.array([self.main.y[rows[id(r)]] if id(r) in rows else -1 for r in data.records], dtype=np.int64)

    def features(self, name: str, data: TrainingSet) -> np.ndarray:
        """Candidate ``name``'s answers in the main names for every row of ``data``."""
        result = self.results[name]
        main_rows = {id(r): i for i, r in enumerate(self.main.records)}
        out = np.zeros((len(data.y), self.main.space.n_labels))
        for i, record in enumerate(data.records):
            row = main_rows.get(id(record))
            out[i] = (
                result.cv.oof_proba[row] if row is not None else result.extra_proba["cv"][self.extra_rows[id(record)]]
            )
        return out


def evaluate_layered(
    candidates: Sequence[Candidate],
    shared: SharedMembers,
    data: TrainingSet,
    split: Split,
    temporal: Direction | None,
    seed: int,
    n_jobs: int = 1,
) -> list[CandidateResult]:
    """Every candidate in the taxonomy of ``data``: singles (each must be :meth:`SharedMembers.can_layer`) with a
    :class:`NameLayer` per fold of ``split`` over ``shared`` answers, their ``temporal`` holdout (and its inner
    folds) fitted as :func:`~papertrack.training.evaluation.evaluate_candidates` fits it, ``n_jobs`` at a time;
    then ensembles over them."""
    singles = [c for c in candidates if not c.is_ensemble]
    main_y = shared.main_labels(data)
    # an ensemble's temporal weights are the main taxonomy's (chosen on its inner folds of the same earlier years'
    # papers): the temporal holdout's inner folds are fitted only for an ensemble the main taxonomy has none for
    given = {c.name: shared.temporal_weights(c.name) for c in candidates if c.is_ensemble}
    inner = any(w is None for w in given.values())
    plans = {c.name: SingleFits(data, split, seed, temporal, (), inner=inner) for c in singles}
    fitted: dict[str, dict] = {}
    for group in sharing_features(singles, data, seed):
        fits = {c.name: [f for f in plans[c.name].fits if f.key[0] != "cv"] for c in group}
        builds = {c.name: (lambda c=c: c.build(data.space.n_labels, seed)) for c in group}
        if len(group) == 1:
            fitted[group[0].name] = run_fits(builds[group[0].name], data.texts, data.y, fits[group[0].name], n_jobs)
        else:
            fitted.update(run_shared_fits(builds, data.texts, data.y, fits, n_jobs))
    by_name: dict[str, CandidateResult] = {}
    for candidate in singles:
        known = shared.features(candidate.name, data)
        outputs = dict(fitted[candidate.name])
        for fit in plans[candidate.name].cv_fits:
            layer = NameLayer(data.space.n_labels).fit(known[fit.train], data.y[fit.train], main_y[fit.train])
            outputs[fit.key] = FitOutput(layer.transform(known[fit.test]), 0.0, 0.0)
        by_name[candidate.name] = plans[candidate.name].result(candidate, outputs, {})
        by_name[candidate.name].layers = {candidate.name: NameLayer(data.space.n_labels).fit(known, data.y, main_y)}
    results = [by_name[c.name] for c in singles]
    for candidate in candidates:
        if candidate.is_ensemble:
            weights = None if inner else given[candidate.name]
            results.append(evaluate_ensemble(candidate, by_name, data, split, (), temporal, weights))
            results[-1].layers = {m: by_name[m].layers[m] for m in candidate.members}
    return results
