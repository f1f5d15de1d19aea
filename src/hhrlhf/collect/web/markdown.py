"""Model text as the pages show it: markdown rendered to sanitised HTML, data kept as it is.

What is exported is always the raw text; this is only how a page shows it. markdown-it-py with
raw HTML off (a ``<script>`` or ``<img onerror>`` in the text is shown as text), no linkify, no
images (a response must not make the browser fetch anything), and only ``http``, ``https`` and
``mailto`` links. Link reference definitions (``[a]: https://...``) are not definitions here:
they show as the text they are (a definition renders to nothing, which left an empty box).
Control characters and the invisible bidi or zero-width characters are shown as visible
escapes first (:func:`hhrlhf.text.printable`, as ``hh show`` prints them).

Rendering costs at most :data:`STEPS_PER_CHAR` parser steps per character (every block and
inline rule tried, every token skipped while a link's label is looked for, counted): text
that would cost more (``*[*[...``, which markdown-it parses in quadratic time) is shown as
escaped plain text instead (:func:`plain_html`), so no text costs much more to show than
ordinary markdown of its length.
"""

from __future__ import annotations

import hashlib
import html as html_lib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ...errors import require
from ...text import printable

if TYPE_CHECKING:
    from markdown_it.renderer import RendererHTML
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

__all__ = [
    "render_markdown",
    "plain_html",
    "with_html",
    "cached_html",
    "turn_texts",
    "render_within",
    "STEPS_PER_CHAR",
]

_SAFE_SCHEMES = ("http://", "https://", "mailto:")

#: parser steps a text may cost per character (plus :data:`STEPS_BASE`) before it is shown as
#: plain text: prose with emphasis and links costs under one step per character, dense lists
#: and tables 2-4, the quadratic patterns 35 and more (tests/collect/test_markdown_cost.py)
STEPS_PER_CHAR = 4
STEPS_BASE = 2_000
#: steps a token skipped while a link's label is looked for costs: ordinary text looks a few
#: tokens ahead for a label's end, an unclosed ``[`` before every other character (the
#: quadratic class) looks to the text's end, so that class meets its budget sooner
SKIP_STEPS = 4
#: steps between two pauses of a render (a millisecond or two of parsing)
YIELD_STEPS = 1_000


class _TooCostly(Exception):
    """The text's parse went past its step budget."""


class _Budget:
    """A render's steps left; every :data:`YIELD_STEPS` steps the thread lets others run."""

    __slots__ = ("left", "_next_yield")

    def __init__(self, left: int) -> None:
        self.left = left
        self._next_yield = left - YIELD_STEPS

    def spend(self, steps: int = 1) -> None:
        self.left -= steps
        if self.left < 0:
            raise _TooCostly
        if self.left < self._next_yield:
            # renders run in threads: a long one holding the interpreter would slow the
            # event loop's every wake (it waits for the lock's switch interval each time)
            self._next_yield = self.left - YIELD_STEPS
            time.sleep(0)


def _counted(fn: Callable[..., Any]) -> Callable[..., Any]:
    def rule(state: Any, *args: Any) -> Any:
        state.env["budget"].spend()
        return fn(state, *args)

    return rule


def _count_steps(md: Any) -> None:
    """Every block and inline rule tried (and the inline parser's token skip, which a link's
    label search runs from each ``[``) spends one step of the render's budget
    (``env["budget"]``)."""
    for ruler in (md.block.ruler, md.inline.ruler, md.inline.ruler2):
        for rule in list(ruler.__rules__):
            ruler.at(rule.name, _counted(rule.fn), {"alt": list(rule.alt)})
    skip = md.inline.skipToken

    def skip_token(state: Any) -> None:
        state.env["budget"].spend(SKIP_STEPS)
        skip(state)

    md.inline.skipToken = skip_token


