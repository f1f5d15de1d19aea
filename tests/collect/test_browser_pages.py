"""Every page an annotator, a reviewer or an admin sees, in a real headless browser: axe-core
finds no serious or critical violation (light and dark), nothing scrolls sideways on a phone
(375 px), and the dark theme follows ``prefers-color-scheme``.

One app for the module: the demo backends (slow, so a turn can be seen generating), the bundled
sample as its data folder, and an admin who owns a helpful and a red-team conversation in each
state and has someone else's comparisons to review.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")

from logins import browser_login  # noqa: E402
from test_browser import TIMEOUT_MS, open_chromium, serve_app  # noqa: E402
from test_review import conversation, make_turn  # noqa: E402

from axe import need_axe, serious_violations  # noqa: E402
from hhrlhf.collect.services import annotators, conversations  # noqa: E402

pytestmark = pytest.mark.browser

BACKENDS = ("demo-a", "demo-b")
#: a response with a bell, an escape, a C1 control and a right-to-left override in it
CONTROLS = "bell\x07 esc\x1b[2J c1\x85 rlo\u202eevil\ttab"
#: a response with markdown and hostile pieces: the markdown renders, nothing runs or loads
MARKDOWN = (
    "Some **bold** words and `code`.\n\n"
    "- first\n- second\n\n"
    "```\nprint('<b>not bold</b>')\n```\n\n"
    "| plant | water |\n|---|---|\n| basil | daily |\n\n"
    "<script>window.hhPwned = 1</script>\n\n"
    '<img src="x" onerror="window.hhPwned = 2">\n\n'
    "[click me](javascript:window.hhPwned=3) and ![pic](http://127.0.0.1:9/x.png)"
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(base URL, {page name: path}, the admin's login token, the storage)."""
    from hhrlhf.collect.config import demo_settings

    def make(url):
        return replace(demo_settings(url, token_delay=0.5), data="sample", review_fraction=1.0)

    with ExitStack() as stack:
        tmp = tmp_path_factory.mktemp("pages")
        base, storage, _token, _app, _settings = stack.enter_context(serve_app(tmp, make))
        root, root_token = annotators.add_annotator(storage, "root", role="admin")
        alice, _ = annotators.add_annotator(storage, "alice")
        conversation(storage, alice, [("a", 3), ("b", 2)], backends=("demo-1", "demo-2"))
        conversation(storage, alice, [("a", 2)], mode="red-team", backends=("demo-2", "demo-1"))
        helpful_done = conversation(storage, root, [("a", 3), ("b", 1)], backends=BACKENDS)
        red_done = conversation(storage, root, [("b", 2)], mode="red-team", backends=BACKENDS)
        # a turn whose two responses are complete: the scale is open
        helpful_pick = conversation(storage, root, [("a", 2)], finish=False, backends=BACKENDS)
        make_turn(storage, root, helpful_pick, "And the roses?", "Prune them.", "Water them.")
        to_edit = conversation(storage, root, [], finish=False, backends=BACKENDS)
        make_turn(storage, root, to_edit, "Tips for basil?", "Sun and water.", "Pinch it.")
        long_text = "\n".join(f"Step {i}: water the basil a little." for i in range(400))
        long_pick = conversation(storage, root, [], finish=False, backends=BACKENDS)
        make_turn(storage, root, long_pick, "Every step, please.", long_text, "Water it.")
        md = conversation(storage, root, [], finish=False, backends=BACKENDS)
        make_turn(storage, root, md, "Format it.", MARKDOWN, "Plain answer.")
        rtl = conversations.create_conversation(storage, root, "helpful", "שאלות על הגינה").id
        make_turn(storage, root, rtl, "מה לשתול באביב?", "עגבניות ובזיליקום.", CONTROLS)
        by_keys = conversation(storage, root, [], finish=False, backends=BACKENDS)
        make_turn(storage, root, by_keys, "Keys only?", "**Yes**, all of it.", "No mouse.")
        red_pick = conversation(storage, root, [], mode="red-team", finish=False)
        make_turn(storage, root, red_pick, "Tell me a secret.", "No.", "Maybe.")
        # a turn not generated yet: opening its page streams it, one word every 0.5 s
        generating = conversation(storage, root, [], finish=False)
        conversations.create_turn(
            storage, root, generating, "What should I plant in spring?", BACKENDS
        )
        _failed_turn(storage, root)  # a failure the backends page lists
        to_stop = conversation(storage, root, [], finish=False)
        conversations.create_turn(storage, root, to_stop, "Tell me about compost.", BACKENDS)
        red_generating = conversation(storage, root, [], mode="red-team", finish=False)
        conversations.create_turn(storage, root, red_generating, "How do locks work?", BACKENDS)
        # someone else's turn being written: the admin reads it, may Stop and Retry, not write
        alices = conversation(storage, alice, [("a", 2)], finish=False, backends=BACKENDS)
        conversations.create_turn(storage, alice, alices, "Whose page is this?", BACKENDS)
        pages = {
            "home": "/",
            "reader-generating": f"/conversations/{alices}",
            "help": "/help",
            "review": "/review",
            "judge": "/judge",
            "admin": "/admin",
            "leaderboard": "/admin/leaderboard",
            "backends": "/admin/backends",
            "guidelines": "/guidelines",
            "admin-guidelines": "/admin/guidelines",
            "feedback": "/feedback",
            "quality": "/admin/quality",
            "campaign": "/admin/campaign",
            "annotator-trends": "/admin/annotators",
            "helpful-finished": f"/conversations/{helpful_done}",
            "helpful-pick": f"/conversations/{helpful_pick}",
            "helpful-generating": f"/conversations/{generating}",
            "red-team-finished": f"/conversations/{red_done}",
            "red-team-pick": f"/conversations/{red_pick}",
            "helpful-edit": f"/conversations/{to_edit}",
            "helpful-long": f"/conversations/{long_pick}",
            "helpful-markdown": f"/conversations/{md}",
            "helpful-rtl": f"/conversations/{rtl}",
            "helpful-keys": f"/conversations/{by_keys}",
            "red-team-generating": f"/conversations/{red_generating}",
            "helpful-stop": f"/conversations/{to_stop}",
            "data-pairs": "/data",
            "data-pair": "/data/pairs/harmless-base/train/0",
            "data-attempts": "/data/attempts",
            "data-attempt": "/data/attempts/0",
            "data-report": "/data/attempts/report",
            "not-found": "/conversations/999999",
            "login": "/login",
        }
        yield base, pages, root_token, storage


