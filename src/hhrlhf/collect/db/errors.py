"""Database failures in the app's own words: a full disk, a read-only or locked database, or
no free pooled connection in time all mean "nothing was stored; try again"
(:class:`~hhrlhf.errors.Unavailable`). The web layer maps these without knowing the driver."""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from ...errors import Unavailable

__all__ = ["DATABASE_ERRORS", "as_unavailable"]

#: what a database failure is raised as by the driver and the pool
DATABASE_ERRORS: tuple[type[Exception], ...] = (DBAPIError, PoolTimeout)


def as_unavailable(exc: Exception) -> Unavailable:
    """The refusal a client is given for ``exc`` (one of :data:`DATABASE_ERRORS`)."""
    if isinstance(exc, PoolTimeout):
        # every pooled connection of this worker stayed busy for the pool's whole timeout
        return Unavailable(
            "the database is busy (no free connection in time); nothing was saved, try again",
            retry_after=1,
        )
    orig = getattr(exc, "orig", None)
    detail = str(orig).splitlines()[0] if orig is not None else type(exc).__name__
    return Unavailable(
        f"the database could not store this ({detail}); nothing was saved, try again"
    )
