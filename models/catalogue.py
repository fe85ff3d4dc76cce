"""The candidate catalogue: every family of the sweep, listed here and nowhere else.

``CANDIDATES`` is built once, explicitly, from the TF-IDF candidates (and the majority baseline), the
sentence-embedding candidates and the ensembles over them — no module registers itself on import — and is read-only.
More candidates (tests, experiments) are passed explicitly where they are used: :func:`known` (the catalogue and
them, a fresh mapping), ``select(names, extra)``, ``SweepConfig(extra_candidates=...)``; :func:`ensemble_candidate`
declares an ensemble over known members by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from papertrack.errors import UsageError
from papertrack.models.candidates import Candidate, majority_candidate, tfidf_candidates
from papertrack.models.embedding_candidates import embedding_candidates
from papertrack.models.ensemble import ensemble_candidates, ensemble_of


def _catalogue() -> dict[str, Candidate]:
    singles = [*tfidf_candidates(), majority_candidate(), *embedding_candidates()]
    by_name: dict[str, Candidate] = {}
    for candidate in [*singles, *ensemble_candidates({c.name: c for c in singles})]:
        if candidate.name in by_name:
            raise UsageError(f"candidate {candidate.name!r} is declared twice")
        by_name[candidate.name] = candidate
    return by_name


CANDIDATES: Mapping[str, Candidate] = MappingProxyType(_catalogue())


def known(extra: Sequence[Candidate] = ()) -> Mapping[str, Candidate]:
    """The catalogue and ``extra`` candidates (their names must be new), read-only; a new mapping each time."""
    by_name = dict(CANDIDATES)
    for candidate in extra:
        if candidate.name in by_name:
            raise UsageError(f"candidate {candidate.name!r} is registered twice")
        by_name[candidate.name] = candidate
    return MappingProxyType(by_name)


def ensemble_candidate(name: str, members: Sequence[str], extra: Sequence[Candidate] = (), **options) -> Candidate:
    """An ensemble of the candidates named ``members``, from the catalogue and ``extra`` (options: see
    :func:`ensemble_of`)."""
    candidates = known(extra)
    missing = [m for m in members if m not in candidates]
    if missing:
        raise UsageError(f"ensemble {name!r}: member(s) {', '.join(missing)} are not registered candidates")
    return ensemble_of(name, [candidates[m] for m in members], **options)


def default_sweep() -> list[Candidate]:
    return [c for c in CANDIDATES.values() if c.default]


def select(names: list[str] | None, extra: Sequence[Candidate] = ()) -> list[Candidate]:
    """The candidates named ``names`` (from the catalogue and ``extra``), else the default sweep."""
    if not names:
        return default_sweep()
    candidates = known(extra)
    unknown = [n for n in names if n not in candidates]
    if unknown:
        raise UsageError(f"unknown candidate(s) {', '.join(unknown)}; known: {', '.join(candidates)}")
    return [candidates[n] for n in names]
