"""The collection loop in a real headless browser (Debian's chromium through Playwright).

The app runs under uvicorn on loopback with a temp SQLite database and the demo backend. An
annotator logs in by link, runs a three-turn conversation (a pick with the keyboard, one with
the mouse, one edited), finishes it, and the export holds exactly those comparisons. Hostile
text is shown literally and runs nothing.

Screenshots go to a temp folder; with ``HH_UPDATE_SCREENSHOTS=1`` they replace
docs/img/collect.png (1280x800) and docs/img/collect-phone.png (390x844).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from logins import browser_login

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
uvicorn = pytest.importorskip("uvicorn")

from headless import CHROMIUM, CHROMIUM_ARGS, need_browser  # noqa: E402
from hhrlhf.collect.services import annotators, conversations, leases, transcripts  # noqa: E402

DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TIMEOUT_MS = 20_000

pytestmark = pytest.mark.browser


class _Server(uvicorn.Server):
    def install_signal_handlers(self):  # a thread cannot install them
        pass


@contextmanager
def serve_app(tmp_path, make_settings, *, name: str = "robin", url: str | None = None):
    """(base URL, storage, login token of ``name``, app, settings) of the app serving on
    127.0.0.1 on a free port; ``make_settings(db_url)`` gives its settings. ``url``: its
    database (a SQLite file in ``tmp_path`` without it)."""
    from hhrlhf.collect.db import Storage
    from hhrlhf.collect.web.app import create_app

    url = url or f"sqlite:///{tmp_path / 'collect.db'}"
    storage = Storage(url)
    storage.upgrade()
    _, token = annotators.add_annotator(storage, name)
    settings = make_settings(url)
    app = create_app(settings, storage=storage)
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the app did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", storage, token, app, settings
    finally:
        server.should_exit = True
        thread.join(10)
        storage.dispose()


@contextmanager
def _serve(tmp_path, token_delay: float = 0.0):
    """(base URL, storage, login token, app) of the demo app."""
    from hhrlhf.collect.config import demo_settings

    make = lambda url: demo_settings(url, token_delay=token_delay)  # noqa: E731
    with serve_app(tmp_path, make) as (url, storage, token, app, _settings):
        yield url, storage, token, app


@contextmanager
def open_chromium():
    """Debian's chromium driven by Playwright, or a skip saying what is missing (a failure in
    CI: see tests/headless.py)."""
    sync_api = need_browser()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def live_app(tmp_path):
    with _serve(tmp_path) as served:
        yield served


@pytest.fixture
def slow_app(tmp_path):
    """The demo backend writing one word every 50 ms, so streaming can be watched."""
    with _serve(tmp_path, token_delay=0.05) as served:
        yield served


@pytest.fixture
def browser():
    with open_chromium() as b:
        yield b


def _watch(page) -> dict:
    """Record dialogs (an injected alert would open one) and page errors."""
    seen = {"dialogs": [], "errors": [], "console": []}
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on(
        "response",
        lambda r: seen["console"].append(f"{r.status} {r.url}") if r.status >= 400 else None,
    )
    page.on(
        "console",
        lambda m: seen["console"].append(m.text) if m.type == "error" else None,
    )
    return seen


def _login_and_start(page, base: str, token: str, task: str) -> int:
    browser_login(page, base, token)
    page.wait_for_selector("#new-conversation")
    page.fill("#task", task)
    page.click("#new-conversation button[type=submit]")
    page.wait_for_url("**/conversations/*", timeout=TIMEOUT_MS)
    page.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)
    return int(page.url.rsplit("/", 1)[1])


def _send(page, text: str) -> None:
    page.fill("#message", text)
    page.press("#message", "Enter")
    page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)


def _assistant_count(page, n: int) -> None:
    page.wait_for_function(
        "n => document.querySelectorAll('#transcript .msg.assistant').length === n",
        arg=n,
        timeout=TIMEOUT_MS,
    )


#: the texts of responses as received (the page shows them formatted from markdown)
RAW = "els => els.map(e => e.hhText)"


def _shown(page, slot: str) -> str:
    """The text of response ``slot`` as received (the page shows it formatted)."""
    return page.locator(f'.candidate[data-slot="{slot}"] [data-role="text"]').evaluate(
        "e => e.hhText"
    )


def _read_export(out: Path) -> list[tuple[str, str]]:
    rows = []
    for f in sorted(out.glob("*/*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            rows += [(r["chosen"], r["rejected"]) for r in map(json.loads, fh) if r]
    return rows


MESSAGES = [
    "How do I grow tomatoes on a balcony?",
    "Can you give me a simple recipe for pancakes?",
    "How often should I do stretching after work?",
]


def test_three_turn_conversation_keyboard_mouse_edit_and_export(live_app, browser, tmp_path):
    from hhrlhf.collect.services.export import export_collection

    base, storage, token, _ = live_app
    shots = tmp_path / "shots"
    shots.mkdir()
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    seen = _watch(page)
    conv_id = _login_and_start(
        page, base, token, "Everyday advice on gardening, cooking and exercise"
    )

    # the scale is closed until both responses are complete
    page.fill("#message", MESSAGES[0])
    page.press("#message", "Enter")
    page.wait_for_selector("#compare:not([hidden])", timeout=TIMEOUT_MS)
    page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
    for slot in "ab":
        assert (
            page.text_content(f'.candidate[data-slot="{slot}"] [data-role="state"]') == "complete"
        )
        assert _shown(page, slot).strip()
    shown = [{"a": _shown(page, "a"), "b": _shown(page, "b")}]
    # turn 1: the keyboard, key 1 = A4 ("A is much better")
    # no click needed: the message box hides while A and B are shown, so keys reach the scale
    page.keyboard.press("1")
    _assistant_count(page, 1)

    # turn 2: the mouse, key 7's point = B3
    _send(page, MESSAGES[1])
    shown.append({"a": _shown(page, "a"), "b": _shown(page, "b")})
    page.click('#scale .point[data-key="7"]')
    _assistant_count(page, 2)

    # turn 3: edit the pick (keyboard 3 = A2) before continuing
    _send(page, MESSAGES[2])
    shown.append({"a": _shown(page, "a"), "b": _shown(page, "b")})
    # the page scrolled itself: the new message and A and B are on screen without scrolling
    top = page.evaluate("document.querySelector('#compare').getBoundingClientRect().top")
    assert 0 < top < 800
    assert page.locator("#scale .point.selected").count() == 0  # the last pick is not carried over
    page.mouse.move(0, 0)
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.screenshot(path=str(shots / "collect.png"))
    phone = browser.new_context(
        viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True
    )
    phone.add_cookies(context.cookies())
    ppage = phone.new_page()
    ppage.goto(f"{base}/conversations/{conv_id}")
    ppage.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
    # on a phone A and B stack: B sits below A, not beside it
    a_box = ppage.locator('.candidate[data-slot="a"]').bounding_box()
    b_box = ppage.locator('.candidate[data-slot="b"]').bounding_box()
    assert b_box["y"] >= a_box["y"] + a_box["height"] - 1
    assert ppage.evaluate("document.documentElement.scrollWidth") <= 390
    ppage.locator("#compare").scroll_into_view_if_needed()
    ppage.screenshot(path=str(shots / "collect-phone.png"))
    phone.close()
    # at 1280 they sit side by side
    a_box = page.locator('.candidate[data-slot="a"]').bounding_box()
    b_box = page.locator('.candidate[data-slot="b"]').bounding_box()
    assert abs(a_box["y"] - b_box["y"]) < 1 and b_box["x"] > a_box["x"] + a_box["width"]

    page.check("#edit-toggle")  # the focus stays on the checkbox: keys still pick
    page.keyboard.press("3")
    page.wait_for_selector("#editor:not([hidden])")
    assert page.input_value("#edit-text") == shown[2]["a"]
    edited = "A few minutes most days is plenty: neck rolls, a forward fold and a calf stretch."
    page.fill("#edit-text", edited)
    page.click("#edit-submit")
    _assistant_count(page, 3)
    bubbles = page.locator("#transcript .msg.assistant .body").evaluate_all(RAW)
    assert bubbles == [shown[0]["a"], shown[1]["b"], edited]
    humans = page.locator("#transcript .msg.human .body").all_text_contents()
    assert humans == MESSAGES

    # finish with a comment
    page.click("#finish summary")
    page.fill("#comment", "All three answers were sensible.")
    page.click("#finish-submit")
    page.wait_for_selector("#finished:not([hidden])", timeout=TIMEOUT_MS)
    assert page.is_hidden("#composer")
    page.reload()  # a finished conversation reopens as a read-only transcript
    page.wait_for_selector("#finished:not([hidden])", timeout=TIMEOUT_MS)
    assert page.locator("#transcript .msg.assistant .body").evaluate_all(RAW) == bubbles
    assert (
        page.text_content("#finished-comment") == "Your comment: All three answers were sensible."
    )
    assert page.is_hidden("#composer") and page.is_hidden("#compare") and page.is_hidden("#finish")
    context.close()
    assert seen == {"dialogs": [], "errors": [], "console": []}

    # what the browser did is what was stored
    who = annotators.annotator_by_token(storage, token)
    conv = conversations.get_conversation(storage, who, conv_id)
    assert conv.status == "finished"
    assert conv.comment == "All three answers were sensible."
    turns = conv.turns
    assert [(t.pick, t.strength, t.edit) for t in turns] == [
        ("a", 4, None),
        ("b", 3, None),
        ("a", 2, edited),
    ]
    for t, texts in zip(turns, shown, strict=True):
        assert {c.slot: c.text for c in t.candidates} == texts
        assert not any(c.cut for c in t.candidates)

    # the export holds exactly those four comparisons (three picks, one edit)
    out = tmp_path / "export"
    manifest = export_collection(storage, out)
    expected = []
    prefix = ""
    for t, texts in zip(turns, shown, strict=True):
        prefix += f"\n\nHuman: {t.human}\n\nAssistant:"
        other = "b" if t.pick == "a" else "a"
        expected.append((f"{prefix} {texts[t.pick]}", f"{prefix} {texts[other]}"))
        if t.edit:
            expected.append((f"{prefix} {t.edit}", f"{prefix} {texts[t.pick]}"))
        prefix += f" {t.continued}"
    assert sorted(_read_export(out)) == sorted(expected)
    assert manifest["comparisons"] == {"pick": 3, "edit": 1}
    assert manifest["rows"] == 4

    for name in ("collect.png", "collect-phone.png"):
        assert (shots / name).read_bytes().startswith(PNG_MAGIC)
        if os.environ.get("HH_UPDATE_SCREENSHOTS") == "1":
            shutil.copy(shots / name, DOCS_IMG / name)


HOSTILE_TASK = '<img src=x onerror="window.__pwned=1;alert(1)"> {{7*7}}'
HOSTILE_MESSAGE = (
    "<script>window.__pwned=1;alert('script')</script>"
    '<img src=x onerror="window.__pwned=1;alert(2)"></textarea>'
)


def test_hostile_text_is_shown_literally_and_runs_nothing(live_app, browser):
    base, _, token, _ = live_app
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    seen = _watch(page)
    _login_and_start(page, base, token, HOSTILE_TASK)
    assert page.text_content("#task-text") == HOSTILE_TASK
    _send(page, HOSTILE_MESSAGE)
    assert page.locator("#transcript .msg.human .body").all_text_contents() == [HOSTILE_MESSAGE]
    page.goto(f"{base}/")  # the list shows the task description literally too
    assert page.locator(".conversations .task").all_text_contents() == [HOSTILE_TASK]
    page.go_back()
    page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
    assert page.locator("#transcript .msg.human .body").all_text_contents() == [HOSTILE_MESSAGE]
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#transcript img, #task-text img, #transcript script").count() == 0
    assert seen["dialogs"] == [] and seen["errors"] == []
    other = context.new_page()  # a second tab, left open while the first logs out
    other.goto(page.url)
    other.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
    page.click("#logout")
    page.wait_for_url("**/login?out=1", timeout=TIMEOUT_MS)
    other.keyboard.press("1")
    other.wait_for_function(
        "() => document.querySelector('#choice-status').textContent.includes('session has ended')",
        timeout=TIMEOUT_MS,
    )
    assert other.locator("#transcript .msg.assistant").count() == 0
    page.goto(f"{base}/")
    assert page.text_content("h1") == "Log in"


def test_backend_failure_shows_a_message_and_retry_recovers(live_app, browser):
    """A failing backend: the annotator sees a clear message and Retry; the retry succeeds."""
    base, _, token, app = live_app
    generator = app.state.context.generator
    state = {"fail": True}

    class Flaky:
        def __init__(self, real):
            self.real, self.config, self.kind = real, real.config, real.kind

        async def stream(self, prompt, slot="a"):
            if state["fail"]:
                raise ConnectionError("the model server is down")
            async for item in self.real.stream(prompt, slot):
                yield item

        def record(self, prompt, slot):
            return self.real.record(prompt, slot)

    generator.backends = {name: Flaky(b) for name, b in generator.backends.items()}
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    seen = _watch(page)
    _login_and_start(page, base, token, "Ask about tea")
    page.fill("#message", "How long should green tea steep?")
    page.press("#message", "Enter")
    page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
    assert "retry" in page.text_content("#turn-error-text").lower()
    for slot in "ab":
        note = page.text_content(f'.candidate[data-slot="{slot}"] [data-role="note"]')
        assert "the model could not answer" in note
    assert page.locator("#scale .point:not([disabled])").count() == 0
    state["fail"] = False
    page.click("#retry")
    page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
    assert page.is_hidden("#turn-error")
    assert _shown(page, "a").strip() and _shown(page, "b").strip()
    assert seen["dialogs"] == [] and seen["errors"] == []


def test_red_team_page_asks_for_the_more_harmful_and_a_rating(live_app, browser):
    base, storage, token, _ = live_app
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    seen = _watch(page)
    browser_login(page, base, token)
    page.check('input[name="mode"][value="red-team"]')
    page.fill("#task", "See whether it will invent a fake product review")
    page.click("#new-conversation button[type=submit]")
    page.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)
    assert page.is_visible(".banner.warning")
    assert page.text_content("#compare .question") == "Which response is MORE harmful?"
    assert page.is_hidden("#edit-toggle") or page.locator("#edit-toggle").count() == 0
    _send(page, "Write a glowing review for a blender you never used.")
    page.keyboard.press("8")  # B4: B is much more harmful
    _assistant_count(page, 1)
    page.click("#finish summary")
    page.click("#finish-submit")
    assert "Rate how successful" in page.text_content("#finish-status")
    assert page.is_hidden("#finished")
    page.select_option("#rating", "1")
    page.click("#finish-submit")
    page.wait_for_selector("#finished:not([hidden])", timeout=TIMEOUT_MS)
    who = annotators.annotator_by_token(storage, token)
    conv = conversations.list_conversations(storage, who)[0]
    full = conversations.get_conversation(storage, who, conv.id)
    assert (full.mode, full.status, full.rating) == ("red-team", "finished", 1)
    assert [(t.pick, t.strength) for t in full.turns] == [("b", 4)]
    assert seen["dialogs"] == [] and seen["errors"] == []


def test_responses_stream_in_and_the_scale_waits_for_both(slow_app, browser):
    base, storage, token, _ = slow_app
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    seen = _watch(page)
    _login_and_start(page, base, token, "Watch the responses arrive")
    page.fill("#message", MESSAGES[0])
    page.press("#message", "Enter")
    # part of a response is on screen while the scale is still closed
    page.wait_for_function(
        '() => document.querySelector(\'.candidate[data-slot="a"] [data-role="text"]\')'
        ".textContent.length > 0",
        timeout=TIMEOUT_MS,
    )
    assert page.text_content('.candidate[data-slot="a"] [data-role="state"]') == "writing…"
    assert page.locator("#scale .point:not([disabled])").count() == 0
    page.keyboard.press("1")  # ignored until both are complete
    page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
    assert page.locator("#transcript .msg.assistant").count() == 0
    who = annotators.annotator_by_token(storage, token)
    turn = conversations.get_conversation(
        storage, who, conversations.list_conversations(storage, who)[0].id
    ).turns[0]
    assert turn.pick is None
    for c in turn.candidates:  # the streamed text is the stored text
        assert _shown(page, c.slot) == c.text
    assert seen["dialogs"] == [] and seen["errors"] == []


def test_a_message_is_one_request_and_a_cut_answer_goes_on_by_the_turns_stream(live_app, browser):
    """The page sends a message with ``"stream": true`` and reads the responses from that
    answer: no second request. When the answer breaks off before ``end``, the page follows
    the turn by its own stream (the responses were stored all the same) and the scale opens."""
    base, storage, token, _ = live_app
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    seen = _watch(page)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(f"{r.method} {r.url.split(base, 1)[1]}"))
    cid = _login_and_start(page, base, token, "Talk about bread")
    requests.clear()
    _send(page, "How long should bread dough rise?")
    assert requests == [f"POST /api/v1/conversations/{cid}/turns"], requests
    page.keyboard.press("2")
    _assistant_count(page, 1)
    page.wait_for_selector("#composer:not([hidden])", timeout=TIMEOUT_MS)

    def cut(route):
        """The real answer (the turn is created and written), cut after its first event."""
        answer = route.fetch()
        head = answer.body().split(b"\n\n", 1)[0] + b"\n\n"
        assert head.startswith(b"event: turn\n")
        route.fulfill(response=answer, body=head)

    page.route(f"**/api/v1/conversations/{cid}/turns", cut)
    requests.clear()
    _send(page, "And at what temperature?")
    turn_id = int(requests[-1].split("/")[-2])
    assert requests == [
        f"POST /api/v1/conversations/{cid}/turns",
        f"GET /api/v1/turns/{turn_id}/stream",
    ], requests
    who = annotators.annotator_by_token(storage, token)
    stored = conversations.get_conversation(storage, who, cid).turns[1]
    assert stored.id == turn_id and stored.status == "ready"
    for c in stored.candidates:  # what the page shows is what was stored
        assert _shown(page, c.slot) == c.text
    assert page.is_hidden("#turn-error")
    assert seen["dialogs"] == [] and seen["errors"] == [] and seen["console"] == []


def test_stop_by_key_reaches_a_turn_another_worker_is_writing(tmp_path, browser):
    """Two workers on one database: the page's message (and its run) on one, its Stop (``x``)
    on the other. The Stop goes through the database; the writing worker reads it within a
    second (not at its next lease renewal) and keeps what each response wrote: the page
    shows both stopped, and rateable."""
    from hhrlhf.collect.config import demo_settings

    make = lambda url: demo_settings(url, token_delay=0.05)  # noqa: E731
    with (
        serve_app(tmp_path, make) as (base, storage, token, app, _),
        serve_app(tmp_path, make, name="other") as (other, _, _, other_app, _),
    ):
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        seen = _watch(page)

        def elsewhere(route):  # the Stop lands on the other worker, as SO_REUSEPORT may send it
            url = route.request.url.replace(base, other)
            route.fulfill(
                response=route.fetch(url=url, headers={**route.request.headers, "origin": other})
            )

        page.route("**/api/v1/turns/*/stop", elsewhere)
        cid = _login_and_start(page, base, token, "Ask about soup")
        page.fill("#message", "How long should soup simmer?")
        page.press("#message", "Enter")
        page.wait_for_function(
            '() => document.querySelector(\'.candidate[data-slot="a"] [data-role="text"]\')'
            ".textContent.length > 0",
            timeout=TIMEOUT_MS,
        )
        who = annotators.annotator_by_token(storage, token)
        tid = conversations.get_conversation(storage, who, cid).turns[0].id
        assert (
            tid in app.state.context.generator.runs
            and tid not in other_app.state.context.generator.runs
        )
        t0 = time.monotonic()
        page.keyboard.press("x")
        page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
        took = time.monotonic() - t0
        assert took < app.state.context.generator.lease_seconds / 3  # not the next heartbeat
        assert page.is_hidden("#generating") and page.is_hidden("#turn-error")
        stored = leases.turn_state(storage, tid)
        assert stored.status == "ready"
        for c in stored.candidates:
            note = page.text_content(f'.candidate[data-slot="{c.slot}"] [data-role="note"]')
            assert note == "Stopped: this is what it wrote before Stop."
            assert c.cut_reason == "stopped" and c.text and _shown(page, c.slot) == c.text
        assert seen["dialogs"] == [] and seen["errors"] == [] and seen["console"] == []


def test_enter_hands_focus_to_the_question_so_the_first_key_picks(live_app, browser):
    # Enter hides the message box that has focus. The page moves focus to the question at
    # once: left to the browser, focus reaches the body only after a rendering step, and a
    # pick pressed before it went to the hidden box and was lost.
    base, storage, token, _ = live_app
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    seen = _watch(page)
    conv_id = _login_and_start(page, base, token, "Ask about bread")
    focused = "() => document.activeElement.id"
    for n, text in enumerate(MESSAGES[:2], start=1):
        page.fill("#message", text)
        page.press("#message", "Enter")
        page.wait_for_selector("#composer[hidden]", state="attached", timeout=TIMEOUT_MS)
        assert page.evaluate(focused) == "compare-question"
        page.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)
        assert page.evaluate(focused) == "compare-question"
        page.keyboard.press("2")
        _assistant_count(page, n)
        assert page.evaluate(focused) == "message"  # and back to the message box
    who = annotators.annotator_by_token(storage, token)
    turns = conversations.get_conversation(storage, who, conv_id).turns
    assert [(t.pick, t.strength) for t in turns] == [("a", 3), ("a", 3)]
    assert seen["dialogs"] == [] and seen["errors"] == []


def test_a_choice_that_is_not_saved_stays_on_the_page_and_a_conflict_reloads(live_app, browser):
    base, storage, token, _ = live_app
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    seen = _watch(page)
    conv_id = _login_and_start(page, base, token, "Ask about bread")
    _send(page, "What's the easiest way to cook sourdough bread at home?")

    # the server refuses the first attempt: the annotator is told, and nothing moves on
    sent = []

    def refuse_once(route):
        sent.append(route.request.post_data_json)
        if len(sent) == 1:
            route.fulfill(
                status=503,
                content_type="application/json",
                body='{"error": "the database is not writable"}',
            )
        else:
            route.continue_()

    page.route("**/api/v1/turns/*/choice", refuse_once)
    page.keyboard.press("2")
    page.wait_for_function(
        "() => document.querySelector('#choice-status').textContent.includes('Not saved')",
        timeout=TIMEOUT_MS,
    )
    assert "the database is not writable" in page.text_content("#choice-status")
    assert page.locator("#transcript .msg.assistant").count() == 0
    assert page.locator("#scale .point:not([disabled])").count() == 8

    # a second tab on the same turn, before the first tab's pick is stored
    other = context.new_page()
    other.goto(f"{base}/conversations/{conv_id}")
    other.wait_for_selector("#scale .point:not([disabled])", timeout=TIMEOUT_MS)

    page.keyboard.press("2")  # the same choice again: the same request id, now stored
    _assistant_count(page, 1)
    who = annotators.annotator_by_token(storage, token)
    turn = conversations.get_conversation(storage, who, conv_id).turns[0]
    assert (turn.pick, turn.strength) == ("a", 3)
    comparisons = [
        c
        for conv in transcripts.iter_conversations_for_export(storage)
        for t in conv.turns
        for c in t.comparisons
    ]
    assert len(comparisons) == 1
    assert len(sent) == 2 and sent[0] == sent[1]  # resent with the same request id
    assert sent[0]["request_id"]

    # the other tab picks differently: 409; it says the conversation changed in another tab,
    # and its Reload shows the stored pick
    other.keyboard.press("8")
    other.wait_for_selector("#stale:not([hidden])", timeout=TIMEOUT_MS)
    other.click("#stale-reload")
    other.wait_for_function(
        "() => document.querySelectorAll('#transcript .msg.assistant').length === 1",
        timeout=TIMEOUT_MS,
    )
    assert other.is_hidden("#compare")
    assert "(A3)" in other.text_content("#transcript .msg.assistant .who")
    assert conversations.get_conversation(storage, who, conv_id).turns[0].pick == "a"
    context.close()
    assert seen["dialogs"] == [] and seen["errors"] == []


def test_login_link_shows_a_page_and_only_its_button_logs_in(live_app, browser, tmp_path):
    base, storage, token, _app = live_app
    page = browser.new_page()
    seen = _watch(page)
    me = "async () => (await fetch('/api/v1/me')).status"
    page.goto(f"{base}/login?token={token}&next=/help")
    assert page.inner_text("h1") == "Log in as robin"
    assert page.evaluate(me) == 401  # opening the link logged nobody in
    with page.expect_navigation(timeout=TIMEOUT_MS):
        page.click("#login-submit")
    assert page.url == f"{base}/help"
    assert page.evaluate(me) == 200
    # a page that needs a login offers the token form and comes back to itself
    context = browser.new_context()
    other = context.new_page()
    other.goto(f"{base}/review")
    assert other.locator("#login-token").is_visible()
    other.fill("#login-token", token)
    with other.expect_navigation(timeout=TIMEOUT_MS):
        other.click("#login-submit")
    assert other.url == f"{base}/review"
    context.close()
    assert seen["dialogs"] == [] and seen["errors"] == []
