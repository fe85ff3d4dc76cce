"""Turning loaded records into training arrays, the digest that identifies a training set, the
default training data (every labeled file of the data folder), the year of each source, the temporal holdout (train on
the earlier years, test on the latest) and the sources a cross-venue shift holdout keeps apart."""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from papertrack.errors import UsageError
from papertrack.features.ingest import Record, abstract_key
from papertrack.features.text import model_text
from papertrack.models.hierarchy import LabelSpace
from papertrack.training.renames import RenameMap

# the labeled sources papertrack trains on by default: every file of $PAPERTRACK_DATA_DIR whose name matches this
# rule (one venue and year per file, e.g. iclr2024_topics.jsonl); no venue is named in the code
SOURCE_PATTERN = "*_topics.jsonl"
_YEAR_IN_NAME = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Sources:
    """The labeled files found in a data folder, and the ones matching the rule that are skipped (with why)."""

    paths: list[Path]
    skipped: list[tuple[Path, str]]


def not_labeled_data(path: Path) -> str:
    """Why ``path`` (a file matching :data:`SOURCE_PATTERN`) is not labeled data, or "" when it is: its first
    non-empty line must be a JSON object with an abstract and a label."""
    try:
        with open(path, encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), None)
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot be read as UTF-8 text ({type(exc).__name__})"
    if first is None:
        return "it is empty"
    try:
        record = json.loads(first)
    except ValueError:
        return "its first line is not JSON (a labeled file holds one JSON record per line)"
    if not isinstance(record, dict):
        return f"its first line is a JSON {type(record).__name__}, not a record"
    if not any(isinstance(record.get(k), str) and record[k].strip() for k in ("label", "topic", "area")):
        return "its first record has no label (no 'label', 'topic' or 'area' field): unlabeled data is not trained on"
    if not any(isinstance(record.get(k), str) and record[k].strip() for k in ("abstract", "text")):
        return "its first record has no abstract"
    return ""


def find_sources(data_dir: Path) -> Sources:
    """Every file in ``data_dir`` matching :data:`SOURCE_PATTERN` (sorted by name), each checked to be labeled data."""
    paths, skipped = [], []
    for path in sorted(Path(data_dir).glob(SOURCE_PATTERN)):
        if not path.is_file():
            continue
        why = not_labeled_data(path)
        if why:
            skipped.append((path, why))
        else:
            paths.append(path)
    return Sources(paths, skipped)


def default_data_paths(data_dir: Path) -> list[Path]:
    """The labeled sources of the data folder (:func:`find_sources`); each file matching the rule that is skipped is
    one warning naming it and why; none at all is a UsageError that says what to do."""
    found = find_sources(data_dir)
    for path, why in found.skipped:
        log.warning("skipped %s: %s", path, why)
    if not found.paths:
        skipped = f" ({len(found.skipped)} skipped, see above)" if found.skipped else ""
        raise UsageError(
            f"the default training data is every labeled file named {SOURCE_PATTERN} in {data_dir}, and there is "
            f"none{skipped}. Set PAPERTRACK_DATA_DIR to the folder holding them, or pass --data FILE"
        )
    return found.paths


def source_of(record: Record) -> str:
    """Where a record comes from: its venue and year (e.g. "ICLR 2024") when given, else its file name."""
    return record.origin or Path(record.source).name


def year_of(record: Record) -> int | None:
    """The year a record comes from: its ``year`` field (carried in ``origin``, "ICLR 2024"), else a year in
    its file's name (``iclr2025_dev_topics.jsonl``), else None."""
    return _year_of(record.origin, record.source)


@functools.lru_cache(maxsize=1024)  # a few sources, asked once per record and taxonomy (a Path each: 0.9 s)
def _year_of(origin: str | None, source: str) -> int | None:
    for text in (origin or "", Path(source).name):
        found = _YEAR_IN_NAME.findall(text)
        if found:
            return int(found[-1])
    return None


