"""Tests for papertrack.features.ingest: the text dumps pasted from the paper-search page (labeled and unlabeled
layouts, authors blocks and the et-al marker, the header paragraph, orphan paragraphs) and the real samples."""

from __future__ import annotations

from dataclasses import fields

import pytest

from papertrack.features.ingest import BadRecord, IngestError, Record, detect_format, iter_records, make_id
from papertrack.training.dataset import load_dataset
from tests.features.ingest_inputs import ABSTRACT_A, ABSTRACT_B, ABSTRACT_C, SHARED, records_of, shared_file, write

# A small labeled text dump in the layout pasted from the paper-search page.
LABELED_TEXT = """论文检索

Deep Learning · Large Language Models

Ada Lovelace, Alan Turing 等

We present a scalable method for instruction tuning. It needs
no human labels.

Theory

Kurt Gödel, Emmy Noether, John E. Smith

Tight bounds for the sample complexity of $\\epsilon$-optimal learners are derived.

Reinforcement Learning -> Deep RL

Agents that plan with learned models are studied. Unlike prior work, our agent never sees rewards.

A second paragraph continues the same abstract.
"""


def test_text_labeled_layout(tmp_path):
    path = write(tmp_path / "dump.txt", LABELED_TEXT)
    assert detect_format(path) == "text-labeled"
    first, second, third = records_of(path, labeled=True)
    assert (first.label, first.area, first.subarea) == (
        "Deep Learning · Large Language Models",
        "Deep Learning",
        "Large Language Models",
    )
    assert first.abstract == "We present a scalable method for instruction tuning. It needs no human labels."
    assert (first.line, first.title, first.id) == (3, None, make_id(first.abstract))
    assert (second.label, second.subarea, second.line) == ("Theory", None, 10)
    assert second.abstract.startswith("Tight bounds") and "Gödel" not in second.abstract
    assert third.label == "Reinforcement Learning · Deep RL"
    assert third.abstract.endswith("never sees rewards. A second paragraph continues the same abstract.")


def test_text_labeled_without_authors_block_and_et_al_marker(tmp_path):
    path = write(
        tmp_path / "no_authors.txt",
        "Theory\n\n"
        "We prove a lower bound for learning halfspaces with noise, which matches known upper bounds.\n\n"
        "Deep Learning · Transformers\n\nA. Vaswani, N. Shazeer et al.\n\nAttention is all you need, we argue.\n",
    )
    first, second = records_of(path)
    assert first.label == "Theory" and first.abstract.startswith("We prove a lower bound")
    assert first.line == 1  # no header: the first block is already a label line
    assert second.abstract == "Attention is all you need, we argue."


def test_text_labeled_label_without_abstract_is_a_bad_record(tmp_path):
    path = write(
        tmp_path / "missing.txt",
        "Header\n\n"
        "Deep Learning · X\n\nAda Lovelace, Alan Turing\n\n"
        "Theory\n\nKurt Gödel\n\nA real abstract about bounds. It is fine.\n\n"
        "Optimization\n\nGrace Hopper 等\n",
    )
    items = list(records_of(path))
    assert [type(item) for item in items] == [BadRecord, Record, BadRecord]
    assert items[0].reason == "label block 'Deep Learning · X' has no abstract"
    assert (items[0].line, items[0].kind, items[0].source) == (3, "invalid", str(path))
    assert items[1].label == "Theory"
    assert items[2].reason == "label block 'Optimization' has no abstract" and items[2].line == 13
    with pytest.raises(IngestError, match=r"missing\.txt:3: label block 'Deep Learning · X' has no abstract"):
        load_dataset(path)


def test_text_labeled_invalid_label_and_orphan_paragraph(tmp_path):
    path = write(
        tmp_path / "weird.txt",
        "Search results\n\nThis paragraph comes before any label. It cannot be attributed.\n\n"
        "Deep Learning ->\n\nAda Lovelace\n\nAn abstract with a broken label line. It is long enough.\n\n"
        "Theory\n\nKurt Gödel\n\nAn abstract. Fine.\n",
    )
    orphan, invalid, good = records_of(path)
    assert isinstance(orphan, BadRecord) and orphan.line == 3 and "label" in orphan.reason
    assert isinstance(invalid, BadRecord) and invalid.line == 5
    assert invalid.reason.startswith("invalid label 'Deep Learning ->'")
    assert good.label == "Theory"


