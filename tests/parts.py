"""The optional system parts some tests need, and the one rule for when one is missing.

A test that needs PostgreSQL's server binaries, PgBouncer, Debian's chromium (with Playwright)
or axe-core asks :func:`need` (directly or through a fixture or helper that does). Where the
part is missing the test **skips** with the reason and how to install it, except where the
environment demands the part: ``HH_REQUIRE_POSTGRES`` demands PostgreSQL and PgBouncer, ``CI``
demands the browser and axe-core (``.ci/run`` installs all four and sets both), and there a
missing part **fails** the test, never a silent skip.

``HH_TEST_HIDE=pgbouncer,chromium`` (names from :data:`PARTS`, comma-separated) makes parts
look missing, to see the suite as a machine without them runs it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NoReturn

import pytest

__all__ = ["HIDE_ENV", "PARTS", "demanded_by", "hidden", "in_ci", "missing", "need", "skip_or_fail"]

HIDE_ENV = "HH_TEST_HIDE"


def in_ci() -> bool:
    """Whether ``CI`` is set to something other than empty, ``0``, ``false`` or ``no``."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _postgresql() -> str | None:
    from pgserver import SKIP_REASON, find_bindir

    return SKIP_REASON if find_bindir() is None else None


def _pgbouncer() -> str | None:
    from pgbouncer import SKIP_REASON, find_pgbouncer

    return SKIP_REASON if find_pgbouncer() is None else None


def _chromium() -> str | None:
    from headless import browser_missing

    return browser_missing()


def _axe() -> str | None:
    from axe import axe_missing

    return axe_missing()


#: Each part: (why it is missing here, or None; the environment variable that demands it).
PARTS: dict[str, tuple[Callable[[], str | None], str]] = {
    "postgresql": (_postgresql, "HH_REQUIRE_POSTGRES"),
    "pgbouncer": (_pgbouncer, "HH_REQUIRE_POSTGRES"),
    "chromium": (_chromium, "CI"),
    "axe": (_axe, "CI"),
}


def hidden(part: str) -> bool:
    """Whether ``HH_TEST_HIDE`` names ``part``."""
    names = {n.strip() for n in os.environ.get(HIDE_ENV, "").split(",")}
    return part in names


def demanded_by(part: str) -> str | None:
    """The environment variable that demands ``part`` here, or None."""
    variable = PARTS[part][1]
    if variable == "CI":
        return "CI" if in_ci() else None
    return variable if os.environ.get(variable) else None


def missing(part: str, why_missing: Callable[[], str | None] | None = None) -> str | None:
    """Why ``part`` cannot be used here (``why_missing`` replaces its usual check), or None."""
    if hidden(part):
        return f"{part} is hidden by {HIDE_ENV}"
    return (why_missing or PARTS[part][0])()


def skip_or_fail(part: str, reason: str) -> NoReturn:
    """Skip the test with ``reason``, or fail it where the environment demands ``part``."""
    variable = demanded_by(part)
    if variable is not None:
        pytest.fail(f"{variable} is set and {part} is missing: {reason}", pytrace=False)
    pytest.skip(reason)


def need(part: str, why_missing: Callable[[], str | None] | None = None) -> None:
    """Go on where ``part`` is there; else skip the test, or fail it where it is demanded."""
    reason = missing(part, why_missing)
    if reason is not None:
        skip_or_fail(part, reason)
