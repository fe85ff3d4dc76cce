"""Loading a logged or registered prediction artifact: every file checked against the digests recorded when it was
logged, then the predictor unpickled — the only file of the model that is.

:func:`load_checked` loads a local model folder and imports no MLflow (the service's workers, and the read commands
when :mod:`papertrack.registry_cache` knows the version's folder and digests); :func:`load_predictor` takes any
MLflow model URI (:func:`pin` finds its version and recorded digests in the registry) and is called where MLflow's
process-wide URIs name the store."""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from papertrack.models import manifest
from papertrack.models.manifest import ARTIFACTS_FOLDER, PREDICTOR_FILE, DamagedArtifact

if TYPE_CHECKING:  # the artifact's module imports scikit-learn (~1 s): load_checked imports it while it reads
    from papertrack.models.artifact import TrackPredictor

logger = logging.getLogger(__name__)

MLMODEL = "MLmodel"


@dataclass(frozen=True)
class Pinned:
    """A model URI with an alias resolved to its version: the URI to load, the digests recorded for its files (None:
    a local folder, or none recorded) and, for a registered version, its name, number and run."""

    uri: str
    expected: dict[str, str] | None
    name: str | None = None
    version: str | None = None
    run_id: str | None = None


def load_predictor(model_uri: str) -> tuple[TrackPredictor, Any]:
    """Load a logged/registered pyfunc (a model URI or a local model folder): its TrackPredictor and its MLflow
    metadata (``MLmodel``: signature, flavors). Called where MLflow's process-wide URIs name the store.

    Nothing of the model is unpickled but ``artifacts/predictor.pkl``, and only after the checks of
    :func:`load_checked`: for a registered version, a run's model or a logged model, every file of the downloaded
    folder must have the sha256 recorded in the tracking store when it was logged (:data:`~.manifest.FILES_TAG`; a
    model logged before that tag existed loads with a warning saying how to re-register it); then the artifact's own
    manifest (format, predictor's digest). MLflow's ``python_model.pkl`` (a cloudpickled :class:`PaperTrackModel`,
    which carries no state) is never loaded here: papertrack builds the wrapper itself. A mismatch is a
    :class:`~.manifest.DamagedArtifact` naming the file; another format :class:`~.manifest.IncompatibleArtifact`."""
    asked = model_uri
    if Path(model_uri).is_dir():
        local = Path(model_uri)
        return load_checked(local, None, asked, model_uri), metadata(local)
    predictor, local, stored = load_pinned(pin(model_uri), asked)
    return predictor, metadata(local, stored)


def load_pinned(pinned: Pinned, asked: str) -> tuple[TrackPredictor, Path, str]:
    """The predictor of a pinned model URI (:func:`pin`), downloaded (a local artifact store's folder is used as it
    is) and checked: (the predictor, the local folder loaded, where the files are kept). ``asked`` names the model in
    messages. Called where MLflow's process-wide URIs name the store."""
    from mlflow.artifacts import download_artifacts

    local = Path(download_artifacts(artifact_uri=pinned.uri))
    stored = stored_at(pinned.uri)  # where the files are kept (``local`` may be a temporary copy)
    predictor = load_checked(local, pinned.expected, asked, stored)
    if pinned.expected is None and pinned.uri.startswith(("models:/", "runs:/")):
        logger.warning(
            "%s was logged by an earlier papertrack: only its predictor's digest is checked, not MLmodel or "
            "python_model.pkl (which papertrack never unpickles); %s",
            asked,
            manifest.REREGISTER,
        )
    return predictor, local, stored


def load_checked(
    folder: Path, expected: dict[str, str] | None, shown: str, stored: str | None = None
) -> TrackPredictor:
    """The predictor of the local MLflow model ``folder``, after its checks (no MLflow import): the artifact's
    manifest (format, the predictor's digest), every file against ``expected`` (the digests recorded in the tracking
    store; None: not checked) and ``MLmodel`` readable. ``predictor.pkl`` is read once: the bytes hashed are the bytes
    unpickled. ``shown`` names the model in messages, ``stored`` where its files are kept (default: ``folder``)."""
    stored = stored or str(folder)
    predictor_file = folder / ARTIFACTS_FOLDER / PREDICTOR_FILE
    reading = _Read(predictor_file)  # reading and hashing release the GIL: they overlap the imports below
    from papertrack.models.artifact import TrackPredictor

    data, known = reading.result(), {}
    if data is not None:
        known[PREDICTOR_FILE] = reading.digest
    manifest.check(folder / ARTIFACTS_FOLDER, shown, f"{stored}/{ARTIFACTS_FOLDER}", known=known)  # reads JSON only
    if expected is not None:
        relative = {f"{ARTIFACTS_FOLDER}/{name}": digest for name, digest in known.items()}
        manifest.check_model_files(folder, expected, shown, stored, known=relative)
    _check_mlmodel(folder, stored)
    if data is None:  # listed in no manifest (checked above): as if it were missing
        raise DamagedArtifact(f"{stored}/{ARTIFACTS_FOLDER}/{PREDICTOR_FILE} is missing; {manifest.RETRAIN}")
    return TrackPredictor.from_bytes(data, predictor_file)


