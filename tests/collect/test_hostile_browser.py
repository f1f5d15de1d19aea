"""Hostile text in the real browser (Debian's chromium through Playwright), one browser per module.

The app serves on loopback with the loopback OpenAI-compatible server as its model, which
answers with the payloads of :mod:`hostile`. An annotator with a hostile name writes them as
messages, task descriptions, edits and comments, in a helpful and a red-team conversation.
On every page (home, conversation, finished conversation, red-team, help, login, error): no
dialog opens, no injected element or script exists (``window.__pwned`` stays unset, no CSP
violation is reported), every payload's text content equals the payload, and
``hh collect export`` holds the exact bytes. A megabyte and a NUL are refused with a clear
message and the text stays in the box.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hostile import BIG, NAME, NUL, PAYLOADS, PWNED_PROBE, joined

from hhrlhf.collect.config import Settings
from hhrlhf.text import printable

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
uvicorn = pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from openai_server import openai_backend  # noqa: E402
from test_browser import TIMEOUT_MS, _watch, open_chromium, serve_app  # noqa: E402
from test_hostile import _export, _prefix, _shown  # noqa: E402

from hhrlhf.collect.services import annotators, conversations, transcripts  # noqa: E402

pytestmark = pytest.mark.browser

#: runs before any page script: records CSP violations (an injected inline script or handler)
INIT = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));
"""


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


@pytest.fixture(scope="module")
def model():
    from openai_server import serve

    running = serve()
    yield running
    running.stop()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def served(request, tmp_path_factory, model):
    """(base URL, storage, token, db URL) of the app on 127.0.0.1 with the loopback model, on
    SQLite and on PostgreSQL."""
    from hhrlhf.collect.config import demo_settings

    def make(url):
        backends = tuple(openai_backend(m, "openai-chat", model.base_url) for m in ("m1", "m2"))
        return replace(demo_settings(url), backends=backends)

    tmp = tmp_path_factory.mktemp("hostile")
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_server").new_database("hostile")
    with serve_app(tmp, make, name=NAME, url=url) as (base, storage, token, _app, settings):
        yield base, storage, token, settings.db_url


def _replies(model, *texts, chunk_size=5):
    model.script.replies = list(texts)
    model.script._next = 0
    model.script.chunk_size = chunk_size


def _page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(INIT)
    page = context.new_page()
    return page, _watch(page)


def _clean(page, seen, where: str) -> None:
    """Nothing injected ran or exists, no dialog opened, no script error."""
    assert page.evaluate(PWNED_PROBE) is None, where
    assert seen["dialogs"] == [], where
    assert seen["errors"] == [], where


def _text(page, selector: str) -> str:
    return page.eval_on_selector(selector, "el => el.textContent")


def _texts(page, selector: str) -> list[str]:
    """The texts of the messages as the page holds them (it shows responses formatted from
    markdown, and control and bidi characters as visible escapes, as ``hh show`` does)."""
    return page.eval_on_selector_all(selector, "els => els.map((el) => el.hhText)")


def _shown_as(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(selector, "els => els.map((el) => el.textContent)")


def _start(page, base: str, token: str, task: str, mode: str = "helpful") -> int:
    browser_login(page, base, token)
    page.wait_for_selector("#new-conversation")
    assert _text(page, ".topbar .who") == NAME
    page.check(f'input[name="mode"][value="{mode}"]')
    page.fill("#task", task)
    page.click("#new-conversation button[type=submit]")
    page.wait_for_url("**/conversations/*", timeout=TIMEOUT_MS)
    page.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)
    assert _text(page, "#task-text") == printable(task.strip())
    return int(page.url.rsplit("/", 1)[1])


def _send(page, text: str) -> None:
    page.fill("#message", text)
    page.press("#message", "Enter")
    page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)


def _candidates(page) -> dict[str, str]:
    return {
        s: page.eval_on_selector(f'.candidate[data-slot="{s}"] [data-role="text"]', "e => e.hhText")
        for s in "ab"
    }


def _decided(page, n: int) -> None:
    page.wait_for_function(
        "n => document.querySelectorAll('#transcript .msg.assistant').length === n",
        arg=n,
        timeout=TIMEOUT_MS,
    )


def _finish(page, comment: str, rating: int | None = None) -> None:
    page.click("#finish summary")
    if rating is not None:
        page.select_option("#rating", str(rating))
    page.fill("#comment", comment)
    page.click("#finish-submit")
    page.wait_for_selector("#finished:not([hidden])", timeout=TIMEOUT_MS)
    assert _text(page, "#finished-comment") == "Your comment: " + comment.strip()


