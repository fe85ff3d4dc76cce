"""The labeling run: every record of one or more dumps -> one output row, in input order.

Records stream from :func:`iter_records` and are labeled in chunks by a backend (one vectorised
``TrackPredictor.predict`` per chunk, or ``/predict_batch`` requests), so memory does not grow with
the dump. A record that cannot be labeled (a ``BadRecord`` from ingestion, or one the backend rejects)
goes to the errors file with its reason, and ``inputs == rows + errors`` is checked. After every chunk
the run is checkpointed (:mod:`.checkpoint`), so ``resume`` continues it exactly.

With ``workers`` > 1 the chunks after the first are labeled (predicted and turned into row bytes) by a pool of
that many worker processes forked from this one (the model already loaded, shared copy-on-write), while this
process reads ahead — at most two chunks per worker in flight — and writes the rows in input order; the bytes
are the same as with one process.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from papertrack.features.ingest import BadRecord, IngestError, Record, detect_format, iter_records, open_input
from papertrack.models.answer import EXTRA_FIELDS
from papertrack.serving.batch.labeler import checkpoint, outputs
from papertrack.serving.batch.labeler.checkpoint import Paths, default_errors_path, fingerprint
from papertrack.serving.batch.labeler.label_errors import LabelError, WorkerDied
from papertrack.serving.batch.labeler.rows import SUMMARY_K, Counters, Done, Labeled, RowFormat, label_chunk

if TYPE_CHECKING:  # the pool's modules load when a run starts one
    from concurrent.futures import Future, ProcessPoolExecutor

DEFAULT_CHUNK = 2_000
# a chunk also ends once its records hold this many characters: --chunk-size records of up to the 1 MiB record
# limit each (e.g. a dump of over-long abstracts, all rejected) would otherwise be held at once (~2 GiB)
CHUNK_CHARS = 16 << 20


@dataclass
class LabelResult:
    counters: Counters
    paths: Paths
    seconds: float
    resumed_from: int = 0
    files: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        done = self.counters.inputs - self.resumed_from
        return done / self.seconds if self.seconds > 0 else 0.0


def output_kind(output: Path) -> str:
    return outputs.output_kind(output, ("jsonl", "csv"), "the output must end in .jsonl or .csv", LabelError)


@dataclass
class Plan:
    """What a run reads and writes, checked before the model loads (see :func:`plan_run`)."""

    inputs: list[Path]
    paths: Paths
    kind: str
    formats: list[str]


def plan_run(inputs: Sequence[Path], output: Path, *, errors: Path | None = None, fmt: str | None = None) -> Plan:
    """Check every argument that does not need the model, reading nothing but the inputs' first lines:
    inputs given, exist, readable and of a known format; the output a .jsonl/.csv file (not a folder) and
    the errors file, their partial files and the checkpoint neither an input nor unwritable.
    Raises LabelError/IngestError with one line naming the file and the fix."""
    inputs = [Path(p) for p in inputs]
    if not inputs:
        raise LabelError("no input file")
    if output.is_dir():
        raise LabelError(f"-o {output} is a folder; name a file in it, e.g. {output / 'labeled.jsonl'}")
    kind = output_kind(output)
    paths = Paths(output, errors or default_errors_path(output))
    if outputs.same_file(paths.errors, paths.output):
        raise LabelError("the errors file must differ from the output file")
    checkpoint.refuse_overwriting_inputs(paths, inputs)
    formats = [detect_format(p, fmt) for p in inputs]  # IngestError for a missing/empty/unknown file, up front
    return Plan(inputs, paths, kind, formats)


def claim_outputs(paths: Paths):
    """The lock of the output and of its errors file, held for a ``with`` block: one writer per output."""
    return outputs.claim([(paths.output, "-o"), (paths.errors, "--errors")])


def label_dumps(
    inputs: Sequence[Path],
    output: Path,
    backend,
    *,
    top_k: int = 3,
    fmt: str | None = None,
    errors: Path | None = None,
    resume: bool = False,
    chunk_size: int = DEFAULT_CHUNK,
    workers: int = 1,
    on_start: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
    on_chunk: Callable[[int, int], None] | None = None,
    on_rows: Callable[[list[Labeled]], None] | None = None,
    notice: Callable[[str], None] = lambda message: None,
) -> LabelResult:
    """Label every record of ``inputs`` into ``output`` (see the module doc). Raises IngestError/LabelError.

    Progress callbacks: ``on_start(records already done)``, ``on_total(input lines)`` (from a thread, when the
    inputs have been counted), ``on_chunk(records in the chunk, input lines read so far)``,
    ``on_rows(the chunk's labeled records with their answers)`` (e.g. to build a report of the run; it makes the
    run label in this process). ``workers``: processes that label (1: this one; see the module doc).
    """
    started = time.perf_counter()
    plan = plan_run(inputs, output, errors=errors, fmt=fmt)
    if not 1 <= top_k <= backend.n_labels:
        raise LabelError(f"--top-k must be between 1 and {backend.n_labels} (the number of labels), got {top_k}")
    if chunk_size < 1:
        raise LabelError("--chunk-size must be at least 1")
    if workers < 1:
        raise LabelError("--workers must be at least 1")
    with claim_outputs(plan.paths):  # re-entrant: the CLI has claimed them already, before loading the model
        return _label(
            plan,
            backend,
            top_k=top_k,
            resume=resume,
            chunk_size=chunk_size,
            workers=1 if on_rows is not None else workers,
            on_start=on_start,
            on_total=on_total,
            on_chunk=on_chunk,
            on_rows=on_rows,
            notice=notice,
            started=started,
        )


def _label(
    plan: Plan,
    backend,
    *,
    top_k: int,
    resume: bool,
    chunk_size: int,
    workers: int,
    on_start,
    on_total,
    on_chunk,
    on_rows,
    notice,
    started: float,
) -> LabelResult:
    inputs, paths, kind, formats = plan.inputs, plan.paths, plan.kind, plan.formats
    settings = {
        "version": checkpoint.VERSION,
        "inputs": fingerprint(inputs),
        "formats": formats,
        "output": str(paths.output.resolve()),
        "errors": str(paths.errors.resolve()),
        "kind": kind,
        "top_k": top_k,
        "model": backend.identity,
    }
    rows = RowFormat(kind, top_k, extras=EXTRA_FIELDS)  # empty cells: no calibration, no warning
    k = min(max(top_k, SUMMARY_K), backend.n_labels)

    state = checkpoint.load(paths, settings, notice) if resume else None
    counters = Counters(**state["counters"]) if state else Counters()
    skip = counters.inputs
    if state is not None and state.get("complete"):
        checkpoint.finalize(paths)
        return LabelResult(counters, paths, time.perf_counter() - started, skip, [str(p) for p in inputs])
    if state is None:
        checkpoint.start_fresh(paths, rows.header(), notice)
    out = checkpoint.open_partial(paths.partial)
    err = checkpoint.open_partial(paths.errors_partial)
    ids = _SeenIds()
    pool: ProcessPoolExecutor | None = None
    try:
        if state is not None:  # drop whatever was written after the last checkpoint (a torn chunk)
            out.truncate(state["output_bytes"])
            err.truncate(state["errors_bytes"])
        out.seek(0, os.SEEK_END)
        err.seek(0, os.SEEK_END)
        if state is None:
            checkpoint.save(paths, settings, counters, out, err)  # resumable from the very first chunk
        if on_start is not None:
            on_start(skip)
        if on_total is not None and "json" not in formats:  # a JSON array's "line" is an index, not a line
            # counted in a thread while labeling runs (gzip decompression releases the GIL)
            threading.Thread(target=lambda: on_total(sum(_count_lines(p) for p in inputs)), daemon=True).start()
        stream = _numbered(inputs, formats)
        for _ in range(skip):  # the records an interrupted run already wrote (their ids: for duplicates)
            done = next(stream, None)
            if done is None:
                raise LabelError(f"the input has fewer records than the checkpoint says were done ({skip:,})")
            ids.seen(done[0])
        job = (backend, rows, k)
        pending: deque[tuple[int, int, int, Future | Done]] = deque()  # chunks dispatched, in input order
        for index, chunk in enumerate(_chunks(stream, chunk_size)):
            items = [item for item, _ in chunk]
            duplicates = sum(ids.seen(item) for item in items)
            if index and workers > 1 and pool is None:  # a second chunk: the input is worth a pool
                pool = _start_pool(job, workers)
            work: Future | Done = (
                _submit(pool, items, counters) if pool else label_chunk(items, *job, on_rows is not None)
            )
            pending.append((len(chunk), chunk[-1][1], duplicates, work))
            while pending and (pool is None or len(pending) > 2 * workers):
                _write(pending.popleft(), counters, paths, out, err, settings, on_rows, on_chunk)
        while pending:
            _write(pending.popleft(), counters, paths, out, err, settings, on_rows, on_chunk)
        if counters.inputs != counters.rows + counters.errors:  # pragma: no cover - a bug, never data
            raise LabelError(
                f"count mismatch: {counters.inputs} inputs != {counters.rows} rows + {counters.errors} errors"
            )
        checkpoint.save(paths, settings, counters, out, err, complete=True)
    except BaseException:
        if pool is not None:  # the chunks being labeled finish (the workers ignore Ctrl-C); no process is left
            pool.shutdown(wait=True, cancel_futures=True)
        out.close()
        err.close()
        if counters.inputs == 0 and not isinstance(sys.exc_info()[1], KeyboardInterrupt):
            checkpoint.discard(paths)  # failed before any record was done: nothing worth resuming
        raise
    if pool is not None:
        pool.shutdown(wait=True)
    out.close()
    err.close()
    checkpoint.finalize(paths)
    return LabelResult(counters, paths, time.perf_counter() - started, skip, [str(p) for p in inputs])


class _SeenIds:
    """Which record ids were already seen (as hashes, so memory stays small for big dumps)."""

    def __init__(self):
        self._hashes: set[int] = set()

    def seen(self, item: Record | BadRecord) -> bool:
        """Remember ``item``'s id; True when an earlier record had the same id."""
        if not isinstance(item, Record):
            return False
        key = hash(item.id)  # per process: the set is rebuilt from the input when a run resumes
        if key in self._hashes:
            return True
        self._hashes.add(key)
        return False


