"""Text for the data browser's lists: cut at a word boundary with an ellipsis, and the search
words marked (escaped first: the text is data, the ``<mark>`` is ours)."""

from __future__ import annotations

import re

from markupsafe import Markup, escape

__all__ = ["cut_words", "highlight"]

ELLIPSIS = "…"


def cut_words(text: str, width: int, *, from_end: bool = False) -> str:
    """``text`` in at most about ``width`` characters, cut between words with ``…`` where it
    was cut (its start kept, or with ``from_end`` its end); a single word longer than ``width``
    is cut where it must be."""
    text = text.strip()
    if len(text) <= width:
        return text
    if from_end:
        tail = text[len(text) - width :]
        space = re.search(r"\s", tail)
        if space and space.end() < len(tail):
            tail = tail[space.end() :]
        return ELLIPSIS + tail.lstrip()
    head = text[:width]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    if cut > 0 and not text[width].isspace():
        head = head[:cut]
    return head.rstrip() + ELLIPSIS


def highlight(text: str, query: str | None) -> Markup:
    """``text`` escaped, with every case-insensitive occurrence of ``query`` in ``<mark>``."""
    if not query or not query.strip():
        return Markup(escape(text))
    pattern = re.compile(re.escape(query.strip()), re.IGNORECASE)
    out, at = [], 0
    for m in pattern.finditer(text):
        out.append(escape(text[at : m.start()]))
        out.append(Markup('<mark class="hit">') + escape(m.group()) + Markup("</mark>"))
        at = m.end()
    out.append(escape(text[at:]))
    return Markup("").join(out)
