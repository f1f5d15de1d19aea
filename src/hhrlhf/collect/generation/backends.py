"""Where responses come from: OpenAI-compatible servers (chat or completions) and a demo backend.

A backend streams text deltas for a :class:`~hhrlhf.collect.db.Prompt`; :func:`finalize`
then cuts any speaker marker the model wrote and normalises whitespace, so the export's
``"\\n\\nAssistant: " + response`` is exact.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import re
from collections.abc import AsyncIterator, Mapping
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from ...errors import HHError, UnknownNameError, require
from ...text import printable
from ..config import BackendConfig
from ..finish import SPEAKER_MARKERS, BackendError, Finished, finalize

__all__ = [
    "Backend",
    "BackendError",
    "OpenAIChatBackend",
    "OpenAICompletionsBackend",
    "DemoBackend",
    "BACKENDS",
    "make_backend",
    "server_message",
    "finalize",
    "Finished",
    "SPEAKER_MARKERS",
]


@runtime_checkable
class Backend(Protocol):
    """What every backend kind implements (see :data:`BACKENDS`); the runner checks each
    configured backend against it when the app starts."""

    config: BackendConfig
    kind: str

    def stream(self, prompt: Any, slot: str = "a") -> AsyncIterator[tuple[str, str | None]]:
        """One response for ``slot`` as ``(text delta, finish reason or None)`` pairs; raises
        :class:`BackendError`."""
        ...

    def bind(self, backends: Mapping[str, Backend], max_chars: int) -> None:
        """Called once every backend is made: resolve other backends it draws on, and take
        the app's ``max_response_chars``."""
        ...

    def record(self, prompt: Any, slot: str) -> dict[str, Any]:
        """What to store with the candidate beside the sampling parameters (``{}``: nothing)."""
        ...


class _Plain:
    """A backend that draws on no other backend and records nothing extra."""

    def bind(self, backends: Mapping[str, Backend], max_chars: int) -> None:
        return None

    def record(self, prompt: Any, slot: str) -> dict[str, Any]:
        return {}


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
    if not isinstance(text, str):
        text = str(text)
    text = printable(" ".join(text.split()))
    return text if len(text) <= 500 else text[:499] + "…"


class _OpenAIBase(_Plain):
    def __init__(self, config: BackendConfig):
        self.config = config
        self._client = None

    def client(self):
        if self._client is None:
            openai = require("openai", "web", "OpenAI-compatible backends")
            key = os.environ.get(self.config.api_key_env, "") if self.config.api_key_env else ""
            self._client = openai.AsyncOpenAI(
                base_url=self.config.base_url,
                api_key=key or "not-needed",
                timeout=self.config.timeout,
                max_retries=0,
            )
        return self._client

    def _params(self) -> dict:
        return self.config.sampling_params()

    async def _guard(self, agen) -> AsyncIterator[tuple[str, str | None]]:
        openai = require("openai", "web", "OpenAI-compatible backends")
        try:
            async for item in agen:
                yield item
        except openai.APITimeoutError as exc:
            raise BackendError("the model server did not answer in time", str(exc)) from exc
        except openai.APIConnectionError as exc:
            raise BackendError("the model server could not be reached", str(exc)) from exc
        except openai.APIStatusError as exc:
            raise BackendError(
                f"the model server answered with an error (HTTP {exc.status_code})",
                server_message(exc.body, exc.message),
            ) from exc
        except openai.OpenAIError as exc:
            raise BackendError("the model server failed", str(exc)) from exc


class OpenAIChatBackend(_OpenAIBase):
    """``openai-chat``: the conversation as messages; the continued responses are assistant turns.

    The speaker markers are sent as ``stop`` sequences too (a server that ignores them is still
    cut by :func:`finalize`)."""

    kind = "openai-chat"

    async def _raw(self, prompt):
        stream = await self.client().chat.completions.create(
            model=self.config.model,
            messages=prompt.messages,
            stop=list(SPEAKER_MARKERS),
            stream=True,
            **self._params(),
        )
        try:
            async for chunk in stream:
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                delta = choice.delta.content if choice.delta else None
                yield delta or "", choice.finish_reason
        finally:  # a reply cut short (max_response_chars) closes its connection now
            await stream.close()

    def stream(self, prompt, slot: str = "a"):
        return self._guard(self._raw(prompt))


