"""``hh serve``'s options (all but ``--db``, which every collection command shares)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

__all__ = ["serve_options"]

F = TypeVar("F", bound=Callable[..., Any])

#: in the order ``hh serve --help`` lists them
SERVE_OPTIONS = [
    click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="TOML config with [collect] and [[backend]] tables.",
    ),
    click.option(
        "--demo", is_flag=True, help="Demo backends (no model, no network) and a demo admin."
    ),
    click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on."),
    click.option(
        "--port",
        default=8000,
        show_default=True,
        type=click.IntRange(0, 65535),
        help="Port to listen on; 0: a free one, printed with the URL.",
    ),
    click.option(
        "--workers",
        default=1,
        show_default=True,
        type=click.IntRange(1, 64),
        help="Worker processes, one per core (on Linux each listens on its own socket on the port, "
        "so connections spread evenly).",
    ),
    click.option(
        "--demo-delay",
        default=0.0,
        type=click.FloatRange(0, 5),
        help="Demo backend: seconds per word (load tests).",
        hidden=True,
    ),
    click.option(
        "--data",
        "data",
        metavar="PATH|sample",
        default=None,
        help="Also browse HH data at /data: a folder laid out like upstream, one file, "
        "'sample' (the bundled sample) or 'cache' (the download cache).",
    ),
    click.option(
        "--forwarded-allow-ips",
        "forwarded_allow_ips",
        envvar="FORWARDED_ALLOW_IPS",
        default=None,
        metavar="ADDRESSES",
        help="Proxies whose X-Forwarded-For/-Proto are believed (comma-separated addresses or "
        "networks, '*' for any, '' for none; as uvicorn's option). Default: the config's "
        "forwarded_allow_ips, else 127.0.0.1.",
    ),
    click.option(
        "--header-timeout",
        default=20.0,
        show_default=True,
        type=click.FloatRange(1, 600),
        help="Seconds a connection has to send a request's complete headers before it is closed.",
    ),
    click.option(
        "--max-connections",
        default=1000,
        show_default=True,
        type=click.IntRange(10, 1_000_000),
        help="Open connections per worker; past it the oldest one still sending its headers is closed.",
    ),
    click.option(
        "--hsts",
        is_flag=True,
        default=False,
        help="Send Strict-Transport-Security (only when the site is served over https).",
    ),
]


def serve_options(f: F) -> F:
    """Apply every option of :data:`SERVE_OPTIONS` to ``f``, listed in that order."""
    for option in reversed(SERVE_OPTIONS):
        f = option(f)
    return f
