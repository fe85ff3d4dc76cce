"""Taxonomies as data: which records answer in which venue's names, and how older papers teach new names.

A taxonomy is named from its venue and year ("ICML 2025"). The sweep trains one *head* per taxonomy, each on
shared settings (the same candidate, the same seed) but in its own label space:

* the **main taxonomy** holds every record that no crosswalk claims — today's ICLR 2024, ICML 2024 and ICLR 2025
  papers, which share one set of names (``--rename`` and the built-in rename map apply here). It is named after
  its latest source ("ICLR 2025"; "ICLR 2024 + ICML 2024" when two venues share the latest year) and answers to
  any of its sources' names as well;
* each source (venue + year) with a label set of its own is a taxonomy of its own (:func:`group_sources`), and so
  is each **crosswalk target** (``train --crosswalk FILE``, a ``*-to-*.yaml`` beside the data, or the shipped ones
  in ``features/crosswalks``): its own papers keep their names, and every record of the main taxonomy (and of the
  taxonomies before it) teaches it through the crosswalk — without one, by the names and areas they share —
  a renamed or merged track as its new name; a split track once per new name that holds at
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
    """A taxonomy's name as it appears in metric names: "ICML 2025" -> "icml2025", "ICLR 2024 + ICML 2024" ->
    "iclr2024_icml2024" (bounded; MLflow-safe: letters, digits, "-" and "_" only)."""
    slug = "".join(ch if ch.isalnum() or ch in "-_" else "_" if ch == "+" else "" for ch in name.lower())
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


NEW_NAMES_SHARE = 0.1  # a source with more of its records under names an older taxonomy lacks is a taxonomy of its own
NEW_NAMES_MIN_RECORDS = 10  # ... and at least this many (a few odd labels, a file without a year, start none)


def group_sources(records: Sequence[Record], renames: RenameMap, own: Sequence[str] = ()) -> list[list[str]]:
    """The taxonomies of the data, as lists of sources (venue + year), the main one first: sources in order of year
    (then the larger first; sources without a year last) join the taxonomy whose names cover all but
    :data:`NEW_NAMES_SHARE` of their records (the one covering most); a source with a label set of its own (more
    than that share and at least :data:`NEW_NAMES_MIN_RECORDS` records under names no taxonomy before it has)
    starts a taxonomy of its own, with or without a crosswalk.
    ``own``: sources that are a taxonomy of their own whatever their names (crosswalk targets)."""
    counts: dict[str, Counter[str]] = {}
    years: dict[str, int] = {}
    for r in records:
        source = source_of(r)
        counts.setdefault(source, Counter())[renames.apply(r.label or "")] += 1
        years.setdefault(source, year_of(r) or -1)
    groups: list[tuple[list[str], set[str]]] = []
    for source in sorted(counts, key=lambda s: (years[s] if years[s] >= 0 else 10**6, -counts[s].total(), s)):
        labels = counts[source]
        total = labels.total()

        def new_records(names: set[str], labels: Counter[str] = labels) -> int:
            return sum(n for label, n in labels.items() if label not in names)

        fits = [] if source in own else [(new_records(names), i) for i, (_, names) in enumerate(groups)]
        fits = [f for f in fits if f[0] <= NEW_NAMES_SHARE * total or f[0] < NEW_NAMES_MIN_RECORDS]
        if fits:
            _, best = min(fits)
            groups[best][0].append(source)
            groups[best][1].update(labels)
        else:
            groups.append(([source], set(labels)))
    # the others in order of their first year, then name: each is taught by the main one and the ones before it
    first = [sources for sources, _ in groups[:1]]
    rest = sorted((sources for sources, _ in groups[1:]), key=lambda g: (min(years[s] for s in g), g[0]))
    return first + rest


def default_crosswalks(config, records: Sequence[Record]) -> list[Crosswalk]:
    """The crosswalks of a sweep (``config``: a SweepConfig): the ones it names (``--crosswalk``), else the ones
    beside the labeled files and the shipped ones — a shipped one only where the data has its target's papers and no
    file beside the data targets it too."""
    if config.crosswalks is not None:
        return read_crosswalks(config.crosswalk_paths)
    from papertrack.features.crosswalk import shipped_crosswalks

    beside = read_crosswalks(config.beside_crosswalks)
    present = {source_of(r) for r in records}
    taken = {cw.target for cw in beside}
    shipped = [cw for cw in map(read_crosswalk, shipped_crosswalks()) if cw.target in present - taken]
    return beside + shipped


def build(
    records: Sequence[Record],
    renames: RenameMap,
    crosswalks: Sequence[Crosswalk],
    use_title: bool = False,
    strict: bool = False,
) -> Taxonomies:
    """The heads of a sweep: the main taxonomy, and one per other taxonomy of the data (:func:`group_sources`) —
    taught by the main taxonomy's papers and those of the heads before it (ICML 2025's papers teach NeurIPS 2025,
    not the reverse), through its crosswalk when one targets it, else through the names it shares with them.
    ``strict``: a crosswalk whose target no source is is a UsageError naming its file (a warning otherwise)."""
    records = list(records)
    present = Counter(source_of(r) for r in records)
    notes: list[Note] = []
    usable = []
    for cw in crosswalks:
        if cw.target in present:
            usable.append(cw)
        elif strict:
            raise UsageError(
                f"{cw.path}: the crosswalk maps names to {cw.target!r}, but no labeled source is {cw.target!r} "
                f"(the sources: {', '.join(present)}); fix its 'to:' or add that venue's labeled file"
            )
        else:
            notes.append(
                Note(
                    f"crosswalk {Path(cw.path).name}: no training record is from {cw.target!r} "
                    f"(sources: {', '.join(present)}); not used",
                    "warning",
                )
            )
    by_target = {cw.target: cw for cw in usable}
    groups = group_sources(records, renames, own=list(by_target))
    notes += _same_source_disagreements(records, renames)
    heads: list[Head] = []
    main = None
    main_sources = set(groups[0]) if groups else set()
    main_records = [r for r in records if source_of(r) in main_sources]
    if main_records:
        name = main_name(main_records)
        main = TrainingSet.from_records(main_records, use_title=use_title, renames=renames, taxonomy=name)
        heads.append(Head(name, main, tuple(dict.fromkeys(main.sources.tolist()))))
        notes += _disagreements(main)
    older: list[Record] = list(main_records)
    older_labels: list[str] = list(main.labels) if main is not None else []
    for sources in groups[1:]:
        own = [r for r in records if source_of(r) in sources]
        name = main_name(own) if own[0].origin else sources[0]
        cw = by_target.get(sources[0]) or Crosswalk(name, "", {}, {}, "", {})
        head, head_notes = _crosswalked_head(cw, own, older, older_labels, renames, use_title)
        head.sources = tuple(sources)
        heads.append(head)
        notes += head_notes
        older += own
        older_labels += [canonical_label(r.label or "") for r in own]
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
                        f" + {len(h.data.y) - len(h.data.native_rows):,} mapped {_via(h.crosswalk)}"
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


def _via(cw: Crosswalk) -> str:
    return f"through {Path(cw.path).name}" if cw.path else "by the names it shares (no crosswalk)"


def _same_source_disagreements(records: Sequence[Record], renames: RenameMap) -> list[Note]:
    """Files that claim one venue and year with different label sets: a warning with the counts."""
    per: dict[str, dict[str, Counter[str]]] = {}
    for r in records:
        if r.origin:
            per.setdefault(r.origin, {}).setdefault(Path(r.source).name, Counter())[renames.apply(r.label or "")] += 1
    notes = []
    for origin, files in per.items():
        if len(files) < 2:
            continue
        parts = []
        for name, labels in files.items():
            others = set().union(*(set(c) for n, c in files.items() if n != name))
            only = {label: k for label, k in labels.items() if label not in others}
            if only:
                parts.append(
                    f"{name}: {len(only)} of its {len(labels)} labels ({sum(only.values()):,} of "
                    f"{sum(labels.values()):,} records) in no other file of {origin}"
                )
        if parts:
            notes.append(
                Note(
                    f"{len(files)} files claim {origin} with different label sets — "
                    + "; ".join(parts)
                    + " (trained as one taxonomy: check that they are the same venue and year)",
                    "warning",
                )
            )
    return notes


def _crosswalked_head(
    cw: Crosswalk,
    own: list[Record],
    older: list[Record],
    older_labels: list[str],
    renames: RenameMap,
    use_title: bool,
) -> tuple[Head, list[Note]]:
    """The head of ``cw.target``: its own papers, and the ``older`` ones (``older_labels``: their names in their own
    taxonomy, renames applied) taught through ``cw`` (an empty crosswalk: by the names and areas it shares)."""
    own_labels = [canonical_label(r.label or "") for r in own]  # read with a label: never empty
    raw = {r.label for r in older if r.label}
    cw.check_names(raw | set(older_labels))
    names = set(own_labels) | cw.targets()
    areas = {normalise_label(n, warn=False)[0] for n in names}
    rows: list[Record] = []
    labels: list[str] = []
    as_area: Counter[str] = Counter()
    untaught: Counter[str] = Counter()
    for i, record in enumerate(older):
        assert record.label is not None
        key = record.label if record.label in cw.tracks else older_labels[i]
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
                "area: " + _shown(as_area) + _map_them(cw),
                "warning",
            )
        )
    if untaught:
        notes.append(
            Note(
                f"{cw.target}: {sum(untaught.values()):,} older records teach it nothing (their area is not "
                f"{cw.target}'s): " + _shown(untaught) + _map_them(cw),
                "warning",
            )
        )
    return Head(cw.target, data, (cw.target,), cw), notes


def _map_them(cw: Crosswalk) -> str:
    if cw.path:
        return f" (map them in {Path(cw.path).name})"
    return f" (no crosswalk to {cw.target}: papertrack crosswalk --to {cw.target!r} proposes one)"


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
