"""Review tasks and the admin pages in a real headless browser (one browser for the module).

An annotator reviews two finished comparisons (one by key, one by mouse) until nothing is left;
an admin sees the counts and agreement, disables the annotator, adds another, and opens the
leaderboard. Screenshots go to a temp folder; with ``HH_UPDATE_SCREENSHOTS=1`` they replace
docs/img/collect-review.png, collect-admin.png and collect-leaderboard.png.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace

import pytest
from logins import browser_login
from test_browser import DOCS_IMG, PNG_MAGIC, TIMEOUT_MS, _serve, _watch, open_chromium
from test_review import conversation

from hhrlhf.collect.services import annotators

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


def test_review_then_admin_pages(browser, tmp_path):
    with _serve(tmp_path) as (base, storage, token, app):
        app.state.context.settings = replace(app.state.context.settings, review_fraction=1.0)
        alice, _ = annotators.add_annotator(storage, "alice")
        conversation(storage, alice, [("a", 3), ("b", 2)], backends=("demo-1", "demo-2"))
        conversation(storage, alice, [("a", 4)], backends=("demo-2", "demo-1"))
        _, root_token = annotators.add_annotator(storage, "root", role="admin")

        # robin reviews until nothing is left: the first by key 1, the rest by mouse
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        seen = _watch(page)
        browser_login(page, base, token)
        page.click("a[href='/review']")
        page.wait_for_selector("#review .candidate", timeout=TIMEOUT_MS)
        assert page.locator(".candidate").count() == 2
        assert "Answer" in page.locator(".candidate .text").first.inner_text()
        shots = tmp_path / "shots"
        shots.mkdir()
        page.screenshot(path=str(shots / "collect-review.png"), full_page=True)
        page.wait_for_selector(".review-point:not([disabled])")  # A and B are in view
        with page.expect_navigation(timeout=TIMEOUT_MS):  # saved, then the next task loads
            page.keyboard.press("1")  # A4
        reviewed = 1
        while page.locator("#review").count():
            assert "Saved" in page.text_content("#review-last")
            with page.expect_navigation(timeout=TIMEOUT_MS):
                page.click(".review-point[data-key='6']")  # B2
            reviewed += 1
            assert reviewed <= 3
        page.wait_for_selector("#review-empty", timeout=TIMEOUT_MS)
        assert reviewed == 3
        from hhrlhf.collect.services.review import review_units

        got = sorted(u.ratings[1].strength for u in review_units(storage))
        assert got == [2, 2, 4]
        assert not page.locator("a[href='/admin']").count()  # not an admin
        ctx.close()

        # the admin
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        seen_admin = _watch(page)
        browser_login(page, base, root_token)
        page.click("a[href='/admin']")
        page.wait_for_selector("#annotators", timeout=TIMEOUT_MS)
        robin = page.locator("#annotators tr[data-name='robin']")
        cells = robin.locator("td").all_inner_texts()
        assert cells[6] == "3"  # reviews
        assert "3 reviewed comparisons, 6 ratings" in page.locator("#agreement").inner_text()
        page.screenshot(path=str(shots / "collect-admin.png"), full_page=True)
        robin.locator(".annotator-toggle").click()
        page.wait_for_selector("#annotators tr.disabled[data-name='robin']", timeout=TIMEOUT_MS)
        assert annotators.annotator_by_name(storage, "robin").disabled
        # the only admin stepping down is refused, with the reason on the page
        page.locator("#annotators tr[data-name='root'] .annotator-role").click()
        page.wait_for_selector("#annotator-status.error", timeout=TIMEOUT_MS)
        assert "is the last admin" in page.inner_text("#annotator-status")
        assert annotators.annotator_by_name(storage, "root").role == "admin"
        seen_admin["console"] = [c for c in seen_admin["console"] if "409" not in c]
        page.fill("#new-name", "sam")
        page.click("#add-annotator button[type=submit]")
        page.wait_for_selector("#new-token:not([hidden])", timeout=TIMEOUT_MS)
        assert "/login?token=" in page.locator("#new-token-link").inner_text()
        assert annotators.annotator_by_name(storage, "sam") is not None
        page.click("a[href='/admin/leaderboard']")
        page.wait_for_selector("#leaderboard", timeout=TIMEOUT_MS)
        names = page.locator("#leaderboard tbody td:nth-child(2)").all_inner_texts()
        assert sorted(names) == ["demo-1", "demo-2"]
        sentence = page.locator("#leaderboard-robustness").inner_text()
        assert "The top rank changes (to demo-1) if these 2 votes are removed" in sentence
        page.screenshot(path=str(shots / "collect-leaderboard.png"), full_page=True)
        ctx.close()

        for s in (seen, seen_admin):
            assert s["dialogs"] == [] and s["errors"] == [], s
            assert [c for c in s["console"] if "favicon" not in c] == [], s
        for name in ("collect-review.png", "collect-admin.png", "collect-leaderboard.png"):
            assert (shots / name).read_bytes().startswith(PNG_MAGIC)
            if os.environ.get("HH_UPDATE_SCREENSHOTS") == "1":
                shutil.copy(shots / name, DOCS_IMG / name)


def test_review_shows_the_task_and_progress_skips_and_warns_before_red_team(browser, tmp_path):
    with _serve(tmp_path) as (base, storage, token, app):
        app.state.context.settings = replace(app.state.context.settings, review_fraction=1.0)
        alice, _ = annotators.add_annotator(storage, "alice")
        conversation(storage, alice, [("a", 3)], backends=("demo-1", "demo-2"))
        conversation(storage, alice, [("b", 2)], mode="red-team", backends=("demo-1", "demo-2"))
        ctx = browser.new_context(viewport={"width": 1280, "height": 800})
        page = ctx.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        seen = _watch(page)
        browser_login(page, base, token)
        page.goto(base + "/review")
        assert page.text_content("#review-task") == "Garden questions"
        assert page.text_content("#review-progress").startswith("2 left")
        assert "0 done today" in page.text_content("#review-progress")
        assert page.locator("#content-warning").count() == 0
        with page.expect_navigation():
            page.keyboard.press("s")  # skip: the red-team one comes next
        assert "Skipped: the last review was put aside" in page.text_content("#review-last")
        # "left" counts the skipped one, and says so
        assert page.text_content("#review-progress").startswith(
            "2 left to review (this one included; 1 of them skipped"
        )
        # red-team: the warning first, nothing shown or answerable behind it
        assert page.locator("#content-warning").is_visible()
        assert page.locator("#review-content").is_hidden()
        page.keyboard.press("1")
        page.wait_for_timeout(300)
        assert page.text_content("#review-status") == ""
        page.click("#reveal")
        assert page.locator("#review-content").is_visible()
        assert page.locator("#content-warning").is_hidden()
        page.wait_for_selector(".review-point:not([disabled])")
        with page.expect_navigation():
            page.keyboard.press("1")
        # nothing new is left: the skipped one comes back
        assert page.text_content("#review-task") == "Garden questions"
        assert page.text_content("#review-progress").startswith("1 left")
        assert "1 done today" in page.text_content("#review-progress")
        with page.expect_navigation():
            page.click("#skip")  # skipped again: it is all there is, so it stays
        assert page.text_content("#review-last").startswith("Skipped")
        page.wait_for_selector(".review-point:not([disabled])")
        with page.expect_navigation():
            page.keyboard.press("8")
        page.wait_for_selector("#review-empty")
        assert seen["errors"] == [] and seen["dialogs"] == []
        ctx.close()


def test_the_review_scale_opens_once_a_and_b_have_been_in_view(browser, tmp_path):
    from test_review import make_turn

    from hhrlhf.collect.services import choices, conversations

    long_a = "\n\n".join(f"Answer A, point {i}: mulch keeps the soil moist." for i in range(40))
    long_b = "\n\n".join(f"Answer B, point {i}: water early in the day." for i in range(40))
    with _serve(tmp_path) as (base, storage, token, app):
        app.state.context.settings = replace(app.state.context.settings, review_fraction=1.0)
        alice, _ = annotators.add_annotator(storage, "alice")
        cid = conversations.create_conversation(storage, alice, "helpful", "Garden questions").id
        tid = make_turn(storage, alice, cid, "How do I keep tomatoes healthy?", long_a, long_b)
        choices.record_choice(storage, alice, tid, pick="a", strength=2, strength_points=4)
        conversations.finish_conversation(storage, alice, cid, None, None)
        ctx = browser.new_context(viewport={"width": 375, "height": 812})
        page = ctx.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        seen = _watch(page)
        browser_login(page, base, token)
        page.goto(base + "/review")
        # B is below the fold: the scale is closed, and a key says why
        assert page.locator(".review-point:not([disabled])").count() == 0
        assert "once both A and B have been in view" in page.text_content("#review-hint")
        page.keyboard.press("1")
        assert "Read A and B first" in page.text_content("#review-status")
        page.screenshot(path=str(tmp_path / "review-closed.png"), full_page=True)
        page.locator(".candidate").nth(0).scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        assert page.locator(".review-point:not([disabled])").count() == 0
        page.locator(".candidate").nth(1).scroll_into_view_if_needed()  # B seen: it opens
        page.wait_for_selector(".review-point:not([disabled])")
        assert page.locator(".review-point:not([disabled])").count() == 8
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        with page.expect_navigation():
            page.click(".review-point[data-key='3']")
        page.wait_for_selector("#review-empty")
        assert page.text_content("#review-last").startswith("Saved")
        assert seen["errors"] == [] and seen["dialogs"] == []
        ctx.close()
