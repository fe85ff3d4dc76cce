"""Taxonomies as data: which records answer in which venue's names, and how older papers teach new names.

A taxonomy is named from its venue and year ("ICML 2025"). The sweep trains one *head* per taxonomy, each on
shared settings (the same candidate, the same seed) but in its own label space:

* the **main taxonomy** holds every record that no crosswalk claims — today's ICLR 2024, ICML 2024 and ICLR 2025
  papers, which share one set of names (``--rename`` and the built-in rename map apply here). It is named after
  its latest source ("ICLR 2025"; "ICLR 2024 + ICML 2024" when two venues share the latest year) and answers to
  any of its sources' names as well;
* each **crosswalk target** (``train --crosswalk FILE``; papertrack ships ``icml2024-to-icml2025.yaml``) is a
  taxonomy of its own: its own papers keep their names, and every record of the main taxonomy teaches it through
  the crosswalk — a renamed or merged track as its new name; a split track once per new name that holds at
  least :data:`SPLIT_MIN_SHARE` of it (at least its largest); a name the target does not have and no entry maps
  becomes its area's area-only label, said in a note. No record is dropped: each one teaches every head.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from papertrack.errors import UsageError
from papertrack.features.crosswalk import Crosswalk, read_crosswalk
from papertrack.features.ingest import Record
from papertrack.features.labels import canonical_label, normalise_label
from papertrack.training.data import TrainingSet, source_of, year_of
from papertrack.training.planning import Note
from papertrack.training.renames import RenameMap

SPLIT_MIN_SHARE = 0.2
DEFAULT_NAME = "default"  # the main taxonomy's name when no record names its venue and year


@dataclass
class Head:
    """One taxonomy the model answers in: its name, its training set and where its names come from."""

    name: str
    data: TrainingSet
    sources: tuple[str, ...]  # the sources whose own labels are this taxonomy's (aliases of its name)
    crosswalk: Crosswalk | None = None  # how the main taxonomy's records teach it (None: the main taxonomy)

    @property
    def slug(self) -> str:
        return taxonomy_slug(self.name)


@dataclass
class Taxonomies:
    heads: list[Head]  # the default (main) taxonomy first
    notes: list[Note] = field(default_factory=list)

    @property
    def default(self) -> Head:
        return self.heads[0]

    @property
    def names(self) -> list[str]:
        return [h.name for h in self.heads]


def taxonomy_slug(name: str) -> str:
    """A taxonomy's name as it appears in metric names: "ICML 2025" -> "icml2025" (bounded, MLflow-safe)."""
    slug = "".join(ch for ch in name.lower() if ch.isalnum() or ch in "-_+")
    return (slug or "taxonomy")[:60]


def main_name(records: Sequence[Record]) -> str:
    """The main taxonomy's name: its latest year's source(s) ("ICLR 2025"), else :data:`DEFAULT_NAME`."""
    dated = [(year_of(r), r.origin) for r in records if r.origin]
    dated = [(y, o) for y, o in dated if y is not None]
    if not dated:
        return DEFAULT_NAME
    latest = max(y for y, _ in dated)
    names = sorted({o for y, o in dated if y == latest})
    return " + ".join(names)[:200]


def read_crosswalks(paths: Sequence[str | Path]) -> list[Crosswalk]:
    crosswalks = [read_crosswalk(p) for p in paths]
    seen: dict[str, str] = {}
    for cw in crosswalks:
        if cw.target in seen:
            raise UsageError(
                f"{cw.path}: a second crosswalk to {cw.target!r} (the first is {seen[cw.target]}); "
                f"put all of {cw.target}'s names in one file"
            )
        seen[cw.target] = cw.path
    return crosswalks


