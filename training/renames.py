"""Taxonomy renames between years: venues rename tracks (2024's "Applications · Genetics, Cell Biology, etc"
is 2025's "Applications · Genetics, Cell Biology, Health, etc"). A model answers in the latest year's
taxonomy, so older examples of a renamed track teach its new name: :class:`RenameMap` maps every old name to
the new one, in training and in every evaluation made from the training set (CV, shift and temporal
holdouts). The built-in map (:data:`DEFAULT_RENAMES`) is extended with ``papertrack train --rename
"OLD=NEW"`` (repeatable; either side in any spelling ``normalise_label`` reads)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from papertrack.errors import UsageError
from papertrack.features.labels import canonical_label

DEFAULT_RENAMES: dict[str, str] = {
    "Applications · Genetics, Cell Biology, etc": "Applications · Genetics, Cell Biology, Health, etc",
}


def _canonical(label: str) -> str:
    return canonical_label(label, warn=True)


@dataclass(frozen=True)
class RenameMap:
    """Old label -> new label (canonical spellings). Chains (a -> b -> c) resolve to the last name."""

    mapping: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_RENAMES))

    @classmethod
    def with_extra(cls, specs: Iterable[str] = (), defaults: bool = True) -> RenameMap:
        """The built-in map (unless ``defaults`` is False) plus ``specs`` written "OLD=NEW"."""
        mapping = {_canonical(k): _canonical(v) for k, v in DEFAULT_RENAMES.items()} if defaults else {}
        for spec in specs:
            old, sep, new = spec.partition("=")
            if not sep or not old.strip() or not new.strip():
                raise UsageError(
                    f"--rename {spec!r}: write it as OLD=NEW, e.g. "
                    f"--rename 'Applications · Genetics, Cell Biology, etc=Applications · Genetics, "
                    f"Cell Biology, Health, etc'"
                )
            try:
                old_label, new_label = _canonical(old), _canonical(new)
            except ValueError as exc:
                raise UsageError(f"--rename {spec!r}: {exc}") from None
            if old_label == new_label:
                raise UsageError(f"--rename {spec!r}: the old and the new name are the same track")
            mapping[old_label] = new_label
        result = cls(mapping)
        for label in mapping:
            result.apply(label)  # a cycle is a UsageError now, not later
        return result

    def apply(self, label: str) -> str:
        """The newest name of ``label`` (itself when it was never renamed)."""
        seen = [label]
        while label in self.mapping:
            label = self.mapping[label]
            if label in seen:
                raise UsageError(f"the rename map has a cycle: {' -> '.join([*seen, label])}")
            seen.append(label)
        return label

    def used(self, labels: Iterable[str]) -> dict[str, str]:
        """The renames that apply to some of ``labels`` (old -> newest name)."""
        present = set(labels)
        return {old: self.apply(old) for old in self.mapping if old in present}

    def describe(self) -> str:
        return "; ".join(f"{old} -> {new}" for old, new in self.mapping.items()) or "none"