def _write(dispatched, counters: Counters, paths: Paths, out, err, settings: dict, on_rows, on_chunk) -> None:
    """Append one labeled chunk (waiting for its worker) to the partial files, count it and checkpoint."""
    n, lines, duplicates, work = dispatched
    if not isinstance(work, Done):
        from concurrent.futures.process import BrokenProcessPool

        try:
            work = work.result()
        except BrokenProcessPool:
            raise _worker_died(counters) from None
    checkpoint.write(paths.partial, out, work.rows)
    checkpoint.write(paths.errors_partial, err, work.errors)
    counters.absorb(work.counters)
    counters.duplicate_ids += duplicates
    checkpoint.save(paths, settings, counters, out, err)
    if on_rows is not None:
        on_rows(work.labeled)
    if on_chunk is not None:
        on_chunk(n, lines)


def _submit(pool: ProcessPoolExecutor, items: list, counters: Counters) -> Future:
    from concurrent.futures.process import BrokenProcessPool

    try:
        return pool.submit(_in_worker, items)
    except BrokenProcessPool:
        raise _worker_died(counters) from None


def _worker_died(counters: Counters) -> WorkerDied:
    return WorkerDied(
        f"a labeling worker process died (killed, or out of memory?) after {counters.inputs:,} records were "
        f"written; rerun with --resume (add --workers 1 to label in one process)"
    )


