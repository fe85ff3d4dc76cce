"""papertrack: tell which conference track a machine-learning paper belongs to, from its abstract.

From Python: ``papertrack.load()`` returns the registered champion as a :class:`papertrack.api.Predictor`
(``predict``, ``predict_frame``, ``explain``). Importing papertrack loads nothing heavy: MLflow, scikit-learn
and the model load on the first ``load``.
"""

__version__ = "0.1.0"
__all__ = ["Predictor", "load", "__version__"]


def __getattr__(name: str):
    if name in ("load", "Predictor"):
        from papertrack import api

        return getattr(api, name)
    raise AttributeError(f"module 'papertrack' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), "load", "Predictor"])
