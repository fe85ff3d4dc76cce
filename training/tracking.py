"""Per-candidate evaluation artifacts logged to MLflow: the per-class report and the plots.

(Where the store is and how to reach it: :mod:`papertrack.store`.)"""

from __future__ import annotations

import io
import time

import numpy as np
import pandas as pd
from sklearn.metrics import precision_recall_fscore_support

from papertrack.models.hierarchy import LabelSpace

DATASET_RACE_RETRIES = 3


def log_dataset_input(client, run_id: str, dataset, context: str = "training") -> None:
    """Link ``dataset`` (an ``mlflow.data`` dataset) to the run (what ``mlflow.log_input`` does, through
    ``client``), safe when another ``train`` logs the same dataset at the same moment.

    MLflow's store looks the dataset up by (experiment, name, digest) and inserts it when missing; two runs
    doing that at once against one tracking server both insert, and the loser's request fails on the unique
    key ("duplicate key value violates unique constraint dataset_pk" on PostgreSQL). Asking again finds the
    winner's row and only links this run to it.
    """
    from mlflow.entities import Dataset, DatasetInput, InputTag
    from mlflow.exceptions import MlflowException
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    described = dataset.to_dict()
    entity = Dataset(
        name=described["name"],
        digest=described["digest"],
        source_type=described["source_type"],
        source=described["source"],
        schema=described.get("schema"),
        profile=described.get("profile"),
    )
    inputs = [DatasetInput(dataset=entity, tags=[InputTag(key=MLFLOW_DATASET_CONTEXT, value=context)])]
    for attempt in range(DATASET_RACE_RETRIES):
        try:
            client.log_inputs(run_id, datasets=inputs)
            return
        except MlflowException as exc:
            text = str(exc)
            raced = "UniqueViolation" in text or "UNIQUE constraint failed" in text or "duplicate key" in text
            if not raced or attempt == DATASET_RACE_RETRIES - 1:
                raise
            time.sleep(0.2 * (attempt + 1))


def per_class_report(proba: np.ndarray, y: np.ndarray, space: LabelSpace) -> pd.DataFrame:
    """Per label: area, support, precision, recall, F1 of top-1, and recall within the top 3."""
    idx = np.arange(space.n_labels)
    predicted = proba.argmax(axis=1)
    precision, recall, f1, support = precision_recall_fscore_support(y, predicted, labels=idx, zero_division=0)
    top3 = np.argsort(-proba, axis=1)[:, :3]
    hit3 = np.any(top3 == y[:, None], axis=1)
    top3_recall = np.array([hit3[y == j].mean() if (y == j).any() else np.nan for j in idx])
    return pd.DataFrame(
        {
            "label": space.labels,
            "area": [space.areas[a] for a in space.label_area],
            "support": support,
            "precision": precision.round(4),
            "recall": recall.round(4),
            "f1": f1.round(4),
            "top3_recall": np.round(top3_recall, 4),
        }
    )


def log_evaluation_artifacts(
    run, proba: np.ndarray, y: np.ndarray, space: LabelSpace, name: str, plots: bool = True
) -> None:
    """Per-class report CSV and, with ``plots``, :func:`log_plots`, logged to ``run`` (a
    :class:`papertrack.training.run_log.RunLog`)."""
    report = per_class_report(proba, y, space)
    buffer = io.StringIO()
    report.to_csv(buffer, index=False)
    run.text(buffer.getvalue(), "report/per_class.csv")
    if plots:
        log_plots(run, proba, y, space, name, report)


def log_plots(
    run, proba: np.ndarray, y: np.ndarray, space: LabelSpace, name: str, report=None, n_jobs: int = 1
) -> None:
    """Confusion matrices (area, label), per-class F1 bars and the reliability plot, logged to ``run`` (about 1 s
    of drawing each with 86 labels); ``report`` is :func:`per_class_report`'s (computed when not given). With
    ``n_jobs`` > 1 they are drawn in the sweep's worker processes (idle while the winner's refit ends on one core),
    so the drawing does not hold this process's interpreter lock; the images are the same."""
    from papertrack.training import plots

    if report is None:
        report = per_class_report(proba, y, space)
    area_proba = space.area_proba(proba)
    figures = {
        "plots/confusion_area.png": (
            plots.confusion_figure,
            (space.area_of(y), area_proba.argmax(axis=1), space.areas, f"{name}: areas (cross-validated)"),
        ),
        "plots/confusion_label.png": (
            plots.confusion_figure,
            (y, proba.argmax(axis=1), space.labels, f"{name}: labels (cross-validated)"),
        ),
        "plots/per_class_f1.png": (
            plots.per_class_f1_figure,
            (space.labels, report["f1"].to_numpy(), report["support"].to_numpy(), f"{name}: F1 per label"),
        ),
        "plots/reliability.png": (plots.reliability_figure, (proba, y, f"{name}: reliability of top-1")),
    }
    from joblib import Parallel, delayed

    # n_jobs=1: joblib draws them here, one after the other
    images = Parallel(n_jobs=n_jobs)(delayed(plots.png)(draw, *args) for draw, args in figures.values())
    for path, image in zip(figures, images):
        run.png(image, path)
