"""One bad paper, one error: ``predict_frame`` answers every other row when one abstract is missing, NaN, empty or
not text (``errors="coerce"``, the default) or raises naming the row (``errors="raise"``); the pyfunc and the Python
API say it per row; a misspelt column gets "did you mean"."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from papertrack.api import FRAME_COLUMNS, Predictor
from papertrack.errors import UsageError
from papertrack.models.artifact import PaperTrackModel
from papertrack.models.request import abstract_problem, did_you_mean
from tests.synthetic_corpus import fitted_predictor

ABSTRACT = "attention transformer heads tokens softmax query keys sequence. We report experiments on standard data."


@pytest.fixture(scope="module")
def predictor():
    return fitted_predictor(per_label=12)[0]


def test_a_nan_abstract_gets_an_error_and_the_other_rows_their_answers(predictor):
    frame = pd.DataFrame({"abstract": [ABSTRACT, np.nan, ABSTRACT, "  ", None]}, index=[10, 11, 12, 13, 14])
    answers = predictor.predict_frame(frame)
    assert len(answers) == 5  # input = output + errors
    assert [("error" in a) for a in answers] == [False, True, False, True, True]
    assert answers[1] == {"error": "row 11: no abstract (a missing value: nan)"}
    assert answers[3] == {"error": "row 13: empty abstract"}
    assert answers[4]["error"].startswith("row 14: no abstract (a missing value")
    assert answers[0] == predictor.predict([ABSTRACT])[0] == answers[2]


def test_errors_raise_rejects_the_frame_naming_the_first_bad_row(predictor):
    frame = pd.DataFrame({"abstract": [ABSTRACT, np.nan]})
    with pytest.raises(UsageError, match=r"^row 1: no abstract \(a missing value: nan\)"):
        predictor.predict_frame(frame, errors="raise")
    with pytest.raises(UsageError, match="errors must be one of 'coerce', 'raise'"):
        predictor.predict_frame(frame, errors="ignore")


def test_a_frame_of_only_bad_rows_still_checks_top_k(predictor):
    frame = pd.DataFrame({"abstract": [None, ""]})
    errors = [a["error"] for a in predictor.predict_frame(frame)]
    assert errors[0].startswith("row 0: no abstract (a missing value") and errors[1] == "row 1: empty abstract"
    with pytest.raises(UsageError, match="top_k must be between"):
        predictor.predict_frame(frame, top_k=10_000)


def test_a_misspelt_abstract_column_gets_did_you_mean(predictor):
    with pytest.raises(UsageError) as caught:
        predictor.predict_frame(pd.DataFrame({"Abstract": [ABSTRACT]}))
    assert str(caught.value) == (
        "input needs an 'abstract' column; got columns ['Abstract']: did you mean \"abstract\"? "
        "(rename it: frame.rename(columns={'Abstract': 'abstract'}))"
    )
    assert did_you_mean("abstract", ["title", "abstracts"]) == "abstracts"
    assert did_you_mean("abstract", ["title", "text"]) is None


def test_the_pyfunc_answers_per_row_with_an_error_column(predictor):
    model = PaperTrackModel()
    model.predictor = predictor
    out = model.predict(None, pd.DataFrame({"abstract": [ABSTRACT, float("nan")]}))
    assert out["error"].isna().tolist() == [True, False]
    assert out["error"][1] == "row 1: no abstract (a missing value: nan)"
    assert out["tracks"][0] and out["tracks"][1] is None
    clean = model.predict(None, pd.DataFrame({"abstract": [ABSTRACT]}))
    assert "error" not in clean.columns  # the columns of a frame without a bad row are as before
    as_json = model.predict(None, pd.DataFrame({"abstract": [None]}), params={"output": "json"})
    assert as_json["answer"].tolist() == ['{"error": "row 0: no abstract (a missing value: None)"}']


def test_the_python_api_frame_has_pred_error_and_keeps_the_series_index(predictor):
    api = Predictor(predictor, "models:/test")
    papers = pd.Series([ABSTRACT, None, ABSTRACT], index=["a", "b", "c"])
    frame = api.predict_frame(papers)
    assert list(frame.columns) == list(FRAME_COLUMNS) and list(frame.index) == ["a", "b", "c"]
    assert frame["pred_error"].isna().tolist() == [True, False, True]
    assert frame["pred_error"]["b"].startswith("row b: no abstract (a missing value")  # None or NaN: pandas decides
    assert frame["pred_track"].notna().tolist() == [True, False, True]
    with pytest.raises(UsageError, match="row b"):
        api.predict_frame(papers, errors="raise")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (math.nan, "no abstract (a missing value: nan)"),
        (pd.NA, "no abstract (a missing value: <NA>)"),
        (None, "no abstract (a missing value: None)"),
        (b"bytes", "abstract is bytes, not text: decode it first"),
        (3, "abstract is a int, not a string"),
        ("\t\n", "empty abstract"),
        (ABSTRACT, None),
    ],
)
def test_what_makes_an_abstract_unanswerable(value, problem):
    assert abstract_problem(value) == problem
