"""Review tasks, per-annotator statistics, agreement and leaderboard games over the collection DB.

Plain functions taking the :class:`~hhrlhf.collect.db.Storage` (its sessions and write
lock); the statistics themselves live in :mod:`hhrlhf.collect.agreement` and
:mod:`hhrlhf.collect.leaderboard`.

Which comparisons are reviewed: a stable ``fraction`` of finished pick comparisons, chosen by a
hash of the conversation's uid and the turn index (the same ones whatever the order of requests).
Each is shown to annotators other than its author, the two responses in a random order; the
review's pick is stored in the ORIGINAL slot order.
"""

from __future__ import annotations

import hashlib
import random
import statistics
from collections import Counter, defaultdict
from datetime import timezone

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from ...errors import Conflict, Invalid, NotFound
from ...ranking.votes import Vote
from ..agreement import (
    bootstrap_interval,
    cohen_kappa,
    fleiss_kappa,
    krippendorff_alpha_ordinal,
    percent_agreement,
    signed_strength,
)
from ..db.models import Annotator, Candidate, Comparison, Conversation, Review, Session, Turn
from ..leaderboard import leaderboard

__all__ = [
    "selected_for_review",
    "next_review",
    "submit_review",
    "review_units",
    "agreed_turns",
    "annotator_stats",
    "collection_stats",
    "leaderboard_games",
    "model_leaderboard",
    "set_annotator",
]


#: an identical pair (both responses the same text) is never a review item, an agreement
#: sample or a leaderboard game, as the export never makes it a line
DIFFERENT_TEXTS = Comparison.chosen_text != Comparison.rejected_text


def selected_for_review(uid: str, turn_index: int, fraction: float) -> bool:
    """Whether the comparison of turn ``turn_index`` of conversation ``uid`` is re-shown."""
    if fraction <= 0:
        return False
    h = hashlib.sha256(f"review:{uid}:{turn_index}".encode()).digest()[:8]
    return int.from_bytes(h, "big") / 2**64 < fraction


def _flip(slot: str) -> str:
    return "b" if slot == "a" else "a"


def _task(r: Review, comp: Comparison, turn: Turn, conv: Conversation) -> dict:
    cands = {c.slot: c.text for c in turn.candidates}
    order = ["b", "a"] if r.swapped else ["a", "b"]
    shown_pick = None
    if r.pick is not None:
        shown_pick = _flip(r.pick) if r.swapped else r.pick
    return {
        "id": r.id,
        "mode": conv.mode,
        "prefix": turn.prefix,
        "human": turn.human,
        "candidates": [
            {"slot": shown, "text": cands[orig]} for shown, orig in zip("ab", order, strict=True)
        ],
        "status": r.status,
        "pick": shown_pick,
        "strength": r.strength,
    }


def _load(s, review_id: int):
    r = s.get(Review, review_id)
    if r is None:
        return None
    comp = s.get(Comparison, r.comparison_id)
    turn = s.get(Turn, comp.turn_id)
    conv = s.get(Conversation, turn.conversation_id)
    return r, comp, turn, conv


def next_review(storage, who, fraction: float, *, rng: random.Random | None = None) -> dict | None:
    """The reviewer's open review task, else a new one (fewest reviews, assigned or done, first;
    then the oldest), else ``None``.

    The scan of every finished comparison runs in a read transaction (SQLite: beside the
    writer, never holding the write lock); the write transaction only re-checks the
    reviewer's open task (their row locked, so one reviewer's two requests at once are served
    one after the other) and inserts the review. Counts a concurrent assignment changed meanwhile
    can make the pick a little less even, never wrong: a reviewer never gets a comparison twice
    (unique constraint) nor two open tasks.
    """
    rng = rng or random.Random()
    with storage._read() as s:
        open_id = _open_review(s, who.id)
        if open_id is not None:
            return _task(*_load(s, open_id))
        if fraction <= 0:
            return None
        eligible = _review_candidates(s, who.id, fraction)
    if not eligible:
        return None
    _, comparison_id = min(eligible)
    with storage._write() as s:
        s.execute(select(Annotator.id).where(Annotator.id == who.id).with_for_update())
        open_id = _open_review(s, who.id)  # another request of this reviewer was first
        if open_id is not None:
            return _task(*_load(s, open_id))
        r = Review(
            comparison_id=comparison_id,
            reviewer_id=who.id,
            swapped=rng.random() < 0.5,
            status="assigned",
            assigned_at=_now(),
        )
        s.add(r)
        try:
            s.flush()
        except IntegrityError as exc:  # the same reviewer asked twice at once
            raise Conflict("a review task was just assigned; ask again") from exc
        return _task(*_load(s, r.id))


