"""``POST /drift``: the drift report of one batch of papers — the numbers of ``papertrack label``'s report
(:func:`papertrack.models.drift.drift_report`), computed from the batch's answers instead of a labeled file."""

from __future__ import annotations

from collections.abc import Sequence

from papertrack.errors import PapertrackError
from papertrack.models.drift import DumpStats, drift_report
from papertrack.serving.http import schemas


def batch_report(predictor, abstracts: Sequence[str], titles: Sequence[str | None]) -> dict:
    """The drift report of one batch of papers (``POST /drift``): the same numbers as ``papertrack label``'s.
    ``NoProfile`` when the model carries no training profile."""
    from papertrack.features.text import model_text  # scikit-learn: not in `bentoml serve`'s own process

    profile = getattr(predictor, "training_profile", None)
    if profile is None:
        raise NoProfile(
            "the served model carries no training profile (trained before drift reports existed); "
            "retrain it with `papertrack train` to get drift reports"
        )
    stats = DumpStats.for_profile(profile)
    answers = predictor.predict(abstracts, titles, 1)
    texts = [model_text(a, t, predictor.use_title) for a, t in zip(abstracts, titles)]
    stats.add_answers(profile, answers, texts)
    return drift_report(stats, profile)


class NoProfile(PapertrackError):
    """The model has no training profile to compare a dump with."""


class DriftRequest(schemas.PredictBatchRequest):
    """Body of ``POST /drift``: the body of ``/predict_batch`` (``{"papers": [...], "top_k": ..., "taxonomy":
    ...}``: a client sends the same body to both); the report is against the asked taxonomy's training profile
    (``top_k`` is checked as there and does not change the report)."""
