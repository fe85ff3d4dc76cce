"""One bad paper, one error (issue 37): ``/predict_batch`` answers every valid paper of a batch and puts an
``error`` (a 400 answer's shape, with the paper's index) in place of each invalid one; ``/drift`` counts them; the
4xx messages name the field and the fix (did you mean "abstract"?, the empty abstract, the whole paper pasted)."""

from __future__ import annotations

import pytest

from tests.serving.abstracts import ABSTRACTS

pytestmark = pytest.mark.slow  # the session's trained champion

TEN = [ABSTRACTS[i % 3] + f" Variant {i}." for i in range(10)]
EMPTY = "the abstract is empty: send the paper's abstract text"
WHOLE_PAPER = ("We study graph neural networks for molecules and their message passing. " * 500)[:28_833]


def test_one_empty_abstract_among_ten_answers_nine_and_one_error_in_its_place(client):
    papers = [{"abstract": a} for a in TEN]
    papers[4] = {"abstract": ""}
    response = client.post("/predict_batch", json={"papers": papers, "top_k": 2})
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert len(results) == 10  # input = output + errors, in request order
    assert [i for i, r in enumerate(results) if "error" in r] == [4]
    error = results[4]["error"]
    assert error["index"] == 4
    assert error["error"] == f"invalid request: papers[4].abstract: {EMPTY}"
    assert error["detail"][0]["loc"] == ["papers", 4, "abstract"]
    # the nine others are the answers they get alone
    for i in (0, 3, 9):
        alone = client.post("/predict", json={"abstract": TEN[i], "top_k": 2}).json()
        assert results[i]["tracks"] == alone["tracks"]


def test_a_batch_without_one_valid_paper_is_a_400_naming_each(client):
    body = {"papers": [{"abstract": " "}, {"title": "no abstract"}]}
    response = client.post("/predict_batch", json=body)
    assert response.status_code == 400
    assert response.json()["error"] == (
        "invalid request: papers[0].abstract: the abstract is empty (only whitespace): send the paper's abstract "
        "text; papers[1].abstract: Field required"
    )


def test_a_wrong_envelope_refuses_the_whole_batch(client):
    papers = [{"abstract": TEN[0]}, {"abstract": ""}]
    response = client.post("/predict_batch", json={"papers": papers, "top_k": 0})
    assert response.status_code == 400 and "top_k" in response.json()["error"]
    response = client.post("/predict_batch", json={"papers": papers, "topk": 2})
    assert response.status_code == 400
    assert 'topk: Extra inputs are not permitted: did you mean "top_k"?' in response.json()["error"]


@pytest.mark.parametrize("field", ["Abstract", "abstracts", "ABSTRACT", "text"])
def test_a_misnamed_abstract_field_says_did_you_mean(client, field):
    response = client.post("/predict", json={field: ABSTRACTS[0]})
    assert response.status_code == 400
    assert response.json()["error"] == (
        f'invalid request: abstract: Field required; {field}: Extra inputs are not permitted: did you mean "abstract"?'
    )
    batch = client.post("/predict_batch", json={"papers": [{"abstract": ABSTRACTS[1]}, {field: ABSTRACTS[0]}]})
    assert batch.status_code == 200
    assert (
        f'papers[1].{field}: Extra inputs are not permitted: did you mean "abstract"?'
        in (batch.json()["results"][1]["error"]["error"])
    )


def test_two_unknown_fields_get_no_guess(client):
    response = client.post("/predict", json={"text": ABSTRACTS[0], "body": "x"})
    assert response.status_code == 400 and "did you mean" not in response.json()["error"]


def test_a_whole_paper_pasted_is_refused_with_what_to_paste(client):
    response = client.post("/predict", json={"abstract": WHOLE_PAPER})
    assert response.status_code == 400
    assert response.json()["error"] == (
        "invalid request: abstract: abstract has 28,833 characters; at most 20,000 are accepted: paste the abstract, "
        "not the whole paper"
    )


def test_an_empty_abstract_says_so(client):
    response = client.post("/predict", json={"abstract": ""})
    assert response.status_code == 400
    assert response.json()["error"] == f"invalid request: abstract: {EMPTY}"


def test_drift_counts_the_papers_it_leaves_out(client):
    papers = [{"abstract": a} for a in TEN[:3]] + [{"abstract": WHOLE_PAPER}]
    response = client.post("/drift", json={"papers": papers})
    assert response.status_code == 200, response.text
    report = response.json()
    assert (report["papers"], report["records"], len(report["errors"])) == (4, 3, 1)
    assert report["errors"][0]["index"] == 3 and "not the whole paper" in report["errors"][0]["error"]
    assert client.post("/drift", json={"papers": [{"abstract": ""}]}).status_code == 400


def test_the_spec_documents_an_error_in_place_of_an_answer(client):
    spec = client.get("/docs.json").json()
    schemas = spec["components"]["schemas"]
    items = schemas["PredictBatchResponse"]["properties"]["results"]["items"]
    refs = {ref["$ref"].rsplit("/", 1)[-1] for ref in items["anyOf"]}
    assert refs == {"PaperResult", "PaperError"}
    detail = schemas["PaperErrorDetail"]
    assert {"error", "detail", "index"} <= set(detail["properties"]) and "index" in detail["required"]
    abstract = schemas["Paper"]["properties"]["abstract"]
    assert (abstract["minLength"], abstract["maxLength"]) == (1, 20_000)


def test_an_endpoints_work_answers_without_http_as_the_route_does(client):
    """The endpoint's method: what a route does once its body is read (used by tests/training/test_default_champion)."""
    import json

    from papertrack.serving.http.service import PaperTrack

    service = PaperTrack.inner()
    body = json.dumps({"papers": [{"abstract": TEN[0]}, {"abstract": ""}], "top_k": 2})
    direct = json.loads(service._respond(PaperTrack.inner.predict_batch, body.encode()).body)
    routed = client.post("/predict_batch", content=body, headers={"Content-Type": "application/json"}).json()
    assert direct == routed and "error" in direct["results"][1]
