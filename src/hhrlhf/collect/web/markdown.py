"""Model text as the pages show it: markdown rendered to sanitised HTML, data kept as it is.

What is exported is always the raw text; this is only how a page shows it. markdown-it-py with
raw HTML off (a ``<script>`` or ``<img onerror>`` in the text is shown as text), no linkify, no
images (a response must not make the browser fetch anything), and only ``http``, ``https`` and
``mailto`` links. Control characters and the invisible bidi or zero-width characters are shown
as visible escapes first (:func:`hhrlhf.text.printable`, as ``hh show`` prints them).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ...errors import require
from ...text import printable

__all__ = ["render_markdown", "with_html"]

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
    """``text`` as sanitised HTML (a ``<div>``'s content); every character of it is shown."""
    return str(_renderer().render(printable(text)))


def with_html(turn: dict) -> dict:
    """A turn as the API returns it, with ``html`` beside each candidate's text and
    ``continued_html`` beside the text the conversation continued with (same dict, changed)."""
    for c in turn.get("candidates") or ():
        if isinstance(c.get("text"), str):
            c["html"] = render_markdown(c["text"])
    if isinstance(turn.get("continued"), str):
        turn["continued_html"] = render_markdown(turn["continued"])
    return turn
