"""Does asking for the right labels beat labeling at random? A simulation of `papertrack suggest`.

    .venv/bin/python benchmarks/bench_active.py --seeds 42 7 123 --rounds 8 --batch 100 \
        --plot benchmarks/active_learning.png --json benchmarks/active_learning.json

Start: a model trained on ICLR 2024 (1,996 labeled abstracts). Pool: 80% of ICML 2024 with its labels
hidden from the learner; test: the other 20% of ICML 2024 (split per seed). Each round the strategy picks
``--batch`` pool abstracts with the current model (the same code as ``papertrack suggest``:
:func:`papertrack.serving.batch.suggest.choose` on :meth:`TrackPredictor.predict_proba` and
:meth:`TrackPredictor.text_features`), their true labels are revealed, the model is refit on ICLR + all
picks so far and scored on the test part. Strategies: diverse (uncertainty + MMR), uncertainty (margin;
``--measure entropy`` for the entropy), random. Learner: the ``tfidf-word-logreg`` candidate
(cheap: the whole run is minutes on 2 cores).
Reported: label top-3 / top-1 on the test part per round, mean and spread (min–max) over seeds, and how
many labels each strategy needs to reach random's accuracy at the last round.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from shared_data import DATA  # noqa: E402

from papertrack.models.artifact import TrackPredictor  # noqa: E402
from papertrack.models.candidates import CANDIDATES  # noqa: E402
from papertrack.models.card import ModelCard  # noqa: E402
from papertrack.models.hierarchy import LabelSpace  # noqa: E402
from papertrack.serving.batch.suggest import choose  # noqa: E402
from papertrack.training.dataset import load_dataset  # noqa: E402
from papertrack.training.scoring import evaluate  # noqa: E402

STRATEGIES = ("diverse", "uncertainty", "random")
LEARNER = "tfidf-word-logreg"


def load(name: str):
    records, _ = load_dataset([str(DATA / name)], None, labeled=True)
    return [r.abstract for r in records], [r.label for r in records]


def fit(texts: list[str], y: np.ndarray, space: LabelSpace, seed: int) -> TrackPredictor:
    classifier = CANDIDATES[LEARNER].build(space.n_labels, seed).fit(texts, y)
    card = ModelCard(candidate=LEARNER, family="logreg", data_digest="simulation", run_id="simulation")
    return TrackPredictor(classifier, space, card)


def run_seed(seed: int, strategies, rounds: int, batch: int, base, target, measure: str = "margin") -> dict:
    base_texts, base_y, space = base
    texts, y = target
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(texts))
    cut = int(0.8 * len(texts))
    pool, test = order[:cut], order[cut:]
    test_texts, test_y = [texts[i] for i in test], y[test]

    def score(model: TrackPredictor) -> dict:
        m = evaluate(model.predict_proba(test_texts), test_y, space)
        return {"label_top3": m["label_top3"], "label_top1": m["label_top1"], "area_top1": m["area_top1"]}

    started = time.perf_counter()
    start_model = fit(base_texts, base_y, space, seed)
    start = score(start_model)
    curves = {}
    for strategy in strategies:
        model, picked, remaining = start_model, [], list(pool)
        curve = [{"labels": 0, **start}]
        for r in range(1, rounds + 1):
            pool_texts = [texts[i] for i in remaining]
            proba = model.predict_proba(pool_texts)
            features = model.text_features(pool_texts) if strategy == "diverse" else None
            chosen = choose(proba, batch, strategy, features=features, measure=measure, seed=seed * 1000 + r)
            picked += [remaining[i] for i in chosen]
            chosen_set = set(chosen)
            remaining = [idx for i, idx in enumerate(remaining) if i not in chosen_set]
            model = fit(base_texts + [texts[i] for i in picked], np.concatenate([base_y, y[picked]]), space, seed)
            curve.append({"labels": len(picked), **score(model)})
            print(
                f"  seed {seed} {strategy:<11} {len(picked):>4} labels: top-3 {curve[-1]['label_top3']:.4f} "
                f"top-1 {curve[-1]['label_top1']:.4f}  ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
        curves[strategy] = curve
    return {"seed": seed, "pool": len(pool), "test": len(test), "curves": curves}


def summarise(results: list[dict], strategies, metric: str = "label_top3") -> dict:
    out = {}
    for strategy in strategies:
        per_round = list(zip(*[[p[metric] for p in r["curves"][strategy]] for r in results]))
        labels = [p["labels"] for p in results[0]["curves"][strategy]]
        out[strategy] = [
            {
                "labels": n,
                "mean": statistics.fmean(v),
                "min": min(v),
                "max": max(v),
                "sd": statistics.stdev(v) if len(v) > 1 else 0.0,
            }
            for n, v in zip(labels, per_round)
        ]
    return out


def labels_to_reach(curve: list[dict], target: float) -> int | None:
    """Fewest labels at which the mean curve reaches ``target`` (linear between rounds); None if never."""
    for before, after in zip(curve, curve[1:]):
        if before["mean"] >= target:
            return before["labels"]
        if after["mean"] >= target:
            share = (target - before["mean"]) / (after["mean"] - before["mean"])
            return int(round(before["labels"] + share * (after["labels"] - before["labels"])))
    return None


def markdown(summary: dict, summary_top1: dict, seeds) -> str:
    strategies = list(summary)
    rounds = [p["labels"] for p in summary[strategies[0]]]
    lines = [
        f"Label top-3 on the held-out 20% of ICML 2024, mean over seeds {', '.join(map(str, seeds))} "
        "(min–max in brackets):",
        "",
        "| labels | " + " | ".join(strategies) + " |",
        "|---:|" + "---:|" * len(strategies),
    ]
    for i, n in enumerate(rounds):
        cells = [
            f"{summary[s][i]['mean']:.4f} ({summary[s][i]['min']:.3f}–{summary[s][i]['max']:.3f})" for s in strategies
        ]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Label top-1, mean over seeds:",
        "",
        "| labels | " + " | ".join(strategies) + " |",
        "|---:|" + "---:|" * len(strategies),
    ]
    for i, n in enumerate(rounds):
        lines.append(f"| {n} | " + " | ".join(f"{summary_top1[s][i]['mean']:.4f}" for s in strategies) + " |")
    if "random" in summary:
        target = summary["random"][-1]["mean"]
        lines += ["", f"Labels needed to reach random's {rounds[-1]}-label top-3 ({target:.4f}), mean curves:", ""]
        for s in strategies:
            need = labels_to_reach(summary[s], target)
            lines.append(f"- {s}: {'not reached' if need is None else f'{need}'}")
    return "\n".join(lines)


def plot(
    summary: dict, path: Path, title: str = "Active labeling, tfidf-word-logreg (band: min–max over seeds)"
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2), dpi=120)
    for strategy, curve in summary.items():
        x = [p["labels"] for p in curve]
        ax.plot(x, [p["mean"] for p in curve], marker="o", label=strategy)
        ax.fill_between(x, [p["min"] for p in curve], [p["max"] for p in curve], alpha=0.15)
    ax.set_xlabel("ICML 2024 labels added to ICLR 2024 (picked by the strategy)")
    ax.set_ylabel("label top-3 on held-out ICML 2024")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 7, 123])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    parser.add_argument("--measure", default="margin", choices=("margin", "entropy"), help="uncertainty measure")
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--replot", type=Path, default=None, help="only redraw --plot from an earlier --json file")
    args = parser.parse_args()
    if args.replot:
        saved = json.loads(args.replot.read_text(encoding="utf-8"))
        plot(
            saved["summary"],
            args.plot or args.replot.with_suffix(".png"),
            f"Active labeling, tfidf-word-logreg, {saved['args'].get('measure', 'margin')} (band: min–max over seeds)",
        )
        return

    base_texts, base_labels = load("iclr2024_topics.jsonl")
    texts, labels = load("icml2024_topics.jsonl")
    space = LabelSpace.from_labels(base_labels + labels)
    base = (base_texts, space.encode(base_labels), space)
    target = (texts, space.encode(labels))
    started = time.perf_counter()
    results = [
        run_seed(seed, args.strategies, args.rounds, args.batch, base, target, args.measure) for seed in args.seeds
    ]
    summary = summarise(results, args.strategies)
    summary_top1 = summarise(results, args.strategies, "label_top1")
    print(markdown(summary, summary_top1, args.seeds))
    print(f"\nwall time {time.perf_counter() - started:.0f} s")
    if args.plot:
        plot(summary, args.plot, f"Active labeling, tfidf-word-logreg, {args.measure} (band: min–max over seeds)")
        print(f"plot: {args.plot}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": {k: str(v) for k, v in vars(args).items()}, "results": results, "summary": summary}, indent=1
            )
            + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
