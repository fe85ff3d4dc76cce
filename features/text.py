"""What a classifier reads: the model text of a paper and the TF-IDF feature settings.

:func:`model_text` is the one rule that turns (abstract, title) into the text every model sees;
:data:`FEATURE_SETTINGS` and :func:`tfidf` are the TF-IDF feature steps the candidates are built on.
"""

from __future__ import annotations

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.pipeline import FeatureUnion


def model_text(abstract: str, title: str | None, use_title: bool) -> str:
    """The text a classifier sees: the abstract, with the title in front only for title-using models."""
    if use_title and title:
        return f"{title.strip()}. {abstract}"
    return abstract


FEATURE_SETTINGS = {
    "word": dict(
        analyzer="word",
        ngram_range=(1, 1),
        min_df=2,
        max_df=0.9,
        sublinear_tf=True,
        stop_words="english",
        strip_accents="unicode",
    ),
    "word12": dict(
        analyzer="word",
        ngram_range=(1, 2),
        min_df=2,
        max_df=0.9,
        sublinear_tf=True,
        stop_words="english",
        strip_accents="unicode",
        max_features=100_000,
    ),
    "char": dict(
        analyzer="char_wb",
        ngram_range=(3, 5),
        min_df=3,
        sublinear_tf=True,
        max_features=60_000,
        strip_accents="unicode",
    ),
}
# Single precision: logistic regression's solver then works in float32 too (its sparse products ~4x faster on the
# default sweep's word features, the same Newton steps and the same temporal top-3; BENCHMARKS.md "float32").
FEATURE_DTYPE = np.float32


def tfidf(kind: str):
    """TF-IDF features: 'word', 'word12', 'char', or 'union' (word + char side by side)."""
    if kind == "union":
        return FeatureUnion(
            [
                ("word", TfidfVectorizer(**FEATURE_SETTINGS["word"], dtype=FEATURE_DTYPE)),
                ("char", TfidfVectorizer(**FEATURE_SETTINGS["char"], dtype=FEATURE_DTYPE)),
            ]
        )
    return TfidfVectorizer(**FEATURE_SETTINGS[kind], dtype=FEATURE_DTYPE)


def feature_params(kind: str) -> dict:
    kinds = ["word", "char"] if kind == "union" else [kind]
    settings = {f"{k}.{name}": value for k in kinds for name, value in FEATURE_SETTINGS[k].items()}
    return {**settings, "tfidf.dtype": np.dtype(FEATURE_DTYPE).name}
