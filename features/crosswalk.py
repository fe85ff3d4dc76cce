"""Crosswalks: how the track names of one taxonomy map to another's, read from a YAML file.

Venues re-cut their taxonomies (ICML 2025 renamed or re-split about a third of ICML 2024's tracks). A crosswalk
says, for one target taxonomy, what each older name became, so that older papers teach the new names::

    # papertrack crosswalk
    from: ICML 2024              # the taxonomy whose names are on the left (documentation; any older source)
    to: ICML 2025                # the taxonomy the names on the right belong to
    map:
      Miscellaneous Aspects of Machine Learning: General Machine Learning    # an AREA: every track under it
      Applications · Health: Applications · Health / Medicine               # a rename
      Applications · Physics: Applications · Chemistry, Physics, and Earth Sciences   # two old names, one new: a merge
      Social Aspects · Fairness, Equity, Justice and Safety:                # a split, with shares summing to 1
        Social Aspects · Fairness: 0.5
        Social Aspects · Safety: 0.5

Rules (:meth:`Crosswalk.apply`): a track with an entry of its own maps by it; else a track whose area has an
area entry ("Old Area: New Area") becomes "New Area · same subarea" (an area-only label becomes the new area);
else the name is kept as it is. Each mapping is one step (old -> new), so the map cannot chain; a name that is
both mapped and the target of a mapping back to it is a cycle and refused (checked in linear time). Every problem
is a :class:`CrosswalkError` naming the file and line.

A crosswalk is small, plain data, and its cost is bounded before it is built: at most :data:`MAX_BYTES`, nesting at
most :data:`MAX_DEPTH` deep, no YAML anchors or aliases (a 115 KB file of aliases would otherwise expand to millions
of pairs), no control characters or markup (``<``, ``>``) in names.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from papertrack.errors import UsageError
from papertrack.features.labels import canonical_label, format_label, normalise_label

SHARE_TOLERANCE = 0.01
MAX_BYTES = 2 * 1024 * 1024  # a crosswalk of every track of a large taxonomy is ~20 KB
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when PyYAML has it: ~10x faster
MAX_DEPTH = 3  # the file's mapping, 'map', a split's shares
SHIPPED_FOLDER = Path(__file__).with_name("crosswalks")  # the crosswalks for the shared data's known changes


class CrosswalkError(UsageError):
    """A crosswalk file that cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class Crosswalk:
    """Old names -> the target taxonomy's names, each with its share (1.0 for a rename or merge)."""

    target: str  # the taxonomy the new names belong to ("ICML 2025")
    source: str  # the taxonomy the old names come from (documentation: applied to every older record)
    tracks: Mapping[str, tuple[tuple[str, float], ...]]  # canonical old label -> ((new label, share), ...)
    areas: Mapping[str, str] = field(default_factory=dict)  # old area -> new area
    path: str = ""
    lines: Mapping[str, int] = field(default_factory=dict, repr=False)  # old name -> its line in the file

    def apply(self, label: str) -> tuple[tuple[str, float], ...]:
        """The target names of ``label`` (canonical), with shares summing to 1."""
        if label in self.tracks:
            return self.tracks[label]
        area, subarea = normalise_label(label, warn=False)
        if area in self.areas:
            return ((format_label(self.areas[area], subarea), 1.0),)
        return ((label, 1.0),)

    def targets(self) -> set[str]:
        """Every new name a track entry names (area renames name no track of their own)."""
        return {new for pairs in self.tracks.values() for new, _ in pairs}

    def check_names(self, known: Iterable[str]) -> None:
        """A :class:`CrosswalkError` for an old name (track or area) that no record of the data carries."""
        labels = set(known)
        areas = {normalise_label(label, warn=False)[0] for label in labels}
        for old in self.tracks:
            if old not in labels:
                raise CrosswalkError(
                    f"{self.path}:{self.lines.get(old, 0)}: {old!r} is the label of no training record "
                    f"(check its spelling; the data has {len(labels):,} labels, e.g. {_closest(old, labels)!r})"
                )
        for old in self.areas:
            if old not in areas:
                raise CrosswalkError(
                    f"{self.path}:{self.lines.get(old, 0)}: area {old!r} is the area of no training record "
                    f"(areas in the data: {', '.join(sorted(areas))})"
                )

    def describe(self) -> str:
        splits = sum(len(v) > 1 for v in self.tracks.values())
        return (
            f"{Path(self.path).name}: {self.source or 'older names'} -> {self.target} "
            f"({len(self.tracks)} tracks, {len(self.areas)} areas, {splits} splits)"
        )