class _Read(threading.Thread):
    """A file's bytes and their sha256, read in a thread (None when it cannot be read: the checks name it)."""

    def __init__(self, path: Path):
        super().__init__(name=f"read {path.name}", daemon=True)
        self.path, self.digest = path, ""
        self.data: bytes | None = None
        self.start()

    def run(self) -> None:
        try:
            data = self.path.read_bytes()
        except OSError:
            return
        self.data, self.digest = data, hashlib.sha256(data).hexdigest()

    def result(self) -> bytes | None:
        self.join()
        return self.data


def _check_mlmodel(folder: Path, stored: str) -> None:
    """``MLmodel`` is YAML holding a mapping (MLflow's file; papertrack reads its metadata only when asked)."""
    import yaml

    try:
        content = yaml.safe_load((folder / MLMODEL).read_text(encoding="utf-8"))
        if not isinstance(content, dict):
            raise ValueError("not a mapping")
    except (OSError, yaml.YAMLError, ValueError, UnicodeDecodeError) as exc:
        raise DamagedArtifact(
            f"{stored}/{MLMODEL} is damaged ({type(exc).__name__}: {exc}); {manifest.RETRAIN}", MLMODEL
        ) from None


def metadata(folder: Path, stored: str | None = None) -> Any:
    """The MLflow metadata of a local model folder (``mlflow.models.Model``: signature, flavors); DamagedArtifact
    when MLflow cannot read it. ``stored``: where the files are kept, for the message (default: ``folder``)."""
    import yaml
    from mlflow.models import Model

    try:
        return Model.load(str(folder / MLMODEL))
    except (OSError, yaml.YAMLError, ValueError, TypeError) as exc:
        raise DamagedArtifact(
            f"{stored or folder}/{MLMODEL} is damaged ({type(exc).__name__}: {exc}); {manifest.RETRAIN}", MLMODEL
        ) from None


def pinned(model_uri: str) -> tuple[str, dict[str, str] | None]:
    """``model_uri`` with an alias resolved to its version (the files checked are the files loaded, even if the
    alias moves meanwhile), and the digests recorded for it (None: a local folder, or none recorded)."""
    found = pin(model_uri)
    return found.uri, found.expected


def pin(model_uri: str) -> Pinned:
    """:func:`pinned`, with the registered version's name, number and run when it names one."""
    import re

    alias = re.fullmatch(r"models:/([^/@]+)@([^/]+)", model_uri)
    version = re.fullmatch(r"models:/([^/@]+)/(\d+)", model_uri)
    run = re.fullmatch(r"runs:/([^/]+)/.*", model_uri)
    logged = re.fullmatch(r"models:/(m-[0-9a-f]+)", model_uri)
    if not (alias or version or run or logged):
        return Pinned(model_uri, None)
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    tags: dict[str, str] = {}
    run_id = None
    name = number = None
    if alias or version:
        found = (
            client.get_model_version_by_alias(alias[1], alias[2])
            if alias
            else client.get_model_version(version[1], version[2])  # type: ignore[index]
        )
        model_uri = f"models:/{found.name}/{found.version}"
        tags, run_id = dict(found.tags or {}), found.run_id
        name, number = found.name, str(found.version)
    elif run:
        run_id = run[1]
    elif logged:
        run_id = client.get_logged_model(logged[1]).source_run_id
    value = tags.get(manifest.FILES_TAG)
    if value is None and run_id:
        value = client.get_run(run_id).data.tags.get(manifest.FILES_TAG)
    run_of = tags.get("run_id") or run_id
    return Pinned(model_uri, manifest.parse_model_files(value), name, number, run_of)


def stored_at(model_uri: str) -> str:
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
