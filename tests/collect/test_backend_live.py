"""Backends live (services/backend_live.py): pause, resume and re-weight a configured backend,
each change stored and logged with who made it; the draw reads a worker's snapshot of the
states (paused backends never drawn, live weights used, a retry never replaced by a paused
one), on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import select

from hhrlhf.collect.config import BackendConfig, Settings
from hhrlhf.collect.domain import now
from hhrlhf.collect.services import backend_live as live
from hhrlhf.collect.services.rules import ALL_PAUSED, CONVERSATION_PAUSED, Rules
from hhrlhf.errors import Conflict, Invalid, NotFound, Unavailable


def _settings(url: str = "sqlite:///unused.db", **kw) -> Settings:
    backends = (
        BackendConfig("p1", "demo", weight=1.0),
        BackendConfig("p2", "demo", weight=3.0),
        BackendConfig("best", "rerank", base="inner", weight=2.0),
        BackendConfig("inner", "demo"),
    )
    return Settings(db_url=url, backends=backends, **kw)


def _state(storage, settings, name):
    return {s.name: s for s in live.backend_states(storage, settings)}[name]


def test_pause_resume_and_weight_are_stored_and_logged(storage):
    settings = _settings(storage.url)
    assert [
        (s.name, s.paused, s.weight, s.drawn) for s in live.backend_states(storage, settings)
    ] == [
        ("p1", False, 1.0, True),
        ("p2", False, 3.0, True),
        ("best", False, 2.0, True),
        ("inner", False, 1.0, False),
    ]
    done = live.pause(storage, settings, "p1", "alice")
    assert done.changed and done.backend.paused and done.backend.updated_by == "alice"
    assert _state(storage, settings, "p1").paused
    # the same again: nothing changes, nothing is logged
    assert not live.pause(storage, settings, "p1", "bob").changed
    done = live.set_weight(storage, settings, "p2", 0.5, "cli (root@host)")
    assert (done.backend.weight, done.backend.config_weight, done.backend.paused) == (
        0.5,
        3.0,
        False,
    )
    assert not live.set_weight(storage, settings, "p2", 0.5, "alice").changed
    done = live.resume(storage, settings, "p1", "bob")
    assert done.changed and not done.backend.paused and done.backend.weight == 1.0
    assert not live.resume(storage, settings, "p1", "bob").changed
    events = live.backend_events(storage, config_weights={"p2": 3.0})
    assert [(e.backend, e.action, e.value, e.previous, e.by) for e in events] == [
        ("p1", "pause", None, None, "alice"),
        ("p2", "weight", 0.5, 3.0, "cli (root@host)"),
        ("p1", "resume", None, None, "bob"),
    ]
    assert all(e.at and e.at.endswith("Z") for e in events)
    assert events[1].describe().startswith("p2 weight 3 -> 0.5 at 20")
    assert events[1].describe().endswith(" by cli (root@host)")
    # without the config's weights, the first weight's previous is not known
    assert live.backend_events(storage)[1].previous is None
    # a period: only what happened in it
    assert live.backend_events(storage, since=now() + timedelta(seconds=5)) == []
    assert len(live.backend_events(storage, until=now())) == 3


def test_a_second_weight_names_the_first_as_its_previous(storage):
    settings = _settings(storage.url)
    live.set_weight(storage, settings, "p1", 2, "alice")
    live.set_weight(storage, settings, "p1", 4.5, "alice")
    live.pause(storage, settings, "p1", "alice")  # the weight is kept through a pause
    assert _state(storage, settings, "p1").weight == 4.5
    assert [e.previous for e in live.backend_events(storage)] == [None, 2.0, None]


def test_bad_changes_are_refused_and_change_nothing(storage):
    settings = _settings(storage.url)
    with pytest.raises(
        NotFound, match=r"unknown backend 'p9'; the configured backends: p1, p2, best, inner"
    ):
        live.pause(storage, settings, "p9", "alice")
    for bad in (0, -1.0, float("inf"), float("nan")):
        with pytest.raises(Invalid, match="weight must be a finite number above 0"):
            live.set_weight(storage, settings, "p1", bad, "alice")
    with pytest.raises(Invalid, match="weight must be a number"):
        live.set_weight(storage, settings, "p1", True, "alice")
    with pytest.raises(Invalid, match="'inner' is not drawn itself .*rerank backend best"):
        live.set_weight(storage, settings, "inner", 2.0, "alice")
    # the last backend new conversations could draw: p1, p2, then best (through its base)
    live.pause(storage, settings, "p1", "alice")
    live.pause(storage, settings, "p2", "alice")
    with pytest.raises(Conflict, match="'inner' cannot be paused: new conversations would"):
        live.pause(storage, settings, "inner", "alice")
    with pytest.raises(Conflict, match="'best' cannot be paused"):
        live.pause(storage, settings, "best", "alice")
    assert [e.action for e in live.backend_events(storage)] == ["pause", "pause"]
    assert not _state(storage, settings, "best").paused


def test_a_snapshot_draws_what_the_states_say(storage):
    settings = _settings(storage.url)
    snapshot = live.LiveBackends(settings)
    assert snapshot.rules == Rules.from_settings(settings)
    live.pause(storage, settings, "p1", "alice")
    live.set_weight(storage, settings, "best", 0.25, "alice")
    rules = snapshot.refresh(storage)
    assert (rules.backends, rules.weights, rules.paused) == (
        ("p2", "best"),
        (3.0, 0.25),
        frozenset({"p1"}),
    )
    before = snapshot.rules
    snapshot.refresh(storage)  # nothing changed: the same rules
    assert snapshot.rules is before
    live.pause(storage, settings, "inner", "alice")  # best's base: best is not drawn either
    assert snapshot.refresh(storage).backends == ("p2",)


def test_a_paused_backend_is_never_drawn_and_weights_are_respected():
    settings = _settings()
    rules = Rules.from_settings(settings, paused={"p2"}, weights={"p1": 4.0, "best": 1.0})
    rng = random.Random(11)
    firsts = Counter()
    for _ in range(4000):
        pair = rules.pair("helpful", None, rng)
        assert "p2" not in pair
        firsts[rules.red_team_backend(rng)] += 1
    # drawn 4 : 1 (seeded: the same counts every run; 3200 expected for p1)
    assert 3100 < firsts["p1"] < 3300 and firsts["p1"] + firsts["best"] == 4000
    # a retry's replacement never picks a paused backend (nor a rerank one)
    assert {rules.replacement("p1", "p1", rng) for _ in range(100)} == {None}
    both = Rules.from_settings(settings, paused={"best"})
    assert {both.replacement("p1", "p2", rng) for _ in range(100)} == {"p2"}


def test_a_red_team_conversation_on_a_paused_backend_takes_no_new_message():
    settings = _settings()
    rules = Rules.from_settings(settings, paused={"inner"})  # best's base
    assert rules.paused == frozenset({"best"}) and rules.backends == ("p1", "p2")
    with pytest.raises(Conflict, match="finish this conversation and start a new one") as err:
        rules.pair("red-team", "best", random.Random(1))
    assert str(err.value) == CONVERSATION_PAUSED and "best" not in str(err.value)
    assert rules.pair("red-team", "p1", random.Random(1)) == ("p1", "p1")


def test_a_draw_with_every_backend_paused_says_so():
    rules = Rules.from_settings(_settings(), paused={"p1", "p2", "inner"})
    for draw in (
        lambda: rules.pair("helpful", None, random.Random(1)),
        lambda: rules.red_team_backend(random.Random(1)),
    ):
        with pytest.raises(Unavailable, match="every model is paused") as err:
            draw()
        assert str(err.value) == ALL_PAUSED


def _picks_around_now(storage):
    """Three picks between m1 and m2, made an hour ago, now and an hour from now."""
    from sqlalchemy import update
    from test_review import conversation

    from hhrlhf.collect.db.models import Comparison
    from hhrlhf.collect.services import annotators

    alice, _ = annotators.add_annotator(storage, "alice")
    conversation(storage, alice, [("a", 2), ("b", 3), ("a", 1)], backends=("m1", "m2"))
    with storage.write() as s:
        ids = sorted(s.scalars(select(Comparison.id)))
        for cid, hours in zip(ids, (-1, 0, 1), strict=True):
            at = now() + timedelta(hours=hours)
            s.execute(update(Comparison).where(Comparison.id == cid).values(decided_at=at))


def _log(storage, backend, action, value, hours):
    from hhrlhf.collect.db.models import BackendEvent

    with storage.write() as s:
        s.add(
            BackendEvent(
                backend=backend,
                action=action,
                value=value,
                by="alice",
                at=now() + timedelta(hours=hours),
            )
        )


def test_the_leaderboard_lists_the_changes_made_while_its_picks_were(storage):
    from hhrlhf.collect.services.stats import model_leaderboard

    _picks_around_now(storage)
    before = model_leaderboard(storage, resamples=20)
    assert "weight_changes" not in before
    # before the first pick and after the last: the mix was the same for every pick
    _log(storage, "m1", "weight", 3.0, -2)
    _log(storage, "m2", "pause", None, 2)
    assert model_leaderboard(storage, resamples=20) == before
    _log(storage, "m1", "weight", 0.5, -0.5)
    _log(storage, "m2", "pause", None, 0.5)
    board = model_leaderboard(storage, resamples=20, config_weights={"m1": 1.0})
    assert [
        (c["backend"], c["action"], c["value"], c["previous"], c["by"])
        for c in board["weight_changes"]
    ] == [
        ("m1", "weight", 0.5, 3.0, "alice"),
        ("m2", "pause", None, None, "alice"),
    ]
    assert {k: v for k, v in board.items() if k != "weight_changes"} == before
