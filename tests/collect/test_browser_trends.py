"""``/admin/annotators`` in a real headless browser: axe-core finds no serious violation (light
and dark, wide and 375 px), the page does not scroll sideways on a phone (the table scrolls in
its own region), every plot has its numbers in words, and a flag is text, not a colour."""

from __future__ import annotations

from contextlib import ExitStack
from datetime import timedelta

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from test_browser import TIMEOUT_MS, open_chromium, serve_app  # noqa: E402
from trends_rows import plant  # noqa: E402

from axe import need_axe, serious_violations  # noqa: E402
from hhrlhf.collect.domain import now  # noqa: E402
from hhrlhf.collect.services import annotators  # noqa: E402

pytestmark = pytest.mark.browser

#: a long name without spaces: the table must still not widen the page
LONG = "annotator-with-a-very-long-name-" * 3


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(base URL, the admin's login token): three weeks of picks by four annotators, one of
    them too fast to read this week."""
    from hhrlhf.collect.config import demo_settings

    with ExitStack() as stack:
        tmp = tmp_path_factory.mktemp("trends")
        base, storage, _token, _app, _settings = stack.enter_context(serve_app(tmp, demo_settings))
        _, root_token = annotators.add_annotator(storage, "root", role="admin")
        midnight = now().replace(hour=0, minute=0, second=0, microsecond=0)
        for i, name in enumerate(("alice", "bob", LONG, "<b>dana</b>")):
            who, _ = annotators.add_annotator(storage, name)
            for back in (2, 1, 0):
                at = midnight - timedelta(weeks=back)
                fast = name == "alice" and back == 0
                read = [1.0 if fast else 40.0] * 20
                plant(storage, who.id, at, [15.0 + i] * 20, picks="ab" * 10, read=read)
        yield base, root_token


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


def _open(browser, site, *, width=1280, scheme="light"):
    base, token = site
    ctx = browser.new_context(
        viewport={"width": width, "height": 800}, color_scheme=scheme, bypass_csp=True
    )
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    browser_login(page, base, token)
    page.goto(base + "/admin/annotators")
    return page


@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_no_serious_violation(site, browser, scheme, width):
    need_axe()
    page = _open(browser, site, width=width, scheme=scheme)
    try:
        page.click("#trends tr[data-name='alice'] details summary")  # the numbers open too
        found = serious_violations(page)
        assert not found, "\n".join(found)
    finally:
        page.context.close()


def test_a_phone_scrolls_the_table_not_the_page(site, browser):
    page = _open(browser, site, width=375)
    try:
        assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 375
        wrap = page.locator(".table-wrap")
        assert wrap.evaluate("e => e.scrollWidth > e.clientWidth")  # the table scrolls inside
        assert wrap.get_attribute("role") == "region" and wrap.get_attribute("tabindex") == "0"
    finally:
        page.context.close()


def test_each_plot_says_its_numbers_and_a_flag_is_text(site, browser):
    page = _open(browser, site)
    try:
        row = page.locator("#trends tr[data-name='alice']")
        plots = row.locator("svg.spark")
        assert plots.count() == 6
        for i in range(6):
            svg = plots.nth(i)
            label = svg.get_attribute("aria-label")
            assert svg.get_attribute("role") == "img"
            assert svg.locator("title").text_content() == label
            assert label.count("-W") == 8  # every week, in words
        share = row.locator("td[data-metric='share_a'] svg").get_attribute("aria-label")
        assert share.startswith("A-share by week: ") and share.endswith(" 50%")
        drift = row.locator("td.drift")
        assert "too fast" in drift.locator(".badge").inner_text()
        assert "100% of picks faster than the text can be read in " in drift.inner_text()
        assert page.locator("#trends tr[data-name='bob'] td.drift").inner_text().strip() == "none"
        numbers = row.locator("details table")
        assert not numbers.is_visible()
        row.locator("details summary").click()
        assert numbers.is_visible() and numbers.locator("tbody tr").count() == 8
        assert (
            page.locator("#trends tr[data-name='<b>dana</b>'] > th").inner_text() == "<b>dana</b>"
        )
    finally:
        page.context.close()
