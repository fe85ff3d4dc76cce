"""Which candidate of a sweep wins: the best candidate on the selection holdout, unless a much cheaper one is
within noise of it.

Candidates are ranked by the primary metric (label top-3 on the shift holdout; cross-validated
when the data has one source). A candidate whose predict cost per abstract is more than
:data:`COST_FACTOR` times that of a cheaper contender must beat it by more than the 95% paired
bootstrap interval of the difference on the same holdout rows (the whole interval above 0), else
the cheaper one wins. The rule is applied again from the new leader until no cheaper contender
is left to challenge it; the contender is the best-ranked of those that cost less than
1/:data:`COST_FACTOR` as much (the majority baseline is never one). Pure: no MLflow, no printing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

COST_FACTOR = 5.0
CONFIDENCE = 0.95
BOOTSTRAP_SAMPLES = 2000
TAG = "champion_rule"  # prefix of the model-version tags that record the decision


@dataclass(frozen=True)
class Contender:
    name: str
    score: float  # the primary metric on the selection holdout
    tiebreak: float
    cost_ms: float  # predict cost per abstract
    hits: np.ndarray  # per holdout row: 1.0 when the true label is in the top 3, else 0.0
    baseline: bool = False  # a floor to beat, never a cheaper alternative


@dataclass(frozen=True)
class Comparison:
    expensive: str
    cheap: str
    difference: float  # expensive - cheap, on the primary metric over the holdout rows
    low: float
    high: float
    cost_ratio: float

    @property
    def expensive_wins(self) -> bool:
        return self.low > 0.0


@dataclass(frozen=True)
class ChampionChoice:
    winner: str
    leader: str  # the best-ranked candidate before the cost rule
    metric: str
    reason: str  # one line, printed and stored
    comparisons: tuple[Comparison, ...] = ()

    def tags(self) -> dict[str, str]:
        """Model-version / run tags recording the decision and its numbers."""
        tags = {
            TAG: self.reason,
            f"{TAG}.metric": self.metric,
            f"{TAG}.leader": self.leader,
            f"{TAG}.winner": self.winner,
        }
        if self.comparisons:
            last = self.comparisons[-1]
            tags.update(
                {
                    f"{TAG}.compared_with": last.cheap if last.expensive_wins else last.expensive,
                    f"{TAG}.difference": f"{last.difference:+.4f}",
                    f"{TAG}.interval": f"[{last.low:+.4f}, {last.high:+.4f}]",
                    f"{TAG}.cost_ratio": f"{last.cost_ratio:.1f}",
                }
            )
        return tags


def paired_bootstrap(
    a: np.ndarray, b: np.ndarray, samples: int = BOOTSTRAP_SAMPLES, confidence: float = CONFIDENCE, seed: int = 0
) -> tuple[float, float, float]:
    """mean(a - b) and its percentile bootstrap interval, resampling rows (pairs) with replacement."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.ndim != 1 or len(d) == 0:
        raise ValueError("paired_bootstrap needs two equally long, non-empty 1-d arrays")
    rng = np.random.default_rng(seed)
    means = np.concatenate(
        [d[rng.integers(0, len(d), (min(250, samples - i), len(d)))].mean(axis=1) for i in range(0, samples, 250)]
    )
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(d.mean()), float(low), float(high)


def choose_champion(
    contenders: Sequence[Contender], metric: str, cost_factor: float = COST_FACTOR, seed: int = 0
) -> ChampionChoice:
    if not contenders:
        raise ValueError("no candidate to choose from")
    ranked = sorted(contenders, key=lambda c: (round(c.score, 6), round(c.tiebreak, 6)), reverse=True)
    current = ranked[0]
    comparisons: list[Comparison] = []
    steps: list[str] = []
    while True:
        cheaper = [c for c in ranked if c.cost_ms * cost_factor < current.cost_ms and not c.baseline]
        if not cheaper:
            break
        rival = cheaper[0]
        ratio = current.cost_ms / max(rival.cost_ms, 1e-9)
        diff, low, high = paired_bootstrap(current.hits, rival.hits, seed=seed)
        comparison = Comparison(current.name, rival.name, diff, low, high, ratio)
        comparisons.append(comparison)
        numbers = f"{diff:+.3f} [{low:+.3f}, {high:+.3f}]"
        if comparison.expensive_wins:
            steps.append(f"{numbers} over the {ratio:.0f}x cheaper {rival.name}")
            break
        steps.append(
            f"{current.name} ({current.score:.3f}) is within noise of the {ratio:.0f}x faster {rival.name}: {numbers}"
        )
        current = rival
    if steps:
        reason = f"{current.name} ({metric} {current.score:.3f}): " + "; ".join(steps) + " (95% paired bootstrap)"
    else:
        reason = f"{current.name}: best {metric} {current.score:.3f}; no contender is {cost_factor:g}x cheaper"
    return ChampionChoice(current.name, ranked[0].name, metric, reason, tuple(comparisons))
