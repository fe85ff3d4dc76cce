"""How the default champion's next-year accuracy grows with the amount of labeled training data.

Trains ``ensemble-tfidf`` exactly as ``benchmarks/bench_temporal.py`` does (the sweep's recipe: member weights from
the training side's inner 3-fold out-of-fold probabilities, members refit) on a stratified fraction of the 2024
labeled papers (ICLR 2024 + ICML 2024, the Genetics rename applied) and scores it on ICLR 2025, for several
fractions and seeds. A least-squares fit of top-3 against log(training records) then says how many labeled
records the issue's goals would need if the curve kept its slope.

    taskset -c 1 .venv/bin/python benchmarks/bench_learning_curve.py --seeds 42 7 123 --plot docs/learning-curve.png

The fraction of every label is kept (at least one record per label); the test side never reaches a fit (the
leak guard of bench_temporal, by abstract key).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_temporal import DEFAULT_DATA, Context, fit_ensemble, load_context  # noqa: E402

from papertrack.training.scoring import evaluate  # noqa: E402

GOALS = {"label_top3": 0.78, "label_top1": 0.55, "area_top1": 0.70}


def stratified_fraction(y: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Indices of ``fraction`` of every label's rows (rounded up, at least one), drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    keep = []
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        keep.extend(rng.choice(rows, size=max(1, math.ceil(fraction * len(rows))), replace=False))
    return np.sort(np.array(keep))


def run(ctx: Context, test_texts: list[str], y_test: np.ndarray, fractions, seeds) -> list[dict]:
    rows = []
    for fraction in fractions:
        for seed in seeds:
            started = time.perf_counter()
            keep = stratified_fraction(ctx.y, fraction, seed)
            model = fit_ensemble(ctx, seed, [ctx.texts[i] for i in keep], ctx.y[keep])
            metrics = evaluate(model.predict_proba(test_texts), y_test, ctx.space)
            row = {"fraction": fraction, "seed": seed, "n": len(keep)} | {k: metrics[k] for k in GOALS}
            rows.append(row)
            print(
                f"fraction {fraction:.2f} seed {seed:>3}: {len(keep):>5} records  top-3 {row['label_top3']:.3f}  "
                f"top-1 {row['label_top1']:.3f}  area {row['area_top1']:.3f}  ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
    return rows


def summarise(rows: list[dict]) -> None:
    print("\n| training records (fraction of 2024) | label top-3 | label top-1 | area top-1 |")
    print("|---|---|---|---|")
    for fraction in sorted({r["fraction"] for r in rows}):
        group = [r for r in rows if r["fraction"] == fraction]
        cells = []
        for key in GOALS:
            values = [r[key] for r in group]
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            cells.append(f"{statistics.mean(values):.3f} ± {sd:.3f}")
        print(f"| {round(statistics.mean(r['n'] for r in group)):,} ({fraction:.0%}) | " + " | ".join(cells) + " |")
    n = np.array([r["n"] for r in rows], dtype=float)
    print()
    for key, goal in GOALS.items():
        slope, intercept = np.polyfit(np.log(n), [r[key] for r in rows], 1)
        per_doubling = slope * math.log(2)
        needed = math.exp((goal - intercept) / slope) if slope > 0 else math.inf
        print(
            f"{key}: {per_doubling:+.3f} per doubling of the training data; the goal {goal} at ~{needed:,.0f} "
            f"records if the log-linear trend held ({needed / n.max():.1f}x the 2024 data)"
        )


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for key, colour in zip(GOALS, ("tab:blue", "tab:orange", "tab:green")):
        fractions = sorted({r["fraction"] for r in rows})
        xs = [statistics.mean(r["n"] for r in rows if r["fraction"] == f) for f in fractions]
        ys = [statistics.mean(r[key] for r in rows if r["fraction"] == f) for f in fractions]
        ax.plot(xs, ys, "o-", color=colour, label=key.replace("_", " "))
        ax.axhline(GOALS[key], color=colour, linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("2024 training records (log scale)")
    ax.set_ylabel("ICLR 2025 (next year) accuracy")
    ax.set_title("ensemble-tfidf: next-year accuracy vs training data\n(dotted: issue 17 goals)")
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.125, 0.25, 0.5, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 7, 123])
    parser.add_argument("--plot", type=Path, help="write the curve as a PNG here")
    args = parser.parse_args()
    ctx, test_texts, y_test = load_context(args.data)
    rows = run(ctx, test_texts, y_test, args.fractions, args.seeds)
    summarise(rows)
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
