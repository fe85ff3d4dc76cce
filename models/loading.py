"""Loading a logged or registered prediction artifact (:func:`load_predictor`): every file checked against the digests
recorded when it was logged (:func:`pinned` finds them), then the predictor unpickled — the only file of the model
that is. Called where MLflow's process-wide URIs name the store."""

from __future__ import annotations

import logging
from pathlib import Path

import yaml
from mlflow.artifacts import download_artifacts
from mlflow.models import Model

from papertrack.models import manifest
from papertrack.models.artifact import ARTIFACTS_FOLDER, PREDICTOR_FILE, TrackPredictor
from papertrack.models.manifest import DamagedArtifact

logger = logging.getLogger(__name__)


def load_predictor(model_uri: str) -> tuple[TrackPredictor, Model]:
    """Load a logged/registered pyfunc (a model URI or a local model folder): its TrackPredictor and its MLflow
    metadata (``MLmodel``: signature, flavors). Called where MLflow's process-wide URIs name the store.

    Nothing of the model is unpickled but ``artifacts/predictor.pkl``, and only after the checks: for a registered
    version, a run's model or a logged model, every file of the downloaded folder must have the sha256 recorded in
    the tracking store when it was logged (:data:`~.manifest.FILES_TAG`; a model logged before that tag existed
    loads with a warning saying how to re-register it); then the artifact's own manifest (format, predictor's
    digest). MLflow's ``python_model.pkl`` (a cloudpickled :class:`PaperTrackModel`, which carries no state) is
    never loaded here: papertrack builds the wrapper itself. A mismatch is a
    :class:`~.manifest.DamagedArtifact` naming the file; another format :class:`~.manifest.IncompatibleArtifact`."""
    asked = model_uri
    model_uri, expected = pinned(model_uri)
    local = Path(model_uri) if Path(model_uri).is_dir() else Path(download_artifacts(artifact_uri=model_uri))
    stored = _stored_at(model_uri)  # where the files are kept (``local`` may be a temporary copy)
    manifest.check(local / ARTIFACTS_FOLDER, asked, f"{stored}/{ARTIFACTS_FOLDER}")  # reads JSON only
    if expected is not None:
        manifest.check_model_files(local, expected, asked, stored)
    elif model_uri.startswith(("models:/", "runs:/")):
        logger.warning(
            "%s was logged by an earlier papertrack: only its predictor's digest is checked, not MLmodel or "
            "python_model.pkl (which papertrack never unpickles); %s",
            asked,
            manifest.REREGISTER,
        )
    try:
        metadata = Model.load(str(local / "MLmodel"))
    except (OSError, yaml.YAMLError, ValueError, TypeError) as exc:
        raise DamagedArtifact(
            f"{stored}/MLmodel is damaged ({type(exc).__name__}: {exc}); {manifest.RETRAIN}", "MLmodel"
        ) from None
    return TrackPredictor.load(local / ARTIFACTS_FOLDER / PREDICTOR_FILE), metadata


def pinned(model_uri: str) -> tuple[str, dict[str, str] | None]:
    """``model_uri`` with an alias resolved to its version (the files checked are the files loaded, even if the
    alias moves meanwhile), and the digests recorded for it (None: a local folder, or none recorded)."""
    import re

    from mlflow.tracking import MlflowClient

    alias = re.fullmatch(r"models:/([^/@]+)@([^/]+)", model_uri)
    version = re.fullmatch(r"models:/([^/@]+)/(\d+)", model_uri)
    run = re.fullmatch(r"runs:/([^/]+)/.*", model_uri)
    logged = re.fullmatch(r"models:/(m-[0-9a-f]+)", model_uri)
    if not (alias or version or run or logged):
        return model_uri, None
    client = MlflowClient()
    tags: dict[str, str] = {}
    run_id = None
    if alias or version:
        found = (
            client.get_model_version_by_alias(alias[1], alias[2])
            if alias
            else client.get_model_version(version[1], version[2])  # type: ignore[index]
        )
        model_uri = f"models:/{found.name}/{found.version}"
        tags, run_id = dict(found.tags or {}), found.run_id
    elif run:
        run_id = run[1]
    elif logged:
        run_id = client.get_logged_model(logged[1]).source_run_id
    value = tags.get(manifest.FILES_TAG)
    if value is None and run_id:
        value = client.get_run(run_id).data.tags.get(manifest.FILES_TAG)
    return model_uri, manifest.parse_model_files(value)


def _stored_at(model_uri: str) -> str:
    """Where the model's files are kept, for messages: a local folder when the artifact store is one (not the
    temporary copy that was checked), else its artifact URI."""
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    try:
        if model_uri.startswith("models:/"):
            from mlflow.store.artifact.models_artifact_repo import ModelsArtifactRepository

            uri = ModelsArtifactRepository.get_underlying_uri(model_uri)
        elif model_uri.startswith("runs:/"):
            from mlflow.store.artifact.runs_artifact_repo import RunsArtifactRepository

            uri = RunsArtifactRepository.get_underlying_uri(model_uri)
        else:
            uri = model_uri
    except Exception:  # only for the message: the URI itself then
        return model_uri
    parsed = urlparse(uri)
    return url2pathname(parsed.path) if parsed.scheme == "file" else uri
