"""The files a labeling run writes, checked and claimed before anything is loaded or written.

* :func:`output_kind` — the one output-kind rule of batch work (the local and Spark engines, suggest): a file's
  kind is read from its extension (:data:`KINDS`); each writer names the kinds it writes and the fix;
* :func:`check_outputs` — the output and errors file are not folders, not inputs, and their folder is
  writable: one ``error:`` line up front instead of a failure after the model loaded (or after labeling).
* :func:`claim` — one writer per output: an exclusive ``flock`` on ``OUT.lock`` and ``ERRORS.lock``
  (non-blocking), taken before the model loads and held until the run ends. A second run on the same
  output, or on the same errors file (``-o x.jsonl`` and ``-o x.csv`` share ``x.errors.jsonl``), is
  refused with the holder's pid. The lock files are removed when the run ends.
* :func:`create_new` / :func:`open_existing` — temporary files (``OUT.partial``, the checkpoint's
  ``.tmp``) are created exclusively and never through a symbolic link, so a link planted at one of
  those names cannot redirect the labeler's writes to another file.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from papertrack.errors import PapertrackError
from papertrack.features.ingest import display_name
from papertrack.serving.batch.labeler.label_errors import LabelError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_held: dict[str, tuple[int, int]] = {}  # lock file -> (fd, how many claims of this process hold it)
KINDS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}


def output_kind(path: Path, accepted: Collection[str], fix: str, error: type[PapertrackError]) -> str:
    """The kind of the output ``path`` ("jsonl", "csv", "parquet" or "text") when it is one of ``accepted``; else
    ``error("<path>: <fix>")``."""
    kind = KINDS.get(path.suffix.lower())
    if kind is None or kind not in accepted:
        raise error(f"{path}: {fix}")
    return kind


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def same_file(a: Path, b: Path) -> bool:
    """True when ``a`` and ``b`` name one file (same resolved path, or same inode through a link)."""
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_outputs(written: dict[str, tuple[Path, str]], inputs: Sequence[Path]) -> None:
    """LabelError unless every file in ``written`` (what it is -> (path, the option that names it)) can be
    written: not an input, not a folder, in a folder that exists (or can be made) and is writable."""
    for what, (target, option) in written.items():
        for source in inputs:
            if same_file(source, target):
                name = display_name(source)
                if option == "-o":
                    raise LabelError(
                        f"-o {target} is one of the inputs (labeling would destroy it); choose another output"
                    )
                if option == "--errors":
                    raise LabelError(
                        f"the errors file {target} is one of the inputs (labeling would destroy it); "
                        f"choose another --errors"
                    )
                raise LabelError(
                    f"the {what} {target} is the input {name} (labeling would destroy it); choose another -o/--errors"
                )
        if target.is_dir():
            raise LabelError(
                f"{option or 'the ' + what} {target} is a folder; name a file in it, e.g. {target / 'labeled.jsonl'}"
            )
        if target.exists() and not target.is_file():
            raise LabelError(
                f"{option or 'the ' + what} {target} is {kind_of(target)}, not a regular file: the rows are written "
                f"to a temporary file renamed to it at the end, which would replace it; name a regular file"
            )
        _check_folder(target)


def kind_of(path: Path) -> str:
    """What a path that exists but is neither a regular file nor a folder is, in words."""
    import stat

    mode = path.stat().st_mode
    for test, kind in (
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return kind
    return "a special file"


def _check_folder(target: Path) -> None:
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LabelError(f"cannot write {target}: {exc.strerror} ({exc.filename}); choose another -o") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise LabelError(f"cannot write {target}: the folder {folder} is not writable; choose another -o")


@contextlib.contextmanager
def claim(targets: Sequence[tuple[Path, str]]) -> Iterator[None]:
    """Hold the lock of every ``(file, option that names it)`` for the duration of the block (see the module
    doc). Re-entrant within a process: the CLI claims before loading the model, ``label_dumps`` again."""
    taken: list[Path] = []
    try:
        for target, option in targets:
            lock = lock_path(target)
            if str(lock) in {str(t) for t in taken}:
                continue
            _acquire(lock, target, option)
            taken.append(lock)
        yield
    finally:
        for lock in reversed(taken):
            _release(lock)


def _acquire(lock: Path, target: Path, option: str) -> None:
    key = str(lock.resolve())
    if key in _held:
        fd, count = _held[key]
        _held[key] = (fd, count + 1)
        return
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o644)
        except OSError as exc:
            if lock.is_symlink():
                raise LabelError(
                    f"{lock} is a symbolic link; papertrack does not write through links: remove it "
                    f"(or choose another {option})"
                ) from None
            raise LabelError(f"cannot write {lock}: {exc.strerror}; choose another {option}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise LabelError(
                f"{target} is being written by another papertrack label run ({holder}; lock {lock}); "
                f"wait for it to finish, or choose another {option}"
            ) from None
        # the holder may have removed the lock file between our open and flock: then lock the new one
        try:
            if os.fstat(fd).st_ino == os.stat(lock, follow_symlinks=False).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {target}\n".encode("utf-8", "backslashreplace"))
    _held[key] = (fd, 1)


def forget_locks() -> None:
    """In a process forked from the lock holder: close its copies of the locks' descriptors (the locks stay the
    parent's, released when the parent releases them)."""
    for fd, _ in _held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace").split(maxsplit=1)
    except OSError:
        text = []
    if not text:
        return "pid unknown"
    return f"pid {text[0]}" + (f", writing {text[1].strip()}" if len(text) > 1 else "")


def _release(lock: Path) -> None:
    key = str(lock.resolve())
    fd, count = _held.pop(key, (None, 0))
    if fd is None:
        return
    if count > 1:
        _held[key] = (fd, count - 1)
        return
    try:
        lock.unlink(missing_ok=True)  # while still holding it: a waiting run then sees a new inode
    except OSError:
        pass
    os.close(fd)


def refuse_link(path: Path, option: str = "-o") -> None:
    """LabelError when ``path`` is a symbolic link (a temporary file of the run must never be one)."""
    if path.is_symlink():
        raise LabelError(
            f"{path} is a symbolic link; papertrack does not write through links: remove it "
            f"(or choose another {option})"
        )


def create_new(path: Path, data: bytes = b"") -> None:
    """Replace ``path`` by a new file holding ``data``: an old regular file is removed, a symbolic link is
    refused, and the new file is created exclusively (``O_EXCL|O_NOFOLLOW``), never through a link."""
    refuse_link(path)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def open_new(path: Path, mode: str = "w", encoding: str | None = "utf-8"):
    """A new file at ``path`` opened for writing, created as :func:`create_new` does."""
    refuse_link(path)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o644)
    return os.fdopen(fd, mode, encoding=encoding if "b" not in mode else None)


def open_existing(path: Path):
    """An existing file opened for reading and writing (``r+b``), never through a symbolic link."""
    refuse_link(path)
    fd = os.open(path, os.O_RDWR | _NOFOLLOW | _CLOEXEC)
    return os.fdopen(fd, "r+b")