def _closest(name: str, labels: set[str]) -> str:
    import difflib

    found = difflib.get_close_matches(name, sorted(labels), n=1, cutoff=0.0)
    return found[0] if found else ""


def _canonical(text: object, where: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise CrosswalkError(f"{where}: a track name must be a non-empty string, got {text!r}")
    _plain(text, where, "a track name")
    try:
        return canonical_label(text)
    except ValueError as exc:
        raise CrosswalkError(f"{where}: {text!r}: {exc}") from None


def _plain(text: str, where: str, what: str) -> None:
    """Names are plain text: no control or format characters (newlines, escapes, bidi overrides), no markup."""
    import unicodedata

    bad = next((c for c in text if unicodedata.category(c) in ("Cc", "Cf") or c in "<>"), None)
    if bad is not None:
        raise CrosswalkError(f"{where}: {what} cannot contain {bad!r} (U+{ord(bad):04X}), got {text[:80]!r}")


def _check_events(text: str, path: Path) -> None:
    """Refuse, before anything is built, what would make a small file expensive: anchors and aliases, deep
    nesting. (A streaming pass over the parser's events: constant memory.)"""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_LOADER):
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise CrosswalkError(
                    f"{path}:{line}: YAML anchors and aliases (&name, *name) are not allowed in a crosswalk; "
                    f"write each name out"
                )
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise CrosswalkError(
                        f"{path}:{line}: nested {depth} levels deep; a crosswalk nests at most {MAX_DEPTH} (the "
                        f"file's keys, 'map', a split's shares)"
                    )
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise CrosswalkError(f"{path}{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None


def read_crosswalk(path: str | Path) -> Crosswalk:
    """Read and check one crosswalk file (format and bounds: the module doc)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise CrosswalkError(
                f"{path}: {size:,} bytes; a crosswalk is at most {MAX_BYTES:,} bytes (one line per renamed track)"
            )
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CrosswalkError(f"{path}: cannot read the crosswalk: {exc}") from None
    _check_events(text, path)
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise CrosswalkError(f"{path}{line}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(root, yaml.MappingNode):
        raise CrosswalkError(f"{path}:1: a crosswalk is a mapping with 'from', 'to' and 'map'")
    top = {key.value: value for key, value in root.value}
    unknown = sorted(set(top) - {"from", "to", "map"})
    if unknown:
        raise CrosswalkError(f"{path}: unknown key(s) {', '.join(unknown)}; a crosswalk has 'from', 'to' and 'map'")
    to = top.get("to")
    if not isinstance(to, yaml.ScalarNode) or not str(to.value).strip():
        raise CrosswalkError(f"{path}: 'to' must name the target taxonomy, e.g. 'to: ICML 2025'")
    _plain(str(to.value), f"{path}:{to.start_mark.line + 1}", "a taxonomy name")
    source = top.get("from")
    if isinstance(source, yaml.ScalarNode):
        _plain(str(source.value), f"{path}:{source.start_mark.line + 1}", "a taxonomy name")
    mapping = top.get("map")
    if not isinstance(mapping, yaml.MappingNode) or not mapping.value:
        line = mapping.start_mark.line + 1 if mapping is not None else 1
        raise CrosswalkError(f"{path}:{line}: 'map' must be a mapping of old names to new name(s)")
    tracks: dict[str, tuple[tuple[str, float], ...]] = {}
    areas: dict[str, str] = {}
    lines: dict[str, int] = {}
    for key_node, value_node in mapping.value:
        line = key_node.start_mark.line + 1
        where = f"{path}:{line}"
        old = _canonical(key_node.value, where)
        if old in lines:
            raise CrosswalkError(f"{where}: {old!r} is mapped twice (first on line {lines[old]})")
        lines[old] = line
        old_area, old_sub = normalise_label(old, warn=False)
        if isinstance(value_node, yaml.ScalarNode):
            new = _canonical(value_node.value, where)
            new_area, new_sub = normalise_label(new, warn=False)
            if old_sub is None and new_sub is None:
                areas[old] = new  # an area rename: every track under it
            else:
                tracks[old] = ((new, 1.0),)
        elif isinstance(value_node, yaml.MappingNode):
            pairs = []
            for new_node, share_node in value_node.value:
                at = f"{path}:{new_node.start_mark.line + 1}"
                new = _canonical(new_node.value, at)
                try:
                    share = float(share_node.value)
                except (TypeError, ValueError):
                    raise CrosswalkError(
                        f"{at}: the share of {new!r} must be a number, got {share_node.value!r}"
                    ) from None
                if not math.isfinite(share) or not 0 < share <= 1:
                    raise CrosswalkError(f"{at}: the share of {new!r} must be in (0, 1], got {share_node.value}")
                pairs.append((new, share))
            total = sum(share for _, share in pairs)
            if abs(total - 1.0) > SHARE_TOLERANCE:
                raise CrosswalkError(
                    f"{where}: the shares of {old!r} sum to {total:g}, not 1 "
                    f"({', '.join(f'{n}: {s:g}' for n, s in pairs)})"
                )
            tracks[old] = tuple(pairs)
        else:
            raise CrosswalkError(f"{where}: {old!r} must map to a name or to a mapping of names to shares")
    crosswalk = Crosswalk(
        str(to.value).strip(),
        str(source.value).strip() if isinstance(source, yaml.ScalarNode) else "",
        tracks,
        areas,
        str(path),
        lines,
    )
    _check_cycles(crosswalk)
    return crosswalk


def _check_cycles(crosswalk: Crosswalk) -> None:
    """A name mapped to another that maps back to it (directly or through others) is refused. One depth-first pass
    over the names (each name and mapping visited once: linear in the file's size), iterative (no recursion limit)."""
    edges: dict[str, list[str]] = {
        old: [new for new, _ in pairs if new != old] for old, pairs in crosswalk.tracks.items()
    }  # a name mapped to itself is no cycle
    for old, new in crosswalk.areas.items():
        edges.setdefault(old, []).append(new)
    done: set[str] = set()
    for root in edges:
        if root in done:
            continue
        trail: list[str] = [root]  # the current path; ``on_trail`` is its set
        on_trail = {root}
        pending = [iter(edges.get(root, ()))]
        while pending:
            nxt = next(pending[-1], None)
            if nxt is None:
                pending.pop()
                finished = trail.pop()
                on_trail.discard(finished)
                done.add(finished)
                continue
            if nxt in on_trail:
                cycle = [*trail[trail.index(nxt) :], nxt]
                raise CrosswalkError(
                    f"{crosswalk.path}:{crosswalk.lines.get(nxt, 0)}: the crosswalk has a cycle: "
                    f"{' -> '.join(cycle)} (a crosswalk maps old names to new ones, one step)"
                )
            if nxt not in done:
                trail.append(nxt)
                on_trail.add(nxt)
                pending.append(iter(edges.get(nxt, ())))


BESIDE_PATTERN = "*-to-*.yaml"  # a crosswalk placed beside the labeled data (what `papertrack crosswalk` writes)


def crosswalks_beside(folder: Path) -> list[Path]:
    """The crosswalk files placed in a data folder (:data:`BESIDE_PATTERN`), sorted by name."""
    return sorted(p for p in Path(folder).glob(BESIDE_PATTERN) if p.is_file())


def shipped_crosswalks() -> list[Path]:
    """The crosswalks papertrack ships for the shared data's known changes (data files in features/crosswalks)."""
    return sorted(SHIPPED_FOLDER.glob("*.yaml"))
