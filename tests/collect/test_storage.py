"""Storage: migrations, SQLite settings, tokens, leases and the one-choice-per-turn guarantee."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from hhrlhf.collect.db import Storage
from hhrlhf.collect.db.models import Comparison
from hhrlhf.collect.domain import now as storage_now
from hhrlhf.collect.services import annotators, choices, conversations, leases, transcripts
from hhrlhf.collect.services.annotators import hash_token
from hhrlhf.collect.web.errors import status_of
from hhrlhf.errors import CollectError, HHError, NotFound

TABLES = {"annotators", "sessions", "conversations", "turns", "candidates", "comparisons"}


def test_upgrade_from_empty_creates_every_table(empty_db_url):
    db_url = empty_db_url
    st = Storage(db_url)
    assert st.revision() is None
    st.upgrade()
    assert st.revision() == st.head()
    assert TABLES <= set(inspect(st.engine).get_table_names())
    st.upgrade()  # idempotent
    assert st.revision() == st.head()


def test_downgrade_upgrade_round_trip(empty_db_url):
    db_url = empty_db_url
    st = Storage(db_url)
    st.upgrade()
    annotators.add_annotator(st, "alice")
    st.downgrade("base")
    assert st.revision() is None
    assert not (TABLES & set(inspect(st.engine).get_table_names()))
    st.upgrade()
    assert st.revision() == st.head()
    assert annotators.list_annotators(st) == []
    annotators.add_annotator(st, "alice")
    assert [a.name for a in annotators.list_annotators(st)] == ["alice"]


def test_an_unmigrated_database_is_refused_with_a_hint(empty_db_url):
    db_url = empty_db_url
    with pytest.raises(HHError, match="hh serve"):
        Storage(db_url).check_current()


def test_sqlite_settings(sqlite_only, storage):
    with storage.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 1000


def test_durable_writes_sync_fully_and_bookkeeping_normally(sqlite_only, storage):
    with storage.write() as s:
        assert s.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL
    with storage.write(durable=False) as s:
        assert s.execute(text("PRAGMA synchronous")).scalar() == 1  # NORMAL
    with storage.write() as s:  # the next durable write is FULL again
        assert s.execute(text("PRAGMA synchronous")).scalar() == 2


def test_postgres_commits_bookkeeping_without_waiting_for_its_flush(storage):
    """PostgreSQL's analogue of SQLite's NORMAL sync: a bookkeeping write turns
    synchronous_commit off for its own transaction only; durable writes keep the server's."""
    if storage.engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL-specific")
    show = text("SHOW synchronous_commit")
    with storage.write() as s:
        assert s.execute(show).scalar() == "on"
    with storage.write(durable=False) as s:
        assert s.execute(show).scalar() == "off"
        s.execute(text("SELECT 1"))
    with storage.write() as s:  # the same pooled connection: SET LOCAL ended with its transaction
        assert s.execute(show).scalar() == "on"
    with storage.read() as s:
        assert s.execute(show).scalar() == "on"


def _prepared_after(url: str, runs: int) -> int:
    """Server-side prepared statements of a connection after it ran one query ``runs`` times."""
    st = Storage(url)
    try:
        with st.read() as s:
            for _ in range(runs):
                s.execute(text("SELECT count(*) FROM annotators")).scalar()
            return s.execute(text("SELECT count(*) FROM pg_prepared_statements")).scalar_one()
    finally:
        st.dispose()


def test_postgres_prepares_a_repeated_statement_unless_the_url_says_none(
    postgres_server, _migrated_postgres
):
    """psycopg's prepared statements are on (PostgreSQL then parses and plans a statement once
    per connection); ``?prepare_threshold=none`` turns them off for a pooler in transaction
    mode, and the parameter is not handed on to libpq (which would refuse it)."""
    url = postgres_server.new_database(template=_migrated_postgres)
    assert _prepared_after(url, 4) == 0  # psycopg's threshold: prepared from the fifth run
    assert _prepared_after(url, 6) == 1
    assert _prepared_after(url + "&prepare_threshold=none", 20) == 0
    # every statement at once: the counted one and the count of pg_prepared_statements
    assert _prepared_after(url + "&prepare_threshold=0", 1) == 2
    for bad, problem in (
        ("-1", "is not a number of runs"),
        ("soon", "is not a number of runs"),
        ("1&prepare_threshold=2", "more than once"),
    ):
        with pytest.raises(HHError, match=problem):
            Storage(f"{url}&prepare_threshold={bad}")


