"""The refit: the sweep's winner fitted on all data as the prediction artifact, one predictor per taxonomy inside it
(:func:`refit`), each with its model card, confidence calibration, neighbour index and drift profile."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from papertrack.models.artifact import TrackPredictor
from papertrack.models.card import ModelCard
from papertrack.models.drift import build_profile
from papertrack.training import artifact_extras, native_mixture, taxonomies
from papertrack.training.data import TrainingSet
from papertrack.training.evaluation import CandidateResult
from papertrack.training.fits import SIDE_BY_SIDE_ROWS


@dataclass
class Refit:
    predictor: TrackPredictor
    confidence: object  # the calibration attached to the predictor (models/confidence.py)
    result: CandidateResult | None = None  # the evaluation it was calibrated from
    heads: dict[str, Refit] = field(default_factory=dict)  # the other taxonomies' refits, by name
    held_out: tuple = ()  # (probabilities, true labels, what they are) the calibration was made on


def refit(
    winner: CandidateResult,
    data: TrainingSet,
    seed: int,
    use_title: bool,
    heads: Sequence[taxonomies.Head] = (),
    n_jobs: int = 1,
) -> Refit:
    """The winner fitted on all data, as the prediction artifact: the model card, the confidence calibration
    (on the held-out rows the winner was chosen on), the neighbour index and the drift profile — for the default
    taxonomy (``data``) and, with ``heads`` (the other taxonomies), one predictor per taxonomy inside it, each
    calibrated on its own papers' out-of-fold answers: a head evaluated on the main taxonomy's members
    (:mod:`papertrack.training.head_layer`) is those fitted members and its layers (no fit of its own); another is
    fitted on its own training set. The fits run ``n_jobs`` at a time (worker processes, as the sweep's fits)."""
    if len(data.y) < SIDE_BY_SIDE_ROWS:
        n_jobs = 1  # small data: worker processes would cost more than they save
    jobs = [(winner, data, seed, use_title, None, None)]
    layered = []
    for head in heads:
        result = winner.heads[head.name]
        result.run_id = winner.run_id
        # calibrated on its own papers' out-of-fold answers from the k-fold that had its names on the training
        # side, like the refit model (its temporal holdout, trained on older names only, is far less sure)
        native = head.data.native_rows
        known = (result.cv.oof_proba[native], head.data.y[native], "new-names-known")
        job = (result, head.data, seed, use_title, known, native, result.native_share)
        (layered if result.layers else jobs).append(job)
    # the neighbour indexes read the texts only: one thread builds them while the members are fitted (a worker is
    # idle once the quicker members are done) instead of one after another at the end
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="neighbours") as indexing:
        inline = len(jobs) == 1 or n_jobs <= 1
        ahead = [job[1] for job in jobs] if inline else []
        indexes = {
            id(d): indexing.submit(artifact_extras.neighbor_index, d) for d in [*ahead, *(j[1] for j in layered)]
        }
        if not inline:
            from joblib import Parallel, delayed

            done = Parallel(n_jobs=min(n_jobs, len(jobs)))(delayed(_refit_one)(*job) for job in jobs)
        else:  # one job (every head on the main taxonomy's members): an ensemble fits its members side by side
            done = [_refit_one(*job, n_jobs=n_jobs, neighbors=indexes[id(job[1])]) for job in jobs]
        main = done[0]
        base = main.predictor.classifier
        done += [
            _refit_one(
                *job,
                _layered_head(job[0], job[1], winner, base, data, seed),
                neighbors=indexes[id(job[1])],
            )
            for job in layered
        ]
    main.predictor.taxonomy = data.taxonomy
    main.predictor.sources = tuple(dict.fromkeys(data.sources.tolist())) if data.taxonomy else ()
    by_result = {id(other.result): other for other in done[1:]}
    for head in heads:
        other = by_result[id(winner.heads[head.name])]
        other.predictor.taxonomy, other.predictor.sources = head.name, head.sources
        main.predictor.heads[head.name] = other.predictor
        main.heads[head.name] = other
    return main


def _layered_head(
    result: CandidateResult, head: TrainingSet, winner: CandidateResult, base, data: TrainingSet, seed: int
):
    """A head's classifier from the main taxonomy's fitted ``base`` (the winner's refit) and the head's layers;
    a member the main ensemble left out (weight 0 there) is fitted on the main taxonomy's rows."""
    from papertrack.models.layered_head import LayeredHead

    spec = result.candidate.ensemble
    weights = result.member_weights if spec else {result.candidate.name: 1.0}
    members = [(name, result.layers[name], w) for name, w in weights.items() if w > 0]
    have = {name for name, _, _ in getattr(base, "members_", None) or [(winner.candidate.name, base, 1.0)]}
    extra = []
    if spec:
        # every member, equally weighted: the winner's own build leaves out the members it gave weight 0
        every = winner.candidate.build(data.space.n_labels, seed, weights=None)
        unfitted = {name: model for name, model, _ in every.members}
        extra = [(name, unfitted[name].fit(data.texts, data.y)) for name, _, _ in members if name not in have]
    return LayeredHead(base, winner.candidate.name, members, head.space.n_labels, spec.rule if spec else "mean", extra)


def _refit_one(
    winner: CandidateResult,
    data: TrainingSet,
    seed: int,
    use_title: bool,
    held_out: tuple | None = None,
    profiled: np.ndarray | None = None,
    native_share: float = 0.0,
    classifier=None,
    n_jobs: int = 1,
    neighbors: Future | None = None,  # the neighbour index being built (refit's thread), read once it is needed
) -> Refit:
    if classifier is None:  # else: a head on the main taxonomy's fitted members (training.head_layer)
        classifier = winner.candidate.build(data.space.n_labels, seed)
        parallel = n_jobs > 1 and "n_jobs" in classifier.get_params(deep=False)
        if parallel:
            classifier.set_params(n_jobs=n_jobs)
        classifier.fit(data.texts, data.y)
        if parallel:  # the artifact keeps the default (a refit of it elsewhere decides for itself)
            classifier.set_params(n_jobs=None)
    if native_share > 0:  # a crosswalked taxonomy: mixed with a model of its own papers
        classifier = native_mixture.refit_mixture(classifier, data, native_share, seed)
    card = ModelCard(
        candidate=winner.candidate.name,
        family=winner.candidate.family,
        data_digest=data.digest,
        run_id=winner.run_id,
        metrics=winner.metrics,
        n_labels=data.space.n_labels,
        n_areas=len(data.space.areas),
        use_title=use_title,
    )
    predictor = TrackPredictor(classifier, data.space, card, use_title=use_title)
    # confidence calibration + neighbour index (issue 11)
    proba, y, source = held_out or (winner.selection_proba, winner.selection_y, winner.selection)
    index = neighbors.result() if neighbors is not None else None
    confidence = artifact_extras.attach(predictor, proba, y, data, source, index)
    # drift reports: "unsure" is "not confident" (the answers' confident flag), for the dump and the holdout
    rows = np.arange(len(data.y)) if profiled is None else profiled  # rows with out-of-fold answers
    predictor.training_profile = build_profile(
        [data.texts[i] for i in rows],
        data.y[rows],
        data.space,
        winner.cv.oof_proba[rows],
        seed,
        unsure_below=predictor.confidence.top1_threshold,
        unsure_source="not confident",
    )
    return Refit(predictor, confidence, winner, held_out=(proba, y, source))
