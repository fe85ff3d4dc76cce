"""The papertrack HTTP service (BentoML 1.4): the champion, loaded once per worker from the BentoML store.

Endpoints: ``POST /predict``, ``POST /predict_batch``, ``POST /explain`` (the terms behind each track and the
nearest labeled papers), ``POST /drift``, ``GET /metadata``, plus BentoML's ``/healthz``, ``/livez``, ``/readyz``,
``/metrics`` (Prometheus); the page for people at ``GET /`` (with ``POST /parse_dump``) and the OpenAPI page at
``/docs`` (spec at ``/docs.json``), see :mod:`papertrack.serving.http.page`.

Run it with ``papertrack serve`` (imports the current champion, then ``bentoml serve`` on 127.0.0.1), or
directly with ``bentoml serve papertrack.serving.http.service:PaperTrack --host 127.0.0.1`` once a model is in
the BentoML store (``bentoml serve`` alone binds every interface). Exposed beyond this machine, it runs behind
the reverse proxy of ``deploy/nginx.conf`` (slow clients, body size, buffering, connection limits, Host names).

The endpoints are routes of one FastAPI app mounted on the service (``@bentoml.asgi_app``, BentoML's public way
to add routes): each reads its JSON body (:func:`read_json_body`: Content-Type, size), then validates, predicts
and writes the answer's JSON in a worker thread (at most ``THREADS`` at once, the service's ``threads`` setting),
so the event loop keeps accepting requests and answering ``/healthz`` whatever the request costs. A refused request
is a :class:`~.error_answers.BadRequest`, answered by the app's exception handler in the service's error shape.
Answers come from :meth:`TrackPredictor.predict` of the loaded pyfunc's predictor — the same artifact and logic
as ``mlflow.pyfunc.load_model(...).predict``, without pandas and MLflow schema enforcement on the hot path.
"""

from __future__ import annotations

import gc
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import attrs
import bentoml
from bentoml.exceptions import BentoMLException
from bentoml.models import BentoModel
from fastapi import FastAPI, Request
from pydantic import BaseModel
from starlette.responses import Response
from threadpoolctl import threadpool_limits

from papertrack import settings
from papertrack.errors import NoModelError, UsageError
from papertrack.models.request import PredictRequest, TopKError, asked_top_k, unfamiliar_text_warnings
from papertrack.serving.http import bento_store, error_answers, explain_api, openapi, page, schemas
from papertrack.serving.http.bodies import read_json_body, validated, validated_papers
from papertrack.serving.http.drift_api import DriftRequest
from papertrack.serving.http.error_answers import BadRequest
from papertrack.serving.http.middleware import OriginGuard, SpecRoute, UnknownPaths

logger = logging.getLogger("bentoml.papertrack")  # under "bentoml": shown in the server log
THREADS = 1
"""Threads per worker that validate, predict and write answers (one: the model is CPU-bound and a worker has one
core's worth of it; the event loop stays free to read requests and answer /healthz)."""

settings.quiet_third_parties()


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


app = FastAPI(title="papertrack", docs_url=None, redoc_url=None, openapi_url=None)
error_answers.install(app)  # 400/404/405/413/415 in the service's error shape; an aborted upload: one log line
page.install(app)  # GET / (the page), GET /docs (OpenAPI page), POST /parse_dump


def _endpoint(path: str, body: type[BaseModel], response: type[BaseModel] | None, summary: str, **errors: str):
    """A ``POST`` route of the service: its JSON body read in the event loop (:func:`read_json_body`: Content-Type,
    size), then the decorated ``work(self, body) -> dict`` (validate, predict) and the answer's JSON, with the
    served model, in the worker's thread pool. The OpenAPI description: its JSON body, its answer, its 4xx."""

    def route(work: Callable[[PaperTrack, bytes], dict]):
        async def endpoint(request: Request) -> Response:
            # the worker's service instance, asked directly: a class view would get it through a sync FastAPI
            # dependency, which FastAPI runs in a thread of its own (one more thread hop per request)
            service = bentoml.get_current_service()
            read = await read_json_body(request)
            return await anyio.to_thread.run_sync(service._respond, work, read, limiter=service.threads)

        endpoint.__name__, endpoint.__qualname__, endpoint.__doc__ = work.__name__, work.__qualname__, work.__doc__
        app.post(
            path,
            response_model=response,
            tags=["Service APIs"],
            operation_id=f"papertrack__{path[1:]}",
            summary=summary,
            responses=openapi.error_responses(**errors),
            openapi_extra=openapi.json_body(body),
        )(endpoint)
        return work  # the method stays the answer without HTTP: service._respond(PaperTrack.inner.predict, body)

    return route


