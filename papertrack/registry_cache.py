"""What the model registry last answered for a reference, kept in the store so that a command that only reads
(``label``, ``suggest``, ``taxonomies``, ``serve``, ``papertrack.load()``) finds ``champion``'s files and their
digests without importing MLflow, its SQLAlchemy store and alembic (~2 s of every start).

MLflow stays the source of truth: the registry alias is what ``train`` moves, and an entry is only ever written from
what MLflow answered (:func:`remember`). An entry is used only while the database is, to the byte, the one it was
read from: each entry records the database's identity (device, inode, size, modification time) and SQLite's own
file change counter and schema cookie (the database header, https://www.sqlite.org/fileformat.html: the counter
goes up on every committed write in rollback-journal mode). Any write to the store since — an alias moved, a
version registered, a tag set, a run logged, by papertrack, MLflow's UI or anyone — or a database replaced, in WAL
mode, or in the middle of a transaction (a journal beside it) makes :func:`lookup` answer None, and the caller asks
MLflow. The entry is then written again from MLflow's answer, and only if the database did not change while MLflow
was asked (the state is read before and after: a seqlock).

``papertrack runs`` keeps its answer (the leaderboard it printed, :func:`remember_answer`) the same way: shown again
while the database is unchanged, asked of MLflow again after any write (not kept while a sweep is running).

The cache vouches for nothing by itself: the files it names are checked against the digests it carries, which are
the ones the tracking database holds (``papertrack.model_files``), as on MLflow's path. It lives beside the database
(``<home>/registry_cache.json``) and is trusted only when the database's owner wrote it and nobody else can write it:
whoever could forge it could replace the database itself. Only papertrack's own sqlite store under
``PAPERTRACK_HOME`` is cached (not a tracking server or another database); writing it is best effort (a store that
cannot be written is simply read through MLflow every time).
"""

from __future__ import annotations

import json
import logging
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from papertrack import settings

if TYPE_CHECKING:
    from papertrack.models.loading import Pinned
    from papertrack.store import Store

logger = logging.getLogger(__name__)

CACHE_FILE = "registry_cache.json"
FORMAT = 1
_HEADER = 100  # bytes of the SQLite database header
_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Entry:
    """A registered version as MLflow gave it: its number, run, the local folder of its files and their digests
    (the ``papertrack.model_files`` tag)."""

    name: str
    version: str
    run_id: str
    folder: Path
    files: dict[str, str]

    @property
    def model_uri(self) -> str:
        return f"models:/{self.name}/{self.version}"


def key(name: str, alias: str | None = None, version: str | None = None) -> str | None:
    """The cache key of a registry reference: ``name@alias`` or ``name/version`` (None for anything else)."""
    if alias is not None:
        return f"{name}@{alias}"
    if version is not None:
        return f"{name}/{int(version)}"
    return None


def database(store: Store) -> Path | None:
    """The sqlite database of ``store`` when it is papertrack's own store under its home (the only kind cached)."""
    path = store.home / settings.STORE_DATABASE
    uri = f"sqlite:///{path}"
    return path if store.tracking_uri == uri and store.registry_uri == uri else None


def state(store: Store) -> list[Any] | None:
    """What identifies the store's database as it is now (see the module doc), or None when it cannot vouch for
    an entry: not a cached kind of store, unreadable, not SQLite, in WAL mode or inside a transaction."""
    path = database(store)
    if path is None:
        return None
    try:
        with open(path, "rb") as db:
            info = os.fstat(db.fileno())
            header = db.read(_HEADER)
        if any(path.with_name(path.name + suffix).exists() for suffix in ("-journal", "-wal")):
            return None  # a write under way, a hot journal or WAL mode: the header alone does not tell
    except OSError:
        return None
    if len(header) < _HEADER or not header.startswith(_MAGIC) or header[18:20] != b"\x01\x01":
        return None  # bytes 18-19: the file format versions; 2 is WAL, where the change counter may stand still
    counter, cookie, valid_for = header[24:28].hex(), header[40:44].hex(), header[92:96].hex()
    return [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, counter, cookie, valid_for]


