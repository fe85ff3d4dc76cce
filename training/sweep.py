"""The training sweep: cross-validate every candidate as a nested MLflow run, refit the best on
all data, log it as the pyfunc prediction artifact and register it behind the promotion gate.

Candidates of every family compete in one sweep: TF-IDF ones, sentence-embedding ones (when the
``embeddings`` extra is installed; otherwise they are left out of the default sweep and one line
says so) and ensembles. Before cross-validation, every abstract is embedded once (progress bar,
on-disk cache); ensembles are then evaluated on their members' out-of-fold probabilities (weights
chosen with nested cross-validation, see :mod:`papertrack.training.ensemble`), without refitting
any member."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from papertrack import __version__
from papertrack.features.ingest import load_dataset
from papertrack.models.artifact import PREDICTOR_FILE, PaperTrackModel, TrackPredictor, signature
from papertrack.models.card import ModelCard
from papertrack.models.drift import build_profile
from papertrack.models.candidates import CANDIDATES, Candidate, select
from papertrack.models.ensemble import is_ensemble, members_of
from papertrack import registry, store
from papertrack.errors import UsageError
from papertrack.training import tracking
from papertrack.training.cv import CVResult, check_trainable, cross_validate, fold_indices
from papertrack.training.data import TrainingSet
from papertrack.registry import PRIMARY_METRIC, rank_key
from papertrack.training.metrics import evaluate

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
    embedding_seconds: float = 0.0  # embedding every abstract before cross-validation (cache misses)
    embedded_texts: int = 0  # abstracts the embedding model had to encode (0 with a warm cache)
    skipped: list[str] = field(default_factory=list)  # candidates left out (embeddings extra missing)
    refit_seconds: float = 0.0

    def leaderboard(self) -> list[CandidateResult]:
        return sorted(self.results, key=lambda r: rank_key(r.metrics), reverse=True)


def majority_baseline(data: TrainingSet) -> dict[str, float]:
    """Metrics of always answering the label frequencies of the training set."""
    prior = np.bincount(data.y, minlength=data.space.n_labels) / len(data.y)
    return evaluate(np.tile(prior, (len(data.y), 1)), data.y, data.space)


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


def run_sweep(data_paths: Sequence[Path], *, fmt: str | None = None, candidate_names: list[str] | None = None,
              folds: int = 5, seed: int = 42, use_title: bool = False, register: bool = True,
              console: Console | None = None, accept_suggested: bool = False) -> SweepResult:
    console = console or Console()
    started = time.perf_counter()
    candidates, skipped = plan_candidates(candidate_names, console)
    records, summary = load_dataset([str(p) for p in data_paths], fmt, labeled=True, accept_suggested=accept_suggested)
    for line in summary.lines():  # first: they say why records were left out (duplicates, model guesses)
        console.print(f"  {line}")
    check_trainable([r.label for r in records], folds, [str(p) for p in data_paths])
    data = TrainingSet.from_records(records, use_title=use_title)
    uri = store.configure()
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
        if skipped:
            mlflow.set_tag("skipped_candidates", ", ".join(skipped))
        baseline = majority_baseline(data)
        mlflow.log_metrics({f"baseline_{k}": v for k, v in baseline.items()})
        embed_seconds, embedded = warm_embeddings(candidates, data, seed, console)
        if embed_seconds:
            mlflow.log_metrics({"embedding_seconds": embed_seconds, "embedded_texts": embedded})
        singles = [c for c in candidates if not is_ensemble(c)]
        results = _evaluate_all(singles, data, dataset, common, folds, seed, console)
        results += _evaluate_ensembles([c for c in candidates if is_ensemble(c)], results, data, dataset,
                                       common, folds, seed, console)
        ranked = sorted(results, key=lambda r: rank_key(r.metrics), reverse=True)
        winner = ranked[0]
        mlflow.set_tags({"winner": winner.candidate.name, "winner_run_id": winner.run_id})
        mlflow.log_metrics({f"best_{k}": v for k, v in winner.metrics.items()})
        result = SweepResult(parent.info.run_id, data.digest, results, baseline, winner,
                             embedding_seconds=embed_seconds, embedded_texts=embedded, skipped=skipped)
        console.print(f"Winner: [bold]{winner.candidate.name}[/] ({PRIMARY_METRIC} "
                      f"{winner.metrics[PRIMARY_METRIC]:.4f}); refitting on all {len(records):,} records")
        refit_started = time.perf_counter()
        result.model_uri = _refit_and_log(winner, data, seed, use_title)
        result.refit_seconds = time.perf_counter() - refit_started
        console.print(f"Refit and logged the winner in {result.refit_seconds:.1f} s")
        if register:
            result.decision = registry.register(result.model_uri, winner.run_id, winner.metrics, data.digest,
                                                winner.candidate.name)
            mlflow.set_tag("registered_version", result.decision.version)
    result.wall_seconds = time.perf_counter() - started
    return result


def plan_candidates(names: list[str] | None, console: Console) -> tuple[list[Candidate], list[str]]:
    """The candidates to run, in order: members of a selected ensemble are added before it (they
    are cross-validated and logged like any candidate). Candidates needing the embeddings extra are
    left out of the default sweep — with one printed line — when it is not installed; naming one
    explicitly is then an error."""
    from papertrack.features.embeddings import unavailable_reason
    from papertrack.models.embedding_candidates import needs_embeddings

    chosen = select(names)
    reason = unavailable_reason()
    if reason:
        unusable = [c.name for c in chosen if needs_embeddings(c)]
        if unusable and names:
            raise UsageError(f"candidate(s) {', '.join(unusable)} need sentence embeddings, but {reason}")
        if unusable:
            console.print(f"[yellow]Leaving out {len(unusable)} embedding candidate(s) "
                          f"({', '.join(unusable)}): {escape(reason)}[/]")
        chosen = [c for c in chosen if not needs_embeddings(c)]
    else:
        unusable = []
    planned: dict[str, Candidate] = {}
    for candidate in chosen:
        if is_ensemble(candidate):
            added = [m for m in members_of(candidate) if m not in planned and m not in {c.name for c in chosen}]
            for member in members_of(candidate):
                if member not in CANDIDATES:
                    raise UsageError(f"ensemble {candidate.name!r}: member {member!r} is not a registered candidate")
                planned.setdefault(member, CANDIDATES[member])
            if added:
                console.print(f"  ensemble {candidate.name} adds its member(s): {', '.join(added)}")
        planned[candidate.name] = candidate
    # singles first (in order), then ensembles, which are evaluated on the singles' OOF matrices
    ordered = [c for c in planned.values() if not is_ensemble(c)] + [c for c in planned.values() if is_ensemble(c)]
    return ordered, unusable


def warm_embeddings(candidates: Sequence[Candidate], data: TrainingSet, seed: int,
                    console: Console) -> tuple[float, int]:
    """Embed every abstract once (cache misses only, with a progress bar) before cross-validation,
    so that no fold waits for the embedding model. Returns (seconds, texts encoded)."""
    from papertrack.features.embeddings import embedding_steps, get_embedder

    backends: dict[str, object] = {}
    for candidate in candidates:
        if is_ensemble(candidate):
            continue
        for step in embedding_steps(candidate.build(data.space.n_labels, seed)):
            backends.setdefault(step.backend, step)
    seconds, encoded = 0.0, 0
    for backend, step in backends.items():
        embedder = get_embedder(backend)
        started = time.perf_counter()
        texts = step.warm(data.texts, progress=True, console=console)
        elapsed = time.perf_counter() - started
        seconds, encoded = seconds + elapsed, encoded + texts
        where = embedder.cache.path if embedder.cache else "no disk cache"
        rate = f", {texts / elapsed:.1f} abstracts/s" if texts else ""
        console.print(f"Embeddings ({backend}): {len(data.texts) - texts:,} of {len(data.texts):,} abstracts from "
                      f"the cache, {texts:,} encoded in {elapsed:.1f} s{rate} ({where})")
    return seconds, encoded


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
            run_id = _log_candidate(candidate, metrics, cv.oof_proba, data, dataset, common)
            results.append(CandidateResult(candidate, run_id, metrics, cv))
            _print_line(progress.console, candidate.name, metrics)
    return results


def _print_line(console: Console, name: str, metrics: dict[str, float]) -> None:
    console.print(f"  {name:<34} top3 {metrics['label_top3']:.3f}  top1 {metrics['label_top1']:.3f}  "
                  f"area {metrics['area_top1']:.3f}  macroF1 {metrics['label_macro_f1']:.3f}")


def _log_candidate(candidate: Candidate, metrics: dict[str, float], oof: np.ndarray, data: TrainingSet, dataset,
                   common: dict, extra_params: dict | None = None) -> str:
    with mlflow.start_run(run_name=candidate.name, nested=True) as run:
        mlflow.set_tags({"papertrack.kind": "candidate", "family": candidate.family,
                         "candidate": candidate.name, "features": candidate.features})
        mlflow.log_params({**common, "family": candidate.family, "features": candidate.features,
                           **{f"hp.{k}": v for k, v in candidate.params.items()}, **(extra_params or {})})
        mlflow.log_input(dataset, context="training")
        mlflow.log_metrics(metrics)
        tracking.log_evaluation_artifacts(oof, data.y, data.space, candidate.name)
    return run.info.run_id


def _evaluate_ensembles(ensembles: Sequence[Candidate], singles: list[CandidateResult], data: TrainingSet,
                        dataset, common: dict, folds: int, seed: int, console: Console) -> list[CandidateResult]:
    """Each ensemble: weights chosen (nested) on its members' OOF matrices — no member is refit."""
    from papertrack.training.ensemble import cross_validate_ensemble

    by_name = {r.candidate.name: r for r in singles}
    oof = {name: r.cv.oof_proba for name, r in by_name.items()}
    split = fold_indices(data.y, data.space, folds, seed)
    results = []
    for candidate in ensembles:
        members = members_of(candidate)
        member_results = [by_name[m] for m in members]
        started = time.perf_counter()
        ens = cross_validate_ensemble(candidate, oof, data.y, split)
        search_seconds = time.perf_counter() - started
        used = [r for r, w in zip(member_results, ens.weights) if w > 0]
        metrics = evaluate(ens.oof_proba, data.y, data.space)
        metrics.update(
            # what the refit ensemble costs: its members' fits and predictions (an upper bound for
            # prediction: members with identical feature steps share one transform)
            fit_seconds=sum(r.metrics["fit_seconds"] for r in used),
            predict_ms_per_abstract=sum(r.metrics["predict_ms_per_abstract"] for r in used),
            weight_search_seconds=search_seconds,
            **{f"insample_{k}": v for k, v in evaluate(ens.insample_proba, data.y, data.space).items()
               if k in (PRIMARY_METRIC, "label_top1", "label_macro_f1", "area_top1")},
        )
        weights = {m: round(float(w), 4) for m, w in zip(members, ens.weights)}
        extra = {"weights": ", ".join(f"{m}={w:g}" for m, w in weights.items()),
                 **{f"fold{i}_weights": ", ".join(f"{w:g}" for w in np.round(fw, 4))
                    for i, fw in enumerate(ens.fold_weights)}}
        resolved = _with_weights(candidate, [float(w) for w in ens.weights])
        run_id = _log_candidate(resolved, metrics, ens.oof_proba, data, dataset, common, extra)
        cv = CVResult(ens.oof_proba, sum(r.cv.fit_seconds for r in used), sum(r.cv.predict_seconds for r in used),
                      folds)
        results.append(CandidateResult(resolved, run_id, metrics, cv))
        _print_line(console, candidate.name, metrics)
        console.print(f"  {'':<34} weights: " + ", ".join(f"{m} {w:.2f}" for m, w in weights.items() if w > 0))
    return results


