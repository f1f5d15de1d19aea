"""What a request reaches of the app: one typed :class:`AppContext`, made once by
:func:`~hhrlhf.collect.web.app.create_app` and kept on ``app.state.context``.

Routes, pages and dependencies ask :func:`app_context` for it instead of reading attributes off
Starlette's untyped ``app.state``: mypy then checks every use (a misspelt part is an error
before it is a 500), and this class is the one list of what the app holds.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request

if TYPE_CHECKING:
    from fastapi.templating import Jinja2Templates

    from ..browse import DataIndex
    from ..config import Settings
    from ..db import Storage
    from ..generation.runner import Generator
    from ..services.backend_live import LiveBackends
    from ..services.rules import Rules
    from .ratelimit import Limits

__all__ = ["AppContext", "app_context", "new_rng"]


@dataclass(slots=True)
class AppContext:
    """The app's parts. ``settings`` may be replaced while the app runs (tests do; the
    rules built from them at the start are kept, with the live backend states)."""

    settings: Settings
    storage: Storage
    generator: Generator
    #: the draws of backends and sides (seeded by ``settings.seed``, else the system's)
    rng: random.Random
    #: this worker's snapshot of the live backend states (paused, weights) and its rules
    live: LiveBackends
    limits: Limits
    #: the files ``hh serve --data`` browses (None: none given)
    data_index: DataIndex | None = None
    #: the pages' templates (None without jinja2: the JSON API still works)
    templates: Jinja2Templates | None = None
    #: the collected data as the browser reads it, with the database stamp it was built at
    collected: tuple[tuple[object, ...], DataIndex] | None = None

    @property
    def rules(self) -> Rules:
        """The rules every draw reads now: the settings' with the live backend states of the
        latest refresh (read it once per request: one draw, one snapshot)."""
        return self.live.rules


def app_context(request: Request | FastAPI) -> AppContext:
    """The app's :class:`AppContext` (from a request, or from the app itself)."""
    app = request if isinstance(request, FastAPI) else request.app
    found: AppContext = app.state.context
    return found


def new_rng(seed: int | None) -> random.Random:
    return random.Random(seed) if seed is not None else random.SystemRandom()