_JOB: tuple | None = None  # (backend, rows, k) of the run that forked this worker


def _start_pool(job: tuple, workers: int) -> ProcessPoolExecutor:
    """``workers`` processes forked from this one, each labeling with ``job`` (inherited, not pickled)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _JOB
    _JOB = job
    sys.stdout.flush()  # nothing buffered here is written again by a worker
    sys.stderr.flush()
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_worker_init)


def _worker_init() -> None:
    """Ctrl-C is the parent's to handle (the worker finishes its chunk); the worker ends with the parent; the
    output locks stay the parent's alone; BLAS keeps to one thread per worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the parent's SIGTERM handler (stdin_copy) is the parent's
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass
    outputs.forget_locks()
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def _in_worker(items: Sequence[Record | BadRecord]) -> Done:
    assert _JOB is not None
    return label_chunk(items, *_JOB)


def default_workers(backend) -> int:
    """Processes that label by default: one per core (at most 2) for the model in this process, else 1."""
    if not getattr(backend, "forkable", False):
        return 1
    return max(1, min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _numbered(inputs: Sequence[Path], formats: Sequence[str]) -> Iterator[tuple[Record | BadRecord, int]]:
    """Every item of every input, with about how many input lines were read so far (for progress/ETA)."""
    offset = 0
    for path, fmt in zip(inputs, formats):
        line = 0
        for item in iter_records(path, fmt, labeled=None):
            line = item.line
            yield item, offset + line
        offset += line


def _chunks(stream: Iterator, size: int, max_chars: int | None = None) -> Iterator[list]:
    """Lists of ``size`` (item, line) pairs, fewer when their records' text reaches ``max_chars`` (CHUNK_CHARS)."""
    max_chars = CHUNK_CHARS if max_chars is None else max_chars
    chunk, chars = [], 0
    for pair in stream:
        chunk.append(pair)
        if isinstance(pair[0], Record):
            chars += len(pair[0].abstract) + len(pair[0].title or "")
        if len(chunk) >= size or chars >= max_chars:
            yield chunk
            chunk, chars = [], 0
    if chunk:
        yield chunk


def _count_lines(path: Path) -> int:
    """Lines of a (possibly gzipped) file, read in blocks — for the progress bar's total."""
    lines, last = 0, b"\n"
    try:
        with open_input(path) as stream:
            while block := stream.read(1 << 20):
                lines += block.count(b"\n")
                last = block[-1:]
    except (IngestError, OSError, EOFError, zlib.error):
        pass  # only a progress total: iter_records reports the broken file with its line
    return lines + (last != b"\n")
