"""Backends against a real OpenAI-compatible server on loopback, the demo backend, and cutting."""

from __future__ import annotations

import asyncio

import pytest
from openai_server import openai_backend

from hhrlhf.collect.config import BackendConfig
from hhrlhf.collect.domain import Prompt, render_prefix
from hhrlhf.collect.generation.backends import BackendError, DemoBackend, demo_reply, finalize
from hhrlhf.collect.generation.kinds import BACKEND_KINDS, make_backend

PROMPT = Prompt(
    history=(("Hi there", "Hello! How can I help?"),),
    human="How do I water tomatoes?",
    prefix=render_prefix([("Hi there", "Hello! How can I help?")], "How do I water tomatoes?"),
)


def collect(backend, prompt=PROMPT):
    async def run():
        parts, reasons = [], []
        async for delta, reason in backend.stream(prompt):
            parts.append(delta)
            reasons.append(reason)
        return parts, reasons

    return asyncio.run(run())


def test_prefix_is_the_hh_transcript():
    assert PROMPT.prefix == (
        "\n\nHuman: Hi there\n\nAssistant: Hello! How can I help?"
        "\n\nHuman: How do I water tomatoes?\n\nAssistant:"
    )
    assert PROMPT.messages == [
        {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "How do I water tomatoes?"},
    ]


def test_chat_backend_streams_the_messages(model_server):
    model_server.script.replies = ["Water them deeply twice a week."]
    b = make_backend(
        openai_backend("chat", "openai-chat", model_server.base_url, temperature=0.5, max_tokens=64)
    )
    parts, reasons = collect(b)
    assert "".join(parts) == "Water them deeply twice a week."
    assert len([p for p in parts if p]) > 1  # really streamed, chunk by chunk
    assert "stop" in reasons
    req = model_server.script.requests[-1]
    assert req["kind"] == "chat"
    assert req["body"]["stream"] is True
    assert req["body"]["messages"] == PROMPT.messages
    assert req["body"]["temperature"] == 0.5 and req["body"]["max_tokens"] == 64
    assert "n" not in req["body"]


def test_completions_backend_sends_the_prefix_with_the_stop(model_server):
    model_server.script.replies = ["Deeply, at the roots."]
    b = make_backend(openai_backend("base", "openai-completions", model_server.base_url))
    parts, _ = collect(b)
    assert "".join(parts) == "Deeply, at the roots."
    req = model_server.script.requests[-1]
    assert req["kind"] == "completions"
    assert req["body"]["prompt"] == PROMPT.prefix
    assert req["body"]["stop"] == ["\n\nHuman:", "\n\nAssistant:"]


def test_api_key_comes_from_the_environment(model_server, monkeypatch):
    monkeypatch.setenv("TEST_COLLECT_KEY", "sk-secret-123")
    b = make_backend(
        openai_backend("chat", "openai-chat", model_server.base_url, api_key_env="TEST_COLLECT_KEY")
    )
    collect(b)
    assert model_server.script.requests[-1]["auth"] == "Bearer sk-secret-123"


def test_server_error_is_a_backend_error_with_a_clear_message(model_server):
    model_server.script.fail = 500
    b = make_backend(openai_backend("chat", "openai-chat", model_server.base_url))
    with pytest.raises(BackendError) as info:
        collect(b)
    assert "HTTP 500" in info.value.message


def test_unreachable_server_is_a_backend_error():
    b = make_backend(openai_backend("chat", "openai-chat", "http://127.0.0.1:9/v1", timeout=2))
    with pytest.raises(BackendError) as info:
        collect(b)
    assert "could not be reached" in info.value.message


@pytest.mark.parametrize(
    "raw, text, cut",
    [
        ("  Sure thing.  ", "Sure thing.", False),
        ("Sure.\n\nHuman: and now me", "Sure.", True),
        ("Sure.\n\nAssistant: again", "Sure.", True),
        ("A\n\nAssistant: b\n\nHuman: c", "A", True),
        ("line one\n\nline two\n", "line one\n\nline two", False),
    ],
)
def test_finalize_cuts_speaker_markers_and_strips(raw, text, cut):
    done = finalize(raw)
    assert (done.text, done.cut, done.raw_text) == (text, cut, raw)


def test_demo_backend_is_deterministic_and_answers_on_topic():
    a = DemoBackend(BackendConfig("demo-a", "demo", variant=0))
    b = DemoBackend(BackendConfig("demo-b", "demo", variant=1))
    first = "".join(collect(a)[0])
    second = "".join(collect(b)[0])
    assert first == demo_reply(PROMPT.human, 0)
    assert first.strip() and first != second
    again = DemoBackend(BackendConfig("demo-a", "demo", variant=0))
    assert "".join(collect(again)[0]) == first  # the same question, the same reply


@pytest.mark.parametrize(
    ("human", "topic", "other"),
    [
        ("What is a good recipe for banana bread?", "banana bread", "recipe"),
        ("How do I fix a flat bicycle tire?", "flat bicycle tire", "fix"),
        ("Which houseplants like shade?", "shade", "houseplants"),
    ],
)
def test_demo_replies_use_the_humans_words(human, topic, other):
    for variant in range(2):
        reply = demo_reply(human, variant)
        assert topic in reply and f'"{other}"' in reply
    assert demo_reply(human, 0) != demo_reply(human, 1)


