"""Per-annotator weekly trends and their drift flags: the admin's ``/admin/annotators``,
``GET /api/v1/admin/trends`` and ``hh collect trends`` (docs/collect.md, "Annotator trends and
drift").

Per annotator and per ISO week (UTC, Monday to Sunday), the last ``weeks`` weeks up to this one:

- ``turns``: their pick comparisons (of two different responses: an identical pair is no
  comparison, as everywhere else), by the week of the pick;
- ``median_seconds``: the median of ``decided_at - shown_at`` (both responses complete to the
  pick) over the picks that have a ``shown_at``;
- ``share_a``: the share of picks for slot A. The author's slot is the shown position: the
  conversation page draws slot ``a`` first, labelled "A" (the backends are put in A and B in
  random order when the turn is made; only a review re-randomises the order, and a review's
  pick is stored back in the original order, which is why it is not counted here);
- ``agreement``: of their reviewed comparisons, the share whose every blind review picks as
  they did (:func:`~.review.review_units`, :func:`~.review.agreed_turns`);
- ``gold_accuracy``: of their done gold reviews, the share picking the gold's chosen response
  (``pick == "a"``: a gold review's pick is stored in the gold's order), by the week of the
  review; None without gold;
- ``too_fast``: the share of picks made sooner after the message was sent (``turns.created_at``:
  the responses stream from then on, so this is all the time the text was on screen) than both
  responses take to read at :data:`READING_WORDS_PER_SECOND`.

The drift rules are :func:`drift_flags`'s; every threshold is a named constant below.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from typing import Any

from sqlalchemy import ColumnElement, func, select

from ...errors import Invalid
from ..db import Storage
from ..db.models import Annotator, Comparison, Review, Turn
from ..domain import now as _now
from .review import DIFFERENT_TEXTS, agreed_turns, review_units

__all__ = [
    "DEFAULT_WEEKS",
    "MAX_WEEKS",
    "READING_WORDS_PER_SECOND",
    "TOO_FAST_SHARE",
    "MIN_TURNS",
    "MIN_RATED",
    "MAD_BAND",
    "SECONDS_FLOOR_SHARE",
    "SECONDS_FLOOR_MIN",
    "SHARE_FLOOR",
    "SHARE_NOISE",
    "MIN_OWN_WEEKS",
    "MIN_TEAM",
    "Week",
    "WeekPoint",
    "DriftFlag",
    "AnnotatorTrend",
    "Trends",
    "annotator_trends",
    "drift_flags",
]

#: weeks shown by default, and at most
DEFAULT_WEEKS = 8
MAX_WEEKS = 52
#: a fast skim (about 480 words a minute): a pick sooner than both responses' words over this
#: many seconds after the message was sent is "too fast to read"
READING_WORDS_PER_SECOND = 8.0
#: a week is flagged when more than this share of its picks were too fast to read
TOO_FAST_SHARE = 0.2
#: a week's median seconds, A-share and too-fast share are judged only on at least this many
#: picks (timed picks for the seconds)
MIN_TURNS = 20
#: a week's agreement and gold accuracy are judged only on at least this many reviewed
#: comparisons, gold reviews
MIN_RATED = 10
#: a value is far from a median when it is more than this many median absolute deviations
#: (unscaled) away from it...
MAD_BAND = 3.0
#: ...and more than the metric's floor: for seconds, this share of the median (at least
#: SECONDS_FLOOR_MIN seconds)...
SECONDS_FLOOR_SHARE = 0.5
SECONDS_FLOOR_MIN = 1.0
#: ...for a share (A-share, agreement, gold accuracy), this many points (0.2 = 20 points), or
#: SHARE_NOISE binomial standard errors of the week's sample around the median,
#: ``sqrt(m (1 - m) / n)``, when that is more (a share of few picks swings by chance alone)
SHARE_FLOOR = 0.2
SHARE_NOISE = 3.0
#: the annotator's own usual: at least this many of their other weeks with enough picks
MIN_OWN_WEEKS = 2
#: the team's median of a week: at least this many other annotators with enough picks
MIN_TEAM = 3
#: float noise: a value exactly on the band's edge is not far
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Week:
    """An ISO week: its label (``2026-W48``) and its Monday (UTC, ISO date)."""

    label: str
    start: str


@dataclass(frozen=True, slots=True)
class WeekPoint:
    """One annotator's week (the module's docstring defines each number). ``timed``: picks with
    a ``shown_at``; ``reviewed``: picks of the week reviewed; ``gold``: gold reviews done."""

    turns: int
    timed: int
    median_seconds: float | None
    share_a: float | None
    too_fast: float | None
    reviewed: int
    agreement: float | None
    gold: int
    gold_accuracy: float | None


@dataclass(frozen=True, slots=True)
class DriftFlag:
    """A week that stands out. ``against``: ``own`` (the annotator's other weeks), ``team``
    (the other annotators that week) or ``reading`` (too fast to read); ``usual``: the median
    it is compared with (the share's limit for ``reading``); ``reason``: in words."""

    week: str
    metric: str
    against: str
    value: float
    usual: float
    reason: str


@dataclass(frozen=True, slots=True)
class AnnotatorTrend:
    """One annotator's weeks (oldest first, as :attr:`Trends.weeks`) and flags."""

    name: str
    role: str
    disabled: bool
    turns_today: int
    turns_this_week: int
    weeks: tuple[WeekPoint, ...]
    flags: tuple[DriftFlag, ...]


@dataclass(frozen=True, slots=True)
class Trends:
    """Every annotator's trend over the same ``weeks`` (oldest first), by name."""

    weeks: tuple[Week, ...]
    annotators: tuple[AnnotatorTrend, ...]


@dataclass(slots=True)
class _Acc:
    """What one annotator's week collects before it becomes a :class:`WeekPoint`."""

    turns: int = 0
    picked_a: int = 0
    too_fast: int = 0
    seconds: list[float] = field(default_factory=list)
    reviewed: int = 0
    agreed: int = 0
    gold: int = 0
    gold_right: int = 0

    def point(self) -> WeekPoint:
        return WeekPoint(
            turns=self.turns,
            timed=len(self.seconds),
            median_seconds=round(statistics.median(self.seconds), 1) if self.seconds else None,
            share_a=_share(self.picked_a, self.turns),
            too_fast=_share(self.too_fast, self.turns),
            reviewed=self.reviewed,
            agreement=_share(self.agreed, self.reviewed),
            gold=self.gold,
            gold_accuracy=_share(self.gold_right, self.gold),
        )


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _utc(value: datetime) -> datetime:
    """SQLite keeps no offset: its datetimes are stored in UTC."""
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value


def _words(column: Any) -> ColumnElement[int]:
    """The words of a text column, counted in SQL (spaces and newlines, plus one)."""
    bare = func.replace(func.replace(column, " ", ""), "\n", "")
    return func.length(column) - func.length(bare) + 1


def _weeks(now: datetime, count: int) -> tuple[Week, ...]:
    monday = now.date() - timedelta(days=now.weekday())
    out = []
    for back in range(count - 1, -1, -1):
        start = monday - timedelta(weeks=back)
        year, week, _ = start.isocalendar()
        out.append(Week(f"{year}-W{week:02d}", start.isoformat()))
    return tuple(out)


def annotator_trends(
    storage: Storage, *, weeks: int = DEFAULT_WEEKS, now: datetime | None = None
) -> Trends:
    """Every annotator's last ``weeks`` ISO weeks (this one included) and drift flags."""
    if not 1 <= weeks <= MAX_WEEKS:
        raise Invalid(f"weeks must be 1 to {MAX_WEEKS}, not {weeks}")
    now = _utc(now or _now())
    labels = _weeks(now, weeks)
    start = datetime.combine(date.fromisoformat(labels[0].start), datetime.min.time(), timezone.utc)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    acc: dict[tuple[int, int], _Acc] = defaultdict(_Acc)
    with storage.read() as s:
        people = s.execute(
            select(Annotator.id, Annotator.name, Annotator.role, Annotator.disabled).order_by(
                Annotator.name
            )
        ).all()
        picked = _collect_picks(s.execute(_picks_query(start)).all(), start, today, acc)
        golds = s.execute(
            select(Review.reviewer_id, Review.pick, Review.decided_at).where(
                Review.gold_id.is_not(None),
                Review.status == "done",
                Review.decided_at >= start,
            )
        ).all()
    _collect_reviews(storage, picked.by_comparison, acc)
    for reviewer, pick, decided in golds:
        if decided is None:  # (a done review has its time: submit_review sets both)
            continue
        a = acc[reviewer, (_utc(decided) - start).days // 7]
        a.gold += 1
        a.gold_right += pick == "a"
    points = {
        aid: tuple(acc[aid, w].point() if (aid, w) in acc else _EMPTY for w in range(weeks))
        for aid, *_ in people
    }
    flags = drift_flags([w.label for w in labels], points)
    return Trends(
        weeks=labels,
        annotators=tuple(
            AnnotatorTrend(
                name=name,
                role=role,
                disabled=disabled,
                turns_today=picked.today.get(aid, 0),
                turns_this_week=points[aid][-1].turns,
                weeks=points[aid],
                flags=flags.get(aid, ()),
            )
            for aid, name, role, disabled in people
        ),
    )


_EMPTY = _Acc().point()


def _picks_query(start: datetime) -> Any:
    return (
        select(
            Comparison.id,
            Comparison.annotator_id,
            Comparison.pick,
            Comparison.shown_at,
            Comparison.decided_at,
            Turn.created_at,
            _words(Comparison.chosen_text) + _words(Comparison.rejected_text),
        )
        .join(Turn, Comparison.turn_id == Turn.id)
        .where(Comparison.kind == "pick", DIFFERENT_TEXTS, Comparison.decided_at >= start)
    )


@dataclass(slots=True)
class _Picked:
    #: comparison id -> (annotator id, week index)
    by_comparison: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: annotator id -> picks since midnight UTC
    today: dict[int, int] = field(default_factory=dict)


def _collect_picks(
    rows: Sequence[Any], start: datetime, today: datetime, acc: dict[tuple[int, int], _Acc]
) -> _Picked:
    out = _Picked()
    if rows and rows[0][4].tzinfo is None:  # SQLite: every datetime naive, in UTC
        start, today = start.replace(tzinfo=None), today.replace(tzinfo=None)
    for cid, aid, pick, shown, decided, sent, words in rows:
        week = (decided - start).days // 7
        out.by_comparison[cid] = (aid, week)
        if decided >= today:
            out.today[aid] = out.today.get(aid, 0) + 1
        a = acc[aid, week]
        a.turns += 1
        a.picked_a += pick == "a"
        if shown is not None:
            a.seconds.append((decided - shown).total_seconds())
        if (decided - sent).total_seconds() < words / READING_WORDS_PER_SECOND:
            a.too_fast += 1
    return out


def _collect_reviews(
    storage: Storage, by_comparison: dict[int, tuple[int, int]], acc: dict[tuple[int, int], _Acc]
) -> None:
    """Each reviewed comparison of the window counts for its author's week."""
    if not by_comparison:
        return
    units = [u for u in review_units(storage) if u.comparison_id in by_comparison]
    agreed = agreed_turns(units)
    for u in units:
        a = acc[by_comparison[u.comparison_id]]
        a.reviewed += 1
        a.agreed += (u.conversation_id, u.turn_index) in agreed


# -- drift --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Metric:
    """A metric drift is judged on: its field, the field counting its sample and the least
    sample, the band's floor given the median, and how a value reads."""

    key: str
    count: str
    minimum: int
    floor: Callable[[float, int], float]
    words: str
    show: Callable[[float], str]


def _seconds(x: float) -> str:
    return f"{x:.0f} s" if x >= 10 else f"{x:.1f} s".replace(".0 s", " s")


def _percent(x: float) -> str:
    return f"{x:.0%}"


def _share_floor(m: float, n: int) -> float:
    return max(SHARE_FLOOR, SHARE_NOISE * math.sqrt(m * (1 - m) / n))


#: the metrics judged against the annotator's own weeks and the team's week
METRICS = (
    _Metric(
        "median_seconds",
        "timed",
        MIN_TURNS,
        lambda m, n: max(SECONDS_FLOOR_SHARE * m, SECONDS_FLOOR_MIN),
        "median {} per turn",
        _seconds,
    ),
    _Metric("share_a", "turns", MIN_TURNS, _share_floor, "A-share {}", _percent),
    _Metric("agreement", "reviewed", MIN_RATED, _share_floor, "agreement {}", _percent),
    _Metric("gold_accuracy", "gold", MIN_RATED, _share_floor, "gold accuracy {}", _percent),
)


def _far(
    value: float, n: int, others: list[float], floor: Callable[[float, int], float]
) -> float | None:
    """The median of ``others`` when ``value`` (of a sample of ``n``) is outside its band,
    else None."""
    m = statistics.median(others)
    mad = statistics.median(abs(x - m) for x in others)
    band = max(MAD_BAND * mad, floor(m, n))
    return m if abs(value - m) > band + _EPS else None


def _judged(p: WeekPoint, metric: _Metric) -> float | None:
    """The week's value of ``metric`` when its sample is big enough to judge, else None."""
    value: float | None = getattr(p, metric.key)
    return value if value is not None and getattr(p, metric.count) >= metric.minimum else None


def drift_flags(
    weeks: list[str], points: dict[int, tuple[WeekPoint, ...]]
) -> dict[int, tuple[DriftFlag, ...]]:
    """The flags of each annotator (by id), by week then metric.

    A week is judged on a metric only when its sample is big enough (:data:`MIN_TURNS` picks,
    :data:`MIN_RATED` reviewed comparisons or gold reviews). It is flagged ``own`` when its value
    is far (:func:`_far`: beyond ``MAD_BAND`` x MAD and the metric's floor, for a share at
    least :data:`SHARE_NOISE` binomial standard errors of the week's sample) from the median of
    the annotator's other judged weeks (at least :data:`MIN_OWN_WEEKS`), and ``team`` when far
    from the median of the other annotators' judged values that week (at least
    :data:`MIN_TEAM`). It is flagged ``reading`` when more than :data:`TOO_FAST_SHARE` of at least
    :data:`MIN_TURNS` picks were too fast to read.
    """
    # each metric's judged value (None: not judged) of every annotator's every week
    judged = {
        m.key: {aid: [_judged(p, m) for p in ps] for aid, ps in points.items()} for m in METRICS
    }
    out: dict[int, list[DriftFlag]] = defaultdict(list)
    for w, label in enumerate(weeks):
        for aid, ps in points.items():
            p = ps[w]
            fast = p.too_fast
            if fast is not None and p.turns >= MIN_TURNS and fast > TOO_FAST_SHARE + _EPS:
                reason = f"{fast:.0%} of picks faster than the text can be read in {label}"
                out[aid].append(
                    DriftFlag(label, "too_fast", "reading", fast, TOO_FAST_SHARE, reason)
                )
            for metric in METRICS:
                n = getattr(p, metric.count)
                out[aid] += _metric_flags(aid, w, label, metric, n, judged[metric.key])
    return {aid: tuple(flags) for aid, flags in out.items() if flags}


def _metric_flags(
    aid: int, w: int, label: str, metric: _Metric, n: int, judged: dict[int, list[float | None]]
) -> list[DriftFlag]:
    """The week's ``own`` and ``team`` flags of ``metric`` (its value from ``n`` picks or
    reviews; ``judged``: every annotator's judged values by week)."""
    value = judged[aid][w]
    if value is None:
        return []
    own = [x for i, x in enumerate(judged[aid]) if i != w and x is not None]
    team = [x for o, xs in judged.items() if o != aid and (x := xs[w]) is not None]
    flags = []
    for against, others, minimum, usual_words in (
        ("own", own, MIN_OWN_WEEKS, "usual"),
        ("team", team, MIN_TEAM, "for the team that week"),
    ):
        usual = _far(value, n, others, metric.floor) if len(others) >= minimum else None
        if usual is not None:
            said = metric.words.format(metric.show(value))
            reason = f"{said} in {label} against {metric.show(usual)} {usual_words}"
            flags.append(DriftFlag(label, metric.key, against, value, usual, reason))
    return flags
