"""Fixtures shared by several serving test modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.serving.label_cli import NoModel, mixed_dump


@pytest.fixture()
def no_model(monkeypatch):
    import papertrack.serving.batch.labeler as labeler

    monkeypatch.setattr(labeler, "LocalBackend", NoModel)


@pytest.fixture(scope="module")
def dump(trained, tmp_path_factory) -> Path:
    """300 labeled records of the trained subset with bad lines, a record without id and a blank line mixed in."""
    return mixed_dump(Path(trained["data"]), tmp_path_factory.mktemp("dumps") / "mixed.jsonl")
