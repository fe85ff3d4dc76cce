"""The full default sweep under several seeds, run exactly as users run it, read back from MLflow.

    PAPERTRACK_HOME=/tmp/acc-home .venv/bin/python benchmarks/bench_sweep_seeds.py --seeds 42 7 123

For each seed: ``papertrack train --seed S --no-register`` in its own process (default data: both
labeled years; every default candidate), all in the same ``PAPERTRACK_HOME`` so that the sentence
embeddings are computed once (the first seed) and read from the cache afterwards. The seed changes
the CV folds, the inner CV that picks ensemble weights, and the models' own seeds. Then the sweeps'
candidate runs are read from the MLflow store (``mlflow.search_runs``) and printed as markdown:
per candidate, CV top-3 / top-1 / area and shift top-3 / top-1 / area / macro-F1 as mean ± sd over
the seeds; the per-seed figures; and per seed the candidate the champion rule picked with its
decision (tag ``champion_rule`` of the sweep's parent run).

``--read-only`` skips training and reads the latest sweep of each seed already in the store.
Each train's output goes to ``<log-dir>/train-seed<S>.log`` (default: ``PAPERTRACK_HOME``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import mlflow
from shared_data import papertrack_exe

from papertrack import settings, store
from papertrack.registry import rank_key

CV = ("cv_label_top3", "cv_label_top1", "cv_area_top1")
SHIFT = ("shift_label_top3", "shift_label_top1", "shift_area_top1", "shift_label_macro_f1")
HEAD = ("CV top3", "CV top1", "CV area", "shift top3", "shift top1", "shift area", "shift macro-F1")


def train(seed: int, log_dir: Path, extra: list[str]) -> float:
    """``papertrack train --seed S --no-register [extra]`` in its own process; returns wall seconds."""
    log = log_dir / f"train-seed{seed}.log"
    command = [papertrack_exe(), "train", "--seed", str(seed), "--no-register", *extra]
    print(f"# seed {seed}: {' '.join(command)}  (output: {log})", file=sys.stderr, flush=True)
    started = time.perf_counter()
    with open(log, "w", encoding="utf-8") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, env=os.environ.copy()).returncode
    seconds = time.perf_counter() - started
    if code != 0:
        sys.exit(f"papertrack train --seed {seed} failed (exit {code}); see {log}")
    print(f"# seed {seed}: done in {seconds:.0f} s", file=sys.stderr, flush=True)
    return seconds


def latest_sweep(experiment_id: str, seed: int):
    sweeps = mlflow.search_runs(
        [experiment_id],
        f"tags.`papertrack.kind` = 'sweep' and params.seed = '{seed}'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    if sweeps.empty:
        sys.exit(f"no sweep with seed {seed} in {mlflow.get_tracking_uri()}")
    return sweeps.iloc[0]


def read_seed(experiment_id: str, seed: int) -> dict:
    """The sweep of ``seed``: its champion decision and every candidate's metrics."""
    sweep = latest_sweep(experiment_id, seed)
    runs = mlflow.search_runs(
        [experiment_id],
        f"tags.`mlflow.parentRunId` = '{sweep['run_id']}' and tags.`papertrack.kind` = 'candidate'",
        max_results=1000,
    )
    candidates = {}
    for row in runs.to_dict("records"):
        metrics = {
            k.removeprefix("metrics."): v
            for k, v in row.items()
            if k.startswith("metrics.") and v == v and v is not None
        }
        candidates[row["tags.candidate"]] = metrics
    baseline = {
        k.removeprefix("metrics.baseline_"): v
        for k, v in sweep.items()
        if k.startswith("metrics.baseline_") and v == v and v is not None
    }
    return {
        "seed": seed,
        "parent_run_id": sweep["run_id"],
        "winner": sweep.get("tags.champion_rule.winner"),
        "leader": sweep.get("tags.champion_rule.leader"),
        "decision": sweep.get("tags.champion_rule"),
        "candidates": candidates,
        "baseline": baseline,
    }