@bentoml.service(
    name="papertrack",
    description=__doc__.split("\n\n")[0],
    workers=_workers(),
    threads=THREADS,
    traffic={"timeout": 60},
    # No tracing exporter is configured by default, yet OpenTelemetry spans cost ~0.3 ms of CPU per request:
    # prediction routes are left out of tracing unless PAPERTRACK_TRACE_PREDICTIONS=true.
    tracing={"excluded_urls": [] if settings.current().trace_predictions else ["/predict", "/predict_batch"]},
    logging={"access": {"enabled": settings.current().access_log}},
)
@bentoml.asgi_app(app, path="/")
class PaperTrack:
    """Classify ML paper abstracts into conference tracks ("Area · Subarea")."""

    bento_model = LocalBentoModel(bento_store.model_tag())

    def __init__(self) -> None:
        from papertrack.models.loading import load_checked

        # A Bento serves the model recorded in it; otherwise $PAPERTRACK_BENTO_MODEL or the class attribute's tag.
        # Looked up in the local store only (the BentoModel descriptor would try BentoCloud): a missing model
        # fails fast, saying what to do.
        tag = _bento_model_tag() or settings.current().bento_model or str(type(self).bento_model.tag)
        self.stored = stored = bento_store.stored_model(tag)
        folder = stored.path_of(bento_store.MLFLOW_MODEL_FOLDER)
        self.predictor = load_checked(Path(folder), None, folder)  # imports no MLflow
        self.model_info = schemas.model_info(stored, self.predictor)
        self._model_json = self.model_info.model_dump()
        self._metadata = schemas.metadata(stored, self.predictor, self.model_info)
        # the spec's top_k bound per taxonomy name the model answers to (its taxonomies and their sources)
        labels: dict[str | None, int] = {None: self.predictor.space.n_labels}
        for head in self.predictor.taxonomies:
            labels.update({name: head.space.n_labels for name in (head.taxonomy, *head.sources) if name})
        openapi.served(labels)
        # One abstract per call: BLAS thread pools (OpenBLAS: the LR and kNN on embeddings) get tiny matrices
        # and their extra threads only spin — measured: 209 -> 102 ms of CPU per /predict of an embedding
        # champion at the same latency, CPU the other worker needs (BENCHMARKS.md "Serving an embedding champion")
        threadpool_limits(limits=1, user_api="blas")
        self.threads = anyio.CapacityLimiter(THREADS)
        # the first calls build what the model builds lazily (e.g. the explainer): not in a client's request
        self.predictor.predict([schemas.EXAMPLE_ABSTRACT])
        explain_api.explain(self.predictor, schemas.EXAMPLE_ABSTRACT)
        gc.freeze()  # the libraries and the model live as long as the worker: keep them out of GC scans
        logger.info(
            "papertrack model %s (v%s, run %s) loaded", stored.tag, self.model_info.version, self.model_info.run_id
        )

    def _respond(self, work: Callable[[PaperTrack, bytes], dict], body: bytes) -> Response:
        return _json({**work(self, body), "model": self._model_json})

    def _head(self, taxonomy: str | None, top_k: int):
        """(the predictor of the asked taxonomy, the top_k to answer with) checked (models/request.py), or the 400.
        The default top_k (3) is clipped to a taxonomy with fewer labels: a valid small model answers with every
        label instead of failing."""
        try:
            return PredictRequest(abstracts=(), top_k=asked_top_k(top_k), taxonomy=taxonomy).checked(self.predictor)
        except UsageError as exc:
            field = "top_k" if isinstance(exc, TopKError) else "taxonomy"
            raise BadRequest(
                f"invalid request: {exc}", [{"type": "value_error", "loc": [field], "msg": str(exc)}]
            ) from None

    def _answers(self, asked, papers: Sequence) -> list[dict]:
        """The answers of ``papers`` (each with an ``abstract`` and a ``title``) in the asked taxonomy with the
        asked top_k (the 400 when either is wrong), as ``papertrack.load().predict`` answers (warnings included)."""
        _, top_k = self._head(asked.taxonomy, asked.top_k)
        abstracts, titles = [p.abstract for p in papers], [p.title for p in papers]
        return PredictRequest(abstracts=abstracts, titles=titles, top_k=top_k, taxonomy=asked.taxonomy).answer(
            self.predictor
        )

    def _batch(self, body: bytes):
        """A batch body (``/predict_batch``, ``/drift``): (the request, its head, its valid papers with their index,
        the error results of the others). The whole batch is refused (400) when its envelope is wrong or no paper
        is valid."""
        asked = validated(schemas.BatchEnvelope, body)
        head, _ = self._head(asked.taxonomy, asked.top_k)
        good, failed = validated_papers(asked.papers)
        if not good:
            detail = [item for result in failed for item in result["error"]["detail"]]
            raise BadRequest(error_answers.explain(detail), detail)
        return asked, head, good, failed

    @_endpoint("/predict", schemas.PredictRequest, schemas.PredictResponse, "Ranked tracks of one abstract")
    def predict(self, body: bytes) -> dict:
        """Ranked tracks (top_k) and every area, for one abstract, in the asked taxonomy's names."""
        asked = validated(schemas.PredictRequest, body)
        return self._answers(asked, [asked])[0]

    @_endpoint("/predict_batch", schemas.PredictBatchRequest, schemas.PredictBatchResponse, "Ranked tracks of papers")
    def predict_batch(self, body: bytes) -> dict:
        """One result per paper, in request order (at most MAX_BATCH papers per request): its answer, or in its
        place an `error` for a paper that failed validation (status 200 when any paper was answered)."""
        asked, _, good, failed = self._batch(body)
        results: list[dict] = [None] * len(asked.papers)  # type: ignore[list-item]
        for (i, _), answer in zip(good, self._answers(asked, [paper for _, paper in good])):
            results[i] = answer
        for result in failed:
            results[result["error"]["index"]] = result
        return {"results": results}

    @_endpoint(
        "/drift",
        DriftRequest,
        None,
        "How a batch differs from the training data",
        **{"409": "The served model carries no training profile (trained before drift reports)."},
    )
    def drift(self, body: bytes) -> dict:
        """How this batch differs from the training data: the drift report of `papertrack label`, as JSON — against
        the asked taxonomy's training papers (default: the model's default taxonomy). Papers that fail validation
        are left out of the report and listed in `errors` (`papers` = `records` + errors)."""
        from papertrack.serving.http.drift_api import NoProfile, batch_report

        asked, head, good, failed = self._batch(body)
        try:
            report = batch_report(head, [p.abstract for _, p in good], [p.title for _, p in good])
        except NoProfile as exc:
            raise BadRequest(str(exc), status=409) from None
        errors = [result["error"] for result in failed]
        return {**report, "papers": len(asked.papers), "errors": errors, "taxonomy": head.taxonomy or None}

    @_endpoint(
        "/explain",
        explain_api.ExplainRequest,
        explain_api.ExplainResponse,
        "Why: the terms behind each track, the nearest labeled papers",
    )
    def explain(self, body: bytes) -> dict:
        """The ranked tracks, the terms that pushed each of them up, and the most similar labeled papers."""
        asked = validated(explain_api.ExplainRequest, body)
        head, top_k = self._head(asked.taxonomy, asked.top_k)
        explain_api.check_terms(top_k, asked.terms)
        answer = explain_api.bounded(
            explain_api.explain(
                head, asked.abstract, asked.title, top_k, n_terms=asked.terms, n_neighbors=asked.neighbors
            )
        )
        (warning,) = unfamiliar_text_warnings(self.predictor, [asked.abstract])
        return answer if warning is None else {**answer, "warning": warning}

    @app.get(
        "/metadata",
        response_model=schemas.MetadataResponse,
        tags=["Service APIs"],
        summary="The served model: version, run, training data digest, labels, metrics",
        responses=openapi.error_responses("403", "421"),
    )
    def metadata(self) -> schemas.MetadataResponse:
        return self._metadata


