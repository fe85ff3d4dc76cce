"""The MLflow pyfunc of a papertrack model: :class:`PaperTrackModel` wraps the :class:`TrackPredictor` of
:mod:`papertrack.models.artifact` (logged by ``train``, loaded by MLflow's own loaders: ``mlflow.pyfunc.load_model``,
the Spark executors' ``spark_udf``). papertrack's own read path never imports this module (nor MLflow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from mlflow.models import ModelSignature
from mlflow.pyfunc import PythonModel
from mlflow.types.schema import ColSpec, ParamSchema, ParamSpec, Schema

from papertrack.errors import UsageError
from papertrack.models import manifest
from papertrack.models.answer import DEFAULT_TOP_K, mlflow_outputs
from papertrack.models.artifact import OUTPUT_COLUMNS, OUTPUT_JSON, TrackPredictor
from papertrack.models.request import asked_top_k


class PaperTrackModel(PythonModel):
    """The MLflow pyfunc: DataFrame(abstract[, title]) -> DataFrame(tracks, areas[, prediction_set, confident]);
    params top_k and output: "columns" (default, the signature's columns) or "json" (one column ``answer``, each
    answer as one JSON object string — for engines that would otherwise convert the nested columns value by
    value, e.g. ``mlflow.pyfunc.spark_udf(..., result_type="string")``)."""

    def load_context(self, context) -> None:
        predictor = Path(context.artifacts["predictor"])
        manifest.check(predictor.parent)  # the format and the files' digests, before anything is unpickled
        self.predictor = TrackPredictor.load(predictor)

    def predict(self, context, model_input: pd.DataFrame, params: dict | None = None) -> pd.DataFrame:
        # MLflow fills in the signature's default when top_k is not given: clipped to a smaller taxonomy, as over HTTP
        asked = asked_top_k(int((params or {}).get("top_k", DEFAULT_TOP_K)))
        taxonomy = (params or {}).get("taxonomy") or None
        if not isinstance(model_input, pd.DataFrame):
            model_input = pd.DataFrame(model_input)
        output = (params or {}).get("output", OUTPUT_COLUMNS)
        if output not in (OUTPUT_COLUMNS, OUTPUT_JSON):
            raise UsageError(f"output must be {OUTPUT_COLUMNS!r} or {OUTPUT_JSON!r}, got {output!r}")
        answers: list[Any] = self.predictor.predict_frame(model_input, asked, taxonomy=taxonomy)
        if output == OUTPUT_JSON:
            return pd.DataFrame({"answer": [json.dumps(a) for a in answers]})
        names = ["tracks", "areas"]
        if self.predictor.confidence is not None:
            names += ["prediction_set", "confident"]
        if self.predictor.taxonomy:
            names.append("taxonomy")
        columns = {name: [a.get(name) for a in answers] for name in names}
        for extra in ("warning", "error"):  # text the model does not know / a row that could not be answered
            if any(extra in a for a in answers):
                columns[extra] = [a.get(extra) for a in answers]
        return pd.DataFrame(columns)


def signature() -> ModelSignature:
    """The pyfunc's signature: the input columns, the answer's fields (models/answer.py) as output columns, params."""
    return ModelSignature(
        inputs=Schema([ColSpec("string", "abstract"), ColSpec("string", "title", required=False)]),
        outputs=mlflow_outputs(),
        params=ParamSchema(
            [
                ParamSpec("top_k", "long", DEFAULT_TOP_K),
                ParamSpec("output", "string", OUTPUT_COLUMNS),
                ParamSpec("taxonomy", "string", ""),  # "" is the model's default taxonomy
            ]
        ),
    )