def _open_review(s, reviewer_id: int) -> int | None:
    return s.scalar(
        select(Review.id)
        .where(Review.reviewer_id == reviewer_id, Review.status == "assigned")
        .order_by(Review.id)
    )


def _review_candidates(s, reviewer_id: int, fraction: float) -> list[tuple[int, int]]:
    """``(reviews so far, comparison id)`` of every comparison this reviewer may review."""
    reviewed = select(Review.comparison_id).where(Review.reviewer_id == reviewer_id)
    done = (
        select(Review.comparison_id, func.count().label("n"))
        .group_by(Review.comparison_id)
        .subquery()
    )
    rows = s.execute(
        select(Comparison.id, Conversation.uid, Turn.index, func.coalesce(done.c.n, 0))
        .join(Turn, Comparison.turn_id == Turn.id)
        .join(Conversation, Turn.conversation_id == Conversation.id)
        .outerjoin(done, done.c.comparison_id == Comparison.id)
        .where(
            Comparison.kind == "pick",
            Conversation.status == "finished",
            Comparison.annotator_id != reviewer_id,
            Comparison.id.not_in(reviewed),
            DIFFERENT_TEXTS,
        )
        .order_by(Comparison.id)
    ).all()
    selected = [row for row in rows if selected_for_review(row[1], row[2], fraction)]
    # a later turn's prefix shows the pick of every earlier turn: of each conversation, only
    # the earliest turn this reviewer has still to review can be given
    first: dict[str, int] = {}
    for _, uid, index, _ in selected:
        first[uid] = min(first.get(uid, index), index)
    return [(n, cid) for cid, uid, index, n in selected if index == first[uid]]


def _now():
    from ..db import now

    return now()


def submit_review(storage, who, review_id: int, pick: str, strength: int, points: int) -> dict:
    """Record the reviewer's pick (as shown) and strength; repeating the same answer is a no-op."""
    if pick not in ("a", "b"):
        raise Invalid(f"pick must be 'a' or 'b', not {pick!r}")
    if not 1 <= strength <= points:
        raise Invalid(f"strength must be between 1 and {points}, not {strength}")
    with storage._write() as s:
        loaded = _load(s, review_id)
        if loaded is None or loaded[0].reviewer_id != who.id:
            raise NotFound(f"review {review_id} not found")
        r = loaded[0]
        original = _flip(pick) if r.swapped else pick
        if r.status == "done":
            if (r.pick, r.strength) == (original, strength):
                return _task(*loaded)
            raise Conflict(f"review {review_id} already has a different answer")
        r.pick, r.strength, r.status, r.decided_at = original, strength, "done", _now()
        s.flush()
        return _task(*loaded)


def review_units(storage) -> list[dict]:
    """Every reviewed comparison with all its ratings: the author's first, then the reviewers'."""
    with storage._read() as s:
        rows = s.execute(
            select(Review.comparison_id, Annotator.name, Review.pick, Review.strength)
            .join(Annotator, Review.reviewer_id == Annotator.id)
            .join(Comparison, Review.comparison_id == Comparison.id)
            .where(Review.status == "done", DIFFERENT_TEXTS)
            .order_by(Review.comparison_id, Review.id)
        ).all()
        by_comp: dict[int, list] = defaultdict(list)
        for cid, name, pick, strength in rows:
            by_comp[cid].append({"annotator": name, "pick": pick, "strength": strength})
        authors = {}
        if by_comp:
            for cid, name, pick, strength, conv_id, index in s.execute(
                select(
                    Comparison.id,
                    Annotator.name,
                    Comparison.pick,
                    Comparison.strength,
                    Turn.conversation_id,
                    Turn.index,
                )
                .join(Annotator, Comparison.annotator_id == Annotator.id)
                .join(Turn, Comparison.turn_id == Turn.id)
                .where(
                    Comparison.id.in_(select(Review.comparison_id).where(Review.status == "done"))
                )
            ).all():
                authors[cid] = (
                    {"annotator": name, "pick": pick, "strength": strength},
                    conv_id,
                    index,
                )
        units = []
        for cid, reviews in sorted(by_comp.items()):
            author, conv_id, index = authors[cid]
            units.append(
                {
                    "comparison_id": cid,
                    "conversation_id": conv_id,
                    "turn_index": index,
                    "ratings": [author, *reviews],
                }
            )
        return units


