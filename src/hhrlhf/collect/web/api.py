"""The JSON API under ``/api/v1`` (the pages and scripts use the same routes); login and
logout are :mod:`.login`."""

from __future__ import annotations

import time
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import (
    JSONResponse,
    Response,
    StreamingResponse,
)
from pydantic import BaseModel, ConfigDict, StrictBool, StrictInt

from ...errors import Invalid
from ..domain import AnnotatorInfo, CandidateStatus, Mode, TurnState, TurnStatus
from ..generation.runner import Event, failure_message
from ..services import choices, conversations, leases
from ..services.rules import REQUEST_ID_CHARS, Rules, check_size
from ..textrules import Text
from . import schemas
from .auth import current_annotator, logged_in
from .context import app_context
from .markdown import turn_texts, with_html
from .schemas import answers
from .stream import event_stream, render_all, rendered

__all__ = ["router", "Who"]

router = APIRouter(prefix="/api/v1")

#: the logged-in, enabled annotator (401/403 otherwise; CSRF checked for cookie writes)
Who = Annotated[AnnotatorInfo, Depends(logged_in)]


class _Body(BaseModel):
    """A JSON body: unknown keys refused; every text field is :data:`~.textrules.Text`
    (no speaker marker, lone surrogate or NUL: a 422 naming the field, nothing stored)."""

    model_config = ConfigDict(extra="forbid")


class NewConversation(_Body):
    mode: Text = Mode.HELPFUL
    #: left out: the next task of the campaign's (its mode, not ``mode``)
    task_description: Text | None = None


class NewTurn(_Body):
    text: Text
    #: false: answered at once (pending), the responses then read from the turn's stream
    wait: StrictBool = True
    #: true: answered as the turn's event stream, from a ``turn`` event to ``end`` (the page)
    stream: StrictBool = False


class Choice(_Body):
    pick: Text
    #: left out only when both responses are the same text (recorded as the smallest point)
    strength: StrictInt | None = None
    edit: Text | None = None
    request_id: Text | None = None


class Finish(_Body):
    comment: Text | None = None
    rating: StrictInt | None = None


def _answer(data: dict[str, Any], status_code: int = 200) -> Response:
    """A hot route's answer, encoded as it is: the services build plain JSON data, so
    FastAPI's per-value walk over it (``jsonable_encoder``: ~90 us for a choice's answer) is
    skipped. The route's documented schema is unchanged."""
    return Response(orjson.dumps(data), status_code, media_type="application/json")


@router.get("/health", response_model=None, responses=answers(schemas.Health))
def health() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/me", responses=answers(schemas.Me))
def me(request: Request, who: Who) -> JSONResponse:
    found = current_annotator(request)
    assert found is not None  # Who: logged in
    _, csrf, via = found
    return JSONResponse(
        {"name": who.name, "role": who.role, "csrf_token": csrf, "auth": via},
        headers={"cache-control": "no-store"},
    )


@router.post("/conversations", status_code=201, responses=answers(schemas.ConversationSummary, 201))
async def create_conversation(body: NewConversation, request: Request, who: Who) -> Response:
    st = app_context(request)
    rules: Rules = st.rules
    check_size("task_description", body.task_description, rules.max_task_chars)
    backend = red_team_continue = None
    if body.mode == Mode.RED_TEAM or body.task_description is None:  # a task may be red-team
        backend = rules.red_team_backend(st.rng)
        red_team_continue = rules.red_team_continue
    started = await st.storage.call(
        conversations.create_conversation,
        who,
        body.mode,
        body.task_description,
        backend=backend,
        red_team_continue=red_team_continue,
    )
    return _answer(started.to_dict(), 201)


@router.get("/conversations", response_model=None, responses=answers(schemas.ConversationList))
def list_conversations(
    request: Request,
    who: Who,
    all: Annotated[
        bool | None, Query(description="admins: everyone's (default) or only their own")
    ] = None,  # noqa: A002
) -> dict[str, Any]:
    found = conversations.list_conversations(app_context(request).storage, who, all_=all)
    return {"conversations": [c.to_dict() for c in found]}