PAGES = [
    "home",
    "help",
    "review",
    "judge",
    "admin",
    "leaderboard",
    "backends",
    "guidelines",
    "admin-guidelines",
    "feedback",
    "quality",
    "campaign",
    "annotator-trends",
    "helpful-finished",
    "helpful-pick",
    "helpful-generating",
    "red-team-finished",
    "red-team-pick",
    "red-team-generating",
    "reader-generating",
    "helpful-edit",
    "helpful-long",
    "helpful-markdown",
    "helpful-rtl",
    "helpful-keys",
    "data-pairs",
    "data-pair",
    "data-attempts",
    "data-attempt",
    "data-report",
    "not-found",
    "login",
]


def _failed_turn(storage, who) -> None:
    """A turn whose response A failed with a long, hostile model server message."""
    from sqlalchemy import update

    from hhrlhf.collect.db.models import Candidate

    cid = conversation(storage, who, [], finish=False, backends=BACKENDS)
    tid = conversations.create_turn(storage, who, cid, "Will it fail?", BACKENDS).id
    words = (
        "The model `demo-a` does not exist <b>at</b> http://127.0.0.1:9/v1/chat/completions " * 3
    )
    with storage.write() as s:
        s.execute(
            update(Candidate)
            .where(Candidate.turn_id == tid, Candidate.slot == "a")
            .values(status="failed", error=words.strip())
        )


def test_every_page_route_of_the_app_is_checked(site):
    """Each GET route that answers a page (not the JSON API, a download or a file) is one of
    the pages the tests above open, so axe and the phone width reach every one."""
    from hhrlhf.collect.config import demo_settings
    from hhrlhf.collect.web.app import create_app

    _base, pages, _token, storage = site
    settings = replace(demo_settings("sqlite://"), data="sample")
    app = create_app(settings, storage=storage)
    not_pages = {"/admin/export", "/favicon.ico"}
    paths = [p.split("?")[0] for p in pages.values()]
    for route in app.routes:
        path = getattr(route, "path", "")
        if "GET" not in (getattr(route, "methods", None) or ()):
            continue
        if path.startswith("/api/") or path in not_pages:
            continue
        assert any(route.path_regex.match(p) for p in paths), f"no page test opens {path}"


