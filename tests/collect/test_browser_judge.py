"""The /judge page in a real headless browser, by keyboard only: a reviewer accepts, rejects
with a reason and fixes a label, skips one, and each verdict is stored; axe finds no serious
violation and nothing scrolls sideways at 375 px."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from sqlalchemy import select  # noqa: E402
from test_browser import TIMEOUT_MS, open_chromium, serve_app  # noqa: E402
from test_review import conversation  # noqa: E402

from axe import need_axe, serious_violations  # noqa: E402
from hhrlhf.collect.db.models import Verdict  # noqa: E402
from hhrlhf.collect.services import annotators  # noqa: E402

pytestmark = pytest.mark.browser


@pytest.fixture
def judged_site(tmp_path):
    from hhrlhf.collect.config import demo_settings

    def make(url):
        return replace(demo_settings(url), review_fraction=0.0)

    with serve_app(tmp_path, make) as (base, storage, _token, _app, _settings):
        alice, _ = annotators.add_annotator(storage, "alice")
        _, token = annotators.add_annotator(storage, "vera", role="reviewer")
        conversation(storage, alice, [("a", 3), ("b", 2), ("a", 4)])
        conversation(storage, alice, [("b", 3)], mode="red-team")
        yield base, token, storage


def _verdicts(storage):
    with storage.read() as s:
        rows = s.execute(
            select(Verdict.comparison_id, Verdict.verdict, Verdict.reason, Verdict.fixed_pick,
                   Verdict.fixed_strength).order_by(Verdict.comparison_id)
        ).all()  # fmt: skip
    return [tuple(r) for r in rows]


def _moved_on(page, comparison_id):
    """Wait for the next comparison's page (the one judged or skipped is gone)."""
    page.wait_for_function(
        "(id) => { const j = document.querySelector('#judge');"
        " return j !== null && j.dataset.id !== String(id) && document.readyState === 'complete'; }",
        arg=comparison_id,
    )


def test_a_reviewer_judges_by_keyboard(judged_site):
    base, token, storage = judged_site
    with open_chromium() as browser:
        ctx = browser.new_context(viewport={"width": 375, "height": 800}, bypass_csp=True)
        page = ctx.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        browser_login(page, base, token)
        page.goto(base + "/judge")
        page.wait_for_selector("#judge .judge-point.selected")  # the label's point, marked
        assert page.evaluate("() => document.scrollingElement.scrollWidth") <= 375
        need_axe()
        found = serious_violations(page)
        assert not found, "\n".join(found)
        first = int(page.get_attribute("#judge", "data-id"))
        # s: skip to the next one, and back (the skipped one comes again at the end)
        page.keyboard.press("s")
        _moved_on(page, first)
        second = int(page.get_attribute("#judge", "data-id"))
        # a: accept
        page.keyboard.press("a")
        _moved_on(page, second)
        assert page.text_content("#judge-last").startswith("Accepted")
        third = int(page.get_attribute("#judge", "data-id"))
        # r: the reason box; Enter sends the rejection
        page.keyboard.press("r")
        assert page.evaluate("() => document.activeElement.id") == "reason"
        page.keyboard.type("both responses are unusable")
        page.keyboard.press("Enter")
        _moved_on(page, third)
        fourth = int(page.get_attribute("#judge", "data-id"))
        # the label's own point (B3: key 7) is no fix
        page.keyboard.press("7")
        assert "label as given" in page.text_content("#judge-status")
        # a point's key fixes the label: key 1 is A at full strength
        page.keyboard.press("1")
        _moved_on(page, fourth)
        assert page.text_content("#judge-last").startswith("Fixed")
        # what was left: the skipped one
        assert int(page.get_attribute("#judge", "data-id")) == first
        ctx.close()
    got = {cid: rest for cid, *rest in _verdicts(storage)}
    assert got == {
        second: ["accept", None, None, None],
        third: ["reject", "both responses are unusable", None, None],
        fourth: ["fix", None, "a", 4],
    }
