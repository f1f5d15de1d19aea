"""The ``rerank`` backend: rejection sampling with our own preference model (best of k).

Each turn it draws ``k`` responses from its ``base`` backend (at most ``concurrency`` at once),
scores each with a preference model saved by ``hh pm train`` (any backend of the RewardModel
registry) in its context (the turn's transcript prefix), and shows the two highest scores (two
different texts when the samples hold them): ``pm`` scores helpful conversations, and
``red_team_pm`` (a harmlessness PM, where the less harmful response is ``chosen``) red-team
ones, so those show the two least harmful; without ``red_team_pm``, ``pm`` scores both. Slot A
gets one of
the two and slot B the other, in an order drawn from the turn's prefix, so the better one is
not always on the left. The ``k`` samples and their scores are stored with each candidate
(``params["rerank"]``).

Both slots of a turn share one ranking (the k samples are drawn once); a retry of a failed slot
reuses it while it is cached in this process.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from ..finish import BackendError, finalize
from ..textrules import clean_model_text
from .protocol import BackendConfig
from .wire import checked_piece

if TYPE_CHECKING:
    from ...reward.backends import RewardModel
    from ..domain import Prompt
    from .protocol import Backend

__all__ = ["RerankBackend", "Ranking"]

#: rankings kept per process (a turn's two slots and a retry use the same one)
CACHE_SIZE = 256


def _failed(fut: asyncio.Future[Ranking]) -> bool:
    return fut.done() and (fut.cancelled() or fut.exception() is not None)


class Ranking:
    """The k samples of one turn, their PM scores, and the two shown."""

    def __init__(
        self, samples: list[str], scores: list[float], shown: dict[str, int], pm_ms: float
    ):
        self.samples = samples
        self.scores = scores
        self.shown = shown  # slot -> index into samples
        self.pm_ms = pm_ms

    def record(self, slot: str) -> dict[str, Any]:
        return {
            "samples": [
                {"text": t, "score": s} for t, s in zip(self.samples, self.scores, strict=True)
            ],
            "shown": self.shown[slot],
            "pm_ms": round(self.pm_ms, 3),
        }


class RerankBackend:
    """``rerank``: best two of ``k`` samples from ``base`` by the preference model ``pm``."""

    kind = "rerank"

    def __init__(self, config: BackendConfig):
        self.config = config
        self.base: Backend | None = None
        self._models: dict[str, RewardModel] = {}  # folder -> loaded model, each loaded once
        self._loading = threading.Lock()
        #: (prefix, mode) -> the turn's ranking
        self._rankings: OrderedDict[tuple[str, str], asyncio.Future[Ranking]] = OrderedDict()
        #: a sample longer than this is cut (not shown); the app sets its max_response_chars
        self.max_chars = 20_000

    def bind(self, backends: Mapping[str, Backend], max_chars: int) -> None:
        """Resolve ``base`` among the app's backends (called once they are all made), and cut
        samples at the app's ``max_response_chars``."""
        self.max_chars = max_chars
        base = backends.get(self.config.base or "")
        if base is None or getattr(base, "kind", None) == "rerank":
            raise BackendError(
                "the reranking backend is misconfigured",
                f"backend {self.config.name!r}: base {self.config.base!r} is not a plain backend",
            )
        self.base = base

    def pm_for(self, mode: str) -> str:
        """The preference model's folder that scores a conversation of ``mode``."""
        if mode == "red-team" and self.config.red_team_pm:
            return self.config.red_team_pm
        if self.config.pm is None:  # the config's check asks for one
            raise BackendError("the reranking backend is misconfigured", "no pm folder")
        return self.config.pm

    def model(self, mode: str = "helpful") -> RewardModel:
        """The preference model for ``mode``, loaded on first use (blocking: the turn calls it
        in a worker thread, never on the event loop; one load per folder)."""
        folder = self.pm_for(mode)
        with self._loading:
            if folder not in self._models:
                from ...reward.backends import load_model

                try:
                    self._models[folder] = load_model(folder)
                except Exception as exc:
                    raise BackendError("the reranking model could not be loaded", str(exc)) from exc
        return self._models[folder]

    async def _sample(self, prompt: Prompt, gate: asyncio.Semaphore) -> str | None:
        async with gate:
            raw: list[str] = []
            reason: str | None = None
            room = self.max_chars
            if self.base is None:
                raise BackendError("the reranking backend is misconfigured", "base not bound")
            stream = self.base.stream(prompt)
            try:
                async for piece in stream:
                    delta, r = checked_piece(*piece)  # text, whatever the base sends
                    raw.append(delta[:room])
                    reason = r or reason
                    room -= len(delta)
                    if room < 0:  # over max_response_chars: stop reading
                        break
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
            text = finalize(clean_model_text("".join(raw)), reason, oversize=room < 0)
            # a sample that held a speaker marker, went over the size cap or came back empty
            # is not shown
            return None if text.cut or not text.text else text.text

    async def _rank(self, prompt: Prompt) -> Ranking:
        if self.base is None:
            raise BackendError("the reranking backend is misconfigured", "base not bound")
        gate = asyncio.Semaphore(max(1, self.config.concurrency))
        # a sample that fails is not usable, as a cut one: the others are still drawn
        got = await asyncio.gather(
            *(self._sample(prompt, gate) for _ in range(self.config.k)), return_exceptions=True
        )
        for found in got:
            if isinstance(found, BaseException) and not isinstance(found, Exception):
                raise found  # cancelled (Stop, shutdown): not a failed sample
        samples = [t for t in got if isinstance(t, str)]
        if len(samples) < 2:
            failed = [e for e in got if isinstance(e, Exception)]
            if failed:  # the base's own error (the admin reads its words)
                raise failed[0]
            raise BackendError(
                "too few usable samples to choose from",
                f"{len(samples)} of {self.config.k} samples were usable",
            )
        model = await asyncio.to_thread(self.model, prompt.mode)  # a load reads files
        t0 = time.perf_counter()
        raw_scores = await asyncio.to_thread(
            model.score, [prompt.prefix] * len(samples), [" " + t for t in samples]
        )
        pm_ms = (time.perf_counter() - t0) * 1000
        scores = [float(s) for s in raw_scores]
        # highest first: the PM's best two (with a harmlessness PM: the two least harmful)
        order = sorted(range(len(samples)), key=lambda i: (-scores[i], i))
        first = order[0]
        # two different texts when there are (the same text twice is no comparison)
        second = next((i for i in order[1:] if samples[i] != samples[first]), order[1])
        flip = hashlib.sha256(prompt.prefix.encode("utf-8")).digest()[0] & 1
        shown = {"a": second, "b": first} if flip else {"a": first, "b": second}
        return Ranking(samples, scores, shown, pm_ms)

    def ranking(self, prompt: Prompt) -> asyncio.Future[Ranking]:
        key = (prompt.prefix, prompt.mode)
        fut = self._rankings.get(key)
        if fut is None or _failed(fut):
            fut = asyncio.ensure_future(self._rank(prompt))
            self._rankings[key] = fut
            while len(self._rankings) > CACHE_SIZE:
                self._rankings.popitem(last=False)
        return fut

    async def stream(
        self, prompt: Prompt, slot: str = "a"
    ) -> AsyncIterator[tuple[str, str | None]]:
        ranking = await asyncio.shield(self.ranking(prompt))
        yield ranking.samples[ranking.shown[slot]], None
        yield "", "stop"

    def record(self, prompt: Prompt, slot: str) -> dict[str, Any]:
        """What is stored with the candidate: the k samples, their scores, which one is shown."""
        fut = self._rankings.get((prompt.prefix, prompt.mode))
        if fut is None or not fut.done() or _failed(fut):
            return {}
        out = fut.result().record(slot)
        out.update(
            base=self.config.base, k=self.config.k, pm=self.pm_for(prompt.mode), mode=prompt.mode
        )
        return {"rerank": out}

    async def aclose(self) -> None:
        """Forget the rankings (their futures belong to the stopping loop); ``base`` is
        closed by the app as a backend of its own."""
        for fut in self._rankings.values():
            fut.cancel()
        self._rankings.clear()
