"""What every ``hh serve`` and ``hh collect`` command shares: the ``--db`` option, the
database it opens, and the web extra it needs (imported only when a command runs)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..errors import require

if TYPE_CHECKING:
    from ..collect.db import Storage

__all__ = ["database_reads", "db_option", "open_db", "web_extra"]

F = TypeVar("F", bound=Callable[..., Any])


def web_extra() -> None:
    """Refuse to go on without the ``[web]`` extra (its error names the pip install)."""
    for module in ("fastapi", "sqlalchemy", "alembic", "uvicorn"):
        require(module, "web", "the collection app")


def db_option(f: F) -> F:
    """The ``--db URL`` option (as ``db_url``)."""
    option: F = click.option(
        "--db",
        "db_url",
        default=None,
        metavar="URL",
        help="Database URL (sqlite:///path.db, postgresql+psycopg://...; behind PgBouncer "
        "in transaction mode add ?prepare_threshold=none); "
        "default: $HH_COLLECT_DB, else (hh serve) the config's [collect] db, else "
        "sqlite:///hh-collect.db.",
    )(f)
    return option


def database_reads(db_url: str | None) -> list[tuple[Path, str]]:
    """The SQLite files of ``db_url`` (none for PostgreSQL): no output may be or hold them."""
    web_extra()
    from ..collect.config import default_db_url
    from ..collect.services.export import database_files

    return database_files(db_url or default_db_url())


def open_db(db_url: str | None, *, migrate: bool = False) -> Storage:
    """The collection database at ``db_url`` (default: ``$HH_COLLECT_DB``, else
    ``sqlite:///hh-collect.db``), checked to be migrated (``migrate``: migrated now)."""
    web_extra()
    from ..collect.config import default_db_url
    from ..collect.serve.storage import open_storage

    return open_storage(db_url or default_db_url(), migrate=migrate)
