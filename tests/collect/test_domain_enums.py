"""The collection's named values (modes, statuses, slots, roles) are str enums: a member is
its string everywhere it is stored, sent or shown, so code using members writes what the
bare strings did."""

from __future__ import annotations

import json

import orjson
import pytest

from hhrlhf.collect.domain import (
    MODES,
    ROLES,
    SLOTS,
    CandidateStatus,
    ConversationStatus,
    Mode,
    Role,
    Slot,
    TurnStatus,
    other_slot,
)


@pytest.mark.parametrize(
    "member, value",
    [
        (Mode.RED_TEAM, "red-team"),
        (Mode.HELPFUL, "helpful"),
        (TurnStatus.GENERATING, "generating"),
        (CandidateStatus.FAILED, "failed"),
        (ConversationStatus.FINISHED, "finished"),
        (Slot.B, "b"),
        (Role.ADMIN, "admin"),
    ],
)
def test_a_member_is_its_value_wherever_it_goes(member, value):
    assert member == value and hash(member) == hash(value)
    assert str(member) == f"{member}" == value
    assert f"{member:>12}" == f"{value:>12}"
    assert json.dumps({"x": member}) == json.dumps({"x": value})
    assert orjson.dumps({"x": member}) == orjson.dumps({"x": value})


def test_the_tuples_hold_plain_strings_in_the_members_order():
    assert MODES == ("helpful", "red-team")
    assert SLOTS == ("a", "b")
    assert ROLES == ("annotator", "reviewer", "admin")
    # plain str: orjson takes them as dict keys (it refuses a str subclass there)
    assert all(type(x) is str for x in MODES + SLOTS + ROLES)
    assert orjson.dumps(dict.fromkeys(SLOTS, 1)) == b'{"a":1,"b":1}'


def test_other_slot():
    assert other_slot("a") == Slot.B and other_slot(Slot.B) == "a"