def agreed_turns(units: list[dict]) -> set[tuple[int, int]]:
    """``(conversation_id, turn_index)`` of reviewed comparisons whose every review picks as the author."""
    return {
        (u["conversation_id"], u["turn_index"])
        for u in units
        if len({r["pick"] for r in u["ratings"]}) == 1
    }


def _agreement(units: list[dict], resamples: int, seed: int) -> dict:
    picks = [[r["pick"] for r in u["ratings"]] for u in units]
    signed = [[signed_strength(r["pick"], r["strength"]) for r in u["ratings"]] for u in units]
    both = list(zip(picks, signed, strict=True))

    def ci(stat, idx):
        lo, hi = bootstrap_interval(
            both, lambda xs: stat([x[idx] for x in xs]), resamples=resamples, seed=seed
        )
        return [_num(lo), _num(hi)]

    return {
        "units": len(units),
        "ratings": sum(len(p) for p in picks),
        "percent_agreement": _num(percent_agreement(picks)),
        "percent_agreement_ci": ci(percent_agreement, 0),
        "fleiss_kappa": _num(fleiss_kappa(picks)),
        "fleiss_kappa_ci": ci(fleiss_kappa, 0),
        "alpha_ordinal": _num(krippendorff_alpha_ordinal(signed)),
        "alpha_ordinal_ci": ci(krippendorff_alpha_ordinal, 1),
    }


def _num(x: float) -> float | None:
    return None if x != x else round(x, 4)


def _per_annotator_agreement(units: list[dict], resamples: int, seed: int) -> dict[str, dict]:
    pairs: dict[str, list[tuple]] = defaultdict(list)  # name -> [(own pick, other's pick), ...]
    for u in units:
        rs = u["ratings"]
        for i, r in enumerate(rs):
            for j, o in enumerate(rs):
                if i != j:
                    pairs[r["annotator"]].append((r["pick"], o["pick"]))
    out = {}
    for name, ps in pairs.items():
        agree = sum(x == y for x, y in ps) / len(ps)
        lo, hi = bootstrap_interval(ps, cohen_kappa, resamples=resamples, seed=seed)
        out[name] = {
            "pairs": len(ps),
            "percent_agreement": _num(agree),
            "cohen_kappa": _num(cohen_kappa(ps)),
            "cohen_kappa_ci": [_num(lo), _num(hi)],
        }
    return out


def annotator_stats(storage) -> list[dict]:
    """Per annotator: conversations, comparisons, seconds per comparison, strengths, share of A."""
    with storage._read() as s:
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
                .where(Review.status == "done")
                .group_by(Review.reviewer_id)
            ).all()
        )
    by: dict[int, list] = defaultdict(list)
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
            {
                "name": a.name,
                "role": a.role,
                "disabled": a.disabled,
                "attributes": dict(a.attributes or {}),
                "conversations": convs.get(a.id, 0),
                "comparisons": len(mine),
                "edits": edits.get(a.id, 0),
                "reviews": reviews.get(a.id, 0),
                "median_seconds": round(statistics.median(seconds), 1) if seconds else None,
                "strengths": {str(k): strengths[k] for k in sorted(strengths)},
                "share_a": round(sum(p == "a" for p, *_ in mine) / len(mine), 4) if mine else None,
            }
        )
    return rows


def collection_stats(storage, *, resamples: int = 1000, seed: int = 0) -> dict:
    """Everything ``hh collect stats`` prints: per-annotator rows and agreement, overall agreement."""
    units = review_units(storage)
    people = annotator_stats(storage)
    agreement = _per_annotator_agreement(units, resamples, seed)
    for row in people:
        row["agreement"] = agreement.get(row["name"])
    return {
        "annotators": people,
        "agreement": _agreement(units, resamples, seed),
        "counts": storage.counts(),
        "pairs": backend_pairs(storage),
    }


