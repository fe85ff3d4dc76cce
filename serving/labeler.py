"""Batch labeling: every record of one or more dumps -> one output row (JSONL or CSV), in input order.

* Streams: records come from :func:`iter_records` and are labeled in chunks (one vectorised
  ``TrackPredictor.predict`` of the champion per chunk, or ``/predict_batch`` requests to a running
  service), so memory does not grow with the dump.
* Never loses a record: a record that cannot be labeled (a ``BadRecord`` from ingestion, or one the
  service rejects) goes to the errors file with its reason; ``inputs == rows + errors`` is checked.
* Crash safe: rows go to ``OUT.partial`` (and ``ERRORS.partial``); after every chunk both are flushed
  and fsynced and a checkpoint (``OUT.checkpoint.json``: records done, byte sizes, counters) is
  replaced atomically. Only a finished run renames the partial files to their final names, so a file
  at ``OUT`` is always complete. ``resume`` truncates the partial files back to the checkpoint, skips
  the records already done and continues; the result is byte-identical to an uninterrupted run.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from papertrack.errors import NoModelError, PapertrackError
from papertrack.features.ingest import BadRecord, IngestError, Record, detect_format, iter_records

CHECKPOINT_VERSION = 1
DEFAULT_CHUNK = 2_000
SUMMARY_K = 3  # the summary reports top-1 and top-3 whatever --top-k is
OUTPUT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}

Result = dict[str, list[dict]]  # one TrackPredictor.rank answer: {"tracks": [...], "areas": [...]}


class LabelError(PapertrackError):
    """A fatal problem of a labeling run (bad options, unusable resume state, unreachable service)."""


# --------------------------------------------------------------------------- backends


class LocalBackend:
    """The registered pyfunc's TrackPredictor, in this process."""

    def __init__(self, model_uri: str):
        from mlflow.exceptions import MlflowException

        from papertrack import store
        from papertrack.models.artifact import load_predictor
        from papertrack.serving.store import TRAIN_HINT

        tracking_uri = store.configure()
        try:
            self.predictor, _ = load_predictor(model_uri)
        except MlflowException as exc:
            raise ModelMissing(f"cannot load {model_uri} from {tracking_uri}: {_first_line(exc)}. "
                               f"{TRAIN_HINT} (or pass --model).") from None
        self.labels = frozenset(self.predictor.space.labels)
        self.n_labels = self.predictor.space.n_labels
        card = self.predictor.card
        # what a resumed run must still use: the same trained model (rows do not depend on local vs --url)
        self.identity = card.identity()
        self.description = f"{model_uri} ({card.short()})"

    def label(self, records: Sequence[Record], k: int) -> list[Result | str]:
        return self.predictor.predict([r.abstract for r in records], [r.title for r in records], k)

    def close(self) -> None:
        pass


class HttpBackend:
    """A running papertrack service: ``POST /predict_batch`` in requests of at most ``batch`` papers."""

    def __init__(self, url: str, batch: int = 500, timeout: float = 120.0, retries: int = 3, in_flight: int = 2):
        from concurrent.futures import ThreadPoolExecutor

        import httpx

        from papertrack.serving import schemas

        self.url = url.rstrip("/")
        self.batch = min(batch, schemas.MAX_BATCH)
        self.retries = retries
        self.pool = ThreadPoolExecutor(max_workers=in_flight)  # requests in flight: keeps several workers busy
        self.max_abstract, self.max_title = schemas.MAX_ABSTRACT_CHARS, schemas.MAX_TITLE_CHARS
        self.client = httpx.Client(base_url=self.url, timeout=timeout)
        try:
            response = self.client.get("/metadata")
        except httpx.HTTPError as exc:
            raise ModelMissing(f"cannot reach the papertrack service at {self.url} ({exc}). "
                               f"Start it with `papertrack serve`.") from None
        if response.status_code != 200:
            raise ModelMissing(f"{self.url}/metadata answered {response.status_code}: {response.text[:200]}")
        meta = response.json()
        self.labels = frozenset(meta["labels"])
        self.n_labels = int(meta["n_labels"])
        model = meta["model"]
        self.identity = {"run_id": model.get("run_id"), "data_digest": meta.get("data_digest"),
                         "candidate": meta.get("candidate")}
        self.description = f"{self.url} (model {model.get('name')} v{model.get('version')}, run {model.get('run_id', '')[:8]})"

    def label(self, records: Sequence[Record], k: int) -> list[Result | str]:
        answers: list[Result | str | None] = [None] * len(records)
        sendable = []
        for i, record in enumerate(records):
            if len(record.abstract) > self.max_abstract:
                answers[i] = f"abstract has {len(record.abstract):,} characters; the service accepts at most {self.max_abstract:,}"
            elif record.title and len(record.title) > self.max_title:
                answers[i] = f"title has {len(record.title):,} characters; the service accepts at most {self.max_title:,}"
            else:
                sendable.append(i)
        parts = [sendable[start:start + self.batch] for start in range(0, len(sendable), self.batch)]
        sent = [self.pool.submit(self._send, [records[i] for i in part], k) for part in parts]
        for part, future in zip(parts, sent):
            for i, answer in zip(part, future.result()):
                answers[i] = answer
        return answers  # type: ignore[return-value]

    def _send(self, records: Sequence[Record], k: int) -> list[Result | str]:
        body = {"papers": [{"abstract": r.abstract, "title": r.title} for r in records], "top_k": k}
        response = self._post(body)
        if response.status_code == 200:
            return response.json()["results"]
        if 400 <= response.status_code < 500 and len(records) > 1:
            # isolate the paper(s) the service rejects; the others are labeled
            return [answer for r in records for answer in self._send([r], k)]
        if 400 <= response.status_code < 500:
            return [f"rejected by the service ({response.status_code}): {_error_text(response)}"]
        raise LabelError(f"the service at {self.url} answered {response.status_code}: {_error_text(response)}")

    def _post(self, body: dict):
        import httpx

        for attempt in range(self.retries + 1):
            try:
                response = self.client.post("/predict_batch", json=body)
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 500:
                    return response
                error = f"{response.status_code}: {_error_text(response)}"
            if attempt < self.retries:
                time.sleep(0.5 * 2 ** attempt)
        raise LabelError(f"the service at {self.url} failed {self.retries + 1} times ({error}); "
                         f"rerun with --resume once it is back")

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)
        self.client.close()


