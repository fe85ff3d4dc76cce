"""Proposing a crosswalk from papers: where the new taxonomy's papers fall in a model of the old one.

``papertrack crosswalk --from "ICML 2024" --to "ICML 2025"`` (:mod:`papertrack.training.crosswalk_command`) fits
the catalogue's ``tfidf-word-logreg`` on the old taxonomy's papers (their own labels), predicts the new
taxonomy's labeled papers, and reads the matrix new label x old label:

* ``counts[n, o]``: how many papers labeled ``n`` have ``o`` as the model's top-1 answer;
* ``shares[n, o]``: the mean probability of ``o`` over the papers labeled ``n`` (each row sums to 1);
* ``lift[n, o]``: ``shares[n, o]`` over the mean probability of ``o`` across all the new papers — how much more
  than an average new paper the papers of ``n`` look like ``o`` (1: no more than any other).

Names: a **kept** name is in both taxonomies (no crosswalk entry: an old name with no entry keeps its name); a
**vanished** name is old only; a **novel** name is new only. Each vanished old name gets targets:

* every novel name with the same subarea under another area ("Miscellaneous Aspects of Machine Learning ·
  Causality" -> "General Machine Learning · Causality"; two area-only names count as the same) whose papers look
  like it at least as much as average (lift >= :data:`NAME_MIN_LIFT`): the names and the papers agree;
* every novel name with lift >= :data:`MIN_LIFT` (2: its papers are at least twice as likely as an average new
  paper to look like the old name) and at least :data:`MIN_TOP1` papers whose top-1 answer is the old name;
* none when neither finds one: the old name is **unmapped** (no new papers fell into it) and written as a
  commented-out suggestion (a novel name with its subarea, else the name with the highest lift), because
  mapping on weaker evidence teaches wrong names; edit it in by hand. Kept names are never targets: the
  papers of a kept name that look like a vanished one are mostly the model's confusion (its top-1 accuracy on
  kept names is about 47% on ICML 2024 -> ICML 2025).

A target's share is its part of the old name's probability mass (``shares[n, o] x papers of n``) among the
targets; a target under :data:`MIN_TARGET_SHARE` is dropped (never the same-subarea one) and the rest
renormalised, then rounded to hundredths that sum to exactly 1 (largest remainder). Relations (per new name):

* **same name**: a kept name;
* **rename**: a novel name that is the only target of exactly one old name, and that old name's only target;
* **merge**: a novel name that is a target of two or more old names;
* **split**: a novel name that takes part of an old name with several targets (the old name is counted once
  among the splits);
* **no old analog** (flagged): a novel name that no vanished old name maps to — typically a new area
  ("Position · ...") whose papers spread over many old names (its top share is low), or a name carved out of a
  kept one ("Deep Learning · Foundation Models" out of "Deep Learning · Large Language Models"), which a
  crosswalk cannot express (an old name that keeps its name maps to itself only).

An entry from an area-only old name to one area-only new name ("Miscellaneous Aspects of Machine Learning:
General Machine Learning") is read by :func:`~papertrack.features.crosswalk.read_crosswalk` as an **area line**:
every old track of that area without an entry of its own becomes "new area · same subarea"; the file says so
beside it and beside each unmapped old name it covers.

HONESTY: the proposal is made from the new taxonomy's own labels; a model trained through it must not be scored
on a temporal holdout of those same papers (the crosswalk has seen their answers).

Pure: data in, :class:`Proposal` out (no printing, no MLflow); ``progress`` receives status lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from papertrack.features.labels import canonical_label, normalise_label
from papertrack.models.hierarchy import LabelSpace

CANDIDATE = "tfidf-word-logreg"  # the model of the old taxonomy (models.catalogue)
MIN_LIFT = 2.0  # a novel name is a target of a vanished old name when its papers look like it this many times more
NAME_MIN_LIFT = 1.0  # ... or when it has the old name's subarea and its papers look like it at least as average
MIN_TOP1 = 2  # ... and when at least this many of its papers have the old name as the top-1 answer
MIN_TARGET_SHARE = 0.1  # a target with less of the old name's mass is dropped (noise)

SAME, RENAME, MERGE, SPLIT, NO_ANALOG = "same name", "rename", "merge", "split", "no old analog"


def canonical(label: str) -> str:
    """A label in its canonical spelling ("Area · Subarea"), as crosswalk files compare names."""
    return canonical_label(label)


@dataclass(frozen=True)
class Entry:
    """One vanished old name and the new names its papers went to (shares sum to 1), or none (unmapped)."""

    old: str
    old_papers: int  # the old taxonomy's papers with this label
    targets: tuple[tuple[str, float], ...]  # (new name, share), largest first; () when unmapped
    by_name: bool = False  # the target was chosen by its subarea's name (rule 1)
    suggestion: str = ""  # unmapped: the new name whose papers look most like it
    suggestion_lift: float = 0.0
    top1: int = 0  # new papers whose top-1 answer is this old name

    @property
    def is_split(self) -> bool:
        return len(self.targets) > 1


@dataclass(frozen=True)
class NewName:
    """One new name: its relation to the old taxonomy and the old names its papers fall into."""

    name: str
    papers: int
    relation: str  # SAME, RENAME, MERGE, SPLIT or NO_ANALOG
    sources: tuple[str, ...]  # the old names mapped to it (crosswalk entries)
    falls_into: tuple[tuple[str, float, int], ...]  # (old name, top-1 share, top-1 count), most top-1 first


@dataclass
class Proposal:
    sources: tuple[str, ...]  # the old taxonomy's sources ("ICML 2024", ...)
    target: str  # the new taxonomy ("ICML 2025")
    seed: int
    old_names: tuple[str, ...]  # columns of the matrices
    new_names: tuple[str, ...]  # rows
    old_papers: np.ndarray  # per old name
    new_papers: np.ndarray  # per new name
    counts: np.ndarray  # (new, old) top-1 counts
    shares: np.ndarray  # (new, old) mean probability; rows sum to 1
    lift: np.ndarray  # (new, old)
    entries: list[Entry]  # one per vanished old name, in old-name order
    names: list[NewName]  # one per new name, in new-name order
    candidate: str = CANDIDATE
    thresholds: dict[str, float] = field(default_factory=dict)

    @property
    def mapped(self) -> list[Entry]:
        return [e for e in self.entries if e.targets]

    @property
    def unmapped(self) -> list[Entry]:
        return [e for e in self.entries if not e.targets]

    def relation_count(self, relation: str) -> int:
        return sum(n.relation == relation for n in self.names)

    def area_lines(self) -> dict[str, str]:
        """Old area -> new area: the entries mapping an area-only name to one area-only name, which a crosswalk
        file reads as an area rename (every old track of the area with no entry of its own follows it)."""
        return {
            e.old: e.targets[0][0]
            for e in self.mapped
            if not e.is_split and _subarea(e.old) is None and _subarea(e.targets[0][0]) is None
        }

    @property
    def splits(self) -> int:
        """Old names spread over several new ones."""
        return sum(e.is_split for e in self.entries)

    def summary(self) -> dict[str, int]:
        return {
            "renames": self.relation_count(RENAME),
            "merges": self.relation_count(MERGE),
            "splits": self.splits,
            "no_analog": self.relation_count(NO_ANALOG),
            "same_name": self.relation_count(SAME),
            "unmapped_old": len(self.unmapped),
        }

    def crosswalk_map(self) -> dict[str, dict[str, float]]:
        """Old name -> {new name: share} for every mapped entry (what the crosswalk file holds)."""
        return {e.old: dict(e.targets) for e in self.mapped}


def propose(
    old_texts: Sequence[str],
    old_labels: Sequence[str],
    new_texts: Sequence[str],
    new_labels: Sequence[str],
    *,
    sources: Sequence[str],
    target: str,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Proposal:
    """Fit the old taxonomy's model on (old_texts, old_labels), predict new_texts, read the relations."""
    from papertrack.models.catalogue import CANDIDATES

    if not old_texts or not new_texts:
        raise ValueError("a crosswalk proposal needs papers of both taxonomies")
    say = progress or (lambda message: None)
    old = [canonical(label) for label in old_labels]
    new = [canonical(label) for label in new_labels]
    space = LabelSpace.from_labels(old)
    say(f"fitting {CANDIDATE} on {len(old):,} papers of {' + '.join(sources)} ({space.n_labels} names)")
    model = CANDIDATES[CANDIDATE].build(space.n_labels, seed).fit(list(old_texts), space.encode(old))
    say(f"predicting the {len(new):,} papers of {target}")
    proba = np.asarray(model.predict_proba(list(new_texts)), dtype=float)
    return relations(proba, old, new, sources=sources, target=target, seed=seed, old_names=space.labels)


