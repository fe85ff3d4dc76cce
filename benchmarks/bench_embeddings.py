"""Cost of the sentence-embedding features and of a champion that uses them (2 cores, CPU only).

    # embedding throughput (abstracts/s) of the packaged MiniLM, cold (no cache) and from the cache
    .venv/bin/python benchmarks/bench_embeddings.py throughput --n 500
    # what batching buys: cost per abstract one at a time vs batches of 2/4/8, 1 and 2 torch threads
    .venv/bin/python benchmarks/bench_embeddings.py batching --n 64
    # TrackPredictor.predict: p50/p95 on one abstract at a time, and throughput on 5,000 rows of the
    # unlabeled corpus, for the registered champion (or any model URI), cold and warm embedding cache
    PAPERTRACK_HOME=/tmp/emb-sweep .venv/bin/python benchmarks/bench_embeddings.py predict --rows 5000

The static-embedding experiment (``static``, a model2vec-style distillation of the packaged MiniLM) is finished:
its script is ``benchmarks/bench_embeddings.py`` at 88bf722, its figures in benchmarks/embeddings.md.

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

from shared_data import UNLABELED, unlabeled_abstracts


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
    from papertrack.models.loading import load_predictor

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
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
