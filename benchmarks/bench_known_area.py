"""ICML 2025 "new names known" AREA top-1: screens of re-combinations on saved out-of-fold answers (issue 25).

Three steps, each writing or reading ``--dir`` (default /tmp/h31):

* ``dump --seeds 0 1 2 [--use-title]``: the ICML 2025 head's answers on its known split
  (:func:`papertrack.training.cv.known_names_split`), exactly as ``bench_taxonomies.py`` computes them
  (``ensemble-tfidf`` + the nested native mixture): per seed an npz with the base ensemble's, the native model's
  and the mixed out-of-fold probabilities of the 1,964 own papers, their labels, the fold of each and the label ->
  area map.
* ``embed [--use-title]``: MiniLM vectors of the own papers' texts (through the embedding cache,
  ``PAPERTRACK_EMBEDDING_CACHE``), saved as ``emb[-title].npz``; ``--older`` adds the older papers mapped in
  through the crosswalk (``emb-all.npz``).
* ``screen --seeds 0 1 2``: the ideas measured on those files (``--ideas``), every choice nested on the training
  folds, a paired bootstrap against today's head (the mixed answers) on area top-1 hits.

No record of the unlabeled file is read anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("PAPERTRACK_TORCH_THREADS", "1")


def icml_head(use_title: bool):
    from papertrack.features.crosswalk import shipped_crosswalks
    from papertrack.training import taxonomies
    from papertrack.training.config import SweepConfig
    from papertrack.training.pipeline import read
    from papertrack.training.renames import RenameMap

    records, _ = read(SweepConfig())
    crosswalks = taxonomies.read_crosswalks(shipped_crosswalks())
    heads = taxonomies.build(records, RenameMap.with_extra(()), crosswalks, use_title=use_title)
    (head,) = [h for h in heads.heads if h.crosswalk is not None]
    return head


def dump(args) -> None:
    from papertrack import settings
    from papertrack.training import native_mixture
    from papertrack.training.cv import known_names_split
    from papertrack.training.data import temporal_direction
    from papertrack.training.evaluation import evaluate_candidates
    from papertrack.training.planning import plan_candidates

    settings.quiet_third_parties()
    head = icml_head(args.use_title)
    data = head.data
    candidates = plan_candidates(["ensemble-tfidf"]).candidates
    own = np.asarray(data.native_rows)
    for seed in args.seeds:
        started = time.perf_counter()
        temporal, _ = temporal_direction(data)
        split = known_names_split(data.y, data.space, own, 5, seed)
        results = evaluate_candidates(candidates, data, split, seed, None, (), temporal, 1)
        (result,) = [r for r in results if r.candidate.name == "ensemble-tfidf"]
        base = result.cv.oof_proba.copy()
        native = native_mixture.mix_results(results, data, split, seed, 1)
        assert native is not None
        fold = np.full(len(data.y), -1)
        for k, (_, test) in enumerate(split):
            fold[test] = k
        out = args.dir / f"head{'-title' if args.use_title else ''}-s{seed}.npz"
        np.savez_compressed(
            out,
            base=base[own],
            native=native[own],
            mixed=result.cv.oof_proba[own],
            y=data.y[own],
            fold=fold[own],
            label_area=data.space.label_area,
            labels=np.array(data.space.labels),
            areas=np.array(data.space.areas),
            ids=np.array([data.records[i].id for i in own]),
        )
        print(f"seed {seed}: {out} in {time.perf_counter() - started:.0f} s (loaded machine)", flush=True)


def embed(args) -> None:
    from papertrack.features.embeddings import get_embedder

    head = icml_head(args.use_title)
    data = head.data
    rows = np.arange(len(data.y)) if args.older else np.asarray(data.native_rows)
    embedder = get_embedder("minilm")
    started = time.perf_counter()
    vectors = embedder.embed([data.texts[i] for i in rows], progress=False)
    seconds = time.perf_counter() - started
    out = args.dir / f"emb{'-title' if args.use_title else ''}{'-all' if args.older else ''}.npz"
    native = np.zeros(len(data.y), dtype=bool)
    native[np.asarray(data.native_rows)] = True
    np.savez_compressed(
        out,
        x=vectors,
        y=data.y[rows],
        native=native[rows],
        ids=np.array([data.records[i].id for i in rows]),
    )
    print(f"{out}: {len(rows)} texts, {embedder.encoded} encoded in {seconds:.0f} s (loaded machine)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("step", choices=["dump", "embed", "screen"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--use-title", action="store_true")
    parser.add_argument("--older", action="store_true", help="embed: the older papers too")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/h31"))
    parser.add_argument(
        "--ideas", nargs="*", default=None, help="screen: idea name prefixes (emb, older, power, bias, stack)"
    )
    parser.add_argument("-C", "--c", type=float, nargs="+", default=[4.0], help="screen: the LRs' C")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.step == "dump":
        dump(args)
    elif args.step == "embed":
        embed(args)
    else:
        screen(args)


def area_of(proba: np.ndarray, label_area: np.ndarray, n_areas: int) -> np.ndarray:
    out = np.zeros((len(proba), n_areas))
    np.add.at(out.T, label_area, proba.T)
    return out


def top_hits(proba: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    top = np.argsort(-proba, axis=1, kind="stable")[:, :k]
    return np.any(top == y[:, None], axis=1).astype(np.float64)


def fit_lr(x: np.ndarray, y: np.ndarray, n_classes: int, c: float, x_test: np.ndarray) -> np.ndarray:
    """Probabilities over all ``n_classes`` of a multinomial LR fitted on (x, y) (classes absent from y: 0)."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=c, max_iter=2000)
    model.fit(x, y)
    out = np.zeros((len(x_test), n_classes))
    out[:, model.classes_] = model.predict_proba(x_test)
    return out


