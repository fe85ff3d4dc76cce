"""THE prediction request, checked once: abstracts, titles, top_k and taxonomy (keyword-only).

Every caller — :meth:`TrackPredictor.predict`, ``papertrack.load().predict``, the MLflow pyfunc, the HTTP service,
the labeler and the Spark engine — builds a :class:`PredictRequest` and gets its answers (or its one
:class:`~papertrack.errors.UsageError`) from :meth:`PredictRequest.answer`; none checks ``top_k`` or the taxonomy
on its own.

* ``taxonomy``: the taxonomy to answer in — its name or one of its sources' names, any letter case
  (:meth:`TrackPredictor.head`); None is the model's default taxonomy. Unknown: a UsageError listing the known ones.
* ``top_k``: 1 to the taxonomy's number of labels; None is :data:`DEFAULT_TOP_K`, clipped to the number of labels
  when the taxonomy has fewer (a valid model with two labels answers with two tracks; :func:`clipped_top_k` lets a
  caller say so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from papertrack.errors import UsageError
from papertrack.models.answer import DEFAULT_TOP_K, AnswerDict

if TYPE_CHECKING:
    from papertrack.models.artifact import TrackPredictor


class TopKError(UsageError):
    """top_k outside 1..number of labels (``n_labels``: the taxonomy's)."""

    def __init__(self, top_k: object, n_labels: int, taxonomy: str = ""):
        self.top_k, self.n_labels = top_k, n_labels
        where = f" of {taxonomy}" if taxonomy else ""
        super().__init__(f"top_k must be between 1 and {n_labels} (the number of labels{where}), got {top_k}")


def resolve_top_k(top_k: int | None, n_labels: int, taxonomy: str = "") -> int:
    """The top_k to answer with: None -> min(DEFAULT_TOP_K, n_labels); else checked to be in 1..n_labels."""
    if top_k is None:
        return min(DEFAULT_TOP_K, n_labels)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= n_labels:
        raise TopKError(top_k, n_labels, taxonomy)
    return top_k


def clipped_top_k(predictor: TrackPredictor, taxonomy: str | None = None) -> tuple[int, str]:
    """(the default top_k for ``taxonomy``, a one-line note when it is below DEFAULT_TOP_K, else "")."""
    head = predictor.head(taxonomy)
    k = resolve_top_k(None, head.space.n_labels)
    note = (
        f"the model knows {head.space.n_labels} labels{' in ' + head.taxonomy if head.taxonomy else ''}: "
        f"answering with top {k} instead of {DEFAULT_TOP_K}"
        if k < DEFAULT_TOP_K
        else ""
    )
    return k, note


@dataclass(frozen=True, kw_only=True)
class PredictRequest:
    abstracts: Sequence[str]
    titles: Sequence[str | None] | None = None
    top_k: int | None = None
    taxonomy: str | None = None

    def checked(self, predictor: TrackPredictor) -> tuple[TrackPredictor, int]:
        """(the predictor of the asked taxonomy, the top_k to answer with); a UsageError when either is wrong."""
        if self.titles is not None and len(self.titles) != len(self.abstracts):
            raise UsageError(f"{len(self.abstracts)} abstracts but {len(self.titles)} titles")
        head = predictor.head(self.taxonomy)
        return head, resolve_top_k(self.top_k, head.space.n_labels, head.taxonomy)

    def answer(self, predictor: TrackPredictor) -> list[AnswerDict]:
        head, top_k = self.checked(predictor)
        return head.rank(head.predict_proba(self.abstracts, self.titles), top_k)
