"""Tests for papertrack.training.dataset.load_dataset on ingested files: duplicates and empty abstracts counted
across files, invalid records and missing labels refused, and the real ICLR 2024 file."""

from __future__ import annotations

import json

import pytest

from papertrack.features.ingest import IngestError, make_id
from papertrack.features.labels import KNOWN_AREAS
from papertrack.training.dataset import LoadSummary, load_dataset
from tests.features.ingest_inputs import ABSTRACT_A, ABSTRACT_B, ABSTRACT_C, jsonl, shared_file, write


def test_load_dataset_counts_duplicates_and_empties_across_files(tmp_path):
    first = write(
        tmp_path / "a.jsonl",
        jsonl(
            {"id": "a1", "abstract": ABSTRACT_A, "label": "Theory"},
            {"id": "a2", "abstract": "  ", "label": "Theory"},
            {"id": "a3", "abstract": ABSTRACT_B, "label": "Deep Learning · Graph Neural Networks"},
            {"id": "a4", "abstract": ABSTRACT_A.upper(), "label": "Theory"},  # same key, same label
        ),
    )
    second = write(
        tmp_path / "b.csv",
        "abstract,label\n"
        f'"{ABSTRACT_B}\n",Deep Learning -> Transformers\n'  # duplicate, different label
        f"{ABSTRACT_C},Deep Learning · Graph Neural Networks\n",
    )
    kept, summary = load_dataset([first, second])
    assert [r.id for r in kept] == ["a1", "a3", make_id(ABSTRACT_C)]
    assert isinstance(summary, LoadSummary)
    assert (summary.read, summary.kept, summary.duplicates, summary.conflicting_duplicates, summary.empty) == (
        6,
        3,
        2,
        1,
        1,
    )
    assert summary.files == [str(first), str(second)] and summary.formats == ["jsonl", "csv"]
    assert summary.label_counts == {"Deep Learning · Graph Neural Networks": 2, "Theory": 1}
    assert summary.lines() == [
        "read 6 records from 2 files (jsonl, csv)",
        "kept 3",
        "skipped 2 duplicates (1 with a different label)",
        "skipped 1 empty abstract",
        "2 distinct labels",
    ]


def test_load_dataset_raises_on_invalid_records(tmp_path):
    path = write(
        tmp_path / "bad.jsonl",
        jsonl({"abstract": ABSTRACT_A, "label": "Theory"}) + "\n" + '{"abstract": "x", "label": Theory}\n',
    )
    with pytest.raises(IngestError) as caught:
        load_dataset(path)
    assert (caught.value.path, caught.value.line) == (str(path), 3)
    assert str(caught.value).startswith(f"{path}:3: invalid JSON: Expecting value")


def test_load_dataset_requires_labels_by_default(tmp_path):
    path = write(tmp_path / "p.jsonl", jsonl({"abstract": ABSTRACT_A, "label": "Theory"}, {"abstract": ABSTRACT_B}))
    with pytest.raises(IngestError, match=r"p\.jsonl:2: no label"):
        load_dataset(path)
    kept, summary = load_dataset(path, labeled=False)
    assert len(kept) == 2 and summary.label_counts == {}


def test_real_iclr_topics_load_dataset():
    path = shared_file("iclr2024_topics.jsonl")
    kept, summary = load_dataset(path)
    assert len(kept) == summary.kept == summary.read == 1996
    assert (summary.duplicates, summary.empty) == (0, 0)
    assert len(summary.label_counts) == 85
    assert {r.area for r in kept} == set(KNOWN_AREAS) - {"General Machine Learning", "Position"}  # ICML 2025's
    assert sum(1 for r in kept if r.subarea is None) == 116
    assert summary.label_counts["Deep Learning · Large Language Models"] == 266
    assert summary.lines()[:2] == ["read 1,996 records from 1 file (jsonl)", "kept 1,996"]
    with path.open(encoding="utf-8") as raw:
        first = json.loads(raw.readline())
    assert (kept[0].id, kept[0].label, kept[0].title) == (first["id"], first["label"], first["title"])