def fold_oof(x, y, fold, n_classes, c, extra=None):
    """Out-of-fold LR answers on the own papers: each fold's model fitted on the other folds (plus ``extra`` =
    (x, y) rows always on the training side)."""
    out = np.zeros((len(y), n_classes))
    for k in np.unique(fold):
        train = fold != k
        xt, yt = x[train], y[train]
        if extra is not None:
            xt, yt = np.vstack([xt, extra[0]]), np.concatenate([yt, extra[1]])
        out[fold == k] = fit_lr(xt, yt, n_classes, c, x[fold == k])
    return out


GRID = tuple(float(b) for b in np.round(np.arange(0.0, 1.0001, 0.05), 2))


def nested(fold, score, combine, grid=GRID):
    """Per outer fold: the grid value maximising ``score(combined, rows)`` on the other folds' rows, applied to
    that fold's rows. Returns the combined answers and the chosen values."""
    chosen, parts = [], {}
    for k in np.unique(fold):
        other = fold != k
        best = max(grid, key=lambda g: (round(score(combine(g, other), other), 12), -g))
        chosen.append(best)
        parts[k] = combine(best, fold == k)
    first = next(iter(parts.values()))
    out = np.zeros((len(fold), *first.shape[1:]))
    for k, part in parts.items():
        out[fold == k] = part
    return out, chosen


