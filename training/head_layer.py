"""Heads that share the work (issue 36): a crosswalked taxonomy evaluated on the main taxonomy's members.

The main taxonomy's evaluation (:func:`papertrack.training.evaluation.evaluate_candidates` with ``extra`` texts:
every other taxonomy's own papers) leaves, per single candidate, answers in the main names for every paper any head
holds, each from a model that never saw that paper's label:

* **known** features: a main paper's out-of-fold answer; another paper's (a taxonomy's own, never a main
  training row) the mean of the k fold models' answers;
* **temporal** features: a main paper of the earlier years' inner out-of-fold answer (the temporal holdout's
  inner folds, fitted on the earlier years only); a taxonomy's own latest-year paper the temporal model's answer
  (trained on the earlier years only: no label of the target venue on the training side).

A head then fits, per fold of its own split, only a :class:`~papertrack.models.layered_head.NameLayer` (a table
counted from its training rows — a main paper by its main label, a venue's own paper by its answer: cheap) — no
TF-IDF and no classifier fit. Its yardsticks stay the same: "new names
known" (k-fold over its own papers, the older papers on every training side; a fold's layer never sees its test
papers' labels, and the features of those papers come from models that never saw them) and its temporal holdout
(the layer counted on the earlier years' papers only). Ensembles choose their weights as in the main taxonomy, on
the members' layered answers (:func:`papertrack.training.evaluation._evaluate_ensemble`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from papertrack.models.candidates import Candidate
from papertrack.models.layered_head import NameLayer
from papertrack.training.data import Direction, TrainingSet
from papertrack.training.evaluation import Split, _evaluate_ensemble, _SingleFits
from papertrack.training.fits import FitOutput
from papertrack.training.results import CandidateResult


@dataclass
class SharedMembers:
    """The main taxonomy's evaluation as the heads read it: its rows, its temporal direction, the extra texts' rows
    (by record identity) and every single candidate's result (with ``extra_proba``)."""

    main: TrainingSet
    temporal: Direction | None
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
        needs_temporal = self.temporal is not None
        return "cv" in result.extra_proba and (
            not needs_temporal or ("temporal" in result.extra_proba and self.temporal.name in result.temporal.inner_oof)  # type: ignore[union-attr]
        )

    def layerable(
        self, candidates: Sequence[Candidate], data: TrainingSet, temporal: Direction | None
    ) -> list[Candidate]:
        """The ``candidates`` a layer can evaluate in the taxonomy of ``data``: singles :meth:`can_layer` covers and
        ensembles whose members all are — none when some row of ``data`` has no shared answer or its temporal
        training side is not within the main one's (nothing then to share: every candidate is fitted)."""
        main_rows = {id(r) for r in self.main.records}
        if any(id(r) not in main_rows and id(r) not in self.extra_rows for r in data.records):
            return []
        if temporal is not None:
            if self.temporal is None:
                return []
            earlier = {id(self.main.records[i]) for i in self.temporal.train}
            if any(id(data.records[i]) not in earlier for i in temporal.train):
                return []
        singles = {c.name for c in candidates if self.can_layer(c)}
        return [c for c in candidates if c.name in singles or (c.is_ensemble and all(m in singles for m in c.members))]

    def main_labels(self, data: TrainingSet) -> np.ndarray:
        """Each row's label in the main taxonomy (-1: not a main paper)."""
        rows = {id(r): i for i, r in enumerate(self.main.records)}
        return np.array([self.main.y[rows[id(r)]] if id(r) in rows else -1 for r in data.records], dtype=np.int64)

    def features(self, name: str, data: TrainingSet) -> tuple[np.ndarray, np.ndarray | None]:
        """(known, temporal) features of every row of ``data`` for candidate ``name``: answers in the main names
        (temporal: only the rows of the main temporal direction's training side and the extra texts are filled)."""
        result = self.results[name]
        main_rows = {id(r): i for i, r in enumerate(self.main.records)}
        n = self.main.space.n_labels
        known = np.zeros((len(data.y), n))
        temporal = np.zeros((len(data.y), n)) if self.temporal is not None else None
        inner_at = {}
        if self.temporal is not None:
            inner = result.temporal.inner_oof[self.temporal.name]  # type: ignore[union-attr]
            inner_at = {int(row): inner[k] for k, row in enumerate(self.temporal.train)}
        for i, record in enumerate(data.records):
            row = main_rows.get(id(record))
            if row is not None:
                known[i] = result.cv.oof_proba[row]
                if temporal is not None and row in inner_at:
                    temporal[i] = inner_at[row]
            else:
                extra = self.extra_rows[id(record)]
                known[i] = result.extra_proba["cv"][extra]
                if temporal is not None:
                    temporal[i] = result.extra_proba["temporal"][extra]
        return known, temporal


def evaluate_layered(
    candidates: Sequence[Candidate],
    shared: SharedMembers,
    data: TrainingSet,
    split: Split,
    temporal: Direction | None,
    seed: int,
) -> list[CandidateResult]:
    """Every candidate in the taxonomy of ``data`` from ``shared`` members and a :class:`NameLayer` per fit: singles
    (each must be :meth:`SharedMembers.can_layer`), then ensembles over them. ``temporal``: the taxonomy's temporal
    direction (its training side must be rows of the main temporal direction's training side)."""
    by_name: dict[str, CandidateResult] = {}
    singles = [c for c in candidates if not c.is_ensemble]
    main_y = shared.main_labels(data)
    for candidate in singles:
        known, later = shared.features(candidate.name, data)
        plan = _SingleFits(data, split, seed, temporal, (), inner=True)
        outputs = {}
        for fit in plan.fits:
            features = known if fit.key[0] == "cv" else later
            if features is None or not features[fit.train].any(axis=1).all():
                raise ValueError(f"{data.taxonomy}: {candidate.name}'s fit {fit.key} has rows without shared answers")
            layer = NameLayer(data.space.n_labels).fit(features[fit.train], data.y[fit.train], main_y[fit.train])
            outputs[fit.key] = FitOutput(layer.transform(features[fit.test]), 0.0, 0.0)
        by_name[candidate.name] = plan.result(candidate, outputs, {})
        by_name[candidate.name].layers = {candidate.name: NameLayer(data.space.n_labels).fit(known, data.y, main_y)}
    results = [by_name[c.name] for c in singles]
    for candidate in candidates:
        if candidate.is_ensemble:
            results.append(_evaluate_ensemble(candidate, by_name, data, split, (), temporal))
            results[-1].layers = {m: by_name[m].layers[m] for m in candidate.members}
    return results
