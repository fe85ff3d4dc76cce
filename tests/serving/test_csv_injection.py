"""CSV injection: no cell of the CSV `label` writes (ids, titles, labels) or of `suggest`'s picks starts a
spreadsheet formula."""

from __future__ import annotations

import csv
import json

from papertrack.features.ingest import Record
from tests.serving.label_cli import ABSTRACT, label


def test_csv_output_cells_cannot_start_a_formula(tmp_path, fake_model):
    source = tmp_path / "evil.jsonl"
    evil = [('=HYPERLINK("http://x")', "=1+2"), ("+cmd", "-2+3"), ("@SUM(A1)", "\tTab"), ("-ok", "\rCR")]
    source.write_text(
        "".join(
            json.dumps({"id": i, "title": t, "abstract": ABSTRACT + f" {n}.", "label": "Theory"}) + "\n"
            for n, (i, t) in enumerate(evil)
        ),
        encoding="utf-8",
    )
    result = label(str(source), "-o", str(tmp_path / "x.csv"))
    assert result.exit_code == 0, result.output
    with open(tmp_path / "x.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["id"] for r in rows] == ['\'=HYPERLINK("http://x")', "'+cmd", "'@SUM(A1)", "'-ok"]
    assert [r["title"] for r in rows][:3] == ["'=1+2", "'-2+3", "Tab"]  # titles are whitespace-normalised
    for row in rows:
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row.values()), row


def test_spreadsheet_safe_prefixes_only_formula_starts():
    from papertrack.features.spreadsheet import spreadsheet_safe

    assert [spreadsheet_safe(t) for t in ("=1", "+1", "-1", "@a", "\t1", "\r1", "a=1", "", "'=1")] == [
        "'=1",
        "'+1",
        "'-1",
        "'@a",
        "'\t1",
        "'\r1",
        "a=1",
        "",
        "'=1",
    ]


def test_a_label_starting_with_a_formula_character_is_safe_in_the_csv(tmp_path, fake_model):
    source = tmp_path / "l.jsonl"
    source.write_text(json.dumps({"id": "a", "abstract": ABSTRACT, "label": "=cmd · +run"}) + "\n", encoding="utf-8")
    result = label(str(source), "-o", str(tmp_path / "l.csv"))
    with open(tmp_path / "l.csv", newline="", encoding="utf-8") as f:
        (row,) = list(csv.DictReader(f))
    assert row["label"].startswith("'="), (row, result.output)


def test_suggest_csv_cells_cannot_start_a_formula():
    """`suggest -o picks.csv` wrote ids, titles and abstracts starting with =, +, -, @ as they were."""
    import csv
    import io

    from papertrack.serving.batch.suggest import Suggestion, render

    record = Record(
        id="=HYPERLINK(1)", abstract="-2+3 is the abstract", title="@title", label=None, area=None, subarea=None,
        source="d.csv", line=2, authors="+author",
    )  # fmt: skip
    tracks = [{"label": "Theory", "probability": 0.5}]
    text = render([Suggestion(record, 1, 0.5, tracks)], "csv", strategy="diverse", model="m", name="picks.csv")
    (row,) = csv.DictReader(io.StringIO(text))
    assert (row["id"], row["title"], row["authors"], row["abstract"]) == (
        "'=HYPERLINK(1)", "'@title", "'+author", "'-2+3 is the abstract"
    )  # fmt: skip
    assert row["label"] == "Theory" and row["rank"] == "1"
