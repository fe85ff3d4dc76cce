"""The floor of ``benchmarks/bench_http.py --bare``: a BentoML 1.4 service with papertrack's server settings (two
workers, one thread, the 60 s timeout, ``/predict`` out of tracing, no access log) whose ``/predict`` takes the same
request and returns a constant answer of the same shape — BentoML's own cost per request, without the model and
without papertrack's middleware.

    BENTOML_DO_NOT_TRACK=true .venv/bin/python -m bentoml serve bare_bentoml:Bare --host 127.0.0.1 --port 3001
    (from benchmarks/)
"""

from __future__ import annotations

import bentoml

TRACK = {"label": "Deep Learning · Attention Mechanisms", "area": "Deep Learning", "subarea": "Attention Mechanisms"}
ANSWER = {
    "tracks": [TRACK | {"probability": 0.5}, TRACK | {"probability": 0.2}, TRACK | {"probability": 0.1}],
    "areas": [{"area": "Deep Learning", "probability": 0.9}, {"area": "Theory", "probability": 0.1}],
    "prediction_set": [TRACK["label"]],
    "confident": False,
    "model": {"name": "bare", "version": "1", "run_id": "0"},
}


@bentoml.service(
    name="bare",
    workers=2,
    threads=1,
    traffic={"timeout": 60},
    tracing={"excluded_urls": ["/predict"]},
    logging={"access": {"enabled": False}},
)
class Bare:
    @bentoml.api(route="/predict")
    async def predict(self, abstract: str, title: str | None = None, top_k: int = 3) -> dict:
        return ANSWER