def test_the_sync_level_is_set_only_when_it_changes(sqlite_only, storage):
    """Two durable writes in a row send no PRAGMA for the second (one statement fewer per
    transaction); a switch to bookkeeping and back sends it each time."""
    from hhrlhf.collect.db.engine import count_statements

    def pragmas(durable: bool) -> int:
        with count_statements() as n:
            with storage.write(durable=durable) as s:
                s.execute(text("SELECT 1"))
        return n[0] - 2  # less the BEGIN IMMEDIATE and the SELECT

    pragmas(True)
    assert pragmas(True) == 0
    assert pragmas(False) == 1
    assert pragmas(False) == 0
    assert pragmas(True) == 1


def test_bad_urls_are_clear(tmp_path):
    with pytest.raises(HHError, match="does not exist"):
        Storage(f"sqlite:///{tmp_path / 'no' / 'such' / 'x.db'}")
    with pytest.raises(HHError, match="only sqlite"):
        Storage("mysql://x/y")
    with pytest.raises(HHError, match="not a database URL"):
        Storage("::nonsense::")


def test_tokens_are_stored_only_as_hashes(storage):
    who, token = annotators.add_annotator(storage, "alice", attributes={"is_upworker": True})
    assert len(token) >= 43  # 256 bits
    with storage.engine.connect() as c:
        rows = c.execute(text("SELECT * FROM annotators")).all()
    assert token not in repr(rows)
    assert hash_token(token) in repr(rows)
    assert annotators.annotator_by_token(storage, token) == who
    assert annotators.annotator_by_token(storage, token + "x") is None
    assert annotators.annotator_by_token(storage, "") is None
    assert who.attributes["is_upworker"] is True
    other, _ = annotators.add_annotator(storage, "bob")
    assert (who.member_id, other.member_id) == (1, 2)
    with pytest.raises(HHError, match="already exists"):
        annotators.add_annotator(storage, "alice")
    with pytest.raises(HHError, match="role"):
        annotators.add_annotator(storage, "carol", role="root")


def test_sessions_expire_and_disable_ends_them(storage):
    who, _ = annotators.add_annotator(storage, "alice")
    cookie, csrf = annotators.create_session(storage, who.id, hours=1)
    assert annotators.session_annotator(storage, cookie) == (who, csrf)
    expired, _ = annotators.create_session(storage, who.id, hours=-1)
    assert annotators.session_annotator(storage, expired) is None
    annotators.set_disabled(storage, "alice")
    assert annotators.session_annotator(storage, cookie) is None


def _ready_turn(storage, who):
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    turn = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2"))
    got = leases.acquire_lease(storage, turn.id, "w1", 60)
    assert got is not None
    prompt, pending = got
    assert prompt.prefix == "\n\nHuman: hello\n\nAssistant:"
    assert [(p.slot, p.backend) for p in pending] == [("a", "m1"), ("b", "m2")]
    answers = {s: {"text": f"answer {s}", "raw_text": f"answer {s}"} for s in "ab"}
    assert leases.finish_generation(storage, turn.id, "w1", answers) == "ready"
    return turn.id


#: a generated response's fields
X = {"text": "x", "raw_text": "x"}


def test_only_one_generator_holds_a_turn(storage):
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m1")).id
    assert leases.acquire_lease(storage, tid, "w1", 60) is not None
    assert leases.acquire_lease(storage, tid, "w2", 60) is None
    # a stale writer cannot store into a turn it no longer holds
    assert leases.finish_generation(storage, tid, "w2", {"a": X}) is None
    # an expired lease (a dead worker) is taken over
    with storage.engine.begin() as c:
        c.execute(
            text("UPDATE turns SET lease_until = :t WHERE id = :id"),
            {"t": storage_now() - timedelta(seconds=5), "id": tid},
        )
    assert leases.acquire_lease(storage, tid, "w2", 60) is not None
    assert leases.finish_generation(storage, tid, "w1", {"a": X}) is None
    assert leases.turn_state(storage, tid).candidates[0].status == "pending"


