"""Debian's chromium through Playwright for the page tests, or why it cannot be had.

Without the browser a page test skips with the reason, except in CI (the ``CI`` environment
variable set, as CI services and ``.ci/run``'s environment set it): there ``.ci/run`` installs
the browser, so a missing one is a failure, never a silent skip. The rule is tests/parts.py's,
the one every optional system part follows (``HH_TEST_HIDE=chromium`` hides the browser).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from parts import in_ci, need

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "browser_missing", "in_ci", "need_browser"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def browser_missing(chromium: Path = CHROMIUM) -> str | None:
    """Why the page tests cannot drive a browser here, or None when they can."""
    if not chromium.exists():
        return f"Debian's chromium is not installed at {chromium} (apt-get install -y chromium)"
    try:
        importlib.import_module("playwright.sync_api")
    except ImportError:
        return "the playwright package is not installed (pip install --group dev)"
    return None


def need_browser(chromium: Path = CHROMIUM) -> ModuleType:
    """``playwright.sync_api``; skips the test where the browser is missing, fails it in CI."""
    need("chromium", lambda: browser_missing(chromium))
    return importlib.import_module("playwright.sync_api")
