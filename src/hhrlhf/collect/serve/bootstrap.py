"""``hh serve`` from parsed options to serving: migrate the database, say what is served, hand
the workers their :class:`~.options.ServeOptions`, run uvicorn (or :mod:`.workers`' processes)."""

from __future__ import annotations

import http.client
import os
import sys
import threading
from dataclasses import replace
from typing import Any

import click
import uvicorn

from ...layout import select_files
from ..config import Settings, check_model_folders
from ..db import Storage
from ..db.engine import shown_url, worker_connections
from ..generation.health import CHECKED_KINDS, check_backends
from ..services import annotators
from .factory import APP
from .options import ServeOptions
from .server import guarded_protocol
from .storage import open_storage
from .workers import balances, free_port, run_workers

__all__ = ["serve", "SHUTDOWN_GRACE"]

#: seconds ``hh serve`` waits for open requests after Ctrl+C before it cuts them
SHUTDOWN_GRACE = 1.0


def serve(options: ServeOptions, host: str, port: int) -> None:
    """Prepare (settings, data, database, backends), print the URL once it answers, serve
    until stopped. ``port`` 0: a free one."""
    settings = options.settings()
    if options.config:
        check_model_folders(settings, options.config)
    if options.data:
        files = select_files("all", data=options.data, download=False)
        click.echo(f"data: {len(files)} files to browse at /data", err=True)
    storage = open_storage(settings.db_url, migrate=True)
    if port == 0:  # the URL printed must be the one served
        port = free_port(host)
    base = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    _describe(settings, storage, options.workers)
    ready = []
    if not options.config:
        ready.append(f"log in: {base}/login?token={_demo_token(storage)}")
    ready.append(f"serving on {base}/ (Ctrl+C to stop)")
    storage.dispose()
    announcing = _announce_when_ready(host, port, ready)
    # what the workers read back: the database as resolved, the config wherever they start
    config = os.path.abspath(options.config) if options.config else None
    replace(options, db_url=settings.db_url, config=config).export()
    try:
        _run(host, port, options.workers)
    finally:  # a server that never answered: stop asking
        announcing.set()


def _describe(settings: Settings, storage: Storage, workers: int) -> None:
    """The database, its connections and the backends, one line each (stderr)."""
    click.echo(
        f"database: {shown_url(settings.db_url)} (migrated to {storage.revision()})", err=True
    )
    if not settings.db_url.startswith("sqlite"):
        each = worker_connections(settings.db_connections, workers)
        click.echo(
            f"database connections: up to {each * workers} ({each} per worker; "
            f"db_connections = {settings.db_connections})",
            err=True,
        )
    click.echo(f"backends: {', '.join(settings.backend_names)}", err=True)
    _check_backends(settings)


def _demo_token(storage: Storage) -> str:
    """A fresh login token for the demo admin (made on the first start)."""
    if annotators.annotator_by_name(storage, "demo") is None:
        _, token = annotators.add_annotator(storage, "demo", role="admin")
        return token
    return annotators.rotate_token(storage, "demo")


def _run(host: str, port: int, workers: int) -> None:
    """Serve :data:`.factory.APP` from ``workers`` processes until stopped."""
    # uvicorn.Config's keywords (the spawned workers get them pickled)
    config: dict[str, Any] = dict(
        app=APP,
        factory=True,
        host=host,
        port=port,
        log_level="warning",
        proxy_headers=False,  # the app reads the proxy headers itself (forwarded_allow_ips)
        http=guarded_protocol(),  # a deadline for headers, a cap on connections
        # Ctrl+C: open event streams (a stalled backend's) get this long, then are cut
        timeout_graceful_shutdown=SHUTDOWN_GRACE,
    )
    if workers > 1 and balances():
        # a listening socket per worker: the kernel spreads the connections over them
        sys.exit(run_workers(workers, **config))
    uvicorn.run(workers=workers, **config)


def _check_backends(settings: Settings) -> None:
    """One line per backend that talks to a server: ok, or what is wrong (the start goes on)."""
    for health in check_backends(settings.backends):
        if health.kind not in CHECKED_KINDS:
            continue
        if health.ok:
            click.echo(f"backend {health.name}: ok ({health.latency_ms} ms)", err=True)
        else:
            click.echo(f"warning: backend {health.name}: {health.problem}", err=True)


def _announce_when_ready(host: str, port: int, lines: list[str]) -> threading.Event:
    """Print ``lines`` once the app answers on ``host:port`` (the data index is built, the
    workers are up), from a thread that polls its health route until it answers or the
    returned event is set (the server has stopped)."""
    stop = threading.Event()
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)

    def poll() -> None:
        while not stop.is_set():
            try:
                conn = http.client.HTTPConnection(target, port, timeout=2)
                conn.request("GET", "/api/v1/health")
                answered = conn.getresponse().status < 500
                conn.close()
            except OSError:
                answered = False
            if answered:
                for line in lines:
                    click.echo(line)
                return
            stop.wait(0.05)

    threading.Thread(target=poll, name="hh-serve-ready", daemon=True).start()
    return stop
