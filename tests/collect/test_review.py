"""Review tasks, per-annotator statistics, agreement and leaderboard games in the database."""

from __future__ import annotations

import random
from dataclasses import fields
from datetime import datetime, timezone

import pytest
from sqlalchemy import select

from hhrlhf.collect.services import annotators, choices, conversations, leases
from hhrlhf.collect.services.annotators import set_annotator
from hhrlhf.collect.services.review import (
    ReviewTask,
    agreed_turns,
    next_review,
    review_units,
    selected_for_review,
    submit_review,
)
from hhrlhf.collect.services.stats import annotator_stats, collection_stats, leaderboard_games
from hhrlhf.collect.web.errors import status_of
from hhrlhf.errors import CollectError, Conflict, Invalid, NotFound

PTS = 4


def make_turn(storage, who, cid, human, a, b, backends=("m1", "m2")):
    tid = conversations.create_turn(storage, who, cid, human, backends).id
    assert leases.acquire_lease(storage, tid, "w", 60)
    answers = {"a": {"text": a, "raw_text": a}, "b": {"text": b, "raw_text": b}}
    assert leases.finish_generation(storage, tid, "w", answers) == "ready"
    return tid


def conversation(storage, who, picks, *, mode="helpful", backends=("m1", "m2"), finish=True):
    """A conversation with one turn per (pick, strength); returns its id."""
    cid = conversations.create_conversation(storage, who, mode, "Garden questions").id
    for i, (pick, strength) in enumerate(picks):
        tid = make_turn(
            storage, who, cid, f"Question {i}?", f"Answer A{i}.", f"Answer B{i}.", backends
        )
        choices.record_choice(storage, who, tid, pick=pick, strength=strength, strength_points=PTS)
    if finish:
        conversations.finish_conversation(
            storage, who, cid, None, 2 if mode == "red-team" else None
        )
    return cid


@pytest.fixture
def people(storage):
    alice, _ = annotators.add_annotator(storage, "alice")
    bob, _ = annotators.add_annotator(storage, "bob")
    carol, _ = annotators.add_annotator(storage, "carol")
    return alice, bob, carol


def test_selection_is_stable_and_near_the_fraction():
    chosen = [selected_for_review(f"uid-{i}", 0, 0.25) for i in range(4000)]
    assert 0.22 < sum(chosen) / len(chosen) < 0.28
    assert chosen == [selected_for_review(f"uid-{i}", 0, 0.25) for i in range(4000)]
    assert not selected_for_review("uid-1", 0, 0)
    assert all(selected_for_review(f"uid-{i}", 3, 1.0) for i in range(50))


def test_review_is_blind_reordered_and_mapped_back(storage, people):
    alice, bob, _ = people
    conversation(storage, alice, [("a", 3)])
    # the author never reviews her own comparisons
    assert next_review(storage, alice, 1.0) is None
    # swapped: bob sees the original B on the left
    rng = random.Random()
    rng.random = lambda: 0.1  # < 0.5: swapped
    task = next_review(storage, bob, 1.0, rng=rng)
    assert [c.text for c in task.candidates] == ["Answer B0.", "Answer A0."]
    assert task.prefix.endswith("\n\nAssistant:")
    assert "annotator" not in {f.name for f in fields(task)} and "backend" not in str(task)
    # asking again returns the same open task
    assert next_review(storage, bob, 1.0, rng=rng).id == task.id
    # bob picks the left one ("a" as shown) = the original A: agrees with alice
    done = submit_review(storage, bob, task.id, "b", 2, PTS)
    assert done.pick == "b" and done.status == "done"
    units = review_units(storage)
    assert [r.pick for r in units[0].ratings] == ["a", "a"]
    assert [r.annotator for r in units[0].ratings] == ["alice", "bob"]
    # nothing left for bob; idempotent repeat; a different answer is a conflict
    assert next_review(storage, bob, 1.0) is None
    assert submit_review(storage, bob, task.id, "b", 2, PTS).status == "done"
    with pytest.raises(CollectError) as e:
        submit_review(storage, bob, task.id, "a", 2, PTS)
    assert isinstance(e.value, Conflict)