class ModelMissing(LabelError, NoModelError):
    """No model to label with (no champion registered, or the service is unreachable)."""


# --------------------------------------------------------------------------- output rows


@dataclass
class Counters:
    inputs: int = 0
    rows: int = 0
    errors: int = 0
    labeled: int = 0  # rows whose input had a label
    top1: int = 0
    top3: int = 0
    unknown_labels: int = 0  # given labels that are not in the model's label set


class RowFormat:
    """Serialises rows: ``header()`` once, then ``rows(...)`` per chunk, as bytes."""

    def __init__(self, kind: str, top_k: int):
        self.kind, self.top_k = kind, top_k
        self.columns = ["id", "source", "line", "title",
                        *[c for i in range(1, top_k + 1) for c in (f"track_{i}", f"probability_{i}")],
                        "area", "area_probability", "label", "in_top_k"]

    def header(self) -> bytes:
        return self._csv([self.columns]) if self.kind == "csv" else b""

    def rows(self, items: list[tuple[Record, Result]]) -> bytes:
        if self.kind == "jsonl":
            out = []
            for record, tracks, top_area, in_top_k in self._parts(items):
                row = {"id": record.id, "source": record.source, "line": record.line, "title": record.title,
                       "tracks": [{"label": t["label"], "probability": t["probability"]} for t in tracks],
                       "area": top_area["area"], "area_probability": top_area["probability"],
                       "label": record.label, "in_top_k": in_top_k}
                out.append(json.dumps(row, ensure_ascii=False))
            return ("\n".join(out) + "\n").encode("utf-8") if out else b""
        table = []
        for record, tracks, top_area, in_top_k in self._parts(items):
            cells: list[Any] = [record.id, record.source, record.line, record.title or ""]
            for t in tracks:
                cells += [t["label"], repr(float(t["probability"]))]
            cells += ["", ""] * (self.top_k - len(tracks))
            cells += [top_area["area"], repr(float(top_area["probability"])), record.label or "",
                      "" if in_top_k is None else str(in_top_k).lower()]
            table.append(cells)
        return self._csv(table)

    def _parts(self, items: list[tuple[Record, Result]]) -> Iterator[tuple[Record, list[dict], dict, bool | None]]:
        """Per row: the record, its top_k tracks, its top area, and whether its given label is among the
        tracks (None when the record has no label)."""
        for record, result in items:
            tracks = result["tracks"][:self.top_k]
            in_top_k = None if record.label is None else any(t["label"] == record.label for t in tracks)
            yield record, tracks, result["areas"][0], in_top_k

    @staticmethod
    def _csv(table: list[list]) -> bytes:
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(table)
        return buffer.getvalue().encode("utf-8")


def error_rows(items: list[tuple[Record | BadRecord, str, str]]) -> bytes:
    lines = [json.dumps({"source": item.source, "line": item.line, "id": item.id, "kind": kind, "reason": reason},
                        ensure_ascii=False) for item, kind, reason in items]
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


# --------------------------------------------------------------------------- paths and checkpoint


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


