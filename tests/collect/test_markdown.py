"""Responses as the pages show them: markdown rendered server-side, sanitised."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

pytest.importorskip("markdown_it")

from hhrlhf.collect.web.markdown import render_markdown, with_html  # noqa: E402


def test_markdown_renders_and_raw_html_is_text():
    html = render_markdown("**b** and <script>alert(1)</script>\n\n- x\n- y")
    assert "<strong>b</strong>" in html
    assert "<ul>\n<li>x</li>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html


@pytest.mark.parametrize(
    "text",
    [
        "[a](javascript:alert(1))",
        "[a](JavaScript:alert(1))",
        "[a](data:text/html,x)",
        "[a](vbscript:x)",
        "![i](https://example.org/i.png)",
        '<img src=x onerror="alert(1)">',
        "<a href='javascript:x'>a</a>",
    ],
)
def test_nothing_that_runs_or_loads(text):
    tags: list[tuple[str, list]] = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append((tag, attrs))

    Tags().feed(render_markdown(text))
    assert {t for t, _ in tags} <= {"p", "a"}
    for _tag, attrs in tags:
        assert not [k for k, _ in attrs if k.startswith("on") or k == "src"]
        assert all(v.startswith("https://") for k, v in attrs if k == "href")


def test_links_open_apart_and_controls_show_as_escapes():
    html = render_markdown("[site](https://example.org) bell\x07 rlo\u202e")
    assert 'href="https://example.org" rel="nofollow noopener noreferrer"' in html
    assert "bell\\x07 rlo\\u202e" in html


def test_turns_get_html_beside_their_text():
    turn = {"candidates": [{"slot": "a", "text": "*a*"}], "continued": "**c**"}
    assert with_html(turn)["candidates"][0]["html"] == "<p><em>a</em></p>\n"
    assert turn["continued_html"] == "<p><strong>c</strong></p>\n"


def test_a_text_rendered_once_is_looked_up_after(monkeypatch):
    """A response is rendered when its stream finishes it; the choice's answer, the
    conversation's view and the page find its HTML without rendering it again."""
    from hhrlhf.collect.web import markdown

    monkeypatch.setattr(markdown, "_cache", markdown._Recent(markdown.CACHE_CHARS))
    renders: list[str] = []
    real = markdown.printable
    monkeypatch.setattr(markdown, "printable", lambda t: renders.append(t) or real(t))
    text = "A *response* (cached)"
    assert markdown.cached_html([text]) is None
    html = render_markdown(text)
    assert markdown.cached_html([text]) == [html] and renders == [text]
    assert render_markdown(text) == html and renders == [text]  # a lookup, not a render
    assert markdown.cached_html([text, "never rendered"]) is None  # all or nothing


def test_the_cache_keeps_the_recent_html_within_its_characters():
    """Kept by the text's hash: only the HTML counts (and a fixed size per entry)."""
    from hhrlhf.collect.web.markdown import ENTRY_CHARS, _Recent

    recent = _Recent(limit=3 * (6 + ENTRY_CHARS))
    recent.put("a" * 1000, "A" * 6)  # a long text costs its HTML's characters only
    recent.put("bbbb", "B" * 6)
    recent.put("cccc", "C" * 6)
    assert recent.get("a" * 1000) == "A" * 6  # now the most recent
    recent.put("dddd", "D" * 6)  # over the limit: the least recently used goes
    assert recent.get("bbbb") is None
    assert [recent.get(t) for t in ("a" * 1000, "cccc", "dddd")] == ["A" * 6, "C" * 6, "D" * 6]
    assert recent.chars == 3 * (6 + ENTRY_CHARS)
    recent.put("e", "E" * 1000)  # larger than the whole cache: not kept, nothing dropped
    assert recent.get("e") is None and recent.chars == 3 * (6 + ENTRY_CHARS)


def test_turns_take_html_already_rendered_in_their_order():
    turn = {"candidates": [{"slot": "a", "text": "x"}, {"slot": "b", "text": "y"}]}
    turn["continued"] = "x"
    with_html(turn, ["<p>1</p>", "<p>2</p>", "<p>3</p>"])
    assert [c["html"] for c in turn["candidates"]] == ["<p>1</p>", "<p>2</p>"]
    assert turn["continued_html"] == "<p>3</p>"