def _with_weights(candidate: Candidate, weights: list[float]) -> Candidate:
    """The ensemble candidate whose build uses the weights chosen on all OOF rows (for the refit)."""
    build = candidate.build
    params = {**candidate.params, "weights": ", ".join(f"{w:g}" for w in np.round(weights, 4))}
    return dataclasses.replace(candidate, params=params, build=lambda n, seed: build(n, seed, weights))


def _refit_and_log(winner: CandidateResult, data: TrainingSet, seed: int, use_title: bool) -> str:
    """Refit the winner on all data and log it, in the winner's own run, as the pyfunc artifact."""
    classifier = winner.candidate.build(data.space.n_labels, seed).fit(data.texts, data.y)
    card = ModelCard(candidate=winner.candidate.name, family=winner.candidate.family, data_digest=data.digest,
                     run_id=winner.run_id, metrics=winner.metrics, n_labels=data.space.n_labels,
                     n_areas=len(data.space.areas), use_title=use_title)
    predictor = TrackPredictor(classifier, data.space, card, use_title=use_title,
                               training_profile=build_profile(data.texts, data.y, data.space, winner.cv.oof_proba, seed))
    example = pd.DataFrame({"abstract": [r.abstract for r in data.records[:2]],
                            "title": [r.title or "" for r in data.records[:2]]})
    with tempfile.TemporaryDirectory() as tmp, mlflow.start_run(run_id=winner.run_id, nested=True):
        path = predictor.save(Path(tmp) / PREDICTOR_FILE)
        logged = mlflow.pyfunc.log_model(
            name="model", python_model=PaperTrackModel(), artifacts={"predictor": str(path)},
            signature=signature(), input_example=example, pip_requirements=pip_requirements(winner.candidate))
        mlflow.set_tag("refit", "all data")
    return logged.model_uri