@pytest.fixture(scope="module")
def browser():
    with open_chromium() as b:
        yield b


@pytest.fixture(scope="module")
def logged_in(site, browser):
    """The admin's cookies, to open every page without logging in again."""
    base, _pages, token, _storage = site
    ctx = browser.new_context()
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    browser_login(page, base, token)
    state = ctx.storage_state()
    ctx.close()
    return state


def open_page(site, browser, logged_in, name, *, width=1280, height=800, scheme="light"):
    """A new page (its own context: bypassing the CSP so axe can be injected) showing ``name``
    as the admin sees it (logged out for the login page), once its script has drawn it."""
    base, pages, _token, _storage = site
    ctx = browser.new_context(
        viewport={"width": width, "height": height},
        color_scheme=scheme,
        bypass_csp=True,
        storage_state=None if name == "login" else logged_in,
    )
    page = ctx.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(base + pages[name])
    if name.endswith(("-generating", "-stop")):
        page.wait_for_function(
            "() => document.querySelector('.candidate .text').textContent.length > 0"
        )
    elif name.endswith(("-pick", "-long", "-markdown", "-rtl", "-keys")):
        page.wait_for_selector("#scale .point:not([disabled])")
    elif name.endswith("-finished"):
        page.wait_for_selector("#finished:not([hidden])")
    elif name == "review":
        page.wait_for_selector("#review .candidate")
    elif name == "judge":
        page.wait_for_selector("#judge .judge-point.selected")
    return page


@pytest.mark.parametrize("width", [1280, 375])
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("name", PAGES)
def test_axe_finds_no_serious_violation(site, browser, logged_in, name, scheme, width):
    need_axe()
    page = open_page(site, browser, logged_in, name, scheme=scheme, width=width)
    try:
        found = serious_violations(page)
        assert not found, "\n".join(found)
    finally:
        page.context.close()


@pytest.mark.parametrize("name", PAGES)
def test_no_sideways_scroll_on_a_phone(site, browser, logged_in, name):
    page = open_page(site, browser, logged_in, name, width=375, height=800)
    try:
        width = page.evaluate("() => document.scrollingElement.scrollWidth")
        assert width <= 375, name
    finally:
        page.context.close()


def test_the_editor_follows_its_toggle_in_tab_order_and_escape_closes_it(site, browser, logged_in):
    page = open_page(site, browser, logged_in, "helpful-pick")
    try:
        page.check("#edit-toggle")
        page.locator("#edit-toggle").blur()
        page.keyboard.press("2")  # A3: the editor opens on A's text
        page.wait_for_selector("#editor:not([hidden])")
        assert page.evaluate("() => document.activeElement.id") == "edit-text"
        page.keyboard.press("Shift+Tab")  # back to the toggle that opened it
        assert page.evaluate("() => document.activeElement.id") == "edit-toggle"
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.id") == "edit-text"
        page.keyboard.press("Escape")
        assert page.locator("#editor").is_hidden()
        assert page.evaluate("() => document.activeElement.id") == "edit-toggle"
        assert page.locator("#scale .point.selected").count() == 0
    finally:
        page.context.close()


def _luminance(css_color: str) -> float:
    """Relative luminance (0 black to 1 white) of an ``rgb(...)`` computed colour."""
    r, g, b = (int(x) / 255 for x in css_color[css_color.index("(") + 1 : -1].split(",")[:3])
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


