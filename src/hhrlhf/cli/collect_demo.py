"""``hh demo``'s collection step: the app on a free loopback port, one scripted conversation, an export."""

from __future__ import annotations

import tempfile
import threading
import time
from pathlib import Path

import click

from ..errors import HHError, require

__all__ = ["demo_step", "serve_in_thread"]


def serve_in_thread(app, host: str = "127.0.0.1", timeout: float = 20.0):
    """Start ``app`` under uvicorn in a daemon thread on a free port: ``(base_url, stop)``."""
    uvicorn = require("uvicorn", "web", "the collection app")

    class _Server(uvicorn.Server):
        def install_signal_handlers(self):  # only the main thread may
            pass

    server = _Server(uvicorn.Config(app, host=host, port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, name="hh-collect-demo", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise HHError(f"the collection app did not start on {host} within {timeout:g} s")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]

    def stop():
        server.should_exit = True
        thread.join(timeout)

    return f"http://{host}:{port}", stop


#: the scripted annotator: (message, pick, strength, edit or None)
SCRIPT = [
    ("How do I grow tomatoes on a balcony?", "a", 3, None),
    (
        "Can you give me a simple recipe for pancakes?",
        "b",
        4,
        "Mix a cup of flour, a cup of milk, an egg and a pinch of salt; cook small rounds "
        "in a hot buttered pan until bubbles form, then flip.",
    ),
]


def demo_step(data: str, out: Path) -> None:
    """Start the app with the demo backend, run one conversation through the API, export it."""
    for module in ("fastapi", "uvicorn", "sqlalchemy", "alembic", "httpx", "jinja2"):
        require(module, "web", "the collection app")
    import httpx

    from ..collect.app import create_app
    from ..collect.config import demo_settings
    from ..collect.export import export_collection
    from ..collect.storage import Storage

    with tempfile.TemporaryDirectory(prefix="hh-collect-demo-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'collect.db'}"
        storage = Storage(url)
        try:
            storage.upgrade()
            _, token = storage.add_annotator("demo-annotator")
            base, stop = serve_in_thread(create_app(demo_settings(url), storage=storage))
            try:
                click.echo(f"the app is up at {base} (demo backend: no model, no network)")
                headers = {"Authorization": f"Bearer {token}"}
                with httpx.Client(base_url=base, headers=headers, timeout=30) as api:
                    conv = _ok(
                        api.post(
                            "/api/v1/conversations",
                            json={"mode": "helpful", "task_description": "Everyday advice"},
                        )
                    )
                    for text, pick, strength, edit in SCRIPT:
                        turn = _ok(
                            api.post(
                                f"/api/v1/conversations/{conv['id']}/turns", json={"text": text}
                            )
                        )
                        click.echo(f"\nHuman: {text}")
                        for c in turn["candidates"]:
                            click.echo(f"  {c['slot'].upper()}: {_short(c['text'])}")
                        body = {"pick": pick, "strength": strength}
                        if edit:
                            body["edit"] = edit
                        _ok(api.post(f"/api/v1/turns/{turn['id']}/choice", json=body))
                        click.echo(
                            f"  picked {pick.upper()}{strength}"
                            + (f", edited to: {_short(edit)}" if edit else "")
                        )
                    _ok(
                        api.post(
                            f"/api/v1/conversations/{conv['id']}/finish",
                            json={"comment": "a scripted demo conversation"},
                        )
                    )
            finally:
                stop()
            target = out / "collect-export"
            manifest = export_collection(storage, target, force=True)
        finally:
            storage.dispose()
    click.echo(
        f"\nexported {manifest['rows']} comparisons ({manifest['comparisons']['pick']} picks, "
        f"{manifest['comparisons']['edit']} edit) to {target} "
        "(hh collect export; loadable with load_dataset('helpful-base', data=...))"
    )
    click.echo("try it by hand: hh serve --demo   (then open the login link it prints)")
    click.echo("browse the sample: hh serve --demo --data sample   (then open /data)")


def _ok(response) -> dict:
    if response.status_code >= 400:
        try:
            message = response.json().get("error", response.text)
        except ValueError:
            message = response.text
        raise HHError(
            f"demo: {response.request.method} {response.request.url.path} answered "
            f"{response.status_code}: {message}"
        )
    return response.json()


def _short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