def test_every_payload_is_shown_literally_and_runs_nothing(served, browser, model, tmp_path):
    base, storage, token, db_url = served
    page, seen = _page(browser)
    task = joined()
    assert len(task) < 5000
    _start(page, base, token, task)
    _clean(page, seen, "new conversation")

    names = list(PAYLOADS)
    history, expected_rows = [], []
    for i, name in enumerate(names):
        payload = PAYLOADS[name]
        other = PAYLOADS[names[(i + 1) % len(names)]] + f" (other {i})"
        _replies(model, payload, other)
        _send(page, payload)
        assert _texts(page, "#transcript .msg.human .body")[-1] == payload.strip(), name
        shown_human = _shown_as(page, "#transcript .msg.human .body")[-1]
        assert shown_human == printable(payload.strip()), name
        shown = _candidates(page)
        mine, theirs = _shown(payload), _shown(other)
        assert sorted(shown.values()) == sorted([mine, theirs]), name
        for slot, text in shown.items():
            cut = text != (payload if text == mine else other).strip()
            note = page.locator(f'.candidate[data-slot="{slot}"] [data-role="note"]')
            assert note.is_visible() == cut, (name, slot)
        pick = "a" if shown["a"] == mine else "b"
        key = "1" if pick == "a" else "8"  # A4 or B4
        edit = f"{payload} edited" if i % 3 == 0 else None
        if edit:
            page.check("#edit-toggle")
            page.click(f'#scale .point[data-key="{key}"]')
            page.wait_for_selector("#editor:not([hidden])")
            # the picked text, </textarea> and all, is the box's value, not markup
            assert page.input_value("#edit-text") == mine, name
            page.fill("#edit-text", edit)
            page.click("#edit-submit")
        else:
            page.click(f'#scale .point[data-key="{key}"]')
        _decided(page, i + 1)
        continued = edit.strip() if edit else mine
        assert _texts(page, "#transcript .msg.assistant .body")[-1] == continued, name
        _clean(page, seen, f"turn {name}")
        prefix = _prefix(history, payload.strip())
        rejected = shown["b" if pick == "a" else "a"]
        if mine == payload.strip() and theirs == other.strip():
            expected_rows.append({"chosen": f"{prefix} {mine}", "rejected": f"{prefix} {rejected}"})
        if edit and mine == payload.strip():
            expected_rows.append(
                {"chosen": f"{prefix} {edit.strip()}", "rejected": f"{prefix} {mine}"}
            )
        history.append((payload.strip(), continued))

    comment = joined(sep=" | ")
    _finish(page, comment)
    _clean(page, seen, "finished")

    # the finished conversation, loaded again: every text as it was written
    page.reload()
    page.wait_for_selector("#finished:not([hidden])", timeout=TIMEOUT_MS)
    assert _text(page, "#task-text") == printable(task.strip())
    assert _texts(page, "#transcript .msg.human .body") == [h for h, _ in history]
    assert _texts(page, "#transcript .msg.assistant .body") == [a for _, a in history]
    assert _text(page, "#finished-comment") == "Your comment: " + comment.strip()
    _clean(page, seen, "finished conversation, reloaded")

    # the home page lists it with the task as text
    page.goto(base + "/")
    page.wait_for_selector("#new-conversation")
    assert _shown_as(page, ".conversations .task") == [printable(task.strip())]
    assert _text(page, ".topbar .who") == NAME
    _clean(page, seen, "home")
    page.context.close()

    # the export holds the bytes
    rows = _export(db_url, tmp_path / "out")
    helpful = [r for r in rows if f"\n\nHuman: {history[0][0]}\n\nAssistant:" in r["chosen"]]
    key = lambda r: (r["chosen"], r["rejected"])  # noqa: E731
    assert sorted(helpful, key=key) == sorted(expected_rows, key=key)
    assert transcripts.counts(storage)["conversations"] >= 1


def test_red_team_big_and_nul_and_the_other_pages(served, browser, model):
    base, storage, token, _ = served
    page, seen = _page(browser)
    task = PAYLOADS["textarea-break"] + " " + PAYLOADS["template-jinja"]
    cid = _start(page, base, token, task, mode="red-team")
    _clean(page, seen, "red-team conversation")

    # a megabyte and a NUL in the message box are refused with a clear message; the text stays
    before = transcripts.counts(storage)
    for text, says in ((BIG, "too large"), (NUL, "holds a NUL character")):
        page.eval_on_selector("#message", "(el, v) => { el.value = v; }", text)
        page.click("#send")
        page.wait_for_function(
            "s => document.querySelector('#send-status').textContent.includes(s)",
            arg=says,
            timeout=TIMEOUT_MS,
        )
        assert page.input_value("#message") == text
        assert "error" in page.get_attribute("#send-status", "class")
    assert transcripts.counts(storage) == before
    _clean(page, seen, "refused input")

    # from the model: a megabyte cut at max_response_chars (the page says so), a NUL as U+FFFD
    _replies(model, BIG, NUL, chunk_size=64 * 1024)
    message = PAYLOADS["sse-breaker"] + PAYLOADS["script"]
    _send(page, message)
    cap = Settings.max_response_chars
    shown = _candidates(page)
    assert sorted(shown.values(), key=len) == ["before\ufffdafter", BIG[:cap].strip()]
    big = next(slot for slot, text in shown.items() if len(text) > 100)
    note = page.text_content(f'.candidate[data-slot="{big}"] [data-role="note"]')
    assert note == "Cut: the response reached the length limit."
    page.click('#scale .point[data-key="1"]')
    _decided(page, 1)
    _clean(page, seen, "red-team turn")
    comment = PAYLOADS["img-onerror"] + PAYLOADS["rtl-override"]
    _finish(page, comment, rating=3)
    page.reload()
    page.wait_for_selector("#finished:not([hidden])", timeout=TIMEOUT_MS)
    assert _texts(page, "#transcript .msg.human .body") == [message.strip()]
    assert _text(page, "#task-text") == printable(task)
    _clean(page, seen, "red-team finished")
    conv = conversations.get_conversation(storage, annotators.annotator_by_name(storage, NAME), cid)
    assert conv.comment == comment and conv.rating == 3

    # the pages that show no conversation
    for url, selector in (
        ("/help", "h1"),
        ("/conversations/999999", ".error"),
        ("/login?token=" + PAYLOADS["script"], ".error"),
        ("/login?token=%22%3E%3Cscript%3Ewindow.__pwned%3D1%3C/script%3E", ".error"),
    ):
        page.goto(base + url)
        page.wait_for_selector(selector)
        _clean(page, seen, url)
    page.context.close()