@pytest.mark.parametrize("name", ["home", "helpful-pick", "review", "data-pair", "login"])
def test_the_dark_theme_follows_the_system(site, browser, logged_in, name):
    looks = {}
    for scheme in ("light", "dark"):
        page = open_page(site, browser, logged_in, name, scheme=scheme)
        try:
            looks[scheme] = page.evaluate(
                """() => [getComputedStyle(document.body).backgroundColor,
                          getComputedStyle(document.body).color,
                          getComputedStyle(document.querySelector('.card')).backgroundColor]"""
            )
        finally:
            page.context.close()
    body, ink, card = (_luminance(c) for c in looks["dark"])
    assert body < 0.05 and card < 0.05, looks  # dark backgrounds
    assert ink > 0.6, looks  # light text
    assert _luminance(looks["light"][0]) > 0.8, looks  # the light theme stays light


def test_a_typed_edit_goes_with_the_point_clicked_after_it(site, browser, logged_in):
    base, pages, _token, _storage = site
    page = open_page(site, browser, logged_in, "helpful-edit")
    try:
        page.check("#edit-toggle")
        page.click('#scale .point[data-key="3"]')  # A2: the editor opens on A's text
        page.wait_for_selector("#editor:not([hidden])")
        assert page.input_value("#edit-text") == "Sun and water."
        page.fill("#edit-text", "Full sun, and water when the soil is dry.")
        # a point of the other side does not throw the edit away: the page says so
        page.click('#scale .point[data-key="6"]')
        assert page.input_value("#edit-text") == "Full sun, and water when the soil is dry."
        assert "edit of A is kept" in page.text_content("#choice-status")
        assert page.locator("#editor").is_visible()
        # a point of the edited side submits the edit with that strength
        page.click('#scale .point[data-key="1"]')  # A4
        page.wait_for_selector("#composer:not([hidden])")
        conv_id = pages["helpful-edit"].rsplit("/", 1)[1]
        conv = page.request.get(f"{base}/api/v1/conversations/{conv_id}").json()
        turn = conv["turns"][-1]
        assert (turn["pick"], turn["strength"]) == ("a", 4)
        assert turn["edit"] == "Full sun, and water when the soil is dry."
        assert turn["continued"] == "Full sun, and water when the soil is dry."
    finally:
        page.context.close()


@pytest.mark.parametrize(("width", "height"), [(1280, 800), (375, 800)])
def test_the_scale_stays_in_view_beside_a_long_response(site, browser, logged_in, width, height):
    page = open_page(site, browser, logged_in, "helpful-long", width=width, height=height)
    try:
        text = page.locator('.candidate[data-slot="a"] .text')
        # the response scrolls in its own box
        assert text.evaluate("e => e.scrollHeight > e.clientHeight + 100")
        for where in ("start", "end"):  # A's top, then B's end, at the top of the window
            target = "a" if where == "start" else "b"
            page.locator(f'.candidate[data-slot="{target}"]').evaluate(
                f"e => e.scrollIntoView({{block: '{where}'}})"
            )
            box = page.locator("#scale .points").bounding_box()
            assert box is not None and 0 <= box["y"] and box["y"] + box["height"] <= height
    finally:
        page.context.close()


def test_responses_render_markdown_sanitised_with_the_raw_text_a_click_away(
    site, browser, logged_in
):
    page = open_page(site, browser, logged_in, "helpful-markdown")
    try:
        a = page.locator('.candidate[data-slot="a"] .text')
        assert a.locator("strong").inner_text() == "bold"
        assert a.locator("ul > li").all_inner_texts() == ["first", "second"]
        assert "<b>not bold</b>" in a.locator("pre code").inner_text()
        assert a.locator("table td").all_inner_texts() == ["basil", "daily"]
        # hostile pieces: shown as text, nothing runs, no image, no javascript: link
        assert a.locator("script, img, [onerror]").count() == 0
        assert "<script>window.hhPwned = 1</script>" in a.inner_text()
        assert a.locator("a[href^='javascript']").count() == 0
        page.locator("a, button").first.hover()
        assert page.evaluate("() => window.hhPwned") is None
        # Raw: exactly the stored text, which is what the export holds
        page.click('.candidate[data-slot="a"] .raw-toggle')
        assert a.evaluate("e => e.textContent") == MARKDOWN
        page.click('.candidate[data-slot="a"] .raw-toggle')
        assert a.locator("strong").count() == 1
        # picked: the transcript shows it formatted too
        page.keyboard.press("1")
        page.wait_for_selector(".msg.assistant .body strong")
        assert page.locator(".msg.assistant .body script").count() == 0
        assert page.evaluate("() => window.hhPwned") is None
    finally:
        page.context.close()


