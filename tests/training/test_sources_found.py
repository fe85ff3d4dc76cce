"""Sources found, not listed: the default training data is every labeled ``*_topics.jsonl`` of the data folder, the
crosswalks beside it are read, a venue with a label set of its own is a taxonomy of its own (with or without a
crosswalk), and the names a taxonomy knows come from its data. Synthetic records (seconds, no MLflow store)."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest

from papertrack.errors import UsageError
from papertrack.features.crosswalk import read_crosswalk
from papertrack.training import taxonomies
from papertrack.training.config import SweepConfig
from papertrack.training.data import default_data_paths, find_sources
from papertrack.training.dataset import load_dataset
from papertrack.training.renames import RenameMap
from tests.synthetic_corpus import TOPICS, venue_records

OLD = {
    "Theory · Learning Theory": TOPICS["Theory · Learning Theory"],
    "Deep Learning · Attention Mechanisms": TOPICS["Deep Learning · Attention Mechanisms"],
    "Applications · Computer Vision": "image pixel segmentation detection camera",
    "Reinforcement Learning · Batch/Offline": "offline dataset policy conservative q-learning",
}
NEURIPS = {  # a re-cut taxonomy: an area of its own, a rename the older files do not know
    "Theory · Learning Theory": TOPICS["Theory · Learning Theory"],
    "Deep Learning · Attention Mechanisms": TOPICS["Deep Learning · Attention Mechanisms"],
    "Computer Vision · Segmentation": "image pixel segmentation mask",
    "Computer Vision · Image and Video Generation": "image video diffusion generation",
    "Reinforcement Learning · Batch Offline": "offline dataset policy conservative q-learning",
}


def _write(path: Path, records) -> Path:
    with open(path, "w", encoding="utf-8") as out:
        for r in records:
            venue, year = r.origin.split()
            out.write(json.dumps({"id": r.id, "abstract": r.abstract, "label": r.label, "venue": venue, "year": year}))
            out.write("\n")
    return path


def test_the_default_data_is_every_labeled_topics_file_of_the_folder(tmp_path):
    _write(tmp_path / "old2024_topics.jsonl", venue_records(OLD, "OLD", 2024, 3, 0))
    _write(tmp_path / "neurips2025_dev_topics.jsonl", venue_records(NEURIPS, "NeurIPS", 2025, 3, 1))
    (tmp_path / "notes.jsonl").write_text("{}\n")  # not matching the rule: not read
    found = default_data_paths(tmp_path)
    assert found == [tmp_path / "neurips2025_dev_topics.jsonl", tmp_path / "old2024_topics.jsonl"]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"id": "1", "abstract": "a text", "venue": "X", "year": 2025}\n', "has no label"),
        ("id,abstract,label\n1,a,b\n", "not JSON"),
        ("", "empty"),
        ("[1, 2]\n", "JSON list"),
    ],
)
def test_a_topics_file_that_is_not_labeled_data_is_skipped_with_one_line_naming_it(tmp_path, caplog, content, why):
    _write(tmp_path / "old2024_topics.jsonl", venue_records(OLD, "OLD", 2024, 3, 0))
    (tmp_path / "broken_topics.jsonl").write_text(content, encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert default_data_paths(tmp_path) == [tmp_path / "old2024_topics.jsonl"]
    lines = [r.getMessage() for r in caplog.records if "broken_topics.jsonl" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith("skipped ") and why in lines[0]
    assert find_sources(tmp_path).skipped[0][0] == tmp_path / "broken_topics.jsonl"


def test_a_folder_without_labeled_topics_files_is_a_usage_error(tmp_path):
    (tmp_path / "broken_topics.jsonl").write_text("not json\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"every labeled file named \*_topics.jsonl .*none \(1 skipped"):
        default_data_paths(tmp_path)


def test_a_venue_with_a_label_set_of_its_own_is_its_own_taxonomy_without_a_crosswalk():
    records = [*venue_records(OLD, "OLD", 2024, 6, 0), *venue_records(NEURIPS, "NeurIPS", 2025, 6, 1)]
    built = taxonomies.build(records, RenameMap.with_extra(()), [])
    assert built.names == ["OLD 2024", "NeurIPS 2025"]
    neurips = built.heads[1]
    # the older papers teach it the names it shares, and their area where it has one ("Batch/Offline" -> the area)
    assert set(neurips.data.space.labels) == {*NEURIPS, "Reinforcement Learning"}
    assert neurips.sources == ("NeurIPS 2025",)
    mapped = [label for label, own in zip(neurips.data.labels, neurips.data.native) if not own]
    assert mapped.count("Theory · Learning Theory") == 6 and mapped.count("Reinforcement Learning") == 6
    assert "Applications · Computer Vision" not in mapped  # Applications is no area of NeurIPS 2025 here
    assert any("by the names it shares (no crosswalk)" in n.text for n in built.notes)
    # metric names stay MLflow-safe for any taxonomy name
    assert taxonomies.taxonomy_slug("ICLR 2025 + NeurIPS 2025") == "iclr2025_neurips2025"


def test_a_source_sharing_the_older_names_joins_their_taxonomy():
    later = {k: v for k, v in OLD.items() if k != "Applications · Computer Vision"}
    records = [*venue_records(OLD, "OLD", 2024, 6, 0), *venue_records(later, "OLD", 2025, 6, 1)]
    assert taxonomies.build(records, RenameMap.with_extra(()), []).names == ["OLD 2025"]


def test_two_files_claiming_one_venue_and_year_with_different_label_sets_warn_with_counts():
    first = venue_records(NEURIPS, "NeurIPS", 2025, 4, 1)
    other = {"Theory · Learning Theory": TOPICS["Theory · Learning Theory"], "Data-centric AI": "data curation"}
    second = [replace(r, source="neurips2025_extra_topics.jsonl") for r in venue_records(other, "NeurIPS", 2025, 5, 2)]
    records = [*venue_records(OLD, "OLD", 2024, 6, 0), *first, *second]
    built = taxonomies.build(records, RenameMap.with_extra(()), [])
    (warning,) = [n for n in built.notes if "claim NeurIPS 2025" in n.text]
    assert warning.level == "warning"
    assert "neurips2025.jsonl: 4 of its 5 labels (16 of 20 records) in no other file of NeurIPS 2025" in warning.text
    assert "neurips2025_extra_topics.jsonl: 1 of its 2 labels (5 of 10 records)" in warning.text


def test_a_crosswalk_to_a_venue_no_source_has_is_an_error_naming_the_file(tmp_path):
    records = [*venue_records(OLD, "OLD", 2024, 6, 0), *venue_records(NEURIPS, "NeurIPS", 2025, 6, 1)]
    path = tmp_path / "old-to-neurips2030.yaml"
    path.write_text("to: NeurIPS 2030\nmap:\n  Applications · Computer Vision: Computer Vision\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"old-to-neurips2030\.yaml: the crosswalk maps names to 'NeurIPS 2030'"):
        taxonomies.build(records, RenameMap.with_extra(()), [read_crosswalk(path)], strict=True)


def test_crosswalks_beside_the_data_are_read_by_default_and_a_bad_one_names_its_file(tmp_path, monkeypatch):
    _write(tmp_path / "old2024_topics.jsonl", venue_records(OLD, "OLD", 2024, 6, 0))
    _write(tmp_path / "neurips2025_dev_topics.jsonl", venue_records(NEURIPS, "NeurIPS", 2025, 6, 1))
    beside = tmp_path / "old2024-to-neurips2025.yaml"
    beside.write_text(
        "to: NeurIPS 2025\nmap:\n  Applications · Computer Vision:\n"
        "    Computer Vision · Segmentation: 0.5\n    Computer Vision · Image and Video Generation: 0.5\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("PAPERTRACK_DATA_DIR", str(tmp_path))
    config = SweepConfig()
    records, _ = load_dataset(config.paths)
    (crosswalk,) = taxonomies.default_crosswalks(config, records)  # the shipped ICML one has no target here
    assert crosswalk.path == str(beside)
    built = taxonomies.build(records, RenameMap.with_extra(()), [crosswalk], strict=True)
    mapped = [label for label, own in zip(built.heads[1].data.labels, built.heads[1].data.native) if not own]
    assert mapped.count("Computer Vision · Segmentation") == 6
    beside.write_text("to: NeurIPS 2030\nmap:\n  Applications · Computer Vision: Computer Vision\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"old2024-to-neurips2025\.yaml: the crosswalk maps names to 'NeurIPS 2030'"):
        taxonomies.build(records, RenameMap.with_extra(()), taxonomies.default_crosswalks(config, records), strict=True)


def test_the_names_a_taxonomy_knows_come_from_its_data(tmp_path, caplog):
    from papertrack.training.dataset import NAME_MIN_RECORDS

    records = venue_records(NEURIPS, "NeurIPS", 2025, NAME_MIN_RECORDS, 1)
    path = _write(tmp_path / "neurips2025_dev_topics.jsonl", records)
    with caplog.at_level(logging.WARNING):
        _, summary = load_dataset([path])
    # "Batch Offline" is close to the built-in "Batch/Offline", but 5 papers call it so: a name, not a typo
    assert not [r for r in caplog.records if "did you mean" in r.getMessage()]
    assert summary.unknown_areas == {}  # "Computer Vision" is an area of the data
    typo = {"Computer Vision · Segmentaton": "image pixel segmentation mask"}
    _write(tmp_path / "typo_topics.jsonl", venue_records(typo, "NeurIPS", 2025, 1, 3))
    with caplog.at_level(logging.WARNING):
        load_dataset([path, tmp_path / "typo_topics.jsonl"])
    said = [r.getMessage() for r in caplog.records if "did you mean" in r.getMessage()]
    assert any("'Computer Vision · Segmentation'" in m for m in said)
