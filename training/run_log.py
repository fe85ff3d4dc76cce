"""One MLflow run written by id through a store's client (no process-wide state): :class:`RunLog`, the experiment
it lives in (:func:`open_experiment`), and the limits MLflow puts on names and values (:func:`bounded_params`,
:func:`bounded_tags`, :func:`metric_name`, :func:`dataset_name`)."""

from __future__ import annotations

import posixpath
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from papertrack.settings import EXPERIMENT_NAME
from papertrack.store import Store
from papertrack.training import tracking

# MLflow 3 opens an experiment on its GenAI overview unless it is marked as model development
EXPERIMENT_KIND = ("mlflow.experimentKind", "custom_model_development")


def open_experiment(store: Store):
    """papertrack's experiment in ``store`` (created by :func:`papertrack.store.open`), marked as model
    development."""
    experiment = store.experiment()
    if experiment is None:
        raise RuntimeError(f"the store {store.tracking_uri} has no {EXPERIMENT_NAME!r} experiment: open it with create")
    store.client().set_experiment_tag(experiment.experiment_id, *EXPERIMENT_KIND)
    return experiment


class RunLog:
    """One MLflow run of ``store``, written by id through its client (what ``mlflow.log_*`` do on the active run)."""

    def __init__(self, store: Store, run_id: str):
        self.store, self.client, self.run_id = store, store.client(), run_id

    @classmethod
    def start(cls, store: Store, experiment_id: str, name: str, tags: dict, parent: str | None = None) -> RunLog:
        """A new run, tagged as MLflow's fluent ``start_run`` tags one (user, source, ``mlflow.parentRunId``)."""
        from mlflow.tracking.context.registry import resolve_tags
        from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID

        all_tags = resolve_tags({**tags, **({MLFLOW_PARENT_RUN_ID: parent} if parent else {})})
        run = store.client().create_run(experiment_id, tags=all_tags, run_name=name)
        return cls(store, run.info.run_id)

    def end(self, failed: bool = False) -> None:
        self.client.set_terminated(self.run_id, "FAILED" if failed else "FINISHED")

    def tags(self, tags: dict) -> None:
        from mlflow.entities import RunTag

        self.client.log_batch(self.run_id, tags=[RunTag(str(k), str(v)) for k, v in tags.items()])

    def params(self, params: dict) -> None:
        from mlflow.entities import Param

        self.client.log_batch(self.run_id, params=[Param(str(k), str(v)) for k, v in params.items()])

    def metrics(self, metrics: dict) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(str(k), float(v), now, 0) for k, v in metrics.items()])

    def text(self, text: str, path: str) -> None:
        self.client.log_text(self.run_id, text, path)

    def dict(self, value: dict, path: str) -> None:
        self.client.log_dict(self.run_id, value, path)

    def figure(self, figure, path: str) -> None:
        self.client.log_figure(self.run_id, figure, path)

    def png(self, image: bytes, path: str) -> None:
        """A PNG image already drawn (:func:`papertrack.training.plots.png`), logged as ``path``."""
        folder, name = posixpath.split(path)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / name).write_bytes(image)
            self.client.log_artifact(self.run_id, str(Path(tmp) / name), folder or None)

    def dataset(self, dataset, context: str = "training") -> None:
        tracking.log_dataset_input(self.client, self.run_id, dataset, context)


MAX_KEY = 250  # metric, parameter and tag names
MAX_PARAM_VALUE = 6000
MAX_TAG_VALUE = 8000
MAX_DATASET_NAME = 500


def _metric_safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "_-." else "_" for ch in name)


def bounded(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its start, "…", a digest of the whole text (8 hex
    digits: distinct long texts stay distinct) and how long it was; at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    import hashlib

    tail = f"…{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}({len(text):,} chars)"
    return text[: max(limit - len(tail), 0)] + tail[:limit]


def metric_name(prefix: str, name: str) -> str:
    """A metric name from a name in the data: characters MLflow refuses replaced, at most ``MAX_KEY`` long."""
    return prefix + _metric_safe(bounded(name, MAX_KEY - len(prefix)))


def bounded_params(params: dict) -> dict:
    return {bounded(str(k), MAX_KEY): bounded(str(v), MAX_PARAM_VALUE) for k, v in params.items()}


def bounded_tags(tags: dict) -> dict:
    return {bounded(str(k), MAX_KEY): bounded(str(v), MAX_TAG_VALUE) for k, v in tags.items()}


def dataset_name(sources: Sequence[str]) -> str:
    """The sources joined with " + ", at most ``MAX_DATASET_NAME`` characters: as many as fit, then "+ N more"."""
    name = " + ".join(sources)
    if len(name) <= MAX_DATASET_NAME:
        return name
    shown: list[str] = []
    for source in sources:
        more = f" + {len(sources) - len(shown) - 1:,} more sources"
        if len(" + ".join([*shown, source])) + len(more) > MAX_DATASET_NAME:
            break
        shown.append(source)
    rest = f"{len(sources) - len(shown):,} more sources"
    return bounded(" + ".join([*shown, rest]) if shown else f"{len(sources):,} sources", MAX_DATASET_NAME)
