"""Large request bodies take turns in a worker (:class:`LargeRequestTurns`, the worker's outermost layer): at most
``LARGE_AT_ONCE`` of them are in the app at once, small ones never wait, a large body that is still arriving holds
no turn, a body over the limit is not read whole; and the HTTP protocol puts the layer in front of the app uvicorn
loaded, one per worker."""

from __future__ import annotations

import asyncio
import json

from papertrack.serving.http.turns import LARGE_AT_ONCE, LARGE_BODY_BYTES, LargeRequestTurns


class CountingApp:
    """Reads the body, then stays in the app until released; records how many requests were inside at once."""

    def __init__(self):
        self.inside = 0
        self.most = 0
        self.release = asyncio.Event()
        self.bodies: list[bytes] = []

    async def __call__(self, scope, receive, send):
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        self.inside += 1
        self.most = max(self.most, self.inside)
        await self.release.wait()
        self.bodies.append(body)
        self.inside -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


def request(size: int, chunks: int = 1, pause: asyncio.Event | None = None, length: bool = True):
    body = json.dumps({"abstract": "a" * max(0, size - 16)}).encode()
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/explain",
        "headers": [(b"content-type", b"application/json")]
        + ([(b"content-length", str(len(body)).encode())] if length else []),  # else chunked
    }
    step = -(-len(body) // chunks)
    parts = [body[i : i + step] for i in range(0, len(body), step)]
    sent: list[dict] = []

    async def receive():
        index = sum(1 for m in sent if m["type"] == "http.request")
        if index == len(parts) - 1 and pause is not None:
            await pause.wait()  # the last chunk arrives late
        message = {"type": "http.request", "body": parts[index], "more_body": index < len(parts) - 1}
        sent.append(message)
        return message

    answers: list[dict] = []

    async def send(message):
        answers.append(message)

    return scope, receive, send, answers, body


async def _run_until_settled(guard, requests):
    tasks = [asyncio.create_task(guard(scope, receive, send)) for scope, receive, send, *_ in requests]
    for _ in range(50):
        await asyncio.sleep(0)
    return tasks


def test_large_bodies_take_turns_and_small_ones_do_not_wait():
    async def scenario():
        app = CountingApp()
        guard = LargeRequestTurns(app, paths=("/explain",), max_body_bytes=1 << 20)
        large = [request(LARGE_BODY_BYTES + 100) for _ in range(6)]
        tasks = await _run_until_settled(guard, large)
        assert app.inside == LARGE_AT_ONCE  # the others wait, bodies read, not in the app
        small = [request(1_500) for _ in range(5)]
        tasks += await _run_until_settled(guard, small)
        assert app.inside == LARGE_AT_ONCE + 5  # the small ones went straight in
        app.release.set()
        await asyncio.gather(*tasks)
        assert app.most == LARGE_AT_ONCE + 5
        assert sorted(app.bodies) == sorted(r[4] for r in large + small)  # every body reached the app whole
        assert all(r[3][0]["status"] == 200 for r in large + small)

    asyncio.run(scenario())


def test_a_large_body_still_arriving_holds_no_turn():
    async def scenario():
        app = CountingApp()
        guard = LargeRequestTurns(app, paths=("/explain",), max_body_bytes=1 << 20)
        late = asyncio.Event()
        slow = [request(LARGE_BODY_BYTES * 2, chunks=4, pause=late) for _ in range(LARGE_AT_ONCE)]
        tasks = await _run_until_settled(guard, slow)
        assert app.inside == 0  # still receiving: no turn taken
        ready = request(LARGE_BODY_BYTES * 2, chunks=4)
        tasks += await _run_until_settled(guard, [ready])
        assert app.inside == 1  # a complete large body went in past the slow senders
        late.set()
        app.release.set()
        await asyncio.gather(*tasks)
        assert sorted(app.bodies) == sorted(r[4] for r in [*slow, ready])

    asyncio.run(scenario())


def test_a_chunked_large_body_takes_a_turn_and_one_over_the_limit_is_left_to_the_app():
    async def scenario():
        app = CountingApp()
        guard = LargeRequestTurns(app, paths=("/explain",), max_body_bytes=LARGE_BODY_BYTES * 4)
        chunked = [request(LARGE_BODY_BYTES * 2, chunks=3, length=False) for _ in range(LARGE_AT_ONCE + 2)]
        tasks = await _run_until_settled(guard, chunked)
        assert app.inside == LARGE_AT_ONCE  # read whole, then in turn like one with a Content-Length
        over = request(LARGE_BODY_BYTES * 8, chunks=16, length=False)
        tasks += await _run_until_settled(guard, [over])
        assert app.inside == LARGE_AT_ONCE + 1  # past the limit: handed on (the app answers 413), no turn
        app.release.set()
        await asyncio.gather(*tasks)
        assert sorted(app.bodies) == sorted(r[4] for r in [*chunked, over])  # replayed, then the rest

    asyncio.run(scenario())


def test_get_and_other_paths_never_wait():
    async def scenario():
        app = CountingApp()
        guard = LargeRequestTurns(app, paths=("/explain",), max_body_bytes=1 << 20)
        large = [request(LARGE_BODY_BYTES + 100) for _ in range(LARGE_AT_ONCE)]
        tasks = await _run_until_settled(guard, large)
        health = request(0)
        health[0].update(method="GET", path="/healthz", headers=[])
        page = request(LARGE_BODY_BYTES * 2)
        page[0]["path"] = "/parse_dump_elsewhere"
        tasks += await _run_until_settled(guard, [health, page])
        assert app.inside == LARGE_AT_ONCE + 2
        app.release.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())


def test_the_protocol_puts_the_turns_in_front_of_the_app_once_per_worker(monkeypatch):
    """uvicorn makes one protocol per connection: they all call one LargeRequestTurns (one set of turns)."""
    import uvicorn

    from papertrack.serving.http import read_deadline

    async def app(scope, receive, send):  # pragma: no cover - never called
        raise AssertionError

    monkeypatch.setattr(read_deadline.RequestDeadlineProtocol, "_wrapped", None)
    monkeypatch.setattr(read_deadline.RequestDeadlineProtocol, "outermost", None)
    read_deadline.install(outermost=lambda inner: LargeRequestTurns(inner, ("/explain",), 1 << 20))
    config = uvicorn.Config(app, http="auto")
    config.load()

    async def two_connections():
        from uvicorn.server import ServerState

        state = ServerState()
        return [read_deadline.RequestDeadlineProtocol(config, state, {}) for _ in range(2)]

    first, second = asyncio.run(two_connections())
    assert isinstance(first.app, LargeRequestTurns) and first.app is second.app
    assert first.app.app is config.loaded_app
