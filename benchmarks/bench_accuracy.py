"""How stable are the cross-validated figures, and what did (not) move them.

    # the default sweep's candidates and ensembles under several CV seeds (no MLflow logging):
    # per-seed figures and mean ± sd, to tell a real gain from fold noise
    .venv/bin/python benchmarks/bench_accuracy.py seeds --seeds 42 7 123

    # the ideas tried to raise label top-3 beyond the default ensemble, each measured on the same
    # folds with the same nested weight selection as the sweep (--seed: the CV seed, default 42)
    .venv/bin/python benchmarks/bench_accuracy.py experiments --seed 42

    # every accuracy attempt on the shift holdout (train on one labeled year, test on the other; per
    # direction and mean), with the same shift_holdout function the sweep uses
    .venv/bin/python benchmarks/bench_accuracy.py shift --seed 42

    # an area classifier (8 areas) as one more member of the default ensembles, CV and shift, three seeds
    .venv/bin/python benchmarks/bench_accuracy.py area --seeds 42 7 123

    # one more catalogue candidate (default tfidf-union-logreg) as a member of the default ensemble
    .venv/bin/python benchmarks/bench_accuracy.py member --seeds 42 7 123 --extra tfidf-union-logreg

    # fine-tuning the packaged MiniLM end to end on one fold (about 2 minutes per epoch on 2 cores)
    .venv/bin/python benchmarks/bench_accuracy.py finetune --epochs 4 --max-seq-length 128

They use the shared data folder (``PAPERTRACK_DATA_DIR``, default ``shared/data`` beside the repository) and the
embedding cache of ``PAPERTRACK_HOME`` (a cold cache adds about a minute of embedding). Results
print as markdown tables; the ones in BENCHMARKS.md came from these commands.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from shared_data import DATA, UNLABELED

from papertrack.features.text import tfidf
from papertrack.models.catalogue import CANDIDATES, default_sweep
from papertrack.training.cv import fold_indices
from papertrack.training.data import TrainingSet
from papertrack.training.dataset import load_dataset
from papertrack.training.ensemble_weights import nested_cv
from papertrack.training.evaluation import evaluate_candidates
from papertrack.training.scoring import evaluate

DEFAULT_ENSEMBLE = "ensemble-tfidf-minilm"  # the default champion
COLUMNS = ("label_top3", "label_top1", "label_macro_f1", "area_top1")
WITH_SUBAREA = "label_top3_with_subarea"  # top-3 on the records whose label names a subarea


def load(path: Path) -> TrainingSet:
    records, _ = load_dataset([str(path)], None, labeled=True)
    return TrainingSet.from_records(records)


def oof_by_name(candidates, data: TrainingSet, seed: int) -> dict[str, np.ndarray]:
    """OOF probabilities of the candidates, by name, computed by the sweep's own evaluation
    (:func:`evaluate_candidates`: 5 folds, ensembles by nested weight selection on their members)."""
    results = evaluate_candidates(candidates, data, fold_indices(data.y, data.space, 5, seed), seed)
    return {r.candidate.name: r.cv.oof_proba for r in results}


def cross_validate_all(data: TrainingSet, seed: int) -> dict[str, np.ndarray]:
    """OOF probabilities of every default candidate, ensembles by nested weight selection."""
    return oof_by_name(default_sweep(), data, seed)


def default_ensemble(data: TrainingSet, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    """The default ensemble's members' OOF matrices (in member order) and its nested OOF probabilities."""
    candidate = CANDIDATES[DEFAULT_ENSEMBLE]
    oof = oof_by_name([*(CANDIDATES[m] for m in candidate.members), candidate], data, seed)
    return [oof[m] for m in candidate.members], oof[DEFAULT_ENSEMBLE]


def seeds(args) -> None:
    from papertrack.training.scoring import top_k_accuracy

    data = load(args.data)
    with_subarea = np.array([data.space.subareas[label] is not None for label in data.y])
    per_seed: dict[str, list[dict[str, float]]] = {}
    for seed in args.seeds:
        started = time.perf_counter()
        for name, proba in cross_validate_all(data, seed).items():
            metrics = evaluate(proba, data.y, data.space)
            metrics[WITH_SUBAREA] = top_k_accuracy(proba[with_subarea], data.y[with_subarea], 3)
            per_seed.setdefault(name, []).append(metrics)
        print(f"seed {seed}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    rows = sorted(per_seed.items(), key=lambda kv: -statistics.mean(m["label_top3"] for m in kv[1]))
    print(
        f"| candidate | top3 per seed ({', '.join(map(str, args.seeds))}) | top3 mean ± sd | top1 | macro-F1 | "
        f"area top1 | top3 on the {with_subarea.sum():,} records with a subarea |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, runs in rows:
        top3 = [m["label_top3"] for m in runs]
        sd = statistics.stdev(top3) if len(top3) > 1 else 0.0
        means = {c: statistics.mean(m[c] for m in runs) for c in (*COLUMNS, WITH_SUBAREA)}
        print(
            f"| {name} | {' / '.join(f'{t:.3f}' for t in top3)} | {means['label_top3']:.3f} ± {sd:.3f} | "
            f"{means['label_top1']:.3f} | {means['label_macro_f1']:.3f} | {means['area_top1']:.3f} | "
            f"{means[WITH_SUBAREA]:.3f} |"
        )


# --------------------------------------------------------------------------- experiments


def experiments(args) -> None:
    from scipy.sparse import csr_matrix, hstack
    from scipy.special import softmax
    from sklearn.linear_model import LogisticRegression

    from papertrack.features.embeddings import get_embedder

    data = load(args.data)
    y, space, seed = data.y, data.space, args.seed
    folds = fold_indices(y, space, 5, seed)
    texts = np.asarray(data.texts, dtype=object)
    members, base = default_ensemble(data, seed)
    spec = CANDIDATES[DEFAULT_ENSEMBLE].ensemble
    embed = get_embedder("minilm").embed
    X = embed(data.texts, progress=False)
    rows: list[tuple[str, dict, dict | None]] = []

    def ensemble(extra: list[np.ndarray]) -> dict:
        """The default ensemble with extra members, weights chosen as the sweep chooses them."""
        return evaluate(
            nested_cv(members + extra, y, folds, rule=spec.rule, steps=spec.steps, objective=spec.objective).oof_proba,
            y,
            space,
        )

    def per_fold(fit_predict) -> np.ndarray:
        out = np.zeros((len(y), space.n_labels))
        for train, test in folds:
            classes, proba = fit_predict(train, test)
            out[np.ix_(test, classes)] = proba
        return out

    def record(name: str, proba: np.ndarray | None, with_ensemble: bool = True) -> None:
        alone = evaluate(proba, y, space) if proba is not None else None
        rows.append((name, alone, ensemble([proba]) if with_ensemble and proba is not None else None))
        print(f"  {name}", file=sys.stderr)

    def tfidf_beside(dense: np.ndarray):
        """A fold's fit-and-predict: one LR on word TF-IDF with ``dense`` columns appended."""

        def fit_predict(train, test):
            vec = tfidf("word")
            A = hstack([vec.fit_transform(list(texts[train])), csr_matrix(dense[train])]).tocsr()
            B = hstack([vec.transform(list(texts[test])), csr_matrix(dense[test])]).tocsr()
            m = LogisticRegression(C=10.0, class_weight="balanced", max_iter=1000).fit(A, y[train])
            return m.classes_, m.predict_proba(B)

        return fit_predict

    rows.append((f"default ensemble ({DEFAULT_ENSEMBLE} members)", None, evaluate(base, y, space)))

    # 1. zero-shot: cosine similarity of the abstract to the label's name, as one more member
    names = [f"{a}: {s}" if s else a for a, s in ((label.split(" · ", 1) + [""])[:2] for label in space.labels)]
    zero_shot = softmax(X @ embed(names, progress=False).T / 0.05, axis=1)
    record("zero-shot label-name similarity (MiniLM, softmax T=0.05)", zero_shot)

    # 2. one logistic regression on TF-IDF and the embedding side by side
    record("one LR on TF-IDF word + MiniLM side by side", per_fold(tfidf_beside(X)))

    # 3. stacking: a logistic regression on the members' log-probabilities instead of weighted averaging
    F = np.hstack([np.log(np.clip(p, 1e-6, 1.0)) for p in members])

    def stack(train, test):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lbfgs may stop at max_iter: the figure is what matters here
            m = LogisticRegression(C=0.01, max_iter=300).fit(F[train], y[train])
        return m.classes_, m.predict_proba(F[test])

    stacked = per_fold(stack)
    record("stacking (LR on members' log-probabilities, C=0.01)", stacked, with_ensemble=False)

    # 4. self-training on the unlabeled corpus (abstracts not in the labeled set): a TF-IDF LR teacher
    #    labels 12,000 unlabeled abstracts; those above 0.3 confidence join training at weight 0.3
    if args.unlabeled.exists():
        seen = {a.strip()[:200] for a in data.texts}
        with gzip.open(args.unlabeled, "rt", encoding="utf-8") as f:
            pool = [
                a for a in (json.loads(line).get("abstract") or "" for line in f) if a and a.strip()[:200] not in seen
            ]
        pool = [pool[i] for i in np.random.default_rng(0).choice(len(pool), min(12_000, len(pool)), replace=False)]

        def self_train(train, test):
            from scipy.sparse import vstack

            vec = tfidf("word")
            M = vec.fit_transform(list(texts[train]) + pool)
            A, U = M[: len(train)], M[len(train) :]
            teacher = LogisticRegression(C=10, class_weight="balanced", max_iter=300).fit(A, y[train])
            pu = teacher.predict_proba(U)
            keep = pu.max(axis=1) > 0.3
            y2 = np.concatenate([y[train], teacher.classes_[pu.argmax(axis=1)][keep]])
            w = np.concatenate([np.ones(len(train)), np.full(keep.sum(), 0.3)])
            student = LogisticRegression(C=10, class_weight="balanced", max_iter=300).fit(
                vstack([A, U[keep]]), y2, sample_weight=w
            )
            return student.classes_, student.predict_proba(vec.transform(list(texts[test])))

        record("self-training TF-IDF LR on 12,000 unlabeled abstracts", per_fold(self_train))

    # 5. features from the older ICML/NeurIPS taxonomy (extra/): one-vs-rest LR scores of its 153
    #    labels with >= 15 papers, appended to TF-IDF
    if args.extra.exists():
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.preprocessing import MultiLabelBinarizer

        with gzip.open(args.extra, "rt", encoding="utf-8") as f:
            extra = [json.loads(line) for line in f]
        counts: dict[str, int] = {}
        for r in extra:
            for label in r["labels"]:
                counts[label] = counts.get(label, 0) + 1
        keep = sorted(label for label, c in counts.items() if c >= 15)
        extra = [r for r in extra if any(label in keep for label in r["labels"])]
        Y = MultiLabelBinarizer(classes=keep).fit_transform([[la for la in r["labels"] if la in keep] for r in extra])
        vec = tfidf("word")
        aux = OneVsRestClassifier(LogisticRegression(C=10, max_iter=300)).fit(
            vec.fit_transform([r["abstract"] for r in extra]), Y
        )
        S = aux.decision_function(vec.transform(data.texts))
        S = 0.05 * (S - S.mean(axis=0)) / S.std(axis=0)
        record("TF-IDF LR + older-taxonomy scores (extra/, 153 labels)", per_fold(tfidf_beside(S)))

    # 6. label-prior correction of the ensemble (p / prior^0.2), for the long tail
    prior = np.bincount(y, minlength=space.n_labels) / len(y)
    corrected = base / np.maximum(prior, 1e-4) ** 0.2
    rows.append(
        (
            "ensemble with label-prior correction (a=0.2)",
            evaluate(corrected / corrected.sum(1, keepdims=True), y, space),
            None,
        )
    )

    print("| experiment | alone: top3 / top1 / macro-F1 / area | in the ensemble: top3 / top1 / macro-F1 / area |")
    print("|---|---|---|")

    def fmt(m: dict | None) -> str:
        return " / ".join(f"{m[c]:.3f}" for c in COLUMNS) if m else "–"

    for name, alone, ens in rows:
        print(f"| {name} | {fmt(alone)} | {fmt(ens)} |")


