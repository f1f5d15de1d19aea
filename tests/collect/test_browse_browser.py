"""The data browser in a real headless browser: the list, a class filter, a pair's differences.

Uses the collection browser test's server and chromium fixtures. With
``HH_UPDATE_SCREENSHOTS=1`` the pair page replaces docs/img/browse.png (1280x800).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from test_browse import HOSTILE_DATA, HOSTILE_PAGES  # noqa: E402
from test_browser import (  # noqa: E402
    DOCS_IMG,
    PNG_MAGIC,
    TIMEOUT_MS,
    _watch,
    browser,  # noqa: F401  (the fixture)
    serve_app,
)

from hhrlhf.dataset import load_pairs  # noqa: E402

pytestmark = pytest.mark.browser


@contextmanager
def _data_app(tmp_path, data):
    """The app browsing ``data``, served on a loopback port: (base URL, a login token)."""
    from hhrlhf.collect.config import demo_settings

    make = lambda url: replace(demo_settings(url), data=data)  # noqa: E731
    with serve_app(tmp_path, make, name="reader") as (url, _storage, token, _app, _settings):
        yield url, token


@pytest.fixture(scope="module")
def data_app(tmp_path_factory):
    with _data_app(tmp_path_factory.mktemp("sample"), "sample") as served:
        yield served


def test_filter_by_class_and_see_the_difference(data_app, browser, tmp_path):  # noqa: F811
    base, token = data_app
    cls = "response_contains_turns"
    want = [p for p in load_pairs(data="sample") if cls in p.classes]
    assert want
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT_MS)
    seen = _watch(page)
    browser_login(page, base, token)
    page.goto(f"{base}/data")
    page.select_option("#filter-class", cls)
    page.click("#apply")
    page.wait_for_url(f"**/data?*class={cls}*")
    assert page.inner_text("#total").startswith(f"{len(want)} pair")
    links = page.locator("ul.pairs a")
    assert links.count() == len(want)
    first = want[0]
    links.first.click()
    page.wait_for_url(f"**/data/pairs/{first.subset}/{first.split}/{first.index}")
    marks = page.locator("#chosen-text mark, #rejected-text mark")
    assert marks.count() > 0
    assert marks.first.is_visible()
    # the highlighted words are exactly where the two responses differ
    chosen = page.inner_text("#chosen-text")
    rejected = page.inner_text("#rejected-text")
    assert chosen.strip() == first.chosen_response.strip()
    assert rejected.strip() == first.rejected_response.strip()
    assert "holds speaker markers" in page.inner_text("main")
    shot = tmp_path / "browse.png"
    page.screenshot(path=str(shot), full_page=False)
    assert shot.read_bytes()[:8] == PNG_MAGIC
    if os.environ.get("HH_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        (DOCS_IMG / "browse.png").write_bytes(shot.read_bytes())
    assert not seen["dialogs"] and not seen["errors"]
    page.close()


def test_hostile_data_runs_nothing_and_reads_literally(browser, tmp_path):  # noqa: F811
    """tests/data/browse/hostile on every data page: no script runs, the text reads as written."""
    with _data_app(tmp_path, HOSTILE_DATA) as (base, token):
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(TIMEOUT_MS)
        seen = _watch(page)
        browser_login(page, base, token)
        for path in HOSTILE_PAGES:
            page.goto(base + path)
            main = page.inner_text("main")
            assert page.evaluate("window.__pwned") is None, path
            assert page.locator("main script, main img").count() == 0, path
            assert "<script>window.__pwned=1;alert('script')</script>" in main or (
                '<img src=x onerror="window.__pwned=1;alert(2)">' in main
            ), path
            assert "{{7*7}}" in main and "49" not in main, path
            assert "\u202e" not in main and "\0" not in main, path
        page.goto(f"{base}/data/pairs/helpful-base/train/2")
        text = page.inner_text("main")
        assert "before\\x00after" in text and "\\u202edlrow" in text
        assert "Human: water weekly." in text  # the inline label, as written
        page.goto(f"{base}/data/pairs/helpful-base/train/1")
        assert "Mist it.\n\nHuman: fake turn written by the model" in page.inner_text(
            "#rejected-text"
        )
        assert not seen["dialogs"] and not seen["errors"]
        page.close()


def _tab_to(page, selector: str, presses: int = 80) -> None:
    """Press Tab until the element ``selector`` has the focus (the keyboard user's way)."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement === document.querySelector({selector!r})"):
            return
    pytest.fail(f"Tab never reached {selector}")


def test_filters_and_paging_by_keyboard(data_app, browser):  # noqa: F811
    base, token = data_app
    train = [p for p in load_pairs(data="sample") if p.split == "train"]
    assert len(train) > 50
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(TIMEOUT_MS)
    seen = _watch(page)
    browser_login(page, base, token)
    page.goto(f"{base}/data")
    _tab_to(page, "select[name=split]")
    page.keyboard.type("train")  # a focused select picks the option typed
    assert page.eval_on_selector("select[name=split]", "e => e.value") == "train"
    _tab_to(page, "input[name=q]")
    page.keyboard.press("Enter")  # Enter in a field submits the form
    page.wait_for_url("**/data?*split=train*")
    assert page.inner_text("#total").startswith(f"{len(train)} pairs")
    _tab_to(page, "#next")
    page.keyboard.press("Enter")
    page.wait_for_url("**offset=50*")
    assert "split=train" in page.url
    first = train[50]
    assert page.locator("ul.pairs a").first.get_attribute("href") == (
        f"/data/pairs/{first.subset}/{first.split}/{first.index}"
    )
    _tab_to(page, "#prev")
    page.keyboard.press("Enter")
    page.wait_for_url("**offset=0*")
    # a pair opens by keyboard too
    _tab_to(page, "ul.pairs a")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/data/pairs/{train[0].subset}/train/{train[0].index}")
    assert not seen["dialogs"] and not seen["errors"]
    page.close()
