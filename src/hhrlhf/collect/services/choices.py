"""An annotator's choice on a turn: the pick, its strength and an optional edit, stored
once (a repeat answers what was stored; a different choice is a conflict)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import joinedload

from ...errors import Conflict, Forbidden, Invalid, NotFound
from ..db import Storage
from ..db.models import Comparison, Turn
from ..domain import (
    SLOTS,
    AnnotatorInfo,
    iso,
    now,
)
from . import conversations

if TYPE_CHECKING:
    from sqlalchemy import Table


def record_choice(
    storage: Storage,
    who: AnnotatorInfo,
    turn_id: int,
    *,
    pick: str,
    strength: int | None,
    strength_points: int,
    edit: str | None = None,
    request_id: str | None = None,
) -> dict[str, Any]:
    """Store the annotator's choice; returns the turn once the transaction has committed.

    A repeat (same ``request_id``, or the same pick, strength and edit) returns the stored
    answer; a different choice for a decided turn is a 409. ``strength`` None: allowed only
    when both responses are the same text (an identical pair: nothing to compare), stored
    as 1, the point the instructions give for "about the same"; an identical pair is never
    exported, reviewed, or a leaderboard game.
    """
    if pick not in SLOTS:
        raise Invalid("pick must be 'a' or 'b'")
    if strength is not None and not 1 <= strength <= strength_points:
        raise Invalid(f"strength must be 1 to {strength_points}")
    if edit is not None:
        edit = edit.strip()
        if not edit:
            raise Invalid("the edit is empty")
    for attempt in range(2):
        try:
            return _record_choice(storage, who, turn_id, pick, strength, edit, request_id)
        except IntegrityError:
            # another request stored a choice first: answer as a repeat, or 409
            if attempt:
                raise
    raise AssertionError("unreachable")


def _record_choice(
    storage: Storage,
    who: AnnotatorInfo,
    turn_id: int,
    pick: str,
    strength: int | None,
    edit: str | None,
    request_id: str | None,
) -> dict[str, Any]:
    # a return inside the block runs after the commit: only then is the choice acknowledged
    with storage.write() as s:
        # one statement for the turn, its conversation, candidates and comparisons
        # (at most 2 x 2 joined rows): each round trip is a wait on a busy server
        t = (
            s.scalars(
                select(Turn)
                .where(Turn.id == turn_id)
                .options(
                    joinedload(Turn.conversation),
                    joinedload(Turn.candidates),
                    joinedload(Turn.comparisons),
                )
            )
            .unique()
            .one_or_none()
        )
        if t is None:
            raise NotFound(f"turn {turn_id} not found")
        c = t.conversation
        if c.annotator_id != who.id and not who.is_admin:
            raise NotFound(f"turn {turn_id} not found")
        if strength is None:
            texts = {x.slot: x.text for x in t.candidates}
            if t.status != "ready" or texts.get("a") != texts.get("b"):
                raise Invalid("strength is required: the two responses differ")
            strength = 1
        existing = list(t.comparisons)
        stored = next((x for x in existing if x.kind == "pick"), None)
        if stored is not None:
            stored_edit = next((x.chosen_text for x in existing if x.kind == "edit"), None)
            same = (stored.pick, stored.strength, stored_edit) == (pick, strength, edit)
            if (request_id and stored.request_id == request_id) or same:
                return conversations.turn_dict(t, admin=who.is_admin)
            raise Conflict(
                f"turn {turn_id} already has a different choice ({stored.pick}, "
                f"strength {stored.strength})",
            )
        if c.annotator_id != who.id:
            raise Forbidden("only the conversation's annotator can choose")
        if c.status != "open":
            raise Conflict(f"conversation {c.id} is finished")
        if t.status != "ready":
            raise Conflict(
                f"turn {turn_id} is not ready for a choice (status {t.status})",
            )
        if edit is not None and c.mode != "helpful":
            raise Invalid("edits are for helpful conversations only")
        cands = {x.slot: x for x in t.candidates}
        other = "b" if pick == "a" else "a"
        picked_text, other_text = cands[pick].text, cands[other].text
        decided = now()
        common = dict(
            turn_id=t.id,
            annotator_id=who.id,
            pick=pick,
            strength=strength,
            request_id=request_id,
            shown_at=t.ready_at,
            decided_at=decided,
        )
        rows = [
            dict(
                kind="pick",
                chosen_slot=pick,
                rejected_slot=other,
                chosen_text=picked_text,
                rejected_text=other_text,
                **common,
            )
        ]
        edited = edit is not None and edit != picked_text
        if edited:
            rows.append(
                dict(
                    kind="edit",
                    chosen_slot=None,
                    rejected_slot=pick,
                    chosen_text=edit,
                    rejected_text=picked_text,
                    **common,
                )
            )
        continued: str | None
        if edit is not None:
            continued = edit
        elif c.mode == "red-team" and c.red_team_continue == "other":
            continued = other_text
        else:
            continued = picked_text
        # plain statements (no ORM unit of work): the comparisons, then the turn's continuation
        conn = s.connection()
        conn.execute(insert(_comparison_table), rows)
        conn.execute(
            update(_turn_table).where(_turn_table.c.id == t.id).values(continued=continued)
        )
        # the answer is what was just written (committed when this block ends)
        out = conversations.turn_dict(t, admin=who.is_admin)
        out.update(
            pick=pick,
            strength=strength,
            edit=edit if edited else None,
            continued=continued,
            decided_at=iso(decided),
        )
        return out


_comparison_table = cast("Table", Comparison.__table__)
_turn_table = cast("Table", Turn.__table__)