def finetune(args) -> None:
    """Fine-tune the packaged MiniLM end to end (mean pooling + a linear head, cross-entropy) on one
    fold's training rows; after each epoch, label top-3 on that fold's test rows, alone and
    geometric-mean-combined with the default ensemble's nested OOF probabilities of the same rows."""
    import torch

    from papertrack.features.embeddings import load_model
    from papertrack.training.scoring import top_k_accuracy

    data = load(args.data)
    y, space, seed = data.y, data.space, 42
    folds = fold_indices(y, space, 5, seed)
    _, ensemble = default_ensemble(data, seed)
    train, test = folds[args.fold]
    texts = np.asarray(data.texts, dtype=object)
    torch.manual_seed(0)
    encoder = load_model("minilm")  # the packaged sentence-transformers model (changed in place here)
    encoder.max_seq_length = args.max_seq_length
    head = torch.nn.Linear(encoder.get_embedding_dimension(), space.n_labels)
    optimiser = torch.optim.AdamW(
        [{"params": encoder.parameters(), "lr": 5e-5}, {"params": head.parameters(), "lr": 2e-3}], weight_decay=0.01
    )

    def forward(batch):
        return head(encoder(encoder.preprocess(list(batch)))["sentence_embedding"])

    print(
        f"| epoch | seconds | fine-tuned top3 | fine-tuned top1 | × ensemble top3 | ensemble top3 (fold {args.fold}) |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    started = time.perf_counter()
    for epoch in range(args.epochs):
        encoder.train()
        order = np.random.default_rng(epoch).permutation(train)
        for i in range(0, len(order), 16):
            idx = order[i : i + 16]
            loss = torch.nn.functional.cross_entropy(forward(texts[idx]), torch.tensor(y[idx]), label_smoothing=0.1)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        encoder.eval()
        with torch.no_grad():
            proba = np.vstack(
                [torch.softmax(forward(texts[test[i : i + 64]]), dim=1).numpy() for i in range(0, len(test), 64)]
            )
        mixed = np.exp(0.5 * np.log(np.clip(proba, 1e-9, 1)) + 0.5 * np.log(np.clip(ensemble[test], 1e-9, 1)))
        print(
            f"| {epoch + 1} | {time.perf_counter() - started:.0f} | {top_k_accuracy(proba, y[test], 3):.3f} | "
            f"{top_k_accuracy(proba, y[test], 1):.3f} | {top_k_accuracy(mixed, y[test], 3):.3f} | "
            f"{top_k_accuracy(ensemble[test], y[test], 3):.3f} |",
            flush=True,
        )


# --------------------------------------------------------------------------- shift holdout


def load_both(args) -> TrainingSet:
    records, _ = load_dataset([str(args.data), str(args.second)], None, labeled=True)
    return TrainingSet.from_records(records)


def unlabeled_pool(data: TrainingSet, direction, n: int, seed: int) -> list[str]:
    """Up to ``n`` unlabeled abstracts usable on ``direction``'s training side: never one of the held-out
    source (its venue and year, and any text equal to a held-out abstract)."""
    from papertrack.features.ingest import abstract_key

    held = {abstract_key(data.texts[i]) for i in direction.test}
    pool = []
    with gzip.open(args_unlabeled(), "rt", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            text = (r.get("abstract") or "").strip()
            if not text or f"{r.get('venue')} {r.get('year')}" == direction.heldout or abstract_key(text) in held:
                continue
            pool.append(text)
    rng = np.random.default_rng(seed)
    return [pool[i] for i in rng.choice(len(pool), min(n, len(pool)), replace=False)]


_UNLABELED: list[Path] = []


def args_unlabeled() -> Path:
    return _UNLABELED[0]


def prior_shift_em(proba: np.ndarray, train_prior: np.ndarray, steps: int = 50) -> np.ndarray:
    """Saerens et al. (2002): re-estimate the label prior of unlabeled rows by EM and re-weight the
    posteriors (p(y|x) * new_prior / train_prior). Uses the held-out rows' predictions, never their labels."""
    ratio_base = np.where(train_prior > 0, 1.0 / np.maximum(train_prior, 1e-12), 0.0)
    prior = train_prior.copy()
    adjusted = proba
    for _ in range(steps):
        adjusted = proba * (prior * ratio_base)
        adjusted /= np.maximum(adjusted.sum(axis=1, keepdims=True), 1e-300)
        prior = adjusted.mean(axis=0)
    return adjusted


def shift(args) -> None:
    """Every attempt on the shift holdout (leave one labeled year out), per direction and mean."""
    from scipy.sparse import vstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    from papertrack.features.text import FEATURE_SETTINGS
    from papertrack.models.estimators import TextClassifier
    from papertrack.training.data import shift_directions
    from papertrack.training.evaluation import ShiftResult, shift_holdout, shift_metrics

    _UNLABELED.append(args.unlabeled)
    data = load_both(args)
    directions = shift_directions(data.sources)
    n = data.space.n_labels
    rows: list[tuple[str, dict[str, float]]] = []

    def report(name: str, result: ShiftResult) -> None:
        m = shift_metrics(result)
        rows.append((name, m))
        print(
            f"  {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in m.items() if "." not in k), file=sys.stderr, flush=True
        )

    def lr(C: float) -> LogisticRegression:
        return LogisticRegression(C=C, class_weight="balanced", max_iter=300, random_state=args.seed)

    def vec(**changes) -> TfidfVectorizer:
        return TfidfVectorizer(**{**FEATURE_SETTINGS["word"], **changes})

    attempts = {"tfidf-word-logreg (C=10, default sweep)": lambda: CANDIDATES["tfidf-word-logreg"].build(n, args.seed)}
    tuning = {
        "TF-IDF word 1-2-gram + LR C=10 (the issue's reference)": lambda: TextClassifier(
            vec(ngram_range=(1, 2), max_features=100_000), lr(10.0), n
        ),
        "tfidf-word LR C=3": lambda: TextClassifier(vec(), lr(3.0), n),
        "tfidf-word LR C=30": lambda: TextClassifier(vec(), lr(30.0), n),
        "tfidf-word LR min_df=1, max_df=0.5": lambda: TextClassifier(vec(min_df=1, max_df=0.5), lr(10.0), n),
        "tfidf-word LR, no class_weight": lambda: TextClassifier(
            vec(), LogisticRegression(C=10.0, max_iter=300, random_state=args.seed), n
        ),
    }
    union = {"tfidf-union (word + char) LR C=10": lambda: CANDIDATES["tfidf-union-logreg"].build(n, args.seed)}
    attempts.update({**(tuning if "tuning" in args.only else {}), **(union if "union" in args.only else {})})
    for name, build in attempts.items():
        result = shift_holdout(build, data, directions, args.seed)
        report(name, result)
        if name.startswith("tfidf-word-logreg"):
            base = result

    # class-prior shift correction (EM on the held-out rows' predictions) of the default-sweep LR
    corrected = np.zeros_like(base.proba)
    for d in directions:
        # class_weight="balanced": the LR's posteriors assume a uniform prior over the training side's labels
        seen = np.bincount(data.y[d.train], minlength=n) > 0
        corrected[d.test] = prior_shift_em(base.proba[d.test], seen / seen.sum())
    report(
        "tfidf-word-logreg + EM prior-shift correction on the held-out source", _rescore(corrected, data, directions)
    )

    # unlabeled abstracts (never the held-out source's): IDF/vocabulary fitted on them too; self-training
    texts = np.asarray(data.texts, dtype=object)
    if "unlabeled" not in args.only:
        return _print_shift_table(rows, directions, args.seed)
    idf_proba, self_proba = np.zeros_like(base.proba), np.zeros_like(base.proba)
    for d in directions:
        pool = unlabeled_pool(data, d, args.pool, args.seed)
        v = vec().fit(list(texts[d.train]) + pool)
        A, U, B = v.transform(list(texts[d.train])), v.transform(pool), v.transform(list(texts[d.test]))
        teacher = lr(10.0).fit(A, data.y[d.train])
        idf_proba[np.ix_(d.test, teacher.classes_)] = teacher.predict_proba(B)
        pu = teacher.predict_proba(U)
        keep = pu.max(axis=1) > 0.3
        student = lr(10.0).fit(
            vstack([A, U[keep]]),
            np.concatenate([data.y[d.train], teacher.classes_[pu.argmax(1)][keep]]),
            sample_weight=np.concatenate([np.ones(len(d.train)), np.full(keep.sum(), 0.3)]),
        )
        self_proba[np.ix_(d.test, student.classes_)] = student.predict_proba(B)
        print(f"  {d.name}: pool {len(pool):,}, pseudo-labeled {keep.sum():,}", file=sys.stderr)
    report(
        f"tfidf-word LR, vocabulary/IDF also fitted on {args.pool:,} unlabeled abstracts",
        _rescore(idf_proba, data, directions),
    )
    report(
        "self-training: + pseudo-labeled unlabeled abstracts (conf > 0.3, weight 0.3)",
        _rescore(self_proba, data, directions),
    )
    _print_shift_table(rows, directions, args.seed)


AREA_MEMBERS = {"area-tfidf-word-logreg": "tfidf-word-logreg", "area-emb-minilm-logreg": "emb-minilm-logreg"}


def area_gate(args) -> None:
    """An area classifier as one more ensemble member: the model of ``AREA_MEMBERS[name]`` fitted on the
    8 areas instead of the 86 labels, its answer spread over the labels as p(label) ∝ p(area of label).
    In the geometric ensemble that adds w · log p(area) to every label of the area — a gate learned on
    8 classes with ~550 examples each, where the label models see 41 labels with < 10 examples. The
    weights (the area members' included) are chosen exactly as the sweep chooses them: nested on the
    CV folds, and on the training side's inner CV for each shift direction. Per seed and mean ± sd."""
    from papertrack.models.ensemble import combine
    from papertrack.training.data import shift_directions
    from papertrack.training.ensemble_weights import nested_cv, select_weights
    from papertrack.training.evaluation import INNER_FOLDS, SHIFT_METRICS

    data = load_both(args)
    space = data.space
    directions = shift_directions(data.sources)
    texts = np.asarray(data.texts, dtype=object)
    y_area = space.area_of(data.y)
    n_areas = len(space.areas)
    bases = {name: CANDIDATES[name] for name in ("ensemble-tfidf-minilm", "ensemble-tfidf")}
    variants = {  # name -> (base ensemble, extra area members)
        "ensemble-tfidf-minilm": ("ensemble-tfidf-minilm", ()),
        "ensemble-tfidf-minilm + area-tfidf": ("ensemble-tfidf-minilm", ("area-tfidf-word-logreg",)),
        "ensemble-tfidf-minilm + area-tfidf + area-minilm": (
            "ensemble-tfidf-minilm",
            ("area-tfidf-word-logreg", "area-emb-minilm-logreg"),
        ),
        "ensemble-tfidf": ("ensemble-tfidf", ()),
        "ensemble-tfidf + area-tfidf": ("ensemble-tfidf", ("area-tfidf-word-logreg",)),
    }
    keys = ("label_top3", "label_top1", "area_top1", "label_macro_f1")
    table: dict[str, list[dict[str, float]]] = {v: [] for v in variants}

    def as_labels(p_area: np.ndarray) -> np.ndarray:
        out = p_area[:, space.label_area]
        return out / out.sum(axis=1, keepdims=True)

    def fit_area(name: str, seed: int, train: np.ndarray, test: np.ndarray) -> np.ndarray:
        model = CANDIDATES[AREA_MEMBERS[name]].build(n_areas, seed).fit(list(texts[train]), y_area[train])
        return as_labels(model.predict_proba(list(texts[test])))

    for seed in args.seeds:
        started = time.perf_counter()
        split = fold_indices(data.y, space, 5, seed)
        singles = list(dict.fromkeys(m for c in bases.values() for m in c.members))
        # the ensembles too: their members' inner OOF (training side of each direction) is computed for them
        results = evaluate_candidates(
            [*(CANDIDATES[m] for m in singles), *bases.values()], data, split, seed, directions=directions
        )
        for r in results:
            if r.candidate.is_ensemble:  # the sweep's own figures, to check the variants' base rows against
                print(
                    f"  seed {seed} sweep's {r.candidate.name}: CV top3 {r.metrics['cv_label_top3']:.3f}, shift top3 "
                    f"{r.metrics['shift_label_top3']:.3f}",
                    file=sys.stderr,
                    flush=True,
                )
        results = [r for r in results if not r.candidate.is_ensemble]
        cv = {r.candidate.name: r.cv.oof_proba for r in results}
        shifted = {r.candidate.name: r.shift.proba for r in results}
        inner = {r.candidate.name: r.shift.inner_oof for r in results}
        for name in AREA_MEMBERS:
            cv[name] = np.zeros((len(data.y), space.n_labels))
            for train, test in split:
                cv[name][test] = fit_area(name, seed, train, test)
            shifted[name], inner[name] = np.zeros_like(cv[name]), {}
            for d in directions:
                shifted[name][d.test] = fit_area(name, seed, d.train, d.test)
                inner_split = fold_indices(data.y[d.train], space, INNER_FOLDS, seed)
                oof = np.zeros((len(d.train), space.n_labels))
                for tr, te in inner_split:
                    oof[te] = fit_area(name, seed, d.train[tr], d.train[te])
                inner[name][d.name] = oof
            alone = evaluate(cv[name], data.y, space)
            print(f"  seed {seed} {name} alone: CV area top1 {alone['area_top1']:.3f}", file=sys.stderr, flush=True)
        for variant, (base, extra) in variants.items():
            spec = bases[base].ensemble
            members = [*spec.members, *extra]
            ens = nested_cv([cv[m] for m in members], data.y, split, spec.rule, spec.steps, spec.objective)
            m = {k: evaluate(ens.oof_proba, data.y, space)[k] for k in keys}
            per = {}
            for d in directions:
                w = select_weights(
                    [inner[x][d.name] for x in members], data.y[d.train], spec.rule, spec.steps, spec.objective
                )
                p = combine([shifted[x][d.test] for x in members], w, spec.rule)
                per[d.name] = evaluate(p, data.y[d.test], space)
            for k in SHIFT_METRICS:
                m[f"shift_{k}"] = float(np.mean([per[d][k] for d in per]))
            for d in per:
                m[f"shift_label_top3.{d}"] = per[d]["label_top3"]
            m["weights"] = ", ".join(f"{x} {wi:.2f}" for x, wi in zip(members, ens.weights) if wi > 0)
            table[variant].append(m)
            print(
                f"  seed {seed} {variant}: CV top3 {m['label_top3']:.3f} area {m['area_top1']:.3f} | shift top3 "
                f"{m['shift_label_top3']:.3f} area {m['shift_area_top1']:.3f} | {m['weights']}",
                file=sys.stderr,
                flush=True,
            )
        print(f"  seed {seed}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    def ms(values: list[float]) -> str:
        return (
            f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}" if len(values) > 1 else f"{values[0]:.3f}"
        )

    cols = (
        "label_top3",
        "label_top1",
        "area_top1",
        "shift_label_top3",
        "shift_label_top1",
        "shift_area_top1",
        "shift_label_macro_f1",
    )
    print(f"| variant (seeds {', '.join(map(str, args.seeds))}) | CV top3 per seed | " + " | ".join(cols) + " |")
    print("|---|---|" + "---:|" * len(cols))
    for variant, rows in table.items():
        print(
            f"| {variant} | "
            + " / ".join(f"{r['label_top3']:.3f}" for r in rows)
            + " | "
            + " | ".join(ms([r[c] for r in rows]) for c in cols)
            + " |"
        )
    print("\nshift top-3 per seed:")
    for variant, rows in table.items():
        print(
            f"- {variant}: "
            + " / ".join(f"{r['shift_label_top3']:.3f}" for r in rows)
            + "; weights (CV, all rows): "
            + " | ".join(r["weights"] for r in rows)
        )
    base_of = {v: b for v, (b, _) in variants.items()}
    print("\ndifference to the base ensemble, paired by seed (mean ± sd):")
    for variant, rows in table.items():
        base = table[base_of[variant]]
        if variant == base_of[variant]:
            continue
        for c in ("label_top3", "shift_label_top3", "shift_area_top1"):
            diffs = [r[c] - b[c] for r, b in zip(rows, base)]
            print(f"- {variant} {c}: " + " / ".join(f"{x:+.3f}" for x in diffs) + f" (mean {ms(diffs)})")


def extra_member(args) -> None:
    """The default ensemble with one more catalogue candidate among its members (``--extra``), evaluated by the
    sweep's own :func:`evaluate_candidates` (nested CV weights; inner CV of each shift direction's training
    side): the base ensemble's and the variant's figures per seed."""
    from papertrack.models.catalogue import ensemble_candidate
    from papertrack.training.data import shift_directions

    data = load_both(args)
    directions = shift_directions(data.sources)
    base = CANDIDATES[args.base]
    variant = ensemble_candidate(
        f"{args.base} + {' + '.join(args.extra)}",
        [*base.members, *args.extra],
        rule=base.ensemble.rule,
        steps=base.ensemble.steps,
        objective=base.ensemble.objective,
    )
    for seed in args.seeds:
        started = time.perf_counter()
        singles = [CANDIDATES[m] for m in dict.fromkeys([*base.members, *args.extra])]
        results = evaluate_candidates(
            [*singles, base, variant], data, fold_indices(data.y, data.space, 5, seed), seed, directions=directions
        )
        for r in results:
            m = r.metrics
            print(
                f"| {seed} | {r.candidate.name} | {m['cv_label_top3']:.3f} | {m['cv_label_top1']:.3f} | "
                f"{m['cv_area_top1']:.3f} | "
                f"{m['shift_label_top3']:.3f} | {m['shift_label_top1']:.3f} | {m['shift_area_top1']:.3f} | "
                f"{m['shift_label_macro_f1']:.3f} | "
                + ", ".join(f"{k} {w:.2f}" for k, w in r.member_weights.items() if w > 0)
                + " |",
                flush=True,
            )
        print(f"  seed {seed}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)


def _print_shift_table(rows, directions, seed: int) -> None:
    names = [d.name for d in directions]
    print(
        f"| attempt (shift holdout, seed {seed}) | "
        + " | ".join(f"top3 {n_}" for n_ in names)
        + " | top3 mean | top1 mean | area top1 mean | macro-F1 mean |"
    )
    print("|---|" + "---:|" * (len(names) + 4))
    for name, m in rows:
        print(
            f"| {name} | "
            + " | ".join(f"{m[f'shift_label_top3.{d}']:.3f}" for d in names)
            + f" | {m['shift_label_top3']:.3f} | {m['shift_label_top1']:.3f} | {m['shift_area_top1']:.3f} | "
            f"{m['shift_label_macro_f1']:.3f} |"
        )


def _rescore(proba: np.ndarray, data: TrainingSet, directions):
    from papertrack.training.evaluation import SHIFT_METRICS, ShiftResult

    per = {}
    for d in directions:
        m = evaluate(proba[d.test], data.y[d.test], data.space)
        per[d.name] = {k: m[k] for k in SHIFT_METRICS}
    return ShiftResult(proba, per, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA / "iclr2024_topics.jsonl")
    parser.add_argument("--unlabeled", type=Path, default=UNLABELED)
    parser.add_argument("--extra", type=Path, default=DATA / "extra" / "icml_neurips_2015_2019_sessions.jsonl.gz")
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("seeds")
    s.add_argument("--seeds", type=int, nargs="+", default=[42, 7, 123])
    e = sub.add_parser("experiments")
    e.add_argument("--seed", type=int, default=42, help="CV seed (folds and models)")
    sh = sub.add_parser("shift", help="the accuracy attempts on the shift holdout (leave one labeled year out)")
    sh.add_argument("--second", type=Path, default=DATA / "icml2024_topics.jsonl")
    sh.add_argument("--seed", type=int, default=42)
    sh.add_argument("--pool", type=int, default=12_000, help="unlabeled abstracts used per direction")
    sh.add_argument(
        "--only",
        nargs="+",
        default=["tuning", "union", "prior", "unlabeled"],
        choices=["tuning", "union", "prior", "unlabeled"],
        help="which groups of attempts to run",
    )
    a = sub.add_parser("area", help="an area classifier as one more ensemble member (CV and shift, several seeds)")
    a.add_argument("--second", type=Path, default=DATA / "icml2024_topics.jsonl")
    a.add_argument("--seeds", type=int, nargs="+", default=[42, 7, 123])
    x = sub.add_parser("member", help="the default ensemble with more catalogue candidates as members")
    x.add_argument("--second", type=Path, default=DATA / "icml2024_topics.jsonl")
    x.add_argument("--seeds", type=int, nargs="+", default=[42, 7, 123])
    x.add_argument("--base", default=DEFAULT_ENSEMBLE)
    x.add_argument("--extra", nargs="+", default=["tfidf-union-logreg"])
    f = sub.add_parser("finetune", help="fine-tune MiniLM on one fold (about 2 minutes per epoch on 2 cores)")
    f.add_argument("--epochs", type=int, default=4)
    f.add_argument("--max-seq-length", type=int, default=128)
    f.add_argument("--fold", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the packaged model only; no hub
    warnings.filterwarnings("ignore", category=UserWarning)
    {
        "seeds": seeds,
        "experiments": experiments,
        "finetune": finetune,
        "shift": shift,
        "area": area_gate,
        "member": extra_member,
    }[args.command](args)


if __name__ == "__main__":
    main()
