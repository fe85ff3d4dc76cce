"""The rows of a Spark labeling job, built on the executors by the labeler's own ``RowFormat`` / ``error_rows`` /
``Counters.add``: a JSONL part holds byte-for-byte the lines ``papertrack label`` writes; a Parquet part the same
fields as columns."""

from __future__ import annotations

import json

from papertrack.features.ingest import BadRecord, Record
from papertrack.serving.batch.labeler.rows import Counters, RowFormat, error_rows

ROW_SCHEMA = "file INT, line LONG, row STRING, labeled INT, top1 INT, top3 INT, unknown INT"
PARQUET_ROW_SCHEMA = (
    "id STRING, number LONG, source STRING, line LONG, title STRING, "
    "tracks ARRAY<STRUCT<label: STRING, probability: DOUBLE>>, area STRING, "
    "area_probability DOUBLE, label STRING, in_top_k BOOLEAN, prediction_set ARRAY<STRING>, confident BOOLEAN, "
    "warning STRING"
)


def rows_function(sources: list[str], top_k: int, known: frozenset[str]):
    """mapInArrow: (items + the pyfunc's answer) -> the labeler's JSONL row and its summary counts."""

    def rows(batches):
        import pyarrow as pa

        formatter = RowFormat("jsonl", top_k)
        for batch in batches:
            out = {name: [] for name in ("file", "line", "row", "labeled", "top1", "top3", "unknown")}
            for item in batch.to_pylist():
                record = Record(
                    item["id"],
                    "",
                    item["title"],
                    item["label"],
                    None,
                    None,  # a row has no abstract
                    sources[item["file"]],
                    item["line"],
                    number=_number(item.get("number")),
                )
                answer = _answer(item["prediction"])
                counts = Counters()
                counts.add(record, answer, known)
                out["file"].append(item["file"])
                out["line"].append(item["line"])
                out["row"].append(formatter.rows([(record, answer)]).decode("utf-8").rstrip("\n"))
                for name, value in (
                    ("labeled", counts.labeled),
                    ("top1", counts.top1),
                    ("top3", counts.top3),
                    ("unknown", counts.unknown_labels),
                ):
                    out[name].append(int(value))
            yield pa.RecordBatch.from_pydict(
                out,
                schema=pa.schema(
                    [
                        ("file", pa.int32()),
                        ("line", pa.int64()),
                        ("row", pa.string()),
                        *[(n, pa.int32()) for n in ("labeled", "top1", "top3", "unknown")],
                    ]
                ),
            )

    return rows


def _answer(prediction: str | dict) -> dict:
    """The pyfunc's answer for one record as the in-process labeler has it: a JSON object (``output="json"``),
    or, from a model logged before that option, the struct of the signature's columns whose optional outputs
    (prediction_set, confident) are null when the model has none — the in-process answer has no such keys."""
    if isinstance(prediction, str):
        return json.loads(prediction)
    return {key: value for key, value in prediction.items() if value is not None or key in ("tracks", "areas")}


def _number(text: str | None) -> int | None:
    """An item's OpenReview note number (carried as text), else None."""
    return int(text) if text else None


def errors_function(sources: list[str]):
    def errors(batches):
        import pyarrow as pa

        for batch in batches:
            items = [
                (
                    BadRecord(sources[i["file"]], i["line"], i["reason"], i["id"], i["kind"], _number(i.get("number"))),
                    i["kind"],
                    i["reason"],
                )
                for i in batch.to_pylist()
            ]
            text = error_rows(items).decode("utf-8")
            yield pa.RecordBatch.from_pydict({"row": text.splitlines()}, schema=pa.schema([("row", pa.string())]))

    return errors
