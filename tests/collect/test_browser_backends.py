"""The Backends page's live draw in a real browser: an admin pauses a backend by keyboard,
sets another's weight through the form, sees the state and the change log; axe finds no
serious violation and nothing scrolls sideways on a phone (375 px)."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from test_browser import TIMEOUT_MS, _watch, open_chromium, serve_app  # noqa: E402

from axe import serious_violations  # noqa: E402
from hhrlhf.collect.services import annotators, backend_live  # noqa: E402
from hhrlhf.collect.web.context import app_context  # noqa: E402

pytestmark = pytest.mark.browser


def _reloaded(page, action) -> None:
    with page.expect_navigation(timeout=TIMEOUT_MS):
        action()
    page.wait_for_selector("#live", timeout=TIMEOUT_MS)


@pytest.mark.parametrize("width", [1280, 375])
def test_an_admin_pauses_by_keyboard_and_reweights_by_form(tmp_path, width):
    from hhrlhf.collect.config import demo_settings

    def make(url):
        return replace(demo_settings(url), backend_refresh_seconds=0.2)

    with serve_app(tmp_path, make) as (base, storage, _, app, settings):
        _, token = annotators.add_annotator(storage, "<i>root</i>", role="admin")
        with open_chromium() as browser:
            ctx = browser.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
            page = ctx.new_page()
            seen = _watch(page)
            browser_login(page, base, token)
            page.goto(f"{base}/admin/backends")
            page.wait_for_selector("#live", timeout=TIMEOUT_MS)
            assert page.text_content("#backend-events").strip() == (
                "No backend has been paused or re-weighted."
            )
            # pause by keyboard: focus the button, press Enter
            page.focus('.backend-action[data-name="demo-a"]')
            _reloaded(page, lambda: page.keyboard.press("Enter"))
            assert page.text_content("#backend-status") == "demo-a is paused."
            row = page.locator('.live-backend[data-name="demo-a"]')
            assert "paused" in row.locator(".badge").text_content()
            assert row.locator(".backend-action").text_content().strip() == "Resume demo-a"
            assert app_context(app).rules.backends == ("demo-b",)
            # a weight of 0 is refused on the page, nothing sent
            form = page.locator('.backend-weight[data-name="demo-b"]')
            form.get_by_label("New weight for demo-b").fill("0")
            form.get_by_label("New weight for demo-b").press("Enter")
            page.wait_for_function(
                "() => document.querySelector('#backend-status').textContent.includes('above 0')"
            )
            # the weight form, sent with Enter from its labelled field
            form.get_by_label("New weight for demo-b").fill("0.5")
            _reloaded(page, lambda: form.get_by_label("New weight for demo-b").press("Enter"))
            assert page.text_content("#backend-status") == "demo-b's weight is now 0.5."
            weight = page.text_content('.live-backend[data-name="demo-b"] .live-weight')
            assert " ".join(weight.split()) == "weight 0.5 (config 1)"
            log = page.locator("#backend-events li").all_text_contents()
            assert [e.split(" at ")[0] for e in log] == ["demo-b weight 1 -> 0.5", "demo-a paused"]
            assert all(e.endswith(" by <i>root</i>") for e in log)  # as text, not markup
            # the last drawable backend: refused, said on the page
            page.focus('.backend-action[data-name="demo-b"]')
            page.keyboard.press("Enter")
            page.wait_for_function(
                "() => document.querySelector('#backend-status').textContent.includes('cannot')"
            )
            assert "new conversations would have no backend left" in page.text_content(
                "#backend-status"
            )
            assert [s.paused for s in backend_live.backend_states(storage, settings)] == [
                True,
                False,
            ]
            assert serious_violations(page) == []
            if width == 375:
                assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 375
            assert seen["dialogs"] == [] and seen["errors"] == []
