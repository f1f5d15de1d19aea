"""Where responses come from: OpenAI-compatible servers (chat or completions) and a demo backend.

A backend streams text deltas for a :class:`~hhrlhf.collect.domain.Prompt`; :func:`finalize`
then cuts any speaker marker the model wrote and normalises whitespace, so the export's
``"\\n\\nAssistant: " + response`` is exact.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from ...errors import require
from ..finish import SPEAKER_MARKERS, BackendError, Finished, finalize
from .protocol import Backend, BackendConfig
from .wire import bounded, chat_piece, completion_piece

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletionMessageParam

    from ..domain import Prompt

#: what a backend streams: (text delta, finish reason or None)
Piece = tuple[str, str | None]

__all__ = [
    "Backend",
    "BackendError",
    "OpenAIChatBackend",
    "OpenAICompletionsBackend",
    "DemoBackend",
    "server_message",
    "finalize",
    "Finished",
    "SPEAKER_MARKERS",
]


class _Plain:
    """A backend that draws on no other backend and records nothing extra."""

    def bind(self, backends: Mapping[str, Backend], max_chars: int) -> None:
        return None

    def record(self, prompt: Prompt, slot: str) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        return None


def server_message(body: object, fallback: str = "") -> str:
    """The model server's own explanation in an error body: OpenAI's ``{"error": {"message"}}``,
    the bare ``{"message"}`` or ``{"detail"}`` other servers send, or the text itself; control
    characters escaped, at most 500 characters."""
    message: object = None
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message") or inner.get("detail")
        elif isinstance(inner, str):
            message = inner
        if not message:
            message = body.get("detail") or body.get("message")
    elif isinstance(body, str):
        message = body
    text = message if isinstance(message, str) and message.strip() else fallback
    return bounded(text if isinstance(text, str) else str(text)[:2000])


def chat_messages(prompt: Prompt) -> list[ChatCompletionMessageParam]:
    """The conversation as chat messages: the human's turns as the user's, the picked
    responses as the assistant's, then the new human message."""
    out: list[ChatCompletionMessageParam] = []
    for human, assistant in prompt.history:
        out.append({"role": "user", "content": human})
        out.append({"role": "assistant", "content": assistant})
    out.append({"role": "user", "content": prompt.human})
    return out


class _OpenAIBase(_Plain):
    def __init__(self, config: BackendConfig):
        self.config = config
        self._client: AsyncOpenAI | None = None

    def client(self) -> AsyncOpenAI:
        if self._client is None:
            openai = require("openai", "web", "OpenAI-compatible backends")
            key = os.environ.get(self.config.api_key_env, "") if self.config.api_key_env else ""
            # a read may wait past ``timeout`` when ``idle_timeout`` is longer: the runner's
            # idle watch ends a silent response (a second later the client would)
            timeout = openai.Timeout(
                self.config.timeout, read=max(self.config.timeout, self.config.idle_seconds + 1)
            )
            client: AsyncOpenAI = openai.AsyncOpenAI(
                base_url=self.config.base_url,
                api_key=key or "not-needed",
                timeout=timeout,
                max_retries=0,
            )
            self._client = client
            return client
        return self._client

    @property
    def model(self) -> str:
        """The model the server is asked for (the config's check requires one)."""
        return self.config.model or ""

    async def aclose(self) -> None:
        """Close the HTTP connections on the loop that opened them (left to the garbage
        collector, the client would try to close them later on whatever loop is running)."""
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def _guard(self, agen: AsyncGenerator[Piece, None]) -> AsyncIterator[Piece]:
        """``agen``'s items, its errors as :class:`BackendError`. Closed early (a reply cut at
        ``max_response_chars``, Stop), it closes ``agen`` before it returns, so the reply's
        HTTP response is closed then: left alone, ``agen`` would be closed later by the
        event loop's finalizer, or by a garbage collection on whatever loop then runs."""
        openai = require("openai", "web", "OpenAI-compatible backends")
        try:
            async for item in agen:
                yield item
        except openai.APITimeoutError as exc:
            raise BackendError(
                "the model server did not answer in time", bounded(str(exc))
            ) from exc
        except openai.APIConnectionError as exc:
            raise BackendError("the model server could not be reached", bounded(str(exc))) from exc
        except openai.APIStatusError as exc:
            raise BackendError(
                f"the model server answered with an error (HTTP {exc.status_code})",
                server_message(exc.body, exc.message),
            ) from exc
        except openai.APIError as exc:  # an error event mid-stream: its message, bounded
            raise BackendError(
                "the model server sent an error", server_message(exc.body, exc.message)
            ) from exc
        except openai.OpenAIError as exc:
            raise BackendError("the model server failed", bounded(str(exc))) from exc
        finally:
            await agen.aclose()