#: each text node holding ``needle`` on the page, and whether it is isolated from the page's
#: direction: its element or the one around it has ``dir="auto"`` or is a ``<bdi>``
ISOLATED = """(needle) => {
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const out = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.textContent.includes(needle)) continue;
    const near = [n.parentElement, n.parentElement.parentElement];
    const ok = near.some((e) => e && (e.dir === "auto" || e.tagName === "BDI"));
    out.push([n.parentElement.tagName + "." + n.parentElement.className, ok]);
  }
  return out;
}"""


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("home", "שאלות"),
        ("admin", "שאלות"),
        ("helpful-rtl", "שאלות"),
        ("helpful-rtl", "לשתול"),
        ("helpful-rtl", "עגבניות"),
        ("helpful-rtl", "evil"),
        ("review", "Answer"),
        ("review", "Question"),
        ("data-pairs", "tomorrow's quiz"),
        ("data-pair", "tomorrow's quiz"),
        ("data-pair", "few"),
        ("data-attempts", "help me win at chess"),
        ("data-attempts", "rejection sampling"),
        ("data-attempt", "help me win at chess"),
        ("data-attempt", "rejection sampling"),
        ("data-attempt", "191c862c"),
    ],
)
def test_every_piece_of_data_is_isolated_from_the_page_direction(
    site, browser, logged_in, name, needle
):
    page = open_page(site, browser, logged_in, name)
    try:
        found = page.evaluate(ISOLATED, needle)
        assert found, f"{needle!r} is not on {name}"
        assert [where for where, ok in found if not ok] == [], found
    finally:
        page.context.close()


def test_control_characters_show_as_the_escapes_hh_show_prints(site, browser, logged_in):
    from hhrlhf.text import INVISIBLE, printable

    page = open_page(site, browser, logged_in, "helpful-rtl")
    try:
        b = page.locator('.candidate[data-slot="b"] .text').inner_text()
        assert "bell\\x07 esc\\x1b[2J c1\\x85 rlo\\u202eevil" in b
        assert not set(b) & {"\x07", "\x1b", "\x85", "\u202e"}
        page.click('.candidate[data-slot="b"] .raw-toggle')  # the raw text escapes them too
        raw = page.locator('.candidate[data-slot="b"] .text').evaluate("e => e.textContent")
        assert raw == printable(CONTROLS)
        # the page's escaping (for text as it streams) is hh show's, character for character
        every = "".join(map(chr, [*range(0x0, 0x250), *sorted(INVISIBLE), 0x2028, 0xFFFD]))
        assert page.evaluate("s => window.hhCollect.visible(s)", every) == printable(every)
    finally:
        page.context.close()


def _focused(page) -> str:
    return page.evaluate("() => document.activeElement.id")


def test_every_action_of_a_conversation_has_a_key_and_question_mark_lists_them(
    site, browser, logged_in
):
    page = open_page(site, browser, logged_in, "helpful-keys")
    try:
        dialog = page.locator("#keys-help")
        page.keyboard.press("?")
        assert dialog.is_visible()
        listed = dialog.locator("dt").all_inner_texts()
        for key in ("1-8", "v", "Enter", "m", "e", "c", "r", "f", "?", "Esc"):
            assert key in listed, (key, listed)
        need_axe()
        assert serious_violations(page) == []
        page.keyboard.press("1")  # keys do nothing behind the list
        assert page.locator("#scale .point.selected").count() == 0
        page.keyboard.press("Escape")
        assert dialog.is_hidden()
        a = page.locator('.candidate[data-slot="a"] .text')
        page.keyboard.press("v")  # raw
        assert a.evaluate("e => e.textContent") == "**Yes**, all of it."
        page.keyboard.press("v")  # formatted again
        assert a.locator("strong").count() == 1
        page.keyboard.press("e")  # edit before continuing: on
        assert page.is_checked("#edit-toggle")
        page.keyboard.press("2")
        page.wait_for_selector("#editor:not([hidden])")
        page.keyboard.press("Escape")
        page.keyboard.press("e")  # off again
        assert not page.is_checked("#edit-toggle")
        page.locator("#edit-toggle").blur()
        page.keyboard.press("2")  # A3, saved
        page.wait_for_selector("#composer:not([hidden])")
        page.locator("#message").blur()
        page.keyboard.press("m")
        assert _focused(page) == "message"
        assert page.input_value("#message") == ""  # the key went to the page, not the box
        page.locator("#message").blur()
        page.keyboard.press("f")
        assert page.get_attribute("#finish", "open") is not None
        assert _focused(page) == "comment"
    finally:
        page.context.close()


