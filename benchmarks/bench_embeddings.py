"""Cost of the sentence-embedding features and of a champion that uses them (2 cores, CPU only).

    # embedding throughput (abstracts/s) of the packaged MiniLM, cold (no cache) and from the cache
    .venv/bin/python benchmarks/bench_embeddings.py throughput --n 500
    # what batching buys: cost per abstract one at a time vs batches of 2/4/8, 1 and 2 torch threads
    .venv/bin/python benchmarks/bench_embeddings.py batching --n 64
    # TrackPredictor.predict: p50/p95 on one abstract at a time, and throughput on 5,000 rows of the
    # unlabeled corpus, for the registered champion (or any model URI), cold and warm embedding cache
    PAPERTRACK_HOME=/tmp/emb-sweep .venv/bin/python benchmarks/bench_embeddings.py predict --rows 5000
    # the static-embedding experiment (model2vec-style distillation of the packaged MiniLM), 5-fold CV
    .venv/bin/python benchmarks/bench_embeddings.py static

Every measurement uses a fresh temporary embedding cache (``PAPERTRACK_EMBEDDING_CACHE``) unless
said otherwise, so "cold" means the abstracts were never embedded before. Results print as a
markdown table to paste into benchmarks/embeddings.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from shared_data import DATA, UNLABELED, unlabeled_abstracts


def machine() -> str:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{platform.processor() or platform.machine()}, {cores} cores, load average {load:.2f} at start"


def fresh_cache() -> Path:
    path = Path(tempfile.mkdtemp(prefix="emb-bench-cache-"))
    os.environ["PAPERTRACK_EMBEDDING_CACHE"] = str(path)
    from papertrack.features import embeddings

    embeddings.reset_embedders()
    return path


def cmd_throughput(args) -> None:
    from papertrack.settings import quiet_third_parties

    quiet_third_parties()
    from papertrack.features import embeddings

    texts = unlabeled_abstracts(args.n, skip=args.skip)
    started = time.perf_counter()
    embeddings.load_model(args.backend)
    load_s = time.perf_counter() - started
    import torch

    cache = fresh_cache()
    embedder = embeddings.get_embedder(args.backend)
    started = time.perf_counter()
    embedder.embed(texts, progress=False)
    cold = time.perf_counter() - started
    embedder.clear_memory()
    started = time.perf_counter()
    embedder.embed(texts, progress=False)
    warm = time.perf_counter() - started
    print(f"# embedding throughput — {machine()}, torch {torch.__version__} with {torch.get_num_threads()} threads")
    print(
        f"backend {args.backend} ({embedder.model_id}); {len(texts)} abstracts of {UNLABELED.name} "
        f"(from row {args.skip}); cache {cache}"
    )
    print("| step | seconds | abstracts/s |\n|---|---:|---:|")
    print(f"| load the packaged model (once per process) | {load_s:.1f} | - |")
    print(f"| encode, cold cache (batch {embedder.batch_size}, longest first) | {cold:.1f} | {len(texts) / cold:.1f} |")
    print(f"| read back from the on-disk cache | {warm:.3f} | {len(texts) / warm:,.0f} |")


def cmd_batching(args) -> None:
    """What batching can buy a server: the packaged model's CPU cost per abstract encoded one at a time and
    in batches of 2, 4, 8, with 1 and 2 torch threads (no cache: ``model.encode`` itself)."""
    from papertrack.settings import quiet_third_parties

    quiet_third_parties()
    import torch

    from papertrack.features import embeddings

    texts = unlabeled_abstracts(args.n, skip=args.skip)
    model = embeddings.BACKENDS[args.backend].load()
    model.encode(texts[:8], batch_size=8)  # first-call costs
    print(
        f"# batching — {machine()}, torch {torch.__version__}; {len(texts)} abstracts of {UNLABELED.name} "
        f"(from row {args.skip}), each batch size over the same abstracts"
    )
    print("| torch threads | batch | ms per abstract (wall) | CPU ms per abstract | wall gain over batch 1 |")
    print("|---:|---:|---:|---:|---:|")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        single = None
        for batch in (1, 2, 4, 8):
            cpu, wall = time.process_time(), time.perf_counter()
            for i in range(0, len(texts), batch):
                model.encode(texts[i : i + batch], batch_size=batch)
            wall = (time.perf_counter() - wall) * 1000 / len(texts)
            cpu = (time.process_time() - cpu) * 1000 / len(texts)
            single = single or wall
            print(f"| {threads} | {batch} | {wall:.1f} | {cpu:.1f} | {single / wall:.2f}x |", flush=True)


def cmd_predict(args) -> None:
    from papertrack.settings import quiet_third_parties

    quiet_third_parties()
    from papertrack import store as mlstore
    from papertrack.models.artifact import load_predictor

    with mlstore.using(mlstore.open()):
        predictor, _ = load_predictor(args.model_uri)
    card = predictor.card
    print(f"# predict cost — {machine()}")
    print(f"model {args.model_uri}: candidate {card.candidate} (family {card.family})")
    # one-abstract latency: distinct abstracts, so that every call embeds a new text (cold) ...
    singles = unlabeled_abstracts(args.latency_n + 5, skip=30_000)
    fresh_cache()
    predictor.predict(singles[:5])  # loads the embedding model and warms up (not timed)
    cold_ms = []
    for abstract in singles[5:]:
        started = time.perf_counter()
        predictor.predict([abstract])
        cold_ms.append(1000 * (time.perf_counter() - started))
    # ... and the same abstracts again (embedding cache hit: the classifier cost alone)
    warm_ms = []
    for abstract in singles[5:]:
        started = time.perf_counter()
        predictor.predict([abstract])
        warm_ms.append(1000 * (time.perf_counter() - started))
    rows = unlabeled_abstracts(args.rows)
    fresh_cache()
    started = time.perf_counter()
    for start in range(0, len(rows), args.chunk):
        predictor.predict(rows[start : start + args.chunk])
    batch_cold = time.perf_counter() - started
    started = time.perf_counter()
    for start in range(0, len(rows), args.chunk):
        predictor.predict(rows[start : start + args.chunk])
    batch_warm = time.perf_counter() - started

    def q(values, p):
        return statistics.quantiles(values, n=100)[p - 1]

    print("| measurement | cold embedding cache | warm embedding cache |\n|---|---:|---:|")
    print(
        f"| `TrackPredictor.predict` on 1 abstract, p50 (n={len(cold_ms)}) | {statistics.median(cold_ms):.1f} ms | "
        f"{statistics.median(warm_ms):.1f} ms |"
    )
    print(f"| same, p95 | {q(cold_ms, 95):.1f} ms | {q(warm_ms, 95):.1f} ms |")
    print(
        f"| `TrackPredictor.predict` on {len(rows):,} rows (chunks of {args.chunk}) | {batch_cold:.1f} s = "
        f"{len(rows) / batch_cold:.1f} abstracts/s | {batch_warm:.1f} s = {len(rows) / batch_warm:,.0f} abstracts/s |"
    )


def distill_static(dims: int = 256, sif: float = 1e-3):
    """A static token table distilled from the packaged MiniLM (model2vec's recipe, no download):
    each WordPiece token through MiniLM as ``[CLS] t [SEP]``, mean-pooled; PCA to ``dims``; SIF
    weights a / (a + p(token)) with frequencies counted on the unlabeled corpus."""
    import numpy as np
    import torch
    from sklearn.decomposition import PCA

    from papertrack.features import embeddings

    model = embeddings.load_model("minilm")
    tokenizer, transformer = model.tokenizer, model[0].auto_model
    size = len(tokenizer.get_vocab())
    ids = torch.arange(size)
    table = np.zeros((size, embeddings.BACKENDS["minilm"].dim), dtype=np.float32)
    started = time.perf_counter()
    with torch.inference_mode():
        for start in range(0, size, 1024):
            batch = ids[start : start + 1024]
            inputs = torch.stack(
                [torch.full_like(batch, tokenizer.cls_token_id), batch, torch.full_like(batch, tokenizer.sep_token_id)],
                1,
            )
            hidden = transformer(input_ids=inputs, attention_mask=torch.ones_like(inputs)).last_hidden_state
            table[start : start + len(batch)] = hidden.mean(1).numpy()
    distill_s = time.perf_counter() - started
    started = time.perf_counter()
    counts = np.zeros(size)
    corpus = unlabeled_abstracts(10**9)
    for ids_ in tokenizer(corpus, add_special_tokens=False)["input_ids"]:
        np.add.at(counts, ids_, 1)
    p = (counts + 1) / (counts.sum() + size)
    table = PCA(dims, random_state=0).fit_transform(table - table.mean(0)) if dims else table
    table = (table * (sif / (sif + p))[:, None]).astype(np.float32)
    return tokenizer, table, distill_s, time.perf_counter() - started


def cmd_static(args) -> None:
    from papertrack.settings import quiet_third_parties

    quiet_third_parties()
    import numpy as np
    from sklearn.base import BaseEstimator, TransformerMixin
    from sklearn.linear_model import LogisticRegression

    from papertrack.models.catalogue import CANDIDATES
    from papertrack.models.embedding_candidates import SoftKNN
    from papertrack.models.estimators import TextClassifier
    from papertrack.training.cv import cross_validate, fold_indices
    from papertrack.training.data import TrainingSet
    from papertrack.training.dataset import load_dataset
    from papertrack.training.ensemble_weights import nested_cv
    from papertrack.training.scoring import evaluate

    tokenizer, table, distill_s, freq_s = distill_static(args.dims, args.sif)

    class Static(TransformerMixin, BaseEstimator):
        def fit(self, texts, y=None):
            return self

        def transform(self, texts):
            ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
            vectors = np.stack([table[i].mean(0) for i in ids])
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    records, _ = load_dataset([str(DATA / "iclr2024_topics.jsonl")], labeled=True)
    data = TrainingSet.from_records(records)
    started = time.perf_counter()
    Static().transform(data.texts)
    rate = len(data.texts) / (time.perf_counter() - started)
    n = data.space.n_labels
    builds = {
        "static LR": lambda: TextClassifier(
            Static(), LogisticRegression(C=5.0, class_weight="balanced", max_iter=1000), n
        ),
        "static kNN": lambda: TextClassifier(Static(), SoftKNN(25, 0.05, 0.02), n),
        **{
            name: (lambda name=name: CANDIDATES[name].build(n, 42))
            for name in ("tfidf-word-logreg", "tfidf-word12-cnb", "tfidf-word-svm")
        },
    }
    split = fold_indices(data.y, data.space, 5, 42)
    oof = {
        name: cross_validate(build, data.texts, data.y, data.space, split).oof_proba for name, build in builds.items()
    }
    ens = nested_cv(list(oof.values()), data.y, split, rule="geometric")
    print(
        f"# static embeddings — {machine()}; distill {distill_s:.1f} s, token frequencies {freq_s:.1f} s, "
        f"{args.dims or 384}-d, SIF a={args.sif:g}"
    )
    print(
        "| features (5-fold CV) | top3 | top1 | macro-F1 | area top1 | encode abstracts/s |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    rows = {
        **{k: oof[k] for k in ("static LR", "static kNN")},
        "ensemble: 3 word TF-IDF + static LR/kNN (nested)": ens.oof_proba,
    }
    for name, proba in rows.items():
        m = evaluate(proba, data.y, data.space)
        print(
            f"| {name} | {m['label_top3']:.3f} | {m['label_top1']:.3f} | {m['label_macro_f1']:.3f} | "
            f"{m['area_top1']:.3f} | {rate:,.0f} |"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("throughput", help="embedding throughput, cold and from the cache")
    t.add_argument("--n", type=int, default=500)
    t.add_argument("--skip", type=int, default=10_000, help="start at this row of the unlabeled corpus")
    t.add_argument("--backend", default="minilm")
    t.set_defaults(func=cmd_throughput)
    b = sub.add_parser("batching", help="cost per abstract one at a time vs in batches, 1 and 2 torch threads")
    b.add_argument("--n", type=int, default=64)
    b.add_argument("--skip", type=int, default=10_000, help="start at this row of the unlabeled corpus")
    b.add_argument("--backend", default="minilm")
    b.set_defaults(func=cmd_batching)
    p = sub.add_parser("predict", help="predict latency (1 abstract) and batch throughput")
    p.add_argument("--model-uri", default="models:/papertrack@champion")
    p.add_argument("--rows", type=int, default=5000)
    p.add_argument("--chunk", type=int, default=256)
    p.add_argument("--latency-n", type=int, default=50)
    p.set_defaults(func=cmd_predict)
    st = sub.add_parser("static", help="the static-embedding experiment (distilled from the packaged MiniLM)")
    st.add_argument("--dims", type=int, default=256, help="PCA dimensions (0: keep 384)")
    st.add_argument("--sif", type=float, default=1e-3)
    st.set_defaults(func=cmd_static)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
