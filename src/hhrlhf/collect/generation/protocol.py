"""The backend protocol: what every backend kind implements (:mod:`.backends`, :mod:`.rerank`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol, runtime_checkable

from ..config import BackendConfig

__all__ = ["Backend"]


@runtime_checkable
class Backend(Protocol):
    """What every backend kind implements (see :data:`.backends.BACKENDS`); the runner checks each
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

    async def aclose(self) -> None:
        """Called once when the app stops, on the event loop that ran it: close connections."""
        ...
