"""What a sweep runs and on what: the candidates (cost budget, the embeddings extra, ensemble members), the
held-out evaluations, and which results may win. Pure: what the user should be told is returned as
:class:`Note`s, which the report prints (:mod:`papertrack.training.report`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from papertrack.errors import UsageError
from papertrack.models.candidates import Candidate
from papertrack.models.catalogue import known, select
from papertrack.training.data import Direction, TrainingSet, shift_directions, temporal_direction
from papertrack.training.results import CandidateResult

MIN_SHIFT_RECORDS = 100  # a source this small is neither a fair test set nor a usable training side
COST_METRIC = "predict_ms_per_abstract"


@dataclass(frozen=True)
class Note:
    """One line for the user: ``level`` is "info", "detail" (shown dim) or "warning" (shown yellow)."""

    text: str
    level: str = "info"
    indent: bool = True


@dataclass
class CandidatePlan:
    candidates: list[Candidate]  # in order: singles, then ensembles (evaluated on the singles' OOF matrices)
    skipped: list[str]  # left out: the embeddings extra is missing
    over_budget: list[str]  # left out of the default sweep by the cost budget
    notes: list[Note] = field(default_factory=list)


@dataclass
class Holdouts:
    """The held-out evaluations of a sweep and which one chooses the champion."""

    temporal: Direction | None
    directions: list[Direction]
    yardstick: str  # printed and logged: what the champion is chosen on, and why that one
    notes: list[Note] = field(default_factory=list)


def plan_candidates(
    names: Sequence[str] | None, budget_ms: float | None = None, extra: Sequence[Candidate] = ()
) -> CandidatePlan:
    """The candidates to run, in order, the ones left out because the embeddings extra is missing, and the
    ones left out by the cost budget. Members of a selected ensemble are added before it (they are
    cross-validated and logged like any candidate). The default sweep leaves out — with a note saying how to
    include them — candidates whose measured cost (``Candidate.expected_ms``) is over ``budget_ms``, and those
    needing the embeddings extra when it is not installed; naming one explicitly runs it (an error when the
    extra is missing). ``extra``: candidates besides the catalogue's (tests, experiments)."""
    from papertrack.features.embeddings import unavailable_reason
    from papertrack.models.embedding_candidates import needs_embeddings

    names = list(names) if names else None
    chosen = select(names, extra)
    candidates = known(extra)
    notes: list[Note] = []
    over_budget: list[str] = []
    if budget_ms is not None and not names:
        over = [c for c in chosen if c.expected_ms > budget_ms]
        if over:
            over_budget = [c.name for c in over]
            notes.append(
                Note(
                    f"over the {budget_ms:g} ms/abstract budget, left out: "
                    + ", ".join(f"{c.name} (~{c.expected_ms:g} ms)" for c in over)
                    + f"; include them with --budget-ms {_round_up(max(c.expected_ms for c in over))} or -c NAME",
                    "detail",
                )
            )
            chosen = [c for c in chosen if c.expected_ms <= budget_ms]
    reason = unavailable_reason()
    unusable: list[str] = []
    if reason:
        unusable = [c.name for c in chosen if needs_embeddings(c)]
        if unusable and names:
            raise UsageError(f"candidate(s) {', '.join(unusable)} need sentence embeddings, but {reason}")
        if unusable:
            notes.append(
                Note(
                    f"Leaving out {len(unusable)} embedding candidate(s) ({', '.join(unusable)}): {reason}",
                    "warning",
                    indent=False,
                )
            )
        chosen = [c for c in chosen if not needs_embeddings(c)]
    planned: dict[str, Candidate] = {}
    for candidate in chosen:
        if candidate.is_ensemble:
            added = [m for m in candidate.members if m not in planned and m not in {c.name for c in chosen}]
            for member in candidate.members:
                if member not in candidates:
                    raise UsageError(f"ensemble {candidate.name!r}: member {member!r} is not a registered candidate")
                planned.setdefault(member, candidates[member])
            if added:
                notes.append(Note(f"ensemble {candidate.name} adds its member(s): {', '.join(added)}"))
        planned[candidate.name] = candidate
    # singles first (in order), then ensembles, which are evaluated on the singles' OOF matrices
    ordered = [c for c in planned.values() if not c.is_ensemble] + [c for c in planned.values() if c.is_ensemble]
    return CandidatePlan(ordered, unusable, over_budget, notes)


