"""The sweep's fold fits read each text's TF-IDF terms from a per-process cache: the fitted vectorizer is the one
scikit-learn fits on its own (vocabulary, idf, rows, settings), for every feature kind of the catalogue."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from papertrack.features.text import tfidf
from papertrack.models.fast_predict import tfidf_rows
from papertrack.training import term_cache
from tests.synthetic_corpus import corpus

# accents, capitals, stop words and repeated bigrams: what the analysis settings act on
TRICKY = [
    "Café Naïve Bayes for GRAPH neural networks: the graph neural networks of the café.",
    "Graph neural networks and naive bayes; Über-robust training of graph neural networks.",
    "The the the AND of of: ﬁne-tuning (a ligature) of large language models, large language models again.",
]


def _texts() -> list[str]:
    texts, _ = corpus(per_label=10, seed=5)
    return TRICKY + list(texts)


@pytest.mark.parametrize("kind", ["word", "word12", "char"])
def test_a_vectorizer_fitted_on_cached_terms_is_the_one_scikit_learn_fits(kind):
    texts = _texts()
    train, unseen = texts[: len(texts) * 2 // 3], texts[len(texts) * 2 // 3 :]
    expected = tfidf(kind)
    expected_rows = expected.fit_transform(train)
    for _ in range(2):  # the second fit reads every term from the cache
        fitted, rows = term_cache.fit_transform(tfidf(kind), train)
        assert fitted.vocabulary_ == expected.vocabulary_
        np.testing.assert_array_equal(fitted.idf_, expected.idf_)
        assert rows.dtype == expected_rows.dtype
        assert (rows != expected_rows).nnz == 0
        assert fitted.get_params() == expected.get_params()  # its own analysis settings back: not a callable
        (new_rows,) = tfidf_rows([fitted], unseen)
        assert (new_rows != expected.transform(unseen)).nnz == 0


def test_each_word_analysis_has_its_own_cache_entries_and_character_n_grams_none(monkeypatch):
    monkeypatch.setattr(term_cache, "_TERMS", {})
    texts = _texts()
    word, _ = term_cache.fit_transform(tfidf("word"), texts)
    word12, _ = term_cache.fit_transform(tfidf("word12"), texts)
    assert any(" " in term for term in word12.vocabulary_)
    assert not any(" " in term for term in word.vocabulary_)
    assert len(term_cache._TERMS) == 2
    term_cache.fit_transform(tfidf("char"), texts)  # thousands of n-grams a text: not kept
    assert len(term_cache._TERMS) == 2


def test_the_cache_starts_again_past_its_size(monkeypatch):
    monkeypatch.setattr(term_cache, "MAX_TEXTS", 5)
    monkeypatch.setattr(term_cache, "_TERMS", {})
    texts = _texts()[:12]
    fitted, _ = term_cache.fit_transform(tfidf("word"), texts)
    (cache,) = term_cache._TERMS.values()
    assert 0 < len(cache) <= 5
    assert fitted.vocabulary_ == tfidf("word").fit(texts).vocabulary_


def test_a_vectorizer_with_its_own_analyzer_is_fitted_as_it_is():
    def analyzer(text: str) -> list[str]:
        return text.lower().split()[:3]

    texts = _texts()
    fitted, rows = term_cache.fit_transform(TfidfVectorizer(analyzer=analyzer), texts)
    assert fitted.analyzer is analyzer
    assert (rows != TfidfVectorizer(analyzer=analyzer).fit_transform(texts)).nnz == 0