def relations(
    proba: np.ndarray,
    old_labels: Sequence[str],
    new_labels: Sequence[str],
    *,
    sources: Sequence[str],
    target: str,
    seed: int = 0,
    old_names: Sequence[str] | None = None,
) -> Proposal:
    """The proposal from the old model's probabilities (rows: the new papers; columns: ``old_names``, default
    the sorted old labels) and the new papers' labels."""
    old_names = tuple(old_names if old_names is not None else sorted(set(old_labels)))
    new_names = tuple(sorted(set(new_labels)))
    index = {name: i for i, name in enumerate(new_names)}
    y = np.array([index[label] for label in new_labels], dtype=np.int64)
    old_index = {name: j for j, name in enumerate(old_names)}
    old_papers = np.bincount([old_index[label] for label in old_labels], minlength=len(old_names))
    new_papers = np.bincount(y, minlength=len(new_names))
    counts = np.zeros((len(new_names), len(old_names)), dtype=np.int64)
    np.add.at(counts, (y, proba.argmax(axis=1)), 1)
    mass = np.zeros((len(new_names), len(old_names)))
    np.add.at(mass, y, proba)
    shares = mass / new_papers[:, None]
    base = proba.mean(axis=0)
    lift = shares / np.where(base > 0, base, np.inf)[None, :]

    kept = set(old_names) & set(new_names)
    novel = np.array([name not in kept for name in new_names])
    entries = [
        _entry(j, name, old_papers[j], counts, mass, lift, new_names, novel)
        for j, name in enumerate(old_names)
        if name not in kept
    ]
    names = _new_names(new_names, new_papers, kept, entries, shares, counts, old_names)
    thresholds = {"min_lift": MIN_LIFT, "name_min_lift": NAME_MIN_LIFT, "min_target_share": MIN_TARGET_SHARE}
    return Proposal(
        tuple(sources),
        target,
        seed,
        old_names,
        new_names,
        old_papers,
        new_papers,
        counts,
        shares,
        lift,
        entries,
        names,
        thresholds=thresholds,
    )


