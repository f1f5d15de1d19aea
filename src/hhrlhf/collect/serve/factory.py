"""One worker's app: :func:`create_app_from_env`, the factory ``hh serve`` hands uvicorn
(``--factory``), reading the :class:`~.options.ServeOptions` the command exported."""

from __future__ import annotations

import gc

from fastapi import FastAPI

from ..db import Storage
from ..db.engine import worker_connections
from ..web.app import create_app
from .options import ServeOptions

__all__ = ["APP", "create_app_from_env", "settle_heap", "GC_THRESHOLDS"]

#: the import string of :func:`create_app_from_env`, as uvicorn's workers import it
APP = "hhrlhf.collect.serve.factory:create_app_from_env"


def create_app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` (several workers): the app of this worker's
    :class:`ServeOptions`, holding its share of the host's database connections."""
    options = ServeOptions.from_env()
    settings = options.settings()
    storage = Storage(
        settings.db_url, connections=worker_connections(settings.db_connections, options.workers)
    )
    app = create_app(settings, storage=storage)
    settle_heap()
    return app


#: the collector's thresholds in a server worker (Python's: 700, 10, 10): a young pass
#: once 10,000 more container objects are alive than at the last one (see :func:`settle_heap`)
GC_THRESHOLDS = (10_000, 10, 10)


def settle_heap() -> None:
    """Collect once, then keep what startup made out of every later garbage collection, and
    collect the young generation less often.

    A server process holds ~110,000 long-lived objects after its imports (FastAPI, pydantic,
    SQLAlchemy, Jinja2). Each full collection walked all of them: 50-70 ms with every thread
    of the worker stopped, a few times a minute under load, and every request in flight then
    waited that long (most of the choice p99 on PostgreSQL, bench/RESULTS-collect.md).
    ``gc.freeze()`` moves them to the permanent generation, so a full collection only walks
    what was made since. For server processes only: frozen objects are never collected.

    The freeze also empties the oldest generation, and Python runs a full collection once
    its new objects outnumber a quarter of those it held: with none, every tenth pass of the
    middle generation became a full one. At Python's 700 a young pass ran every few
    requests, and under load the requests in flight (~50,000 objects) were walked by a full
    collection every few seconds, 10-76 ms with the worker stopped. :data:`GC_THRESHOLDS`
    makes young passes about 14 times rarer: at most ~10,000 objects of cyclic garbage (a
    few MB) wait for one, and a 200-annotator run has no collection after its start.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
