"""The collection's numbers: per-annotator statistics, agreement between annotators, the
comparisons per backend pair, and the model leaderboard's games. Plain functions over the
:class:`~hhrlhf.collect.db.Storage`; the statistics themselves live in
:mod:`hhrlhf.collect.agreement` and :mod:`hhrlhf.collect.leaderboard`."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timezone
from typing import Any, cast

from sqlalchemy import func, select

from ...ranking.leaderboard import Leaderboard
from ...ranking.votes import Vote
from ..agreement import (
    bootstrap_interval,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_ordinal,
    percent_agreement,
    signed_strength,
)
from ..db import Storage
from ..db.models import Annotator, Candidate, Comparison, Conversation, Review, Turn
from ..domain import other_slot
from ..leaderboard import leaderboard
from . import transcripts
from .backend_live import backend_events
from .gold import gold_accuracy, gold_counts
from .qualification import counted_annotator_ids
from .review import DIFFERENT_TEXTS, ReviewUnit, review_units

__all__ = [
    "Interval",
    "Agreement",
    "AnnotatorAgreement",
    "AnnotatorStats",
    "BackendPair",
    "CollectLeaderboard",
    "CollectionStats",
    "GoldStats",
    "gold_stats",
    "stats_dict",
    "annotator_stats",
    "collection_stats",
    "backend_pairs",
    "leaderboard_games",
    "model_leaderboard",
]


#: a 95% bootstrap interval ``(low, high)``; None where the statistic is undefined
Interval = tuple[float | None, float | None]


@dataclass(frozen=True, slots=True)
class Agreement:
    """Agreement over the reviewed comparisons (``units``) and their ``ratings``: percent
    agreement and Fleiss' kappa of the picks, Krippendorff's alpha (ordinal) of the signed
    strengths, each with its interval; None where undefined."""

    units: int
    ratings: int
    percent_agreement: float | None
    percent_agreement_ci: Interval
    fleiss_kappa: float | None
    fleiss_kappa_ci: Interval
    alpha_ordinal: float | None
    alpha_ordinal_ci: Interval


@dataclass(frozen=True, slots=True)
class AnnotatorAgreement:
    """One annotator's picks against the other raters' of the same comparisons."""

    pairs: int
    percent_agreement: float | None
    cohen_kappa: float | None
    cohen_kappa_ci: Interval


@dataclass(frozen=True, slots=True)
class AnnotatorStats:
    """One annotator's work: counts, the median seconds from both responses shown to the pick,
    picks per strength (``{"1": n, ...}``), the share of picks for A, and (in
    :func:`collection_stats`) their agreement with the other raters."""

    name: str
    role: str
    disabled: bool
    attributes: dict[str, Any]
    conversations: int
    comparisons: int
    edits: int
    reviews: int
    median_seconds: float | None
    strengths: dict[str, int]
    share_a: float | None
    agreement: AnnotatorAgreement | None = None


@dataclass(frozen=True, slots=True)
class BackendPair:
    """The pick comparisons between two backends (sorted names; the same name twice: one
    backend answered both slots)."""

    backends: tuple[str, str]
    comparisons: int


@dataclass(frozen=True, slots=True)
class CollectionStats:
    """Everything ``hh collect stats`` prints."""

    annotators: tuple[AnnotatorStats, ...]
    agreement: Agreement
    counts: dict[str, int]
    pairs: tuple[BackendPair, ...]
    #: the gold comparisons (:mod:`.gold`): None while there are none (then not in the JSON)
    gold: GoldStats | None = None


@dataclass(frozen=True, slots=True)
class GoldStats:
    """The gold items by mode, the gold reviews answered, and each annotator's accuracy
    (``{name: {"answered", "correct", "accuracy"}}``; a gold review is right when it picks
    the known answer)."""

    items: dict[str, int]
    reviews: int
    annotators: dict[str, dict[str, Any]]


def gold_stats(storage: Storage) -> GoldStats | None:
    """The gold figures of :class:`CollectionStats` (None: no gold item)."""
    counts = gold_counts(storage)
    if not counts.total:
        return None
    people = {
        g.name: {"answered": g.answered, "correct": g.correct, "accuracy": g.accuracy}
        for g in gold_accuracy(storage)
    }
    return GoldStats(counts.items, counts.reviews, people)


def stats_dict(stats: CollectionStats) -> dict[str, Any]:
    """The statistics as JSON answers them: ``gold`` only when there is gold."""
    out = asdict(stats)
    if out["gold"] is None:
        del out["gold"]
    return out


def _agreement(units: Sequence[ReviewUnit], resamples: int, seed: int) -> Agreement:
    picks = [[r.pick for r in u.ratings] for u in units]
    signed = [[signed_strength(r.pick, r.strength) for r in u.ratings] for u in units]
    both = list(zip(picks, signed, strict=True))

    def ci(stat: Callable[[list[Any]], float], idx: int) -> Interval:
        lo, hi = bootstrap_interval(
            both, lambda xs: stat([x[idx] for x in xs]), resamples=resamples, seed=seed
        )
        return _num(lo), _num(hi)

    return Agreement(
        units=len(units),
        ratings=sum(len(p) for p in picks),
        percent_agreement=_num(percent_agreement(picks)),
        percent_agreement_ci=ci(percent_agreement, 0),
        fleiss_kappa=_num(fleiss_kappa(picks)),
        fleiss_kappa_ci=ci(fleiss_kappa, 0),
        alpha_ordinal=_num(krippendorff_alpha_ordinal(signed)),
        alpha_ordinal_ci=ci(krippendorff_alpha_ordinal, 1),
    )


def _num(x: float) -> float | None:
    return None if x != x else round(x, 4)


def _per_annotator_agreement(
    units: Sequence[ReviewUnit], resamples: int, seed: int
) -> dict[str, AnnotatorAgreement]:
    pairs: dict[str, list[tuple[str, str]]] = defaultdict(
        list
    )  # name -> [(own pick, other's pick), ...]
    for u in units:
        rs = u.ratings
        for i, r in enumerate(rs):
            for j, o in enumerate(rs):
                if i != j:
                    pairs[r.annotator].append((r.pick, o.pick))
    out = {}
    for name, ps in pairs.items():
        agree = sum(x == y for x, y in ps) / len(ps)
        lo, hi = bootstrap_interval(ps, cohen_kappa, resamples=resamples, seed=seed)
        out[name] = AnnotatorAgreement(
            pairs=len(ps),
            percent_agreement=_num(agree),
            cohen_kappa=_num(cohen_kappa(ps)),
            cohen_kappa_ci=(_num(lo), _num(hi)),
        )
    return out


def annotator_stats(storage: Storage) -> list[AnnotatorStats]:
    """Per annotator: conversations, comparisons, seconds per comparison, strengths, share of A."""
    with storage.read() as s:
        people = s.scalars(select(Annotator).order_by(Annotator.name)).all()
        convs = dict(
            s.execute(
                select(Conversation.annotator_id, func.count()).group_by(Conversation.annotator_id)
            ).all()
        )
        comps = s.execute(
            select(
                Comparison.annotator_id,
                Comparison.pick,
                Comparison.strength,
                Comparison.shown_at,
                Comparison.decided_at,
            ).where(Comparison.kind == "pick", DIFFERENT_TEXTS)
        ).all()
        edits = dict(
            s.execute(
                select(Comparison.annotator_id, func.count())
                .where(Comparison.kind == "edit")
                .group_by(Comparison.annotator_id)
            ).all()
        )
        reviews = dict(
            s.execute(
                select(Review.reviewer_id, func.count())
                .where(Review.status == "done", Review.comparison_id.is_not(None))
                .group_by(Review.reviewer_id)
            ).all()
        )
    by: dict[int, list[Any]] = defaultdict(list)
    for aid, pick, strength, shown, decided in comps:
        by[aid].append((pick, strength, shown, decided))
    rows = []
    for a in people:
        mine = by.get(a.id, [])
        seconds = [
            (d - sh).total_seconds() for _, _, sh, d in mine if sh is not None and d is not None
        ]
        strengths = Counter(st for _, st, _, _ in mine)
        rows.append(
            AnnotatorStats(
                name=a.name,
                role=a.role,
                disabled=a.disabled,
                attributes=dict(a.attributes or {}),
                conversations=convs.get(a.id, 0),
                comparisons=len(mine),
                edits=edits.get(a.id, 0),
                reviews=reviews.get(a.id, 0),
                median_seconds=round(statistics.median(seconds), 1) if seconds else None,
                strengths={str(k): strengths[k] for k in sorted(strengths)},
                share_a=round(sum(p == "a" for p, *_ in mine) / len(mine), 4) if mine else None,
            )
        )
    return rows


def collection_stats(storage: Storage, *, resamples: int = 1000, seed: int = 0) -> CollectionStats:
    """Everything ``hh collect stats`` prints: per-annotator rows and agreement, overall agreement."""
    units = review_units(storage)
    people = annotator_stats(storage)
    agreement = _per_annotator_agreement(units, resamples, seed)
    return CollectionStats(
        annotators=tuple(replace(row, agreement=agreement.get(row.name)) for row in people),
        agreement=_agreement(units, resamples, seed),
        counts=transcripts.counts(storage),
        pairs=tuple(backend_pairs(storage)),
        gold=gold_stats(storage),
    )


def backend_pairs(storage: Storage) -> list[BackendPair]:
    """Pick comparisons per pair of backends (A/B order ignored; an identical pair is none),
    most first. A rerank backend (or a red-team conversation's one backend) answering both
    slots is the pair ``(x, x)``."""
    with storage.read() as s:
        rows = s.execute(
            select(Comparison.turn_id).where(Comparison.kind == "pick", DIFFERENT_TEXTS)
        ).all()
        turns = {t for (t,) in rows}
        backends: dict[int, list[str]] = defaultdict(list)
        if turns:
            for turn_id, backend in s.execute(
                select(Candidate.turn_id, Candidate.backend).where(Candidate.turn_id.in_(turns))
            ).all():
                backends[turn_id].append(backend)
    counts = Counter((min(b), max(b)) for b in backends.values() if len(b) == 2)
    return [BackendPair(pair, n) for pair, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))]


def leaderboard_games(storage: Storage, *, detail: bool = False) -> list[Any]:
    """``(conversation_id, winner backend, loser backend)`` for every pick between two backends.

    In a qualification round only the picks of annotators who passed it are games.
    Helpful: the picked response wins. Red-team: the LESS harmful (the one not picked) wins.
    ``detail``: :class:`~hhrlhf.ranking.votes.Vote` records instead (winner as model A, the
    response lengths in characters, the decision time, the conversation as the group and
    ``{"conversation", "turn"}`` as the reference).
    """
    with storage.read() as s:
        counted = counted_annotator_ids(s)  # a qualification round: those who passed only
        query = (
            select(
                Conversation.id,
                Conversation.mode,
                Comparison.chosen_slot,
                Comparison.turn_id,
                func.length(Comparison.chosen_text),
                func.length(Comparison.rejected_text),
                Comparison.decided_at,
            )
            .join(Turn, Comparison.turn_id == Turn.id)
            .join(Conversation, Turn.conversation_id == Conversation.id)
            .where(Comparison.kind == "pick", DIFFERENT_TEXTS)
            .order_by(Comparison.id)
        )
        if counted is not None:
            query = query.where(Comparison.annotator_id.in_(counted))
        rows = s.execute(query).all()
        backends: dict[int, dict[str, str]] = defaultdict(dict)
        for turn_id, slot, backend in s.execute(
            select(Candidate.turn_id, Candidate.slot, Candidate.backend)
        ).all():
            backends[turn_id][slot] = backend
    games = []
    for conv_id, mode, chosen, turn_id, *extra in rows:
        b = backends[turn_id]
        winner, loser = b.get(chosen), b.get(other_slot(chosen))
        if winner is None or loser is None or winner == loser:
            continue
        if mode == "red-team":
            winner, loser = loser, winner
            extra[0], extra[1] = extra[1], extra[0]
        games.append(
            _vote(conv_id, turn_id, winner, loser, *extra) if detail else (conv_id, winner, loser)
        )
    return games


def _vote(
    conv_id: int,
    turn_id: int,
    winner: str,
    loser: str,
    len_w: int | None,
    len_l: int | None,
    decided: datetime | None,
) -> Vote:
    if decided is not None and decided.tzinfo is None:  # SQLite keeps no offset: stored in UTC
        decided = decided.replace(tzinfo=timezone.utc)
    return Vote(
        model_a=winner,
        model_b=loser,
        winner="model_a",
        length_a=float(len_w or 0),
        length_b=float(len_l or 0),
        tstamp=None if decided is None else decided.timestamp(),
        group=conv_id,
        ref={"conversation": conv_id, "turn": turn_id},
    )


class CollectLeaderboard(Leaderboard, total=False):
    """The collection's leaderboard: ``weight_changes`` only when a backend was paused,
    resumed or re-weighted between the first and the last pick (the pair mix changed)."""

    weight_changes: list[dict[str, Any]]


def model_leaderboard(
    storage: Storage,
    *,
    resamples: int = 1000,
    seed: int = 0,
    config_weights: Mapping[str, float] | None = None,
    **options: Any,
) -> CollectLeaderboard:
    """The leaderboard of the collected picks (conversation bootstrap); ``options`` as for
    :func:`hhrlhf.collect.leaderboard.leaderboard` (``style_control``, ``robustness``).

    A backend paused, resumed or re-weighted while the picks were made changed which pairs
    were drawn: ``weight_changes`` lists those changes (``config_weights``: the config's, so
    a first re-weight names the weight it replaced)."""
    votes = leaderboard_games(storage, detail=True)
    board = cast(CollectLeaderboard, leaderboard(votes, resamples=resamples, seed=seed, **options))
    times = [v.tstamp for v in votes if v.tstamp is not None]
    if times:
        since, until = (
            datetime.fromtimestamp(t, tz=timezone.utc) for t in (min(times), max(times))
        )
        changes = backend_events(storage, since=since, until=until, config_weights=config_weights)
        if changes:
            board["weight_changes"] = [c.to_dict() for c in changes]
    return board
