"""Selecting red-team attempts: by model, size, rating, score, tag, member or text.

An :class:`AttemptQuery` is a typed value holding the criteria (every one optional; all that
are set must match). :func:`filter_attempts` applies one to records, :func:`query_attempts`
reads and filters a data source in one pass (constant memory until the matches),
:func:`select_attempts` does what ``hh redteam query`` does (out-of-range attempts dropped and
counted, matches counted past a limit), and :func:`attempts_frame` turns records into a pandas DataFrame for further analysis.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..dataset import RecordList, iter_attempts
from ..errors import require
from ..reader import Lenient
from ..records import RedTeamAttempt
from .stats import value_problem

__all__ = [
    "AttemptQuery",
    "SEARCH_FIELDS",
    "FRAME_COLUMNS",
    "filter_attempts",
    "query_attempts",
    "Selection",
    "select_attempts",
    "attempts_frame",
]

#: Where ``text`` is searched: the transcript, the task description, or both.
SEARCH_FIELDS = {
    "transcript": ("transcript",),
    "task": ("task_description",),
    "both": ("transcript", "task_description"),
}


def _as_tuple(v: Any) -> tuple[Any, ...]:
    if v is None:
        return ()
    if isinstance(v, (str, int)):
        return (v,)
    return tuple(v)


@dataclass(frozen=True, slots=True)
class AttemptQuery:
    """Criteria on attempts. Ranges are inclusive; a bound left None is open.

    ``model_type``/``num_params``/``tag``/``member`` accept one value or several (any of them
    matches); ``model_type`` and ``num_params`` compare case-insensitively (``"RLHF"``,
    ``"52b"``). ``tag`` matches a tag that contains it, case-insensitively
    (``"violence"`` finds ``"Violence & incitement"``); ``member`` compares as text, so ``7`` and
    ``"7"`` are the same member. ``text`` is a case-insensitive substring searched in
    ``search_in`` (see :data:`SEARCH_FIELDS`). A score range never matches a non-finite score.
    """

    model_type: tuple[str, ...] = ()
    num_params: tuple[str, ...] = ()
    min_rating: float | None = None
    max_rating: float | None = None
    min_score: float | None = None
    max_score: float | None = None
    tag: tuple[str, ...] = ()
    member: tuple[str, ...] = ()
    upworker: bool | None = None
    text: str | None = None
    search_in: str = "both"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "model_type", tuple(m.casefold() for m in _as_tuple(self.model_type))
        )
        object.__setattr__(
            self, "num_params", tuple(p.casefold() for p in _as_tuple(self.num_params))
        )
        object.__setattr__(self, "tag", tuple(t.casefold() for t in _as_tuple(self.tag)))
        object.__setattr__(self, "member", tuple(str(m) for m in _as_tuple(self.member)))
        if self.search_in not in SEARCH_FIELDS:
            raise ValueError(
                f"search_in must be one of {', '.join(SEARCH_FIELDS)}, got {self.search_in!r}"
            )
        for lo, hi, name in (
            (self.min_rating, self.max_rating, "rating"),
            (self.min_score, self.max_score, "score"),
        ):
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"empty {name} range: min {lo} > max {hi}")

    def matches(self, a: RedTeamAttempt) -> bool:
        if self.model_type and a.model_type.casefold() not in self.model_type:
            return False
        if self.num_params and a.num_params.casefold() not in self.num_params:
            return False
        if self.min_rating is not None and not a.rating >= self.min_rating:
            return False
        if self.max_rating is not None and not a.rating <= self.max_rating:
            return False
        s = a.min_harmlessness_score_transcript
        if self.min_score is not None or self.max_score is not None:
            if s is None or not math.isfinite(s):
                return False
            if self.min_score is not None and s < self.min_score:
                return False
            if self.max_score is not None and s > self.max_score:
                return False
        if self.upworker is not None and a.is_upworker != self.upworker:
            return False
        if self.member and str(a.red_team_member_id) not in self.member:
            return False
        if self.tag:
            have = [t.casefold() for t in a.tags or ()]
            if not any(want in t for want in self.tag for t in have):
                return False
        if self.text:
            needle = self.text.casefold()
            if not any(needle in getattr(a, f).casefold() for f in SEARCH_FIELDS[self.search_in]):
                return False
        return True


def filter_attempts(
    attempts: Iterable[RedTeamAttempt], query: AttemptQuery | None = None, **criteria: Any
) -> Iterator[RedTeamAttempt]:
    """The attempts matching ``query`` (or an :class:`AttemptQuery` built from ``criteria``).

    >>> list(filter_attempts([], model_type="rlhf", min_rating=3))
    []
    """
    if query is None:
        query = AttemptQuery(**criteria)
    elif criteria:
        raise TypeError("pass a query or keyword criteria, not both")
    return (a for a in attempts if query.matches(a))


def query_attempts(
    *,
    data: str | os.PathLike[str] | None = None,
    query: AttemptQuery | None = None,
    limit: int | None = None,
    lenient: bool | Lenient | None = False,
    skipped: list[Any] | None = None,
    **criteria: Any,
) -> RecordList:
    """Read the red-team attempts from ``data`` and keep those matching (at most ``limit``)."""
    policy = Lenient.of(lenient, skipped)
    out = RecordList()
    for a in filter_attempts(iter_attempts(data=data, lenient=policy), query, **criteria):
        if limit is not None and len(out) >= limit:
            break
        out.append(a)
    return out


@dataclass
class Selection:
    """What :func:`select_attempts` met: every match (those past ``limit`` too) and the
    attempts dropped for an out-of-range value, by reason."""

    limit: int = 0
    matches: int = 0
    dropped: Counter[str] = field(default_factory=Counter)

    @property
    def shown(self) -> int:
        """How many matches were yielded (all of them when ``limit`` is 0)."""
        return self.matches if not self.limit else min(self.matches, self.limit)


def select_attempts(
    attempts: Iterable[RedTeamAttempt],
    query: AttemptQuery,
    selection: Selection,
    on_drop: Callable[[RedTeamAttempt, str, str], None] | None = None,
) -> Iterator[RedTeamAttempt]:
    """The attempts matching ``query``, at most ``selection.limit`` (0: all), one at a time.

    An attempt with an out-of-range value (:func:`~hhrlhf.redteam.stats.value_problem`) never
    matches: it is counted in ``selection.dropped`` and passed to ``on_drop(attempt, reason,
    detail)`` as it is met. Matches past the limit are counted, not yielded, so
    ``selection.matches`` is the whole count once the iterator is exhausted.
    """
    for a in attempts:
        problem = value_problem(a)
        if problem is not None:
            selection.dropped[problem[0]] += 1
            if on_drop is not None:
                on_drop(a, *problem)
            continue
        if not query.matches(a):
            continue
        selection.matches += 1
        if not selection.limit or selection.matches <= selection.limit:
            yield a


#: DataFrame columns, in order; the file's ten fields plus where the record was and derived ones.
FRAME_COLUMNS = (
    "index",
    "model_type",
    "num_params",
    "params",
    "rating",
    "successful",
    "min_harmlessness_score_transcript",
    "task_description_harmlessness_score",
    "red_team_member_id",
    "is_upworker",
    "tags",
    "human_turns",
    "task_description",
    "transcript",
)


def attempts_frame(attempts: Iterable[RedTeamAttempt], threshold: float = 3.0) -> Any:
    """A pandas DataFrame, one row per attempt (columns: :data:`FRAME_COLUMNS`).

    ``successful`` uses ``threshold`` (the paper's 3 by default); ``red_team_member_id`` is kept
    as written (int or str), so the column may be of object dtype.
    """
    pd = require("pandas", "report", "attempts_frame")
    rows = []
    for a in attempts:
        rows.append(
            {
                "index": a.index,
                "model_type": a.model_type,
                "num_params": a.num_params,
                "params": a.params,
                "rating": a.rating,
                "successful": a.rating >= threshold,
                "min_harmlessness_score_transcript": a.min_harmlessness_score_transcript,
                "task_description_harmlessness_score": a.task_description_harmlessness_score,
                "red_team_member_id": a.red_team_member_id,
                "is_upworker": a.is_upworker,
                "tags": a.tags,
                "human_turns": a.human_turns,
                "task_description": a.task_description,
                "transcript": a.transcript,
            }
        )
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))