@dataclass
class TrainingSet:
    records: list[Record]
    space: LabelSpace
    y: np.ndarray
    texts: list[str]
    digest: str
    sources: np.ndarray  # per record: source_of(record)
    years: np.ndarray  # per record: year_of(record), -1 when unknown
    labels: list[str]  # per record: the label trained on (after renames; ``records`` keep the label as read)
    taxonomy: str = ""  # the taxonomy whose names ``labels`` are (training.taxonomies)
    # per row: True when the record carries this taxonomy's own label (False: an older record mapped through a
    # crosswalk); None: every row is native
    native: np.ndarray | None = None

    @classmethod
    def from_records(
        cls,
        records: list[Record],
        use_title: bool = False,
        renames: RenameMap | None = None,
        labels: list[str] | None = None,
        native: np.ndarray | None = None,
        taxonomy: str = "",
    ) -> TrainingSet:
        """``renames`` (old label -> new label) is applied to every record: older examples of a renamed
        track teach its new name, and the model answers in the latest taxonomy. ``labels``: the labels to train
        on instead (one per record, already in the taxonomy's names: a crosswalk's mapping)."""
        if any(r.label is None for r in records):
            raise UsageError("every training record needs a label")
        if labels is None:
            renames = renames or RenameMap()
            labels = [renames.apply(r.label) for r in records]
        space = LabelSpace.from_labels(labels)
        texts = [model_text(r.abstract, r.title, use_title) for r in records]
        sources = np.array([source_of(r) for r in records], dtype=object)
        years = np.array([year_of(r) or -1 for r in records], dtype=np.int64)
        return cls(
            records,
            space,
            space.encode(labels),
            texts,
            data_digest(records, labels),
            sources,
            years,
            labels,
            taxonomy,
            native,
        )

    @property
    def native_rows(self) -> np.ndarray:
        """The rows carrying the taxonomy's own labels (every row unless older records were mapped in)."""
        rows = np.arange(len(self.y))
        return rows if self.native is None else rows[self.native]

    @property
    def source_names(self) -> list[str]:
        """The sources in order of first appearance."""
        return list(dict.fromkeys(self.sources.tolist()))

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "id": [r.id for r in self.records],
                "title": [r.title for r in self.records],
                "abstract": [r.abstract for r in self.records],
                "label": self.labels,
                "source": self.sources.tolist(),
                "year": [str(y) if y >= 0 else "" for y in self.years.tolist()],
            }
        )

    def label_distribution(self) -> pd.DataFrame:
        """Records per label and source (one column per source, then the total), largest first."""
        counts = Counter(zip(self.y.tolist(), self.sources.tolist()))
        table = pd.DataFrame(
            {"label": list(self.space.labels), "area": [self.space.areas[a] for a in self.space.label_area]}
        )
        for source in self.source_names:
            table[source] = [counts.get((j, source), 0) for j in range(self.space.n_labels)]
        table["total"] = np.bincount(self.y, minlength=self.space.n_labels)
        return table.sort_values("total", ascending=False, kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class Direction:
    """One direction of the shift holdout: train on every other source, test on ``heldout``."""

    trained_on: tuple[str, ...]
    heldout: str
    train: np.ndarray  # row indices
    test: np.ndarray
    title: str = ""  # the name, when not made from the sources (the temporal holdout: "2024-to-2025")

    @property
    def name(self) -> str:
        """e.g. ``iclr2024-to-icml2024`` (used in metric names)."""
        return self.title or f"{'+'.join(_slug(s) for s in self.trained_on)}-to-{_slug(self.heldout)}"


def _slug(source: str) -> str:
    base = source.rsplit(".", 2)[0] if source.endswith((".jsonl", ".json", ".csv", ".gz", ".txt")) else source
    return "".join(ch for ch in base.lower() if ch.isalnum() or ch in "_-").replace("_topics", "") or "source"


def shift_directions(sources: np.ndarray, rows: np.ndarray | None = None) -> list[Direction]:
    """Leave-one-source-out among ``rows`` (default: all): one direction per source ([] with fewer than
    two sources)."""
    sources = np.asarray(sources)
    rows = np.arange(len(sources)) if rows is None else np.asarray(rows)
    names = list(dict.fromkeys(sources[rows].tolist()))
    if len(names) < 2:
        return []
    return [
        Direction(tuple(n for n in names if n != held), held, rows[sources[rows] != held], rows[sources[rows] == held])
        for held in names
    ]


def temporal_direction(data: TrainingSet) -> tuple[Direction | None, str]:
    """The temporal holdout: train on every source of the earlier years, test on the latest year's
    source(s). (None, why not) when the data has one year, or a source without a year."""
    unknown = sorted({s for s, y in zip(data.sources.tolist(), data.years.tolist()) if y < 0})
    if unknown:
        return None, (
            f"no year for {', '.join(unknown)} (give records a 'year' field or put the year in the file name)"
        )
    years = sorted(set(data.years.tolist()))
    if len(years) < 2:
        return None, f"one year ({years[0]})" if years else "no records"
    latest = int(data.years[data.native_rows].max()) if len(data.native_rows) else years[-1]
    years = [y for y in years if y <= latest]
    if len(years) < 2:
        return None, f"no records older than its own ({latest})"
    rows = np.arange(len(data.y))
    # the test side: the taxonomy's own latest-year papers (not older papers mapped in through a crosswalk)
    test = np.intersect1d(rows[data.years == latest], data.native_rows)
    train = rows[data.years < latest]
    trained_on = tuple(dict.fromkeys(data.sources[train].tolist()))
    heldout = " + ".join(dict.fromkeys(data.sources[test].tolist()))
    first = years[0]
    title = f"{first}-{years[-2]}-to-{latest}" if years[-2] != first else f"{first}-to-{latest}"
    return Direction(trained_on, heldout, train, test, title), ""


def labels_by_year(data: TrainingSet) -> pd.DataFrame:
    """Records per label and year (after renames), one column per year: what the train-time report of
    labels present in one year only is made from."""
    years = sorted(set(data.years.tolist()))
    table = pd.DataFrame({"label": list(data.space.labels)})
    for year in years:
        table[str(year) if year >= 0 else "unknown"] = np.bincount(
            data.y[data.years == year], minlength=data.space.n_labels
        )
    return table


def one_year_only(data: TrainingSet) -> dict[str, list[str]]:
    """Year -> the labels that have examples in that year only (with several years; else {})."""
    table = labels_by_year(data)
    year_columns = list(table.columns[1:])
    if len(year_columns) < 2:
        return {}
    present = table[year_columns] > 0
    only = present.sum(axis=1) == 1
    return {
        year: table.loc[only & present[year], "label"].tolist() for year in year_columns if (only & present[year]).any()
    }


def data_digest(records: list[Record], labels: list[str] | None = None) -> str:
    """A short digest of (abstract, label) pairs, independent of record order and of ids (``labels``: the
    labels trained on, after renames; default the records' own)."""
    labels = labels if labels is not None else [r.label for r in records]
    lines = sorted(f"{abstract_key(r.abstract)}\t{label}" for r, label in zip(records, labels))
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]