def test_review_ownership_and_validation(storage, people):
    alice, bob, carol = people
    conversation(storage, alice, [("b", 2)])
    task = next_review(storage, bob, 1.0)
    with pytest.raises(CollectError) as e:
        submit_review(storage, carol, task.id, "a", 2, PTS)
    assert isinstance(e.value, NotFound)
    for pick, strength in (("c", 2), ("a", 0), ("a", PTS + 1)):
        with pytest.raises(CollectError) as e:
            submit_review(storage, bob, task.id, pick, strength, PTS)
        assert isinstance(e.value, Invalid)


def test_only_finished_comparisons_and_the_configured_share(storage, people):
    alice, bob, _ = people
    conversation(storage, alice, [("a", 2)], finish=False)
    assert next_review(storage, bob, 1.0) is None
    assert next_review(storage, bob, 0.0) is None
    conversation(storage, alice, [("a", 2)] * 40)
    seen = 0
    while (task := next_review(storage, bob, 0.3)) is not None:
        submit_review(storage, bob, task.id, "a", 1, PTS)
        seen += 1
    assert 4 <= seen <= 22  # about 30% of 40 (stable hash, not exact)


def test_fewest_reviews_first(storage, people):
    alice, bob, carol = people
    first_conv = conversation(storage, alice, [("a", 2)])
    conversation(storage, alice, [("b", 2)])
    first = next_review(storage, bob, 1.0)
    submit_review(storage, bob, first.id, "a", 2, PTS)
    # carol gets the comparison nobody has reviewed yet (of the other conversation)
    second = next_review(storage, carol, 1.0)
    assert _where(storage, second)[0] != _where(storage, first)[0] == first_conv


def _where(storage, task) -> tuple[int, int]:
    """(conversation id, turn index) of a review task (the task itself does not say)."""
    from hhrlhf.collect.db.models import Comparison, Review, Turn

    with storage.read() as s:
        comp = s.get(Comparison, s.get(Review, task.id).comparison_id)
        turn = s.get(Turn, comp.turn_id)
        return turn.conversation_id, turn.index


def test_a_reviewer_never_sees_a_later_turn_before_the_earlier_ones(storage, people):
    """A later turn's prefix holds the responses the earlier turns continued with: the original
    picks. Of each conversation, a reviewer gets its earliest turn they still have to review,
    even when a later turn has fewer reviews."""
    alice, bob, carol = people
    conversation(storage, alice, [("a", 2), ("b", 3), ("a", 4)])
    conversation(storage, alice, [("b", 2), ("a", 2)])
    # carol reviews turn 0 of the first conversation: it has more reviews than the rest now
    task = next_review(storage, carol, 1.0)
    assert _where(storage, task)[1] == 0
    submit_review(storage, carol, task.id, "a", 2, PTS)
    seen: dict[int, list[int]] = {}
    while (task := next_review(storage, bob, 1.0)) is not None:
        conv, index = _where(storage, task)
        seen.setdefault(conv, []).append(index)
        submit_review(storage, bob, task.id, "a", 2, PTS)
    assert sorted(seen.values()) == [[0, 1], [0, 1, 2]]  # every turn, each in order