def output_kind(output: Path) -> str:
    kind = OUTPUT_FORMATS.get(output.suffix.lower())
    if kind is None:
        raise LabelError(f"{output}: the output must end in .jsonl or .csv")
    return kind


def fingerprint(paths: Sequence[Path]) -> list[dict]:
    out = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            raise IngestError(path, None, "file not found") from None
        out.append({"path": str(path.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    return out


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# --------------------------------------------------------------------------- the run


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


def label_dumps(inputs: Sequence[Path], output: Path, backend, *, top_k: int = 3, fmt: str | None = None,
                errors: Path | None = None, resume: bool = False, chunk_size: int = DEFAULT_CHUNK,
                on_start: Callable[[int], None] | None = None,
                on_total: Callable[[int], None] | None = None,
                on_chunk: Callable[[int, int], None] | None = None,
                notice: Callable[[str], None] = lambda message: None) -> LabelResult:
    """Label every record of ``inputs`` into ``output`` (see the module doc). Raises IngestError/LabelError.

    Progress callbacks: ``on_start(records already done)``, ``on_total(input lines)`` (from a thread, when the
    inputs have been counted), ``on_chunk(records in the chunk, input lines read so far)``.
    """
    started = time.perf_counter()
    inputs = [Path(p) for p in inputs]
    if not inputs:
        raise LabelError("no input file")
    kind = output_kind(output)
    if not 1 <= top_k <= backend.n_labels:
        raise LabelError(f"--top-k must be between 1 and {backend.n_labels} (the number of labels), got {top_k}")
    if chunk_size < 1:
        raise LabelError("--chunk-size must be at least 1")
    paths = Paths(output, errors or default_errors_path(output))
    if paths.errors.resolve() == paths.output.resolve():
        raise LabelError("the errors file must differ from the output file")
    formats = [detect_format(p, fmt) for p in inputs]  # IngestError for a missing/empty/unknown file, up front
    settings = {"version": CHECKPOINT_VERSION, "inputs": fingerprint(inputs), "formats": formats,
                "output": str(paths.output.resolve()), "errors": str(paths.errors.resolve()), "kind": kind,
                "top_k": top_k, "model": backend.identity}
    rows = RowFormat(kind, top_k)
    k = min(max(top_k, SUMMARY_K), backend.n_labels)

    state = _resume_state(paths, settings, notice) if resume else None
    counters = Counters(**state["counters"]) if state else Counters()
    skip = counters.inputs
    if state is not None and state.get("complete"):
        _finalize(paths)
        return LabelResult(counters, paths, time.perf_counter() - started, skip, [str(p) for p in inputs])
    if state is None:
        _start_fresh(paths, rows.header(), settings, notice)
    out = open(paths.partial, "r+b")
    err = open(paths.errors_partial, "r+b")
    try:
        if state is not None:  # drop whatever was written after the last checkpoint (a torn chunk)
            out.truncate(state["output_bytes"])
            err.truncate(state["errors_bytes"])
        out.seek(0, os.SEEK_END)
        err.seek(0, os.SEEK_END)
        if state is None:
            _checkpoint(paths, settings, counters, out, err)  # resumable from the very first chunk
        if on_start is not None:
            on_start(skip)
        if on_total is not None and "json" not in formats:  # a JSON array's "line" is an index, not a line
            # counted in a thread while labeling runs (gzip decompression releases the GIL)
            threading.Thread(target=lambda: on_total(sum(_count_lines(p) for p in inputs)), daemon=True).start()
        stream = _numbered(inputs, formats)
        for _ in range(skip):  # the records an interrupted run already wrote
            if next(stream, None) is None:
                raise LabelError(f"the input has fewer records than the checkpoint says were done ({skip:,})")
        for chunk in _chunks(stream, chunk_size):
            good = [item for item, _ in chunk if isinstance(item, Record)]
            results = backend.label(good, k) if good else []
            if len(results) != len(good):  # pragma: no cover - a backend bug, never data
                raise LabelError(f"the model answered {len(results)} results for {len(good)} records")
            answers = iter(results)
            labeled, failed = [], []
            for item, _ in chunk:
                if isinstance(item, BadRecord):
                    failed.append((item, item.kind, item.reason))
                    continue
                answer = next(answers)
                if isinstance(answer, str):
                    failed.append((item, "rejected", answer))
                else:
                    labeled.append((item, answer))
                    _score(counters, item, answer, backend.labels)
            counters.inputs += len(chunk)
            counters.rows += len(labeled)
            counters.errors += len(failed)
            out.write(rows.rows(labeled))
            err.write(error_rows(failed))
            _checkpoint(paths, settings, counters, out, err)
            if on_chunk is not None:
                on_chunk(len(chunk), chunk[-1][1])
        if counters.inputs != counters.rows + counters.errors:  # pragma: no cover - a bug, never data
            raise LabelError(f"count mismatch: {counters.inputs} inputs != {counters.rows} rows + {counters.errors} errors")
        _checkpoint(paths, settings, counters, out, err, complete=True)
    finally:
        out.close()
        err.close()
    _finalize(paths)
    return LabelResult(counters, paths, time.perf_counter() - started, skip, [str(p) for p in inputs])


def _score(counters: Counters, record: Record, answer: Result, known: frozenset[str]) -> None:
    if record.label is None:
        return
    counters.labeled += 1
    ranked = [t["label"] for t in answer["tracks"][:SUMMARY_K]]
    counters.top1 += bool(ranked) and ranked[0] == record.label
    counters.top3 += record.label in ranked
    counters.unknown_labels += record.label not in known


def _numbered(inputs: Sequence[Path], formats: Sequence[str]) -> Iterator[tuple[Record | BadRecord, int]]:
    """Every item of every input, with about how many input lines were read so far (for progress/ETA)."""
    offset = 0
    for path, fmt in zip(inputs, formats):
        line = 0
        for item in iter_records(path, fmt, labeled=None):
            line = item.line
            yield item, offset + line
        offset += line


def _chunks(stream: Iterator, size: int) -> Iterator[list]:
    chunk = []
    for item in stream:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _count_lines(path: Path) -> int:
    """Lines of a (possibly gzipped) file, read in blocks — for the progress bar's total."""
    with open(path, "rb") as raw:
        is_gzip = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        stream = gzip.GzipFile(fileobj=raw) if is_gzip else raw
        lines, last = 0, b"\n"
        try:
            while block := stream.read(1 << 20):
                lines += block.count(b"\n")
                last = block[-1:]
        except (OSError, EOFError):
            pass  # iter_records reports the broken file with its line
    return lines + (last != b"\n")


def _start_fresh(paths: Paths, header: bytes, settings: dict, notice: Callable[[str], None]) -> None:
    if paths.checkpoint.exists() or paths.partial.exists():
        notice(f"discarding the unfinished run in {paths.partial} (use --resume to continue it)")
    paths.checkpoint.unlink(missing_ok=True)
    paths.output.parent.mkdir(parents=True, exist_ok=True)
    paths.errors.parent.mkdir(parents=True, exist_ok=True)
    paths.partial.write_bytes(header)
    paths.errors_partial.write_bytes(b"")


def _checkpoint(paths: Paths, settings: dict, counters: Counters, out, err, complete: bool = False) -> None:
    for f in (out, err):
        f.flush()
        os.fsync(f.fileno())
    _write_json_atomic(paths.checkpoint, {**settings, "counters": asdict(counters), "output_bytes": out.tell(),
                                          "errors_bytes": err.tell(), "complete": complete})


def _resume_state(paths: Paths, settings: dict, notice: Callable[[str], None]) -> dict | None:
    """The checkpoint to continue from, None when there is nothing to resume; LabelError when it does not fit."""
    if not paths.checkpoint.exists():
        notice(f"nothing to resume for {paths.output} (no {paths.checkpoint.name}); starting from the beginning")
        return None
    try:
        state = json.loads(paths.checkpoint.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LabelError(f"cannot read the checkpoint {paths.checkpoint}: {exc}; rerun without --resume") from None
    for key, what in (("version", "checkpoint format"), ("inputs", "input files (paths, sizes or times)"),
                      ("formats", "input formats"), ("output", "output file"), ("errors", "errors file"),
                      ("kind", "output format"), ("top_k", "--top-k"), ("model", "model")):
        if state.get(key) != settings[key]:
            raise LabelError(f"cannot resume: the {what} changed since the interrupted run "
                             f"({state.get(key)!r} -> {settings[key]!r}); rerun without --resume")
    if state.get("complete"):
        return state
    for path, size in ((paths.partial, state["output_bytes"]), (paths.errors_partial, state["errors_bytes"])):
        if not path.exists() or path.stat().st_size < size:
            raise LabelError(f"cannot resume: {path} is missing or shorter than the checkpoint says; "
                             f"rerun without --resume")
    notice(f"resuming after {state['counters']['inputs']:,} records")
    return state


def _finalize(paths: Paths) -> None:
    """Give the partial files their final names (errors first, output last), then drop the checkpoint."""
    for partial, final in ((paths.errors_partial, paths.errors), (paths.partial, paths.output)):
        if partial.exists():
            os.replace(partial, final)
    _fsync_dir(paths.output.parent)
    paths.checkpoint.unlink(missing_ok=True)


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


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _error_text(response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(data, dict) and "error" in data:
        return str(data["error"])
    return str(data)[:300]
