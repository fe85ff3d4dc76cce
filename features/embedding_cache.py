"""The on-disk cache of sentence embeddings: sqlite (WAL) under ``<home>/embedding-cache/`` (override with
``PAPERTRACK_EMBEDDING_CACHE``; ``PAPERTRACK_EMBEDDING_CACHE=off`` disables it), keyed by (model id, sha256 of
the text). Each batch is written in one transaction (atomic); several processes may read and write the same
cache at once."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from papertrack import settings


def default_cache_dir() -> Path | None:
    """``$PAPERTRACK_EMBEDDING_CACHE`` (``off`` disables the cache), else ``<home>/embedding-cache``."""
    return settings.current().embedding_cache


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors on disk, keyed by (model id, text hash); safe with several writing processes."""

    FILE = "embeddings.sqlite"

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.path = self.directory / self.FILE
        self._local = threading.local()

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) != os.getpid():
            conn = None  # inherited through fork (e.g. server workers): never share a sqlite connection
        if conn is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=120.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, hash TEXT NOT NULL, "
                "dim INTEGER NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (model, hash)) WITHOUT ROWID"
            )
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    def get(self, model_id: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        conn = self._connection()
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT hash, dim, vector FROM vectors WHERE model = ? AND hash IN ({marks})", (model_id, *chunk)
            )
            for h, dim, blob in rows:
                vector = np.frombuffer(blob, dtype=np.float32)
                if vector.shape == (dim,):
                    found[h] = vector
        return found

    def put(self, model_id: str, hashes: Sequence[str], vectors: np.ndarray) -> None:
        """Store vectors in one transaction: a crash or a concurrent writer never leaves half a batch."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        rows = [(model_id, h, int(v.shape[0]), v.tobytes()) for h, v in zip(hashes, vectors)]
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?, ?, ?)", rows)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def count(self, model_id: str | None = None) -> int:
        conn = self._connection()
        if model_id is None:
            return conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
        return conn.execute("SELECT COUNT(*) FROM vectors WHERE model = ?", (model_id,)).fetchone()[0]
