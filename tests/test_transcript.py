"""Transcript parsing, rendering and turn-level alignment, including property tests."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hhrlhf.transcript import (
    ASSISTANT,
    HUMAN,
    Dialogue,
    Turn,
    align_pair,
    has_inline_label,
    is_alternating,
    parse_transcript,
    prompt_length,
    render_transcript,
)

# Pieces that make transcripts hard: markers, inline labels, blank lines, unicode.
PIECES = [
    "\n\nHuman:",
    "\n\nAssistant:",
    "Human:",
    "Assistant:",
    "  Human: ",
    "\n",
    "\n\n",
    " ",
    "Hi",
    "ok.",
    "What?",
    "café ☕",
    "🙂",
    "\n\nHuman",
    ":",
    "\n\n\nAssistant:",
]
tricky_text = st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=12).map("".join)
plain_text = st.lists(
    st.sampled_from(["Sure", " thing", ".", " How", " about", " tea", "?", "🙂", " é"]), max_size=8
).map("".join)


@st.composite
def pairs_with_quirks(draw):
    """A shared prompt plus two final responses, each possibly holding markers or empty."""
    n = draw(st.integers(1, 5))
    turns = []
    for i in range(n):
        turns.append(Turn(HUMAN, " " + draw(plain_text)))
        if i < n - 1:
            turns.append(Turn(ASSISTANT, " " + draw(plain_text)))
    if draw(st.booleans()):  # non-alternating: a doubled human turn
        turns.insert(0, Turn(HUMAN, " " + draw(plain_text)))
    prompt = render_transcript(Dialogue(tuple(turns))) + "\n\nAssistant:"
    chosen_resp = draw(st.sampled_from(["", " "]) | tricky_text)
    rejected_resp = draw(st.sampled_from(["", " "]) | tricky_text)
    return prompt, chosen_resp, rejected_resp


def first_turn(response: str) -> str:
    return parse_transcript("\n\nAssistant:" + response).turns[0].text


@given(st.text())
def test_round_trip_any_string(text):
    assert render_transcript(parse_transcript(text)) == text


@given(tricky_text)
def test_round_trip_tricky_strings(text):
    assert parse_transcript(text).render() == text


@given(pairs_with_quirks())
@settings(max_examples=400)
def test_alignment_reconstructs_and_finds_the_turn_level_prompt(case):
    prompt, cr, rr = case
    chosen, rejected = prompt + cr, prompt + rr
    end = prompt_length(chosen, rejected)
    assert chosen[:end] == rejected[:end]
    assert chosen[:end] + chosen[end:] == chosen
    assert end == 0 or chosen[:end].endswith("\n\nAssistant:")
    assert end == align_pair(chosen, rejected).prompt_end
    if first_turn(cr) != first_turn(rr):
        # the responses differ in their first turn: the prompt is exactly the shared turns
        assert chosen[:end] == prompt
    else:
        # they share the first response turn: the prompt can only grow, at turn level
        assert end >= len(prompt)


@given(st.text(), st.text())
def test_alignment_invariants_on_arbitrary_strings(chosen, rejected):
    end = prompt_length(chosen, rejected)
    assert chosen[:end] == rejected[:end]
    assert end == 0 or chosen[:end].endswith("\n\nAssistant:")
    assert end == align_pair(chosen, rejected).prompt_end


def test_parse_keeps_exact_text_and_preamble():
    d = parse_transcript("intro\n\nHuman: Hi there\n\nAssistant: Hello!  Human: not a turn")
    assert d.preamble == "intro"
    assert d.turns == (
        Turn(HUMAN, " Hi there"),
        Turn(ASSISTANT, " Hello!  Human: not a turn"),
    )
    assert d.turns[1].content == "Hello!  Human: not a turn"
    assert d.human_turns == 1 and d.assistant_turns == 1 and len(d) == 2


def test_messages_round_trip():
    text = "\n\nHuman: Hi\n\nAssistant: Hello"
    d = parse_transcript(text)
    assert d.to_messages() == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]
    assert Dialogue.from_messages(d.to_messages()).render() == text
    with pytest.raises(ValueError, match="role must be 'user' or 'assistant'"):
        Dialogue.from_messages([{"role": "system", "content": "x"}])


def test_right_most_split_trap():
    """The chosen response contains a human turn: a right-most split of chosen is wrong."""
    prompt = "\n\nHuman: Name a fruit.\n\nAssistant:"
    chosen = prompt + " Apple.\n\nHuman: And a vegetable?\n\nAssistant: Leek."
    rejected = prompt + " I cannot say."
    end = prompt_length(chosen, rejected)
    assert chosen[:end] == prompt
    assert chosen.rfind("\n\nAssistant:") + len("\n\nAssistant:") != end


def test_char_prefix_trap():
    """Both responses start alike: a character-level common prefix splits inside the response."""
    prompt = "\n\nHuman: How do I boil an egg?\n\nAssistant:"
    chosen = prompt + " Put the egg in boiling water for nine minutes."
    rejected = prompt + " Put the egg in cold water."
    assert len(os.path.commonprefix([chosen, rejected])) > len(prompt)
    assert prompt_length(chosen, rejected) == len(prompt)


def test_alignment_details():
    base = "\n\nHuman: a\n\nAssistant: b"
    a = align_pair(base + "\n\nHuman: c\n\nAssistant: d", base + "\n\nHuman: X\n\nAssistant: d")
    assert (a.diverge_turn, a.diverge_role) == (2, HUMAN)
    assert a.prompt_end == len("\n\nHuman: a\n\nAssistant:")
    same = align_pair(base, base)
    assert same.diverge_turn is None and same.prompt_end == len("\n\nHuman: a\n\nAssistant:")
    pre = align_pair("x" + base, "y" + base)
    assert pre.prompt_end == 0 and pre.diverge_role is None
    roles = align_pair("\n\nHuman: a\n\nHuman: b", "\n\nHuman: a\n\nAssistant: b")
    assert roles.diverge_turn == 1 and roles.diverge_role is None and roles.prompt_end == 0
    prefix = align_pair(base, base + "\n\nHuman: more")
    assert prefix.diverge_turn == 2 and prefix.diverge_role is None
    assert prompt_length("no markers", "at all") == 0


def test_inline_label_and_alternation():
    assert has_inline_label(" so I said  Human: then what")
    assert has_inline_label("Assistant: at the start")
    assert not has_inline_label(" just text")
    assert not has_inline_label("\n\nHuman: a real marker")
    assert is_alternating([HUMAN, ASSISTANT, HUMAN])
    assert not is_alternating([HUMAN, HUMAN])
    assert not is_alternating([ASSISTANT])
    assert is_alternating([])
