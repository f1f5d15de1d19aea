"""The collected data's flags in a real browser: filter by flag class, read a pair's margin
and p_mislabelled; axe finds no serious violation and a phone never scrolls sideways."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from planted import planted  # noqa: E402
from test_browser import (  # noqa: E402
    TIMEOUT_MS,
    _watch,
    browser,  # noqa: F401  (the fixture)
    serve_app,
)

from axe import need_axe, serious_violations  # noqa: E402
from hhrlhf.collect.config import demo_settings  # noqa: E402
from hhrlhf.collect.services import annotators  # noqa: E402
from hhrlhf.collect.services.flags import store_flags  # noqa: E402

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def flagged_app(tmp_path_factory):
    with serve_app(tmp_path_factory.mktemp("flags"), demo_settings) as (url, storage, *_):
        _, ids, _ = planted(storage, n=10, flipped=(4,))
        row = {"margin": 2.0, "margin_sd": 0.1, "p_mislabelled": 0.05, "class": "clear"}
        rows = [{**row, "comparison_id": c} for c in ids]
        rows[4].update(margin=-1.25, p_mislabelled=0.875, **{"class": "likely_mislabelled"})
        store_flags(storage, rows)
        _, token = annotators.add_annotator(storage, "root", role="admin")
        yield url, token


def _page(browser, base, token, width, scheme="light"):  # noqa: F811
    ctx = browser.new_context(
        viewport={"width": width, "height": 800}, color_scheme=scheme, bypass_csp=True
    )
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    browser_login(page, base, token)
    return page


def test_filter_by_flag_and_read_the_margin(flagged_app, browser):  # noqa: F811
    base, token = flagged_app
    page = _page(browser, base, token, 1280)
    seen = _watch(page)
    page.goto(f"{base}/data?source=collected")
    page.select_option("#filter-flag", "likely_mislabelled")
    page.click("#apply")
    page.wait_for_url("**/data?*flag=likely_mislabelled*")
    assert page.inner_text("#total").startswith("1 pair")
    links = page.locator("ul.pairs a")
    assert links.count() == 1 and "likely_mislabelled" in links.first.inner_text()
    links.first.click()
    page.wait_for_url("**/data/pairs/**?source=collected")
    flag = page.inner_text("#flag")
    assert "likely_mislabelled" in flag
    assert "margin -1.250 (sd 0.100)" in flag and "p_mislabelled 0.875" in flag
    assert not seen["dialogs"] and not seen["errors"]
    page.context.close()


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 375])
def test_axe_clean_and_no_sideways_scroll(flagged_app, browser, width, scheme):  # noqa: F811
    need_axe()
    base, token = flagged_app
    page = _page(browser, base, token, width, scheme)
    page.goto(f"{base}/data?source=collected&flag=likely_mislabelled")
    pages = [page.url]
    page.locator("ul.pairs a").first.click()
    page.wait_for_url("**/data/pairs/**?source=collected")
    pages.append(page.url)
    for url in pages:
        page.goto(url)
        found = serious_violations(page)
        assert not found, "\n".join(found)
        assert page.evaluate("() => document.scrollingElement.scrollWidth") <= width, url
    page.context.close()
