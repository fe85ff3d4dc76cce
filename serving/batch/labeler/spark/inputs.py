"""The inputs of a Spark labeling job, as one frame of items (a record to label, or one that cannot be labeled).

JSON lines (``.jsonl``/``.ndjson``, also ``.gz``) are split into lines and numbered by Spark on the JVM, and parsed
after partitioning by the project's own parser (``ingest.json_line_record``), in parallel even for a ``.gz`` file.
Parquet is read by Spark and each row goes through ``ingest.record_from_mapping``. Layouts that are not
line-oriented (text dumps, CSV, a JSON array) are parsed on the driver by ``ingest.iter_records`` first.

Held as the local engine holds them: the JVM never sees a line over the limit of one line. A JSON-lines file is
scanned first on the driver (``ingest.scan_long_lines``: block by block, at the speed of reading it, with the
local engine's size limit once decompressed); one that has over-long lines, or is gzip without the .gz name, is
split into lines by the driver instead (the local engine's line reader), each long line one ``too-long`` item,
the others parsed on the executors as above. What the driver reads (those lines, the parsed layouts) never
stays whole in memory: it is written as it comes, in batches of at most ``DRIVER_BATCH_ROWS`` rows and
``DRIVER_BATCH_BYTES`` bytes, to a Parquet file in the job's scratch folder, which Spark reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from papertrack.features.ingest import BadRecord, IngestError, Record, detect_format, iter_records
from papertrack.features.ingest.decoding import read_line_bytes, scan_long_lines
from papertrack.features.ingest.jsonl import too_long_line
from papertrack.serving.batch.labeler.backends import over_limits
from papertrack.serving.model_loader import first_line

PARQUET = "parquet"


# one parsed input item: a record to label, or (kind set) one that cannot be labeled
ITEM_SCHEMA = (
    "file INT, line LONG, id STRING, abstract STRING, title STRING, label STRING, kind STRING, reason STRING, "
    "number STRING"  # an OpenReview note's number (as text, like every column after line), for the rows
)

_ITEM_NAMES = ("file", "line", "id", "abstract", "title", "label", "kind", "reason", "number")

_RAW_NAMES = ("file", "line", "data", *_ITEM_NAMES[2:])

# one input item before parsing: a JSON line's bytes (``data``), or an item parsed already (``data`` null)
RAW_SCHEMA = "file INT, line LONG, data BINARY, " + ITEM_SCHEMA.removeprefix("file INT, line LONG, ")

# what the driver holds of the items it reads before writing them for Spark (rows, and bytes of their text)
DRIVER_BATCH_ROWS = 4_096
DRIVER_BATCH_BYTES = 32 << 20


def read_inputs(spark, inputs: list[Path], formats: list[str], scratch: Path):
    """Every input as one frame of RAW_SCHEMA rows (``file`` = the input's index), each layout read its way;
    ``scratch``: a folder the executors can read, for what the driver reads (removed by the caller)."""
    frames = []
    for index, (path, fmt) in enumerate(zip(inputs, formats)):
        if fmt == "jsonl" and plain_or_gz(path) and not scan_long_lines(path):
            frames.append(read_jsonl(spark, index, path))
        elif fmt == "jsonl":  # over-long lines, or gzip not named .gz: split into lines here
            frames.append(read_on_driver(spark, json_lines(index, path), scratch / f"input-{index}.parquet"))
        elif fmt == PARQUET:
            frames.append(read_parquet(spark, index, path))
        else:
            frames.append(read_on_driver(spark, parsed_items(index, path, fmt), scratch / f"input-{index}.parquet"))
    raw = frames[0]
    for frame in frames[1:]:
        raw = raw.unionByName(frame)
    return raw


def input_format(path: Path, fmt: str | None) -> str:
    """The project's format of ``path`` or "parquet" (by extension, or ``--format parquet``); IngestError when
    the file is missing, unreadable, empty, of an unknown layout, or not a readable Parquet file."""
    if fmt == PARQUET or (fmt is None and path.suffix.lower() == ".parquet"):
        _check_parquet(path)
        return PARQUET
    return detect_format(path, fmt)


def _check_parquet(path: Path) -> None:
    import pyarrow.parquet as pq

    try:
        with open(path, "rb"):
            pass
    except FileNotFoundError:
        raise IngestError(path, None, "file not found") from None
    except OSError as exc:
        raise IngestError(path, None, f"cannot open file: {exc.strerror}") from None
    try:
        schema = pq.ParquetFile(path).schema_arrow
    except Exception as exc:  # pyarrow raises ArrowInvalid/OSError for a truncated or non-Parquet file
        raise IngestError(path, None, f"not a readable Parquet file ({first_line(exc)})") from None
    if "abstract" not in {name.strip().lower() for name in schema.names}:
        raise IngestError(path, None, f"no 'abstract' column (columns: {', '.join(schema.names)})")


def read_jsonl(spark, index: int, path: Path):
    """Lines split by Spark's text reader (Hadoop's: .gz by extension, a plain file in several splits) and
    numbered in file order, all on the JVM; they are parsed after partitioning (``parse_function``)."""
    from pyspark.sql import functions as F

    # the raw bytes of each line (a line that is not UTF-8 is an error row, not silently replaced), its split
    # and its position: monotonically_increasing_id() = (split << 33) + position in the split
    # lines end at LF only, as the local engine's reader splits them (Hadoop's default also ends one at a lone CR)
    lines = (
        spark.read.option("lineSep", "\n")
        .text(path.resolve().as_uri())
        .select(
            F.col("value").cast("binary").alias("data"),
            F.spark_partition_id().alias("split"),
            F.monotonically_increasing_id().alias("position"),
        )
    )
    # Hadoop reads a .gz file as one split (gzip cannot be split; plain_or_gz checked it is gzip)
    offsets = [0] if path.name.lower().endswith(".gz") else _split_offsets(lines)
    line = F.col("position") - F.shiftleft(F.col("split").cast("long"), 33) + 1
    if any(offsets):  # lines in the splits before this one (a .gz file is one split: none)
        line = line + F.element_at(F.array(*[F.lit(o) for o in offsets]), F.col("split") + 1)
    return lines.select(
        F.lit(index).cast("int").alias("file"),
        line.alias("line"),
        "data",
        *[F.lit(None).cast("string").alias(name) for name in _ITEM_NAMES[2:]],
    )


def _split_offsets(lines) -> list[int]:
    """For each split of a text file, the number of lines in the splits before it (one counting pass on the
    JVM)."""
    from pyspark.sql import functions as F

    counts = dict(lines.groupBy("split").agg(F.count("*").alias("n")).collect())
    offsets, total = [], 0
    for split in range(max(counts, default=0) + 1):
        offsets.append(total)
        total += counts.get(split, 0)
    return offsets


def read_parquet(spark, index: int, path: Path):
    """Parquet rows through the project's field rules (on the executors, as Spark reads them); line = row
    number in the file."""
    from pyspark.sql import functions as F

    from papertrack.features.ingest import record_from_mapping

    source = str(path)
    frame = spark.read.parquet(path.resolve().as_uri())
    wanted = {"id", "abstract", "title", "label", "topic", "area", "subarea"}
    columns = [c for c in frame.columns if c.strip().lower() in wanted]
    frame = frame.select(*[F.col(f"`{c}`") for c in columns], F.col("_metadata.row_index").alias("_row_index"))

    def parse(batches):
        for batch in batches:
            items = []
            for fields in batch.to_pylist():
                line = fields.pop("_row_index") + 1
                items.extend(_item_tuple(index, record_from_mapping(fields, source, line, None)))
            yield _arrow_batch(items, raw=True)

    return frame.mapInArrow(parse, RAW_SCHEMA)


def json_lines(index: int, path: Path) -> Iterator[tuple]:
    """The RAW_SCHEMA rows of a JSON-lines file split by the local engine's line reader: each line's bytes, to
    parse on the executors, or a ``too-long`` item for a line over the limit (never held whole)."""
    source = str(path)
    for line, data, size in read_line_bytes(path):
        if size is None:
            yield (index, line, data, *(None for _ in _ITEM_NAMES[2:]))  # parsed on the executors
        else:
            yield from (_raw(t) for t in _item_tuple(index, too_long_line(source, line, size)))


def parsed_items(index: int, path: Path, fmt: str) -> Iterator[tuple]:
    """The RAW_SCHEMA rows of a layout that is not line-oriented, parsed by the project's reader."""
    for item in iter_records(path, fmt, labeled=None):
        yield from (_raw(t) for t in _item_tuple(index, item))


