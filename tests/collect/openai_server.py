"""A small OpenAI-compatible server for tests: /v1/chat/completions and /v1/completions.

Streaming (SSE) and not; replies, per-chunk delays and failures are set on :class:`Script`
while it runs. Started by :func:`serve` in a thread (uvicorn on 127.0.0.1, a free port): real HTTP.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass, field

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route


@dataclass
class Script:
    """What the server answers. ``replies`` are used in turn (cycling); ``fail`` is an HTTP status."""

    replies: list[str] = field(default_factory=lambda: ["Hello from the test server."])
    chunk_delay: float = 0.0
    first_delay: float = 0.0
    fail: int | None = None
    fail_times: int | None = None  # fail only this many requests, then answer
    #: the failure's error message; ``{model}`` and ``{url}`` are the request's model and the
    #: server's root (real servers name both)
    fail_message: str = "scripted failure"
    finish_reason: str = "stop"
    chunk_size: int = 5  # characters per streamed chunk
    ignore_stop: bool = False  # answer past the request's stop sequences (as some servers do)
    #: stream this text this many times after the reply, ignoring max_tokens (a looping model)
    repeat: tuple[str, int] | None = None
    #: the raw JSON of chunks sent as-is instead of the reply (a lone surrogate: '"\\ud800"')
    raw_chunks: list[str] | None = None
    #: whole SSE data payloads sent as-is instead of the reply (a hostile server's chunks)
    raw_events: list[str] | None = None
    requests: list[dict] = field(default_factory=list)
    #: how many of ``repeat``'s chunks were sent (a client that stops reading stops it early)
    repeated: int = 0
    #: the models the server serves (``GET /v1/models``); with ``strict_models`` a request for
    #: another model is answered 404 with an OpenAI-style error body, as real servers do
    models: list[str] = field(default_factory=lambda: ["test-model"])
    strict_models: bool = False
    #: never answer a generation request (a stalled server): the request waits forever
    stall: bool = False
    _next: int = 0

    def reply(self) -> str:
        text = self.replies[self._next % len(self.replies)]
        self._next += 1
        return text


def _chunks(text: str, size: int = 5) -> list[str]:
    out, i = [], 0
    while i < len(text):
        out.append(text[i : i + size])
        i += size
    return out or [""]


def make_app(script: Script) -> Starlette:
    async def handle(request: Request, kind: str):
        body = await request.json()
        script.requests.append(
            {"kind": kind, "body": body, "auth": request.headers.get("authorization")}
        )
        if script.stall:
            await asyncio.Event().wait()
        if script.first_delay:
            await asyncio.sleep(script.first_delay)
        if script.strict_models and body.get("model") not in script.models:
            message = f"The model `{body.get('model')}` does not exist."
            return JSONResponse(
                {
                    "error": {
                        "message": message,
                        "type": "invalid_request_error",
                        "param": "model",
                        "code": "model_not_found",
                    }
                },
                status_code=404,
            )
        if script.fail and (script.fail_times is None or script.fail_times > 0):
            if script.fail_times is not None:
                script.fail_times -= 1
            message = script.fail_message.format(model=body.get("model"), url=request.base_url)
            return JSONResponse({"error": {"message": message}}, status_code=script.fail)
        text = script.reply()
        for stop in [] if script.ignore_stop else body.get("stop") or []:
            if stop in text:
                text = text[: text.index(stop)]
        model = body.get("model", "test")
        created = int(time.time())
        if not body.get("stream"):
            choice = (
                {"index": 0, "message": {"role": "assistant", "content": text}}
                if kind == "chat"
                else {"index": 0, "text": text}
            )
            choice["finish_reason"] = script.finish_reason
            return JSONResponse(
                {
                    "id": "cmpl-test",
                    "object": "chat.completion" if kind == "chat" else "text_completion",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                }
            )

        def chunk(piece: str, last: bool, raw: str | None = None) -> bytes:
            if kind == "chat":
                choice = {"index": 0, "delta": {"content": piece}}
                obj = "chat.completion.chunk"
            else:
                choice = {"index": 0, "text": piece}
                obj = "text_completion"
            choice["finish_reason"] = script.finish_reason if last else None
            data = orjson.dumps(
                {
                    "id": "cmpl-test",
                    "object": obj,
                    "created": created,
                    "model": model,
                    "choices": [choice],
                }
            )
            if raw is not None:  # JSON that orjson would not write (a lone surrogate)
                data = data.replace(b'"@RAW@"', raw.encode())
            return b"data: " + data + b"\n\n"

        async def events():
            if script.raw_events is not None:
                for payload in script.raw_events:
                    yield b"data: " + payload.encode() + b"\n\n"
                yield b"data: [DONE]\n\n"
                return
            if script.raw_chunks is not None:
                for i, raw in enumerate(script.raw_chunks):
                    yield chunk("@RAW@", i == len(script.raw_chunks) - 1, raw)
                yield b"data: [DONE]\n\n"
                return
            pieces = _chunks(text, script.chunk_size)
            for i, piece in enumerate(pieces):
                if script.chunk_delay:
                    await asyncio.sleep(script.chunk_delay)
                last = i == len(pieces) - 1 and script.repeat is None
                yield chunk(piece, last)
            if script.repeat is not None:
                again, times = script.repeat
                for i in range(times):
                    if await request.is_disconnected():  # the client stopped reading
                        break
                    script.repeated = i + 1
                    yield chunk(again, i == times - 1)
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def chat(request):
        return await handle(request, "chat")

    async def completions(request):
        return await handle(request, "completions")

    async def models(request):
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": m, "object": "model", "owned_by": "test"} for m in script.models],
            }
        )

    return Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
        ]
    )


class Running:
    def __init__(self, server: uvicorn.Server, thread: threading.Thread, port: int, script: Script):
        self.server, self.thread, self.port, self.script = server, thread, port, script
        self.base_url = f"http://127.0.0.1:{port}/v1"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(script: Script | None = None) -> Running:
    """Start the server in a thread on a free loopback port."""
    script = script or Script()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(make_app(script), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("test OpenAI server did not start")
        time.sleep(0.01)
    return Running(server, thread, port, script)


def openai_backend(name: str, kind: str, base_url: str, **kw):
    """A backend config pointing at a test server (``kind``: openai-chat or openai-completions)."""
    from hhrlhf.collect.config import BackendConfig

    return BackendConfig(name=name, kind=kind, base_url=base_url, model="test-model", **kw)