def area_bias(logs: np.ndarray, ya: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """The per-area bias b minimising the mean NLL of softmax(logs + b) on these rows (+ l2 * |b|^2)."""
    from scipy.optimize import minimize
    from scipy.special import log_softmax, softmax

    onehot = np.eye(logs.shape[1])[ya]

    def loss(b):
        z = logs + b
        value = -np.mean(log_softmax(z, axis=1)[np.arange(len(ya)), ya]) + l2 * b @ b
        grad = np.mean(softmax(z, axis=1) - onehot, axis=0) + 2 * l2 * b
        return value, grad

    return minimize(loss, np.zeros(logs.shape[1]), jac=True, method="L-BFGS-B").x


def area_bias_accuracy(logs: np.ndarray, ya: np.ndarray, passes: int = 3) -> np.ndarray:
    """Per-area biases on the log area answers by coordinate ascent on accuracy (grid -2..2 by 0.1, 3 passes);
    ties keep the bias nearest 0."""
    grid = np.round(np.arange(-2.0, 2.0001, 0.1), 2)
    b = np.zeros(logs.shape[1])
    for _ in range(passes):
        for a in range(len(b)):
            scores = []
            for g in grid:
                b[a] = g
                scores.append((round(float(((logs + b).argmax(1) == ya).mean()), 12), -abs(g)))
            b[a] = grid[max(range(len(grid)), key=lambda i: scores[i])]
    return b


def screen_seed(args, seed: int, suffix: str, wanted: set[str] | None) -> list[dict]:
    """Every idea's figures on one seed's known split (printed as they come)."""
    from papertrack.training.champion import paired_bootstrap

    rows_out: list[dict] = []
    h = np.load(args.dir / f"head{suffix}-s{seed}.npz")
    e = np.load(args.dir / f"emb{suffix}.npz")
    order = {i: k for k, i in enumerate(e["ids"].tolist())}
    x = e["x"][[order[i] for i in h["ids"].tolist()]]
    y, fold, la = h["y"], h["fold"], h["label_area"]
    n_labels, n_areas = len(h["labels"]), len(h["areas"])
    ya = la[y]
    position = [a for a, name in enumerate(h["areas"].tolist()) if name.startswith("Position")]
    mixed = h["mixed"]
    head_area = area_of(mixed, la, n_areas)
    head_hits_a = (head_area.argmax(1) == ya).astype(float)

    def area_acc(ap, rows):  # ap: the answers of ``rows`` only
        return float((ap.argmax(1) == ya[rows]).mean())

    def both(p, rows):  # label top-3 + area top-1 (the native mixture's objective)
        return top_hits(p, y[rows], 3).mean() + area_acc(area_of(p, la, n_areas), rows)

    results: dict[str, tuple[np.ndarray, np.ndarray, str]] = {}  # name -> (label proba or None, area proba)

    def add(name, labels, area, note=""):
        results[name] = (labels, area, note)

    def want(name):
        return wanted is None or any(name.startswith(w) for w in wanted)

    add("head (today)", mixed, head_area)
    add("ensemble alone", h["base"], area_of(h["base"], la, n_areas))
    add("native LR alone", h["native"], area_of(h["native"], la, n_areas))
    emb_l = emb_a = None
    if want("emb"):
        for c in args.c:
            emb_l = fold_oof(x, y, fold, n_labels, c)
            add(f"emb label-LR C={c:g} alone", emb_l, area_of(emb_l, la, n_areas))
            emb_a = fold_oof(x, ya, fold, n_areas, c)
            add(f"emb area-LR C={c:g} alone", None, emb_a)
            lab, betas = nested(fold, both, lambda b, r, e=emb_l: (1 - b) * mixed[r] + b * e[r])
            add(f"emb label-mix C={c:g}", lab, area_of(lab, la, n_areas), f"beta {betas}")
            emb_l_area = area_of(emb_l, la, n_areas)
            ar, betas = nested(fold, area_acc, lambda b, r, e=emb_l_area: (1 - b) * head_area[r] + b * e[r])
            add(f"emb area-only mix (label-LR) C={c:g}", mixed, ar, f"beta {betas}")
            ar, betas = nested(fold, area_acc, lambda b, r, e=emb_a: (1 - b) * head_area[r] + b * e[r])
            add(f"emb area-only mix (area-LR) C={c:g}", mixed, ar, f"beta {betas}")
            # both: label mix for the labels, then the area from the label mix mixed with the area LR
            lab_area = area_of(lab, la, n_areas)
            ar, betas = nested(fold, area_acc, lambda b, r, a=lab_area, e=emb_a: (1 - b) * a[r] + b * e[r])
            add(f"emb label-mix + area-only mix C={c:g}", lab, ar, f"beta {betas}")
    older_file = args.dir / f"emb{suffix}-all.npz"
    if want("older") and older_file.exists():  # the older papers (crosswalked labels) on every training side
        o = np.load(older_file)
        extra_x, extra_y = o["x"][~o["native"]], o["y"][~o["native"]]
        for c in args.c:
            older_a = fold_oof(x, ya, fold, n_areas, c, extra=(extra_x, la[extra_y]))
            add(f"older+own emb area-LR C={c:g} alone", None, older_a)
            ar, betas = nested(fold, area_acc, lambda b, r, e=older_a: (1 - b) * head_area[r] + b * e[r])
            add(f"older+own emb area-only mix C={c:g}", mixed, ar, f"beta {betas}")
            older_l = fold_oof(x, y, fold, n_labels, c, extra=(extra_x, extra_y))
            add(f"older+own emb label-LR C={c:g} alone", older_l, area_of(older_l, la, n_areas))
            lab, betas = nested(fold, both, lambda b, r, e=older_l: (1 - b) * mixed[r] + b * e[r])
            add(f"older+own emb label-mix C={c:g}", lab, area_of(lab, la, n_areas), f"beta {betas}")
    if want("power"):
        ts = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)

        def powered(t, r):
            a = area_of(mixed[r] ** t, la, n_areas)
            return a / a.sum(1, keepdims=True)

        ar, chosen = nested(fold, area_acc, powered, grid=ts)
        add("area = sum of p^t (tempered roll-up)", mixed, ar, f"t {chosen}")
        add("area = top-1 label's area", mixed, np.eye(n_areas)[la[mixed.argmax(1)]])
    if want("bias"):
        # one additive bias per area on the log head area (fitted on the other folds, NLL + small L2): every label
        # of an area scaled by exp(b_area), renormalised, so the labels and the area answer stay one distribution
        b_all = np.zeros((len(y), n_areas))
        logs = np.log(np.clip(head_area, 1e-12, 1))
        for k in np.unique(fold):
            b_all[fold == k] = area_bias(logs[fold != k], ya[fold != k])
        tilted = mixed * np.exp(b_all[:, la])
        tilted /= tilted.sum(1, keepdims=True)
        add("per-area bias (labels tilted too)", tilted, area_of(tilted, la, n_areas))
        biased = np.exp(logs + b_all)
        add("per-area bias (area only)", mixed, biased / biased.sum(1, keepdims=True))
        b_acc = np.zeros((len(y), n_areas))
        for k in np.unique(fold):
            b_acc[fold == k] = area_bias_accuracy(logs[fold != k], ya[fold != k])
        tilted = mixed * np.exp(b_acc[:, la])
        tilted /= tilted.sum(1, keepdims=True)
        add("per-area bias by accuracy (labels tilted too)", tilted, area_of(tilted, la, n_areas))
        add("per-area bias by accuracy (area only)", mixed, np.exp(logs + b_acc))
    if want("stack"):
        logs = np.log(np.clip(head_area, 1e-9, 1))
        for c in (0.1, 1.0, 10.0):
            st = fold_oof(logs, ya, fold, n_areas, c)
            add(f"stack: LR on log head area C={c:g}", mixed, st)
        members = np.hstack([np.log(np.clip(area_of(h[m], la, n_areas), 1e-9, 1)) for m in ("base", "native")])
        st = fold_oof(np.hstack([logs, members]), ya, fold, n_areas, 1.0)
        add("stack: LR on log area of head, ensemble, native", mixed, st)
        st = fold_oof(np.log(np.clip(mixed, 1e-9, 1)), ya, fold, n_areas, 1.0)
        add("stack: LR on log head labels", mixed, st)
        if emb_a is not None:  # the (last C's) embedding area LR's out-of-fold answers as 9 more features
            st = fold_oof(np.hstack([logs, np.log(np.clip(emb_a, 1e-9, 1))]), ya, fold, n_areas, 1.0)
            add("stack: LR on log area of head, emb area-LR", mixed, st)
        if want("emb"):
            feats = np.hstack([logs, x])
            for c in args.c:
                st = fold_oof(feats, ya, fold, n_areas, c)
                add(f"stack: LR on [log head area, emb] C={c:g}", mixed, st)
    plain_file = args.dir / f"head-s{seed}.npz"  # with titles: also against today's head on abstracts alone
    plain_hits = None
    if suffix and plain_file.exists():
        plain = np.load(plain_file)
        if (plain["ids"] == h["ids"]).all() and (plain["fold"] == fold).all():
            plain_hits = (area_of(plain["mixed"], la, n_areas).argmax(1) == ya).astype(float)
    for name, (labels, area, note) in results.items():
        if labels is None:
            top3 = top1 = float("nan")
        else:
            top3, top1 = top_hits(labels, y, 3).mean(), top_hits(labels, y, 1).mean()
        hits_a = (area.argmax(1) == ya).astype(float)
        diff, low, high = paired_bootstrap(hits_a, head_hits_a, seed=seed)
        top3_diff = (
            paired_bootstrap(top_hits(labels, y, 3), top_hits(mixed, y, 3), seed=seed) if labels is not None else None
        )
        pos = np.isin(ya, position)
        row = dict(
            seed=seed,
            idea=name,
            top3=float(top3),
            top1=float(top1),
            area=float(hits_a.mean()),
            vs_head=[round(diff, 4), round(low, 4), round(high, 4)],
            position_recall=float(hits_a[pos].mean()) if pos.any() else None,
            top3_vs_head=[round(v, 4) for v in top3_diff] if top3_diff else None,
            area_vs_abstracts_head=(
                [round(v, 4) for v in paired_bootstrap(hits_a, plain_hits, seed=seed)]
                if plain_hits is not None
                else None
            ),
            note=note,
        )
        rows_out.append(row)
        print(
            f"s{seed} {name:48s} top3 {top3:.3f} top1 {top1:.3f} area {hits_a.mean():.3f} "
            f"d {diff:+.3f} [{low:+.3f}, {high:+.3f}] top3 d {row['top3_vs_head']} pos {row['position_recall']} {note}",
            flush=True,
        )
    return rows_out


def screen(args) -> None:
    wanted = set(args.ideas) if args.ideas else None
    rows_out: list[dict] = []
    suffix = "-title" if args.use_title else ""
    for seed in args.seeds:
        rows_out += screen_seed(args, seed, suffix, wanted)
    if len(args.seeds) > 1:
        print("mean over seeds:")
        for name in dict.fromkeys(r["idea"] for r in rows_out):
            sel = [r for r in rows_out if r["idea"] == name]
            print(
                f"  {name:48s} top3 {np.mean([r['top3'] for r in sel]):.3f}"
                f" area {np.mean([r['area'] for r in sel]):.3f}"
                f" pos {np.mean([r['position_recall'] or 0 for r in sel]):.2f}"
            )
    out = args.dir / f"screen{suffix}-{'-'.join(map(str, args.seeds))}.json"
    out.write_text(json.dumps(rows_out, indent=1) + "\n")


if __name__ == "__main__":
    main()
