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
pandas and MLflow schema enforcement on the hot path. Slow work never blocks the event loop that accepts and
parses requests: ``/predict`` runs in a thread pool and ``/explain`` in a child process of the worker
(:mod:`.explain_process`) when the request is expected to cost more than ``INLINE_MAX_MS`` — decided per request
from its abstract's length (the cost of a short and of a long abstract is measured at start-up; a TF-IDF
``/predict`` of a normal abstract answers in the loop, cheaper than a thread hop; an embedding model, a long
abstract or an explanation asking for more than the defaults goes to the pool or the process, its JSON made there
too); ``/predict_batch`` and ``/drift`` are synchronous (BentoML's thread pool).

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
from dataclasses import dataclass

import attrs
import bentoml
from bentoml.exceptions import BentoMLException
from bentoml.models import BentoModel
from fastapi import FastAPI
from starlette.responses import Response
from threadpoolctl import threadpool_limits

from papertrack import settings
from papertrack.errors import NoModelError, UsageError
from papertrack.models.request import PredictRequest, TopKError
from papertrack.serving.http import bento_store, explain_api, page, private_hooks, schemas
from papertrack.serving.http.drift_api import request_schema as drift_request_schema
from papertrack.serving.http.error_answers import error_body
from papertrack.serving.http.explain_process import ChildGone, ExplainProcess, explanation_body
from papertrack.serving.http.middleware import (
    MAX_BODY_BYTES,
    ConnectionRecycler,
    OriginGuard,
    RequestGuard,
    ResponsePolicy,
    SpecRoute,
    install_bounded_metrics,
)
from papertrack.serving.http.read_deadline import install as bound_request_reading
from papertrack.serving.http.turns import LargeRequestTurns

logger = logging.getLogger("bentoml.papertrack")  # under "bentoml": shown in the server log
INLINE_MAX_MS = 3.0  # a model predicting one abstract faster than this answers /predict in the event loop

settings.quiet_third_parties()
# a slow client gets traffic.timeout to send a whole request (serving/http/read_deadline.py); large requests take
# turns in front of everything else in the worker (serving/http/turns.py)
bound_request_reading(outermost=lambda app: LargeRequestTurns(app, _api_routes(), MAX_BODY_BYTES))
_served: dict[str, int] = {}  # facts of the model this worker serves, for the OpenAPI spec
_taxonomy_names: list[str] = []  # the taxonomy names it answers to, for the OpenAPI spec


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
        heads = self.predictor.taxonomies
        self.n_labels = self.predictor.space.n_labels
        _served["n_labels"] = min(h.space.n_labels for h in heads)  # the spec's top_k bound: valid in every one
        # the spec's taxonomy values: every name the model answers to
        _taxonomy_names[:] = list(dict.fromkeys(n for h in heads for n in (h.taxonomy, *h.sources) if n))
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
            default_taxonomy=self.predictor.taxonomy or None,
            taxonomies={
                h.taxonomy: schemas.TaxonomyInfo(
                    sources=list(h.sources),
                    n_labels=h.space.n_labels,
                    labels=list(h.space.labels),
                    areas=list(h.space.areas),
                    confidence=_confidence(h.confidence),
                )
                for h in heads
                if h.taxonomy
            },
        )
        # One abstract per call: BLAS thread pools (OpenBLAS: the LR and kNN on embeddings) get tiny matrices
        # and their extra threads only spin — measured: 209 -> 102 ms of CPU per /predict of an embedding
        # champion at the same latency, CPU the other worker needs (BENCHMARKS.md "Serving an embedding champion")
        threadpool_limits(limits=1, user_api="blas")
        # What runs in the event loop is decided per request, by its size (hostile input, round three: one probe
        # of a short abstract sent every explanation of a 20,000-character abstract into the loop, 107 ms each,
        # and /healthz waited seconds). The cost of one abstract is measured at start-up for a short and a long
        # abstract (the median of a few runs; the first also takes the first-call costs, e.g. building the
        # explainer, out of the first request) and taken as linear in its length in between. What is expected
        # to cost at most INLINE_MAX_MS (a TF-IDF /predict of a normal abstract, ~1-2 ms) runs in the loop, where
        # handing it to a thread would cost more than the work; anything slower (a long abstract, sentence
        # embeddings, an explanation asking for more than the defaults) runs in a one-thread pool, its JSON too,
        # so the event loop keeps accepting and parsing requests (and answering /healthz) while it computes.
        self.predict_cost = _cost_per_length(lambda text: self.predictor.predict([text]), repeats=5)
        self.explain_cost = _cost_per_length(lambda text: explain_api.explain(self.predictor, text), repeats=3)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="papertrack-predict")
        self.predict_ms, self.explain_ms = (
            self.predict_cost.ms(len(schemas.EXAMPLE_ABSTRACT)),
            self.explain_cost.ms(len(schemas.EXAMPLE_ABSTRACT)),
        )
        gc.freeze()  # the libraries and the model live as long as the worker: keep them out of GC scans
        # the explanations that do not run in the loop run in a child process (serving/http/explain_process.py):
        # on a thread they held the GIL the event loop needs for every other request
        self.explainer = ExplainProcess(self.predictor)
        logger.info(
            "papertrack model %s (v%s, run %s) loaded; %.1f ms per abstract (%.1f ms at %s characters), /predict "
            "runs in the event loop up to %s characters; %.1f ms per explanation, /explain runs in the event loop "
            "up to %s characters",
            stored.tag,
            self.model_info.version,
            self.model_info.run_id,
            self.predict_ms,
            self.predict_cost.ms(schemas.MAX_ABSTRACT_CHARS),
            f"{schemas.MAX_ABSTRACT_CHARS:,}",
            f"{self.predict_cost.inline_chars(INLINE_MAX_MS):,}",
            self.explain_ms,
            f"{self.explain_cost.inline_chars(INLINE_MAX_MS):,}",
        )

    # --- endpoints -------------------------------------------------------------------------
    @bentoml.api(route="/predict", input_spec=schemas.PredictRequest, output_spec=schemas.PredictResponse)
    async def predict(
        self,
        abstract: str,
        title: str | None = None,
        top_k: int = schemas.DEFAULT_TOP_K,
        taxonomy: str | None = None,
    ):
        """Ranked tracks (top_k) and every area, for one abstract, in the asked taxonomy's names."""
        checked = self._head(taxonomy, top_k)
        if isinstance(checked, Response):
            return checked
        head, top_k = checked
        if self.predict_cost.ms(len(abstract) + len(title or "")) <= INLINE_MAX_MS:
            return self._predict_one(head, abstract, title, top_k)
        return await asyncio.get_running_loop().run_in_executor(
            self.pool, self._predict_one, head, abstract, title, top_k
        )

    def _predict_one(self, head, abstract: str, title: str | None, top_k: int) -> Response:
        result = head.rank(head.predict_proba([abstract], [title]), top_k)[0]
        result["model"] = self._model_json
        return _json(result)

    def _head(self, taxonomy: str | None, top_k: int):
        """(the predictor of the asked taxonomy, the top_k to answer with) checked (models/request.py), or the 400
        to answer. The default top_k (3) is clipped to a taxonomy with fewer labels: a valid small model answers
        with every label instead of failing."""
        try:
            asked = None if top_k == schemas.DEFAULT_TOP_K else top_k
            head, k = PredictRequest(abstracts=(), top_k=asked, taxonomy=taxonomy).checked(self.predictor)
        except UsageError as exc:
            field = "top_k" if isinstance(exc, TopKError) else "taxonomy"
            detail = [{"type": "value_error", "loc": [field], "msg": str(exc)}]
            return Response(
                error_body(f"invalid request: {exc}", detail), status_code=400, media_type="application/json"
            )
        return head, k

    @bentoml.api(
        route="/predict_batch", input_spec=schemas.PredictBatchRequest, output_spec=schemas.PredictBatchResponse
    )
    def predict_batch(
        self, papers: list[schemas.Paper], top_k: int = schemas.DEFAULT_TOP_K, taxonomy: str | None = None
    ):
        """One result per paper, in request order (at most MAX_BATCH papers per request)."""
        checked = self._head(taxonomy, top_k)
        if isinstance(checked, Response):
            return checked
        head, top_k = checked
        results = head.rank(head.predict_proba([p.abstract for p in papers], [p.title for p in papers]), top_k)
        return _json({"results": results, "model": self._model_json})

    @bentoml.api(route="/drift", input_spec=drift_request_schema())
    def drift(self, papers: list[schemas.Paper], taxonomy: str | None = None):
        """How this batch differs from the training data: the drift report of `papertrack label`, as JSON — against
        the asked taxonomy's training papers (default: the model's default taxonomy)."""
        from papertrack.serving.http.drift_api import NoProfile, batch_report

        checked = self._head(taxonomy, schemas.DEFAULT_TOP_K)
        if isinstance(checked, Response):
            return checked
        head, _ = checked
        try:
            report = batch_report(head, [p.abstract for p in papers], [p.title for p in papers])
        except NoProfile as exc:
            return Response(error_body(str(exc)), status_code=409, media_type="application/json")
        return _json({**report, "taxonomy": head.taxonomy or None, "model": self._model_json})

    @bentoml.api(route="/explain", input_spec=explain_api.ExplainRequest, output_spec=explain_api.ExplainResponse)
    async def explain(
        self,
        abstract: str,
        title: str | None = None,
        top_k: int = 3,
        terms: int = 10,
        neighbors: int = 5,
        taxonomy: str | None = None,
    ):
        """The ranked tracks, the terms that pushed each of them up, and the most similar labeled papers."""
        checked = self._head(taxonomy, top_k)
        if isinstance(checked, Response):
            return checked
        head, top_k = checked
        if top_k * terms > explain_api.MAX_EXPLAINED_TERMS:
            return explain_api.too_many_terms(top_k, terms)
        if (
            top_k <= 3
            and terms <= explain_api.DEFAULT_TERMS
            and neighbors <= explain_api.DEFAULT_NEIGHBORS
            and self.explain_cost.ms(len(abstract) + len(title or "")) <= INLINE_MAX_MS
        ):  # no more than the start-up probe asked for, and short enough
            return self._explain_one(head, abstract, title, top_k, terms, neighbors)
        loop = asyncio.get_running_loop()
        try:
            body = await self.explainer.explain(loop, head, abstract, title, top_k, terms, neighbors, self._model_json)
        except ChildGone as exc:
            return Response(error_body(str(exc)), status_code=503, media_type="application/json")
        return Response(body, media_type="application/json")

    def _explain_one(self, head, abstract: str, title: str | None, top_k: int, terms: int, neighbors: int) -> Response:
        body = explanation_body(head, abstract, title, top_k, terms, neighbors, self._model_json)
        return Response(body, media_type="application/json")

    @metadata_app.get(
        "/metadata",
        response_model=schemas.MetadataResponse,
        tags=["Service APIs"],
        summary="The served model: version, run, training data digest, labels, metrics",
    )
    def metadata(self) -> schemas.MetadataResponse:
        return self._metadata


