"""The sweep's other taxonomies: each candidate evaluated in a venue's own names (:func:`evaluate_head`: its known
names by k-fold over its own papers, its temporal holdout), and those figures merged into the candidate's metrics
in the default taxonomy (:class:`Merging`, :func:`merge_heads`) before the sweep's listener hears of it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from papertrack.models.candidates import Candidate
from papertrack.training import native_mixture, taxonomies
from papertrack.training.config import SweepConfig
from papertrack.training.cv import known_names_split
from papertrack.training.data import TrainingSet, temporal_direction
from papertrack.training.evaluation import evaluate_candidates
from papertrack.training.head_layer import SharedMembers, evaluate_layered
from papertrack.training.results import CandidateResult, Listener


def evaluate_head(
    candidates: Sequence[Candidate],
    head: taxonomies.Head,
    config: SweepConfig,
    listener: Listener,
    shared: SharedMembers | None = None,
) -> dict[str, CandidateResult]:
    """Every candidate in one other taxonomy: "new names known" — stratified k-fold over its own papers, every
    older paper mapped through its crosswalk on the training side of each fold — and its temporal holdout
    (trained on the earlier years' papers in its names, tested on its own latest-year papers). With ``shared``
    (the main taxonomy's members, :mod:`papertrack.training.head_layer`), a candidate they cover has its known k-fold
    from those members and a layer of this taxonomy's own (no fit), its temporal holdout fitted; the others (the
    baseline) are fitted on the taxonomy's training set. A crosswalked taxonomy's known figures are of each
    candidate mixed with a model of its own papers (:mod:`papertrack.training.native_mixture`); its temporal ones
    are the candidate's own. The progress is the listener's; the results are kept for :func:`merge_heads` (not
    logged as runs of their own)."""
    data = head.data
    temporal, _ = temporal_direction(data)
    split = known_names_split(data.y, data.space, data.native_rows, config.folds, config.seed)
    layered = shared.layerable(candidates, data) if shared is not None else []
    fitted = [c for c in candidates if c.name not in {x.name for x in layered}]
    results = evaluate_candidates(fitted, data, split, config.seed, ProgressOnly(listener), (), temporal, config.n_jobs)
    if layered:
        results += evaluate_layered(layered, shared, data, split, temporal, config.seed, config.n_jobs)  # type: ignore[arg-type]
    if head.crosswalk is not None:  # mixed with a model of its own papers (its temporal holdout has none)
        native_mixture.mix_results(results, data, split, config.seed, config.n_jobs)
    return {r.candidate.name: r for r in results}


class ProgressOnly(Listener):
    """Passes the progress on, not the finished candidates (they are merged into the default taxonomy's)."""

    def __init__(self, listener: Listener):
        self.listener = listener

    def started(self, total_fits: int) -> None:
        self.listener.started(total_fits)

    def candidate_started(self, candidate: Candidate) -> None:
        self.listener.candidate_started(candidate)

    def fold_done(self, candidate: Candidate) -> None:
        self.listener.fold_done(candidate)

    def phase(self, description: str) -> None:
        self.listener.phase(description)


class Merging(ProgressOnly):
    """The default taxonomy's listener: each finished candidate gets the other taxonomies' figures first."""

    def __init__(
        self, listener: Listener, others: dict[str, tuple[dict[str, CandidateResult], TrainingSet]], default: str
    ):
        super().__init__(listener)
        self.others, self.default = others, default

    def candidate_done(self, result: CandidateResult) -> None:
        merge_heads(
            result, self.default, {name: (by[result.candidate.name], data) for name, (by, data) in self.others.items()}
        )
        self.listener.candidate_done(result)


HEAD_METRICS = ("label_top3", "label_top1", "area_top1", "label_macro_f1")


def merge_heads(result: CandidateResult, default: str, others: dict[str, tuple[CandidateResult, TrainingSet]]) -> None:
    """Put every taxonomy's figures into ``result.metrics``, side by side:

    * ``temporal_<m>.<taxonomy>``: the temporal holdout of each taxonomy, in its own names;
    * ``temporal_<m>``: all taxonomies together — top-k and area figures over every latest-year paper pooled
      (each paper once, in its own taxonomy's names: what the champion rule ranks by and the paired bootstrap
      resamples), macro-F1 the mean of the taxonomies';
    * ``known_<m>.<taxonomy>`` (other taxonomies): "new names known" — its own papers' out-of-fold figures from
      the k-fold over them, every older paper (mapped in) on the training side of each fold.
    """
    if not others:
        return
    from papertrack.training.taxonomies import taxonomy_slug

    result.heads = {name: other for name, (other, _) in others.items()}
    metrics = result.metrics
    pooled: dict[str, list[tuple[float, int]]] = {m: [] for m in HEAD_METRICS}
    if "temporal_label_top3" in metrics and result.temporal is not None:
        n = len(result.temporal.held_out(result.y)[1])
        for m in HEAD_METRICS:
            metrics[f"temporal_{m}.{taxonomy_slug(default)}"] = metrics[f"temporal_{m}"]
            pooled[m].append((metrics[f"temporal_{m}"], n))
    for name, (other, _) in others.items():
        slug = taxonomy_slug(name)
        if other.temporal is not None:
            n = len(other.temporal.held_out(other.y)[1])
            for m in HEAD_METRICS:
                metrics[f"temporal_{m}.{slug}"] = other.metrics[f"temporal_{m}"]
                pooled[m].append((other.metrics[f"temporal_{m}"], n))
        for m in HEAD_METRICS:  # its k-fold scored its own papers only (training.cv.known_names_split)
            metrics[f"known_{m}.{slug}"] = other.metrics[f"cv_{m}"]
        if "native_share" in other.metrics:
            metrics[f"known_native_share.{slug}"] = other.metrics["native_share"]
    for m, parts in pooled.items():
        if len(parts) > 1:
            if m == "label_macro_f1":
                metrics[f"temporal_{m}"] = float(np.mean([v for v, _ in parts]))
            else:
                metrics[f"temporal_{m}"] = float(sum(v * k for v, k in parts) / sum(k for _, k in parts))
