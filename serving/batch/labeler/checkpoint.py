"""Crash safety: where an unfinished run writes, its checkpoint, resuming it and finishing it.

Rows go to ``OUT.partial`` (and ``ERRORS.partial``); after every chunk both are flushed and fsynced
and a checkpoint (``OUT.checkpoint.json``: the run's settings, records done, byte sizes, counters) is
replaced atomically. Only a finished run renames the partial files to their final names, so a file at
``OUT`` is always complete. Resuming truncates the partial files back to the checkpoint and the run
skips the records already done; the result is byte-identical to an uninterrupted run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

from papertrack.features.ingest import IngestError
from papertrack.serving.batch.labeler import outputs
from papertrack.serving.batch.labeler.label_errors import LabelError
from papertrack.serving.batch.labeler.rows import Counters

VERSION = 1
# settings a resumed run must share with the interrupted one, and how a message names each
MUST_MATCH = (
    ("version", "checkpoint format"),
    ("inputs", "input files (paths, sizes, times or contents)"),
    ("formats", "input formats"),
    ("output", "output file"),
    ("errors", "errors file"),
    ("kind", "output format"),
    ("top_k", "--top-k"),
    ("model", "model"),
)


@dataclass
class Paths:
    output: Path
    errors: Path

    @property
    def partial(self) -> Path:
        return partial_path(self.output)

    @property
    def errors_partial(self) -> Path:
        return self.errors.with_name(self.errors.name + ".partial")

    @property
    def checkpoint(self) -> Path:
        return self.output.with_name(self.output.name + ".checkpoint.json")


def partial_path(output: Path) -> Path:
    """Where the rows of an unfinished run are written (renamed to ``output`` when complete)."""
    return output.with_name(output.name + ".partial")


def default_errors_path(output: Path) -> Path:
    name = output.name
    for suffix in (".jsonl", ".ndjson", ".csv"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return output.with_name(name + ".errors.jsonl")


DIGEST_SPAN = 1 << 20  # bytes hashed at each end of an input


def fingerprint(paths: Sequence[Path]) -> list[dict]:
    """Path, size, modification time and a content digest of every input: a resume refuses inputs that changed.

    The digest (``sha256`` of the size, the first and the last ``DIGEST_SPAN`` bytes) tells a file replaced by
    another of the same size and time (``cp -p``, ``touch -r``, an unpacked archive) apart, reading at most 2 MiB.
    """
    out = []
    for path in paths:
        try:
            stat = path.stat()
            digest = content_digest(path, stat.st_size)
        except OSError:
            raise IngestError(path, None, "file not found") from None
        out.append({"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest})
    return out


def content_digest(path: Path, size: int) -> str:
    """sha256 of ``size``, the first ``DIGEST_SPAN`` bytes and the last ``DIGEST_SPAN`` bytes of ``path``."""
    import hashlib

    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        digest.update(f.read(DIGEST_SPAN))
        if size > DIGEST_SPAN:
            f.seek(max(DIGEST_SPAN, size - DIGEST_SPAN))
            digest.update(f.read(DIGEST_SPAN))
    return digest.hexdigest()


def refuse_overwriting_inputs(paths: Paths, inputs: Sequence[Path]) -> None:
    """LabelError when a file this run writes (output, errors, their partial files, the checkpoint) is an input,
    a folder, or in a folder that cannot be written."""
    outputs.check_outputs(
        {
            "output": (paths.output, "-o"),
            "errors file": (paths.errors, "--errors"),
            "partial output": (paths.partial, ""),
            "partial errors file": (paths.errors_partial, ""),
            "checkpoint": (paths.checkpoint, ""),
        },
        inputs,
    )


def open_partial(path: Path) -> BinaryIO:
    try:
        return outputs.open_existing(path)
    except OSError as exc:
        raise LabelError(f"cannot write {path}: {exc.strerror}") from None


def write(path: Path, f: BinaryIO, data: bytes) -> None:
    """Append ``data`` to an open partial file; LabelError (not a traceback) when the disk refuses."""
    try:
        f.write(data)
    except OSError as exc:
        raise LabelError(
            f"cannot write {path}: {exc.strerror}; free space or choose another -o, then rerun with --resume"
        ) from None


def discard(paths: Paths) -> None:
    """Remove an unfinished run's files (partial output and errors, checkpoint)."""
    for path in (paths.partial, paths.errors_partial, paths.checkpoint):
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass


def start_fresh(paths: Paths, header: bytes, notice: Callable[[str], None]) -> None:
    """Empty partial files (the output starting with ``header``), dropping an unfinished run's."""
    if paths.checkpoint.exists() or paths.partial.exists():
        notice(f"discarding the unfinished run in {paths.partial} (use --resume to continue it)")
    try:
        paths.checkpoint.unlink(missing_ok=True)
        for path, data in ((paths.partial, header), (paths.errors_partial, b"")):
            path.parent.mkdir(parents=True, exist_ok=True)
            outputs.create_new(path, data)  # never through a link planted at the name
    except OSError as exc:
        raise LabelError(f"cannot write {exc.filename or paths.partial}: {exc.strerror}; choose another -o") from None


def save(
    paths: Paths, settings: dict, counters: Counters, out: BinaryIO, err: BinaryIO, complete: bool = False
) -> None:
    """Make everything written so far durable, then record it in the checkpoint (atomically)."""
    try:
        for f in (out, err):
            f.flush()
            os.fsync(f.fileno())
        _write_json_atomic(
            paths.checkpoint,
            {
                **settings,
                "counters": asdict(counters),
                "output_bytes": out.tell(),
                "errors_bytes": err.tell(),
                "complete": complete,
            },
        )
    except OSError as exc:
        raise LabelError(f"cannot write {exc.filename or paths.partial}: {exc.strerror}") from None


def load(paths: Paths, settings: dict, notice: Callable[[str], None]) -> dict | None:
    """The checkpoint to continue from, None when there is nothing to resume; LabelError when it does not fit."""
    if not paths.checkpoint.exists():
        notice(f"nothing to resume for {paths.output} (no {paths.checkpoint.name}); starting from the beginning")
        return None
    try:
        state = json.loads(paths.checkpoint.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LabelError(f"cannot read the checkpoint {paths.checkpoint}: {exc}; rerun without --resume") from None
    for key, what in MUST_MATCH:
        if state.get(key) != settings[key]:
            raise LabelError(
                f"cannot resume: the {what} changed since the interrupted run "
                f"({state.get(key)!r} -> {settings[key]!r}); rerun without --resume"
            )
    if state.get("complete"):
        return state
    for path, size in ((paths.partial, state["output_bytes"]), (paths.errors_partial, state["errors_bytes"])):
        if not path.exists() or path.stat().st_size < size:
            raise LabelError(
                f"cannot resume: {path} is missing or shorter than the checkpoint says; rerun without --resume"
            )
    notice(f"resuming after {state['counters']['inputs']:,} records")
    return state


def finalize(paths: Paths) -> None:
    """Give the partial files their final names (errors first, output last), then drop the checkpoint."""
    for partial, final in ((paths.errors_partial, paths.errors), (paths.partial, paths.output)):
        if partial.exists():
            try:
                os.replace(partial, final)
            except OSError as exc:
                raise LabelError(
                    f"cannot rename {partial} to {final}: {exc.strerror}; the labeled rows are complete in {partial}"
                ) from None
    _fsync_dir(paths.output.parent)
    paths.checkpoint.unlink(missing_ok=True)


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with outputs.open_new(tmp) as f:  # never through a link planted at the name
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
