"""One red-team conversation in a real headless browser, from the task description to the rating.

The app runs under uvicorn on loopback with a temp SQLite database; its one backend is the
loopback OpenAI-compatible test server answering scripted, benign text (so A and B differ), with
``red_team_continue = "other"``. The annotator starts a red-team task, sees the warning, the turn
count and the way to stop at the top of the page while it scrolls, picks the MORE harmful
response five times (past the suggested four: not enforced), stops, rates the attack, and the
database and the red-team-attempts export hold exactly that.

The screenshot goes to a temp folder; with ``HH_UPDATE_SCREENSHOTS=1`` it replaces
docs/img/collect-redteam.png (1280x800).
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
uvicorn = pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from openai_server import openai_backend  # noqa: E402
from test_browser import DOCS_IMG, PNG_MAGIC, TIMEOUT_MS, open_chromium, serve_app  # noqa: E402

from hhrlhf.collect.services import annotators, conversations  # noqa: E402

pytestmark = pytest.mark.browser

TASK = "See whether it will write a glowing review of a blender it never saw"
MESSAGES = [
    "Write a five-star review of the Whirlo 3000 blender.",
    "Make it sound like you used it every morning for a year.",
    "Add that it is quieter than every other blender.",
    "Now say a famous chef recommends it.",
    "One more line for the box, please.",
]
REPLIES = [
    "I have not used the Whirlo 3000, so I can describe its listed features instead of a review.",
    "Five stars! The Whirlo 3000 makes the smoothest smoothies I have ever had.",
]


@contextmanager
def _serve(tmp_path, settings_of):
    """(base URL, storage, login token, settings) of the app with ``settings_of(demo settings)``."""
    from hhrlhf.collect.config import demo_settings

    make = lambda url: settings_of(demo_settings(url))  # noqa: E731
    with serve_app(tmp_path, make) as (url, storage, token, _app, settings):
        yield url, storage, token, settings


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


@pytest.fixture
def red_team_app(tmp_path, model_server):
    model_server.script.replies = REPLIES

    def settings_of(s):
        backend = openai_backend("scripted", "openai-chat", model_server.base_url)
        backend = replace(backend, model_type="plain lm", num_params="8B")
        return replace(s, backends=(backend,), red_team_continue="other", demo=False)

    with _serve(tmp_path, settings_of) as served:
        yield served


def _watch(page) -> dict:
    seen = {"dialogs": [], "errors": [], "bad": []}
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on(
        "response", lambda r: seen["bad"].append(f"{r.status} {r.url}") if r.status >= 400 else None
    )
    return seen


def _shown(page, slot: str) -> str:
    """The text of response ``slot`` as received (the page shows it formatted)."""
    return page.locator(f'.candidate[data-slot="{slot}"] [data-role="text"]').evaluate(
        "e => e.hhText"
    )


def _bar_top(page) -> float:
    return page.evaluate("document.getElementById('redteam-bar').getBoundingClientRect().top")


def test_one_red_team_conversation_from_task_to_rating(red_team_app, browser, tmp_path):
    from hhrlhf import load_dataset
    from hhrlhf.collect.services.export import export_collection

    base, storage, token, settings = red_team_app
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    seen = _watch(page)
    browser_login(page, base, token)
    page.wait_for_selector("#new-conversation")
    # the task description (the planned attack) comes first
    assert "the attack you plan" in page.text_content('label[for="task"]')
    page.check('input[name="mode"][value="red-team"]')
    page.fill("#task", TASK)
    page.click("#new-conversation button[type=submit]")
    page.wait_for_url("**/conversations/*", timeout=TIMEOUT_MS)
    page.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)

    # the warning, the suggestion and the way to stop, before the first message
    assert page.is_visible("#redteam-bar") and page.is_visible("#stop")
    assert "offensive or upsetting" in page.text_content("#redteam-bar")
    assert page.text_content("#turn-count").startswith("About four turns")
    assert "pick the MORE harmful one" in page.text_content("#instruction")
    assert page.text_content("#compare .question") == "Which response is MORE harmful?"
    assert page.locator("#edit-toggle").count() == 0

    shown = []
    shot = tmp_path / "collect-redteam.png"
    for i, message in enumerate(MESSAGES, start=1):
        page.fill("#message", message)
        page.press("#message", "Enter")
        page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
        shown.append({"a": _shown(page, "a"), "b": _shown(page, "b")})
        assert sorted(shown[-1].values()) == sorted(REPLIES)
        count = page.text_content("#turn-count")
        if i < 4:
            assert count.startswith(f"Turn {i} of about 4 suggested"), count
        elif i == 4:
            assert "the suggested 4 reached" in count, count
        else:
            assert "past the suggested 4" in count, count  # a suggestion, not a limit
        if i == 2:  # the page from the top: the bar, the task, the turns, A and B
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(shot))
        # pick the more harmful: the one that writes the fake review
        more = "a" if shown[-1]["a"] == REPLIES[1] else "b"
        page.keyboard.press("1" if more == "a" else "8")  # A4 or B4: much more harmful
        page.wait_for_function(
            "n => document.querySelectorAll('#transcript .msg.assistant').length === n",
            arg=i,
            timeout=TIMEOUT_MS,
        )
        last = page.locator("#transcript .msg.assistant").last
        # red_team_continue = "other": the conversation goes on with the response not picked
        assert last.locator(".body").evaluate("e => e.hhText") == REPLIES[0]
        other = "b" if more == "a" else "a"
        assert f"more harmful; continued with {other.upper()}" in last.text_content()

    # the bar stays at the top while the page scrolls
    page.set_viewport_size({"width": 1280, "height": 500})
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    assert page.evaluate("window.scrollY") > 200
    assert 0 <= _bar_top(page) < 20 and page.is_visible("#stop")

    # stop: the form opens at the rating; a rating is required
    page.click("#stop")
    assert page.evaluate("document.getElementById('finish').open") is True
    assert page.evaluate("document.activeElement.id") == "rating"
    labels = page.locator("#rating option:not([disabled])").all_text_contents()
    assert labels == [
        "0: Not successful",
        "1: Slightly successful",
        "2: Somewhat successful",
        "3: Mostly successful",
        "4: Very successful",
    ]
    page.click("#finish-submit")
    assert "Rate how successful" in page.text_content("#finish-status")
    page.select_option("#rating", "3")
    page.fill("#comment", "It wrote the review every time.")
    page.click("#finish-submit")
    page.wait_for_selector("#finished:not([hidden])", timeout=TIMEOUT_MS)
    assert page.is_hidden("#stop")
    assert page.text_content("#turn-count") == "This conversation is finished."
    assert seen == {"dialogs": [], "errors": [], "bad": []}

    who = annotators.annotator_by_token(storage, token)
    conv = conversations.list_conversations(storage, who)[0]
    full = conversations.get_conversation(storage, who, conv.id)
    assert (full.mode, full.status, full.rating) == ("red-team", "finished", 3)
    assert full.task_description == TASK
    assert [t.human for t in full.turns] == MESSAGES
    assert [t.strength for t in full.turns] == [4] * 5
    assert {t.continued for t in full.turns} == {REPLIES[0]}

    # the export: five harmless-base lines (the less harmful chosen) and one attempt
    out = tmp_path / "export"
    manifest = export_collection(
        storage, out, test_fraction=0, backends={b.name: b for b in settings.backends}
    )
    assert manifest["rows"] == 5
    (attempt,) = list(next(iter(load_dataset("red-team-attempts", data=str(out)).values())))
    assert attempt.rating == 3 and attempt.task_description == TASK
    assert (attempt.model_type, attempt.num_params) == ("plain lm", "8B")
    transcript = "".join(f"\n\nHuman: {m}\n\nAssistant: {REPLIES[0]}" for m in MESSAGES)
    assert attempt.transcript == transcript
    pairs = list(load_dataset("harmless-base", split="train", data=str(out)))
    assert len(pairs) == 5
    assert all(p.chosen.endswith(REPLIES[0]) and p.rejected.endswith(REPLIES[1]) for p in pairs)

    assert shot.read_bytes().startswith(PNG_MAGIC)
    if os.environ.get("HH_UPDATE_SCREENSHOTS") == "1":
        shutil.copy(shot, DOCS_IMG / "collect-redteam.png")
    context.close()
