"""Where answers come from: the registered model in this process, or a running papertrack service.

A backend has ``label(records, k) -> list[Answer | str]`` (one answer per record, in order; a string is
the reason a record was rejected), ``labels``/``n_labels`` (the model's label set), ``identity`` (what a
resumed run must still use), ``description`` (for the log line) and ``close()``. Both backends answer
with :meth:`TrackPredictor.predict`'s :class:`~papertrack.models.answer.AnswerDict` — locally by calling it,
over HTTP through ``/predict_batch`` (which calls it) — so the rows do not depend on the backend.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from papertrack.features.ingest import Record
from papertrack.serving.batch.labeler.label_errors import LabelError, ModelMissing
from papertrack.serving.size_limits import MAX_ABSTRACT_CHARS, MAX_BATCH, MAX_TITLE_CHARS, too_long

if TYPE_CHECKING:
    from papertrack.models.answer import AnswerDict as Answer


class Backend(Protocol):
    labels: frozenset[str]
    n_labels: int
    identity: dict
    description: str

    def label(self, records: Sequence[Record], k: int) -> list[Answer | str]: ...

    def close(self) -> None: ...


def over_limits(record: Record) -> str | None:
    """Why the model does not take this record (an abstract or title over the service's limits), else None.

    Applied by every backend, so labeling locally and through ``--url`` give the same rows and errors.
    """
    if len(record.abstract) > MAX_ABSTRACT_CHARS:
        return too_long("abstract", len(record.abstract), MAX_ABSTRACT_CHARS)
    if record.title and len(record.title) > MAX_TITLE_CHARS:
        return too_long("title", len(record.title), MAX_TITLE_CHARS)
    return None


class LocalBackend:
    """The registered pyfunc's TrackPredictor, in this process (and in worker processes forked from it)."""

    forkable = True  # a forked worker can label with it (the HTTP backend's client and threads cannot)

    def __init__(self, model_uri: str, taxonomy: str | None = None, *, store):
        """The model behind ``model_uri`` in ``store``: a :class:`papertrack.store.Store`, or the function that
        opens it (the ``label`` command's: called here, when the model is loaded)."""
        from papertrack.serving.model_loader import load_model
        from papertrack.store import Store

        opened = store if isinstance(store, Store) else store()
        loaded = load_model(model_uri, opened, error=ModelMissing).predictor
        self.root = loaded  # answers through it: its training vocabulary warns of unfamiliar text in any taxonomy
        self.predictor = loaded.head(taxonomy)  # UnknownTaxonomy (a UsageError) lists the known ones
        self.taxonomy = self.predictor.taxonomy
        self.labels = frozenset(self.predictor.space.labels)
        self.n_labels = self.predictor.space.n_labels
        card = self.predictor.card
        # what a resumed run must still use: the same trained model and taxonomy (rows do not depend on local vs
        # --url)
        self.identity = {**card.identity(), **({"taxonomy": self.taxonomy} if self.taxonomy else {})}
        self.description = f"{model_uri} ({card.short()}" + (f"; {self.taxonomy}" if self.taxonomy else "") + ")"

    def label(self, records: Sequence[Record], k: int) -> list[Answer | str]:
        answers: list[Answer | str | None] = [over_limits(r) for r in records]
        good = [i for i, answer in enumerate(answers) if answer is None]
        if good:
            abstracts, titles = [records[i].abstract for i in good], [records[i].title for i in good]
            predicted = self.root.predict(abstracts, titles, k, taxonomy=self.taxonomy or None)
            for i, answer in zip(good, predicted):
                answers[i] = answer
        return answers  # type: ignore[return-value]

    def close(self) -> None:
        pass


class HttpBackend:
    """A running papertrack service: ``POST /predict_batch`` in requests of at most ``batch`` papers."""

    def __init__(
        self,
        url: str,
        batch: int = 500,
        timeout: float = 120.0,
        retries: int = 3,
        in_flight: int = 2,
        taxonomy: str | None = None,
    ):
        from concurrent.futures import ThreadPoolExecutor

        import httpx

        self.url = url.rstrip("/")
        self.batch = min(batch, MAX_BATCH)
        self.retries = retries
        self.pool = ThreadPoolExecutor(max_workers=in_flight)  # requests in flight: keeps several workers busy
        self.client = httpx.Client(base_url=self.url, timeout=timeout)
        try:
            response = self.client.get("/metadata")
        except httpx.HTTPError as exc:
            raise ModelMissing(
                f"cannot reach the papertrack service at {self.url} ({exc}). Start it with `papertrack serve`."
            ) from None
        if response.status_code != 200:
            raise ModelMissing(f"{self.url}/metadata answered {response.status_code}: {response.text[:200]}")
        meta = response.json()
        self.labels = frozenset(meta["labels"])
        self.n_labels = int(meta["n_labels"])
        self.taxonomy = meta.get("default_taxonomy") or ""
        if taxonomy is not None:
            from papertrack.models.artifact import UnknownTaxonomy, find_taxonomy

            known = meta.get("taxonomies") or {}
            match = find_taxonomy(taxonomy, {name: info.get("sources", []) for name, info in known.items()})
            if match is None:
                raise UnknownTaxonomy(taxonomy, list(known) or ["default"])
            self.taxonomy = match
            self.labels = frozenset(known[match]["labels"])
            self.n_labels = int(known[match]["n_labels"])
        model = meta["model"]
        self.identity = {
            "run_id": model.get("run_id"),
            "data_digest": meta.get("data_digest"),
            "candidate": meta.get("candidate"),
            **({"taxonomy": self.taxonomy} if self.taxonomy else {}),
        }
        self.description = (
            f"{self.url} (model {model.get('name')} v{model.get('version')}, run {model.get('run_id', '')[:8]})"
        )

    def label(self, records: Sequence[Record], k: int) -> list[Answer | str]:
        answers: list[Answer | str | None] = [None] * len(records)
        sendable = []
        for i, record in enumerate(records):
            answers[i] = over_limits(record)
            if answers[i] is None:
                sendable.append(i)
        parts = [sendable[start : start + self.batch] for start in range(0, len(sendable), self.batch)]
        sent = [self.pool.submit(self._send, [records[i] for i in part], k) for part in parts]
        for part, future in zip(parts, sent):
            for i, answer in zip(part, future.result()):
                answers[i] = answer
        return answers  # type: ignore[return-value]

    def _send(self, records: Sequence[Record], k: int) -> list[Answer | str]:
        body: dict = {"papers": [{"abstract": r.abstract, "title": r.title} for r in records], "top_k": k}
        if self.taxonomy:
            body["taxonomy"] = self.taxonomy
        response = self._post(body)
        if response.status_code == 200:  # a paper the service rejects has an error in place of its answer
            return [_answer_or_reason(result) for result in response.json()["results"]]
        if 400 <= response.status_code < 500 and len(records) > 1:
            # isolate the paper(s) the service rejects; the others are labeled
            return [answer for r in records for answer in self._send([r], k)]
        if 400 <= response.status_code < 500:
            return [f"rejected by the service ({response.status_code}): {_error_text(response)}"]
        raise LabelError(f"the service at {self.url} answered {response.status_code}: {_error_text(response)}")

    def drift(self, records: Sequence[Record]) -> tuple[dict | None, str]:
        """(the service's drift report of ``records`` — ``POST /drift``, at most MAX_BATCH —, why not when None)."""
        body: dict = {"papers": [{"abstract": r.abstract, "title": r.title} for r in records]}
        if self.taxonomy:
            body["taxonomy"] = self.taxonomy
        if self.client.is_closed:  # labeling is over (close()): one more request
            import httpx

            self.client = httpx.Client(base_url=self.url, timeout=self.client.timeout)
        try:
            response = self._post(body, "/drift")
        except LabelError as exc:  # the rows are written: the run does not fail for its report
            return None, str(exc)
        finally:
            self.client.close()
        if response.status_code == 200:
            return response.json(), ""
        return None, f"{self.url}/drift answered {response.status_code}: {_error_text(response)}"

    def _post(self, body: dict, path: str = "/predict_batch"):
        import httpx

        for attempt in range(self.retries + 1):
            try:
                response = self.client.post(path, json=body)
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 500:
                    return response
                error = f"{response.status_code}: {_error_text(response)}"
            if attempt < self.retries:
                time.sleep(0.5 * 2**attempt)
        raise LabelError(
            f"the service at {self.url} failed {self.retries + 1} times ({error}); rerun with --resume once it is back"
        )

    def close(self) -> None:
        self.pool.shutdown(cancel_futures=True)
        self.client.close()


def _answer_or_reason(result: dict) -> Answer | str:
    """A ``/predict_batch`` result: the answer, or why the service rejected the paper (its fields' errors)."""
    if "error" not in result:
        return result  # type: ignore[return-value]
    detail = result["error"].get("detail") or []
    why = "; ".join(f"{'.'.join(map(str, d.get('loc', [])[2:]))}: {d.get('msg')}" for d in detail)
    return f"rejected by the service: {why or result['error'].get('error')}"


def _error_text(response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(data, dict) and "error" in data:
        return str(data["error"])
    return str(data)[:300]
