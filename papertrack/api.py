"""papertrack from Python (a notebook, a script): load the registered model once, then ask it.

    import papertrack

    model = papertrack.load()                  # the champion: models:/papertrack@champion
    model.predict(["We propose a ..."])        # the service's answers (tracks, areas, prediction_set, confident)
    model.predict_frame(abstracts)             # one flat pandas row per abstract
    model.explain("We propose a ...")          # the terms behind each track, the nearest labeled papers

The model comes from the same store as the CLI: ``MLFLOW_TRACKING_URI`` when set, else the sqlite store under
``PAPERTRACK_HOME`` (default: the nearest ``.papertrack/`` from the working directory up) — never an ``mlflow.db`` in
the working directory, and nothing is created when there is no store. Answers are those of
:meth:`~papertrack.models.artifact.TrackPredictor.predict`, the one code path the service, ``papertrack label`` and
the MLflow pyfunc share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from papertrack import settings

if TYPE_CHECKING:
    import pandas as pd

    from papertrack.models.artifact import TrackPredictor
    from papertrack.store import Store

DEFAULT_MODEL = f"models:/{settings.MODEL_NAME}@{settings.CHAMPION}"
# predict_frame's columns: each starts with "pred_", so the answer joins onto a frame of papers without a clash (a
# labeled dump has its own "area", "label", ...): papers.join(model.predict_frame(papers["abstract"]))
FRAME_PREFIX = "pred_"
FRAME_COLUMNS = tuple(
    FRAME_PREFIX + name
    for name in ("track", "probability", "top_k", "area", "area_probability", "confident", "set", "error")
)


def load(model_uri: str | None = None, store: Store | None = None) -> Predictor:
    """The model at ``model_uri`` (an MLflow model URI; default the registered champion,
    ``models:/papertrack@champion``), from ``store`` (a :class:`papertrack.store.Store`; default papertrack's store,
    decided from the environment now, see :func:`papertrack.store.open`). Two stores can be used side by side::

        a = papertrack.load(store=papertrack.store.open(create=False, home="~/project-a/.papertrack"))
        b = papertrack.load(store=papertrack.store.open(create=False, home="~/project-b/.papertrack"))

    Raises :class:`~papertrack.errors.NoModelError` saying what to do when there is none."""
    from papertrack import store as stores
    from papertrack.model_lookup import API_ARGUMENT
    from papertrack.serving.model_loader import load_model

    uri = model_uri or DEFAULT_MODEL
    opened = store if store is not None else stores.open(create=False)
    return Predictor(load_model(uri, opened, option=API_ARGUMENT).predictor, uri, opened)


class Predictor:
    """A loaded papertrack model. ``texts`` may be one abstract (a str) or several (any sequence of str)."""

    def __init__(self, predictor: TrackPredictor, model_uri: str, store: Store | None = None):
        self.predictor = predictor
        self.model_uri = model_uri
        self.store = store  # where it was loaded from

    def __repr__(self) -> str:
        return f"<papertrack.Predictor {self.model_uri} ({self.predictor.card.short()})>"

    @property
    def labels(self) -> tuple[str, ...]:
        """The tracks the model knows in its default taxonomy, "Area · Subarea" (``labels_in(name)``: another's)."""
        return self.predictor.space.labels

    @property
    def taxonomies(self) -> list[str]:
        """The taxonomies the model answers in (e.g. ``["ICLR 2025", "ICML 2025"]``), the default first."""
        return self.predictor.known_taxonomies()

    def labels_in(self, taxonomy: str) -> tuple[str, ...]:
        """The tracks of ``taxonomy`` (its name or one of its sources' names)."""
        return self.predictor.head(taxonomy).space.labels

    @property
    def card(self):
        """The model card: candidate, run id, data digest, metrics."""
        return self.predictor.card

    def predict(
        self,
        texts: str | Iterable[str],
        top_k: int | None = None,
        titles: Sequence[str | None] | None = None,
        *,
        taxonomy: str | None = None,
    ) -> list[dict[str, Any]]:
        """One answer per abstract, in order: ``{"tracks": [{"label", "area", "subarea", "probability"}, ...top_k],
        "areas": [{"area", "probability"}, ...every area], "prediction_set": [...], "confident": bool,
        "taxonomy": str}`` — what ``POST /predict`` answers (without ``model``), in ``taxonomy``'s names (default:
        the model's default taxonomy; :attr:`taxonomies` lists them). ``top_k`` None is 3 (every label when the
        taxonomy has fewer). An empty abstract raises ``ValueError``."""
        abstracts = _texts(texts)
        return [dict(answer) for answer in self.predictor.predict(abstracts, titles, top_k, taxonomy=taxonomy)]

    def predict_frame(
        self,
        texts: str | Iterable[str] | pd.Series,
        top_k: int | None = None,
        titles: Sequence[str | None] | None = None,
        *,
        taxonomy: str | None = None,
        errors: str = "coerce",
    ) -> pd.DataFrame:
        """One row per abstract (the index of a Series is kept), every column prefixed ``pred_`` (:data:`FRAME_COLUMNS`)
        so that ``papers.join(model.predict_frame(papers["abstract"]))`` never clashes with the papers' own columns:
        ``pred_track`` and ``pred_probability`` (the top one), ``pred_top_k`` ("label (p); label (p); ..."),
        ``pred_area`` and ``pred_area_probability`` (the top area), ``pred_confident`` and ``pred_set`` (the
        prediction set, a list; None for a model without calibration), ``pred_error``.

        A missing (None, NaN), empty or non-text abstract: with ``errors="coerce"`` (the default, as in pandas) its
        row has ``pred_error`` saying why (naming the row by its index) and None elsewhere, and every other row is
        answered; ``errors="raise"`` raises ``UsageError`` for the first such row instead."""
        import pandas as pd

        if isinstance(texts, pd.Series):
            frame = pd.DataFrame({"abstract": texts.tolist()}, index=texts.index)
            index = texts.index
        else:
            frame = pd.DataFrame({"abstract": _texts(texts)})
            index = None
        if titles is not None:
            frame["title"] = list(titles)
        answers: list[Any] = self.predictor.predict_frame(frame, top_k, taxonomy=taxonomy, errors=errors)
        rows = []
        for answer in answers:
            if "error" in answer:
                rows.append((None,) * (len(FRAME_COLUMNS) - 1) + (answer["error"],))
                continue
            top, area = answer["tracks"][0], answer["areas"][0]
            rows.append(
                (
                    top["label"],
                    top["probability"],
                    "; ".join(f"{t['label']} ({t['probability']:.3f})" for t in answer["tracks"]),
                    area["area"],
                    area["probability"],
                    answer.get("confident"),
                    answer.get("prediction_set"),
                    None,
                )
            )
        return pd.DataFrame(rows, columns=list(FRAME_COLUMNS), index=index)

    def explain(
        self,
        text: str,
        title: str | None = None,
        top_k: int = 3,
        terms: int = 10,
        neighbors: int = 5,
        *,
        taxonomy: str | None = None,
    ) -> dict[str, Any]:
        """Why: the answer for one abstract, the terms that pushed each of its ``top_k`` tracks up (with their
        character spans), how they were found (``method``: exact-linear, linear-member — only an ensemble's linear
        TF-IDF member is explained — or occlusion) and the ``neighbors`` most similar labeled training abstracts.
        What ``POST /explain`` answers."""
        from papertrack.models.explain import explain

        if not isinstance(text, str) or not text.strip():
            raise ValueError("explain needs one non-empty abstract (a str)")
        head = self.predictor.head(taxonomy)
        return dict(explain(head, text, title, top_k=top_k, n_terms=terms, n_neighbors=neighbors))


def _texts(texts: str | Iterable[str]) -> list[str]:
    if isinstance(texts, str):
        return [texts]
    if isinstance(texts, bytes):
        raise TypeError("texts must be str, not bytes: decode them first")
    return list(texts)
