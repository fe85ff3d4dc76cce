"""Property tests of ingestion (hypothesis, fixed seed): any bytes in -> either records and error rows that
add up to the input, or one clear fatal error (IngestError / LabelError); never a traceback."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from papertrack.features.ingest import BadRecord, IngestError, Record, iter_records
from papertrack.training.dataset import load_dataset

PROPERTY = settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
NAMES = ["in.jsonl", "in.json", "in.csv", "in.txt", "in", "in.jsonl.gz", "in.csv.gz", "in.txt.gz"]

# pieces that ingestion treats specially, mixed into random text
SPECIAL = [
    "{",
    "}",
    "[",
    "]",
    '"abstract"',
    '"label"',
    ":",
    ",",
    "\n",
    "\r\n",
    "\n\n",
    "\ufeff",
    "\u200b",
    "·",
    "->",
    "→",
    " - ",
    "Deep Learning",
    "Theory",
    " 等",
    " et al.",
    "abstract,label\n",
    '"',
    "\x00",
    "\\ud800",
    "[" * 1200,
    "x" * 140_000,
]
text = st.lists(st.one_of(st.text(max_size=30), st.sampled_from(SPECIAL)), max_size=25).map("".join)
raw = st.one_of(st.binary(max_size=3000), text.map(lambda t: t.encode("utf-8", "surrogatepass")))


def write(directory: Path, name: str, data: bytes) -> Path:
    path = directory / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


@PROPERTY
@given(data=raw, name=st.sampled_from(NAMES), labeled=st.sampled_from([None, True, False]))
def test_any_bytes_give_records_or_one_clear_error(data, name, labeled):
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), name, data)
        try:
            items = list(iter_records(path, labeled=labeled))
        except IngestError as exc:
            assert str(exc).startswith(str(path)) and exc.message
            return
        for item in items:
            assert isinstance(item, (Record, BadRecord))
            assert item.source == str(path) and item.line >= 1
            if isinstance(item, Record):
                assert item.abstract.strip() and any(ch.isalnum() for ch in item.abstract)
            else:
                assert item.reason


@PROPERTY
@given(data=raw, name=st.sampled_from(NAMES))
def test_training_reader_accepts_or_fails_clearly(data, name):
    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), name, data)
        try:
            records, summary = load_dataset(path)
        except IngestError as exc:
            assert str(exc).startswith(str(path))
            return
        assert summary.read == summary.kept + summary.duplicates + summary.empty + summary.headers
        assert all(r.label for r in records)


json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
record = st.fixed_dictionaries(
    {"abstract": st.one_of(st.text(max_size=80), json_value)},
    optional={
        "label": st.one_of(st.text(max_size=30), json_value),
        "id": st.one_of(st.text(max_size=10), st.integers()),
        "title": st.one_of(st.text(max_size=20), st.none()),
    },
)
line = st.one_of(
    record.map(json.dumps),
    json_value.map(json.dumps),
    st.text(max_size=40).filter(lambda t: "\n" not in t and "\r" not in t),
    st.integers(1001, 3000).map(lambda n: "[" * n + "]" * n),
)


@PROPERTY
@given(lines=st.lists(line, max_size=30))
def test_every_jsonl_line_is_one_record_or_one_error(lines):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "in.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8", errors="surrogatepass")
        try:
            items = list(iter_records(path))
        except IngestError as exc:
            assert "not valid UTF-8" in exc.message or "file is empty" in exc.message
            return
        non_blank = [n for n, text in enumerate("\n".join(lines).split("\n"), start=1) if text.strip()]
        assert [item.line for item in items] == non_blank


class FakeBackend:
    """Answers every record with a fixed ranking (no model needed)."""

    labels = frozenset({"Theory", "Deep Learning"})
    n_labels = 2
    identity = {"run_id": "fake"}
    description = "fake"

    def label(self, records, k):
        return [
            {
                "tracks": [
                    {"label": "Theory", "area": "Theory", "subarea": None, "probability": 0.75},
                    {"label": "Deep Learning", "area": "Deep Learning", "subarea": None, "probability": 0.25},
                ][:k],
                "areas": [{"area": "Theory", "probability": 0.75}, {"area": "Deep Learning", "probability": 0.25}],
            }
            for _ in records
        ]

    def close(self):
        pass


@PROPERTY
@given(data=raw, name=st.sampled_from(NAMES), kind=st.sampled_from(["out.jsonl", "out.csv"]))
def test_labeling_any_bytes_adds_up_or_fails_clearly(data, name, kind):
    from papertrack.serving.batch.labeler import LabelError, label_dumps

    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp), name, data)
        out = Path(tmp) / kind
        try:
            result = label_dumps([path], out, FakeBackend(), top_k=2, chunk_size=7)
        except (IngestError, LabelError) as exc:
            assert str(exc)
            assert not out.exists() and not out.with_name(out.name + ".partial").exists()
            return
        c = result.counters
        assert c.inputs == c.rows + c.errors
        errors = (Path(tmp) / "out.errors.jsonl").read_text(encoding="utf-8").splitlines()
        assert len(errors) == c.errors
        if kind == "out.jsonl":
            assert len(out.read_text(encoding="utf-8").splitlines()) == c.rows


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__])
