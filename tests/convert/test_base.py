"""The message helpers every clean-text format shares."""

from __future__ import annotations

from hhrlhf.convert.base import messages_of, normalise_transcript, render_messages


def test_messages_of_strips_and_keeps_every_turn():
    text = "\n\nHuman:  hi \n\nHuman: again\n\nAssistant: "
    assert messages_of(text) == [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": ""},
    ]


def test_unlabelled_preamble_is_a_user_message():
    assert messages_of("hello\n\nAssistant: hi") == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "hi"},
    ]


def test_normalise_is_idempotent_and_renders_one_space():
    text = "Human:   a  \n\nAssistant:b"
    assert normalise_transcript(text) == "\n\nHuman: a\n\nAssistant: b"
    assert normalise_transcript(normalise_transcript(text)) == normalise_transcript(text)
    assert render_messages(messages_of(text)) == normalise_transcript(text)
