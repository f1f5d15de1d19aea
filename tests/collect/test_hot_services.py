"""The annotation loop's hot services (a conversation, a message, its generation, a choice)
read and write plain rows: no ORM object is loaded or flushed, and each sends a fixed number
of statements. An ORM object's lazy load, or a second read where one join did, shows here as
a failure (bench/RESULTS-collect.md has what each costs on a busy server)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.orm import Session

from hhrlhf.collect.db.engine import count_statements
from hhrlhf.collect.db.models import Base
from hhrlhf.collect.services import annotators, choices, conversations, leases
from hhrlhf.errors import NotFound

#: statements each hot service sends, by database, in the test's order: PostgreSQL's
#: non-durable writes add a SET LOCAL; SQLite's transactions an explicit BEGIN (reads too: a
#: deferred one), and a PRAGMA where the connection's durability changes (to a lease's after
#: a message, back to a choice's after generation)
#: (PostgreSQL's ``open_turn`` locks the turn's row with a statement of its own first)
EXPECTED = {
    "sqlite": {
        "create_conversation": 2,
        "create_turn": 4,
        "open_turn": 4,
        "turn_state": 2,
        "finish_generation": 3,
        "record_choice": 5,
        "record_choice again": 2,
        "create_turn, a second": 4,
        "open_turn, a second": 5,
        "finish_conversation": 5,
    },
    "postgres": {
        "create_conversation": 1,
        "create_turn": 3,
        "open_turn": 4,
        "turn_state": 1,
        "finish_generation": 3,
        "record_choice": 2,
        "record_choice again": 1,
        "create_turn, a second": 3,
        "open_turn, a second": 5,
        "finish_conversation": 3,
    },
}


@contextlib.contextmanager
def no_orm_objects():
    """Fails the test if an ORM object is loaded or a session flushes inside."""
    seen: list[str] = []

    def loaded(target, _context):
        seen.append(f"loaded {type(target).__name__}")

    def flushed(session, _context, _instances):
        seen.append(f"flushed {sorted(type(x).__name__ for x in session.new | session.dirty)}")

    event.listen(Base, "load", loaded, propagate=True)
    event.listen(Session, "before_flush", flushed)
    try:
        yield
    finally:
        event.remove(Base, "load", loaded)
        event.remove(Session, "before_flush", flushed)
    assert seen == []


def test_the_hot_services_send_plain_statements_and_no_more(storage):
    kind = "sqlite" if storage.url.startswith("sqlite") else "postgres"
    who, _ = annotators.add_annotator(storage, "alice")
    sent: dict[str, int] = {}

    def run(name, fn, *args, **kwargs):
        with no_orm_objects(), count_statements() as n:
            out = fn(storage, *args, **kwargs)
        sent[name] = n[0]
        return out

    cid = run("create_conversation", conversations.create_conversation, who, "helpful", "t").id
    first = run(
        "create_turn", conversations.create_turn, who, cid, "hello", ("m1", "m2"), lease=None
    )
    # the stream route's one transaction: the state, the lease and the prompt (no history
    # before the first turn: no statement for it)
    state, got = run("open_turn", leases.open_turn, first.id, who, "w1", 60)
    assert (state.status, state.index) == ("pending", 0)
    assert got is not None and got[0].mode == "helpful" and got[0].human == "hello"
    assert got[0].history == () and [p.slot for p in got[1]] == ["a", "b"]
    # the stream route's read while a run is live in its process
    state = run("turn_state", leases.turn_state, first.id, who)
    assert (state.status, state.index, state.lease_owner) == ("generating", 0, "w1")
    results = {s: dict(text=f"fine {s}", raw_text=f"fine {s}") for s in "ab"}
    assert run("finish_generation", leases.finish_generation, first.id, "w1", results) == ("ready")
    choice = dict(pick="b", strength=3, strength_points=4, request_id="r1")
    out = run("record_choice", choices.record_choice, who, first.id, **choice)
    again = run("record_choice again", choices.record_choice, who, first.id, **choice)
    # the repeat answers what the first stored, read back
    assert again == out and out.continued == "fine b" and out.pick == "b"
    second = run(
        "create_turn, a second",
        conversations.create_turn,
        who,
        cid,
        "and then?",
        ("m1", "m2"),
        lease=None,
    )
    _, got = run("open_turn, a second", leases.open_turn, second.id, who, "w1", 60)
    assert got is not None and got[0].history == (("hello", "fine b"),)
    done = run("finish_conversation", conversations.finish_conversation, who, cid)
    assert (done.status, done.turns) == ("finished", 2)
    assert sent == EXPECTED[kind]


def test_the_stream_routes_read_is_its_owners_or_an_admins_only(storage):
    """The turn's state for its annotator or an admin; for anyone else NotFound, as for a
    turn that does not exist (nothing says it is there)."""
    alice, _ = annotators.add_annotator(storage, "alice")
    bob, _ = annotators.add_annotator(storage, "bob")
    boss, _ = annotators.add_annotator(storage, "boss", role="admin")
    cid = conversations.create_conversation(storage, alice, "helpful", "t").id
    tid = conversations.create_turn(storage, alice, cid, "hello", ("m1", "m2")).id
    for who in (alice, boss, None):
        state = leases.turn_state(storage, tid, who)
        assert (state.id, state.status) == (tid, "pending")
        assert [c.slot for c in state.candidates] == ["a", "b"]
    for who, turn in ((bob, tid), (alice, tid + 1), (None, tid + 1)):
        with pytest.raises(NotFound, match=f"turn {turn} not found"):
            leases.turn_state(storage, turn, who)


@pytest.mark.parametrize("admin", [False, True])
def test_a_choice_answers_as_the_conversation_reads(storage, admin):
    """The choice's answer (built from the rows it read and wrote) is the turn as a later
    read of the whole conversation gives it: pick, strength, edit, continuation, and the
    admin-only fields of the candidates."""
    who, _ = annotators.add_annotator(storage, "alice")
    boss, _ = annotators.add_annotator(storage, "boss", role="admin")
    cid = conversations.create_conversation(storage, who, "helpful", "t").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
    assert leases.acquire_lease(storage, tid, "w1", 60) is not None
    results = {
        s: dict(text=f"fine {s}", raw_text=f"fine {s}", model=f"model-{s}", latency_ms=5)
        for s in "ab"
    }
    leases.finish_generation(storage, tid, "w1", results)
    reader = boss if admin else who
    out = choices.record_choice(
        storage, who, tid, pick="a", strength=2, strength_points=4, edit="better a"
    )
    if admin:  # the admin's view of the same choice, as a repeat
        out = choices.record_choice(
            storage, boss, tid, pick="a", strength=2, strength_points=4, edit="better a"
        )
    [stored] = conversations.get_conversation(storage, reader, cid).turns
    assert out == stored
    assert (out.edit, out.continued, out.strength) == ("better a", "better a", 2)
    assert ("model" in out.candidates[0].to_dict()) is admin


def test_the_services_bench_runs_and_counts_what_the_test_above_expects():
    """bench/bench_services.py (a short SQLite run) prints a row per hot service with the
    statements it sent: the same counts as this module's (a bench that drifted from the
    services, or broke, fails here)."""
    root = Path(__file__).resolve().parents[2]
    p = subprocess.run(
        [sys.executable, str(root / "bench" / "bench_services.py"), "--sqlite", "--turns", "10"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root / "src")},
    )
    assert p.returncode == 0, p.stderr
    rows = {
        line.split("|")[1].strip(): line.split("|")[4].strip()
        for line in p.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| service")
    }
    # each call's statements, averaged over the run: the first calls' durability PRAGMAs
    # (see EXPECTED) are spread over 10 turns, so only the steady services are compared
    expected = EXPECTED["sqlite"]
    for name in ("create_turn", "finish_generation", "record_choice"):
        assert float(rows[name]) == expected[name], name
    # the stream's transaction: of a conversation's five turns, the first reads no history
    assert (
        float(rows["open_turn"])
        == (expected["open_turn"] + 4 * expected["open_turn, a second"]) / 5
    )
    hot = {"create_conversation", "create_turn", "open_turn", "finish_generation", "record_choice"}
    assert set(rows) >= hot | {"finish_conversation", "**a turn**"}
