"""Every venue's own yardsticks, as the default sweep builds its heads (issue 36: NeurIPS 2025, a third venue).

Two steps:

* ``evidence --to "NeurIPS 2025" [--half A]``: for a hand review of a crosswalk into a taxonomy: a
  ``tfidf-word-logreg`` of the target's names, fitted on its own papers (``--half A``: only the half of them whose id
  hashes even, so that the other half, ``B``, can be scored without having shaped the crosswalk), predicts every
  older paper (the taxonomies before it); per older name, its papers' count, the share of their top-1 answers per
  new name and the mean probability. Writes JSON (``--out``) and prints the table.
* ``figures --seeds 0 1 2 [--crosswalk FILE] [--without "NeurIPS 2025"] [--hits DIR]``: per seed, every head of the
  default data (data folder, crosswalks beside it and shipped; ``--crosswalk`` replaces the one of its target), the
  candidate (``ensemble-tfidf``, the default champion) evaluated as the sweep does
  (:func:`papertrack.training.head_evaluation.evaluate_head`): ``temporal`` (trained on the earlier years only, tested
  on the
  taxonomy's latest-year papers in its names) and ``known`` (k-fold over its own papers, every older paper on the
  training side; the main taxonomy: not computed, ``--main-folds`` CV only feeds nothing reported), area top-1,
  per-area recall, and per half (A/B) of the own papers. ``--hits DIR`` saves each row's top-3 hits, for
  ``compare``. ``--without`` drops a source (the sweep without that venue).
* ``compare A.npz B.npz``: paired bootstrap of the per-paper top-3 hits of two ``figures`` runs, per taxonomy and
  yardstick (the same papers).

No record of the unlabeled file is read anywhere.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from papertrack import settings


def half_of(record_id: str) -> str:
    return "A" if int(hashlib.sha256(record_id.encode()).hexdigest(), 16) % 2 == 0 else "B"


def build_heads(crosswalk: Path | None = None, without: tuple[str, ...] = ()):
    from papertrack.features.crosswalk import read_crosswalk
    from papertrack.training import taxonomies
    from papertrack.training.config import SweepConfig
    from papertrack.training.data import source_of
    from papertrack.training.pipeline import read
    from papertrack.training.renames import RenameMap

    config = SweepConfig()
    records, _ = read(config)
    records = [r for r in records if source_of(r) not in without]
    crosswalks = taxonomies.default_crosswalks(config, records)
    if crosswalk is not None:
        replacement = read_crosswalk(crosswalk)
        crosswalks = [cw for cw in crosswalks if cw.target != replacement.target] + [replacement]
    crosswalks = [cw for cw in crosswalks if cw.target not in without]
    return taxonomies.build(records, RenameMap.with_extra(()), crosswalks, strict=True)


def evidence(args) -> None:
    from papertrack.features.labels import canonical_label
    from papertrack.models.catalogue import CANDIDATES
    from papertrack.models.hierarchy import LabelSpace
    from papertrack.training import taxonomies

    heads = build_heads(without=tuple(args.without))
    names = heads.names
    (target,) = [h for h in heads.heads if h.name == args.to]
    own = [i for i in target.data.native_rows if args.half is None or half_of(target.data.records[i].id) == args.half]
    texts = [target.data.texts[i] for i in own]
    labels = [target.data.labels[i] for i in own]
    space = LabelSpace.from_labels(labels)
    model = CANDIDATES["tfidf-word-logreg"].build(space.n_labels, args.seed).fit(texts, space.encode(labels))
    older: list = []
    older_labels: list[str] = []
    for head in heads.heads[: names.index(args.to)]:
        rows = head.data.native_rows
        older += [head.data.records[i] for i in rows]
        older_labels += [head.data.labels[i] for i in rows]
    from papertrack.features.text import model_text

    proba = model.predict_proba([model_text(r.abstract, r.title, False) for r in older])
    table: dict[str, dict] = {}
    for old in sorted(set(older_labels)):
        mask = np.array([label == old for label in older_labels])
        top1 = Counter(space.labels[j] for j in proba[mask].argmax(axis=1))
        mean = proba[mask].mean(axis=0)
        table[old] = {
            "papers": int(mask.sum()),
            "in_target": old in space.labels,
            "top1": {k: round(v / mask.sum(), 3) for k, v in top1.most_common(4)},
            "top1_counts": dict(top1.most_common(4)),
            "mean": {space.labels[j]: round(float(mean[j]), 3) for j in np.argsort(-mean)[:3]},
        }
        shown = ", ".join(f"{k} {v:.0%} ({top1[k]})" for k, v in table[old]["top1"].items())
        print(f"{old} [{mask.sum()}{', kept name' if old in space.labels else ''}]: {shown}")
    if args.out:
        args.out.write_text(json.dumps({"to": args.to, "half": args.half, "table": table}, indent=1) + "\n")
    del taxonomies, canonical_label


def hits(proba: np.ndarray, y: np.ndarray, k: int = 3) -> np.ndarray:
    top = np.argsort(-proba, axis=1, kind="stable")[:, :k]
    return np.any(top == y[:, None], axis=1).astype(np.float64)


def per_area_recall(proba: np.ndarray, y: np.ndarray, space) -> dict[str, dict]:
    area_true = space.label_area[y]
    area_pred = space.area_proba(proba).argmax(axis=1)
    out = {}
    for a, area in enumerate(space.areas):
        mask = area_true == a
        if mask.any():
            out[area] = {"papers": int(mask.sum()), "recall": round(float((area_pred[mask] == a).mean()), 3)}
    return out


def figures(args) -> None:
    from papertrack.training.config import SweepConfig
    from papertrack.training.cv import fold_indices, known_names_split
    from papertrack.training.data import temporal_direction
    from papertrack.training.evaluation import evaluate_candidates
    from papertrack.training.head_evaluation import evaluate_head
    from papertrack.training.head_layer import SharedMembers
    from papertrack.training.planning import plan_candidates
    from papertrack.training.results import Listener
    from papertrack.training.scoring import evaluate

    heads = build_heads(args.crosswalk, tuple(args.without))
    print("; ".join(n.text for n in heads.notes[:1]), flush=True)
    candidates = plan_candidates([args.candidate]).candidates
    others = [h.data for h in heads.heads[1:]]
    report: dict = {"candidate": args.candidate, "crosswalk": str(args.crosswalk or ""), "seeds": {}}
    saved: dict[str, np.ndarray] = {}
    for seed in args.seeds:
        started = time.perf_counter()
        per_head = []
        shared = None
        for head in heads.heads:
            main = head.crosswalk is None
            if args.only and head.name not in args.only and not (main and not args.unshared):
                continue
            data = head.data
            temporal, _ = temporal_direction(data)
            head_started = time.perf_counter()
            if main:  # shared (the sweep's way): 5 folds, its models also answering the other heads' papers
                split = fold_indices(data.y, data.space, args.main_folds if args.unshared else 5, seed)
                extra, rows = ([], {}) if args.unshared else SharedMembers.extra_texts(data, others)
                results = evaluate_candidates(candidates, data, split, seed, None, (), temporal, args.jobs, extra)
                if not args.unshared:
                    shared = SharedMembers(data, rows, {x.candidate.name: x for x in results})
                if args.only and head.name not in args.only:
                    continue
            else:
                split = known_names_split(data.y, data.space, data.native_rows, 5, seed)
                config = SweepConfig(folds=5, seed=seed, jobs=args.jobs)
                results = list(evaluate_head(candidates, head, config, Listener(), shared).values())
            r = {x.candidate.name: x for x in results}[args.candidate]
            out: dict = {"taxonomy": head.name, "seconds": round(time.perf_counter() - head_started, 1)}
            yardsticks = {}
            if r.temporal is not None:
                yardsticks["temporal"] = (*r.temporal.held_out(data.y), r.temporal.rows)
            if not main:
                native = data.native_rows
                yardsticks["known"] = (r.cv.oof_proba[native], data.y[native], native)
            for name, (proba, y, rows) in yardsticks.items():
                m = evaluate(proba, y, data.space)
                out[f"{name}_top3"], out[f"{name}_top1"] = m["label_top3"], m["label_top1"]
                out[f"{name}_area_top1"] = m["area_top1"]
                out[f"{name}_area_recall"] = per_area_recall(proba, y, data.space)
                h = hits(proba, y)
                halves = np.array([half_of(data.records[i].id) for i in rows])
                for half in "AB":
                    out[f"{name}_top3_half{half}"] = float(h[halves == half].mean())
                ids = np.array([data.records[i].id for i in rows])
                order = np.argsort(ids, kind="stable")
                saved[f"{seed}|{head.name}|{name}|ids"] = ids[order]
                saved[f"{seed}|{head.name}|{name}|hits"] = h[order]
                saved[f"{seed}|{head.name}|{name}|area"] = (
                    data.space.area_proba(proba).argmax(axis=1) == data.space.label_area[y]
                ).astype(np.float64)[order]
            per_head.append(out)
        report["seeds"][seed] = {"heads": per_head, "seconds": round(time.perf_counter() - started, 1)}
        print(json.dumps({seed: report["seeds"][seed]}), flush=True)
        if args.hits:  # after each seed: a long run stopped early keeps what it measured
            np.savez_compressed(args.hits, **{k.replace("|", "__"): v for k, v in saved.items()})
    means: dict = defaultdict(lambda: defaultdict(list))
    for seed_report in report["seeds"].values():
        for out in seed_report["heads"]:
            for key, value in out.items():
                if isinstance(value, float):
                    means[out["taxonomy"]][key].append(value)
    report["mean"] = {t: {k: round(float(np.mean(v)), 4) for k, v in m.items()} for t, m in means.items()}
    print(json.dumps(report["mean"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


def compare(args) -> None:
    from papertrack.training.champion import paired_bootstrap

    a, b = np.load(args.a), np.load(args.b)
    keys = sorted(k for k in a.files if k.endswith("__hits") and k in b.files)
    groups: dict[tuple[str, str, str], list] = defaultdict(list)
    for key in keys:
        seed, taxonomy, yardstick, _ = key.split("__")
        ids_a, ids_b = a[key.replace("__hits", "__ids")], b[key.replace("__hits", "__ids")]
        common = np.intersect1d(ids_a, ids_b)
        for metric in ("hits", "area"):
            ka, kb = key.replace("__hits", f"__{metric}"), key.replace("__hits", f"__{metric}")
            ha = a[ka][np.searchsorted(ids_a, common)]
            hb = b[kb][np.searchsorted(ids_b, common)]
            groups[(taxonomy, yardstick, metric)].append((int(seed), ha, hb))
    for (taxonomy, yardstick, metric), runs in sorted(groups.items()):
        ha = np.concatenate([r[1] for r in runs])
        hb = np.concatenate([r[2] for r in runs])
        diff, low, high = paired_bootstrap(ha, hb, seed=0)
        name = "top3" if metric == "hits" else "area_top1"
        print(
            f"{taxonomy} {yardstick}_{name}: A {ha.mean():.4f} B {hb.mean():.4f} A-B {diff:+.4f} "
            f"[{low:+.4f}, {high:+.4f}] ({len(runs)} seeds, {len(ha) // max(len(runs), 1)} papers)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    ev = sub.add_parser("evidence")
    ev.add_argument("--to", required=True)
    ev.add_argument("--half", choices=["A", "B"])
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--without", nargs="*", default=[])
    ev.add_argument("--out", type=Path)
    fi = sub.add_parser("figures")
    fi.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    fi.add_argument("-c", "--candidate", default="ensemble-tfidf")
    fi.add_argument("--jobs", type=int, default=2)
    fi.add_argument("--main-folds", type=int, default=2)
    fi.add_argument("--crosswalk", type=Path)
    fi.add_argument("--without", nargs="*", default=[])
    fi.add_argument("--only", nargs="*", default=[], help="evaluate these taxonomies only")
    fi.add_argument(
        "--unshared", action="store_true", help="every head fitted on its own (the sweep before heads shared the work)"
    )
    fi.add_argument("--out", type=Path)
    fi.add_argument("--hits", type=Path)
    co = sub.add_parser("compare")
    co.add_argument("a", type=Path)
    co.add_argument("b", type=Path)
    args = parser.parse_args()
    settings.quiet_third_parties()
    {"evidence": evidence, "figures": figures, "compare": compare}[args.step](args)


if __name__ == "__main__":
    main()
