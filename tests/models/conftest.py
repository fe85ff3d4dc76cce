"""Fixtures shared by several model test modules: a tiny synthetic model, and that model registered as
papertrack@champion in a temporary store."""

from __future__ import annotations

import pytest

from tests.models.model_artifacts import register
from tests.synthetic_corpus import fitted_predictor


@pytest.fixture(scope="module")
def predictor():
    return fitted_predictor(per_label=12)[0]


@pytest.fixture
def registered(predictor, tmp_path, monkeypatch):
    return register(predictor, tmp_path, monkeypatch)
