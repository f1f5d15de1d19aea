"""No text costs much more to show than ordinary markdown of its length.

markdown-it parses some inputs in quadratic time (``*[*[...``: a link label searched for from
each ``[`` to the end of the text); a conversation of such responses once cost seconds of CPU
to show. Each text's parse has a step budget per character; past it the text is shown as
escaped plain text. The cost is counted in Python function calls (deterministic, unlike a
timing): every pattern below, at the 20,000 characters of a response or an edit, stays under
:data:`CALLS_PER_CHAR` calls per character, the class of the densest ordinary markdown.
"""

from __future__ import annotations

import cProfile
import pstats
from collections.abc import Callable

import pytest

pytest.importorskip("markdown_it")

from hhrlhf.collect.web import markdown  # noqa: E402

SIZE = 20_000
#: ordinary markdown costs 7-35 calls per character (prose with emphasis and links; short
#: list items); the most a text may cost, fallback included
CALLS_PER_CHAR = 90

#: inputs known to be slow for markdown parsers (nesting, unmatched delimiters and
#: brackets, unclosed links and code spans, tables, references), each a function of a count
PATTERNS: dict[str, Callable[[int], str]] = {
    "nested emphasis": lambda k: "*a **a " * k + "b" + " a** a*" * k,
    "emphasis closers alone": lambda k: "a_ " * k,
    "emphasis openers alone": lambda k: "_a " * k,
    "mismatched emphasis": lambda k: "*a_ " * k,
    "runs of three": lambda k: "a**b" + "c* " * k,
    "strong runs": lambda k: "**a" * k,
    "link closers alone": lambda k: "a]" * k,
    "link openers alone": lambda k: "[a" * k,
    "link openers, emphasis closers": lambda k: "[ a_" * k,
    "emphasis in open links": lambda k: "*[" * k,
    "open links and emphasis": lambda k: "*[_" * k,
    "open images": lambda k: "![" * k,
    "bracket parens": lambda k: "[ (](" * k,
    "nested brackets": lambda k: "[" * k + "a" + "]" * k,
    "unclosed destinations <": lambda k: "[a](<b" * k,
    "unclosed destinations": lambda k: "[a](b" * k,
    "unclosed code spans": lambda k: "".join("e" + "`" * (i % 200 + 1) for i in range(k)),
    "nested block quotes": lambda k: "> " * k + "a",
    "nested lists": lambda k: "".join("  " * (i % 40) + "* a\n" for i in range(k)),
    "reference definitions": lambda k: "[a]: u\n" * k + "[a]",
    "empty table rows": lambda k: "| a |\n|---|\n" + "|\n" * k,
    "wide table": lambda k: "|" * k + "\n|" + "-|" * k + "\n",
    "entities": lambda k: "&#" * k,
    "autolinks": lambda k: "<a:" * k,
    "backslashes": lambda k: "\\" * k,
}

#: ordinary markdown, which must still render as markdown at its longest
ORDINARY = {
    "prose": "The quick brown fox *jumps* over the `lazy` dog. [a link](https://x.org) ",
    "lists": "- an item with *emphasis* in it\n- another item, with `code`\n\n1. first\n2. second\n\n",
    "table": "| name | **value** |\n|---|---|\n" + "| `x` | *y* |\n" * 3,
    "code": "```python\ndef f(x):\n    return x * 2\n```\n\n> a quote **here**\n\n",
    "headings": "# Title\n\n## Part *one*\n\nSome text here, with a [link](https://x.org).\n\n",
}


def _sized(make: Callable[[int], str], size: int = SIZE) -> str:
    k = 1
    while len(make(k)) < size:
        k *= 2
    lo, hi = k // 2, k
    while lo < hi:  # the smallest count that reaches the size
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if len(make(mid)) < size else (lo, mid)
    return make(lo)[:size]


def _calls(text: str) -> int:
    profile = cProfile.Profile()
    markdown._cache.clear()
    profile.enable()
    markdown.render_markdown(text)
    profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_no_pattern_costs_more_than_ordinary_markdown(name):
    text = _sized(PATTERNS[name])
    assert len(text) == SIZE
    calls = _calls(text)
    assert calls <= CALLS_PER_CHAR * SIZE, f"{name}: {calls / SIZE:.1f} calls per character"


@pytest.mark.parametrize("name", sorted(ORDINARY))
def test_ordinary_markdown_renders_at_its_longest(name):
    html = markdown.render_markdown(_sized(lambda k: ORDINARY[name] * k))
    assert not html.startswith('<p class="plain">')
    assert "<" in html.replace('<p class="plain">', "")


def test_a_text_past_its_budget_shows_as_escaped_plain_text():
    text = "*[" * 10_000 + "\n\n<script>alert(1)</script> \x07\nend"
    html = markdown.render_markdown(text)
    assert html.startswith('<p class="plain">*[*[')
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\x07<br>\nend</p>" in html
    assert "<script>" not in html


def test_link_reference_definitions_show_as_text():
    """A definition rendered to nothing (an empty box while Raw showed the text)."""
    html = markdown.render_markdown("[a]: https://example.org\n\nsee [a]")
    assert html == "<p>[a]: https://example.org</p>\n<p>see [a]</p>\n"
    html = markdown.render_markdown('[x]: <https://e.org> "t"')
    assert "[x]:" in html and "https://e.org" in html


def test_a_long_render_lets_other_threads_run(monkeypatch):
    """Renders run in threads: one holding the interpreter for its whole parse would make the
    event loop wait at each wake, so it pauses (``time.sleep(0)``) every YIELD_STEPS."""
    pauses: list[float] = []
    monkeypatch.setattr(markdown.time, "sleep", pauses.append)
    markdown._cache.clear()
    markdown.render_markdown(_sized(PATTERNS["emphasis in open links"]))
    assert len(pauses) >= markdown.STEPS_PER_CHAR * SIZE // markdown.YIELD_STEPS // 2
    assert set(pauses) == {0}
