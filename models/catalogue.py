"""The candidate catalogue: every family of the sweep, listed here and nowhere else.

``CANDIDATES`` is built once, explicitly, from the TF-IDF candidates (and the majority baseline), the
sentence-embedding candidates and the ensembles over them — no module registers itself on import.
:func:`register` adds a candidate afterwards (tests, experiments); :func:`ensemble_candidate`
declares an ensemble over catalogue members by name.
"""

from __future__ import annotations

from collections.abc import Sequence

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


CANDIDATES: dict[str, Candidate] = _catalogue()


def register(candidate: Candidate) -> Candidate:
    """Add a candidate to the catalogue (its name must be new)."""
    if candidate.name in CANDIDATES:
        raise UsageError(f"candidate {candidate.name!r} is registered twice")
    CANDIDATES[candidate.name] = candidate
    return candidate


def ensemble_candidate(name: str, members: Sequence[str], **options) -> Candidate:
    """An ensemble of catalogue candidates named ``members`` (options: see :func:`ensemble_of`)."""
    missing = [m for m in members if m not in CANDIDATES]
    if missing:
        raise UsageError(f"ensemble {name!r}: member(s) {', '.join(missing)} are not registered candidates")
    return ensemble_of(name, [CANDIDATES[m] for m in members], **options)


def default_sweep() -> list[Candidate]:
    return [c for c in CANDIDATES.values() if c.default]


def select(names: list[str] | None) -> list[Candidate]:
    if not names:
        return default_sweep()
    unknown = [n for n in names if n not in CANDIDATES]
    if unknown:
        raise UsageError(f"unknown candidate(s) {', '.join(unknown)}; known: {', '.join(CANDIDATES)}")
    return [CANDIDATES[n] for n in names]
