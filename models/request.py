"""THE prediction request, checked once: abstracts, titles, top_k and taxonomy (keyword-only).

Every caller — :meth:`TrackPredictor.predict`, ``papertrack.load().predict``, the MLflow pyfunc, the HTTP service,
the labeler and the Spark engine — builds a :class:`PredictRequest` and gets its answers (or its one
:class:`~papertrack.errors.UsageError`) from :meth:`PredictRequest.answer`; none checks ``top_k`` or the taxonomy
on its own.

* ``taxonomy``: the taxonomy to answer in — its name or one of its sources' names, any letter case
  (:meth:`TrackPredictor.head`); None is the model's default taxonomy. Unknown: a UsageError listing the known ones.
* ``top_k``: 1 to the taxonomy's number of labels; None is :data:`DEFAULT_TOP_K`, clipped to the number of labels
  when the taxonomy has fewer (a valid model with two labels answers with two tracks).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from papertrack.errors import UsageError
from papertrack.features.ingest.columns import did_you_mean
from papertrack.models.answer import DEFAULT_TOP_K, AnswerDict

if TYPE_CHECKING:
    from papertrack.models.artifact import TrackPredictor


class RowError(TypedDict):
    """The answer of a row that could not be answered (``predict_frame(errors="coerce")``): why, naming the row."""

    error: str


ERRORS = ("coerce", "raise")  # predict_frame's ``errors``: a bad row gets a RowError / the whole call fails


def abstract_problem(value: object) -> str | None:
    """Why ``value`` (one row's abstract) cannot be answered — missing (None, NaN, pandas NA), not text, empty —
    else None."""
    if value is None or (isinstance(value, float) and value != value) or type(value).__name__ in ("NAType", "NaTType"):
        return f"no abstract (a missing value: {value})"  # pandas turns None into NaN in a column with NaN
    if isinstance(value, bytes):
        return "abstract is bytes, not text: decode it first"
    if not isinstance(value, str):
        return f"abstract is a {type(value).__name__}, not a string"
    if not value.strip():
        return "empty abstract"
    return None


def missing_column_message(columns: Iterable[object], wanted: str = "abstract") -> str:
    """``input needs an 'abstract' column; got columns ['Abstract']: did you mean "abstract"? ...``"""
    given = list(columns)
    message = f"input needs an {wanted!r} column; got columns {given}"
    near = did_you_mean(wanted, given)
    if near is not None:
        message += f': did you mean "{wanted}"? (rename it: frame.rename(columns={{{near!r}: {wanted!r}}}))'
    return message


class TopKError(UsageError):
    """top_k outside 1..number of labels (``n_labels``: the taxonomy's)."""

    def __init__(self, top_k: object, n_labels: int, taxonomy: str = ""):
        self.top_k, self.n_labels = top_k, n_labels
        where = f" of {taxonomy}" if taxonomy else ""
        super().__init__(f"top_k must be between 1 and {n_labels} (the number of labels{where}), got {top_k}")


def asked_top_k(top_k: int) -> int | None:
    """``top_k`` as given through an interface that fills in :data:`DEFAULT_TOP_K` when none is given (the HTTP
    schema, the pyfunc's signature): that default means "not asked" (None, clipped to a taxonomy with fewer labels by
    :func:`resolve_top_k`)."""
    return None if top_k == DEFAULT_TOP_K else top_k


def resolve_top_k(top_k: int | None, n_labels: int, taxonomy: str = "") -> int:
    """The top_k to answer with: None -> min(DEFAULT_TOP_K, n_labels); else checked to be in 1..n_labels."""
    if top_k is None:
        return min(DEFAULT_TOP_K, n_labels)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= n_labels:
        raise TopKError(top_k, n_labels, taxonomy)
    return top_k


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
        """The answers, each with a ``warning`` when its abstract is mostly outside the training vocabulary."""
        head, top_k = self.checked(predictor)
        answers = head.rank(head.predict_proba(self.abstracts, self.titles), top_k)
        for answer, warning in zip(answers, unfamiliar_text_warnings(predictor, self.abstracts)):
            if warning is not None:
                answer["warning"] = warning
        return answers


FAMILIAR_SHARE = 0.6
"""An answer carries a ``warning`` when less than this share of its abstract's words (the TF-IDF word analyzer's
terms) are in the training vocabulary (the training profile's: terms of at least two training abstracts).
Measured against the 2024 files' vocabulary (docs/serving.md, "Text the model does not know"): every one of
7,714 real 2025 abstracts has at least 0.70 (the lowest 0.1% from 0.72); a Chinese abstract 0.0, German 0.13,
French 0.26, a recipe 0.33, random words 0.13."""


def unfamiliar_text_warnings(predictor: TrackPredictor, abstracts: Sequence[str]) -> list[str | None]:
    """Per abstract, the answer's ``warning`` when less than FAMILIAR_SHARE of its words are in the predictor's
    training vocabulary, else None (every one None for a model without a training profile)."""
    profile = getattr(predictor, "training_profile", None)
    if profile is None:
        return [None] * len(abstracts)
    shares = familiar_shares(abstracts, profile.vocabulary)
    return [unfamiliar_text_warning(share) if share < FAMILIAR_SHARE else None for share in shares]


def familiar_shares(abstracts: Sequence[str], vocabulary: frozenset[str]) -> list[float]:
    """Per abstract, the share of its words in ``vocabulary`` (0.0 for one without a word). The words are the
    TF-IDF word analyzer's terms (accents stripped, lower case, runs of two or more letters, digits or ``_``,
    English stop words out), found with a byte table (ASCII text) or one regular expression: a fraction of the
    prediction's cost."""
    stop_words = _stop_words()
    shares = []
    for text in abstracts:
        if text.isascii():
            words = text.encode("ascii").translate(_ASCII_TABLE).decode("ascii").split()
        else:
            words = _WORD.findall(_ACCENT.sub("", unicodedata.normalize("NFKD", text)).lower())
        terms = [word for word in words if len(word) > 1 and word not in stop_words]
        shares.append(sum(map(vocabulary.__contains__, terms)) / len(terms) if terms else 0.0)
    return shares


_ASCII_TABLE = bytes(ord(chr(i).lower()) if chr(i).isalnum() or chr(i) == "_" else 32 for i in range(256))
_WORD = re.compile(r"\w\w+")  # the analyzer's token pattern
_ACCENT = re.compile("[\u0300-\u036f]")  # combining accents after NFKD: dropped, as strip_accents="unicode"


@functools.cache
def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def unfamiliar_text_warning(share: float) -> str:
    return (
        f"only {share:.0%} of the abstract's words are known to the model (another language, or not an ML "
        "abstract?): the tracks are a guess"
    )
