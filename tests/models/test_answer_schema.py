"""One answer schema (issue 18): the pydantic models in models/answer.py, and every other statement of the
answer's shape derived from them or checked against them — the typed dicts, the MLflow signature, the HTTP
response models and the Spark labeler's Parquet row schema."""

from __future__ import annotations

import re
import typing

import pytest
from pydantic import BaseModel

from papertrack.models import answer
from papertrack.models.answer import Answer, AnswerDict, AreaScore, AreaScoreDict, Track, TrackDict
from tests.synthetic_corpus import fitted_predictor

ABSTRACT = "attention transformer heads tokens softmax query keys sequence. We report experiments on standard data."


def _strip_none(annotation):
    args = typing.get_args(annotation)
    if type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return inner, True
    return annotation, False


@pytest.mark.parametrize(
    ("typed", "model"), [(TrackDict, Track), (AreaScoreDict, AreaScore), (AnswerDict, Answer)], ids=lambda c: c.__name__
)
def test_each_typed_dict_has_its_models_fields_types_and_optionality(typed, model):
    nested = {TrackDict: Track, AreaScoreDict: AreaScore}
    hints = typing.get_type_hints(typed)
    assert list(hints) == list(model.model_fields)
    for name, hint in hints.items():
        field = model.model_fields[name]
        dict_type, dict_none = _strip_none(hint)
        model_type, _ = _strip_none(field.annotation)
        if typing.get_origin(dict_type) is list:  # list[TrackDict] <-> list[Track]
            (item,) = typing.get_args(dict_type)
            assert typing.get_origin(model_type) is list and typing.get_args(model_type) == (nested.get(item, item),)
        else:
            assert dict_type is model_type, name
        # optional in the schema <=> the dict may lack the key or hold None there
        assert (not field.is_required()) == (name in typed.__optional_keys__ or dict_none), name


def test_the_confidence_fields_are_the_optional_ones():
    assert answer.CONFIDENCE_FIELDS == ("prediction_set", "confident")


def test_a_predictors_answers_validate_against_the_schema():
    predictor = fitted_predictor(per_label=12)[0]
    (given,) = predictor.predict([ABSTRACT], top_k=2)
    parsed = Answer.model_validate(given, strict=True)
    assert parsed.model_dump(exclude_unset=True) == given
    assert [t.label for t in parsed.tracks][:1] == ["Deep Learning · Attention Mechanisms"]
    assert len(parsed.tracks) == 2 and len(parsed.areas) == len(predictor.space.areas)


def test_the_mlflow_signature_outputs_are_the_answer_fields():
    from mlflow.types.schema import Array, ColSpec, Object, Property, Schema

    from papertrack.models.artifact import signature

    track = Object(
        [
            Property("label", "string"),
            Property("area", "string"),
            Property("subarea", "string", required=False),
            Property("probability", "double"),
        ]
    )
    area = Object([Property("area", "string"), Property("probability", "double")])
    expected = Schema(
        [
            ColSpec(Array(track), "tracks"),
            ColSpec(Array(area), "areas"),
            ColSpec(Array("string"), "prediction_set", required=False),
            ColSpec("boolean", "confident", required=False),
            ColSpec("string", "taxonomy", required=False),
            ColSpec("string", "warning", required=False),
        ]
    )
    assert signature().outputs.to_dict() == expected.to_dict()


def test_the_http_result_is_the_answer_schema():
    from papertrack.serving.http import schemas

    assert issubclass(schemas.PaperResult, Answer)
    assert schemas.PaperResult.model_fields.keys() == Answer.model_fields.keys()
    assert issubclass(schemas.PredictResponse, Answer)
    result = schemas.PaperResult.model_json_schema()
    assert result["properties"]["tracks"]["items"] == {"$ref": "#/$defs/Track"}
    assert result["properties"]["areas"]["items"] == {"$ref": "#/$defs/AreaScore"}
    assert result["required"] == ["tracks", "areas"]


# --------------------------------------------------------------------------- the Spark labeler's Parquet rows

DDL_TYPES = {str: "STRING", float: "DOUBLE", bool: "BOOLEAN", int: "LONG"}


def ddl_fields(text: str) -> dict[str, str]:
    """``name TYPE, name ARRAY<STRUCT<a: T, ...>>, ...`` -> {name: type text} (top-level commas only)."""
    fields, depth, start = {}, 0, 0
    for i, char in enumerate(text + ","):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            name, kind = re.split(r":?\s+", text[start:i].strip(), maxsplit=1)
            fields[name] = kind.strip()
            start = i + 1
    return fields


def ddl_type(annotation) -> str:
    annotation, _ = _strip_none(annotation)
    if typing.get_origin(annotation) is list:
        (item,) = typing.get_args(annotation)
        return f"ARRAY<{ddl_type(item)}>"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "STRUCT<" + ", ".join(f"{n}: {ddl_type(f.annotation)}" for n, f in annotation.model_fields.items()) + ">"
    return DDL_TYPES[annotation]


def test_ddl_fields_reads_nested_types():
    assert ddl_fields("a INT, t ARRAY<STRUCT<label: STRING, p: DOUBLE>>, b STRING") == {
        "a": "INT",
        "t": "ARRAY<STRUCT<label: STRING, p: DOUBLE>>",
        "b": "STRING",
    }


@pytest.fixture(scope="module")
def parquet_row():
    from papertrack.serving.batch.labeler.spark.arrow_rows import PARQUET_ROW_SCHEMA

    return ddl_fields(PARQUET_ROW_SCHEMA)


def test_parquet_rows_carry_the_answers_tracks_and_top_area_with_the_schemas_types(parquet_row):
    """A row keeps each track's label and probability, and the top area with its probability."""
    track = Track.model_fields
    assert parquet_row["tracks"] == (
        f"ARRAY<STRUCT<label: {ddl_type(track['label'].annotation)}, "
        f"probability: {ddl_type(track['probability'].annotation)}>>"
    )
    assert parquet_row["area"] == ddl_type(AreaScore.model_fields["area"].annotation)
    assert parquet_row["area_probability"] == ddl_type(AreaScore.model_fields["probability"].annotation)


def test_parquet_rows_carry_every_other_answer_field(parquet_row):
    for name in answer.EXTRA_FIELDS:
        assert parquet_row.get(name) == ddl_type(Answer.model_fields[name].annotation), name
