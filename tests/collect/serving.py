"""Waiting for an ``hh serve`` started by a test: its health route answers (and whatever else
the test needs is true), or the test fails naming why, within a deadline."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import httpx


def wait_until_serving(
    proc: subprocess.Popen,
    base: str,
    *,
    timeout: float = 60,
    also: Callable[[], bool] = lambda: True,
    log: Callable[[], str] = lambda: "",
) -> float:
    """Poll ``base``'s health route until it answers 200 and ``also()`` is true; the seconds
    it took. Fails at once if the server exits (with ``log()``), or after ``timeout``."""
    t0 = time.monotonic()
    while True:
        try:
            if httpx.get(base + "/api/v1/health", timeout=2).status_code == 200 and also():
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, log()
        assert time.monotonic() - t0 < timeout, f"the server did not start in {timeout:g} s"
        time.sleep(0.1)
