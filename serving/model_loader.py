"""The one way serving code gets a registered model: :func:`load_model` (the local labeler, the Spark engine,
suggest and ``papertrack.load()``), with one message saying how to get a model when there is none.

The HTTP service loads its model from the BentoML store instead (:mod:`papertrack.serving.http.bento_store`),
where ``papertrack serve``/``build`` imported it from the same registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from papertrack.errors import NoModelError
from papertrack.model_lookup import MODEL_OPTION, TRAIN_HINT, first_line

if TYPE_CHECKING:
    from papertrack.models.artifact import TrackPredictor
    from papertrack.store import Store

__all__ = ["TRAIN_HINT", "LoadedModel", "load_model"]


@dataclass(frozen=True)
class LoadedModel:
    predictor: TrackPredictor
    metadata: Any  # its MLflow metadata (mlflow.models.Model: MLmodel's signature, flavors)
    path: str  # where it was loaded from: the URI, or the local folder it was downloaded to


def load_model(
    model_uri: str,
    store: Store,
    *,
    error: type[NoModelError] = NoModelError,
    download_to: Path | None = None,
    option: str = MODEL_OPTION,
) -> LoadedModel:
    """The model behind ``model_uri`` (an MLflow model URI, or a short form: ``challenger``, ``3``; see
    :mod:`papertrack.model_lookup`) from ``store`` (:func:`papertrack.store.open`, ``create=False``). With
    ``download_to``, the model is downloaded there first and loaded from that folder (an alias is resolved once: a
    Spark job's executors load the very same copy). ``error`` (a NoModelError) with the lookup's one message when it
    cannot be loaded; ``option``: how the caller names the reference in that message's fix."""
    from mlflow.exceptions import MlflowException

    from papertrack import model_lookup
    from papertrack.models.loading import load_predictor, pinned
    from papertrack.models.manifest import check_model_files
    from papertrack.store import using

    try:
        target = model_lookup.resolve(store, model_uri, option)
    except NoModelError as exc:
        raise error(str(exc)) from None
    try:
        # MLflow resolves models:/ and runs:/ URIs on its process-wide store only
        with using(store):
            path = target.uri
            if download_to is not None:  # the copy the Spark executors load: checked here, on the driver
                from mlflow.artifacts import download_artifacts

                uri, expected = pinned(target.uri)  # an alias resolved once: the checked copy is the loaded one
                path = download_artifacts(artifact_uri=uri, dst_path=str(download_to))
                if expected is not None:
                    check_model_files(Path(path), expected, uri)
            predictor, metadata = load_predictor(path)
    except (MlflowException, OSError) as exc:
        raise error(model_lookup.missing(store, target, first_line(exc), option)) from None
    return LoadedModel(predictor, metadata, path)
