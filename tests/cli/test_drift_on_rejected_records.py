"""The drift report of a `label` run whose records were rejected: with every record rejected it compares nothing
(instead of reading as identical), and the out-of-vocabulary share ignores the rejected records."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def fitted_profile():
    from tests.synthetic_corpus import fitted_predictor

    predictor = fitted_predictor(per_label=20, seed=0)
    predictor = predictor[0] if isinstance(predictor, tuple) else predictor
    return predictor.training_profile


def labeled_row(source: str, line: int, label: str) -> str:
    return (
        json.dumps(
            {
                "id": f"r{line}",
                "source": source,
                "line": line,
                "tracks": [{"label": label, "probability": 0.9}],
                "area": label.split(" · ")[0],
            }
        )
        + "\n"
    )


def test_a_drift_report_with_every_record_rejected_compares_nothing(tmp_path, fitted_profile):
    """It said "label JS 0.000" (reads as identical) and took the OOV share from the rejected text."""
    from papertrack.models.drift import summary_lines
    from papertrack.serving.batch.drift_report import output_drift

    dump = tmp_path / "d.jsonl"
    dump.write_text("".join(json.dumps({"abstract": "qwxz " * 5000}) + "\n" for _ in range(3)))
    out = tmp_path / "out.jsonl"
    out.write_text("")
    report = output_drift(out, [dump], fitted_profile)
    assert report["records"] == 0 and report["label_js"] is None and report["oov_share"] is None
    assert summary_lines(report) == [
        "drift vs training data: no record to compare: every record was rejected (see the errors file)"
    ]
    json.dumps(report)


def test_the_out_of_vocabulary_share_ignores_rejected_records(tmp_path, fitted_profile):
    from papertrack.serving.batch.drift_report import output_drift

    known = " ".join(sorted(term for term in fitted_profile.vocabulary if " " not in term)[:40])
    dump = tmp_path / "d.jsonl"
    dump.write_text(json.dumps({"abstract": "qwxz " * 5000}) + "\n" + json.dumps({"abstract": known}) + "\n")
    out = tmp_path / "out.jsonl"
    out.write_text(labeled_row(str(dump), 2, "Deep Learning · Graph Neural Networks"))
    report = output_drift(out, [dump], fitted_profile)
    assert report["records"] == 1 and report["oov_share"] < 0.5