def _round_up(ms: float) -> int:
    """The first of 10, 20, 50, 100, 200, 500, ... that is at least ``ms``."""
    scale = 10
    while True:
        for step in (scale, 2 * scale, 5 * scale):
            if step >= ms:
                return step
        scale *= 10


def plan_holdouts(data: TrainingSet, folds: int, shift_with_temporal: bool = False) -> Holdouts:
    """The temporal holdout when the sources span several years (train on the earlier years, test on
    the latest); the cross-venue shift holdout among the sources of all years when there is no temporal holdout
    (with one, only when ``shift_with_temporal``: it then chooses nothing and a venue shift is not a time shift;
    among the earlier years' sources); and the fallback when neither can be made: ``folds``-fold
    cross-validation."""
    counts = {name: int((data.sources == name).sum()) for name in data.source_names}
    notes: list[Note] = []
    temporal, why_not = temporal_direction(data)
    if temporal is not None and (len(temporal.test) < MIN_SHIFT_RECORDS or len(temporal.train) < MIN_SHIFT_RECORDS):
        why_not = (
            f"the latest year has {len(temporal.test):,} records and the earlier years {len(temporal.train):,} "
            f"(fewer than {MIN_SHIFT_RECORDS} on a side)"
        )
        temporal = None
    if temporal is not None:
        notes.append(
            Note(
                f"temporal holdout: train on {' + '.join(temporal.trained_on)} ({len(temporal.train):,} "
                f"records), test on {temporal.heldout} ({len(temporal.test):,}): the champion is chosen on it"
            )
        )
    earlier = temporal.train if temporal is not None else None
    directions = shift_directions(data.sources, earlier)
    if temporal is not None and directions and not shift_with_temporal:
        notes.append(
            Note(
                "no shift holdout (cross-venue): the temporal holdout chooses, and a venue shift is not a time "
                "shift; --shift-holdout adds it",
                "detail",
            )
        )
        directions = []
    small = {
        name: n
        for name, n in counts.items()
        if n < MIN_SHIFT_RECORDS and any(name in (d.heldout, *d.trained_on) for d in directions)
    }
    if directions and small:
        notes.append(
            Note(
                f"no shift holdout: {', '.join(f'{k} has {v:,} records' for k, v in small.items())} "
                f"(fewer than {MIN_SHIFT_RECORDS})",
                "warning",
            )
        )
        directions = []
    elif directions:
        notes.append(
            Note(
                f"shift holdout (cross-venue{', earlier years only' if temporal is not None else ''}): "
                f"{', '.join(d.name for d in directions)}"
                + ("" if temporal is not None else "; the champion is chosen on it")
            )
        )
    if temporal is not None:
        yardstick = f"temporal holdout ({temporal.name})"
    elif directions:
        yardstick = "shift holdout"
        notes.insert(0, Note(f"no temporal holdout: {why_not}; falling back to the shift holdout", "warning"))
    else:
        yardstick = f"{folds}-fold cross-validation"
        notes.insert(
            0,
            Note(
                f"no temporal holdout: {why_not}; no shift holdout "
                f"({'one source' if len(counts) < 2 else 'too few records per source'}): the champion is "
                f"chosen by {folds}-fold cross-validation",
                "warning",
            ),
        )
    return Holdouts(temporal, directions, yardstick, notes)


def within_budget(
    results: Sequence[CandidateResult], budget: float | None
) -> tuple[list[CandidateResult], list[CandidateResult]]:
    """(eligible, over budget): the results whose measured predict cost is within ``budget`` ms per abstract
    (all when there is no budget, or when none is within it)."""
    if budget is None:
        return list(results), []
    eligible = [r for r in results if r.metrics[COST_METRIC] <= budget]
    if not eligible:
        return list(results), []
    return eligible, [r for r in results if r.metrics[COST_METRIC] > budget]
