"""Next-year accuracy per taxonomy: crosswalk heads (what `papertrack train` does) against one union label space.

For each seed, on the shared data's four labeled files:

* **heads** (today's default): the main taxonomy (ICLR 2024 + ICML 2024 + ICLR 2025, ICLR's names) and the ICML 2025
  head taught by the older papers through the shipped crosswalk. Figures per taxonomy, each in its own names:
  ``temporal`` (trained on 2024 only, tested on the 2025 source), ``known`` (k-fold over its own 2025 papers, every
  older paper on the training side; the main taxonomy: k-fold over all its rows, read on its 2025 papers), area
  top-1, the Position papers' area recall, and the prediction sets' coverage and mean
  size (cross-conformal on the calibration rows the refit uses).
* **union** (before taxonomies): one label space, every file's labels as they are (``--no-crosswalks``); its
  temporal holdout trained on 2024 and scored on each 2025 source in the union of names.

The per-row top-3 hits of both on the same 2025 papers give a paired bootstrap interval of the difference
(heads - union). Run: ``python benchmarks/bench_taxonomies.py --seeds 0 1 2 -c ensemble-tfidf`` (writes JSON with
``--out``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from papertrack import settings
from papertrack.features.crosswalk import shipped_crosswalks
from papertrack.models.confidence import calibrate
from papertrack.training import native_mixture, taxonomies
from papertrack.training.champion import paired_bootstrap
from papertrack.training.config import SweepConfig
from papertrack.training.cv import fold_indices, known_names_split
from papertrack.training.data import temporal_direction
from papertrack.training.evaluation import evaluate_candidates
from papertrack.training.pipeline import read
from papertrack.training.planning import plan_candidates
from papertrack.training.renames import RenameMap
from papertrack.training.scoring import evaluate


def hits(proba: np.ndarray, y: np.ndarray, k: int = 3) -> np.ndarray:
    top = np.argsort(-proba, axis=1, kind="stable")[:, :k]
    return np.any(top == y[:, None], axis=1).astype(np.float64)


def head_figures(head, results: dict, name: str) -> dict:
    data = head.data
    r = results[name]
    test_y = r.temporal.held_out(data.y)[1]
    test_p = r.temporal.held_out(data.y)[0]
    temporal = evaluate(test_p, test_y, data.space)
    native = data.native_rows
    known = evaluate(r.cv.oof_proba[native], data.y[native], data.space)
    out = {
        "taxonomy": head.name,
        "temporal_top3": temporal["label_top3"],
        "temporal_top1": temporal["label_top1"],
        "temporal_area_top1": temporal["area_top1"],
        "known_top3": known["label_top3"],
        "known_area_top1": known["area_top1"],
        "temporal_rows": len(test_y),
    }
    # calibration as the refit uses it: the default taxonomy on its temporal holdout, others on the known rows
    cal_p, cal_y = (test_p, test_y) if head.crosswalk is None else (r.cv.oof_proba[native], data.y[native])
    confidence = calibrate(cal_p, cal_y)
    out.update(
        coverage=confidence.empirical_coverage,
        mean_set_size=confidence.mean_set_size,
        confident_share=confidence.confident_share,
        n_labels=data.space.n_labels,
    )
    position = [i for i, label in enumerate(data.space.labels) if label.startswith("Position")]
    if position:
        area_of = data.space.label_area
        pos_area = area_of[position[0]]
        for rows_name, proba, y in (("temporal", test_p, test_y), ("known", r.cv.oof_proba[native], data.y[native])):
            mask = area_of[y] == pos_area
            if mask.any():
                area_p = data.space.area_proba(proba[mask])
                out[f"position_area_recall_{rows_name}"] = float((area_p.argmax(axis=1) == pos_area).mean())
                out["position_papers"] = int(mask.sum())
    out["_hits"] = hits(test_p, test_y)
    out["_test_ids"] = [data.records[i].id for i in r.temporal.rows]
    return out


def union_hits(records, candidates, seed: int, n_jobs: int, folds: int = 5) -> dict[str, tuple[np.ndarray, list[str]]]:
    """The union label space's temporal top-3 hits on each 2025 source (in the union of names)."""
    heads = taxonomies.build(records, RenameMap.with_extra(()), [], use_title=False)
    data = heads.default.data
    temporal, _ = temporal_direction(data)
    split = fold_indices(data.y, data.space, folds, seed)
    results = evaluate_candidates(candidates, data, split, seed, None, (), temporal, n_jobs)
    r = {x.candidate.name: x for x in results}[candidates[-1].name]
    proba, y = r.temporal.held_out(data.y)
    rows = r.temporal.rows
    out = {}
    for source in sorted(set(data.sources[rows].tolist())):
        mask = data.sources[rows] == source
        out[source] = (hits(proba[mask], y[mask]), [data.records[i].id for i in rows[mask]])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("-c", "--candidate", default="ensemble-tfidf")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-union", action="store_true", help="skip the union comparison")
    parser.add_argument(
        "--main-folds",
        type=int,
        default=5,
        help="CV folds of the main taxonomy and the union (not reported)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    settings.quiet_third_parties()
    config = SweepConfig()
    records, _ = read(config)
    candidates = plan_candidates([args.candidate]).candidates
    crosswalks = taxonomies.read_crosswalks(shipped_crosswalks())
    heads = taxonomies.build(records, RenameMap.with_extra(()), crosswalks)
    report: dict = {"candidate": args.candidate, "seeds": {}}
    for seed in args.seeds:
        started = time.perf_counter()
        per_head = []
        for head in heads.heads:
            temporal, _ = temporal_direction(head.data)
            split = (
                fold_indices(head.data.y, head.data.space, args.main_folds, seed)
                if head.crosswalk is None
                else known_names_split(head.data.y, head.data.space, head.data.native_rows, 5, seed)
            )
            results = evaluate_candidates(candidates, head.data, split, seed, None, (), temporal, args.jobs)
            if head.crosswalk is not None:  # what the sweep does (training.pipeline.evaluate_head)
                native_mixture.mix_results(results, head.data, split, seed, args.jobs)
            per_head.append(head_figures(head, {r.candidate.name: r for r in results}, args.candidate))
        if not args.no_union:
            union = union_hits(records, candidates, seed, args.jobs, args.main_folds)
            for figures in per_head:
                source = figures["taxonomy"]
                if source in union:
                    u_hits, u_ids = union[source]
                    order = {i: k for k, i in enumerate(u_ids)}
                    aligned = u_hits[[order[i] for i in figures["_test_ids"]]]
                    diff, low, high = paired_bootstrap(figures["_hits"], aligned, seed=seed)
                    figures["union_temporal_top3"] = float(aligned.mean())
                    figures["heads_minus_union"] = [diff, low, high]
        for figures in per_head:
            figures.pop("_hits"), figures.pop("_test_ids")
        report["seeds"][seed] = {"heads": per_head, "seconds": round(time.perf_counter() - started, 1)}
        print(json.dumps({seed: report["seeds"][seed]}, indent=1), flush=True)
    means: dict = {}
    for seed_report in report["seeds"].values():
        for figures in seed_report["heads"]:
            for key, value in figures.items():
                if isinstance(value, float):
                    means.setdefault(figures["taxonomy"], {}).setdefault(key, []).append(value)
    report["mean"] = {t: {k: float(np.mean(v)) for k, v in m.items()} for t, m in means.items()}
    print(json.dumps(report["mean"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
