"""The data browser's page state, all in the query string (so every page state is a URL to
share): the filters read from it (:func:`pair_query`, :func:`attempt_query`, :func:`paging`),
each bad value an ``Invalid`` naming the parameter, and the links that keep them
(:func:`nav_links` to the previous and next pages, :func:`neighbours` to the rows beside)."""

from __future__ import annotations

from typing import TYPE_CHECKING, overload
from urllib.parse import urlencode

from starlette.datastructures import QueryParams

from ...errors import Invalid
from ..browse import MAX_LIMIT, PairQuery

if TYPE_CHECKING:
    from ...redteam.query import AttemptQuery

__all__ = [
    "attempt_query",
    "float_param",
    "int_param",
    "nav_links",
    "neighbours",
    "pair_query",
    "paging",
]


@overload
def int_param(
    value: str | None, name: str, default: int, lo: int = 0, hi: int | None = None
) -> int: ...
@overload
def int_param(
    value: str | None, name: str, default: None = None, lo: int = 0, hi: int | None = None
) -> int | None: ...
def int_param(
    value: str | None, name: str, default: int | None = None, lo: int = 0, hi: int | None = None
) -> int | None:
    if value is None or value == "":
        return default
    try:
        n = int(value)
    except ValueError:
        raise Invalid(f"{name} must be a whole number, got {value!r}") from None
    if n < lo or (hi is not None and n > hi):
        raise Invalid(f"{name} must be between {lo} and {hi or 'any'}, got {n}")
    return n


def float_param(value: str | None, name: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        return float(value)
    except ValueError:
        raise Invalid(f"{name} must be a number, got {value!r}") from None


def pair_query(params: QueryParams) -> tuple[PairQuery, int, int]:
    q = PairQuery(
        subset=params.get("subset") or None,
        split=params.get("split") or None,
        cls=params.get("class") or None,
        turns=int_param(params.get("turns"), "turns"),
        chosen=params.get("chosen") or None,
        q=params.get("q") or None,
        where=params.get("where") or "any",
        flag=params.get("flag") or None,
    )
    return (q, *paging(params))


def paging(params: QueryParams) -> tuple[int, int]:
    """``(offset, limit)`` of a list page: from 0, and 50 rows up to :data:`MAX_LIMIT`."""
    return (
        int_param(params.get("offset"), "offset", 0),
        int_param(params.get("limit"), "limit", 50, 1, MAX_LIMIT),
    )


def _many(params: QueryParams, name: str) -> tuple[str, ...]:
    """A filter given once or repeated (``?tag=a&tag=b``: any of them), empty values dropped."""
    return tuple(v for v in params.getlist(name) if v)


def attempt_query(params: QueryParams) -> AttemptQuery:
    """The ``hh redteam query`` filters from a query string (the same :class:`AttemptQuery`)."""
    from ...redteam.query import AttemptQuery

    try:
        return AttemptQuery(
            model_type=_many(params, "model_type"),
            num_params=_many(params, "num_params"),
            min_rating=float_param(params.get("min_rating"), "min_rating"),
            max_rating=float_param(params.get("max_rating"), "max_rating"),
            min_score=float_param(params.get("min_score"), "min_score"),
            max_score=float_param(params.get("max_score"), "max_score"),
            tag=_many(params, "tag"),
            member=_many(params, "member"),
            text=params.get("q") or None,
            search_in=params.get("search_in") or "both",
        )
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def nav_links(
    base: str, params: QueryParams, offset: int, limit: int, total: int
) -> dict[str, str]:
    """Previous/next links keeping every filter of the query string (repeated ones too, empty
    ones dropped), so each page of each filter state is a URL to share."""
    kept = [(k, v) for k, v in params.multi_items() if k != "offset" and v != ""]
    nav: dict[str, str] = {}
    if offset > 0:
        nav["prev"] = base + "?" + urlencode([*kept, ("offset", max(0, offset - limit))])
    if offset + limit < total:
        nav["next"] = base + "?" + urlencode([*kept, ("offset", offset + limit)])
    return nav


def neighbours(base: str, row: int, rows: int, collected: bool) -> dict[str, str | None]:
    """The previous and next rows' page links (absent at either end of the file)."""
    q = "?source=collected" if collected else ""
    return {
        "prev": f"{base}{row - 1}{q}" if row > 0 else None,
        "next": f"{base}{row + 1}{q}" if row + 1 < rows else None,
    }