def _lease_ran_out(storage, tid):
    with storage.engine.begin() as c:
        c.execute(
            text("UPDATE turns SET lease_until = :t WHERE id = :id"),
            {"t": storage_now() - timedelta(seconds=5), "id": tid},
        )


def test_the_streams_transaction_leases_a_free_turn_to_its_annotator_only(storage):
    """``open_turn``: the state as read, and the lease with the prompt when the turn is free
    (pending, its lease run out, or its holder dead); a turn held by a live worker, or
    finished, is read and not leased; someone else's turn is not found and left pending."""
    alice, _ = annotators.add_annotator(storage, "alice")
    bob, _ = annotators.add_annotator(storage, "bob")
    boss, _ = annotators.add_annotator(storage, "boss", role="admin")
    tid = _ready_turn(storage, alice)
    # a finished turn: read (what the stream replays), not leased
    state, got = leases.open_turn(storage, tid, alice, "w2", 60)
    assert (state.status, got) == ("ready", None)
    assert [c.text for c in state.candidates] == ["answer a", "answer b"]
    choices.record_choice(storage, alice, tid, pick="b", strength=2, strength_points=4)
    conv = conversations.turn_owner(storage, alice, tid).conversation_id
    second = conversations.create_turn(storage, alice, conv, "and then?", ("m1", "m2")).id
    with pytest.raises(NotFound, match=f"turn {second} not found"):
        leases.open_turn(storage, second, bob, "w-bob", 60)
    assert leases.turn_state(storage, second).status == "pending"  # bob leased nothing
    state, got = leases.open_turn(storage, second, alice, "w1", 60)
    assert state.status == "pending" and got is not None
    prompt, pending = got
    assert prompt.history == (("hello", "answer b"),) and prompt.human == "and then?"
    assert prompt.prefix.endswith("\n\nHuman: and then?\n\nAssistant:")
    assert [(p.slot, p.backend) for p in pending] == [("a", "m1"), ("b", "m2")]
    after = leases.turn_state(storage, second)
    assert (after.status, after.lease_owner) == ("generating", "w1")
    # held by a live worker: read, not taken (an admin's listener too)
    for who in (alice, boss):
        state, got = leases.open_turn(storage, second, who, "w2", 60, dead=lambda o: False)
        assert (state.status, state.lease_owner, got) == ("generating", "w1", None)
    # its holder dead: taken at once; its lease run out: taken by anyone's listener
    state, got = leases.open_turn(storage, second, alice, "w2", 60, dead=lambda o: o == "w1")
    assert state.lease_owner == "w1" and got is not None
    assert leases.finish_generation(storage, second, "w1", {"a": X}) is None
    _lease_ran_out(storage, second)
    state, got = leases.open_turn(storage, second, boss, "w3", 60)
    assert state.lease_owner == "w2" and got is not None
    assert leases.turn_state(storage, second).lease_owner == "w3"


def test_listeners_opening_one_turn_at_once_start_one_run(storage):
    """Twenty streams of one pending turn opened at the same moment (pages, workers): one
    takes the lease, every other reads it held."""
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
    barrier, got = threading.Barrier(20), []

    def one(i):
        barrier.wait()
        got.append(leases.open_turn(storage, tid, who, f"w{i}", 60))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    leased = [state for state, run in got if run is not None]
    assert len(got) == 20 and len(leased) == 1
    holder = leases.turn_state(storage, tid).lease_owner
    assert all(state.lease_owner in (None, holder) for state, _ in got)


