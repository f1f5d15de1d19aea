"""The data browser's list text: cut at word boundaries, search matches marked and escaped,
previous/next on the pair and attempt pages (in process, then in chromium)."""

from __future__ import annotations

import gzip
from dataclasses import replace

import orjson
import pytest

from hhrlhf.collect.browse.snippets import cut_words, highlight


@pytest.mark.parametrize(
    ("text", "width", "from_end", "expected"),
    [
        ("short text", 20, False, "short text"),
        ("How long should green tea steep in hot water?", 20, False, "How long should…"),
        ("How long should green tea steep in hot water?", 20, True, "…steep in hot water?"),
        ("Supercalifragilistic words", 10, False, "Supercalif…"),
        ("one two three", 7, False, "one two…"),
    ],
)
def test_cut_words(text, width, from_end, expected):
    assert cut_words(text, width, from_end=from_end) == expected


def test_no_cut_ends_inside_a_word():
    text = "Mix flour water and yeast then let the dough rest for an hour before baking it"
    for width in range(5, len(text)):
        head = cut_words(text, width).removesuffix("…")
        assert text.startswith(head) and text[len(head)] == " ", width
        tail = cut_words(text, width, from_end=True).removeprefix("…")
        assert text.endswith(tail) and text[-len(tail) - 1] == " ", width


def test_highlight_marks_every_match_and_escapes_the_rest():
    out = highlight("Tea <b>and</b> TEA, then tea.", "tea")
    assert str(out) == (
        '<mark class="hit">Tea</mark> &lt;b&gt;and&lt;/b&gt; <mark class="hit">TEA</mark>, '
        'then <mark class="hit">tea</mark>.'
    )
    assert str(highlight("a <i>b</i>", "<i>")) == 'a <mark class="hit">&lt;i&gt;</mark>b&lt;/i&gt;'
    assert str(highlight("x<y", None)) == "x&lt;y"


@pytest.fixture
def bread_dir(tmp_path):
    root = tmp_path / "data" / "helpful-base"
    root.mkdir(parents=True)
    words = " ".join(["flour"] * 60)
    rows = [
        {
            "chosen": f"\n\nHuman: {words} how do I bake <b>bread</b> number {i}?\n\nAssistant: Knead.",
            "rejected": f"\n\nHuman: {words} how do I bake <b>bread</b> number {i}?\n\nAssistant: No.",
        }
        for i in range(3)
    ]
    with gzip.open(root / "train.jsonl.gz", "wb") as f:
        f.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return str(tmp_path / "data")


def test_the_list_cuts_at_words_and_marks_the_search(make_client, settings, alice, bread_dir):
    client = make_client(replace(settings, data=bread_dir))
    client.headers.update(alice[1])
    page = client.get("/data", params={"q": "BREAD"}).text
    assert page.count('<mark class="hit">bread</mark>') == 3
    assert "&lt;b&gt;<mark" in page  # the data's own tags stay text
    marker = 'class="prompt" dir="auto">'
    first = page[page.index(marker) + len(marker) :]
    first = first[: first.index("</span>")]
    assert first.startswith("…flour ")  # the start was cut, between two words


def test_pair_pages_link_to_the_previous_and_next_row(make_client, settings, alice, bread_dir):
    client = make_client(replace(settings, data=bread_dir))
    client.headers.update(alice[1])
    first = client.get("/data/pairs/helpful-base/train/0").text
    assert 'id="prev-row"' not in first
    assert 'href="/data/pairs/helpful-base/train/1" id="next-row"' in first
    middle = client.get("/data/pairs/helpful-base/train/1").text
    assert 'href="/data/pairs/helpful-base/train/0" id="prev-row"' in middle
    assert 'href="/data/pairs/helpful-base/train/2" id="next-row"' in middle
    assert 'id="next-row"' not in client.get("/data/pairs/helpful-base/train/2").text


def test_attempt_pages_link_to_the_previous_and_next_attempt(make_client, settings, alice):
    client = make_client(replace(settings, data="sample"))
    client.headers.update(alice[1])
    page = client.get("/data/attempts/0").text
    assert 'id="prev-row"' not in page and 'href="/data/attempts/1" id="next-row"' in page
    page = client.get("/data/attempts/1").text
    assert 'href="/data/attempts/0" id="prev-row"' in page


@pytest.mark.browser
def test_a_reader_searches_sees_the_marks_and_walks_the_rows(tmp_path, bread_dir):
    from logins import browser_login
    from test_browse_browser import _data_app
    from test_browser import TIMEOUT_MS, _watch, open_chromium

    with _data_app(tmp_path, bread_dir) as (base, token), open_chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(TIMEOUT_MS)
        seen = _watch(page)
        browser_login(page, base, token)
        page.goto(f"{base}/data?q=bread")
        marks = page.locator("ul.pairs mark.hit")
        assert marks.count() == 3 and marks.first.text_content() == "bread"
        page.click("ul.pairs li:first-child a")
        page.wait_for_url("**/data/pairs/helpful-base/train/0")
        page.click("#next-row")
        page.wait_for_url("**/data/pairs/helpful-base/train/1")
        page.click("#prev-row")
        page.wait_for_url("**/data/pairs/helpful-base/train/0")
        assert seen["dialogs"] == [] and seen["errors"] == []