def _trusted(info: os.stat_result, database: Path) -> bool:
    """A cache file written by the database's owner that nobody else can write."""
    try:
        owner = database.stat().st_uid
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == owner and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _read(store: Store, path: Path) -> dict[str, Any] | None:
    db = database(store)
    if db is None:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            if not _trusted(os.fstat(file.fileno()), db):
                logger.debug("%s is not the database owner's alone: not used", path)
                return None
            data = json.load(file)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def lookup(store: Store, name: str, alias: str | None = None, version: str | None = None) -> Entry | None:
    """The entry for ``name@alias`` (or ``name``'s ``version``) when the store has not changed since MLflow gave
    it; None otherwise (ask MLflow)."""
    wanted = key(name, alias, version)
    now = state(store)
    if wanted is None or now is None:
        return None
    data = _read(store, store.home / CACHE_FILE)
    if data is None or data.get("database") != now:
        return None
    entries = data.get("entries")
    found: Any = entries.get(wanted) if isinstance(entries, dict) else None
    if not isinstance(found, dict):
        return None
    try:
        entry = Entry(
            name=str(found["name"]),
            version=str(int(found["version"])),
            run_id=str(found["run_id"]),
            folder=Path(found["folder"]),
            files={str(k): str(v) for k, v in found["files"].items()},
        )
    except (TypeError, KeyError, ValueError, AttributeError):
        return None
    if entry.name != name or (version is not None and entry.version != str(int(version))):
        return None
    if not entry.folder.is_absolute() or not entry.files:
        return None
    return entry


def remember(store: Store, reference: str | None, entry: Entry, before: list[Any] | None) -> None:
    """Keep ``entry`` (what MLflow answered for ``reference``, a :func:`key`) if the database is still as it was
    (``before``: :func:`state` taken before MLflow was asked). Best effort: nothing is said when it cannot be
    written."""
    if reference is None:
        return
    value = {
        "name": entry.name,
        "version": entry.version,
        "run_id": entry.run_id,
        "folder": str(entry.folder),
        "files": entry.files,
    }
    _write(store, before, "entries", reference, value)


def remember_answer(store: Store, name: str, value: Any, before: list[Any] | None) -> None:
    """Keep a read command's answer ``value`` (JSON) from MLflow under ``name``, like :func:`remember`."""
    _write(store, before, "answers", name, value)


def answer(store: Store, name: str) -> Any:
    """The answer kept under ``name`` while the store has not changed since MLflow gave it; None otherwise."""
    now = state(store)
    data = _read(store, store.home / CACHE_FILE) if now is not None else None
    if data is None or data.get("database") != now or not isinstance(data.get("answers"), dict):
        return None
    return data["answers"].get(name)


def _write(store: Store, before: list[Any] | None, part: str, name: str, value: Any) -> None:
    if before is None or state(store) != before:
        return
    path = store.home / CACHE_FILE
    data = _read(store, path)
    kept = data if data and data.get("database") == before else {}
    parts = {key: dict(kept.get(key) or {}) for key in ("entries", "answers")}
    parts[part][name] = value
    text = json.dumps({"format": FORMAT, "database": before, **parts}, indent=1, sort_keys=True)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{CACHE_FILE}.", dir=store.home)
        try:
            os.fchmod(fd, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text + "\n")
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        logger.debug("could not write %s: %s", path, exc)


def remember_pinned(
    store: Store, reference: str | None, pinned: Pinned, folder: Path, before: list[Any] | None
) -> None:
    """:func:`remember` what MLflow answered for ``reference``: a pinned registered version
    (:func:`papertrack.models.loading.pin`) whose files are in ``folder``, the artifact store's own local folder —
    when it names a version with recorded digests (else nothing is kept: the next start asks MLflow)."""
    if pinned.name and pinned.version and pinned.expected and folder.is_absolute() and folder.is_dir():
        entry = Entry(pinned.name, pinned.version, pinned.run_id or "", folder, pinned.expected)
        remember(store, reference, entry, before)
