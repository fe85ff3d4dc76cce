"""The papertrack HTTP service (BentoML 1.4): the champion, loaded once per worker from the BentoML store.

Endpoints: ``POST /predict``, ``POST /predict_batch``, ``POST /drift``, ``GET /metadata``, plus BentoML's ``/healthz``,
``/livez``, ``/readyz``, ``/metrics`` (Prometheus); ``POST /explain`` (the terms behind each track and the nearest
labeled papers); the page for people at ``GET /`` and the OpenAPI page at ``/docs`` (spec at ``/docs.json``),
see :mod:`papertrack.serving.http.page`.

Run it with ``papertrack serve`` (imports the current champion, then ``bentoml serve`` on 127.0.0.1), or
directly with ``bentoml serve papertrack.serving.http.service:PaperTrack --host 127.0.0.1`` once a model is in
the BentoML store (``bentoml serve`` alone binds every interface).

Answers come from :meth:`TrackPredictor.predict` of the loaded
pyfunc's predictor — the same artifact and logic as ``mlflow.pyfunc.load_model(...).predict``, without
pandas and MLflow schema enforcement on the hot path. A slow model (an embedding champion) never blocks
the event loop that accepts and parses requests: ``/predict`` runs it in a thread pool when one prediction
costs more than ``INLINE_MAX_MS`` (measured at start-up; a TF-IDF model answers in the loop, cheaper than
a thread hop), ``/predict_batch`` and ``/drift`` are synchronous (BentoML's thread pool).

In front of the endpoints (outermost first, all in :mod:`.middleware`): :class:`~.middleware.ConnectionRecycler`
(keep-alive clients spread over workers), :class:`~.middleware.ResponsePolicy` (JSON 404/405; CSP and frame
headers on the pages), :class:`~.middleware.OriginGuard` (Host and Origin checks), :class:`~.middleware.SpecRoute`
(the corrected OpenAPI spec) and :class:`~.middleware.RequestGuard` (Content-Type, size, 400 messages).
Metrics label unknown paths as one endpoint (:func:`~.middleware.install_bounded_metrics`); the service never
writes request abstracts to the embedding cache on disk (``papertrack serve``/``build`` set
``PAPERTRACK_EMBEDDING_CACHE=off`` unless it is set explicitly; the embedder's in-memory cache is bounded).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import attrs
import bentoml
from bentoml.exceptions import BentoMLException
from bentoml.models import BentoModel
from fastapi import FastAPI
from starlette.responses import Response
from threadpoolctl import threadpool_limits

from papertrack import settings
from papertrack.errors import NoModelError
from papertrack.serving.http import bento_store, explain_api, page, private_hooks, schemas
from papertrack.serving.http.drift_api import request_schema as drift_request_schema
from papertrack.serving.http.error_answers import error_body
from papertrack.serving.http.middleware import (
    ConnectionRecycler,
    OriginGuard,
    RequestGuard,
    ResponsePolicy,
    SpecRoute,
    install_bounded_metrics,
)
from papertrack.serving.http.read_deadline import install as bound_request_reading

logger = logging.getLogger("bentoml.papertrack")  # under "bentoml": shown in the server log
INLINE_MAX_MS = 3.0  # a model predicting one abstract faster than this answers /predict in the event loop

settings.quiet_third_parties()
bound_request_reading()  # a slow client gets traffic.timeout to send a whole request (serving/http/read_deadline.py)
_served: dict[str, int] = {}  # facts of the model this worker serves, for the OpenAPI spec


class _ClientErrorFilter(logging.Filter):
    """BentoML logs a full traceback for every request that fails validation (a client's mistake, answered
    with a 400). Keep one INFO line instead, so bad clients cannot flood the error log."""

    def filter(self, record: logging.LogRecord) -> bool:
        from pydantic import ValidationError

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, ValidationError):
            record.msg = record.msg.replace("Exception on", "400 (invalid request) on") + ": %s"
            record.args = (*(record.args or ()), str(exc).splitlines()[0])
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


logging.getLogger(private_hooks.BENTOML_HTTP_APP_LOGGER).addFilter(_ClientErrorFilter())


def _workers() -> int | str:
    return settings.current().workers


class ModelNotInStore(NoModelError, BentoMLException):
    """The served model is not in the local BentoML store (a BentoMLException, so the CLI prints one line)."""


@attrs.frozen
class LocalBentoModel(BentoModel):
    """A BentoModel found in the local store only: when it is missing, `bentoml serve` and `bentoml build` stop
    with what to do, instead of trying to pull it from BentoCloud."""

    def resolve(self, base_path=None):
        if self.stored is None:
            raise ModelNotInStore(bento_store.missing_message(str(self.tag)))
        return super().resolve(base_path)

    def to_info(self, alias=None):
        if self.stored is None:
            raise ModelNotInStore(bento_store.missing_message(str(self.tag)))
        return super().to_info(alias)


# GET /metadata lives in a small FastAPI app mounted on the service (BentoML APIs are POST-only).
metadata_app = FastAPI(title="papertrack", docs_url=None, redoc_url=None, openapi_url=None)
page.install(metadata_app)  # GET / (the page), GET /docs (OpenAPI page), POST /parse_dump


@bentoml.service(
    name="papertrack",
    description=__doc__.split("\n\n")[0],
    workers=_workers(),
    threads=1,
    traffic={"timeout": 60},
    # No tracing exporter is configured by default, yet OpenTelemetry spans cost ~0.3 ms of CPU per request:
    # prediction routes are left out of tracing unless PAPERTRACK_TRACE_PREDICTIONS=true.
    tracing={"excluded_urls": [] if settings.current().trace_predictions else ["/predict", "/predict_batch"]},
    logging={"access": {"enabled": settings.current().access_log}},
)
@bentoml.asgi_app(metadata_app, path="/")
class PaperTrack:
    """Classify ML paper abstracts into conference tracks ("Area · Subarea")."""

    bento_model = LocalBentoModel(bento_store.model_tag())

    def __init__(self) -> None:
        from papertrack.models.artifact import load_predictor

        # A Bento serves the model recorded in it; otherwise $PAPERTRACK_BENTO_MODEL or the class attribute's tag.
        # Looked up in the local store only (the BentoModel descriptor would try BentoCloud): a missing model
        # fails fast, saying what to do.
        tag = _bento_model_tag() or settings.current().bento_model or str(type(self).bento_model.tag)
        self.stored = stored = bento_store.stored_model(tag)
        self.predictor, _ = load_predictor(stored.path_of(bento_store.MLFLOW_MODEL_FOLDER))
        meta = dict(stored.info.metadata or {})
        card = self.predictor.card
        self.model_info = schemas.ModelInfo(
            name=str(meta.get("registered_model", settings.MODEL_NAME)),
            version=str(meta.get("version", "unknown")),
            run_id=str(meta.get("run_id") or card.run_id),
        )
        self._model_json = self.model_info.model_dump()
        self.n_labels = _served["n_labels"] = self.predictor.space.n_labels
        space = self.predictor.space
        metrics = card.metrics or meta.get("metrics") or {}
        self._metadata = schemas.MetadataResponse(
            model=self.model_info,
            bento_model=str(stored.tag),
            alias=meta.get("alias"),
            model_uri=meta.get("model_uri"),
            candidate=card.candidate or meta.get("candidate"),
            family=card.family or None,
            data_digest=card.data_digest or meta.get("data_digest"),
            use_title=self.predictor.use_title,
            n_labels=space.n_labels,
            labels=list(space.labels),
            areas=list(space.areas),
            hierarchy=space.hierarchy(),
            metrics={k: float(v) for k, v in metrics.items()},
            limits=schemas.LIMITS,
            confidence=_confidence(self.predictor.confidence),
        )
        # One abstract per call: BLAS thread pools (OpenBLAS: the LR and kNN on embeddings) get tiny matrices
        # and their extra threads only spin — measured: 209 -> 102 ms of CPU per /predict of an embedding
        # champion at the same latency, CPU the other worker needs (BENCHMARKS.md "Serving an embedding champion")
        threadpool_limits(limits=1, user_api="blas")
        # The median of 5 predictions / 3 explanations (the first also takes the first-call costs, e.g. building
        # the explainer, out of the first request). One rule for both routes: what costs at most INLINE_MAX_MS
        # (a TF-IDF /predict, ~1 ms) runs in the event loop, where handing it to a thread would cost more than
        # the work; anything slower (sentence embeddings, ~30-100 ms; an explanation) runs in a one-thread pool,
        # so the event loop keeps accepting and parsing requests while it computes.
        self.predict_ms = _median_ms(lambda: self.predictor.predict([schemas.EXAMPLE_ABSTRACT]), repeats=5)
        self.explain_ms = _median_ms(lambda: explain_api.explain(self.predictor, schemas.EXAMPLE_ABSTRACT), repeats=3)
        pool = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="papertrack-predict")
            if max(self.predict_ms, self.explain_ms) > INLINE_MAX_MS
            else None
        )
        self.inference_pool = pool if self.predict_ms > INLINE_MAX_MS else None
        self.explain_pool = pool if self.explain_ms > INLINE_MAX_MS else None
        gc.freeze()  # the libraries and the model live as long as the worker: keep them out of GC scans
        logger.info(
            "papertrack model %s (v%s, run %s) loaded; %.1f ms per abstract, /predict runs %s; "
            "%.1f ms per explanation, /explain runs %s",
            stored.tag,
            self.model_info.version,
            self.model_info.run_id,
            self.predict_ms,
            _where(self.inference_pool),
            self.explain_ms,
            _where(self.explain_pool),
        )

    # --- endpoints -------------------------------------------------------------------------
    @bentoml.api(route="/predict", input_spec=schemas.PredictRequest, output_spec=schemas.PredictResponse)
    async def predict(self, abstract: str, title: str | None = None, top_k: int = schemas.DEFAULT_TOP_K):
        """Ranked tracks (top_k) and every area, for one abstract."""
        if top_k > self.n_labels:
            return self._top_k_error(top_k)
        if self.inference_pool is None:
            return self._predict_one(abstract, title, top_k)
        return await asyncio.get_running_loop().run_in_executor(
            self.inference_pool, self._predict_one, abstract, title, top_k
        )

    def _predict_one(self, abstract: str, title: str | None, top_k: int) -> Response:
        result = self.predictor.predict([abstract], [title], top_k)[0]
        result["model"] = self._model_json
        return _json(result)

    @bentoml.api(
        route="/predict_batch", input_spec=schemas.PredictBatchRequest, output_spec=schemas.PredictBatchResponse
    )
    def predict_batch(self, papers: list[schemas.Paper], top_k: int = schemas.DEFAULT_TOP_K):
        """One result per paper, in request order (at most MAX_BATCH papers per request)."""
        if top_k > self.n_labels:
            return self._top_k_error(top_k)
        results = self.predictor.predict([p.abstract for p in papers], [p.title for p in papers], top_k)
        return _json({"results": results, "model": self._model_json})

    @bentoml.api(route="/drift", input_spec=drift_request_schema())
    def drift(self, papers: list[schemas.Paper]):
        """How this batch differs from the training data: the drift report of `papertrack label`, as JSON."""
        from papertrack.serving.http.drift_api import NoProfile, batch_report

        try:
            report = batch_report(self.predictor, [p.abstract for p in papers], [p.title for p in papers])
        except NoProfile as exc:
            return Response(error_body(str(exc)), status_code=409, media_type="application/json")
        return _json({**report, "model": self._model_json})

    @bentoml.api(route="/explain", input_spec=explain_api.ExplainRequest, output_spec=explain_api.ExplainResponse)
    async def explain(
        self, abstract: str, title: str | None = None, top_k: int = 3, terms: int = 10, neighbors: int = 5
    ):
        """The ranked tracks, the terms that pushed each of them up, and the most similar labeled papers."""
        if top_k > self.n_labels:
            return self._top_k_error(top_k)
        result = await explain_api.explain_async(
            self.predictor, self.explain_pool, abstract, title, top_k, n_terms=terms, n_neighbors=neighbors
        )
        result["model"] = self._model_json
        return _json(result)

    @metadata_app.get(
        "/metadata",
        response_model=schemas.MetadataResponse,
        tags=["Service APIs"],
        summary="The served model: version, run, training data digest, labels, metrics",
    )
    def metadata(self) -> schemas.MetadataResponse:
        return self._metadata

    def _top_k_error(self, top_k: int) -> Response:
        message = f"top_k must be between 1 and {self.n_labels} (the number of labels), got {top_k}"
        detail = [{"type": "less_than_equal", "loc": ["top_k"], "msg": message}]
        return Response(
            error_body(f"invalid request: {message}", detail), status_code=400, media_type="application/json"
        )


def _api_routes() -> list[str]:
    return [api.route for api in PaperTrack.apis.values()]


install_bounded_metrics(_api_routes)
# added outermost first (BentoML wraps them in this order)
PaperTrack.add_asgi_middleware(ConnectionRecycler)
PaperTrack.add_asgi_middleware(ResponsePolicy)
PaperTrack.add_asgi_middleware(OriginGuard)
PaperTrack.add_asgi_middleware(
    SpecRoute, spec=lambda: PaperTrack.openapi_spec.asdict(), n_labels=lambda: _served.get("n_labels")
)
PaperTrack.add_asgi_middleware(RequestGuard, paths=_api_routes())  # every POST endpoint


def _bento_model_tag() -> str | None:
    """The model tag recorded in the Bento this service was loaded from (None outside a Bento)."""
    bento = getattr(PaperTrack, "bento", None)
    if bento is None:
        return None
    for info in bento.info.services:
        if info.name == PaperTrack.name and info.models:
            return str(info.models[0].tag)
    return None


def _confidence(confidence) -> dict[str, float] | None:
    """What GET /metadata says about the confident flag and the prediction sets (the page explains "unsure")."""
    if confidence is None:
        return None
    return {
        "top1_threshold": float(confidence.top1_threshold),
        "target_precision": float(confidence.target_precision),
        "coverage": float(confidence.coverage),
    }


def _where(pool) -> str:
    return "in a thread pool" if pool is not None else "in the event loop"


def _median_ms(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _json(data: dict) -> Response:
    return Response(json.dumps(data, ensure_ascii=False).encode("utf-8"), media_type="application/json")