#: characters of a conversation's text that count as one more read (a heavy GET: reading,
#: showing and sending them cost about what a small GET does per 2,000 characters)
READ_CHARS = 2_000


@router.get("/conversations/{conversation_id}", responses=answers(schemas.Conversation))
def get_conversation(conversation_id: int, request: Request, who: Who) -> Response:
    """A heavy read (a thread: FastAPI's pool): it counts as one more read per
    :data:`READ_CHARS` characters of its text, and its markdown is rendered within the
    annotator's render budget (what is over it shows as plain text)."""
    st = app_context(request)
    out = conversations.get_conversation(st.storage, who, conversation_id).to_dict()
    out["strength_points"] = st.rules.strength_points
    turns = out.get("turns") or ()
    texts = [turn_texts(turn) for turn in turns]
    chars = sum(len(t) for ts in texts for t in ts)
    if chars >= READ_CHARS:
        st.limits.check_read(who.id, chars // READ_CHARS)
    for turn, ts in zip(turns, texts, strict=True):
        with_html(turn, render_all(ts, st.limits, who.id))
        time.sleep(0)  # a thread: the event loop runs between turns (it waits for the GIL)
    return _answer(out)


#: a turn's event stream (documentation)
_EVENTS = (
    "`delta` {slot, text} (the words written since the last), `done` {slot, text, cut, "
    "cut_reason, html}, `error` {slot, message}, then `end` {status}"
)


@router.post(
    "/conversations/{conversation_id}/turns",
    status_code=201,
    responses={
        **answers(schemas.NewTurn, 201),
        201: {
            "model": schemas.NewTurn,
            "description": "the turn as created; with `wait` (the default), its responses "
            "once both are generated; with `stream`, server-sent events as they are "
            "written: `turn` {id, index, status}, then " + _EVENTS,
            "content": {"text/event-stream": {}},
        },
    },
)
async def create_turn(
    conversation_id: int,
    body: NewTurn,
    request: Request,
    who: Who,
) -> Response:
    st = app_context(request)
    rules: Rules = st.rules
    check_size("the message", body.text, rules.max_message_chars)
    if body.stream and not body.wait:
        raise Invalid(
            '"stream": true answers as the responses are written; "wait": false cannot go with it'
        )

    def pick_backends(mode: str, backend: str | None) -> tuple[str, str]:
        return rules.pair(mode, backend, st.rng)

    gen = st.generator
    # waiting: the turn is created leased to this worker, which generates it here
    lease = (gen.owner, gen.lease_seconds) if body.wait else None
    turn = await st.storage.call(
        conversations.create_turn, who, conversation_id, body.text, pick_backends, lease=lease
    )
    if not body.wait or turn.prompt is None:
        pending = {"id": turn.id, "index": turn.index, "candidates": [], "status": turn.status}
        return _answer(pending, 201)
    run = gen.adopt(turn.id, turn.prompt, list(turn.pending))
    if body.stream:
        # the page's way: no second request, no second transaction to lease the turn
        head = Event("turn", {"id": turn.id, "index": turn.index, "status": turn.status})
        generating = TurnState(turn.id, turn.index, turn.status, gen.owner, None, ())
        return event_stream(st, who, turn.id, generating, run, head, 201)
    status = await run.wait()
    done = {e.data["slot"]: e.data for e in run.events if e.name == "done"}
    if status == TurnStatus.READY and len(done) == len(turn.pending):
        # as stored (the run's transaction committed them): no second read
        out: dict[str, Any] = {
            "id": turn.id,
            "index": turn.index,
            "status": TurnStatus.READY,
            "candidates": [_shown(done[slot]) for slot in sorted(done)],
        }
        return _answer(out, 201)
    state = await st.storage.call(leases.turn_state, turn.id)
    out = {
        "id": turn.id,
        "index": turn.index,
        "status": state.status,
        "candidates": [
            {"slot": c.slot, "text": c.text, "cut": c.cut, "cut_reason": c.cut_reason}
            for c in state.candidates
            if c.status == CandidateStatus.READY
        ],
    }
    errors = [
        {"slot": c.slot, "message": failure_message(c.slot, c.error)}
        for c in state.candidates
        if c.status == CandidateStatus.FAILED
    ]
    if errors:
        out["errors"] = errors
    return _answer(out, 201)


def _shown(done: dict[str, Any]) -> dict[str, Any]:
    """A response as a waiting message's answer shows it, from its ``done`` event."""
    return {k: done[k] for k in ("slot", "text", "cut", "cut_reason")}


@router.get(
    "/turns/{turn_id}/stream",
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "server-sent events: " + _EVENTS + "; starts a pending turn, "
            "follows one being written, replays a finished one",
        }
    },
)
async def stream_turn(turn_id: int, request: Request, who: Who) -> StreamingResponse:
    st = app_context(request)
    # one transaction: 404 unless the turn is theirs, its state, and its run when it starts here
    state, run = await st.generator.open(turn_id, who)
    return event_stream(st, who, turn_id, state, run)


