"""The guidelines in a real browser: an admin previews and publishes them; an annotator held
back on the home page opens them with the key g, acknowledges by keyboard and can then start a
conversation. axe finds no serious violation and nothing scrolls sideways at 375 px."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from test_browser import TIMEOUT_MS, open_chromium, serve_app  # noqa: E402

from axe import need_axe, serious_violations  # noqa: E402
from hhrlhf.collect.services import annotators, guidelines  # noqa: E402

pytestmark = pytest.mark.browser

TEXT = (
    "# How we collect\n\n"
    "Ask what you would **really** ask.\n\n"
    "- one topic a conversation\n- several turns\n\n"
    "<script>window.hhPwned = 1</script>\n\n"
    "[click me](javascript:window.hhPwned=2)"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from hhrlhf.collect.config import demo_settings

    tmp = tmp_path_factory.mktemp("guidelines")
    with serve_app(tmp, lambda url: replace(demo_settings(url), seed=3)) as served:
        base, storage, annotator_token, _app, _settings = served
        _, admin_token = annotators.add_annotator(storage, "root", role="admin")
        yield base, storage, annotator_token, admin_token


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


def _page(browser, base, token, *, width=1280):
    ctx = browser.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    browser_login(page, base, token)
    return page


def _check(page, width):
    need_axe()
    found = serious_violations(page)
    assert not found, "\n".join(found)
    if width == 375:
        assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 375


def test_admin_previews_and_publishes_then_annotator_acknowledges_by_keyboard(site, browser):
    base, storage, annotator_token, admin_token = site
    admin = _page(browser, base, admin_token)
    try:
        admin.goto(base + "/admin")
        admin.click("#guidelines-admin-link")
        admin.wait_for_selector("#no-versions")
        _check(admin, 1280)
        admin.fill("#guidelines-source", TEXT)
        admin.click("#guidelines-preview-button")
        admin.wait_for_selector("#guidelines-preview-card:not([hidden])")
        preview = admin.locator("#guidelines-preview")
        assert preview.locator("h1").inner_text() == "How we collect"
        assert preview.locator("strong").inner_text() == "really"
        assert preview.locator("script").count() == 0
        assert preview.locator("a[href^='javascript']").count() == 0
        assert admin.evaluate("() => window.hhPwned") is None
        assert guidelines.versions(storage) == []  # a preview publishes nothing
        _check(admin, 1280)
        admin.check("#guidelines-important")
        with admin.expect_navigation():
            admin.click("#guidelines-publish")
        admin.wait_for_selector("#guidelines-versions")
        assert "Version 1 is published" in admin.inner_text("#guidelines-status")
        row = admin.locator("#guidelines-versions tbody tr").first.inner_text()
        assert "root" in row and "yes" in row
        _check(admin, 1280)
    finally:
        admin.context.close()

    page = _page(browser, base, annotator_token)
    try:
        page.goto(base + "/")
        page.wait_for_selector("#guidelines-banner")
        assert page.locator("#new-conversation button[type=submit]").is_disabled()
        assert "acknowledge the guidelines" in page.inner_text("#start-refused")
        _check(page, 1280)
        with page.expect_navigation():
            page.keyboard.press("g")  # key g, from anywhere outside a text field
        assert page.url == base + "/guidelines"
        assert page.locator("#guidelines-text strong").inner_text() == "really"
        assert page.locator("#guidelines-text script").count() == 0
        assert page.evaluate("() => window.hhPwned") is None
        _check(page, 1280)
        # by keyboard alone: Tab to the button, Enter
        for _ in range(30):
            page.keyboard.press("Tab")
            if page.evaluate("() => document.activeElement.id") == "acknowledge-button":
                break
        else:
            pytest.fail("the acknowledge button is not reachable by Tab")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert page.url == base + "/"
        assert page.locator("#guidelines-banner").count() == 0
        page.fill("#task", "Plan a vegetable garden")
        with page.expect_navigation():
            page.click("#new-conversation button[type=submit]")
        assert "/conversations/" in page.url
        page.wait_for_selector("#message")
        page.locator("#message").blur()  # it starts focused, ready for a message
        page.keyboard.press("?")  # the page's key list names g
        assert "g" in page.locator("#keys-help dt").all_inner_texts()
        page.keyboard.press("g")  # nothing behind the open list
        assert "/conversations/" in page.url
        page.keyboard.press("Escape")
        page.locator("#message").focus()
        page.keyboard.type("go")  # typed into the message box, not a key for the page
        assert page.input_value("#message") == "go" and "/conversations/" in page.url
        page.locator("#message").blur()
        with page.expect_navigation():
            page.keyboard.press("g")
        assert page.url == base + "/guidelines"
        assert page.locator("#guidelines-home").count() == 1  # nothing left to acknowledge
    finally:
        page.context.close()


@pytest.mark.parametrize("path", ["/guidelines", "/admin/guidelines", "/"])
def test_the_pages_on_a_phone(site, browser, path):
    """As a newcomer who has not read them (the banner, the refusal, the button) and as the
    admin (the editor), with a long unbroken word in the text."""
    base, storage, _annotator_token, admin_token = site
    root = annotators.annotator_by_name(storage, "root")
    guidelines.publish(storage, root, TEXT + "\n\n" + "a-very-long-word" * 20)
    _, newcomer = annotators.add_annotator(storage, f"newcomer{path.count('/')}{len(path)}")
    page = _page(browser, base, admin_token if "admin" in path else newcomer, width=375)
    try:
        page.goto(base + path)
        if path == "/":
            page.wait_for_selector("#guidelines-banner")
        elif path == "/guidelines":
            page.wait_for_selector("#acknowledge-button")
        _check(page, 375)
    finally:
        page.context.close()