def test_agreement_and_agreed_turns(storage, people):
    alice, bob, carol = people
    cid = conversation(storage, alice, [("a", 4), ("b", 1)])
    rng = random.Random()
    rng.random = lambda: 0.9  # not swapped: shown order = original order
    for reviewer, picks in ((bob, {"Question 0?": "a", "Question 1?": "a"}), (carol, None)):
        while (task := next_review(storage, reviewer, 1.0, rng=rng)) is not None:
            pick = picks[task.human] if picks else "a"
            submit_review(storage, reviewer, task.id, pick, 3, PTS)
    units = review_units(storage)
    # turn 0: alice a4, bob a3, carol a3 (agree); turn 1: alice b1, bob a3, carol a3
    assert agreed_turns(units) == {(cid, 0)}
    stats = collection_stats(storage, resamples=50)
    overall = stats.agreement
    assert overall.units == 2 and overall.ratings == 6
    # pairs: turn 0 all 3 agree, turn 1 one of 3 (bob, carol) -> 4/6
    assert overall.percent_agreement == pytest.approx(4 / 6, abs=1e-4)
    # Fleiss: P = (1 + 1/3)/2 = 2/3; p_a = 5/6, p_b = 1/6 -> P_e = 26/36; kappa = (24-26)/10
    assert overall.fleiss_kappa == pytest.approx(-0.2, abs=1e-4)
    per = {r.name: r for r in stats.annotators}
    # alice vs others: (a,a),(a,a),(b,a),(b,a) -> 2 of 4 agree
    assert per["alice"].agreement.percent_agreement == pytest.approx(0.5)
    assert per["alice"].agreement.pairs == 4
    assert per["bob"].reviews == 2 and per["alice"].reviews == 0


def test_annotator_stats_counts_strengths_and_position_bias(storage, people):
    alice, bob, _ = people
    conversation(storage, alice, [("a", 3), ("a", 1), ("b", 3)])
    rows = {r.name: r for r in annotator_stats(storage)}
    assert rows["alice"].comparisons == 3 and rows["alice"].conversations == 1
    assert rows["alice"].strengths == {"1": 1, "3": 2}
    assert rows["alice"].share_a == pytest.approx(2 / 3, abs=1e-4)
    assert rows["alice"].median_seconds is not None and rows["alice"].median_seconds >= 0
    assert rows["bob"].comparisons == 0 and rows["bob"].share_a is None


def test_leaderboard_games_helpful_and_red_team(storage, people):
    alice, _, _ = people
    h = conversation(storage, alice, [("a", 2), ("b", 3)], backends=("m1", "m2"))
    r = conversation(storage, alice, [("a", 2)], mode="red-team", backends=("m1", "m2"))
    conversation(storage, alice, [("a", 2)], backends=("m1", "m1"))  # same backend: no game
    games = leaderboard_games(storage)
    # helpful: the pick wins; red-team: the one NOT picked (less harmful) wins
    assert games == [(h, "m1", "m2"), (h, "m2", "m1"), (r, "m2", "m1")]


def test_set_annotator_role_and_attributes(storage, people):
    set_annotator(storage, "bob", role="admin", attributes={"is_upworker": True, "team": "x"})
    assert annotators.annotator_by_name(storage, "bob").role == "admin"
    out = set_annotator(storage, "bob", attributes={"team": None})
    assert out.attributes == {"is_upworker": True}
    with pytest.raises(CollectError):
        set_annotator(storage, "nobody", role="admin")
    with pytest.raises(CollectError):
        set_annotator(storage, "bob", role="owner")


def test_reviews_table_migrates_up_and_down(db_url):
    from sqlalchemy import inspect

    from hhrlhf.collect.db import Storage

    st = Storage(db_url)
    st.upgrade()
    assert "reviews" in inspect(st.engine).get_table_names()
    st.downgrade("0001")
    assert "reviews" not in inspect(st.engine).get_table_names()
    assert "comparisons" in inspect(st.engine).get_table_names()
    st.upgrade()
    assert "reviews" in inspect(st.engine).get_table_names()
    st.dispose()


