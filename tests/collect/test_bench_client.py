"""The bench's small HTTP client (bench/bench_collect.py's LoopbackClient), against a loopback
server that answers each way HTTP/1.1 allows: a length, chunks, or the end of the connection."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import httpx
import pytest

from hhrlhf.collect.serve.workers import free_port

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_collect", ROOT / "bench" / "bench_collect.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

ANSWERS = {
    b"/length": b'HTTP/1.1 201 Created\r\nContent-Length: 11\r\nServer-Timing: app;dur=1.5\r\n\r\n{"id": 7}\r\n',
    b"/chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'4\r\n{"a"\r\n3\r\n: 1\r\n1\r\n}\r\n0\r\n\r\n',
    b"/close": b'HTTP/1.1 429 Too Many Requests\r\nConnection: close\r\n\r\n{"error": "slow down"}',
}


async def _serve(seen: list[tuple[bytes, bytes]]):
    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                body = await reader.readexactly(length)
                path = head.split(b" ")[1]
                seen.append((head.split(b"\r\n")[0], body))
                if path == b"/cut":
                    writer.close()
                    return
                writer.write(ANSWERS[path])
                await writer.drain()
                if path == b"/close":
                    writer.close()
                    return
        except asyncio.IncompleteReadError:
            writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


def test_reads_every_framing_and_reconnects_after_close():
    seen: list[tuple[bytes, bytes]] = []

    async def main():
        server = await _serve(seen)
        port = server.sockets[0].getsockname()[1]
        async with bench.LoopbackClient(f"http://127.0.0.1:{port}", {"X-T": "1"}, 5) as c:
            a = await c.post("/length", json={"text": "hi"})
            b = await c.get("/chunked")
            closed = await c.post("/close", json={})
            after = await c.get("/length")  # a new connection
            with pytest.raises(httpx.ReadError, match="the connection was cut"):
                await c.get("/cut")
            again = await c.get("/chunked")
        server.close()
        return a, b, closed, after, again

    a, b, closed, after, again = asyncio.run(main())
    assert (a.status_code, a.json(), a.headers["server-timing"]) == (201, {"id": 7}, "app;dur=1.5")
    assert bench.server_time_ms(a.headers["server-timing"]) == 1.5
    assert (b.status_code, b.json()) == (200, {"a": 1})
    assert (closed.status_code, closed.json()) == (429, {"error": "slow down"})
    with pytest.raises(httpx.HTTPStatusError):
        closed.raise_for_status()
    assert after.json() == {"id": 7} and again.json() == {"a": 1}
    assert seen[0] == (b"POST /length HTTP/1.1", b'{"text":"hi"}')
    assert [line for line, _ in seen[1:]] == [
        b"GET /chunked HTTP/1.1",
        b"POST /close HTTP/1.1",
        b"GET /length HTTP/1.1",
        b"GET /cut HTTP/1.1",
        b"GET /chunked HTTP/1.1",
    ]


def test_a_refused_connection_is_httpx_connect_error():
    async def main():
        async with bench.LoopbackClient(f"http://127.0.0.1:{free_port('127.0.0.1')}", {}, 5) as c:
            await c.get("/")

    with pytest.raises(httpx.ConnectError):
        asyncio.run(main())


def test_the_slowest_half_seconds_of_a_run_are_named():
    """A stall (every choice ending in one window slow) is the first window reported."""
    timeline = [(0.1 * i, "choice", 0.010) for i in range(60)]  # 6 s of 10 ms choices
    timeline += [(3.1, "choice", 0.250), (3.3, "choice", 0.180), (4.2, "choice", 0.040)]
    timeline += [(1.0, "turn", 0.900)]  # turns are not choices
    assert bench.slowest_windows(timeline) == [
        (3.0, 7, 0.250),
        (4.0, 6, 0.040),
        (0.0, 5, 0.010),
    ]
    assert bench.slowest_windows(timeline, "turn") == [(1.0, 1, 0.900)]
    assert bench.slowest_windows([]) == []
