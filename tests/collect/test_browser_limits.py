"""The message box near its limit, in a real headless browser: a counter shows the characters
used as the limit nears, and a paste longer than the room left is cut at a word break and says
how much was left out (the browser alone cuts it silently, mid-word)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("uvicorn")

from test_browser import TIMEOUT_MS, _login_and_start, _serve, _watch, open_chromium  # noqa: E402

pytestmark = pytest.mark.browser

LIMIT = 20_000  # max_message_chars' default


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


def _paste(page, text: str) -> None:
    page.evaluate("t => navigator.clipboard.writeText(t)", text)
    page.focus("#message")
    page.keyboard.press("Control+V")


@pytest.mark.parametrize("width", [1280, 375])
def test_a_counter_near_the_limit_and_a_paste_cut_says_so(tmp_path, browser, width):
    with _serve(tmp_path) as (base, _storage, token, _app):
        context = browser.new_context(viewport={"width": width, "height": 800})
        context.grant_permissions(["clipboard-read", "clipboard-write"])
        page = context.new_page()
        seen = _watch(page)
        _login_and_start(page, base, token, "Ask about tea")
        assert page.is_hidden("#message-counter")  # far from the limit: no counter
        page.fill("#message", "How long should green tea steep?")
        assert page.is_hidden("#message-counter")

        # near the limit: the counter shows what is used
        page.fill("#message", "")
        _paste(page, "tea " * 4_600)  # 18,400 characters, over 90% of the limit
        page.wait_for_selector("#message-counter:not([hidden])", timeout=TIMEOUT_MS)
        assert page.text_content("#message-counter") == "18,400 / 20,000 characters"
        assert len(page.input_value("#message")) == 18_400

        # a paste past the limit: cut at a word break, and said
        words = " ".join(f"word{i:05d}" for i in range(2_000))  # 19,999 characters
        page.fill("#message", "")
        _paste(page, "Steeping notes: " + words)
        value = page.input_value("#message")
        assert len(value) <= LIMIT and len(value) > LIMIT - 20
        assert value.split(" ")[-1].startswith("word") and len(value.split(" ")[-1]) == 9
        left_out = len("Steeping notes: " + words) - len(value)
        note = page.text_content("#message-counter")
        assert note == (
            "The paste was cut to fit the 20,000-character limit: its last "
            f"{left_out:,} characters were left out. {len(value):,} / 20,000 characters"
        )
        assert page.get_attribute("#message", "aria-describedby") == "message-counter"
        # typing on clears the note; the counter stays
        page.keyboard.press("Backspace")
        assert page.text_content("#message-counter").startswith(f"{len(value) - 1:,} / 20,000")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(tmp_path / f"limit-{width}.png"))
        assert seen["dialogs"] == [] and seen["errors"] == []
        context.close()