class OpenAICompletionsBackend(_OpenAIBase):
    """``openai-completions``: the HH transcript prefix, stopping at either speaker marker."""

    kind = "openai-completions"

    async def _raw(self, prompt):
        stream = await self.client().completions.create(
            model=self.config.model,
            prompt=prompt.prefix,
            stop=list(SPEAKER_MARKERS),
            stream=True,
            **self._params(),
        )
        try:
            async for chunk in stream:
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                yield choice.text or "", choice.finish_reason
        finally:
            await stream.close()

    def stream(self, prompt, slot: str = "a"):
        return self._guard(self._raw(prompt))


_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


@lru_cache(maxsize=1)
def _sample_index() -> tuple[tuple[frozenset, str, str], ...]:
    """(words of the last human turn, chosen response, rejected response) of the bundled sample."""
    from ...dataset import load_dataset

    out = []
    for subset in ("helpful-base", "helpful-online"):
        for split in ("train", "test"):
            for pair in load_dataset(subset, split=split, data="sample"):
                dialogue = pair.chosen_dialogue
                humans = [t.text for t in dialogue.turns if t.role == "Human"]
                if not humans:
                    continue
                chosen = pair.chosen_response.strip()
                rejected = pair.rejected_response.strip()
                # the sample keeps upstream's quirks; a demo reply should not show them
                quirky = any(m in text for text in (chosen, rejected) for m in SPEAKER_MARKERS)
                if chosen and rejected and chosen != rejected and not quirky:
                    out.append((frozenset(_words(humans[-1])), chosen, rejected))
    if not out:
        raise HHError("the bundled sample has no helpful pairs for the demo backend")
    return tuple(out)


def demo_reply(human: str, variant: int) -> str:
    """The response of the sample prompt most similar to ``human`` (Jaccard on words; ties: first)."""
    words = _words(human)
    best, best_score = None, -1.0
    for i, (prompt_words, _chosen, _rejected) in enumerate(_sample_index()):
        union = len(words | prompt_words) or 1
        score = len(words & prompt_words) / union
        if score > best_score:
            best, best_score = i, score
    _, chosen, rejected = _sample_index()[best]
    return chosen if variant % 2 == 0 else rejected


def demo_choices(human: str, n: int = 3) -> list[str]:
    """Both responses of the ``n`` sample prompts most similar to ``human`` (most similar first)."""
    words = _words(human)
    index = _sample_index()
    scored = sorted(
        range(len(index)),
        key=lambda i: (-len(words & index[i][0]) / (len(words | index[i][0]) or 1), i),
    )
    return [text for i in scored[:n] for text in index[i][1:]]


class DemoBackend(_Plain):
    """``demo``: no model; replies drawn from the bundled sample.

    Successive calls alternate between the matched pair's two responses (starting with the
    ``variant``), so two samples from one demo backend differ, as a sampling model's would: a
    red-team conversation (one backend for both slots) gets two texts. With ``temperature`` > 0
    each response is drawn at random among both responses of the three most similar sample
    prompts, so a ``rerank`` backend over it has several texts to choose from.
    """

    kind = "demo"

    def __init__(self, config: BackendConfig):
        self.config = config
        self._calls = itertools.count()
        self._rng = random.Random()

    async def stream(self, prompt, slot: str = "a"):
        if self.config.temperature:
            text = self._rng.choice(demo_choices(prompt.human))
        else:
            text = demo_reply(prompt.human, self.config.variant + next(self._calls))
        for piece in re.findall(r"\S+\s*|\s+", text):
            if self.config.token_delay:
                await asyncio.sleep(self.config.token_delay)
            yield piece, None
        yield "", "stop"


from .rerank import RerankBackend  # noqa: E402  (it builds on the backends above)

BACKENDS: dict[str, type] = {
    "openai-chat": OpenAIChatBackend,
    "openai-completions": OpenAICompletionsBackend,
    "demo": DemoBackend,
    "rerank": RerankBackend,
}


def make_backend(config: BackendConfig) -> Backend:
    try:
        cls = BACKENDS[config.kind]
    except KeyError:
        raise UnknownNameError("backend kind", config.kind, list(BACKENDS)) from None
    backend = cls(config)
    if not isinstance(backend, Backend):  # pragma: no cover - a kind added without its methods
        raise HHError(f"backend kind {config.kind!r} does not implement the backend protocol")
    return backend
