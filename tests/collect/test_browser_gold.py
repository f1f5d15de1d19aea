"""Gold, qualification and feedback in a real browser: /feedback and /admin/quality with
content (axe clean, nothing sideways at 375 px, hostile text inert), the admin's Reset button,
and a review page for a gold item built exactly like one for a collected comparison."""

from __future__ import annotations

import random
from contextlib import ExitStack
from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from test_browser import TIMEOUT_MS, open_chromium, serve_app  # noqa: E402
from test_gold import hh, write  # noqa: E402
from test_qualification import answer_gold  # noqa: E402
from test_review import PTS, conversation  # noqa: E402

from axe import need_axe, serious_violations  # noqa: E402
from hhrlhf.collect.services import annotators  # noqa: E402
from hhrlhf.collect.services.gold import import_gold, read_gold  # noqa: E402
from hhrlhf.collect.services.review import next_review, submit_review  # noqa: E402

pytestmark = pytest.mark.browser

HOSTILE = '<script>window.hhPwned = 1</script><img src=x onerror="window.hhPwned = 2">'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(base URL, tokens by name, storage, the gold items' right answers)."""
    from hhrlhf.collect.config import demo_settings

    def make(url):
        return replace(
            demo_settings(url),
            review_fraction=1.0,
            gold_fraction=0.0,
            qualification_reviews=2,
            qualification_threshold=0.5,
        )

    with ExitStack() as stack:
        tmp = tmp_path_factory.mktemp("gold")
        base, storage, robin_token, _app, _settings = stack.enter_context(serve_app(tmp, make))
        lines = [
            hh(
                [f"How do I keep herb {i} alive? {HOSTILE}"],
                f"Water it, herb {i}. {HOSTILE}",
                f"No idea {i}.",
            )
            for i in range(12)
        ]
        items = read_gold(write(tmp / "gold.jsonl", lines))
        import_gold(storage, items)
        right = {g.chosen for g in items}
        tokens = {"robin": robin_token}
        people = {}
        for name, role in (
            ("root", "admin"),
            ("alice", "annotator"),
            ("ben", "annotator"),
            ("dana", "annotator"),
        ):
            people[name], tokens[name] = annotators.add_annotator(storage, name, role=role)
        people["robin"] = annotators.annotator_by_name(storage, "robin")
        rng = random.Random(4)
        answer_gold(storage, people["robin"], right, [True, False], rng)  # passed, one miss
        answer_gold(storage, people["alice"], right, [True, True], rng)
        answer_gold(storage, people["ben"], right, [False, False], rng)  # failed
        answer_gold(storage, people["dana"], right, [True, True], rng)
        conversation(storage, people["robin"], [("a", 3)])
        task = next_review(storage, people["alice"], 1.0, rng=rng)
        other = next(c.slot for c in task.candidates if c.text == "Answer B0.")
        submit_review(storage, people["alice"], task.id, other, 4, PTS)  # disagrees with robin
        yield base, tokens, storage, people, right


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


def open_as(site, browser, name, path, *, width=1280):
    base, tokens, *_ = site
    ctx = browser.new_context(viewport={"width": width, "height": 800}, bypass_csp=True)
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    browser_login(page, base, tokens[name])
    page.goto(base + path)
    return page


@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize(("who", "path"), [("robin", "/feedback"), ("root", "/admin/quality")])
def test_pages_are_accessible_fit_a_phone_and_run_nothing(site, browser, who, path, width):
    need_axe()
    page = open_as(site, browser, who, path, width=width)
    try:
        found = serious_violations(page)
        assert not found, "\n".join(found)
        assert page.evaluate("() => document.scrollingElement.scrollWidth") <= width
        assert page.evaluate("() => window.hhPwned") is None
    finally:
        page.context.close()


def test_feedback_shows_the_miss_the_disagreement_and_the_status(site, browser):
    page = open_as(site, browser, "robin", "/feedback")
    try:
        assert "passed (1 of 2 right)" in page.inner_text("#qualification-status")
        miss = page.locator("#gold-misses .feedback-item")
        assert miss.count() == 1
        assert "your pick" in miss.inner_text() and "known better" in miss.inner_text()
        assert "<script>" in miss.inner_text()  # hostile text shown as text
        dis = page.locator("#disagreements .feedback-item")
        assert dis.count() == 1 and "a reviewer: 4/" in dis.inner_text()
        assert "alice" not in page.inner_text("main")
        page.goto(page.url.replace("/feedback", "/"))
        page.click("#feedback-link a")
        page.wait_for_selector("#gold-misses")
    finally:
        page.context.close()


def test_the_admin_resets_a_failed_annotator(site, browser):
    page = open_as(site, browser, "root", "/admin/quality")
    try:
        row = page.locator('#qualification-table tr[data-name="ben"]')
        assert row.get_attribute("data-status") == "failed"
        row.locator(".qualification-reset").click()
        page.wait_for_selector('#qualification-table tr[data-name="ben"][data-status="waiting"]')
        assert page.locator('tr[data-name="robin"]').get_attribute("data-status") == "passed"
    finally:
        page.context.close()


STRUCTURE = """() => Array.from(document.querySelectorAll('main *')).map(
    (e) => [e.tagName, e.id, e.className, e.getAttribute('aria-label') || ''].join('|'))"""


def test_a_gold_review_page_is_built_like_a_real_one(site, browser):
    base, _tokens, storage, people, right = site
    dana = people["dana"]
    looks = {}
    for kind, fraction in (("gold", 1.0), ("real", 0.0)):
        task = next_review(storage, dana, 1.0, rng=random.Random(1), gold_fraction=fraction)
        assert any(c.text in right for c in task.candidates) == (kind == "gold")
        page = open_as(site, browser, "dana", "/review")
        try:
            page.wait_for_selector("#review .candidate")
            if kind == "gold":
                need_axe()
                assert not serious_violations(page)
            looks[kind] = page.evaluate(STRUCTURE)
            assert page.evaluate("() => window.hhPwned") is None
        finally:
            page.context.close()
        submit_review(storage, dana, task.id, "a", 2, PTS)
    assert looks["gold"] == looks["real"]
