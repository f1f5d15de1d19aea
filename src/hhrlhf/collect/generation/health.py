"""Is an OpenAI-compatible backend usable? ``GET {base_url}/models`` and the configured model in it.

``hh serve`` checks every backend this way before it serves, and the admin's Backends page
does the same on demand, so the operator sees a wrong ``model`` name or a ``base_url``
without ``/v1`` before an annotator meets it as a failed response. Standard library only
(``urllib``): no client is made, nothing is sent but the one GET.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ...text import printable
from .backends import server_message
from .kinds import BACKEND_KINDS
from .protocol import BackendConfig

__all__ = ["BackendHealth", "CHECKED_KINDS", "check_backend", "check_backends"]

#: the backend kinds that talk to a server (demo and rerank have nothing to reach)
CHECKED_KINDS = tuple(name for name, kind in BACKEND_KINDS.items() if kind.server)
#: seconds a check waits for the server at most
CHECK_TIMEOUT = 5.0


@dataclass(frozen=True)
class BackendHealth:
    """One backend's check: ``ok``, or ``problem`` (one line for the operator)."""

    name: str
    kind: str
    ok: bool
    problem: str | None = None
    latency_ms: int | None = None
    #: the server's models, when it listed them
    models: tuple[str, ...] = ()


def _no_v1_hint(base_url: str) -> str:
    path = urllib.parse.urlsplit(base_url).path.rstrip("/")
    if path.endswith("/v1"):
        return ""
    return (
        f" (base_url has no /v1: OpenAI-compatible servers answer under {base_url.rstrip('/')}/v1)"
    )


def check_backend(config: BackendConfig, timeout: float = CHECK_TIMEOUT) -> BackendHealth:
    """Ask ``config``'s server for its models; a backend of another kind is ok unasked."""
    if config.kind not in CHECKED_KINDS:
        return BackendHealth(config.name, config.kind, True)
    base = (config.base_url or "").rstrip("/")
    url = base + "/models"
    headers = {"Accept": "application/json"}
    key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
    if key:
        headers["Authorization"] = f"Bearer {key}"
    t0 = time.perf_counter()

    def bad(problem: str) -> BackendHealth:
        ms = int((time.perf_counter() - t0) * 1000)
        return BackendHealth(config.name, config.kind, False, printable(problem), ms)

    try:
        request = urllib.request.Request(url, headers=headers, method="GET")
        with urllib.request.urlopen(request, timeout=min(timeout, config.timeout)) as response:
            raw = response.read(4_000_000)
    except urllib.error.HTTPError as exc:
        body: object = exc.read(100_000).decode("utf-8", "replace")
        try:
            body = json.loads(str(body))
        except ValueError:
            pass
        why = server_message(body, exc.reason if isinstance(exc.reason, str) else "")
        return bad(f"GET {url} answered HTTP {exc.code}: {why}{_no_v1_hint(base)}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return bad(f"the server at {base} could not be reached ({reason})")
    ms = int((time.perf_counter() - t0) * 1000)
    try:
        data = json.loads(raw)
        models = tuple(str(m["id"]) for m in data["data"])
    except (ValueError, KeyError, TypeError):
        return bad(f"GET {url} did not answer a model list{_no_v1_hint(base)}")
    if config.model not in models:
        listed = ", ".join(models[:10]) + (", ..." if len(models) > 10 else "")
        return BackendHealth(
            config.name,
            config.kind,
            False,
            printable(
                f"model {config.model!r} is not served there (it serves: {listed or 'none'})"
            ),
            ms,
            models,
        )
    return BackendHealth(config.name, config.kind, True, None, ms, models)


def check_backends(
    configs: list[BackendConfig] | tuple[BackendConfig, ...], timeout: float = CHECK_TIMEOUT
) -> list[BackendHealth]:
    """:func:`check_backend` of each, at the same time (in the order given)."""
    if not configs:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(configs))) as pool:
        return list(pool.map(lambda c: check_backend(c, timeout), configs))