def test_text_unlabeled_layout(tmp_path):
    path = write(
        tmp_path / "abstracts.txt",
        "ICLR 2024 Papers\n\n"
        f"{ABSTRACT_A}\n\n\n"
        "Graph neural networks struggle with\nlong-range dependencies.   \nWe add virtual nodes.\n\n"
        f"{ABSTRACT_C}\n",
    )
    assert detect_format(path) == "text-unlabeled"
    items = list(records_of(path))
    assert [item.abstract for item in items] == [ABSTRACT_A, ABSTRACT_B, ABSTRACT_C]
    assert [item.line for item in items] == [3, 6, 10]
    assert all(item.label is None and item.title is None for item in items)
    assert items[0].id == make_id(ABSTRACT_A)


def test_text_unlabeled_first_paragraph_is_kept_when_it_is_prose(tmp_path):
    path = write(tmp_path / "no_header.txt", f"Short prose. Really.\n\n{ABSTRACT_A}\n")
    assert [item.abstract for item in records_of(path)] == ["Short prose. Really.", ABSTRACT_A]


def test_text_unlabeled_records_are_bad_when_labels_are_required(tmp_path):
    path = write(tmp_path / "abstracts.txt", f"ICLR 2024 Papers\n\n{ABSTRACT_A}\n")
    (item,) = records_of(path, labeled=True)
    assert isinstance(item, BadRecord) and item.kind == "invalid" and "no label" in item.reason


def test_text_dump_header_is_reported_not_dropped(tmp_path):
    path = write(tmp_path / "abstracts.txt", f"We study graphs\n\n{ABSTRACT_A}\n\n{ABSTRACT_B}\n")
    header, *rest = iter_records(path)
    assert isinstance(header, BadRecord) and header.kind == "header" and header.line == 1
    assert "We study graphs" in header.reason and [r.abstract for r in rest] == [ABSTRACT_A, ABSTRACT_B]
    records, summary = load_dataset(path, labeled=False)
    assert len(records) == 2 and summary.headers == 1 and "skipped 1 header paragraph" in summary.lines()


# --------------------------------------------------------------------------- the real samples


def test_real_labeled_dump():
    path = shared_file("samples/labeled_dump.txt")
    label_lines = path.read_text(encoding="utf-8").split("\n\n")[1::3]
    assert detect_format(path) == "text-labeled"
    items = list(records_of(path, labeled=True))
    assert len(items) == 40 and all(isinstance(item, Record) for item in items)
    assert [item.label for item in items] == label_lines
    assert items[0].label == "Deep Learning · Large Language Models"
    assert items[0].abstract.startswith("We present a scalable method")
    assert items[0].line == 3
    assert len({item.id for item in items}) == 40


def test_et_al_marker_never_leaks_into_records(tmp_path):
    real = SHARED / "samples" / "labeled_dump.txt"
    sources = [write(tmp_path / "dump.txt", LABELED_TEXT)] + ([real] if real.exists() else [])
    for path in sources:
        assert "等" in path.read_text(encoding="utf-8")
        for item in records_of(path):
            assert isinstance(item, Record)
            values = [getattr(item, f.name) for f in fields(item)]
            assert not any("等" in value for value in values if isinstance(value, str)), item


def test_real_unlabeled_dump():
    path = shared_file("samples/unlabeled_dump.txt")
    assert detect_format(path) == "text-unlabeled"
    items = list(records_of(path))
    assert len(items) == 30 and all(isinstance(item, Record) for item in items)
    assert all(item.label is None for item in items)
    assert items[0].line == 3 and items[0].abstract.startswith("Brain simulation builds dynamical models")
    assert not any(item.abstract.startswith("ICLR 2024 Papers") for item in items)