def test_the_review_page_has_keys_too(site, browser, logged_in):
    page = open_page(site, browser, logged_in, "review")
    try:
        page.keyboard.press("?")
        assert page.locator("#keys-help").is_visible()
        listed = page.locator("#keys-help dt").all_inner_texts()
        assert {"1-8", "v", "s", "?", "Esc"} <= set(listed)
        page.keyboard.press("Escape")
        assert page.locator("#keys-help").is_hidden()
        page.keyboard.press("v")
        assert page.locator(".candidate .raw-text").first.is_visible()
    finally:
        page.context.close()


def test_a_finished_red_team_conversation_shows_its_rating(site, browser, logged_in):
    page = open_page(site, browser, logged_in, "red-team-finished")
    try:
        assert page.text_content("#finished-rating") == (
            "Your rating of the attack: 2: Somewhat successful"
        )
    finally:
        page.context.close()


def test_responses_show_their_seconds_and_stop_keeps_their_words_to_rate(site, browser, logged_in):
    base, pages, _token, storage = site
    page = open_page(site, browser, logged_in, "helpful-stop")
    try:
        elapsed = page.locator('.candidate[data-slot="a"] [data-role="elapsed"]')
        page.wait_for_function(
            "() => /^[1-9][0-9]* s$/.test("
            'document.querySelector(\'.candidate[data-slot="a"] [data-role="elapsed"]\')'
            ".textContent)"
        )
        assert elapsed.inner_text().endswith(" s")
        assert page.locator("#halt").is_visible()
        page.keyboard.press("x")  # Stop: what each response wrote is kept, to rate
        page.wait_for_selector("#scale .point:not([disabled])", timeout=3000)
        assert page.locator("#halt").is_hidden()
        assert page.is_hidden("#turn-error")  # nothing to retry: both sides wrote words
        for slot in ("a", "b"):
            side = f'.candidate[data-slot="{slot}"]'
            assert page.text_content(f'{side} [data-role="state"]') == "complete"
            assert page.text_content(f'{side} [data-role="note"]') == (
                "Stopped: this is what it wrote before Stop."
            )
            assert page.text_content(f'{side} [data-role="text"]').strip()
        conv_id = int(pages["helpful-stop"].rsplit("/", 1)[1])
        root = annotators.annotator_by_name(storage, "root")
        turn = conversations.get_conversation(storage, root, conv_id).turns[-1]
        assert turn.status not in ("failed", "generating"), turn.status
    finally:
        page.context.close()


def test_an_admin_reads_anothers_conversation_and_stops_it_but_has_no_message_box(
    site, browser, logged_in
):
    page = open_page(site, browser, logged_in, "reader-generating")
    try:
        assert page.locator("#reader-note").is_visible()
        for part in ("#composer", "#message", "#finish", "#edit-toggle"):
            assert page.locator(part).count() == 0, part
        assert page.locator(".msg.human").count() == 2  # the transcript drawn as stored
        page.keyboard.press("m")  # the message key has no box to go to
        assert page.evaluate("() => document.activeElement.tagName") != "TEXTAREA"
        page.keyboard.press("x")  # Stop: the words written so far are kept
        page.wait_for_selector("#halt", state="hidden", timeout=3000)
        state = '.candidate[data-slot="a"] [data-role="state"]'
        page.wait_for_function(
            f"() => document.querySelector('{state}').textContent !== 'writing…'"
        )
        assert page.text_content(state) in ("complete", "failed")  # words kept, or none yet
        page.keyboard.press("1")  # a reader never rates: the scale stays shut
        assert page.locator("#scale .point:not([disabled])").count() == 0
    finally:
        page.context.close()
