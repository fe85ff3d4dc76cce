"""Choosing a model: cross-validation, metrics, plots, the sweep and its MLflow logging, the `train`/`runs`
commands. Imports features, models and the shared layer; nothing imports it but the CLI."""
