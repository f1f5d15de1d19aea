"""Where responses come from: the backend protocol (:class:`Backend`), the registry of backend
kinds (:mod:`.kinds`), the OpenAI-compatible chat and completions backends, the demo backend,
the rerank (best-of-k) backend, and the runner (:mod:`.runner`) that generates a turn's two
responses under a lease, streams them and stores them.

The package imports only the registry and the protocol: the config reads the registry, and
the runner (which reads the config) is imported by name, ``generation.runner``."""

from .kinds import BACKEND_KINDS, BackendKind, make_backend
from .protocol import Backend, BackendConfig

__all__ = ["BACKEND_KINDS", "Backend", "BackendConfig", "BackendKind", "make_backend"]
