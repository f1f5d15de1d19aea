"""Storage: migrations, SQLite settings, tokens, leases and the one-choice-per-turn guarantee."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.exc import IntegrityError

from hhrlhf.collect.db import Storage, hash_token
from hhrlhf.collect.db import now as storage_now
from hhrlhf.collect.db.models import Comparison
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
    st.add_annotator("alice")
    st.downgrade("base")
    assert st.revision() is None
    assert not (TABLES & set(inspect(st.engine).get_table_names()))
    st.upgrade()
    assert st.revision() == st.head()
    assert st.list_annotators() == []
    st.add_annotator("alice")
    assert [a.name for a in st.list_annotators()] == ["alice"]


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
    with storage._write() as s:
        assert s.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL
    with storage._write(durable=False) as s:
        assert s.execute(text("PRAGMA synchronous")).scalar() == 1  # NORMAL
    with storage._write() as s:  # the next durable write is FULL again
        assert s.execute(text("PRAGMA synchronous")).scalar() == 2


def test_bad_urls_are_clear(tmp_path):
    with pytest.raises(HHError, match="does not exist"):
        Storage(f"sqlite:///{tmp_path / 'no' / 'such' / 'x.db'}")
    with pytest.raises(HHError, match="only sqlite"):
        Storage("mysql://x/y")
    with pytest.raises(HHError, match="not a database URL"):
        Storage("::nonsense::")


def test_tokens_are_stored_only_as_hashes(storage):
    who, token = storage.add_annotator("alice", attributes={"is_upworker": True})
    assert len(token) >= 43  # 256 bits
    with storage.engine.connect() as c:
        rows = c.execute(text("SELECT * FROM annotators")).all()
    assert token not in repr(rows)
    assert hash_token(token) in repr(rows)
    assert storage.annotator_by_token(token) == who
    assert storage.annotator_by_token(token + "x") is None
    assert storage.annotator_by_token("") is None
    assert who.attributes["is_upworker"] is True
    other, _ = storage.add_annotator("bob")
    assert (who.member_id, other.member_id) == (1, 2)
    with pytest.raises(HHError, match="already exists"):
        storage.add_annotator("alice")
    with pytest.raises(HHError, match="role"):
        storage.add_annotator("carol", role="root")


def test_sessions_expire_and_disable_ends_them(storage):
    who, _ = storage.add_annotator("alice")
    cookie, csrf = storage.create_session(who.id, hours=1)
    assert storage.session_annotator(cookie) == (who, csrf)
    expired, _ = storage.create_session(who.id, hours=-1)
    assert storage.session_annotator(expired) is None
    storage.set_disabled("alice")
    assert storage.session_annotator(cookie) is None


def _ready_turn(storage, who):
    cid = storage.create_conversation(who, "helpful", "task")["id"]
    turn = storage.create_turn(who, cid, "hello", ("m1", "m2"))
    got = storage.acquire_lease(turn["id"], "w1", 60)
    assert got is not None
    prompt, pending = got
    assert prompt.prefix == "\n\nHuman: hello\n\nAssistant:"
    assert [(p.slot, p.backend) for p in pending] == [("a", "m1"), ("b", "m2")]
    for slot in "ab":
        assert storage.save_candidate(
            turn["id"], slot, owner="w1", text=f"answer {slot}", raw_text=f"answer {slot}"
        )
    assert storage.end_generation(turn["id"], "w1") == "ready"
    return turn["id"]


def test_only_one_generator_holds_a_turn(storage):
    who, _ = storage.add_annotator("alice")
    cid = storage.create_conversation(who, "helpful", "task")["id"]
    tid = storage.create_turn(who, cid, "hello", ("m1", "m1"))["id"]
    assert storage.acquire_lease(tid, "w1", 60) is not None
    assert storage.acquire_lease(tid, "w2", 60) is None
    # a stale writer cannot store into a turn it no longer holds
    assert not storage.save_candidate(tid, "a", owner="w2", text="x", raw_text="x")
    # an expired lease (a dead worker) is taken over
    with storage.engine.begin() as c:
        c.execute(
            text("UPDATE turns SET lease_until = :t WHERE id = :id"),
            {"t": storage_now() - timedelta(seconds=5), "id": tid},
        )
    assert storage.acquire_lease(tid, "w2", 60) is not None
    assert not storage.save_candidate(tid, "a", owner="w1", text="x", raw_text="x")


def test_the_database_allows_one_pick_per_turn(storage):
    who, _ = storage.add_annotator("alice")
    tid = _ready_turn(storage, who)
    storage.record_choice(who, tid, pick="a", strength=2, strength_points=4)
    with storage._session() as s, pytest.raises(IntegrityError):
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
    who, _ = storage.add_annotator("alice")
    tid = _ready_turn(storage, who)
    results, barrier = [], threading.Barrier(20)

    def one(i):
        barrier.wait()
        try:
            turn = storage.record_choice(
                who, tid, pick="ab"[i % 2], strength=1 + i % 4, strength_points=4
            )
            results.append(("ok", turn["pick"], turn["strength"]))
        except CollectError as exc:
            results.append((status_of(exc), None, None))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert storage.counts()["comparisons"] == 1
    oks = [r for r in results if r[0] == "ok"]
    assert len(results) == 20 and all(r[0] in ("ok", 409) for r in results)
    stored = storage.get_conversation(who, 1)["turns"][0]
    # every 2xx answer agrees with what is stored
    assert {(p, s) for _, p, s in oks} == {(stored["pick"], stored["strength"])}


def test_authorisation_in_storage(storage):
    alice, _ = storage.add_annotator("alice")
    bob, _ = storage.add_annotator("bob")
    cid = storage.create_conversation(alice, "helpful", "task")["id"]
    with pytest.raises(CollectError) as info:
        storage.get_conversation(bob, cid)
    assert isinstance(info.value, NotFound)
    assert storage.list_conversations(bob) == []


def test_a_turn_created_with_a_lease_is_generating_and_held(storage):
    who, _ = storage.add_annotator("alice")
    cid = storage.create_conversation(who, "helpful", "task")["id"]
    first = storage.create_turn(who, cid, "hello", ("m1", "m2"))["id"]
    assert storage.acquire_lease(first, "w1", 60) is not None
    answers = {s: dict(text=f"answer {s}", raw_text=f"answer {s}") for s in "ab"}
    assert storage.finish_generation(first, "w1", answers) == "ready"
    assert storage.record_choice(who, first, pick="a", strength=2, strength_points=4)
    seen = []

    def pick(mode, backend):
        seen.append((mode, backend))
        return ("m1", "m2")

    turn = storage.create_turn(who, cid, "and then?", pick, lease=("w1", 60))
    assert seen == [("helpful", None)]
    assert turn["status"] == "generating"
    # the prompt and candidates acquire_lease would have answered, from the same transaction
    assert turn["prompt"].history == (("hello", "answer a"),)
    assert turn["prompt"].human == "and then?"
    assert turn["prompt"].prefix.endswith("\n\nHuman: and then?\n\nAssistant:")
    assert [(p.slot, p.backend) for p in turn["pending"]] == [("a", "m1"), ("b", "m2")]
    # held: no other worker takes it, and the holder can store into it
    assert storage.acquire_lease(turn["id"], "w2", 60) is None
    assert storage.turn_state(turn["id"])["status"] == "generating"
    results = {s: dict(text=f"more {s}", raw_text=f"more {s}") for s in "ab"}
    assert storage.finish_generation(turn["id"], "w1", results) == "ready"
