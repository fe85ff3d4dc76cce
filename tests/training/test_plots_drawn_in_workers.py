"""The top two candidates' plots are drawn in the sweep's worker processes when it has them: the same images,
PNG files as MLflow's ``log_figure`` writes them."""

from __future__ import annotations

import numpy as np
import pytest

from papertrack.models.hierarchy import LabelSpace
from papertrack.training.tracking import log_plots

pytestmark = pytest.mark.slow  # two worker processes start (~4 s)

PATHS = {"plots/confusion_area.png", "plots/confusion_label.png", "plots/per_class_f1.png", "plots/reliability.png"}


class Images:
    """Stands in for a RunLog: keeps what would be logged."""

    def __init__(self):
        self.logged: dict[str, bytes] = {}

    def png(self, image: bytes, path: str) -> None:
        self.logged[path] = image


def test_plots_drawn_in_worker_processes_are_the_images_drawn_here():
    labels = [f"{area} · Topic {i}" for area in ("Theory", "Deep Learning", "Applications") for i in range(4)]
    space = LabelSpace.from_labels(labels)
    rng = np.random.default_rng(0)
    y = rng.integers(0, space.n_labels, 300)
    proba = rng.dirichlet(np.ones(space.n_labels), 300)
    here, workers = Images(), Images()
    log_plots(here, proba, y, space, "tfidf-word-logreg")
    log_plots(workers, proba, y, space, "tfidf-word-logreg", n_jobs=2)
    assert set(here.logged) == PATHS
    assert all(image.startswith(b"\x89PNG\r\n\x1a\n") and len(image) > 5_000 for image in here.logged.values())
    assert workers.logged == here.logged
