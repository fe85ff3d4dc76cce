"""The page for people, served by the same BentoML service: ``GET /`` (plain HTML/CSS/JS shipped in this folder,
nothing from the network), BentoML's OpenAPI page moved to ``GET /docs`` (its spec stays at ``/docs.json``),
and ``POST /parse_dump``, which reads a dropped dump with :mod:`papertrack.features.ingest` — the one parser of
every input layout — so the page labels any file ``papertrack label`` reads, with the same messages.

:func:`install` adds these routes to the service's mounted FastAPI app.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
import time
import weakref
from pathlib import Path

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect
from starlette.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles

from papertrack.features.ingest import IngestError, Record, detect_format, input_limits, iter_records
from papertrack.serving.http.error_answers import ClientGone, error_body, lone_surrogate

STATIC = Path(__file__).parent / "static"
MAX_DUMP_BYTES = 20 * 1024 * 1024
"""Largest file the page may send to ``/parse_dump`` (bytes); label larger dumps with ``papertrack label``."""
MAX_DUMP_RECORDS = 20_000
MAX_DUMP_TEXT_BYTES = 100 * 1024 * 1024
"""Largest dump once decompressed (a gzip file is counted by what it holds, not by its compressed size)."""
MAX_DUMP_ANSWER_CHARS = 32 * 1024 * 1024
"""Most characters of text (abstracts, titles, ids, labels, reasons) in one answer: a 684 kB gzip answered 101.6 MB
of JSON, and 16 at once took 1.9 GB of one worker (hostile input, round three)."""
PARSE_SECONDS = 30.0
"""Reading one dump stops after this long (checked between records) with a 413 saying to use ``papertrack label``."""
_GATES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def _one_at_a_time() -> asyncio.Semaphore:
    """One dump is read at a time per worker (the others wait before their body is read): memory stays one
    dump's. One semaphore per event loop (a worker has one; tests start several)."""
    loop = asyncio.get_running_loop()
    if loop not in _GATES:
        _GATES[loop] = asyncio.Semaphore(1)
    return _GATES[loop]


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def install(app: FastAPI) -> None:
    app.add_api_route("/", index, methods=["GET"], include_in_schema=False)
    app.add_api_route("/docs", openapi_page, methods=["GET"], include_in_schema=False)
    # not in the OpenAPI spec: a file's bytes cannot be described by a schema (random bytes are "schema-valid"
    # yet no dump), so the spec could not be honest about it; the page is its client (README documents it)
    app.add_api_route("/parse_dump", parse_dump, methods=["POST"], include_in_schema=False)
    app.mount("/page", StaticFiles(directory=STATIC), name="page")


# The page and Swagger UI load their scripts and styles from this origin; Swagger UI's CSS draws its icons
# with data: images. Scripts set styles through the DOM (allowed), never as inline <style> or style="".
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}


async def index() -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html", headers=PAGE_HEADERS)


async def openapi_page() -> FileResponse:
    """BentoML's OpenAPI (Swagger UI) page with BentoML's Swagger UI files, but not its template, which loads
    Google Tag Manager from the network and runs inline scripts (refused by the page's Content-Security-Policy)."""
    return FileResponse(STATIC / "docs.html", media_type="text/html", headers=PAGE_HEADERS)


def _error(message: str, status: int = 400) -> Response:
    return Response(error_body(message), status_code=status, media_type="application/json")


