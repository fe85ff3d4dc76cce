"""The winner's prediction artifact logged into its run as the MLflow pyfunc (:func:`log_model`), with the digest of
every file it holds recorded beside it (:func:`logged_files`), and nothing left behind when logging fails part-way.
``mlflow.pyfunc.log_model`` logs to MLflow's active run on its process-wide store only: the one call made inside
:func:`papertrack.store.using`."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import mlflow
import pandas as pd

from papertrack import __version__
from papertrack.models import manifest
from papertrack.models.artifact import PaperTrackModel, signature
from papertrack.models.candidates import Candidate
from papertrack.store import Store, using
from papertrack.training import artifact_extras
from papertrack.training.data import TrainingSet
from papertrack.training.refit import Refit
from papertrack.training.results import CandidateResult
from papertrack.training.run_log import RunLog, open_experiment
from papertrack.training.taxonomies import taxonomy_slug

CORE_REQUIREMENTS = ("scikit-learn", "numpy", "pandas", "scipy", "joblib", "mlflow", "lightgbm")


def pip_requirements(candidate: Candidate) -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    pinned = []
    for dist in dict.fromkeys((*CORE_REQUIREMENTS, *candidate.requirements)):
        try:
            # a local version label (torch "2.13.0+cpu") is not on PyPI: pin the public version
            pinned.append(f"{dist}=={version(dist).split('+')[0]}")
        except PackageNotFoundError:
            pinned.append(dist)
    return [*pinned, f"papertrack=={__version__}"]


# What MLflow accepts (mlflow.utils.validation): a longer name or value fails the whole call (a 318-character venue
# failed `train`: "'Metric name' exceeds 250"; 400 venues: a dataset name over 500). Names that come from the
# data (the sources: a venue and year, or a file name) are cut to these, with a digest so that two long names
# stay two names.


def log_model(store: Store, winner: CandidateResult, refit: Refit, data: TrainingSet, plots: bool = True) -> str:
    """Log the refit winner, in the winner's own run of ``store``, as the pyfunc prediction artifact; its model
    URI. ``mlflow.pyfunc.log_model`` logs to MLflow's active run on MLflow's process-wide store only: the one call
    made inside :func:`papertrack.store.using`. ``plots``: each calibration's risk-coverage plot too (``--plots
    none``: no plots at all)."""
    example = pd.DataFrame(
        {"abstract": [r.abstract for r in data.records[:2]], "title": [r.title or "" for r in data.records[:2]]}
    )
    run = RunLog(store, winner.run_id)
    artifact_extras.log_calibration(run, refit.confidence, winner.selection_proba, winner.selection_y, plot=plots)
    for name, head in refit.heads.items():  # each other taxonomy's calibration, metric names suffixed
        held_out, held_y = head.held_out[0], head.held_out[1]
        artifact_extras.log_calibration(run, head.confidence, held_out, held_y, taxonomy_slug(name), plot=plots)
    with tempfile.TemporaryDirectory() as tmp:
        artifacts = refit.predictor.save_artifacts(Path(tmp))  # the pickled predictor and its manifest
        with using(store), mlflow.start_run(run_id=winner.run_id), _no_partial_model(store, winner.run_id):
            logged = mlflow.pyfunc.log_model(
                name="model",
                python_model=PaperTrackModel(),
                artifacts=artifacts,
                signature=signature(),
                input_example=example,
                pip_requirements=pip_requirements(winner.candidate),
            )
    run.tags({"refit": "all data", manifest.FILES_TAG: json.dumps(logged_files(store, logged.model_uri))})
    return logged.model_uri


@contextmanager
def _no_partial_model(store: Store, run_id: str) -> Iterator[None]:
    """A model whose logging fails part-way (a full disk, Ctrl-C) leaves nothing behind: its partly copied files
    (a truncated ``predictor.pkl``) are removed and the logged model deleted, before the failure goes on."""
    try:
        yield
    except BaseException:
        client = store.client()
        try:
            experiment = open_experiment(store).experiment_id
            for model in client.search_logged_models([experiment], filter_string=f"source_run_id = '{run_id}'"):
                if str(model.status) != "READY" and not str(model.status).endswith(".READY"):
                    _remove_local(model.artifact_location)
                    client.delete_logged_model(model.model_id)
        except Exception:  # best effort: the original failure is what the user must see
            pass
        raise


def _remove_local(uri: str) -> None:
    import shutil
    from urllib.parse import urlparse
    from urllib.request import url2pathname

    parsed = urlparse(uri)
    if parsed.scheme in ("file", ""):
        shutil.rmtree(url2pathname(parsed.path), ignore_errors=True)


def logged_files(store: Store, model_uri: str) -> dict[str, str]:
    """The sha256 of every file of the model just logged (:data:`papertrack.models.manifest.FILES_TAG`), read back
    from the store: what every loader checks before it unpickles anything."""
    from mlflow.artifacts import download_artifacts

    with tempfile.TemporaryDirectory() as tmp, using(store):
        return manifest.model_files(Path(download_artifacts(artifact_uri=model_uri, dst_path=tmp)))