def test_an_identical_pair_is_never_a_game_a_review_item_or_an_agreement_sample(storage, people):
    from hhrlhf.collect.db.models import Comparison, Review

    alice, bob, carol = people
    cid = conversations.create_conversation(storage, alice, "helpful", "Garden questions").id
    same = make_turn(storage, alice, cid, "Same?", "The same answer.", "The same answer.")
    # no strength asked for an identical pair: stored as the smallest point
    turn = choices.record_choice(storage, alice, same, pick="a", strength=None, strength_points=PTS)
    assert turn.strength == 1 and turn.continued == "The same answer."
    differ = make_turn(storage, alice, cid, "Differ?", "Yes.", "No.")
    with pytest.raises(CollectError, match="strength is required"):
        choices.record_choice(storage, alice, differ, pick="a", strength=None, strength_points=PTS)
    choices.record_choice(storage, alice, differ, pick="a", strength=3, strength_points=PTS)
    conversations.finish_conversation(storage, alice, cid, None, None)

    # a game: only the turn whose responses differ
    assert leaderboard_games(storage) == [(cid, "m1", "m2")]
    # a review item: only that turn, for every reviewer
    tasks = []
    while (task := next_review(storage, bob, 1.0)) is not None:
        tasks.append(task.human)
        submit_review(storage, bob, task.id, "a", 2, PTS)
    assert tasks == ["Differ?"]
    # an agreement sample: not even when a review of it was stored (before this rule)
    with storage.write() as s:
        comp = s.scalar(select(Comparison.id).where(Comparison.turn_id == same))
        s.add(
            Review(
                comparison_id=comp,
                reviewer_id=carol.id,
                status="done",
                pick="b",
                strength=2,
                assigned_at=datetime.now(timezone.utc),
                decided_at=datetime.now(timezone.utc),
            )
        )
    units = review_units(storage)
    assert [u.turn_index for u in units] == [1]
    stats = collection_stats(storage, resamples=0)
    assert stats.agreement.units == 1
    row = next(r for r in stats.annotators if r.name == "alice")
    assert row.comparisons == 1 and row.strengths == {"3": 1}


def test_the_review_scan_runs_outside_the_write_transaction(storage, people, monkeypatch):
    """``reviews/next`` reads every finished comparison; that read must not hold the writer
    (SQLite: one writer at a time, so every other write would wait for the scan)."""
    import contextlib
    import threading

    from sqlalchemy import event

    alice, bob, _ = people
    conversation(storage, alice, [("a", 3), ("b", 2)])
    state = threading.local()
    seen: list[tuple[bool, str]] = []
    real_write = storage.write

    @contextlib.contextmanager
    def watched_write(*args, **kwargs):
        state.writing = True
        try:
            with real_write(*args, **kwargs) as s:
                yield s
        finally:
            state.writing = False

    def record(conn, cursor, statement, params, context, executemany):
        seen.append((getattr(state, "writing", False), statement))

    monkeypatch.setattr(storage, "write", watched_write)
    engines = {id(e): e for e in (storage.engine, storage.read_engine)}.values()
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        task = next_review(storage, bob, 1.0)
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)
    assert task is not None
    scans = [writing for writing, sql in seen if "GROUP BY" in sql.upper()]
    assert scans == [False], seen
    assert any(writing and "INSERT INTO reviews" in sql for writing, sql in seen), seen


def test_concurrent_review_requests_give_each_reviewer_one_open_task(storage, people):
    """Reviewers asking at once (each twice): every answer is a task or a 409 'ask again',
    each reviewer ends with exactly one open task, never their own comparison."""
    import threading

    alice, _, _ = people
    for _ in range(3):
        conversation(storage, alice, [("a", 3), ("b", 2)])
    reviewers = [annotators.add_annotator(storage, f"rev{i}")[0] for i in range(6)]
    barrier = threading.Barrier(2 * len(reviewers))
    results: list[tuple[str, object]] = []
    lock = threading.Lock()

    def ask(who) -> None:
        barrier.wait()
        try:
            out: object = next_review(storage, who, 1.0)
        except CollectError as exc:
            out = status_of(exc)
        with lock:
            results.append((who.name, out))

    threads = [threading.Thread(target=ask, args=(w,)) for w in reviewers for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 2 * len(reviewers)
    for name, out in results:
        assert out == 409 or isinstance(out, ReviewTask), (name, out)
    for who in reviewers:
        tasks = {
            out.id for name, out in results if name == who.name and isinstance(out, ReviewTask)
        }
        assert len(tasks) == 1, (who.name, results)
        again = next_review(storage, who, 1.0)
        assert again.id in tasks  # the one open task, not a second one
    units = review_units(storage)
    assert all(r.annotator != "alice" for u in units for r in u.ratings[1:])