class OpenAIChatBackend(_OpenAIBase):
    """``openai-chat``: the conversation as messages; the continued responses are assistant turns.

    The speaker markers are sent as ``stop`` sequences too (a server that ignores them is still
    cut by :func:`finalize`)."""

    kind = "openai-chat"

    async def _raw(self, prompt: Prompt) -> AsyncGenerator[Piece, None]:
        stream = await self.client().chat.completions.create(
            model=self.model,
            messages=chat_messages(prompt),
            stop=list(SPEAKER_MARKERS),
            stream=True,
            **self.config.sampling_params(),
        )
        try:
            async for chunk in stream:
                piece = chat_piece(chunk)  # every field checked: text where text belongs
                if piece is not None:
                    yield piece
        finally:  # a reply cut short (max_response_chars) closes its connection now
            await stream.close()

    def stream(self, prompt: Prompt, slot: str = "a") -> AsyncIterator[Piece]:
        return self._guard(self._raw(prompt))


class OpenAICompletionsBackend(_OpenAIBase):
    """``openai-completions``: the HH transcript prefix, stopping at either speaker marker."""

    kind = "openai-completions"

    async def _raw(self, prompt: Prompt) -> AsyncGenerator[Piece, None]:
        stream = await self.client().completions.create(
            model=self.model,
            prompt=prompt.prefix,
            stop=list(SPEAKER_MARKERS),
            stream=True,
            **self.config.sampling_params(),
        )
        try:
            async for chunk in stream:
                piece = completion_piece(chunk)
                if piece is not None:
                    yield piece
        finally:
            await stream.close()

    def stream(self, prompt: Prompt, slot: str = "a") -> AsyncIterator[Piece]:
        return self._guard(self._raw(prompt))


_WORD = re.compile(r"[^\W\d_][\w'-]*")

#: words a demo reply does not take as the topic
_STOPWORDS = frozenset(
    """a about after all also am an and any anything are as at be because been before being
    best but by can could did do does doing done for from get give good had has have having he
    help her here hers him his how i i'd i'll i'm i've if in into is it it's its just know like
    make me more most much my need no not now of on one or other our out please really say
    she should so some something tell than thank thanks that the their them then there these
    they thing things think this those to too up us very want was way we well were what when
    where which who why will with would you your yours hi hello hey""".split()
)

#: the demo's replies: ``{topic}`` is what the human asks about, ``{other}`` another of their words
_DEMO_REPLIES = (
    'Good question about {topic}. Start with the basics, look at the "{other}" part first, '
    "make one small change at a time, and watch what happens for a few days. If you tell me "
    "more about your situation, I can be more specific.",
    'It depends on a few things. For {topic}, most people think about "{other}" first. A '
    "simple plan: try the easiest option, keep notes, and adjust once you see how it goes.",
    'Here are three tips on {topic}:\n\n1. Read up on the "{other}" part.\n2. Keep it '
    "simple at first.\n3. Ask someone who has done it before.\n\nWould you like more detail "
    "on any of them?",
    'I am not sure I follow. Do you mean {topic} in general, or "{other}" in particular? '
    "Could you say a bit more?",
    '{Topic} is a big subject. The short version: "{other}" matters most, so begin there '
    "and build up slowly.",
    "Sorry, I cannot say much about {topic} without more context. What have you tried so far?",
)


def _topic_words(human: str) -> tuple[str, str]:
    """(topic, another word) of the human's turn: the run of up to three content words it ends
    with, and its first content word outside that run."""
    words = [w for w in _WORD.findall(human) if len(w) <= 30]
    run: list[str] = []
    for w in reversed(words):
        if w.lower() in _STOPWORDS:
            if run:
                break
            continue
        run.insert(0, w)
        if len(run) == 3:
            break
    if not run:
        return "that", "details"
    rest = [w for w in words if w.lower() not in _STOPWORDS and w not in run]
    return " ".join(run), (rest[0] if rest else run[0]).lower()


def demo_reply(human: str, variant: int) -> str:
    """A reply on the human's topic from a small template of our own (``variant`` picks it):
    deterministic, two variants never equal."""
    topic, other = _topic_words(human)
    template = _DEMO_REPLIES[variant % len(_DEMO_REPLIES)]
    return template.format(topic=topic, other=other, Topic=topic[:1].upper() + topic[1:])


def demo_choices(human: str, n: int = 3) -> list[str]:
    """The first ``2 * n`` template replies on ``human``'s topic (what a temperature draws from)."""
    return [demo_reply(human, v) for v in range(min(2 * n, len(_DEMO_REPLIES)))]


class DemoBackend(_Plain):
    """``demo``: no model; replies on the human's topic from a small template (:func:`demo_reply`).

    Successive calls alternate between two replies (starting with the ``variant``), so two
    samples from one demo backend differ, as a sampling model's would: a red-team conversation
    (one backend for both slots) gets two texts. With ``temperature`` > 0 each response is drawn
    at random among six replies, so a ``rerank`` backend over it has several texts to choose from.
    """

    kind = "demo"

    def __init__(self, config: BackendConfig):
        self.config = config
        self._calls = itertools.count()
        self._rng = random.Random()

    async def stream(self, prompt: Prompt, slot: str = "a") -> AsyncIterator[Piece]:
        if self.config.temperature:
            text = self._rng.choice(demo_choices(prompt.human))
        else:
            text = demo_reply(prompt.human, self.config.variant + next(self._calls) % 2)
        for piece in re.findall(r"\S+\s*|\s+", text):
            if self.config.token_delay:
                await asyncio.sleep(self.config.token_delay)
            yield piece, None
        yield "", "stop"
