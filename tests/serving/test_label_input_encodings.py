"""Input text that is not plain UTF-8: a lone surrogate escape is one error row in `label` and `suggest`'s pool
and a clear fatal error in training data; UTF-16 and UTF-32 input is named with the command that converts it;
UTF-8 with a byte order mark is still read."""

from __future__ import annotations

import json

import pytest

from papertrack.features.ingest import IngestError, Record, iter_records
from papertrack.training.dataset import load_dataset
from tests.serving.label_cli import ABSTRACT, error_lines, flat, label

SURROGATE_LINES = [
    json.dumps({"id": "ok-1", "abstract": ABSTRACT}),
    '{"id": "bad\\udc00id", "abstract": "A fine abstract about kernels and graphs."}',
    '{"id": "bad-title", "title": "T\\ud800", "abstract": "Another fine abstract about graphs."}',
    '{"id": "bad-abstract", "abstract": "Graph \\udfff networks for molecules."}',
    json.dumps({"id": "ok-2", "abstract": ABSTRACT + " Second."}),
]


def test_a_lone_surrogate_is_one_error_row_and_the_run_finishes(tmp_path, fake_model):
    source = tmp_path / "s.jsonl"
    source.write_text("\n".join(SURROGATE_LINES) + "\n", encoding="utf-8")
    for name in ("out.jsonl", "out.csv"):
        result = label(str(source), "-o", str(tmp_path / name))
        assert result.exit_code == 3, result.output
        assert "3 errors" in flat(result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit)
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    errors = [json.loads(line) for line in (tmp_path / "out.errors.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["ok-1", "ok-2"]
    assert [(e["line"], e["id"]) for e in errors] == [(2, "bad\\udc00id"), (3, "bad-title"), (4, "bad-abstract")]
    assert all(e["source"] == str(source) and "lone surrogate" in e["reason"] for e in errors)
    assert "'title'" in errors[1]["reason"] and "\\ud800" in errors[1]["reason"]


def test_a_lone_surrogate_in_training_data_is_a_clear_fatal_error(tmp_path):
    source = tmp_path / "train.jsonl"
    source.write_text(
        json.dumps({"abstract": ABSTRACT, "label": "Theory"})
        + "\n"
        + '{"abstract": "Kernels \\udc00 and graphs.", "label": "Theory"}\n',
        encoding="utf-8",
    )
    with pytest.raises(IngestError, match=r"train.jsonl:2: field 'abstract' holds the lone surrogate escape \\udc00"):
        load_dataset([source])
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"abstract": "Kernels and graphs.", "label": "Theory \\ud83d"}\n', encoding="utf-8")
    with pytest.raises(IngestError, match="field 'label' holds the lone surrogate"):
        load_dataset([labels])


def test_suggest_pool_reports_a_lone_surrogate_instead_of_crashing(tmp_path):
    from papertrack.serving.batch.suggest import read_pool

    source = tmp_path / "s.jsonl"
    source.write_text("\n".join(SURROGATE_LINES) + "\n", encoding="utf-8")
    pool = read_pool([source])
    assert [r.id for r in pool.records] == ["ok-1", "ok-2"]
    assert [(b.line, "lone surrogate" in b.reason) for b in pool.bad] == [(2, True), (3, True), (4, True)]


# --------------------------------------------------------------------------- UTF-16 / UTF-32 input


@pytest.mark.parametrize(
    "encoding,name",
    [
        ("utf-16", "UTF-16"),
        ("utf-16-le", "UTF-16"),
        ("utf-16-be", "UTF-16"),
        ("utf-32", "UTF-32"),
        ("utf-32-le", "UTF-32"),
    ],
)
def test_utf16_input_is_named_with_the_conversion(tmp_path, encoding, name):
    source = tmp_path / "dump.jsonl"
    source.write_text(json.dumps({"id": "a", "abstract": ABSTRACT}) + "\n", encoding=encoding)
    with pytest.raises(IngestError) as caught:
        list(iter_records(source))
    message = str(caught.value)
    assert f"{name} text, not UTF-8" in message and f"iconv -f {name} -t UTF-8 {source}" in message
    assert "not valid UTF-8" not in message


def test_utf16_input_to_the_label_command(tmp_path, no_model):
    source = tmp_path / "dump.txt"
    source.write_text(f"{ABSTRACT}\n\n{ABSTRACT} Again.\n", encoding="utf-16")
    result = label(str(source), "-o", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 2
    (line,) = error_lines(result.output)
    assert "UTF-16" in line and "iconv -f UTF-16 -t UTF-8" in line


def test_plain_utf8_with_a_bom_is_still_read(tmp_path):
    source = tmp_path / "dump.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + (json.dumps({"id": "a", "abstract": ABSTRACT}) + "\n").encode())
    (record,) = list(iter_records(source))
    assert isinstance(record, Record) and record.id == "a"
