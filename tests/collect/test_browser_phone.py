"""The conversation page on a 375x812 phone, in a real headless browser: the sticky red-team
bar and the sticky scale are thin bars, the scale shows only once both responses are complete,
nothing sticky covers Retry or an error, and nothing scrolls sideways.

Screenshots go to the test's temp folder (``HH_SCREENSHOTS=DIR`` copies them there)."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from openai_server import Script, openai_backend, serve  # noqa: E402
from test_browser import TIMEOUT_MS, open_chromium, serve_app  # noqa: E402

pytestmark = pytest.mark.browser

PHONE = {"width": 375, "height": 812}
LONG_REPLY = " ".join(["Green tea wants water below the boil and a short steep."] * 40)


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


def _box(page, selector: str) -> dict:
    return page.eval_on_selector(
        selector,
        "e => { const r = e.getBoundingClientRect();"
        " return {top: r.top, bottom: r.bottom, left: r.left, right: r.right, height: r.height}; }",
    )


def _overlap(a: dict, b: dict) -> bool:
    return a["top"] < b["bottom"] and b["top"] < a["bottom"]


def _no_sideways_scroll(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width} px wide"


def _shot(page, tmp_path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path))
    if os.environ.get("HH_SCREENSHOTS"):
        shutil.copy(path, os.environ["HH_SCREENSHOTS"])


def _start(page, base: str, token: str, mode: str) -> None:
    browser_login(page, base, token)
    page.wait_for_selector("#new-conversation")
    page.check(f'input[name="mode"][value="{mode}"]')
    page.fill("#task", "Ask about tea")
    page.click("#new-conversation button[type=submit]")
    page.wait_for_url("**/conversations/*", timeout=TIMEOUT_MS)
    page.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)


def _send(page, text: str = "How long should green tea steep?") -> None:
    page.fill("#message", text)
    page.press("#message", "Enter")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_red_team_bar_and_the_scale_are_thin_on_a_phone(tmp_path, browser, scheme):
    server = serve(Script(replies=[LONG_REPLY, LONG_REPLY + " Or not."], chunk_delay=0.01))

    def make(url):
        from hhrlhf.collect.config import demo_settings

        backend = openai_backend("scripted", "openai-chat", server.base_url)
        return replace(demo_settings(url), backends=(backend,), demo=False)

    try:
        with serve_app(tmp_path, make) as (base, _, token, _, _):
            context = browser.new_context(viewport=PHONE, color_scheme=scheme)
            page = context.new_page()
            _start(page, base, token, "red-team")
            bar = _box(page, "#redteam-bar")
            assert bar["height"] <= 56, bar  # one line, not ~185 px
            assert page.is_visible("#redteam-note")  # the warning, read once in the page
            assert page.is_visible("#stop")
            _send(page)
            # while the responses are written, no sticky scale: no point is shown
            page.wait_for_selector("#generating:not([hidden])", timeout=TIMEOUT_MS)
            assert not page.is_visible("#scale .point")
            page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
            page.evaluate("window.scrollTo(0, 0)")
            page.mouse.wheel(0, 500)  # A's box is in view, under the bar, above the scale
            page.wait_for_timeout(200)
            scale = _box(page, "#scale")
            assert scale["height"] <= 90, scale  # one row of points, not ~215 px
            assert abs(scale["bottom"] - PHONE["height"]) <= 1, scale  # stuck to the bottom
            bar = _box(page, "#redteam-bar")
            assert bar["top"] >= 0 and bar["height"] <= 56
            assert page.is_visible("#scale .point[data-key='1']")
            room = PHONE["height"] - bar["height"] - scale["height"]
            assert room >= 0.75 * PHONE["height"], room
            _no_sideways_scroll(page)
            _shot(page, tmp_path, f"phone-redteam-{scheme}")
            context.close()
    finally:
        server.stop()


def test_nothing_sticky_covers_retry_on_a_phone(tmp_path, browser):
    server = serve(Script(fail=503, fail_message="The model `{model}` is down"))

    def make(url):
        from hhrlhf.collect.config import demo_settings

        backend = openai_backend("failing", "openai-chat", server.base_url)
        return replace(demo_settings(url), backends=(backend,), demo=False)

    try:
        with serve_app(tmp_path, make) as (base, _, token, _, _):
            context = browser.new_context(viewport=PHONE)
            page = context.new_page()
            _start(page, base, token, "red-team")
            _send(page)
            page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
            page.wait_for_timeout(200)
            retry, bar = _box(page, "#retry"), _box(page, "#redteam-bar")
            # the error was brought into view, clear of the bar and of the window's edge
            assert 0 <= retry["top"] and retry["bottom"] <= PHONE["height"], retry
            assert not _overlap(retry, bar)
            # a scroll that brings the error to the top keeps it below the bar
            page.eval_on_selector("#turn-error", "e => e.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(200)
            error, bar = _box(page, "#turn-error"), _box(page, "#redteam-bar")
            assert error["top"] >= bar["bottom"], (error, bar)
            # and by keyboard: focus on Retry brings it into view, uncovered
            page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            page.focus("#retry")
            retry, bar = _box(page, "#retry"), _box(page, "#redteam-bar")
            assert not _overlap(retry, bar) and retry["bottom"] <= PHONE["height"]
            assert not page.is_visible("#scale .point")
            _no_sideways_scroll(page)
            _shot(page, tmp_path, "phone-retry")
            context.close()
    finally:
        server.stop()


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_failed_side_and_edit_message_fit_a_phone_and_take_the_keyboard(
    tmp_path, browser, scheme
):
    """One side fails while the other is written (helpful mode: no sticky bar); in another
    conversation both fail: the failed side, its note, Retry and Edit message are on the 375 px page without a
    sideways scroll, reached by Tab in that order, each with a visible focus ring."""
    from test_browser_failures import _side

    from hhrlhf.collect.config import BackendConfig

    good = serve(Script(replies=[LONG_REPLY], chunk_delay=0))
    failing = serve(Script(fail=503, fail_message="model `secret-model` overloaded"))

    def make(url):
        from hhrlhf.collect.config import demo_settings

        backends = tuple(
            BackendConfig(name=n, kind="openai-chat", base_url=u, model="test-model")
            for n, u in (("m1", good.base_url), ("m2", failing.base_url))
        )
        return replace(demo_settings(url), backends=backends, pairing="fixed", demo=False)

    try:
        with serve_app(tmp_path, make) as (base, _, token, _, _):
            context = browser.new_context(viewport=PHONE, color_scheme=scheme)
            page = context.new_page()
            _start(page, base, token, "helpful")
            _send(page)
            page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
            assert _side(page, "b")["failed"] and _side(page, "a")["state"] == "complete"
            note = _box(page, '.candidate[data-slot="b"] [data-role="note"]')
            assert note["right"] <= PHONE["width"] and note["height"] > 0, note
            assert not page.is_visible("#withdraw")  # one response was written
            _no_sideways_scroll(page)
            _shot(page, tmp_path, f"phone-one-side-failed-{scheme}")
            context.close()
            # a conversation whose first message fails on both sides: Retry, Edit message
            good.script.fail, good.script.fail_message = 503, "down too"
            context = browser.new_context(viewport=PHONE, color_scheme=scheme)
            page = context.new_page()
            _start(page, base, token, "helpful")
            _send(page)
            page.wait_for_selector("#withdraw:not([hidden])", timeout=TIMEOUT_MS)
            assert page.text_content("#turn-error-text") == (
                "No response could be generated. Your message is kept: retry, or edit the message."
            )
            # the buttons under the words, each on one line (not squeezed beside them)
            words, retry = _box(page, "#turn-error-text"), _box(page, "#retry")
            assert retry["top"] >= words["bottom"], (words, retry)
            assert _box(page, "#withdraw")["height"] == retry["height"]
            page.focus("#retry")
            ring = page.eval_on_selector("#retry", "e => getComputedStyle(e).outlineStyle")
            assert ring != "none", ring
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.id") == "withdraw"
            ring = page.eval_on_selector("#withdraw", "e => getComputedStyle(e).outlineStyle")
            assert ring != "none", ring
            withdraw = _box(page, "#withdraw")
            assert withdraw["right"] <= PHONE["width"] and withdraw["bottom"] <= PHONE["height"]
            _no_sideways_scroll(page)
            _shot(page, tmp_path, f"phone-all-failed-{scheme}")
            page.keyboard.press("Enter")  # Edit message: the text is back in the box
            page.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)
            assert page.input_value("#message") == "How long should green tea steep?"
            _no_sideways_scroll(page)
            context.close()
    finally:
        good.stop()
        failing.stop()
