"""``hh collect backend``: pause, resume and re-weight a configured backend while the app
runs, and list the live states and their log (over
:mod:`hhrlhf.collect.services.backend_live`)."""

from __future__ import annotations

import getpass
import os
import socket
from typing import TYPE_CHECKING, Any

import click

from ..text import printable
from .options import emit_json, print_table

if TYPE_CHECKING:
    from ..collect.config import Settings
    from ..collect.db import Storage
    from ..collect.services.backend_live import Changed

__all__ = ["collect_backend"]


def _options(f: Any) -> Any:
    f = click.option(
        "--db",
        "db_url",
        default=None,
        metavar="URL",
        help="Database URL; default: $HH_COLLECT_DB, else the config's [collect] db, else "
        "sqlite:///hh-collect.db (as hh serve).",
    )(f)
    return click.option(
        "--config",
        "config_path",
        required=True,
        type=click.Path(dir_okay=False),
        help="The app's TOML config (hh serve --config): its [[backend]] names.",
    )(f)


def _open(config_path: str, db_url: str | None) -> tuple[Settings, Storage]:
    """The config's settings (their database as ``hh serve`` picks it) and that database."""
    from ..collect.config import DB_ENV, load_config
    from .collect_db import open_db

    settings = load_config(config_path, db_url=db_url or os.environ.get(DB_ENV))
    return settings, open_db(settings.db_url)


def _author() -> str:
    """Who the log names for a change made here: ``cli (user@host)``."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in the environment or the password database
        user = "unknown"
    return f"cli ({user}@{socket.gethostname()})"


def _name(settings: Settings, name: str) -> str:
    if name not in settings.backend_names:
        raise click.BadParameter(
            f"unknown backend {name!r}; the configured backends: "
            + ", ".join(settings.backend_names),
            param_hint="'NAME'",
        )
    return name


def _said(done: Changed, did: str, already: str, settings: Settings) -> None:
    b = done.backend
    if not done.changed:
        click.echo(f"{printable(b.name)} {already}: nothing changed")
        return
    click.echo(
        f"{printable(b.name)} {did} (on every worker within "
        f"{settings.backend_refresh_seconds:g} s; turns already drawn finish)"
    )


@click.group("backend")
def collect_backend() -> None:
    """Pause, resume or re-weight a backend while the app runs: no restart, every worker
    draws with the change within backend_refresh_seconds (docs/collect.md, "Backends live").

    A paused backend's turns already drawn finish; new messages and conversations never
    draw it, and a red-team conversation talking to it takes no new message. Pausing the
    last backend new conversations could draw is refused. Each change is logged with who
    made it (here: cli (user@host)) and when; the leaderboard lists them.

    \b
    Examples:
      hh collect backend pause local-8b --config collect.toml
      hh collect backend weight local-8b 0.5 --config collect.toml
      hh collect backend resume local-8b --config collect.toml
      hh collect backend list --config collect.toml --json
    """


@collect_backend.command("pause")
@click.argument("name")
@_options
def pause(name: str, config_path: str, db_url: str | None) -> None:
    """Stop drawing NAME for new messages and conversations (its turns already drawn finish).

    \b
    Example:
      hh collect backend pause local-8b --config collect.toml
    """
    from ..collect.services import backend_live

    settings, storage = _open(config_path, db_url)
    done = backend_live.pause(storage, settings, _name(settings, name), _author())
    _said(done, "is paused", "was paused already", settings)


@collect_backend.command("resume")
@click.argument("name")
@_options
def resume(name: str, config_path: str, db_url: str | None) -> None:
    """Draw NAME again, with its live weight.

    \b
    Example:
      hh collect backend resume local-8b --config collect.toml
    """
    from ..collect.services import backend_live

    settings, storage = _open(config_path, db_url)
    done = backend_live.resume(storage, settings, _name(settings, name), _author())
    _said(done, "is drawn again", "was not paused", settings)


@collect_backend.command("weight")
@click.argument("name")
@click.argument("weight", metavar="W", type=float)
@_options
def weight(name: str, weight: float, config_path: str, db_url: str | None) -> None:
    """Draw NAME with weight W (a number above 0, relative to the other backends' weights).

    \b
    Example:
      hh collect backend weight local-8b 0.5 --config collect.toml
    """
    from ..collect.services import backend_live
    from ..errors import Invalid

    settings, storage = _open(config_path, db_url)
    try:
        done = backend_live.set_weight(storage, settings, _name(settings, name), weight, _author())
    except Invalid as exc:
        raise click.BadParameter(str(exc), param_hint="'W'") from exc
    _said(done, f"has weight {weight:g}", f"has weight {weight:g} already", settings)


@collect_backend.command("list")
@_options
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
def list_states(config_path: str, db_url: str | None, as_json: bool) -> None:
    """Each configured backend's live state (paused, weight), then the log of changes.

    \b
    Examples:
      hh collect backend list --config collect.toml
      hh collect backend list --config collect.toml --db sqlite:///hh-collect.db --json
    """
    from ..collect.services import backend_live

    settings, storage = _open(config_path, db_url)
    states = backend_live.backend_states(storage, settings)
    weights = {b.name: b.weight for b in settings.backends}
    events = backend_live.backend_events(storage, config_weights=weights)
    if as_json:
        emit_json(
            {"backends": [s.to_dict() for s in states], "events": [e.to_dict() for e in events]}
        )
        return
    print_table(
        [
            {
                "backend": s.name,
                "kind": s.kind,
                "state": "paused" if s.paused else "drawn" if s.drawn else "base only",
                "weight": f"{s.weight:g}",
                "config weight": f"{s.config_weight:g}",
                "changed by": s.updated_by or "-",
                "at": s.updated_at[:16].replace("T", " ") if s.updated_at else "-",
            }
            for s in states
        ]
    )
    if not events:
        click.echo("no changes logged")
    for e in events:
        click.echo(printable(e.describe()))
