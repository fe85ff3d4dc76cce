"""papertrack from Python (a notebook, a script): load the registered model once, then ask it.

    import papertrack

    model = papertrack.load()                  # the champion: models:/papertrack@champion
    model.predict(["We propose a ..."])        # the service's answers (tracks, areas, prediction_set, confident)
    model.predict_frame(abstracts)             # one flat pandas row per abstract
    model.explain("We propose a ...")          # the terms behind each track, the nearest labeled papers

The model comes from the same store as the CLI: ``MLFLOW_TRACKING_URI`` when set, else the sqlite store under
``PAPERTRACK_HOME`` (``./.papertrack``) — never an ``mlflow.db`` in the working directory. Answers are those of
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

DEFAULT_MODEL = f"models:/{settings.MODEL_NAME}@{settings.CHAMPION}"
FRAME_COLUMNS = ("track", "probability", "top_k", "area", "area_probability", "confident", "prediction_set")


def load(model_uri: str | None = None) -> Predictor:
    """The model at ``model_uri`` (an MLflow model URI; default the registered champion,
    ``models:/papertrack@champion``), from papertrack's store. Raises
    :class:`~papertrack.errors.NoModelError` saying what to do when there is none."""
    from papertrack.errors import NoModelError
    from papertrack.serving.model_loader import load_model

    uri = model_uri or DEFAULT_MODEL
    try:
        predictor = load_model(uri).predictor
    except NoModelError as exc:
        raise NoModelError(
            str(exc).replace("--model ", "model_uri=").replace("pass --model", "pass model_uri")
        ) from None
    return Predictor(predictor, uri)


class Predictor:
    """A loaded papertrack model. ``texts`` may be one abstract (a str) or several (any sequence of str)."""

    def __init__(self, predictor: TrackPredictor, model_uri: str):
        self.predictor = predictor
        self.model_uri = model_uri

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
    ) -> pd.DataFrame:
        """One row per abstract (the index of a Series is kept): ``track`` and ``probability`` (the top one),
        ``top_k`` ("label (p); label (p); ..."), ``area`` and ``area_probability`` (the top area),
        ``confident`` and ``prediction_set`` (a list; None for a model without calibration)."""
        import pandas as pd

        index = texts.index if isinstance(texts, pd.Series) else None
        answers = self.predict(texts, top_k=top_k, titles=titles, taxonomy=taxonomy)
        rows = []
        for answer in answers:
            top, area = answer["tracks"][0], answer["areas"][0]
            rows.append(
                {
                    "track": top["label"],
                    "probability": top["probability"],
                    "top_k": "; ".join(f"{t['label']} ({t['probability']:.3f})" for t in answer["tracks"]),
                    "area": area["area"],
                    "area_probability": area["probability"],
                    "confident": answer.get("confident"),
                    "prediction_set": answer.get("prediction_set"),
                }
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
