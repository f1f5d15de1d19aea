"""Where responses come from: the backend protocol (:class:`Backend`), the OpenAI-compatible
chat and completions backends, the demo backend, the rerank (best-of-k) backend, and the
runner that generates a turn's two responses under a lease, streams them and stores them."""

from .backends import Backend, make_backend
from .runner import Generator

__all__ = ["Backend", "Generator", "make_backend"]