def build(
    records: Sequence[Record], renames: RenameMap, crosswalks: Sequence[Crosswalk], use_title: bool = False
) -> Taxonomies:
    """The heads of a sweep: the main taxonomy and one per crosswalk target (present in the data)."""
    records = list(records)
    present = Counter(source_of(r) for r in records)
    notes: list[Note] = []
    usable = []
    for cw in crosswalks:
        if cw.target in present:
            usable.append(cw)
        else:
            notes.append(
                Note(
                    f"crosswalk {Path(cw.path).name}: no training record is from {cw.target!r} "
                    f"(sources: {', '.join(present)}); not used",
                    "warning",
                )
            )
    targets = {cw.target for cw in usable}
    main_records = [r for r in records if source_of(r) not in targets]
    heads: list[Head] = []
    main = None
    if main_records:
        name = main_name(main_records)
        main = TrainingSet.from_records(main_records, use_title=use_title, renames=renames, taxonomy=name)
        heads.append(Head(name, main, tuple(dict.fromkeys(main.sources.tolist()))))
        notes += _disagreements(main)
    for cw in usable:
        own = [r for r in records if source_of(r) == cw.target]
        head, head_notes = _crosswalked_head(cw, own, main_records, main, renames, use_title)
        heads.append(head)
        notes += head_notes
    if len(heads) > 1:
        # the sweep's data digest covers every taxonomy's training set (the default one's alone would not change
        # when only another taxonomy's papers do)
        import hashlib

        combined = "\n".join(f"{h.name}\t{h.data.digest}" for h in heads)
        heads[0].data.digest = hashlib.sha256(combined.encode("utf-8")).hexdigest()[:16]
        notes.insert(
            0,
            Note(
                "taxonomies: "
                + "; ".join(
                    f"{h.name} ({h.data.space.n_labels} labels, {len(h.data.native_rows):,} own records"
                    + (
                        f" + {len(h.data.y) - len(h.data.native_rows):,} mapped through {Path(h.crosswalk.path).name}"
                        if h.crosswalk
                        else ""
                    )
                    + ")"
                    for h in heads
                )
                + f"; default {heads[0].name}"
            ),
        )
    return Taxonomies(heads, notes)


def _crosswalked_head(
    cw: Crosswalk,
    own: list[Record],
    older: list[Record],
    main: TrainingSet | None,
    renames: RenameMap,
    use_title: bool,
) -> tuple[Head, list[Note]]:
    own_labels = [canonical_label(r.label or "") for r in own]  # read with a label: never empty
    raw = {r.label for r in older if r.label}
    renamed = set(main.labels) if main is not None else set()
    cw.check_names(raw | renamed)
    names = set(own_labels) | cw.targets()
    areas = {normalise_label(n, warn=False)[0] for n in names}
    rows: list[Record] = []
    labels: list[str] = []
    as_area: Counter[str] = Counter()
    untaught: Counter[str] = Counter()
    for i, record in enumerate(older):
        assert record.label is not None
        key = record.label if record.label in cw.tracks else (main.labels[i] if main is not None else record.label)
        for new in _taught(cw.apply(key)):
            if new not in names:
                area = normalise_label(new, warn=False)[0]
                if area not in areas:
                    untaught[key] += 1
                    continue
                as_area[key] += 1
                new = area
            rows.append(record)
            labels.append(new)
    native = np.array([False] * len(rows) + [True] * len(own))
    data = TrainingSet.from_records(
        rows + own, use_title=use_title, labels=labels + own_labels, native=native, taxonomy=cw.target
    )
    notes = []
    if as_area:
        notes.append(
            Note(
                f"{cw.target}: {sum(as_area.values()):,} older records under names it does not have teach their "
                "area: " + _shown(as_area) + f" (map them in {Path(cw.path).name})",
                "warning",
            )
        )
    if untaught:
        notes.append(
            Note(
                f"{cw.target}: {sum(untaught.values()):,} older records teach it nothing (their area is not "
                f"{cw.target}'s): " + _shown(untaught) + f" (map them in {Path(cw.path).name})",
                "warning",
            )
        )
    return Head(cw.target, data, (cw.target,), cw), notes


def _taught(pairs: tuple[tuple[str, float], ...]) -> list[str]:
    """The new names an older record teaches: every one holding at least SPLIT_MIN_SHARE, at least the largest."""
    best = max(pairs, key=lambda p: p[1])[0]
    return [new for new, share in pairs if share >= SPLIT_MIN_SHARE or new == best]


def _shown(counts: Counter[str], n: int = 4) -> str:
    top = counts.most_common(n)
    more = len(counts) - len(top)
    return ", ".join(f"{label} ({k:,})" for label, k in top) + (f", … ({more} more)" if more > 0 else "")


def _disagreements(data: TrainingSet) -> list[Note]:
    """Sources that share a taxonomy but not all its labels: a note with the counts (a warning when a label
    with 5+ records of one source has none in another of the same year)."""
    sources = list(dict.fromkeys(data.sources.tolist()))
    if len(sources) < 2:
        return []
    per = {s: Counter(np.asarray(data.labels, dtype=object)[data.sources == s].tolist()) for s in sources}
    only = {s: sorted(set(c) - set().union(*(per[o] for o in sources if o != s))) for s, c in per.items()}
    parts = [
        f"{s}: {len(labels)} ({', '.join(f'{x} ({per[s][x]})' for x in labels[:3])}"
        + (", …" if len(labels) > 3 else "")
        + ")"
        for s, labels in only.items()
        if labels
    ]
    if not parts:
        return []
    return [Note(f"{data.taxonomy}: labels only one of its sources has — " + "; ".join(parts), "detail")]
