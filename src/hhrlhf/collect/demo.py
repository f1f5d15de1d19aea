"""The collection loop in one call: the app on a free loopback port with the demo backend,
one scripted conversation through its API, an export (``hh demo``'s last step).

Needs the ``[web]`` extra (:class:`~hhrlhf.errors.MissingExtraError` without it). Nothing here
prints; :func:`run_scripted_collection` returns what happened.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HHError, require
from .services import annotators

if TYPE_CHECKING:
    import httpx
    from starlette.types import ASGIApp

__all__ = ["SCRIPT", "CollectionDemo", "ScriptedTurn", "run_scripted_collection", "serve_in_thread"]

#: the scripted annotator: (message, pick, strength, edit or None)
SCRIPT: list[tuple[str, str, int, str | None]] = [
    ("How do I grow tomatoes on a balcony?", "a", 3, None),
    (
        "Can you give me a simple recipe for pancakes?",
        "b",
        4,
        "Mix a cup of flour, a cup of milk, an egg and a pinch of salt; cook small rounds "
        "in a hot buttered pan until bubbles form, then flip.",
    ),
]


def serve_in_thread(
    app: ASGIApp, host: str = "127.0.0.1", timeout: float = 20.0
) -> tuple[str, Callable[[], None]]:
    """Start ``app`` under uvicorn in a daemon thread on a free port: ``(base_url, stop)``
    (off the main thread, uvicorn installs no signal handlers)."""
    require("uvicorn", "web", "the collection app")
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="hh-collect-demo", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise HHError(f"the collection app did not start on {host} within {timeout:g} s")
        time.sleep(0.02)
    port: int = server.servers[0].sockets[0].getsockname()[1]

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout)

    return f"http://{host}:{port}", stop


@dataclass
class ScriptedTurn:
    """One human message, the candidates the app offered, and the scripted choice."""

    text: str
    #: (slot, text) of each candidate, in the app's order
    candidates: list[tuple[str, str]]
    pick: str
    strength: int
    edit: str | None


@dataclass
class CollectionDemo:
    base_url: str
    turns: list[ScriptedTurn] = field(default_factory=list)
    #: the export's directory and manifest (:func:`hhrlhf.collect.services.export.export_collection`)
    target: Path | None = None
    manifest: dict[str, Any] = field(default_factory=dict)


def run_scripted_collection(
    out: str | os.PathLike[str], script: Sequence[tuple[str, str, int, str | None]] = SCRIPT
) -> CollectionDemo:
    """Start the app with the demo backend (no model, no network) on a throwaway database, run
    one conversation of ``script`` through the API, finish it and export the collection to
    ``out/collect-export`` (replacing an earlier one)."""
    for module in ("fastapi", "uvicorn", "sqlalchemy", "alembic", "httpx", "jinja2"):
        require(module, "web", "the collection app")
    import httpx

    from .config import demo_settings
    from .db import Storage
    from .services.export import export_collection
    from .web.app import create_app

    with tempfile.TemporaryDirectory(prefix="hh-collect-demo-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'collect.db'}"
        storage = Storage(url)
        try:
            storage.upgrade()
            _, token = annotators.add_annotator(storage, "demo-annotator")
            base, stop = serve_in_thread(create_app(demo_settings(url), storage=storage))
            done = CollectionDemo(base_url=base)
            try:
                headers = {"Authorization": f"Bearer {token}"}
                with httpx.Client(base_url=base, headers=headers, timeout=30) as api:
                    conv = _ok(
                        api.post(
                            "/api/v1/conversations",
                            json={"mode": "helpful", "task_description": "Everyday advice"},
                        )
                    )
                    for text, pick, strength, edit in script:
                        turn = _ok(
                            api.post(
                                f"/api/v1/conversations/{conv['id']}/turns", json={"text": text}
                            )
                        )
                        body: dict[str, object] = {"pick": pick, "strength": strength}
                        if edit:
                            body["edit"] = edit
                        _ok(api.post(f"/api/v1/turns/{turn['id']}/choice", json=body))
                        candidates = [(c["slot"], c["text"]) for c in turn["candidates"]]
                        done.turns.append(ScriptedTurn(text, candidates, pick, strength, edit))
                    _ok(
                        api.post(
                            f"/api/v1/conversations/{conv['id']}/finish",
                            json={"comment": "a scripted demo conversation"},
                        )
                    )
            finally:
                stop()
            done.target = Path(out) / "collect-export"
            done.manifest = dict(export_collection(storage, done.target, force=True))
        finally:
            storage.dispose()
    return done


def _ok(response: httpx.Response) -> dict[str, Any]:
    if response.status_code >= 400:
        try:
            message = response.json().get("error", response.text)
        except ValueError:
            message = response.text
        raise HHError(
            f"demo: {response.request.method} {response.request.url.path} answered "
            f"{response.status_code}: {message}"
        )
    answer: dict[str, Any] = response.json()  # the API answers a JSON object
    return answer
