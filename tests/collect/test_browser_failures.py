"""What the annotator's page shows when a model fails, is stopped or stays silent, in chromium
against a test server that streams slowly and one that fails at once."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from openai_server import Script, serve

pytest.importorskip("fastapi")

from hhrlhf.collect.config import BackendConfig  # noqa: E402

pytestmark = pytest.mark.browser

SLOW = "word " * 40  # 40 chunks, one every 0.1 s: 4 s
OTHER = "term " * 40  # the second request's reply (two texts: the scale opens)


@pytest.fixture
def slow_and_failing():
    slow = serve(Script(replies=[SLOW, OTHER], chunk_delay=0.1))
    failing = serve(Script(fail=503, fail_message="model `secret-model` overloaded"))
    yield slow, failing
    slow.stop()
    failing.stop()


def _settings(a_url: str, b_url: str):
    from hhrlhf.collect.config import demo_settings

    def make(db_url):
        backends = tuple(
            BackendConfig(name=n, kind="openai-chat", base_url=u, model="test-model")
            for n, u in (("m1", a_url), ("m2", b_url))
        )
        return replace(demo_settings(db_url), backends=backends, pairing="fixed")

    return make


def _side(page, slot: str) -> dict:
    panel = f'.candidate[data-slot="{slot}"]'
    return {
        "state": page.text_content(f'{panel} [data-role="state"]'),
        "elapsed": page.text_content(f'{panel} [data-role="elapsed"]'),
        "note": page.text_content(f'{panel} [data-role="note"]'),
        "failed": "failed" in (page.get_attribute(panel, "class") or ""),
    }


def test_a_side_that_fails_shows_at_once_and_the_same_after_a_reload(tmp_path, slow_and_failing):
    from test_browser import TIMEOUT_MS, _login_and_start, _watch, open_chromium, serve_app

    slow, failing = slow_and_failing
    make = _settings(slow.base_url, failing.base_url)
    with serve_app(tmp_path, make) as (base, _, token, _, _), open_chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        seen = _watch(page)
        _login_and_start(page, base, token, "Ask about tea")
        page.fill("#message", "How long should green tea steep?")
        page.press("#message", "Enter")
        page.wait_for_selector('.candidate[data-slot="b"].failed', timeout=TIMEOUT_MS)
        # B failed while A is still written: no clock on B, and A still streams
        assert page.text_content('.candidate[data-slot="a"] [data-role="state"]') == "writing…"
        live = _side(page, "b")
        assert live == {
            "state": "failed",
            "elapsed": "",
            "note": "Response B: the model could not answer. Retry.",
            "failed": True,
        }
        page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
        assert page.is_visible("#retry")
        assert _side(page, "a")["state"] == "complete"
        error = page.text_content("#turn-error")
        page.reload()
        page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
        assert _side(page, "b") == live  # the same words after the reload
        assert page.text_content("#turn-error") == error
        assert seen["dialogs"] == [] and seen["errors"] == []


def test_stop_keeps_the_text_so_far_and_the_scale_opens(tmp_path, slow_and_failing):
    from test_browser import TIMEOUT_MS, _login_and_start, _watch, open_chromium, serve_app

    slow, _ = slow_and_failing
    make = _settings(slow.base_url, slow.base_url)
    with serve_app(tmp_path, make) as (base, _, token, _, _), open_chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        seen = _watch(page)
        _login_and_start(page, base, token, "Ask about tea")
        page.fill("#message", "How long should green tea steep?")
        page.press("#message", "Enter")
        text_a = '.candidate[data-slot="a"] [data-role="text"]'
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while len(page.text_content(text_a) or "") < 20:  # (the page's CSP forbids eval)
            assert time.monotonic() < deadline, "no words written"
            page.wait_for_timeout(50)
        page.click("#halt")
        page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
        for slot in ("a", "b"):
            side = _side(page, slot)
            assert side["state"] == "complete" and not side["failed"]
            assert side["note"] == "Stopped: this is what it wrote before Stop."
            text = page.text_content(f'.candidate[data-slot="{slot}"] [data-role="text"]')
            assert 0 < len(text.strip()) < len(SLOW.strip())
        assert not page.is_visible("#turn-error")
        assert seen["dialogs"] == [] and seen["errors"] == []


def test_a_message_whose_every_response_failed_is_edited_and_sent_again(tmp_path):
    from test_browser import TIMEOUT_MS, _login_and_start, _watch, open_chromium, serve_app

    replies = ["Steep it briefly.", "Two minutes is enough."]
    failing = serve(Script(fail=400, fail_message="prompt too long", replies=replies))
    make = _settings(failing.base_url, failing.base_url)
    try:
        with serve_app(tmp_path, make) as (base, _, token, _, _), open_chromium() as browser:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            seen = _watch(page)
            _login_and_start(page, base, token, "Ask about tea")
            page.fill("#message", "A message the model refuses")
            page.press("#message", "Enter")
            page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
            assert page.is_visible("#retry") and page.is_visible("#withdraw")
            assert page.text_content("#withdraw") == "Edit message"
            assert page.locator("#composer").is_hidden()
            page.click("#withdraw")
            page.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)
            assert page.input_value("#message") == "A message the model refuses"
            assert page.locator(".msg.human").count() == 0
            assert page.locator("#compare").is_hidden()
            failing.script.fail = None
            page.fill("#message", "A shorter message")
            page.press("#message", "Enter")
            page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
            assert page.locator(".msg.human").all_text_contents()[0].endswith("A shorter message")
            page.reload()  # as stored: the withdrawn message is gone
            page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
            humans = page.locator(".msg.human").all_text_contents()
            assert len(humans) == 1 and "refuses" not in humans[0]
            assert seen["dialogs"] == [] and seen["errors"] == []
    finally:
        failing.stop()


def test_edit_message_is_not_offered_when_one_response_was_written(tmp_path, slow_and_failing):
    from test_browser import TIMEOUT_MS, _login_and_start, open_chromium, serve_app

    slow, failing = slow_and_failing
    slow.script.chunk_delay = 0
    make = _settings(slow.base_url, failing.base_url)
    with serve_app(tmp_path, make) as (base, _, token, _, _), open_chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        _login_and_start(page, base, token, "Ask about tea")
        page.fill("#message", "How long should green tea steep?")
        page.press("#message", "Enter")
        page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
        assert page.is_visible("#retry") and not page.is_visible("#withdraw")
