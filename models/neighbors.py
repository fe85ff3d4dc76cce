"""The nearest labeled training abstracts of a new abstract: a compact TF-IDF index stored with the artifact.

Built once at training time from the labeled records the model was refit on, whatever the model family:
its own word TF-IDF (sublinear tf, English stop words), each training row pruned to its ``MAX_TERMS``
heaviest terms and re-normalised, stored as a float32 sparse matrix with each record's id, title, label and
the start of its abstract. A query is one transform and one sparse product: cosine similarity on words,
which a reader can check by eye (the shared words are what makes two abstracts "similar").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.preprocessing import normalize

from papertrack.models.answer import DEFAULT_NEIGHBORS

MAX_TERMS = 48  # terms kept per training abstract
SNIPPET_CHARS = 200


class Neighbor(TypedDict):
    id: str
    title: str | None
    label: str
    similarity: float
    snippet: str


class NeighborIndex:
    def __init__(
        self,
        vectorizer: TfidfVectorizer,
        matrix: sp.csr_matrix,
        ids: Sequence[str],
        titles: Sequence[str | None],
        labels: Sequence[str],
        snippets: Sequence[str],
    ):
        self.vectorizer = vectorizer
        self.by_term = matrix.T.tocsr()  # (terms, abstracts): a query adds up the rows of its terms
        self.ids, self.titles, self.labels, self.snippets = list(ids), list(titles), list(labels), list(snippets)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}  # not the built analyzer

    @classmethod
    def build(
        cls,
        abstracts: Sequence[str],
        ids: Sequence[str],
        titles: Sequence[str | None],
        labels: Sequence[str],
        max_terms: int = MAX_TERMS,
    ) -> NeighborIndex:
        if not (len(abstracts) == len(ids) == len(titles) == len(labels)) or not abstracts:
            raise ValueError("the neighbour index needs the same positive number of abstracts, ids, titles, labels")
        vectorizer = TfidfVectorizer(
            analyzer="word",
            min_df=2 if len(abstracts) >= 50 else 1,
            max_df=0.5,
            sublinear_tf=True,
            stop_words="english",
            strip_accents="unicode",
            dtype=np.float32,
        )
        matrix = _prune(vectorizer.fit_transform(abstracts).tocsr(), max_terms)
        snippets = [_snippet(a) for a in abstracts]
        return cls(vectorizer, matrix, ids, titles, labels, snippets)

    def __len__(self) -> int:
        return self.by_term.shape[1]

    def contains(self, abstract: str) -> bool:
        """Whether ``abstract`` is one of the training abstracts: it starts like one of them, to the
        stored snippet (the whole abstract when it is short). Ids are not compared: the same paper has
        different ids in different dumps, and different papers may share short ids."""
        known = self.__dict__.get("_known")
        if known is None:
            known = self._known = frozenset(self.snippets)
        return _snippet(abstract) in known

    def vector(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """The query's TF-IDF vector as (term columns, values): what ``vectorizer.transform`` computes
        (sublinear tf × idf, L2-normalised), without its per-call input validation."""
        analyzer = self.__dict__.get("_analyzer")
        if analyzer is None:
            analyzer = self._analyzer = self.vectorizer.build_analyzer()
        vocabulary = self.vectorizer.vocabulary_
        counts: dict[int, int] = {}
        for token in analyzer(text):
            column = vocabulary.get(token)
            if column is not None:
                counts[column] = counts.get(column, 0) + 1
        if not counts:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        columns = np.fromiter(counts, dtype=np.int64, count=len(counts))
        values = (
            1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))
        ) * self.vectorizer.idf_[columns]
        return columns, values / np.linalg.norm(values)

    def query(self, text: str, k: int = DEFAULT_NEIGHBORS) -> list[Neighbor]:
        """The ``k`` most similar training abstracts (cosine on TF-IDF words), most similar first."""
        columns, values = self.vector(text)
        scores = np.asarray(self.by_term[columns].T @ values).ravel() if len(columns) else np.zeros(len(self))
        k = min(k, len(scores))
        if k <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [
            Neighbor(
                id=self.ids[i],
                title=self.titles[i],
                label=self.labels[i],
                similarity=round(float(scores[i]), 4),
                snippet=self.snippets[i],
            )
            for i in top.tolist()
            if scores[i] > 0
        ]


def _prune(matrix: sp.csr_matrix, max_terms: int) -> sp.csr_matrix:
    """Keep each row's ``max_terms`` largest values, then L2-normalise the rows again."""
    rows, cols, vals = [], [], []
    for i in range(matrix.shape[0]):
        start, end = matrix.indptr[i], matrix.indptr[i + 1]
        data, idx = matrix.data[start:end], matrix.indices[start:end]
        if len(data) > max_terms:
            keep = np.argpartition(-data, max_terms - 1)[:max_terms]
            data, idx = data[keep], idx[keep]
        rows.append(np.full(len(data), i))
        cols.append(idx)
        vals.append(data)
    pruned = sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=matrix.shape, dtype=np.float32
    )
    return normalize(pruned, copy=False).astype(np.float32)


def _snippet(abstract: str) -> str:
    text = " ".join(abstract.split())
    if len(text) <= SNIPPET_CHARS:
        return text
    return text[:SNIPPET_CHARS].rsplit(" ", 1)[0] + " …"
