"""THE prediction artifact: one fitted classifier + its label space, wrapped as an MLflow pyfunc
(:class:`papertrack.models.pyfunc.PaperTrackModel`; importing this module imports no MLflow).

Everything that predicts — the HTTP service, the batch labeler, evaluation scripts — loads the
registered pyfunc (or the :class:`TrackPredictor` inside it) and calls :meth:`TrackPredictor.predict`.
Nothing else turns probabilities into ranked tracks.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import sklearn

from papertrack.errors import UsageError
from papertrack.features.text import model_text
from papertrack.models import manifest
from papertrack.models.answer import DEFAULT_TOP_K, AnswerDict, AreaScoreDict, TrackDict
from papertrack.models.card import ModelCard
from papertrack.models.confidence import Confidence
from papertrack.models.hierarchy import LabelSpace
from papertrack.models.manifest import PREDICTOR_FILE, DamagedArtifact
from papertrack.models.neighbors import NeighborIndex
from papertrack.models.request import ERRORS, PredictRequest, RowError, abstract_problem, missing_column_message

if TYPE_CHECKING:
    import pandas as pd

# The predictor is pickled with the standard library's (C) pickler, protocol 5, uncompressed: the default model
# (~200 MB, mostly TF-IDF vocabularies) loads in ~0.4 s and saves in ~1 s; joblib's compressed file of the same
# predictor took ~4.7 s to load and ~13 s to save (its unpickler is the pure-Python one). Models saved before
# (same format, ``predictor.joblib``) still load.
logger = logging.getLogger(__name__)

LEGACY_PREDICTOR_SUFFIX = ".joblib"


class TrackPredictor:
    """A fitted classifier over a label space, answering ranked tracks and areas."""

    def __init__(
        self,
        classifier: Any,
        space: LabelSpace,
        card: ModelCard,
        use_title: bool = False,
        training_profile: Any = None,
        confidence: Confidence | None = None,
        neighbors: NeighborIndex | None = None,
        taxonomy: str = "",
        sources: Sequence[str] = (),
    ):
        self.classifier = classifier
        self.space = space
        self.card = card
        self.use_title = use_title
        # what the training data looked like (models.drift.TrainingProfile), set at refit; None for older models
        self.training_profile = training_profile
        # calibrated on held-out predictions at training time: prediction sets and the confident flag
        self.confidence = confidence
        # the labeled training abstracts, for "nearest labeled papers" (models/explain.py)
        self.neighbors = neighbors
        # the taxonomy this predictor answers in ("ICLR 2025"), the sources whose names it shares (also accepted
        # as its name), and the predictors of the artifact's other taxonomies (each one answers in its own names)
        self.taxonomy = taxonomy
        self.sources = tuple(sources)
        self.heads: dict[str, TrackPredictor] = {}

    # --- taxonomies ---------------------------------------------------------------------------
    @property
    def taxonomies(self) -> list[TrackPredictor]:
        """Every taxonomy the artifact answers in, the default first."""
        return [self, *self.heads.values()]

    def head(self, taxonomy: str | None = None) -> TrackPredictor:
        """The predictor answering in ``taxonomy`` (None: the default one); its name or any of its sources' names,
        in any letter case. An unknown name is a :class:`~papertrack.errors.UsageError` listing the known ones."""
        if taxonomy is None:
            return self
        name = find_taxonomy(taxonomy, {head.taxonomy: head.sources for head in self.taxonomies})
        if name is None:
            raise UnknownTaxonomy(taxonomy, self.known_taxonomies())
        return next(head for head in self.taxonomies if head.taxonomy == name)

    def known_taxonomies(self) -> list[str]:
        return [head.taxonomy or "default" for head in self.taxonomies]

    # --- probabilities ---------------------------------------------------------------------
    def predict_proba(self, abstracts: Sequence[str], titles: Sequence[str | None] | None = None) -> np.ndarray:
        """(n, n_labels) probabilities; every abstract must be a non-empty string."""
        for i, abstract in enumerate(abstracts):
            if not isinstance(abstract, str) or not abstract.strip():
                raise UsageError(f"row {i}: abstract must be a non-empty string, got {abstract!r:.60}")
        titles = titles if titles is not None else [None] * len(abstracts)
        texts = [model_text(a, t, self.use_title) for a, t in zip(abstracts, titles)]
        # The fitted estimators' hyper-parameters were validated at fit time; re-validating them on every
        # call is most of the cost of a one-abstract prediction. Same values, less time.
        with sklearn.config_context(skip_parameter_validation=True):
            return self.classifier.predict_proba(texts)

    def text_features(self, abstracts: Sequence[str], titles: Sequence[str | None] | None = None):
        """The model's own features of each paper, rows scaled to unit length (cosine = dot product);
        sparse or dense. ``NotImplementedError`` when the classifier does not expose them."""
        from sklearn.preprocessing import normalize

        method = getattr(self.classifier, "text_features", None)
        if method is None:
            raise NotImplementedError(f"{type(self.classifier).__name__} does not expose its text features")
        titles = titles if titles is not None else [None] * len(abstracts)
        with sklearn.config_context(skip_parameter_validation=True):
            return normalize(method([model_text(a, t, self.use_title) for a, t in zip(abstracts, titles)]))

    # --- ranked answers ----------------------------------------------------------------------
    def rank(self, proba: np.ndarray, top_k: int = DEFAULT_TOP_K) -> list[AnswerDict]:
        """Per row: the top_k tracks and every area, each ranked by probability."""
        n_labels = self.space.n_labels
        if not 1 <= top_k <= n_labels:
            raise UsageError(f"top_k must be between 1 and {n_labels}, got {top_k}")
        labels, areas, subareas = self.space.labels, self.space.areas, self.space.subareas
        track_names = [(labels[j], areas[a], subareas[j]) for j, a in enumerate(self.space.label_area.tolist())]
        area_proba = self.space.area_proba(proba)
        top = _top_indices(proba, top_k)
        area_order = np.argsort(-area_proba, axis=1, kind="stable")
        # plain Python lists (.tolist() gives the same floats as float(p[j])) instead of numpy scalar indexing
        top_p = np.take_along_axis(proba, top, axis=1).tolist()
        area_p = np.take_along_axis(area_proba, area_order, axis=1).tolist()
        results: list[AnswerDict] = []
        for top_row, p_row, order_row, ap_row in zip(top.tolist(), top_p, area_order.tolist(), area_p):
            tracks: list[TrackDict] = []
            for j, p in zip(top_row, p_row):
                label, area, subarea = track_names[j]
                tracks.append(TrackDict(label=label, area=area, subarea=subarea, probability=p))
            results.append(
                AnswerDict(
                    tracks=tracks,
                    areas=[AreaScoreDict(area=areas[j], probability=p) for j, p in zip(order_row, ap_row)],
                )
            )
            if self.taxonomy:
                results[-1]["taxonomy"] = self.taxonomy
        if self.confidence is not None:
            sets, sure = self.confidence.sets(proba), self.confidence.confident(proba).tolist()
            for answer, members, is_sure in zip(results, sets, sure):
                answer["prediction_set"] = [labels[j] for j in members.tolist()]
                answer["confident"] = is_sure
        return results

    def predict(
        self,
        abstracts: Sequence[str],
        titles: Sequence[str | None] | None = None,
        top_k: int | None = None,
        *,
        taxonomy: str | None = None,
    ) -> list[AnswerDict]:
        """One answer per abstract in ``taxonomy``'s names (default: the artifact's default taxonomy); ``top_k``
        None is :data:`DEFAULT_TOP_K`, or every label when the taxonomy has fewer. The request is checked once
        (:class:`~papertrack.models.request.PredictRequest`)."""
        from papertrack.models.request import PredictRequest

        return PredictRequest(abstracts=abstracts, titles=titles, top_k=top_k, taxonomy=taxonomy).answer(self)

    def predict_frame(
        self,
        frame: pd.DataFrame,
        top_k: int | None = None,
        *,
        taxonomy: str | None = None,
        errors: str = "coerce",
    ) -> list[AnswerDict | RowError]:
        """One answer per row of ``frame`` (column ``abstract``, optional ``title``), in order.

        A row whose abstract is missing (None, NaN, NA), empty or not a string is not answered: with
        ``errors="coerce"`` (the default) its answer is ``{"error": "row 3: no abstract (NaN: ...)"}`` (the row
        named by the frame's index) and every other row is answered; with ``errors="raise"`` the call raises
        ``UsageError`` naming the first such row. A frame without an ``abstract`` column, a wrong ``top_k`` or
        taxonomy fail the whole call either way.
        """
        if errors not in ERRORS:
            raise UsageError(f"errors must be one of {', '.join(map(repr, ERRORS))}, got {errors!r}")
        if "abstract" not in frame.columns:
            raise UsageError(missing_column_message(frame.columns))
        abstracts = frame["abstract"].tolist()
        titles = None
        if "title" in frame.columns:
            titles = [t if isinstance(t, str) else None for t in frame["title"].tolist()]
        rows = frame.index.tolist()
        problems = {i: f"row {rows[i]}: {p}" for i, a in enumerate(abstracts) if (p := abstract_problem(a)) is not None}
        if problems and errors == "raise":
            raise UsageError(next(iter(problems.values())))
        if not problems:
            return list(self.predict(abstracts, titles, top_k, taxonomy=taxonomy))
        good = [i for i in range(len(abstracts)) if i not in problems]
        if good:
            answered = iter(
                self.predict(
                    [abstracts[i] for i in good],
                    [titles[i] for i in good] if titles is not None else None,
                    top_k,
                    taxonomy=taxonomy,
                )
            )
        else:
            PredictRequest(abstracts=[], top_k=top_k, taxonomy=taxonomy).checked(self)  # top_k, taxonomy still checked
            answered = iter([])
        return [RowError(error=problems[i]) if i in problems else next(answered) for i in range(len(abstracts))]

    # --- persistence -------------------------------------------------------------------------
    def save(self, path: Path) -> Path:
        """The predictor alone, pickled (no manifest: :meth:`save_artifacts` writes what a logged model carries)."""
        with open(path, "wb") as out:
            pickle.dump(self, out, protocol=5)
        return path

    @staticmethod
    def load(path: Path) -> TrackPredictor:
        if path.suffix == LEGACY_PREDICTOR_SUFFIX:
            import joblib

            predictor = joblib.load(path)
        else:
            with open(path, "rb") as stored:
                predictor = pickle.load(stored)
        return _checked_type(predictor, path)

    @staticmethod
    def from_bytes(data: bytes, path: Path) -> TrackPredictor:
        """The predictor pickled in ``data`` (the bytes of ``path``, already checked against their digest)."""
        return _checked_type(pickle.loads(data), path)

    def save_artifacts(self, folder: Path) -> dict[str, str]:
        """Write the pyfunc's artifacts into ``folder`` — the pickled predictor, the summary of its taxonomies and
        their manifest (format version, papertrack version, sha256) — and return them as
        ``mlflow.pyfunc.log_model``'s ``artifacts``."""
        from papertrack.models import taxonomy_summary

        path = self.save(folder / PREDICTOR_FILE)
        summary = taxonomy_summary.write(self, folder)
        written = manifest.write(folder, [PREDICTOR_FILE, summary.name])
        return {"predictor": str(path), "taxonomies": str(summary), "manifest": str(written)}


def _top_indices(proba: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values per row, best first (argpartition, then sort the k)."""
    if k >= proba.shape[1]:
        return np.argsort(-proba, axis=1, kind="stable")
    part = np.argpartition(-proba, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(proba, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


OUTPUT_COLUMNS = "columns"  # the pyfunc's ``output`` param (papertrack.models.pyfunc)
OUTPUT_JSON = "json"


def _checked_type(predictor: object, path: Path) -> TrackPredictor:
    if not isinstance(predictor, TrackPredictor):
        raise DamagedArtifact(f"{path} does not hold a papertrack model; {manifest.RETRAIN}")
    return predictor


def find_taxonomy(asked: object, known: dict[str, Sequence[str]]) -> str | None:
    """The name of the taxonomy ``asked`` names among ``known`` (name -> its sources' names): its name or one of
    its sources', any letter case and spacing; None when none."""
    key = " ".join(str(asked).split()).casefold()
    for name, sources in known.items():
        if key in {name.casefold(), *(source.casefold() for source in sources)}:
            return name
    return None


class UnknownTaxonomy(UsageError):
    """A taxonomy the model cannot answer in; the message lists the ones it can."""

    def __init__(self, asked: object, known: Sequence[str]):
        self.asked, self.known = asked, list(known)
        super().__init__(f"unknown taxonomy {asked!r}; this model answers in: {', '.join(self.known)}")


def __getattr__(name: str) -> Any:
    """The MLflow pyfunc wrapper and its signature, where they used to be (models logged before name
    ``papertrack.models.artifact.PaperTrackModel`` in their ``python_model.pkl``): imported on first use only."""
    if name in ("PaperTrackModel", "signature"):
        from papertrack.models import pyfunc

        return getattr(pyfunc, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