def read_on_driver(spark, rows: Iterable[tuple], target: Path):
    """RAW_SCHEMA ``rows`` read on the driver, written to the Parquet file ``target`` as they come, in batches
    of at most DRIVER_BATCH_ROWS rows and DRIVER_BATCH_BYTES bytes (one row group each), then read by Spark."""
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    target.parent.mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(target, _arrow_schema(raw=True)) as writer:
        for batch in _batches(rows, DRIVER_BATCH_ROWS, DRIVER_BATCH_BYTES):
            writer.write_batch(_raw_arrow_batch(batch))
    frame = spark.read.parquet(target.resolve().as_uri())
    return frame.select(*[F.col(name) for name in _RAW_NAMES])


def _batches(rows: Iterable[tuple], most_rows: int, most_bytes: int) -> Iterator[list[tuple]]:
    """``rows`` in lists of at most ``most_rows`` rows and about ``most_bytes`` bytes of values (one row may
    pass it alone: a line or record is bounded by the readers' limits)."""
    batch: list[tuple] = []
    size = 0
    for row in rows:
        batch.append(row)
        size += sum(len(value) for value in row[2:] if value is not None)
        if len(batch) >= most_rows or size >= most_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def parse_function(sources: list[str]):
    """mapInArrow RAW_SCHEMA -> ITEM_SCHEMA: JSON lines (``data`` set) through the project's parser, rows
    parsed already (Parquet, the driver's layouts) as they are."""

    def parse(batches):
        from papertrack.features.ingest import json_line_record

        for batch in batches:
            items = []
            for raw in zip(*(batch.column(name).to_pylist() for name in _RAW_NAMES)):
                index, line, data = raw[:3]
                if data is None:
                    items.append(raw[:2] + raw[3:])
                else:
                    items.extend(_item_tuple(index, json_line_record(data, sources[index], line)))
            yield _arrow_batch(items)

    return parse


