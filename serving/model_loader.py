"""The one way serving code gets a registered model: :func:`load_model` (the local labeler, the Spark engine,
suggest and ``papertrack.load()``), with one message saying how to get a model when there is none.

The HTTP service loads its model from the BentoML store instead (:mod:`papertrack.serving.http.bento_store`),
where ``papertrack serve``/``build`` imported it from the same registry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from papertrack.errors import NoModelError

if TYPE_CHECKING:
    from papertrack.models.artifact import TrackPredictor

TRAIN_HINT = "Run `papertrack train` to train and register a champion"


@dataclass(frozen=True)
class LoadedModel:
    predictor: TrackPredictor
    pyfunc: Any  # the MLflow pyfunc it came from
    path: str  # where it was loaded from: the URI, or the local folder it was downloaded to


def load_model(
    model_uri: str, *, error: type[NoModelError] = NoModelError, download_to: Path | None = None
) -> LoadedModel:
    """The model behind ``model_uri`` (any MLflow model URI) from papertrack's store. With ``download_to``, the
    model is downloaded there first and loaded from that folder (an alias is resolved once: a Spark job's
    executors load the very same copy). ``error`` (a NoModelError) with :func:`load_failure`'s message when it
    cannot be loaded."""
    from mlflow.exceptions import MlflowException

    from papertrack import store
    from papertrack.models.artifact import load_predictor

    tracking_uri = store.configure()
    try:
        path = model_uri
        if download_to is not None:
            from mlflow.artifacts import download_artifacts

            path = download_artifacts(artifact_uri=model_uri, dst_path=str(download_to))
        predictor, pyfunc = load_predictor(path)
    except (MlflowException, OSError) as exc:
        raise error(load_failure(model_uri, tracking_uri, exc)) from None
    return LoadedModel(predictor, pyfunc, path)


def load_failure(model_uri: str, tracking_uri: str, exc: BaseException) -> str:
    """Why ``model_uri`` cannot be loaded, in one line with the fix: for an alias that does not exist, the
    aliases that do (from the registry); otherwise MLflow's first line and how to register a model."""
    match = re.fullmatch(r"models:/([^/@]+)@([^/]+)", model_uri.strip())
    if match:
        name, alias = match.groups()
        aliases = registered_aliases(name)
        if aliases and alias not in aliases:
            listed = ", ".join(f"{a} (version {v})" for a, v in sorted(aliases.items()))
            return (
                f"model {name!r} has no alias {alias!r} in {tracking_uri}; its aliases: {listed}. Pass one, "
                f"e.g. --model models:/{name}@{min(aliases)}, or register a new version with `papertrack train`"
            )
    return (
        f"cannot load {model_uri} from {tracking_uri}: {first_line(exc).rstrip('.')}. {TRAIN_HINT} (or pass --model)."
    )


def registered_aliases(name: str) -> dict[str, str]:
    """The aliases of registered model ``name`` (alias -> version); empty when it is not registered."""
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    try:
        return dict(MlflowClient().get_registered_model(name).aliases or {})
    except MlflowException:
        return {}


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
