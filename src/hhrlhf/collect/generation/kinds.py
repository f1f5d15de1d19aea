"""The kinds of model backend, in one registry: :data:`BACKEND_KINDS` (a ``kind`` of the
config's ``[[backend]]`` table -> its :class:`BackendKind`). The config's check, ``hh serve``'s
and the admin page's backend checks, and :func:`make_backend` all read it; adding a kind is
one entry here and its class.

Each factory imports its class when it is called: the config is read (and checked against
this registry) by commands that never generate, so reading it loads neither the backends'
HTTP clients nor the rerank backend's preference-model machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...errors import HHError, UnknownNameError
from .protocol import Backend, BackendConfig

__all__ = ["BACKEND_KINDS", "BackendKind", "make_backend"]


@dataclass(frozen=True)
class BackendKind:
    """One kind of backend: how it is made and what its ``[[backend]]`` table needs."""

    name: str
    make: Callable[[BackendConfig], Backend]
    #: keys its table must have, beside ``name`` and ``kind``
    required: tuple[str, ...] = ()
    #: it talks to an OpenAI-compatible server, which ``hh serve`` and the admin's Backends
    #: page ask for its models (``generation/health.py``)
    server: bool = False


def _openai_chat(config: BackendConfig) -> Backend:
    from .backends import OpenAIChatBackend

    return OpenAIChatBackend(config)


def _openai_completions(config: BackendConfig) -> Backend:
    from .backends import OpenAICompletionsBackend

    return OpenAICompletionsBackend(config)


def _demo(config: BackendConfig) -> Backend:
    from .backends import DemoBackend

    return DemoBackend(config)


def _rerank(config: BackendConfig) -> Backend:
    from .rerank import RerankBackend

    return RerankBackend(config)


BACKEND_KINDS: dict[str, BackendKind] = {
    kind.name: kind
    for kind in (
        BackendKind("openai-chat", _openai_chat, ("base_url", "model"), server=True),
        BackendKind("openai-completions", _openai_completions, ("base_url", "model"), server=True),
        BackendKind("demo", _demo),
        BackendKind("rerank", _rerank, ("base", "pm")),
    )
}


def make_backend(config: BackendConfig) -> Backend:
    """The backend ``config`` describes (its kind's factory), checked against the protocol."""
    try:
        kind = BACKEND_KINDS[config.kind]
    except KeyError:
        raise UnknownNameError("backend kind", config.kind, list(BACKEND_KINDS)) from None
    backend = kind.make(config)
    if not isinstance(backend, Backend):  # pragma: no cover - a kind added without its methods
        raise HHError(f"backend kind {config.kind!r} does not implement the backend protocol")
    return backend
