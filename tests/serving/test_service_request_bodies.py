"""How the service reads a JSON request body: over the size limit it is a 413 (declared or chunked), and a
client that leaves mid-body is one log line, not a traceback."""

from __future__ import annotations

import pytest


def read_body(headers: list[tuple[bytes, bytes]], chunks: list[bytes], limit: int = 100):
    """What :func:`service.read_json_body` makes of a request with ``headers`` whose body comes in ``chunks``:
    the body, or the (status, error) it refuses it with."""
    import asyncio

    from starlette.requests import Request

    from papertrack.serving.http.bodies import read_json_body
    from papertrack.serving.http.error_answers import BadRequest

    pending = list(chunks)

    async def receive():
        data = pending.pop(0) if pending else b""
        return {"type": "http.request", "body": data, "more_body": bool(pending)}

    scope = {
        "type": "http",
        "path": "/predict",
        "method": "POST",
        "headers": [(b"content-type", b"application/json"), *headers],
    }
    try:
        return asyncio.run(read_json_body(Request(scope, receive), limit))
    except BadRequest as exc:
        return exc.status, exc.message


def test_bodies_over_the_limit_are_413_declared_or_chunked():
    """The size limit of the JSON endpoints, with a small limit (the real one is 32 MiB)."""
    status, message = read_body([(b"content-length", b"1000")], [b"x" * 1000])
    assert status == 413 and "limit is 100 bytes" in message
    status, message = read_body([], [b"x" * 60, b"x" * 60])  # chunked, no Content-Length
    assert status == 413 and "exceeds the limit of 100 bytes" in message
    assert read_body([], [b"x" * 40, b"x" * 40]) == b"x" * 80  # small chunked bodies come whole
    assert read_body([(b"content-length", b"abc")], [b""]) == (400, "invalid Content-Length header")
    assert read_body([(b"content-length", b"0")], [b""]) == b"{}"  # an empty body is an empty object


def test_an_upload_the_client_abandons_is_one_log_line(caplog):
    """A client that leaves mid-body: no traceback (two of 105 lines each before), one INFO line."""
    import asyncio
    import logging

    from fastapi import FastAPI
    from starlette.requests import Request

    from papertrack.serving.http import error_answers
    from papertrack.serving.http.bodies import read_json_body

    messages = [{"type": "http.request", "body": b'{"abstract": "gra', "more_body": True}, {"type": "http.disconnect"}]

    async def receive():
        return messages.pop(0)

    scope = {"type": "http", "path": "/predict", "method": "POST", "headers": [(b"content-type", b"application/json")]}
    with pytest.raises(error_answers.ClientGone):
        asyncio.run(read_json_body(Request(scope, receive)))
    app = FastAPI()
    error_answers.install(app)
    handler = app.exception_handlers[error_answers.ClientGone]
    with caplog.at_level(logging.INFO, logger="bentoml.papertrack"):
        asyncio.run(handler(Request(scope, receive), error_answers.ClientGone()))
    assert [r.getMessage() for r in caplog.records] == ["client left before sending the whole body of POST /predict"]