def _subarea(name: str) -> str | None:
    return normalise_label(name, warn=False)[1]


def _entry(
    j: int,
    old: str,
    papers: int,
    counts: np.ndarray,
    mass: np.ndarray,
    lift: np.ndarray,
    new_names: tuple[str, ...],
    novel: np.ndarray,
) -> Entry:
    column = lift[:, j]
    sub = _subarea(old)
    same_sub = np.array([_subarea(n) == sub for n in new_names]) & novel
    by_name = same_sub & (column >= NAME_MIN_LIFT)
    chosen = by_name | (novel & (column >= MIN_LIFT) & (counts[:, j] >= MIN_TOP1))
    top1 = int(counts[:, j].sum())
    if not chosen.any():  # the suggestion: a novel name with its subarea when there is one, else the best lift
        best = int(np.argmax(np.where(same_sub, column, -np.inf))) if same_sub.any() else int(np.argmax(column))
        return Entry(old, int(papers), (), suggestion=new_names[best], suggestion_lift=float(column[best]), top1=top1)
    weights = np.where(chosen, mass[:, j], 0.0)
    weights = weights / weights.sum()
    weights = np.where((weights >= MIN_TARGET_SHARE) | by_name, weights, 0.0)
    order = [int(i) for i in np.argsort(-weights, kind="stable") if weights[i] > 0]
    rounded = round_shares([float(weights[i]) for i in order])
    targets = tuple((new_names[i], share) for i, share in zip(order, rounded) if share > 0)
    return Entry(old, int(papers), targets, by_name=bool(by_name.any()), top1=top1)


def round_shares(shares: Sequence[float], places: int = 2) -> list[float]:
    """``shares`` normalised and rounded to ``places`` decimals that sum to exactly 1 (largest remainder)."""
    total = sum(shares)
    if total <= 0:
        raise ValueError("shares must have a positive sum")
    unit = 10**places
    exact = [s / total * unit for s in shares]
    whole = [math.floor(x) for x in exact]
    for i in sorted(range(len(exact)), key=lambda i: whole[i] - exact[i])[: unit - sum(whole)]:
        whole[i] += 1
    return [w / unit for w in whole]


def _new_names(
    new_names: tuple[str, ...],
    new_papers: np.ndarray,
    kept: set[str],
    entries: list[Entry],
    shares: np.ndarray,
    counts: np.ndarray,
    old_names: tuple[str, ...],
) -> list[NewName]:
    sources: dict[str, list[Entry]] = {}
    for entry in entries:
        for name, _ in entry.targets:
            sources.setdefault(name, []).append(entry)
    out = []
    for i, name in enumerate(new_names):
        mine = sources.get(name, [])
        if name in kept:
            relation = SAME
        elif not mine:
            relation = NO_ANALOG
        elif len(mine) > 1:
            relation = MERGE
        elif mine[0].is_split:
            relation = SPLIT
        else:
            relation = RENAME
        order = np.lexsort((-shares[i], -counts[i]))[:3]  # most top-1 answers first, then mean probability
        falls = tuple((old_names[j], float(counts[i, j] / max(new_papers[i], 1)), int(counts[i, j])) for j in order)
        out.append(NewName(name, int(new_papers[i]), relation, tuple(e.old for e in mine), falls))
    return out
