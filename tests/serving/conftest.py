"""Fixtures shared by several serving test modules."""

from __future__ import annotations

import pytest

from tests.serving.label_cli import NoModel


@pytest.fixture()
def no_model(monkeypatch):
    import papertrack.serving.batch.labeler as labeler

    monkeypatch.setattr(labeler, "LocalBackend", NoModel)
