"""The rules every way in applies (services/rules.py): built once from the settings, they
draw a red-team conversation's backend, a message's pair and a failing backend's
replacement, and refuse what is too long, the way the JSON API does."""

from __future__ import annotations

import random

import pytest

from hhrlhf.collect.config import BackendConfig, Settings
from hhrlhf.collect.services.pairing import choose_backends
from hhrlhf.collect.services.rules import Rules, check_size
from hhrlhf.errors import Invalid, TooLarge


def _settings(**kw) -> Settings:
    backends = (
        BackendConfig("p1", "demo", weight=1.0),
        BackendConfig("p2", "demo", weight=3.0),
        BackendConfig("best", "rerank", base="inner", weight=2.0),
        BackendConfig("inner", "demo"),
    )
    return Settings(db_url="sqlite:///unused.db", backends=backends, **kw)


def test_the_rules_are_the_settings_drawn_backends_and_limits():
    rules = Rules.from_settings(_settings(max_message_chars=7, retry_switch_after=3))
    # a backend only a rerank one samples is never drawn itself
    assert rules.backends == ("p1", "p2", "best") and rules.weights == (1.0, 3.0, 2.0)
    assert rules.rerank == frozenset({"best"})
    assert (rules.max_message_chars, rules.retry_switch_after) == (7, 3)


def test_a_red_team_conversation_keeps_its_backend_and_a_helpful_one_draws_a_pair():
    rules = Rules.from_settings(_settings())
    assert rules.pair("red-team", "p2", random.Random(1)) == ("p2", "p2")
    # the same draws, from the same seed, as the pairing rule itself makes
    mine, theirs = random.Random(9), random.Random(9)
    for _ in range(50):
        expected = choose_backends(
            ["p1", "p2", "best"], "random", theirs, weights=[1.0, 3.0, 2.0], rerank={"best"}
        )
        assert rules.pair("helpful", None, mine) == expected


def test_a_red_team_backend_is_drawn_by_weight():
    rules = Rules.from_settings(_settings())
    rng, again = random.Random(4), random.Random(4)
    drawn = [rules.red_team_backend(rng) for _ in range(200)]
    assert drawn == [again.choices(["p1", "p2", "best"], [1.0, 3.0, 2.0])[0] for _ in drawn]


def test_a_replacement_is_another_plain_backend_or_none():
    rules = Rules.from_settings(_settings())
    rng = random.Random(2)
    assert {rules.replacement("p1", "p2", rng) for _ in range(50)} == {"p2"}
    alone = Rules.from_settings(
        Settings(db_url="sqlite:///unused.db", backends=(BackendConfig("only", "demo"),))
    )
    assert alone.replacement("only", "only", rng) is None


def test_sizes_are_checked_as_the_api_refuses_them():
    check_size("the message", None, 3)
    check_size("the message", "abc", 3)
    with pytest.raises(TooLarge, match=r"the message is too long \(4 characters; the limit is 3\)"):
        check_size("the message", "abcd", 3)
    with pytest.raises(Invalid, match="the edit holds a NUL character"):
        check_size("the edit", "a\x00", 3)