def backend_pairs(storage) -> list[dict]:
    """Pick comparisons per pair of backends (A/B order ignored; an identical pair is none):
    ``[{"backends": [x, y], "comparisons": n}]``, most first. A rerank backend (or a red-team
    conversation's one backend) answering both slots is the pair ``[x, x]``."""
    with storage._read() as s:
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
    counts = Counter(tuple(sorted(b)) for b in backends.values() if len(b) == 2)
    return [
        {"backends": list(pair), "comparisons": n}
        for pair, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))
    ]


def leaderboard_games(storage, *, detail: bool = False) -> list:
    """``(conversation_id, winner backend, loser backend)`` for every pick between two backends.

    Helpful: the picked response wins. Red-team: the LESS harmful (the one not picked) wins.
    ``detail``: :class:`~hhrlhf.ranking.votes.Vote` records instead (winner as model A, the
    response lengths in characters, the decision time, the conversation as the group and
    ``{"conversation", "turn"}`` as the reference).
    """
    with storage._read() as s:
        rows = s.execute(
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
        ).all()
        backends: dict[int, dict[str, str]] = defaultdict(dict)
        for turn_id, slot, backend in s.execute(
            select(Candidate.turn_id, Candidate.slot, Candidate.backend)
        ).all():
            backends[turn_id][slot] = backend
    games = []
    for conv_id, mode, chosen, turn_id, *extra in rows:
        b = backends[turn_id]
        winner, loser = b.get(chosen), b.get(_flip(chosen))
        if winner is None or loser is None or winner == loser:
            continue
        if mode == "red-team":
            winner, loser = loser, winner
            extra[0], extra[1] = extra[1], extra[0]
        games.append(
            _vote(conv_id, turn_id, winner, loser, *extra) if detail else (conv_id, winner, loser)
        )
    return games


def _vote(conv_id: int, turn_id: int, winner: str, loser: str, len_w, len_l, decided) -> Vote:
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


def model_leaderboard(storage, *, resamples: int = 1000, seed: int = 0, **options) -> dict:
    """The leaderboard of the collected picks (conversation bootstrap); ``options`` as for
    :func:`hhrlhf.collect.leaderboard.leaderboard` (``style_control``, ``robustness``)."""
    return leaderboard(
        leaderboard_games(storage, detail=True), resamples=resamples, seed=seed, **options
    )


def set_annotator(
    storage,
    name: str,
    *,
    role: str | None = None,
    attributes: dict | None = None,
    disabled: bool | None = None,
    keep_an_admin: bool = False,
) -> dict:
    """Change an annotator's role, disabled flag and/or merge attributes (a ``None`` value
    removes a key), in one transaction.

    ``keep_an_admin``: refuse (409) a change that would leave no enabled admin, so the last
    admin cannot demote or disable themself. The enabled admins' rows are locked first
    (PostgreSQL: ``FOR UPDATE``; SQLite: the one writer), so two admins demoting each other at
    once cannot both succeed.
    """
    if role is not None and role not in ("annotator", "admin"):
        raise Invalid(f"role must be 'annotator' or 'admin', not {role!r}")
    with storage._write() as s:
        admins = []
        if keep_an_admin:
            admins = list(
                s.scalars(
                    select(Annotator.id)
                    .where(Annotator.role == "admin", Annotator.disabled.is_(False))
                    .order_by(Annotator.id)
                    .with_for_update()
                )
            )
        a = s.scalar(select(Annotator).where(Annotator.name == name))
        if a is None:
            raise NotFound(f"no annotator named {name!r}")
        stays_admin = (role or a.role) == "admin" and not (
            a.disabled if disabled is None else disabled
        )
        if keep_an_admin and a.id in admins and len(admins) == 1 and not stays_admin:
            raise Conflict(
                f"{a.name!r} is the last admin: make another annotator an admin first "
                "(an app without an admin cannot manage annotators)",
            )
        if role is not None:
            a.role = role
        if disabled is not None:
            a.disabled = disabled
            if disabled:
                s.execute(Session.__table__.delete().where(Session.annotator_id == a.id))
        if attributes:
            merged = dict(a.attributes or {})
            for k, v in attributes.items():
                if v is None:
                    merged.pop(k, None)
                else:
                    merged[k] = v
            a.attributes = merged
        s.flush()
        return {"name": a.name, "role": a.role, "attributes": dict(a.attributes or {})}
