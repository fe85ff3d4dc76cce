"""The training sweep: cross-validate every candidate as a nested MLflow run, refit the best on
all data, log it as the pyfunc prediction artifact and register it behind the promotion gate."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from papertrack import __version__
from papertrack.features.ingest import load_dataset
from papertrack.models.artifact import PREDICTOR_FILE, PaperTrackModel, TrackPredictor, signature
from papertrack.models.candidates import Candidate, select
from papertrack.training import registry, tracking
from papertrack.training.cv import CVResult, cross_validate
from papertrack.training.data import TrainingSet
from papertrack.training.metrics import PRIMARY_METRIC, evaluate, rank_key

CORE_REQUIREMENTS = ("scikit-learn", "numpy", "pandas", "scipy", "joblib", "mlflow", "lightgbm")


@dataclass
class CandidateResult:
    candidate: Candidate
    run_id: str
    metrics: dict[str, float]
    cv: CVResult = field(repr=False)


@dataclass
class SweepResult:
    parent_run_id: str
    data_digest: str
    results: list[CandidateResult]
    baseline: dict[str, float]
    winner: CandidateResult
    model_uri: str | None = None
    decision: registry.Decision | None = None
    wall_seconds: float = 0.0

    def leaderboard(self) -> list[CandidateResult]:
        return sorted(self.results, key=lambda r: rank_key(r.metrics), reverse=True)


def majority_baseline(data: TrainingSet) -> dict[str, float]:
    """Metrics of always answering the label frequencies of the training set."""
    prior = np.bincount(data.y, minlength=data.space.n_labels) / len(data.y)
    return evaluate(np.tile(prior, (len(data.y), 1)), data.y, data.space)


def pip_requirements(candidate: Candidate) -> list[str]:
    from importlib.metadata import PackageNotFoundError, version

    pinned = []
    for dist in (*CORE_REQUIREMENTS, *candidate.requirements):
        try:
            pinned.append(f"{dist}=={version(dist)}")
        except PackageNotFoundError:
            pinned.append(dist)
    return [*pinned, f"papertrack=={__version__}"]


def run_sweep(data_paths: Sequence[Path], *, fmt: str | None = None, candidate_names: list[str] | None = None,
              folds: int = 5, seed: int = 42, use_title: bool = False, register: bool = True,
              console: Console | None = None) -> SweepResult:
    console = console or Console()
    started = time.perf_counter()
    candidates = select(candidate_names)
    records, summary = load_dataset([str(p) for p in data_paths], fmt, labeled=True)
    for line in summary.lines():
        console.print(f"  {line}")
    data = TrainingSet.from_records(records, use_title=use_title)
    uri = tracking.configure()
    console.print(f"MLflow store: [bold]{uri}[/]  (experiment '{mlflow.get_experiment_by_name('papertrack').name}')")
    dataset = mlflow.data.from_pandas(data.frame(), source=", ".join(str(p) for p in data_paths),
                                      name=Path(data_paths[0]).name, targets="label", digest=data.digest)
    common = {"data_digest": data.digest, "data_paths": ", ".join(str(p) for p in data_paths),
              "records": len(records), "labels": data.space.n_labels, "areas": len(data.space.areas),
              "folds": folds, "seed": seed, "use_title": use_title}

    with mlflow.start_run(run_name=f"sweep-{time.strftime('%Y%m%d-%H%M%S')}") as parent:
        mlflow.set_tags({"papertrack.kind": "sweep", "papertrack.version": __version__})
        mlflow.log_params({**common, "candidates": ", ".join(c.name for c in candidates)})
        mlflow.log_input(dataset, context="training")
        baseline = majority_baseline(data)
        mlflow.log_metrics({f"baseline_{k}": v for k, v in baseline.items()})
        results = _evaluate_all(candidates, data, dataset, common, folds, seed, console)
        ranked = sorted(results, key=lambda r: rank_key(r.metrics), reverse=True)
        winner = ranked[0]
        mlflow.set_tags({"winner": winner.candidate.name, "winner_run_id": winner.run_id})
        mlflow.log_metrics({f"best_{k}": v for k, v in winner.metrics.items()})
        result = SweepResult(parent.info.run_id, data.digest, results, baseline, winner)
        console.print(f"Winner: [bold]{winner.candidate.name}[/] ({PRIMARY_METRIC} "
                      f"{winner.metrics[PRIMARY_METRIC]:.4f}); refitting on all {len(records):,} records")
        result.model_uri = _refit_and_log(winner, data, seed, use_title)
        if register:
            result.decision = registry.register(result.model_uri, winner.run_id, winner.metrics, data.digest,
                                                winner.candidate.name)
            mlflow.set_tag("registered_version", result.decision.version)
    result.wall_seconds = time.perf_counter() - started
    return result


def _evaluate_all(candidates, data: TrainingSet, dataset, common: dict, folds: int, seed: int,
                  console: Console) -> list[CandidateResult]:
    results = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task("cross-validating", total=len(candidates) * folds)
        for candidate in candidates:
            progress.update(task, description=f"{candidate.name:<34}")
            cv = cross_validate(lambda c=candidate: c.build(data.space.n_labels, seed), data.texts, data.y,
                                data.space, folds, seed, on_fold=lambda _: progress.advance(task))
            metrics = evaluate(cv.oof_proba, data.y, data.space)
            metrics.update(fit_seconds=cv.fit_seconds / folds, predict_ms_per_abstract=cv.predict_ms_per_abstract)
            with mlflow.start_run(run_name=candidate.name, nested=True) as run:
                mlflow.set_tags({"papertrack.kind": "candidate", "family": candidate.family,
                                 "candidate": candidate.name, "features": candidate.features})
                mlflow.log_params({**common, "family": candidate.family, "features": candidate.features,
                                   **{f"hp.{k}": v for k, v in candidate.params.items()}})
                mlflow.log_input(dataset, context="training")
                mlflow.log_metrics(metrics)
                tracking.log_evaluation_artifacts(cv.oof_proba, data.y, data.space, candidate.name)
            results.append(CandidateResult(candidate, run.info.run_id, metrics, cv))
            progress.console.print(f"  {candidate.name:<34} top3 {metrics['label_top3']:.3f}  "
                                   f"top1 {metrics['label_top1']:.3f}  area {metrics['area_top1']:.3f}  "
                                   f"macroF1 {metrics['label_macro_f1']:.3f}")
    return results


def _refit_and_log(winner: CandidateResult, data: TrainingSet, seed: int, use_title: bool) -> str:
    """Refit the winner on all data and log it, in the winner's own run, as the pyfunc artifact."""
    classifier = winner.candidate.build(data.space.n_labels, seed).fit(data.texts, data.y)
    info = {"candidate": winner.candidate.name, "family": winner.candidate.family, "data_digest": data.digest,
            "run_id": winner.run_id, "metrics": winner.metrics}
    predictor = TrackPredictor(classifier, data.space, info, use_title=use_title)
    example = pd.DataFrame({"abstract": [r.abstract for r in data.records[:2]],
                            "title": [r.title or "" for r in data.records[:2]]})
    with tempfile.TemporaryDirectory() as tmp, mlflow.start_run(run_id=winner.run_id, nested=True):
        path = predictor.save(Path(tmp) / PREDICTOR_FILE)
        info = mlflow.pyfunc.log_model(
            name="model", python_model=PaperTrackModel(), artifacts={"predictor": str(path)},
            signature=signature(), input_example=example, pip_requirements=pip_requirements(winner.candidate))
        mlflow.set_tag("refit", "all data")
    return info.model_uri
