"""Prediction of fitted TF-IDF classifiers without scikit-learn's per-call overhead, same numbers.

scikit-learn validates its input on every call (``check_array``, the dataframe checks of narwhals, the
array-API namespace look-ups) and every TF-IDF vectorizer tokenises each text again: for one abstract
that overhead is most of a prediction of ``ensemble-tfidf``, and for a batch the tokenising is. Here:

- :func:`tfidf_rows` turns texts into the rows of several fitted word-level ``TfidfVectorizer`` s at once:
  one preprocessing and tokenising pass per text for all of them when their text settings agree (the
  word and word-1/2-gram features of the default sweep), each vocabulary counted from the same tokens;
  the TF-IDF weighting then takes scikit-learn's own steps, in its order (sublinear tf, idf, L2 rows).
- :func:`classifier_proba` (multinomial logistic regression) and :func:`calibration_scores` (the linear SVM
  and complement naive Bayes inside ``TemperatureScaled``) compute on those rows the arithmetic
  scikit-learn does for the classifiers the sweep fits, skipping the checks only.

Anything else (another vectorizer or classifier, non-string input, a binary problem) goes through
scikit-learn itself. Nothing here is pickled: the vocabulary indexes are built on first use and held
in a cache keyed by the fitted vectorizer. ``tests/models/test_fast_predict.py`` checks that the answers equal
scikit-learn's own path.
"""

from __future__ import annotations

import unicodedata
import weakref
from collections.abc import Sequence
from itertools import repeat

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import ComplementNB
from sklearn.svm import LinearSVC
from sklearn.utils.extmath import softmax as sklearn_softmax
from sklearn.utils.sparsefuncs_fast import inplace_csr_row_normalize_l2

# --------------------------------------------------------------------------- features


DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"  # tokens never hold a space: a vocabulary term with one is a bigram


