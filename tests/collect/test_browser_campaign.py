"""The campaign's pages in a real headless browser: the annotator's home shows their progress
toward their target and their next task, and Start opens it; the admin's /admin/campaign
shows the campaign's progress and adds a task and switches free conversations off through
its forms. axe-core finds no serious violation; nothing scrolls sideways at 375 px."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from test_browser import TIMEOUT_MS, open_chromium, serve_app  # noqa: E402
from test_review import conversation  # noqa: E402

from axe import need_axe, serious_violations  # noqa: E402
from hhrlhf.collect.services import annotators, campaign, tasks  # noqa: E402
from hhrlhf.collect.services.campaign import CampaignTotal, Targets  # noqa: E402

pytestmark = pytest.mark.browser

#: a task text with markup: it shows as text
TASK = "Plan a <b>garden</b> for a small balcony"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(base URL, the annotator's token, the admin's token, storage)."""
    from hhrlhf.collect.config import demo_settings

    tmp = tmp_path_factory.mktemp("campaign")
    make = lambda url: replace(demo_settings(url), seed=3)  # noqa: E731
    with serve_app(tmp, make, name="alice") as (base, storage, token, _app, _settings):
        alice = annotators.annotator_by_name(storage, "alice")
        _, root_token = annotators.add_annotator(storage, "root", role="admin")
        conversation(storage, alice, [("a", 3)])  # one turn toward her target
        tasks.add_task(storage, TASK, "helpful", 2, ["home", "plants"])
        tasks.add_task(storage, "Ask for a lock-picking guide", "red-team", 1)
        campaign.set_targets(storage, "root", Targets("turns", per_day=4, total=40))
        campaign.set_campaign_total(storage, "root", CampaignTotal("turns", 2000))
        yield base, token, root_token, storage


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


def _page(site, browser, token, path, *, width=1280):
    base = site[0]
    ctx = browser.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    browser_login(page, base, token)
    page.goto(base + path)
    return page


def _clean(page) -> None:
    need_axe()
    found = serious_violations(page)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("width", [1280, 375])
def test_home_shows_progress_and_the_next_task_accessibly(site, browser, width):
    _base, token, _root, _storage = site
    page = _page(site, browser, token, "/", width=width)
    try:
        bar = page.locator("#target-day-bar")
        assert bar.get_attribute("max") == "4" and bar.get_attribute("value") == "1"
        assert page.get_by_label("Today: 1 of 4 turns").count() == 1
        assert page.get_by_label("In all: 1 of 40 turns").count() == 1
        assert page.locator("#next-task").inner_text().endswith(f"Your next task: {TASK}")
        assert page.locator("#next-task b").count() == 0  # the markup is text
        assert page.locator("#new-conversation").count() == 1  # free conversations allowed
        assert page.locator("h1").all_inner_texts() == ["Your work"]
        _clean(page)
        assert page.evaluate("() => document.scrollingElement.scrollWidth") <= width
    finally:
        page.context.close()


def test_start_opens_the_next_task_and_the_admin_page_manages_the_campaign(site, browser):
    base, token, root_token, storage = site
    page = _page(site, browser, token, "/")
    try:
        with page.expect_navigation():
            page.get_by_role("button", name="Start this task").click()
        assert "/conversations/" in page.url
        page.wait_for_selector("#conversation")
        assert TASK in page.content().replace("&lt;", "<").replace("&gt;", ">")
        served = {t.text: t.served for t in tasks.list_tasks(storage)}
        assert served[TASK] == 1
    finally:
        page.context.close()
    admin = _page(site, browser, root_token, "/admin/campaign")
    try:
        assert admin.get_by_label("Campaign total: 1 of 2,000 turns").count() == 1
        row = admin.locator("#campaign-annotators tr[data-name=alice]")
        assert "1 / 4" in row.inner_text()
        assert "1 / 2" in admin.locator("#tasks tbody tr").first.inner_text()
        _clean(admin)
        admin.fill("#task-text", "Ask about tides")
        admin.fill("#task-tags", "sea; water")
        with admin.expect_navigation():
            admin.get_by_role("button", name="Add task").click()
        admin.wait_for_selector("#tasks tr:has-text('Ask about tides')")
        added = [t for t in tasks.list_tasks(storage) if t.text == "Ask about tides"]
        assert added and added[0].tags == ("sea", "water")
        admin.uncheck("#free-conversations")
        with admin.expect_navigation():
            admin.locator("#free-form button").click()
        assert not campaign.campaign(storage).free_conversations
        assert campaign.campaign(storage).changed["free_conversations"][0] == "root"
    finally:
        admin.context.close()
    page = _page(site, browser, token, "/", width=375)
    try:  # free conversations off: no form of one's own, the next task still offered
        assert page.locator("#new-conversation").count() == 0
        assert page.locator("#start-task").count() == 1
        assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 375
    finally:
        page.context.close()
    admin = _page(site, browser, root_token, "/admin/campaign", width=375)
    try:
        _clean(admin)
        assert admin.evaluate("() => document.scrollingElement.scrollWidth") <= 375
    finally:
        admin.context.close()
