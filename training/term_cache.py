"""Each text's TF-IDF terms worked out once per process, for the sweep's many fits over the same texts.

A sweep fits a fresh ``TfidfVectorizer`` per fold, holdout and taxonomy (~18 fits per feature kind on the shared
data), and each one runs scikit-learn's analyzer (accents, lower case, tokens, stop words, n-grams) over every text
again. :func:`fit_transform` fits such a vectorizer with an ``analyzer`` (scikit-learn's public callable form) that
answers from a cache kept in this process, filled by the vectorizer's own analyzer: the same terms in the same order,
so the same vocabulary, idf and rows bit for bit. Only the sweep's throw-away fold models are fitted this way;
the refit model (the artifact) is fitted by scikit-learn alone.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from sklearn.base import clone
from sklearn.feature_extraction.text import TfidfVectorizer

MAX_TEXTS = 60_000
"""Texts kept per kind of analysis: past it the kind's cache starts again (a process that sweeps many data sets
holds one data set's terms, not every one's)."""

_TERMS: dict[str, dict[str, list[str]]] = {}


class CachedTerms:
    """An ``analyzer`` for scikit-learn's vectorizers: a text's terms from this process's cache (by ``key``, the
    analysis settings), worked out by ``analyze`` the first time. Terms are interned: a vocabulary's look-ups then
    compare them by identity."""

    def __init__(self, analyze: Callable[[str], list[str]], key: str):
        self.analyze = analyze
        self.key = key

    def __call__(self, text: str) -> list[str]:
        cache = _TERMS.setdefault(self.key, {})
        terms = cache.get(text)
        if terms is None:
            if len(cache) >= MAX_TEXTS:
                cache.clear()
            terms = cache[text] = [sys.intern(term) for term in self.analyze(text)]
        return terms


_ANALYSIS = ("analyzer", "ngram_range", "lowercase", "strip_accents", "stop_words", "token_pattern")


def fit_transform(features, texts: list[str], y=None):
    """A fresh copy of the feature step ``features`` fitted on ``texts`` (and ``y``, for a step that reads it), and
    its rows for them (scikit-learn's ``fit_transform``). A ``TfidfVectorizer`` with scikit-learn's own word analysis
    (no callable of the caller's) is fitted on its terms from this process's cache and then given its analysis settings
    back: the fitted step is the one scikit-learn would have fitted (the same vocabulary and idf), and answers new
    texts the usual way."""
    fitted = clone(features)
    params = fitted.get_params() if isinstance(fitted, TfidfVectorizer) else None
    if params is None or params["analyzer"] != "word" or params["preprocessor"] or params["tokenizer"]:
        # word terms only: a text's character n-grams run to thousands (the cache would hold gigabytes)
        return fitted, fitted.fit_transform(texts, y)
    analysis = {name: params[name] for name in _ANALYSIS}
    # the terms come whole from the cache, worked out by an untouched copy's analyzer (scikit-learn's analyzer reads
    # its vectorizer's settings when called); the settings it applies are reset meanwhile, as scikit-learn asks of a
    # callable analyzer (it warns about the ones it would ignore)
    fitted.set_params(
        analyzer=CachedTerms(clone(features).build_analyzer(), repr(tuple(analysis.items()))),
        ngram_range=(1, 1),
        stop_words=None,
        strip_accents=None,
    )
    matrix = fitted.fit_transform(texts)
    fitted.set_params(**analysis)
    return fitted, matrix