def _raw(item: tuple) -> tuple:
    return item[:2] + (None,) + item[2:]


def _arrow_schema(raw: bool):
    import pyarrow as pa

    fields = [("file", pa.int32()), ("line", pa.int64()), *[(n, pa.string()) for n in _ITEM_NAMES[2:]]]
    if raw:
        fields.insert(2, ("data", pa.binary()))
    return pa.schema(fields)


def _arrow_batch(items: list[tuple], raw: bool = False):
    """ITEM_SCHEMA tuples as one Arrow record batch (of RAW_SCHEMA, with no ``data``, when ``raw``)."""
    return _raw_arrow_batch([_raw(t) for t in items]) if raw else _columns(items, _arrow_schema(raw=False))


def _raw_arrow_batch(rows: list[tuple]):
    """RAW_SCHEMA tuples as one Arrow record batch."""
    return _columns(rows, _arrow_schema(raw=True))


def _columns(rows: list[tuple], schema):
    import pyarrow as pa

    columns: list = list(zip(*rows)) if rows else [[] for _ in schema]
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)


def _item_tuple(index: int, item: Record | BadRecord | None) -> list[tuple]:
    """The ITEM_SCHEMA row of a parsed item; a record over the service's size limits is rejected here, as the
    in-process labeler rejects it."""
    if item is None:
        return []
    number = None if item.number is None else str(item.number)
    if isinstance(item, BadRecord):
        return [(index, item.line, item.id, None, None, None, item.kind, item.reason, number)]
    too_big = over_limits(item)
    if too_big is not None:
        return [(index, item.line, item.id, None, None, None, "rejected", too_big, number)]
    return [(index, item.line, item.id, item.abstract, item.title, item.label, None, None, number)]


def plain_or_gz(path: Path) -> bool:
    """Hadoop decompresses by extension: a gzip file not named .gz (or a .gz that is not gzip) goes through
    the driver's parser, which recognises gzip by its magic bytes."""
    with open(path, "rb") as f:
        is_gzip = f.read(2) == b"\x1f\x8b"
    return is_gzip == path.name.lower().endswith(".gz")
