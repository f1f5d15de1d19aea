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
