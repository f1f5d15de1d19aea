"""The one map from the collection's errors to HTTP: every refusal the app's services raise
(:mod:`hhrlhf.errors`: :class:`~hhrlhf.errors.NotFound`, :class:`~hhrlhf.errors.Conflict`...)
becomes a status here and nowhere else; the answer's body is ``{"error": message}``."""

from __future__ import annotations

from ...errors import (
    CollectError,
    Conflict,
    Forbidden,
    HHError,
    Invalid,
    NotFound,
    RateLimited,
    TooLarge,
    Unauthorized,
    Unavailable,
)

__all__ = ["STATUS", "status_of", "retry_after_of"]

#: most specific first: the first class an error is an instance of gives its status
STATUS: tuple[tuple[type[HHError], int], ...] = (
    (TooLarge, 413),
    (Invalid, 422),
    (Unauthorized, 401),
    (Forbidden, 403),
    (NotFound, 404),
    (Conflict, 409),
    (RateLimited, 429),
    (Unavailable, 503),
    (CollectError, 400),
    (HHError, 400),  # a library error met while serving (a bad data file...): the request's
)


def status_of(exc: BaseException) -> int:
    """The HTTP status of ``exc`` (400 for an error of the library that names no class)."""
    for cls, status in STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def retry_after_of(exc: BaseException) -> int | None:
    """Seconds a client should wait before trying again, when the error knows."""
    value = getattr(exc, "retry_after", None)
    return value if isinstance(value, int) else None
