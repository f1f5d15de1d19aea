"""Database failures in the app's own words: a full disk, a read-only or locked database, or
no free pooled connection in time all mean "nothing was stored; try again"
(:class:`~hhrlhf.errors.Unavailable`). The web layer maps these without knowing the driver."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from ...errors import Unavailable

__all__ = ["DATABASE_ERRORS", "as_unavailable", "describe", "pooler_trouble"]

#: what a database failure is raised as by the driver and the pool
DATABASE_ERRORS: tuple[type[Exception], ...] = (DBAPIError, PoolTimeout)


#: SQLSTATEs of a server-side prepared statement that is not where psycopg left it: a
#: transaction-mode pooler handed the transaction another server connection
#: (invalid_sql_statement_name, duplicate_prepared_statement)
_LOST_PREPARED = ("26000", "42P05")

POOLER_HINT = (
    "a pooler in transaction mode does not carry prepared statements from one server "
    "connection to the next: add ?prepare_threshold=none to the --db URL "
    "(docs/deploy.md, PgBouncer)"
)


def pooler_trouble(exc: Exception) -> bool:
    """Whether ``exc`` is PostgreSQL missing (or already holding) a prepared statement."""
    return getattr(getattr(exc, "orig", None), "sqlstate", None) in _LOST_PREPARED


def as_unavailable(exc: Exception) -> Unavailable:
    """The refusal a client is given for ``exc`` (one of :data:`DATABASE_ERRORS`)."""
    if isinstance(exc, PoolTimeout):
        # every pooled connection of this worker stayed busy for the pool's whole timeout
        return Unavailable(
            "the database is busy (no free connection in time); nothing was saved, try again",
            retry_after=1,
        )
    return Unavailable(
        f"the database could not store this ({describe(exc)}); nothing was saved, try again"
    )


def describe(exc: Exception) -> str:
    """The driver's own first line for ``exc`` (a database failure), with the pooler's hint
    where that is the trouble; no SQLAlchemy banner or link."""
    orig = getattr(exc, "orig", None)
    lines = str(orig if orig is not None else exc).strip().splitlines()
    detail = lines[0] if lines else type(exc).__name__
    return f"{detail}; {POOLER_HINT}" if pooler_trouble(exc) else detail