# Every path the service answers (BentoML answers another path with its own plain-text 404): the app's routes and
# mounts, BentoML's system endpoints and static files.
PATHS = frozenset(
    {"/", "/docs", "/docs.json", "/parse_dump", "/metadata", "/predict", "/predict_batch", "/explain", "/drift"}
    | {"/healthz", "/livez", "/readyz", "/metrics", "/schema.json"}
)
PATH_PREFIXES = ("/page/", "/static_content/")
# Host and Origin checks, the 404 of unknown paths, then the spec (answered before BentoML's own /docs.json route)
PaperTrack.add_asgi_middleware(OriginGuard)
PaperTrack.add_asgi_middleware(UnknownPaths, paths=PATHS, prefixes=PATH_PREFIXES)
PaperTrack.add_asgi_middleware(SpecRoute, spec=lambda: openapi.spec(app))


def _bento_model_tag() -> str | None:
    """The model tag recorded in the Bento this service was loaded from (None outside a Bento)."""
    bento = getattr(PaperTrack, "bento", None)
    if bento is None:
        return None
    for info in bento.info.services:
        if info.name == PaperTrack.name and info.models:
            return str(info.models[0].tag)
    return None


def _json(data: dict) -> Response:
    return Response(json.dumps(data, ensure_ascii=False).encode("utf-8"), media_type="application/json")
