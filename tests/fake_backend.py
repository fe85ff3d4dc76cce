"""A stand-in for the labeler's model (conftest's ``fake_model``): fixed answers, nothing loaded."""

from __future__ import annotations


class FakeBackend:
    """Answers every record with a fixed ranking: the CLI runs without loading a model."""

    labels = frozenset({"Theory", "Deep Learning", "Optimization"})
    n_labels = 3
    identity = {"run_id": "fake"}
    description = "fake model"

    def __init__(self, model_uri: str = "", taxonomy: str | None = None, store=None):
        pass

    def label(self, records, k):
        ranked = [("Theory", 0.7), ("Deep Learning", 0.2), ("Optimization", 0.1)]
        return [
            {
                "tracks": [{"label": name, "area": name, "subarea": None, "probability": p} for name, p in ranked][:k],
                "areas": [{"area": name, "probability": p} for name, p in ranked],
            }
            for _ in records
        ]

    def close(self):
        pass
