"""The backend protocol: what every backend kind implements (:mod:`.backends`, :mod:`.rerank`),
and :class:`BackendConfig`, what one ``[[backend]]`` table of the config says."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

if TYPE_CHECKING:
    from ..domain import Prompt

__all__ = ["Backend", "BackendConfig", "SamplingParams"]


class SamplingParams(TypedDict, total=False):
    """A backend's sampling parameters, those its config sets."""

    temperature: float
    top_p: float
    max_tokens: int


@dataclass(frozen=True)
class BackendConfig:
    """One ``[[backend]]`` table. ``api_key_env`` names an environment variable; keys are never stored."""

    name: str
    kind: str
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = 256
    #: the HTTP client's limit for connecting and for each read; the idle timeout too when
    #: ``idle_timeout`` is unset
    timeout: float = 60.0
    #: the most seconds without a new word before the response fails (unset: ``timeout``)
    idle_timeout: float | None = None
    model_type: str | None = None
    num_params: str | None = None
    #: demo only: which template reply to start from (successive calls alternate between two)
    variant: int = 0
    #: demo only: seconds to wait per word (load tests)
    token_delay: float = 0.0
    #: rerank only: the backend sampled, how many samples per turn, the preference model's folder
    base: str | None = None
    k: int = 16
    pm: str | None = None
    #: rerank only: the preference model that scores red-team conversations (a harmlessness
    #: PM); without it ``pm`` scores both modes
    red_team_pm: str | None = None
    #: rerank only: at most this many samples drawn at once
    concurrency: int = 4
    #: this backend's share of the draw, against the other drawn backends' (docs/collect.md)
    weight: float = 1.0

    @property
    def idle_seconds(self) -> float:
        """The most seconds between two words of a response before it fails."""
        return self.timeout if self.idle_timeout is None else self.idle_timeout

    def sampling_params(self) -> SamplingParams:
        """The sampling parameters the config sets: sent with every request, recorded with
        every candidate (no secrets)."""
        params = SamplingParams()
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        return params


@runtime_checkable
class Backend(Protocol):
    """What every backend kind implements (see :data:`.kinds.BACKEND_KINDS`); the runner checks each
    configured backend against it when the app starts."""

    config: BackendConfig
    kind: str

    def stream(self, prompt: Prompt, slot: str = "a") -> AsyncIterator[tuple[str, str | None]]:
        """One response for ``slot`` as ``(text delta, finish reason or None)`` pairs; raises
        :class:`BackendError`."""
        ...

    def bind(self, backends: Mapping[str, Backend], max_chars: int) -> None:
        """Called once every backend is made: resolve other backends it draws on, and take
        the app's ``max_response_chars``."""
        ...

    def record(self, prompt: Prompt, slot: str) -> dict[str, Any]:
        """What to store with the candidate beside the sampling parameters (``{}``: nothing)."""
        ...

    async def aclose(self) -> None:
        """Called once when the app stops, on the event loop that ran it: close connections."""
        ...