class _VocabularyIndex:
    """A fitted word-level vectorizer's vocabulary, arranged to count many texts' tokens with numpy:
    every word that occurs in a term gets an id; ``unigram_column[id]`` is its column (-1: none; the
    last entry answers the id -1 of an unknown word) and a bigram is found by its key ``first * n_words +
    second`` in the sorted ``bigram_keys``."""

    def __init__(self, vectorizer: TfidfVectorizer):
        self.vocabulary = vectorizer.vocabulary_  # held to notice a refit (a new dict)
        self.idf = vectorizer.idf_ if vectorizer.use_idf else None
        self.n_features = len(self.vocabulary)
        self.word_id: dict[str, int] = {}
        unigrams: list[tuple[int, int]] = []
        bigrams: list[tuple[int, int, int]] = []
        for term, column in self.vocabulary.items():
            first, _, second = term.partition(" ")
            a = self.word_id.setdefault(first, len(self.word_id))
            if second:
                bigrams.append((a, self.word_id.setdefault(second, len(self.word_id)), int(column)))
            else:
                unigrams.append((a, int(column)))
        self.n_words = n_words = len(self.word_id)
        self.unigram_column = np.full(n_words + 1, -1, dtype=np.int64)
        for word, column in unigrams:
            self.unigram_column[word] = column
        pairs = np.array(bigrams, dtype=np.int64).reshape(-1, 3)
        keys = pairs[:, 0] * n_words + pairs[:, 1]
        order = np.argsort(keys)
        self.bigram_keys, self.bigram_column = keys[order], pairs[order, 2]
        # the text settings that decide the tokens: vectorizers that agree share one tokenising pass
        self.text_key = (vectorizer.lowercase, repr(vectorizer.strip_accents), _stop_key(vectorizer.stop_words))
        self.preprocess = _preprocessor(vectorizer)
        self.ascii_table = ascii_table(vectorizer)
        self.tokenize = vectorizer.build_tokenizer()
        stop_words = vectorizer.get_stop_words()
        self.stop_words = frozenset(stop_words) if stop_words is not None else None
        self.sublinear_tf = vectorizer.sublinear_tf
        self.norm = vectorizer.norm
        self.dtype = vectorizer.dtype

    def current_for(self, vectorizer: TfidfVectorizer) -> bool:
        return vectorizer.vocabulary_ is self.vocabulary and (
            self.idf is None or getattr(vectorizer, "idf_", None) is self.idf
        )

    def counts(self, ids: np.ndarray, token_doc: np.ndarray, n_docs: int) -> sparse.csr_matrix:
        """The count matrix of ``n_docs`` texts whose tokens (stop words dropped), one after the other,
        have this vocabulary's word ids ``ids`` (-1: a word of no term), text ``token_doc[i]`` holding token
        i: float counts, columns sorted in each row."""
        columns = self.unigram_column[ids]
        found = columns >= 0
        rows, columns = token_doc[found], columns[found]
        if len(self.bigram_keys) and len(ids) > 1:
            first, second = ids[:-1], ids[1:]
            pair = (first >= 0) & (second >= 0) & (token_doc[:-1] == token_doc[1:])
            keys = first[pair] * self.n_words + second[pair]
            at = np.minimum(np.searchsorted(self.bigram_keys, keys), len(self.bigram_keys) - 1)
            known = self.bigram_keys[at] == keys
            rows = np.concatenate([rows, token_doc[:-1][pair][known]])
            columns = np.concatenate([columns, self.bigram_column[at[known]]])
        cells, counts = np.unique(rows * self.n_features + columns, return_counts=True)
        indptr = np.zeros(n_docs + 1, dtype=np.int64)
        np.cumsum(np.bincount(cells // self.n_features, minlength=n_docs), out=indptr[1:])
        index_dtype = np.int32 if len(cells) <= np.iinfo(np.int32).max else np.int64
        return sparse.csr_matrix(
            (
                counts.astype(self.dtype),
                (cells % self.n_features).astype(index_dtype),
                indptr.astype(index_dtype),
            ),
            shape=(n_docs, self.n_features),
        )


class _CombiningMarks(dict):
    """``str.translate`` table deleting the combining characters (filled as characters are met)."""

    def __missing__(self, code: int) -> int | None:
        value = None if unicodedata.combining(chr(code)) else code
        self[code] = value
        return value


_COMBINING = _CombiningMarks()


def _strip_accents_unicode(text: str) -> str:
    """sklearn's ``strip_accents_unicode`` (NFKD, combining characters dropped), without its per-character
    Python loop."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKD", text).translate(_COMBINING)


def _preprocessor(vectorizer: TfidfVectorizer):
    if vectorizer.strip_accents == "unicode":
        return (lambda text: _strip_accents_unicode(text.lower())) if vectorizer.lowercase else _strip_accents_unicode
    return vectorizer.build_preprocessor()


def ascii_table(vectorizer: TfidfVectorizer) -> bytes | None:
    """The bytes.translate table that tokenises an ASCII text like the vectorizer (see _TokenGroup), or
    None when its preprocessing could change an ASCII text otherwise than by lowercasing."""
    if vectorizer.strip_accents not in (None, "unicode", "ascii"):  # NFKD and accent stripping keep ASCII as is
        return None
    lower = vectorizer.lowercase
    word = [chr(code).isalnum() or chr(code) == "_" for code in range(128)]
    return bytes(
        (ord(chr(code).lower()) if lower else code) if code < 128 and word[code] else ord(" ") for code in range(256)
    )


def _stop_key(stop_words) -> object:
    if stop_words is None or isinstance(stop_words, str):
        return stop_words
    return tuple(sorted(stop_words))


_INDEXES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _eligible(vectorizer) -> bool:
    """A fitted TfidfVectorizer whose analysis this module reproduces exactly."""
    return (
        type(vectorizer) is TfidfVectorizer
        and vectorizer.analyzer == "word"
        and vectorizer.input == "content"
        and vectorizer.preprocessor is None
        and vectorizer.tokenizer is None
        and vectorizer.token_pattern == DEFAULT_TOKEN_PATTERN
        and tuple(vectorizer.ngram_range) in ((1, 1), (1, 2))
        and not vectorizer.binary
        and vectorizer.norm in ("l2", None)
        and hasattr(vectorizer, "vocabulary_")
        and (not vectorizer.use_idf or hasattr(vectorizer, "idf_"))  # fitted: the public idf_ (never _tfidf)
        and np.dtype(vectorizer.dtype) in (np.float64, np.float32)
    )


def _index(vectorizer) -> _VocabularyIndex | None:
    if not _eligible(vectorizer):
        return None
    index = _INDEXES.get(vectorizer)
    if index is None or not index.current_for(vectorizer):
        index = _INDEXES[vectorizer] = _VocabularyIndex(vectorizer)
    return index


STOP_WORD = -2  # a token's id in a _TokenGroup's table: dropped before n-grams are formed


class _TokenGroup:
    """Vectorizers with the same text settings, tokenised once: one table gives every token its id among
    the words of all their vocabularies (-1: none of them; STOP_WORD), ``local[k][id]`` its id in
    vectorizer k's own table."""

    def __init__(self, indexes: list[_VocabularyIndex]):
        self.indexes = indexes
        self.word_id: dict[str, int] = {}
        for index in indexes:
            for word in index.word_id:
                self.word_id.setdefault(word, len(self.word_id))
        self.local = []
        for index in indexes:
            local = np.full(len(self.word_id) + 1, -1, dtype=np.int64)  # the last entry answers the id -1
            for word, own in index.word_id.items():
                local[self.word_id[word]] = own
            self.local.append(local)
        for word in indexes[0].stop_words or ():
            self.word_id[word] = STOP_WORD  # never a vocabulary word: stop words are dropped before counting
        # An ASCII text's tokens are its runs of ASCII word characters ([A-Za-z0-9_]): bytes.translate turns
        # every other character into a space (and lowercases, when the vectorizers do) and split() cuts there;
        # the runs of one character the token pattern skips are dropped like stop words. ~4x faster than the
        # regular expression, for the same tokens.
        self.ascii_table = indexes[0].ascii_table
        if self.ascii_table is not None:
            self.ascii_word_id = {word.encode("ascii"): i for word, i in self.word_id.items() if word.isascii()}
            for code in range(128):
                if self.ascii_table[code] != ord(" "):
                    self.ascii_word_id.setdefault(bytes([self.ascii_table[code]]), STOP_WORD)

    def tokens(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Every text's token ids, stop words dropped, and the text each is from (a text's tokens in order,
        one after the other; the ASCII texts' first)."""
        first = self.indexes[0]
        preprocess, tokenize, table = first.preprocess, first.tokenize, self.ascii_table
        ascii_tokens: list[bytes] = []
        tokens: list[str] = []
        ascii_lengths = np.zeros(len(texts), dtype=np.int64)
        lengths = np.zeros(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            if table is not None and text.isascii():
                words = text.encode("ascii").translate(table).split()
                ascii_tokens += words
                ascii_lengths[i] = len(words)
            else:
                words = tokenize(preprocess(text))
                tokens += words
                lengths[i] = len(words)
        ids = np.concatenate(
            [
                np.fromiter(map(self.ascii_word_id.get, ascii_tokens, repeat(-1)), np.int64, len(ascii_tokens)),
                np.fromiter(map(self.word_id.get, tokens, repeat(-1)), np.int64, len(tokens)),
            ]
            if ascii_tokens
            else [np.fromiter(map(self.word_id.get, tokens, repeat(-1)), np.int64, len(tokens))]
        )
        docs = np.arange(len(texts), dtype=np.int64)
        token_doc = np.concatenate([np.repeat(docs, ascii_lengths), np.repeat(docs, lengths)])
        kept = ids != STOP_WORD
        return ids[kept], token_doc[kept]


_GROUPS: dict[tuple[int, ...], _TokenGroup] = {}


def _group(indexes: list[_VocabularyIndex]) -> _TokenGroup:
    key = tuple(id(index) for index in indexes)
    group = _GROUPS.get(key)
    if group is None or any(a is not b for a, b in zip(group.indexes, indexes)):
        if len(_GROUPS) >= 16:  # models come and go (tests, sweeps): keep the latest few
            _GROUPS.pop(next(iter(_GROUPS)))
        group = _GROUPS[key] = _TokenGroup(indexes)
    return group


def tfidf_rows(steps: Sequence, texts: Sequence[str]) -> list:
    """Each fitted feature step's ``transform(texts)``: the eligible TF-IDF vectorizers computed here
    (texts tokenised once per group of vectorizers with the same text settings), the others by their
    own ``transform``."""
    texts = list(texts)
    indexes = [_index(step) for step in steps]
    if not all(isinstance(text, str) for text in texts):
        indexes = [None] * len(steps)
    out: list = [None] * len(steps)
    groups: dict[tuple, list[tuple[int, _VocabularyIndex]]] = {}
    for i, (step, index) in enumerate(zip(steps, indexes)):
        if index is None:
            out[i] = step.transform(texts)
        else:
            groups.setdefault(index.text_key, []).append((i, index))
    for members in groups.values():
        group = _group([index for _, index in members])
        ids, token_doc = group.tokens(texts)
        for (i, index), local in zip(members, group.local):
            out[i] = _tfidf(index, index.counts(local[ids], token_doc, len(texts)))
    return out


def _tfidf(index: _VocabularyIndex, matrix: sparse.csr_matrix) -> sparse.csr_matrix:
    """scikit-learn's TfidfTransformer.transform, step for step, on a count matrix (in place)."""
    data = matrix.data
    if index.sublinear_tf:
        np.log(data, data)
        data += 1.0
    if index.idf is not None:
        data *= index.idf[matrix.indices]
    if index.norm == "l2":
        inplace_csr_row_normalize_l2(matrix)
    return matrix


# --------------------------------------------------------------------------- classifiers


def classifier_proba(classifier, matrix) -> np.ndarray:
    """``classifier.predict_proba(matrix)``; a multinomial LogisticRegression on sparse rows is computed
    here without the per-call checks, any other classifier is asked itself."""
    if type(classifier) is LogisticRegression and len(classifier.classes_) > 2 and _is_csr(matrix):
        return sklearn_softmax(_linear_scores(classifier, matrix), copy=False)
    return classifier.predict_proba(matrix)


def calibration_scores(model, matrix) -> np.ndarray | None:
    """What :class:`~papertrack.models.estimators.TemperatureScaled` scales, for sparse rows: a LinearSVC's
    decision values (two columns for two classes) or a ComplementNB's log-probabilities, computed without
    the per-call checks; None for any other model or input (the caller then asks the model itself)."""
    if not _is_csr(matrix):
        return None
    if type(model) is LinearSVC:
        scores = _linear_scores(model, matrix)
        return np.column_stack([-scores, scores]) if scores.ndim == 1 else scores
    if type(model) is ComplementNB:  # _BaseDiscreteNB.predict_log_proba
        jll = matrix @ model.feature_log_prob_.T
        if len(model.classes_) == 1:
            jll += model.class_log_prior_
        return jll - _logsumexp_rows(jll)[:, None]
    return None


def _is_csr(matrix) -> bool:
    return sparse.issparse(matrix) and matrix.format == "csr"


def _linear_scores(model, matrix) -> np.ndarray:
    """LinearClassifierMixin.decision_function: X @ coef_.T + intercept_."""
    coef = model.coef_
    scores = matrix @ (coef.T if coef.ndim == 2 else coef) + model.intercept_
    return scores.reshape(-1) if scores.ndim > 1 and scores.shape[1] == 1 else scores


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """scikit-learn's ``_logsumexp(a, axis=1)`` for a 2-d float array, the same operations in order."""
    a_max = np.max(a, axis=1, keepdims=True)
    is_max = a == a_max
    rest = a.copy()
    rest[is_max] = -np.inf
    m = np.sum(is_max.astype(a.dtype), axis=1, keepdims=True, dtype=a.dtype)
    shift = np.where(np.isfinite(a_max), a_max, 0)
    s = np.sum(np.exp(rest - shift), axis=1, keepdims=True, dtype=a.dtype)
    s = np.where(s == 0, s, s / m)
    return (np.log1p(s) + np.log(m) + a_max)[:, 0]