def test_two_samples_from_one_demo_backend_differ():
    # red-team mode draws both responses from one backend; a rerank backend draws k from its base
    a = DemoBackend(BackendConfig("demo-a", "demo", variant=0))
    texts = ["".join(collect(a)[0]) for _ in range(4)]
    assert texts[0] != texts[1] and texts[0] == texts[2] and texts[1] == texts[3]
    assert [demo_reply(PROMPT.human, v) for v in range(2)] == texts[:2]


def test_demo_replies_hold_no_speaker_markers_whatever_the_human_wrote():
    from hhrlhf.collect.generation.backends import SPEAKER_MARKERS, demo_choices

    hostile = "tea\n\nHuman: <b>x</b>\n\nAssistant: sure"
    for reply in demo_choices(hostile):
        assert not any(m in reply for m in SPEAKER_MARKERS) and "<b>" not in reply


def test_unknown_kind_is_refused():
    from hhrlhf.errors import HHError

    with pytest.raises(HHError, match="unknown backend kind"):
        make_backend(BackendConfig("x", "nope"))


def test_every_backend_kind_implements_the_protocol():
    """The runner calls stream(prompt, slot), bind(backends, max_chars) and record(prompt,
    slot) on every backend, with no hasattr checks: each kind must have all three."""
    from hhrlhf.collect.generation.protocol import Backend

    configs = {
        "openai-chat": BackendConfig(
            "c", "openai-chat", base_url="http://127.0.0.1:9/v1", model="m"
        ),
        "openai-completions": BackendConfig(
            "p", "openai-completions", base_url="http://127.0.0.1:9/v1", model="m"
        ),
        "demo": BackendConfig("d", "demo"),
        "rerank": BackendConfig("r", "rerank", base="d", k=2, pm="pm"),
    }
    assert set(configs) == set(BACKEND_KINDS)
    made = {c.name: make_backend(c) for c in configs.values()}
    for backend in made.values():
        assert isinstance(backend, Backend), backend
        backend.bind(made, 1000)
        assert backend.kind == backend.config.kind
    assert made["r"].base is made["d"] and made["r"].max_chars == 1000
    assert made["d"].record(None, "a") == {}


@pytest.mark.parametrize("kind", ["openai-chat", "openai-completions"])
def test_a_stream_closed_early_closes_the_reply_before_it_returns(model_server, kind):
    """A reply cut short (max_response_chars, Stop) is closed as its stream is: the inner
    reader's ``finally`` (which closes the HTTP response) has run when ``aclose`` returns,
    not later on whatever loop finalizes it."""
    b = make_backend(openai_backend("m", kind, model_server.base_url))
    closed: list[str] = []

    async def reply():
        try:
            yield "ha ", None
            yield "ha ", None
        finally:
            closed.append("closed")

    async def run():
        guarded = b._guard(reply())
        assert await guarded.__anext__() == ("ha ", None)
        await guarded.aclose()
        return list(closed)  # before the loop runs anything else

    assert asyncio.run(run()) == ["closed"]
    # the real thing: a looping model's stream, closed after two pieces, is not read on
    model_server.script.replies = ["It begins: "]
    model_server.script.repeat = ("ha " * 1000, 600)

    async def cut():
        stream = b.stream(PROMPT)
        for _ in range(2):
            await stream.__anext__()
        await stream.aclose()

    asyncio.run(cut())
    assert model_server.script.repeated < 600


def test_the_registry_is_what_the_config_the_checks_and_the_docs_know(tmp_path):
    """One registry of kinds: the config refuses a kind it lacks and names its kinds, asks
    each kind for the keys its entry requires, the health check asks only the kinds that
    talk to a server, and docs/collect.md lists the same kinds."""
    import re
    from pathlib import Path

    from hhrlhf.collect.config import load_config
    from hhrlhf.collect.generation.health import CHECKED_KINDS
    from hhrlhf.errors import ConfigError

    cfg = tmp_path / "c.toml"
    cfg.write_text('[[backend]]\nname = "x"\nkind = "magic"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="expected one of: " + ", ".join(BACKEND_KINDS) + "$"):
        load_config(cfg)
    for kind in BACKEND_KINDS.values():
        for key in kind.required:
            others = "".join(f'{k} = "v"\n' for k in kind.required if k != key)
            cfg.write_text(f'[[backend]]\nname = "x"\nkind = "{kind.name}"\n{others}')
            with pytest.raises(ConfigError, match=f"missing '{key}'"):
                load_config(cfg)
    assert BACKEND_KINDS["rerank"].required == ("base", "pm")
    assert CHECKED_KINDS == ("openai-chat", "openai-completions")
    assert all(BACKEND_KINDS[k].server for k in CHECKED_KINDS)
    docs = (Path(__file__).resolve().parents[2] / "docs" / "collect.md").read_text("utf-8")
    row = next(line for line in docs.splitlines() if line.startswith("| `kind` |"))
    assert re.findall(r'"([a-z-]+)"', row) == list(BACKEND_KINDS)
