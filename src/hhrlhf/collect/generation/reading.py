"""Reading one response: what was read (:class:`Read`), the watch on its reader
(:func:`watch`): an idle timeout between words and a cap on the whole response, and what
it ends as (:data:`Outcome`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ..finish import TIME_CUT

__all__ = ["Fields", "Outcome", "Read", "watch"]

#: one candidate's columns to store (text, cut, model facts, params, error...)
Fields = dict[str, Any]
#: one response's end: (its slot, the fields to store, the annotator's error message or None)
Outcome = tuple[str, Fields, str | None]


@dataclass
class Read:
    """What :meth:`~.runner.Generator._read` read of one response, and why it failed if it did
    (``shown_detail``: the detail is the server's or the runner's words, not a bug's)."""

    raw: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    #: the text was cut short, kept and rateable: why (:data:`SIZE_CUT`, :data:`TIME_CUT`,
    #: :data:`STOP_CUT`)
    cut_as: str | None = None
    #: the event loop's time of the last word (or of the request)
    last: float = 0.0
    error: str | None = None
    detail: str | None = None
    shown_detail: bool = False


async def watch(reader: asyncio.Future[None], read: Read, idle: float, cap: float) -> None:
    """Wait for ``reader`` (reading into ``read``) to end: past ``idle`` seconds without a word
    it is closed and :class:`asyncio.TimeoutError` raised; past ``cap`` seconds from now it is
    closed and its text so far kept, cut there (:data:`~hhrlhf.collect.finish.TIME_CUT`). Its
    own error (CancelledError on Stop) is raised; cancelled, it cancels ``reader``."""
    loop = asyncio.get_running_loop()
    end = loop.time() + cap
    try:
        while True:
            wait = min(read.last + idle, end) - loop.time()
            done, _ = await asyncio.wait({reader}, timeout=max(wait, 0.0))
            if done:
                reader.result()
                return
            now = loop.time()
            if now >= end or now >= read.last + idle:
                break
    except asyncio.CancelledError:
        reader.cancel()
        raise
    reader.cancel()
    await asyncio.gather(reader, return_exceptions=True)
    if loop.time() < end:
        raise asyncio.TimeoutError
    read.cut_as = TIME_CUT
