"""One conversation open in two tabs, in a real headless browser: what one tab does, the other
says ("changed in another tab") and offers a reload, instead of answering a stale page with
"pick a response first"."""

from __future__ import annotations

import os
import shutil

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("uvicorn")

from test_browser import (  # noqa: E402
    TIMEOUT_MS,
    _login_and_start,
    _send,
    _serve,
    _watch,
    open_chromium,
)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


def _open_second_tab(context, page):
    other = context.new_page()
    other.goto(page.url)
    return other


def _stale_then_reload(page, shot=None):
    page.wait_for_selector("#stale:not([hidden])", timeout=TIMEOUT_MS)
    if shot is not None:
        page.screenshot(path=str(shot))
    assert "changed in another tab" in page.text_content("#stale")
    assert page.evaluate("document.activeElement.id") == "stale-reload"
    page.keyboard.press("Enter")  # Reload, by keyboard
    page.wait_for_load_state("load")
    page.wait_for_function("document.querySelectorAll('#transcript .msg').length > 0")
    assert page.is_hidden("#stale")


@pytest.mark.parametrize("width", [1280, 375])
def test_a_pick_and_a_message_from_another_tab_are_said_and_reloaded(tmp_path, browser, width):
    with _serve(tmp_path) as (base, _storage, token, _app):
        context = browser.new_context(viewport={"width": width, "height": 800})
        first = context.new_page()
        seen = _watch(first)
        _login_and_start(first, base, token, "Ask about tea")
        _send(first, "How long should green tea steep?")
        first.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
        second = _open_second_tab(context, first)
        second_seen = _watch(second)
        second.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)

        # tab 1 picks; tab 2, still showing the open scale, picks too: told, not "Reloading…"
        first.keyboard.press("2")
        first.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)
        second.click('#scale .point[data-key="7"]')
        _stale_then_reload(second)
        assert second.locator("#transcript .msg.assistant").count() == 1
        assert "(A3)" in second.text_content("#transcript .msg.assistant .who")

        # tab 1 sends the next message; tab 2's own message is refused and says why
        _send(first, "And black tea?")
        first.wait_for_selector("#compare:not([hidden])", timeout=TIMEOUT_MS)
        second.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)
        second.fill("#message", "What about oolong?")
        second.press("#message", "Enter")
        _stale_then_reload(second, tmp_path / f"stale-{width}.png")
        if os.environ.get("HH_SCREENSHOTS"):
            shutil.copy(tmp_path / f"stale-{width}.png", os.environ["HH_SCREENSHOTS"])
        assert "pick a response first" not in second.text_content("#send-status")
        assert second.locator("#transcript .msg.human").count() == 2
        assert second.input_value("#message") == "What about oolong?"  # kept through the reload
        for s in (seen, second_seen):
            assert s["dialogs"] == [] and s["errors"] == []
        context.close()