def test_the_streams_transaction_after_waiting_for_a_lock_reads_the_turn_as_it_is_now(storage):
    """A listener opening a turn while another transaction holds its row (another worker
    storing its responses) waits, then reads the turn and its candidates as that one left
    them: a ready turn with its texts, not the new turn row with the old candidates."""
    if storage.url.startswith("sqlite"):
        pytest.skip("SQLite has one writer: nothing runs between the wait and the read")
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
    assert leases.acquire_lease(storage, tid, "w1", 60) is not None
    got = []
    with storage.engine.begin() as c:  # the other worker's transaction, holding the row
        c.execute(text("SELECT id FROM turns WHERE id = :id FOR UPDATE"), {"id": tid})
        opener = threading.Thread(
            target=lambda: got.append(leases.open_turn(storage, tid, who, "w2", 60))
        )
        opener.start()
        opener.join(0.5)
        assert opener.is_alive()  # waiting for the row
        c.execute(
            text("UPDATE candidates SET status = 'ready', text = 'fine' WHERE turn_id = :id"),
            {"id": tid},
        )
        c.execute(
            text("UPDATE turns SET status = 'ready', lease_owner = NULL WHERE id = :id"),
            {"id": tid},
        )
    opener.join(10)
    [(state, leased)] = got
    assert leased is None and state.status == "ready"
    assert [(x.status, x.text) for x in state.candidates] == [("ready", "fine")] * 2


def test_the_streams_transaction_after_a_retry_leases_the_failed_response_only(storage):
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
    _, got = leases.open_turn(storage, tid, who, "w1", 60)
    assert got is not None and got[0].history == ()
    results = {
        "a": dict(text="fine a", raw_text="fine a"),
        "b": dict(text=None, raw_text=None, error="the model failed"),
    }
    assert leases.finish_generation(storage, tid, "w1", results) == "failed"
    state, got = leases.open_turn(storage, tid, who, "w2", 60)
    assert (state.status, got) == ("failed", None)  # failed: replayed until retried
    assert conversations.retry_turn(storage, who, tid) == "pending"
    state, got = leases.open_turn(storage, tid, who, "w2", 60)
    assert got is not None and [p.slot for p in got[1]] == ["b"]
    # the ready one is in the state read, for the listener to show at once
    assert [(c.slot, c.status) for c in state.candidates] == [
        ("a", "ready"),
        ("b", "pending"),
    ]


def test_the_database_allows_one_pick_per_turn(storage):
    who, _ = annotators.add_annotator(storage, "alice")
    tid = _ready_turn(storage, who)
    choices.record_choice(storage, who, tid, pick="a", strength=2, strength_points=4)
    with storage.session() as s, pytest.raises(IntegrityError):
        with s.begin():
            s.add(
                Comparison(
                    turn_id=tid,
                    annotator_id=who.id,
                    kind="pick",
                    chosen_text="x",
                    rejected_text="y",
                    pick="b",
                    strength=1,
                    decided_at=storage_now(),
                )
            )


def test_concurrent_choices_store_exactly_one(storage):
    who, _ = annotators.add_annotator(storage, "alice")
    tid = _ready_turn(storage, who)
    results, barrier = [], threading.Barrier(20)

    def one(i):
        barrier.wait()
        try:
            turn = choices.record_choice(
                storage, who, tid, pick="ab"[i % 2], strength=1 + i % 4, strength_points=4
            )
            results.append(("ok", turn.pick, turn.strength))
        except CollectError as exc:
            results.append((status_of(exc), None, None))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert transcripts.counts(storage)["comparisons"] == 1
    oks = [r for r in results if r[0] == "ok"]
    assert len(results) == 20 and all(r[0] in ("ok", 409) for r in results)
    stored = conversations.get_conversation(storage, who, 1).turns[0]
    # every 2xx answer agrees with what is stored
    assert {(p, s) for _, p, s in oks} == {(stored.pick, stored.strength)}


def test_authorisation_in_storage(storage):
    alice, _ = annotators.add_annotator(storage, "alice")
    bob, _ = annotators.add_annotator(storage, "bob")
    cid = conversations.create_conversation(storage, alice, "helpful", "task").id
    with pytest.raises(CollectError) as info:
        conversations.get_conversation(storage, bob, cid)
    assert isinstance(info.value, NotFound)
    assert conversations.list_conversations(storage, bob) == []