@router.post("/turns/{turn_id}/retry", response_model=None, responses=answers(schemas.Status))
def retry_turn(turn_id: int, request: Request, who: Who) -> dict[str, str]:
    """Failed responses go back to pending; one whose backend failed it
    ``retry_switch_after`` times is drawn another backend (docs/collect.md)."""
    st = app_context(request)
    rules: Rules = st.rules
    status = conversations.retry_turn(
        st.storage,
        who,
        turn_id,
        switch_after=rules.retry_switch_after,
        replace=lambda failed, other: rules.replacement(failed, other, st.rng),
        swap_sides=lambda: st.rng.random() < 0.5,  # seeded with the other draws (``seed``)
    )
    return {"status": status}


@router.post("/turns/{turn_id}/withdraw", response_model=None, responses=answers(schemas.Withdrawn))
def withdraw_turn(turn_id: int, request: Request, who: Who) -> dict[str, str]:
    """Withdraw a message whose every response failed: its turn is deleted (never compared or
    exported) and its text returned, to edit and send again (409 otherwise)."""
    text = conversations.withdraw_turn(app_context(request).storage, who, turn_id)
    return {"text": text}


@router.post("/turns/{turn_id}/stop", response_model=None, responses=answers(schemas.Stopped))
def stop_turn(turn_id: int, request: Request, who: Who) -> dict[str, bool]:
    """Stop writing a turn's responses: each unfinished one keeps its text so far (cut,
    rateable; one with no text yet fails, so the turn can be retried at once). ``here``: the
    run was this worker's (its events end the turn's stream); else the Stop was asked for
    through the database (another worker's or host's run, which reads it within a second
    and stops as here). ``stopped`` is false when the turn is not being written."""
    st = app_context(request)
    conversations.turn_owner(st.storage, who, turn_id)
    if st.generator.stop(turn_id):
        return {"stopped": True, "here": True}
    stopped = leases.stop_elsewhere(st.storage, turn_id, st.generator.owner)
    return {"stopped": stopped, "here": False}


@router.post("/turns/{turn_id}/choice", responses=answers(schemas.Chosen))
async def choose(turn_id: int, body: Choice, request: Request, who: Who) -> Response:
    st = app_context(request)
    rules: Rules = st.rules
    check_size("the edit", body.edit, rules.max_edit_chars)
    check_size("request_id", body.request_id, REQUEST_ID_CHARS)
    turn = await st.storage.call(
        choices.record_choice,
        who,
        turn_id,
        pick=body.pick,
        strength=body.strength,
        strength_points=rules.strength_points,
        edit=body.edit,
        request_id=body.request_id,
    )
    out = turn.to_dict()
    # the responses' HTML as their stream rendered it (else off the loop, as the stream's)
    return _answer({"turn": with_html(out, await rendered(turn_texts(out), st, who.id))})


@router.post(
    "/conversations/{conversation_id}/finish", responses=answers(schemas.ConversationSummary)
)
async def finish(
    conversation_id: int,
    request: Request,
    who: Who,
    body: Finish | None = None,
) -> Response:
    st = app_context(request)
    body = body or Finish()
    check_size("the comment", body.comment, st.rules.max_comment_chars)
    finished = await st.storage.call(
        conversations.finish_conversation, who, conversation_id, body.comment, body.rating
    )
    return _answer(finished.to_dict())