@lru_cache(maxsize=1)
def _renderer() -> Any:
    markdown_it = require("markdown_it", "web", "showing responses as markdown")
    md = markdown_it.MarkdownIt(
        "commonmark", {"html": False, "linkify": False, "typographer": False}
    )
    md.enable("table").disable(["image", "reference"])
    md.validateLink = lambda url: url.strip().lower().startswith(_SAFE_SCHEMES)

    def link_open(  # links open apart and tell nothing
        renderer: RendererHTML,
        tokens: Sequence[Token],
        idx: int,
        options: OptionsDict,
        env: EnvType,
    ) -> str:
        tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
        tokens[idx].attrSet("target", "_blank")
        return renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    _count_steps(md)
    return md


def plain_html(text: str) -> str:
    """``text`` as escaped plain text: a paragraph per blank-line-separated block, its line
    breaks kept (what a text too costly to parse as markdown shows as)."""
    blocks = [b for b in printable(text).split("\n\n") if b.strip()]
    return "".join(
        '<p class="plain">' + html_lib.escape(b.strip("\n")).replace("\n", "<br>\n") + "</p>\n"
        for b in blocks
    )


def _render(text: str) -> str:
    shown = printable(text)
    md = _renderer()
    try:
        budget = _Budget(STEPS_BASE + STEPS_PER_CHAR * len(shown))
        env = {"budget": budget}
        tokens = md.parse(shown, env)
        budget.left -= len(tokens) + sum(len(t.children or ()) for t in tokens)
        if budget.left < 0:  # each token costs its share of the writing of the HTML
            raise _TooCostly
        return str(md.renderer.render(tokens, md.options, env))
    except (_TooCostly, RecursionError):
        return plain_html(text)


def render_markdown(text: str) -> str:
    """``text`` as sanitised HTML (a ``<div>``'s content); every character of it is shown.

    The texts rendered lately are kept by their hash (:data:`CACHE_CHARS` of HTML): a
    response is rendered as it is finished on its stream, and found again in the choice's
    answer, the conversation's view and the page after a reload."""
    key = _key(text)
    html = _cache.get_key(key)
    if html is None:
        html = _render(text)
        _cache.put_key(key, html)
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


def render_within(texts: Iterable[str], take: Callable[[int], bool]) -> list[str]:
    """Each text's HTML: found in the cache, or rendered when ``take(len(text))`` allows it
    (the annotator's render budget), else shown as plain text (not kept: rendered once the
    budget allows)."""
    out = []
    for text in texts:
        key = _key(text)
        html = _cache.get_key(key)
        if html is None:
            if not take(len(text)):
                html = plain_html(text)
            else:
                html = _render(text)
                _cache.put_key(key, html)
        out.append(html)
    return out


def turn_texts(turn: dict[str, Any]) -> list[str]:
    """The texts :func:`with_html` renders for ``turn``, in its order."""
    texts = [c["text"] for c in turn.get("candidates") or () if isinstance(c.get("text"), str)]
    if isinstance(turn.get("continued"), str):
        texts.append(turn["continued"])
    return texts


def with_html(turn: dict[str, Any], htmls: list[str] | None = None) -> dict[str, Any]:
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


#: characters of HTML the cache keeps, all entries together (each entry counted with
#: :data:`ENTRY_CHARS` more for its key): tens of megabytes
CACHE_CHARS = 16_000_000
ENTRY_CHARS = 64


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class _Recent:
    """Rendered HTML by the text's hash (the text itself is not kept), the least recently
    used dropped first past ``limit`` characters; one lock, since pages render in threads
    and the API on the loop."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.chars = 0
        self._items: OrderedDict[bytes, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> str | None:
        return self.get_key(_key(text))

    def put(self, text: str, html: str) -> None:
        self.put_key(_key(text), html)

    def get_key(self, key: bytes) -> str | None:
        with self._lock:
            html = self._items.get(key)
            if html is not None:
                self._items.move_to_end(key)
            return html

    def put_key(self, key: bytes, html: str) -> None:
        size = len(html) + ENTRY_CHARS
        if size > self.limit:
            return
        with self._lock:
            if key in self._items:
                return
            self._items[key] = html
            self.chars += size
            while self.chars > self.limit:
                _, old_html = self._items.popitem(last=False)
                self.chars -= len(old_html) + ENTRY_CHARS

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.chars = 0


_cache = _Recent(CACHE_CHARS)