def mean_sd(values: list[float]) -> str:
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def report(per_seed: list[dict]) -> None:
    seeds = [s["seed"] for s in per_seed]
    names = sorted(
        {n for s in per_seed for n in s["candidates"]}, key=lambda n: rank_key(_means(per_seed, n)), reverse=True
    )
    print(f"\n### Mean ± sd over seeds {', '.join(map(str, seeds))} (sample sd, n = {len(seeds)})\n")
    print("| candidate | " + " | ".join(HEAD) + " | champion |")
    print("|---|" + "---:|" * len(HEAD) + "---:|")
    for name in names:
        cells = [
            mean_sd([s["candidates"][name][k] for s in per_seed if k in s["candidates"].get(name, {})])
            for k in (*CV, *SHIFT)
        ]
        wins = sum(s["winner"] == name for s in per_seed)
        print(f"| {name} | " + " | ".join(cells) + f" | {wins}/{len(seeds)} |")
    base = [mean_sd([s["baseline"][k] for s in per_seed if k in s["baseline"]]) for k in (*CV, *SHIFT)]
    print("| majority baseline | " + " | ".join(base) + " | – |")

    print(f"\n### Per seed ({' / '.join(map(str, seeds))})\n")
    print(
        "| candidate | CV top3 | CV area | shift top3 | shift area | "
        + " | ".join(f"shift top3 {d}" for d in _directions(per_seed))
        + " |"
    )
    print("|---|" + "---:|" * (4 + len(_directions(per_seed))))
    for name in names:

        def col(key: str, name: str = name) -> str:
            return " / ".join(
                f"{s['candidates'][name][key]:.3f}" if key in s["candidates"].get(name, {}) else "–" for s in per_seed
            )

        cells = [col(k) for k in ("cv_label_top3", "cv_area_top1", "shift_label_top3", "shift_area_top1")]
        cells += [col(f"shift_label_top3.{d}") for d in _directions(per_seed)]
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\n### The champion rule, per seed\n")
    print("| seed | leader (best shift top-3) | champion | decision (tag `champion_rule`) |")
    print("|---:|---|---|---|")
    for s in per_seed:
        print(f"| {s['seed']} | {s['leader']} | **{s['winner']}** | `{s['decision']}` |")


def _means(per_seed: list[dict], name: str) -> dict[str, float]:
    keys = {k for s in per_seed for k in s["candidates"].get(name, {})}
    return {
        k: statistics.mean([s["candidates"][name][k] for s in per_seed if k in s["candidates"].get(name, {})])
        for k in keys
    }


def _directions(per_seed: list[dict]) -> list[str]:
    return sorted(
        {
            k.removeprefix("shift_label_top3.")
            for s in per_seed
            for m in s["candidates"].values()
            for k in m
            if k.startswith("shift_label_top3.")
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 7, 123])
    parser.add_argument("--read-only", action="store_true", help="do not train; read the latest sweep of each seed")
    parser.add_argument("--log-dir", type=Path, default=None, help="where each train's output goes (default: home)")
    parser.add_argument("--json", type=Path, default=None, help="also write the per-seed figures here")
    parser.add_argument("train_args", nargs="*", help="after --: more `papertrack train` options (e.g. -c NAME)")
    args = parser.parse_args()
    home = settings.current().home
    log_dir = args.log_dir or home
    log_dir.mkdir(parents=True, exist_ok=True)
    seconds = {}
    if not args.read_only:
        for seed in args.seeds:
            seconds[seed] = train(seed, log_dir, args.train_args)
    opened = store.open()
    uri = opened.tracking_uri
    experiment = opened.experiment()
    with store.using(opened):  # mlflow.search_runs reads MLflow's process-wide store
        per_seed = [read_seed(experiment.experiment_id, seed) for seed in args.seeds]
    for s in per_seed:
        s["train_seconds"] = seconds.get(s["seed"])
    print(
        f"Store: {uri}; sweeps: "
        + ", ".join(
            f"seed {s['seed']} = {s['parent_run_id'][:8]}"
            + (f" ({s['train_seconds']:.0f} s)" if s["train_seconds"] else "")
            for s in per_seed
        )
    )
    report(per_seed)
    if args.json:
        args.json.write_text(json.dumps(per_seed, indent=1, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
