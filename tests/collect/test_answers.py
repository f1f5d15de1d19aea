"""What the services answer is typed (frozen dataclasses in collect/domain.py) and the JSON
API writes each with ``to_dict``: these pin the keys and their order, so the bytes an API
client reads stay those it read when the services built the dicts themselves."""

from __future__ import annotations

import orjson

from hhrlhf.collect.domain import (
    BackendFacts,
    CandidateAnswer,
    ConversationDetail,
    ConversationSummary,
    TurnAnswer,
)

FACTS = BackendFacts("m1", "model-1", {"temperature": 1.0}, "stop", 12, "server said no")
CANDIDATE = ["slot", "text", "cut", "cut_reason", "status"]
ADMIN = ["backend", "model", "params", "finish_reason", "latency_ms"]


def test_a_failed_response_tells_the_annotator_the_note_and_an_admin_the_servers_words():
    failed = CandidateAnswer("a", None, False, None, "failed", "Response A: no.", None)
    assert list(failed.to_dict()) == [*CANDIDATE, "error"]
    assert failed.to_dict()["error"] == "Response A: no."
    seen = CandidateAnswer("a", None, False, None, "failed", "Response A: no.", FACTS)
    # the error keeps its place (after the status) and holds the server's words
    assert list(seen.to_dict()) == [*CANDIDATE, "error", *ADMIN]
    assert seen.to_dict()["error"] == "server said no"


def test_a_ready_response_has_no_error_for_the_annotator_and_a_last_one_for_an_admin():
    ready = CandidateAnswer("b", "Hi.", True, "length", "ready")
    assert ready.to_dict() == {
        "slot": "b",
        "text": "Hi.",
        "cut": True,
        "cut_reason": "length",
        "status": "ready",
    }
    admin = CandidateAnswer("b", "Hi.", True, "length", "ready", None, FACTS)
    assert list(admin.to_dict()) == [*CANDIDATE, *ADMIN, "error"]


def test_a_turn_and_a_conversation_in_the_apis_order():
    turn = TurnAnswer(
        4, 0, "Hello?", "ready", (CandidateAnswer("a", "x", False, None, "ready"),),
        "a", 2, None, "x", "2026-01-01T00:00:00Z",
    )  # fmt: skip
    assert list(turn.to_dict()) == [
        "id", "index", "human", "status", "candidates", "pick", "strength", "edit",
        "continued", "decided_at",
    ]  # fmt: skip
    conv = ConversationDetail(
        7, "red-team", "Try", "open", None, None, "2026-01-01T00:00:00Z", None, (turn,), True
    )
    head = ["id", "mode", "task_description", "status", "comment", "rating", "created_at"]
    assert list(conv.to_dict()) == [*head, "finished_at", "turns", "yours"]
    admin = ConversationDetail(
        7, "red-team", "Try", "open", None, None, None, None, (), False, True, "m1", "other"
    )
    assert list(admin.to_dict())[-2:] == ["backend", "red_team_continue"]
    assert orjson.loads(orjson.dumps(conv.to_dict()))["turns"][0]["candidates"][0]["text"] == "x"


def test_a_summary_names_its_annotator_only_when_given():
    summary = ConversationSummary(1, "helpful", "Soup", "open", 0, None, None)
    keys = ["id", "mode", "task_description", "status", "turns", "created_at", "finished_at"]
    assert list(summary.to_dict()) == keys
    named = ConversationSummary(1, "helpful", "Soup", "open", 0, None, None, "alice")
    assert list(named.to_dict()) == [*keys, "annotator"]