async def parse_dump(request: Request, filename: str = "dump.txt", format: str | None = None) -> Response:
    """The body is the file's bytes (any Content-Type); ``filename`` gives the extension used to detect the
    layout (``format`` overrides it). Answers ``{"format", "papers": [{id, title, abstract, label, line}],
    "errors": [{line, kind, reason}]}`` or a 4xx whose ``error`` names the file, the line and the problem.

    The body is read first; then reading the dump and the answer's JSON run in a thread, one dump at a time per
    worker, within ``PARSE_SECONDS`` and ``MAX_DUMP_ANSWER_CHARS`` (else 413): the event loop keeps answering other
    requests and ``/healthz``."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_DUMP_BYTES:
        return _error(_too_big(filename), 413)
    name = _SAFE_NAME.sub("_", Path(filename).name)[-120:] or "dump.txt"
    if not name.strip("."):  # "..", "." : no file name (would be the folder itself, or its parent)
        return _error(
            f"filename {filename[:200]!r} is not a file name: give the dump's name, e.g. "
            f"?filename=papers.jsonl (its extension tells the layout)"
        )
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_DUMP_BYTES:
                return _error(_too_big(filename), 413)
    except ClientDisconnect:
        raise ClientGone() from None  # one line in the log
    data = bytes(body)
    del body
    async with _one_at_a_time():  # once the body is here: a slow uploader holds no other dump back
        try:
            answer = await run_in_threadpool(answer_dump, data, name, format)
        except TooMuchToAnswer as exc:
            return _error(str(exc), 413)
        except IngestError as exc:
            return _error(f"{name}{'' if exc.line is None else f':{exc.line}'}: {_on_the_page(exc.message)}")
        except UnicodeEncodeError:  # a lone surrogate escape (\udc00) the parser let through into a str
            return _error(_surrogate_message(name, data))
    return Response(answer, media_type="application/json")


_COLUMN_OPTION = re.compile(r"(?<![\w`-])(--(?:abstract|title|id)-column(?: [^\s),;`]+)?)")


def _on_the_page(message: str) -> str:
    """The parser's message for someone on the page, who has no command-line options: ``--abstract-column X``
    reads "`papertrack label --abstract-column X`" (the command that takes it)."""
    return _COLUMN_OPTION.sub(r"`papertrack label \1`", message)


class TooMuchToAnswer(Exception):
    """A dump whose answer would be over ``MAX_DUMP_ANSWER_CHARS`` or take over ``PARSE_SECONDS`` (a 413)."""


def answer_dump(data: bytes, name: str, fmt: str | None = None) -> bytes:
    """:func:`read_dump`'s answer as UTF-8 JSON (made here, in the caller's thread, not in the event loop)."""
    return json.dumps(read_dump(data, name, fmt), ensure_ascii=False).encode("utf-8")


def _surrogate_message(name: str, body: bytes) -> str:
    """What to fix in a dump holding a lone UTF-16 surrogate (``\\udc00`` in JSON): not a character, so
    neither labeled nor answered; names its line when the escape is in the file's bytes (not compressed)."""
    text = body.decode("utf-8", errors="replace")
    found = lone_surrogate(text)
    if found is None:
        return (
            f"{name}: it holds a lone UTF-16 surrogate escape (e.g. \\udc00), which is not a character; "
            f"remove it or write the full surrogate pair (or the character itself)"
        )
    escape, offset = found
    return (
        f"{name}:{text.count(chr(10), 0, offset) + 1}: {escape} is a lone UTF-16 surrogate escape, which is "
        f"not a character; remove it or write the full surrogate pair (or the character itself)"
    )


def read_dump(data: bytes, name: str, fmt: str | None = None) -> dict:
    """Every record of a dump given as bytes (written to a temporary file named ``name`` for ingest)."""
    with tempfile.TemporaryDirectory(prefix="papertrack-dump-") as folder, input_limits(max_bytes=MAX_DUMP_TEXT_BYTES):
        path = Path(folder) / name
        path.write_bytes(data)
        fmt = detect_format(path, fmt)
        papers, errors = [], []
        deadline, chars = time.monotonic() + PARSE_SECONDS, 0
        for item in iter_records(path, fmt, labeled=None):
            if isinstance(item, Record):
                chars += len(item.abstract) + len(item.id) + len(item.title or "") + len(item.label or "")
                papers.append(
                    {
                        "id": item.id,
                        "title": item.title,
                        "abstract": item.abstract,
                        "label": item.label,
                        "line": item.line,
                    }
                )
            else:
                errors.append({"line": item.line, "kind": item.kind, "reason": _on_the_page(item.reason)})
                chars += len(item.reason)
            if chars > MAX_DUMP_ANSWER_CHARS or time.monotonic() > deadline:
                why = (
                    f"the answer would hold more than {MAX_DUMP_ANSWER_CHARS >> 20} Mi characters of text"
                    if chars > MAX_DUMP_ANSWER_CHARS
                    else f"reading it takes more than {PARSE_SECONDS:g} s"
                )
                raise TooMuchToAnswer(
                    f"{name}: {why} (stopped at line {item.line:,}); label this dump with "
                    f"`papertrack label {name} -o labeled.csv`"
                )
            if len(papers) + len(errors) > MAX_DUMP_RECORDS:
                raise IngestError(
                    name,
                    item.line,
                    f"more than {MAX_DUMP_RECORDS:,} records: label this dump with "
                    f"`papertrack label {name} -o labeled.csv`",
                )
    if not papers and not errors:
        raise IngestError(name, None, "no record found")
    return {"format": fmt, "papers": papers, "errors": errors}


def _too_big(filename: str) -> str:
    return (
        f"{filename} is larger than {MAX_DUMP_BYTES // (1024 * 1024)} MB; label it with "
        f"`papertrack label {filename} -o labeled.csv`"
    )
