"""The inputs of a Spark labeling job, as one frame of items (a record to label, or one that cannot be labeled).

JSON lines (``.jsonl``/``.ndjson``, also ``.gz``) are split into lines and numbered by Spark on the JVM, and parsed
after partitioning by the project's own parser (``ingest.json_line_record``), in parallel even for a ``.gz`` file.
Parquet is read by Spark and each row goes through ``ingest.record_from_mapping``. Layouts that are not
line-oriented (text dumps, CSV, a JSON array) are parsed on the driver by ``ingest.iter_records`` first.
"""

from __future__ import annotations

from pathlib import Path

from papertrack.features.ingest import BadRecord, IngestError, Record, detect_format, iter_records
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


def read_inputs(spark, inputs: list[Path], formats: list[str]):
    """Every input as one frame of RAW_SCHEMA rows (``file`` = the input's index), each layout read its way."""
    frames = []
    for index, (path, fmt) in enumerate(zip(inputs, formats)):
        if fmt == "jsonl" and plain_or_gz(path):
            frames.append(read_jsonl(spark, index, path))
        elif fmt == PARQUET:
            frames.append(read_parquet(spark, index, path))
        else:
            frames.append(read_on_driver(spark, index, path, fmt))
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
    lines = spark.read.text(path.resolve().as_uri()).select(
        F.col("value").cast("binary").alias("data"),
        F.spark_partition_id().alias("split"),
        F.monotonically_increasing_id().alias("position"),
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


def read_on_driver(spark, index: int, path: Path, fmt: str):
    """Layouts that are not line-oriented: the project's parser on the driver, then handed to Spark."""
    items = [t for item in iter_records(path, fmt, labeled=None) for t in _item_tuple(index, item)]
    return spark.createDataFrame([_raw(t) for t in items], RAW_SCHEMA)


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


def _arrow_batch(items: list[tuple], raw: bool = False):
    """ITEM_SCHEMA tuples as one Arrow record batch (of RAW_SCHEMA, with no ``data``, when ``raw``)."""
    import pyarrow as pa

    fields = [("file", pa.int32()), ("line", pa.int64()), *[(n, pa.string()) for n in _ITEM_NAMES[2:]]]
    if raw:
        items = [_raw(t) for t in items]
        fields.insert(2, ("data", pa.binary()))
    schema = pa.schema(fields)
    columns = list(zip(*items)) if items else [[] for _ in fields]
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)


def _item_tuple(index: int, item: Record | BadRecord | None) -> list[tuple]:
    """The ITEM_SCHEMA row of a parsed item; a record over the service's size limits is rejected here, as the
    in-process labeler rejects it."""
    if item is None:
        return []
    if isinstance(item, BadRecord):
        return [(index, item.line, item.id, None, None, None, item.kind, item.reason, None)]
    number = None if item.number is None else str(item.number)
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
