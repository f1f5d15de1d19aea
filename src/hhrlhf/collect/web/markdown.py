"""Model text as the pages show it: markdown rendered to sanitised HTML, data kept as it is.

What is exported is always the raw text; this is only how a page shows it. markdown-it-py with
raw HTML off (a ``<script>`` or ``<img onerror>`` in the text is shown as text), no linkify, no
images (a response must not make the browser fetch anything), and only ``http``, ``https`` and
``mailto`` links. Control characters and the invisible bidi or zero-width characters are shown
as visible escapes first (:func:`hhrlhf.text.printable`, as ``hh show`` prints them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from ...errors import require
from ...text import printable

__all__ = ["render_markdown", "with_html", "cached_html", "turn_texts"]

_SAFE_SCHEMES = ("http://", "https://", "mailto:")


@lru_cache(maxsize=1)
def _renderer() -> Any:
    markdown_it = require("markdown_it", "web", "showing responses as markdown")
    md = markdown_it.MarkdownIt(
        "commonmark", {"html": False, "linkify": False, "typographer": False}
    )
    md.enable("table").disable("image")
    md.validateLink = lambda url: url.strip().lower().startswith(_SAFE_SCHEMES)

    def link_open(renderer, tokens, idx, options, env):  # links open apart and tell nothing
        tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
        tokens[idx].attrSet("target", "_blank")
        return renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    return md


def render_markdown(text: str) -> str:
    """``text`` as sanitised HTML (a ``<div>``'s content); every character of it is shown.

    The last texts rendered are kept (:data:`CACHE_CHARS`): a response is rendered as it is
    finished on its stream, and the same text again in the choice's answer, the
    conversation's view and the page after a reload."""
    html = _cache.get(text)
    if html is None:
        html = str(_renderer().render(printable(text)))
        _cache.put(text, html)
    return html


def cached_html(texts: Iterable[str]) -> list[str] | None:
    """Each text's HTML if every one is in the cache (a lookup, cheap enough for the event
    loop), else None: render them with :func:`render_markdown` off the loop."""
    out = []
    for text in texts:
        html = _cache.get(text)
        if html is None:
            return None
        out.append(html)
    return out


def turn_texts(turn: dict) -> list[str]:
    """The texts :func:`with_html` renders for ``turn``, in its order."""
    texts = [c["text"] for c in turn.get("candidates") or () if isinstance(c.get("text"), str)]
    if isinstance(turn.get("continued"), str):
        texts.append(turn["continued"])
    return texts


def with_html(turn: dict, htmls: list[str] | None = None) -> dict:
    """A turn as the API returns it, with ``html`` beside each candidate's text and
    ``continued_html`` beside the text the conversation continued with (same dict, changed).
    ``htmls``: those texts' HTML (:func:`turn_texts`' order), if rendered already."""
    rendered = iter(htmls if htmls is not None else map(render_markdown, turn_texts(turn)))
    for c in turn.get("candidates") or ():
        if isinstance(c.get("text"), str):
            c["html"] = next(rendered)
    if isinstance(turn.get("continued"), str):
        turn["continued_html"] = next(rendered)
    return turn


#: characters of text and HTML the cache keeps, all entries together (a few megabytes)
CACHE_CHARS = 4_000_000


class _Recent:
    """Rendered HTML by text, the least recently used dropped first past ``limit``
    characters; one lock, since pages render in threads and the API on the loop."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chars = 0
        self._items: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> str | None:
        with self._lock:
            html = self._items.get(text)
            if html is not None:
                self._items.move_to_end(text)
            return html

    def put(self, text: str, html: str) -> None:
        size = len(text) + len(html)
        if size > self.limit:
            return
        with self._lock:
            if text in self._items:
                return
            self._items[text] = html
            self.chars += size
            while self.chars > self.limit:
                old, old_html = self._items.popitem(last=False)
                self.chars -= len(old) + len(old_html)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.chars = 0


_cache = _Recent(CACHE_CHARS)
