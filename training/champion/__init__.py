"""The champion rule, in one place: which model serves.

* :mod:`.selection` — which candidate of a sweep wins (the best on the selection holdout, unless a much cheaper one
  is within noise of it: the cost rule, a paired bootstrap on the same rows). Pure: no MLflow.
* :mod:`.promotion` — whether that winner replaces the registered champion: the sanity checks, the re-scored
  challenge when the data changed, the cost rule against the champion on the same data, and the plain gate
  (primary metric, then tie-breaker, on the same data digest). :func:`.promotion.promotion_rule` composes them into
  the one decision :func:`papertrack.registry.register` is given; the registry itself only reads and writes
  versions, aliases and tags.
"""

from papertrack.training.champion.selection import (
    BOOTSTRAP_SAMPLES,
    CONFIDENCE,
    COST_FACTOR,
    TAG,
    ChampionChoice,
    Comparison,
    Contender,
    choose_champion,
    paired_bootstrap,
)

__all__ = [
    "BOOTSTRAP_SAMPLES",
    "CONFIDENCE",
    "COST_FACTOR",
    "TAG",
    "ChampionChoice",
    "Comparison",
    "Contender",
    "choose_champion",
    "paired_bootstrap",
]
