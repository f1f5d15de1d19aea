"""An annotator's choice on a turn: the pick, its strength and an optional edit, stored
once (a repeat answers what was stored; a different choice is a conflict)."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple, cast

from sqlalchemy.exc import IntegrityError

from ...errors import Conflict, Forbidden, Invalid, NotFound
from ..db import Storage
from ..db.queries import choices as q
from ..domain import (
    SLOTS,
    AnnotatorInfo,
    ConversationStatus,
    Mode,
    Slot,
    TurnAnswer,
    TurnStatus,
    now,
    other_slot,
)
from . import turnviews
from .writers import check_writer


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
) -> TurnAnswer:
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
) -> TurnAnswer:
    # a return inside the block runs after the commit: only then is the choice acknowledged
    with storage.write() as s:
        conn = s.connection()  # plain statements and rows (no ORM objects: once per turn)
        # one statement (each round trip is a wait on a busy server): a row per candidate,
        # each with the turn, its conversation and its stored pick and edit if any
        rows = q.choice_state(conn, turn_id, who.id)
        if not rows:
            raise NotFound(f"turn {turn_id} not found")
        t = rows[0]
        if not who.sees(t.annotator_id):
            raise NotFound(f"turn {turn_id} not found")
        check_writer(t, who)  # enabled now, whatever a worker remembers of the login
        # ("index" is a row's tuple method: the column is read by its label)
        view = turnviews.TurnView(t.id, t.turn_index, t.human, t.status)
        cands = turnviews.candidate_views(rows)
        texts = {x.slot: x.text for x in cands}
        if strength is None:
            if t.status != TurnStatus.READY or texts.get(Slot.A) != texts.get(Slot.B):
                raise Invalid("strength is required: the two responses differ")
            strength = 1
        if t.pick is not None:
            same = (t.pick, t.strength, t.edit) == (pick, strength, edit)
            if (request_id and t.request_id == request_id) or same:
                stored = cast("turnviews.PickView", t)  # its pick is stored: so are the rest
                return turnviews.turn_answer(
                    view, cands, stored, t.edit, t.continued, admin=who.is_admin
                )
            raise Conflict(
                f"turn {turn_id} already has a different choice ({t.pick}, strength {t.strength})",
            )
        if t.annotator_id != who.id:
            raise Forbidden("only the conversation's annotator can choose")
        if t.conversation_status != ConversationStatus.OPEN:
            raise Conflict(f"conversation {t.conversation_id} is finished")
        if t.status != TurnStatus.READY:
            raise Conflict(
                f"turn {turn_id} is not ready for a choice (status {t.status})",
            )
        if edit is not None and t.mode != Mode.HELPFUL:
            raise Invalid("edits are for helpful conversations only")
        other = other_slot(pick)
        picked_text, other_text = texts[pick], texts[other]
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
        rows_in = [
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
            rows_in.append(
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
        elif t.mode == Mode.RED_TEAM and t.red_team_continue == "other":
            continued = other_text
        else:
            continued = picked_text
        q.store_choice(conn, t.id, rows_in, continued)
        # the answer is what was just written (committed when this block ends)
        decision = _Decided(pick, strength, decided)
        return turnviews.turn_answer(
            view, cands, decision, edit if edited else None, continued, admin=who.is_admin
        )


class _Decided(NamedTuple):
    """A choice just stored, as :func:`.turnviews.turn_answer` reads a stored pick."""

    pick: str
    strength: int
    decided_at: datetime