def _api_routes() -> list[str]:
    return [api.route for api in PaperTrack.apis.values()]


install_bounded_metrics(_api_routes)
# added outermost first (BentoML wraps them in this order)
PaperTrack.add_asgi_middleware(ConnectionRecycler)
PaperTrack.add_asgi_middleware(ResponsePolicy)
PaperTrack.add_asgi_middleware(OriginGuard)
PaperTrack.add_asgi_middleware(
    SpecRoute,
    spec=lambda: PaperTrack.openapi_spec.asdict(),
    n_labels=lambda: _served.get("n_labels"),
    taxonomies=lambda: _taxonomy_names or None,
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


def _median_ms(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


@dataclass(frozen=True)
class Cost:
    """The measured cost of one call for an abstract of ``chars`` characters: ``base_ms + per_char_ms * chars``."""

    base_ms: float
    per_char_ms: float

    def ms(self, chars: int) -> float:
        return self.base_ms + self.per_char_ms * chars

    def inline_chars(self, budget_ms: float) -> int:
        """The longest abstract expected to cost at most ``budget_ms`` (0: none)."""
        if self.base_ms > budget_ms:
            return 0
        if self.per_char_ms <= 0:
            return schemas.MAX_ABSTRACT_CHARS
        return min(int((budget_ms - self.base_ms) / self.per_char_ms), schemas.MAX_ABSTRACT_CHARS)


def _cost_per_length(call, repeats: int) -> Cost:
    """``call(text)`` timed for the example abstract and for one of ``MAX_ABSTRACT_CHARS`` characters (the example
    repeated): the line through the two medians."""
    short = schemas.EXAMPLE_ABSTRACT
    long = (short + " ") * (schemas.MAX_ABSTRACT_CHARS // (len(short) + 1))
    short_ms = _median_ms(lambda: call(short), repeats)
    long_ms = _median_ms(lambda: call(long), repeats)
    per_char = max(long_ms - short_ms, 0.0) / (len(long) - len(short))
    return Cost(max(short_ms - per_char * len(short), 0.0), per_char)


def _json(data: dict) -> Response:
    return Response(json.dumps(data, ensure_ascii=False).encode("utf-8"), media_type="application/json")
