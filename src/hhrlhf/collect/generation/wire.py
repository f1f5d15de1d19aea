"""The OpenAI wire format as a backend's reply is read: every field checked at the boundary.

The ``openai`` client builds its chunk objects without validating them, so a server's
``"content": ["a"]`` or ``"choices": {}`` would reach the runner as a list or a dict where text
belongs. Each streamed chunk is read here into ``(text, finish_reason)``, or refused with a
:class:`~hhrlhf.errors.BackendError` naming the field, and every text that comes from the
server to be stored, logged or shown (an error's message included) is cut to a bound
(:func:`bounded`).
"""

from __future__ import annotations

from typing import Any

from ...errors import BackendError
from ...text import printable

__all__ = [
    "chat_piece",
    "completion_piece",
    "checked_piece",
    "bounded",
    "MAX_ERROR_CHARS",
    "MAX_REASON_CHARS",
]

#: the most characters of a server's error message kept (stored, logged, shown)
MAX_ERROR_CHARS = 500
#: the longest finish reason taken (OpenAI's are a word: "stop", "length", ...)
MAX_REASON_CHARS = 64


def bounded(text: object, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` (any value) as one line of at most ``limit`` characters: whitespace runs as
    one space, control characters escaped; looked at only as far as the bound needs."""
    if not isinstance(text, str):
        text = f"<{type(text).__name__}>"
    head = printable(" ".join(text[: limit * 4].split()))
    return head if len(head) <= limit else head[: limit - 1] + "…"


def _malformed(what: str, value: object) -> BackendError:
    shown = type(value).__name__ if not isinstance(value, str) else "text too long"
    return BackendError("the model server sent a malformed reply", f"{what}: {shown}")


def _field(obj: Any, name: str) -> Any:
    """A field of a chunk's part: an object the client built, or a dict it left as one."""
    if isinstance(obj, dict):
        return obj.get(name)
    extra = getattr(obj, "model_extra", None)
    if name not in getattr(type(obj), "model_fields", {}) and isinstance(extra, dict):
        return extra.get(name)
    return getattr(obj, name, None)


def _is_object(value: object) -> bool:
    return isinstance(value, dict) or hasattr(type(value), "model_fields")


def _first_choice(chunk: Any) -> Any:
    if not _is_object(chunk):
        raise _malformed("chunk", chunk)
    error = _field(chunk, "error")
    if error is not None:  # an error object in a chunk (the client raises on most)
        message = _field(error, "message") if _is_object(error) else error
        raise BackendError("the model server sent an error", bounded(message))
    usage = _field(chunk, "usage")
    if usage is not None and not _is_object(usage):
        raise _malformed("usage", usage)
    choices = _field(chunk, "choices")
    if choices is None:
        return None
    if not isinstance(choices, list):
        raise _malformed("choices", choices)
    if not choices:
        return None  # a chunk of usage only
    choice = choices[0]
    if not _is_object(choice):
        raise _malformed("choices[0]", choice)
    return choice


def _text(value: object, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _malformed(what, value)
    return value


def _reason(choice: Any) -> str | None:
    value = _field(choice, "finish_reason")
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_REASON_CHARS:
        raise _malformed("finish_reason", value)
    return value


def chat_piece(chunk: Any) -> tuple[str, str | None] | None:
    """A chat completion chunk as ``(delta.content, finish_reason)``; None for one without a
    choice (usage only)."""
    choice = _first_choice(chunk)
    if choice is None:
        return None
    delta = _field(choice, "delta")
    if delta is not None and not _is_object(delta):
        raise _malformed("delta", delta)
    content = _text(_field(delta, "content") if delta is not None else None, "delta.content")
    return content, _reason(choice)


def completion_piece(chunk: Any) -> tuple[str, str | None] | None:
    """A completion chunk as ``(text, finish_reason)``; None for one without a choice."""
    choice = _first_choice(chunk)
    if choice is None:
        return None
    return _text(_field(choice, "text"), "text"), _reason(choice)


def checked_piece(delta: object, reason: object) -> tuple[str, str | None]:
    """A piece of any backend's stream as the runner takes it: text, and a short finish
    reason or None; anything else is a :class:`~hhrlhf.errors.BackendError`."""
    if not isinstance(delta, str):
        raise _malformed("a piece", delta)
    if reason is not None and not (isinstance(reason, str) and len(reason) <= MAX_REASON_CHARS):
        raise _malformed("a finish reason", reason)
    return delta, reason