def test_a_turn_created_with_a_lease_is_generating_and_held(storage):
    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    first = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
    assert leases.acquire_lease(storage, first, "w1", 60) is not None
    answers = {s: dict(text=f"answer {s}", raw_text=f"answer {s}") for s in "ab"}
    assert leases.finish_generation(storage, first, "w1", answers) == "ready"
    assert choices.record_choice(storage, who, first, pick="a", strength=2, strength_points=4)
    seen = []

    def pick(mode, backend):
        seen.append((mode, backend))
        return ("m1", "m2")

    turn = conversations.create_turn(storage, who, cid, "and then?", pick, lease=("w1", 60))
    assert seen == [("helpful", None)]
    assert turn.status == "generating"
    # the prompt and candidates acquire_lease would have answered, from the same transaction
    assert turn.prompt.history == (("hello", "answer a"),)
    assert turn.prompt.human == "and then?"
    assert turn.prompt.prefix.endswith("\n\nHuman: and then?\n\nAssistant:")
    assert [(p.slot, p.backend) for p in turn.pending] == [("a", "m1"), ("b", "m2")]
    # held: no other worker takes it, and the holder can store into it
    assert leases.acquire_lease(storage, turn.id, "w2", 60) is None
    assert leases.turn_state(storage, turn.id).status == "generating"
    results = {s: dict(text=f"more {s}", raw_text=f"more {s}") for s in "ab"}
    assert leases.finish_generation(storage, turn.id, "w1", results) == "ready"


def test_finishing_a_retry_of_one_response_counts_the_others_stored_status(storage):
    """A turn generated whole is finished without reading its candidates back (both statuses
    are the results'); a retry of one failed response reads the other's stored status."""
    from hhrlhf.collect.db.engine import count_statements

    who, _ = annotators.add_annotator(storage, "alice")
    cid = conversations.create_conversation(storage, who, "helpful", "task").id
    tid = conversations.create_turn(storage, who, cid, "hello", ("m1", "m2")).id
    assert leases.acquire_lease(storage, tid, "w1", 60) is not None
    both = {
        "a": dict(text="fine a", raw_text="fine a"),
        "b": dict(text=None, raw_text=None, error="the model failed"),
    }
    with count_statements() as whole:
        assert leases.finish_generation(storage, tid, "w1", both) == "failed"
    for owner, b, status in (
        ("w2", dict(text=None, raw_text=None, error="failed again"), "failed"),
        ("w3", {}, "ready"),
    ):
        # the retry regenerates b only: it is ready only with a's stored "ready"
        assert conversations.retry_turn(storage, who, tid) == "pending"
        got = leases.acquire_lease(storage, tid, owner, 60)
        assert got is not None and [p.slot for p in got[1]] == ["b"]
        with count_statements() as retry:
            answer = b or dict(text="fine b", raw_text="fine b")
            assert leases.finish_generation(storage, tid, owner, {"b": answer}) == status
        assert retry[0] == whole[0] + 1  # the one read of the stored statuses
    state = leases.turn_state(storage, tid)
    assert [(c.slot, c.status) for c in state.candidates] == [
        ("a", "ready"),
        ("b", "ready"),
    ]


def test_bookkeeping_writes_on_the_loop_leave_the_thread_as_they_found_it(storage):
    """On PostgreSQL the units of work of ``Storage.call`` run as greenlets in the loop's
    thread, interleaved at each database wait: a bookkeeping write must not leave SQLite's
    per-thread NORMAL flag set there (it left it set for every later SQLite write the thread
    made: found by the suite, as SQLite's sync-level tests failing after a PostgreSQL one)."""
    import asyncio

    from hhrlhf.collect.db import engine

    if storage.engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL-specific: SQLite's units of work run in threads")

    async def go():
        await asyncio.gather(*(storage.call(leases.renew_lease, 1, f"w{i}", 30) for i in range(8)))

    asyncio.run(go())
    assert not getattr(engine._local, "bookkeeping", False)
