"""The data browser (``hh serve --data``): the JSON API against the library, the pages, the CLI."""

from __future__ import annotations

import gzip
import os
import re
from collections import Counter
from dataclasses import replace

import orjson
import pytest
from click.testing import CliRunner
from logins import login
from markupsafe import escape

from hhrlhf.checks import audit
from hhrlhf.cli import cli
from hhrlhf.collect.browse import DataIndex, diff_segments
from hhrlhf.collect.services import annotators, choices, conversations
from hhrlhf.dataset import load_attempts, load_pairs
from hhrlhf.records import PAIR_CLASSES
from hhrlhf.redteam.query import filter_attempts

HOSTILE = '<script>alert("x")</script> & <b>bold</b> {{ 7*7 }}'


@pytest.fixture(scope="module")
def sample_pairs():
    return list(load_pairs(data="sample"))


@pytest.fixture
def data_client(make_client, settings, alice):
    client = make_client(replace(settings, data="sample"))
    client.headers.update(alice[1])
    return client


@pytest.fixture
def hostile_dir(tmp_path):
    root = tmp_path / "data" / "helpful-base"
    root.mkdir(parents=True)
    prompt = f"\n\nHuman: {HOSTILE} how do I bake bread?\n\nAssistant:"
    rows = [
        {"chosen": prompt + " Mix flour, water and yeast.", "rejected": prompt + f" {HOSTILE}"},
        {"chosen": prompt + " ", "rejected": prompt + " Knead it.\n\nHuman: thanks"},
    ]
    with gzip.open(root / "train.jsonl.gz", "wb") as f:
        f.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return str(tmp_path / "data")


def test_subsets_match_the_library_and_hh_check(data_client, sample_pairs):
    files = data_client.get("/api/v1/data/subsets").json()
    pair_files = [f for f in files if f["subset"] != "red-team-attempts"]
    for f in pair_files:
        rows = [p for p in sample_pairs if (p.subset, p.split) == (f["subset"], f["split"])]
        assert f["rows"] == len(rows)
    attempts = [f for f in files if f["subset"] == "red-team-attempts"]
    assert attempts and attempts[0]["rows"] == len(load_attempts(data="sample"))
    # the per-class totals are the ones `hh check` reports
    checked = audit(data="sample", near_duplicates=False).counts
    for name in PAIR_CLASSES:
        served = sum(f["classes"].get(name, 0) for f in pair_files)
        assert served == checked[name], name
    assert sum(checked[n] for n in PAIR_CLASSES) > 0


@pytest.mark.parametrize(
    "query, keep",
    [
        ("class=empty_response", lambda p: "empty_response" in p.classes),
        (
            "class=non_alternating&split=test",
            lambda p: "non_alternating" in p.classes and p.split == "test",
        ),
        (
            "subset=helpful-online&split=train",
            lambda p: (p.subset, p.split) == ("helpful-online", "train"),
        ),
        ("turns=2", lambda p: p.human_turns == 2),
        ("chosen=longer", lambda p: len(p.chosen) > len(p.rejected)),
        (
            "chosen=shorter&subset=harmless-base",
            lambda p: len(p.chosen) < len(p.rejected) and p.subset == "harmless-base",
        ),
        (
            "q=RECIPE",
            lambda p: "recipe" in p.chosen.lower() or "recipe" in p.rejected_response.lower(),
        ),
        ("q=recipe&where=prompt", lambda p: "recipe" in p.prompt.lower()),
        (
            "q=recipe&where=responses",
            lambda p: "recipe" in (p.chosen_response + "\0" + p.rejected_response).lower(),
        ),
    ],
)
def test_pair_filters_match_the_library(data_client, sample_pairs, query, keep):
    body = data_client.get(f"/api/v1/data/pairs?{query}&limit=200").json()
    want = [(p.subset, p.split, p.index) for p in sample_pairs if keep(p)]
    assert body["total"] == len(want)
    assert [(p["subset"], p["split"], p["index"]) for p in body["pairs"]] == want
    if query.startswith("class="):
        assert want  # the sample holds these quirks


def test_paging_covers_every_pair_once(data_client, sample_pairs):
    seen = []
    offset = 0
    while True:
        body = data_client.get(f"/api/v1/data/pairs?offset={offset}&limit=37").json()
        assert body["total"] == len(sample_pairs)
        if not body["pairs"]:
            break
        seen += [(p["subset"], p["split"], p["index"]) for p in body["pairs"]]
        offset += 37
    assert seen == [(p.subset, p.split, p.index) for p in sample_pairs]


def test_one_pair_as_json(data_client, sample_pairs):
    p = sample_pairs[5]
    body = data_client.get(f"/api/v1/data/pairs/{p.subset}/{p.split}/{p.index}").json()
    assert body["prompt"] + body["chosen_response"] == p.chosen
    assert body["prompt"] + body["rejected_response"] == p.rejected
    assert body["classes"] == sorted(p.classes)
    r = data_client.get("/api/v1/data/pairs/helpful-base/train/99999")
    assert r.status_code == 404 and "no pair helpful-base/train/99999" in r.json()["error"]


@pytest.mark.parametrize(
    "query, expected",
    [
        ("class=nonsense", "unknown class 'nonsense'"),
        ("limit=0", "limit must be between 1"),
        ("offset=-3", "offset must be between 0"),
        ("turns=two", "turns must be a whole number"),
        ("chosen=wider", "chosen must be longer or shorter"),
    ],
)
def test_bad_filters_are_422(data_client, query, expected):
    r = data_client.get(f"/api/v1/data/pairs?{query}")
    assert r.status_code == 422 and expected in r.json()["error"]


def test_attempt_filters_match_the_library(data_client):
    attempts = list(load_attempts(data="sample"))
    cases = [
        ("model_type=rlhf&min_rating=2", dict(model_type="rlhf", min_rating=2)),
        ("num_params=52B&max_rating=1", dict(num_params="52B", max_rating=1)),
        ("min_score=0&max_score=5", dict(min_score=0, max_score=5)),
        ("q=bread", dict(text="bread")),
        ("q=bread&search_in=task", dict(text="bread", search_in="task")),
        ("model_type=rlhf&model_type=plain%20lm", dict(model_type=("rlhf", "plain lm"))),
        ("tag=violence&member=3", dict(tag="violence", member="3")),
    ]
    for query, criteria in cases:
        body = data_client.get(f"/api/v1/data/attempts?{query}&limit=200").json()
        want = list(filter_attempts(attempts, **criteria))
        assert body["total"] == len(want), query
        assert [a["transcript"] for a in body["attempts"]] == [a.transcript for a in want]
    one = data_client.get("/api/v1/data/attempts?limit=1").json()["attempts"][0]
    assert one == attempts[0].to_dict(real_keys=True)
    assert len(one) == 10  # the ten upstream fields, nothing else
    r = data_client.get("/api/v1/data/attempts?min_rating=3&max_rating=1")
    assert r.status_code == 422 and "empty rating range" in r.json()["error"]


def test_the_report_on_the_filtered_attempts(data_client, alice):
    login(data_client, alice[2])
    attempts = list(load_attempts(data="sample"))
    n = sum(1 for a in attempts if a.model_type == "rlhf")
    page = data_client.get("/data/attempts?model_type=rlhf").text
    assert 'href="/data/attempts/report?model_type=rlhf"' in page
    report = data_client.get("/data/attempts/report?model_type=rlhf")
    assert report.status_code == 200
    assert f"{n:,} attempts · success" in report.text  # the report covers the filtered ones
    none = data_client.get("/data/attempts/report?q=zzzz-no-such-text")
    assert none.status_code == 404 and "nothing to report" in none.text


def test_the_report_page_links_its_numbers_and_the_api_serves_them(data_client, alice):
    """The page says every number is in report.json: that link works in the app too."""
    import json as _json

    from hhrlhf.redteam.report import compute_report

    login(data_client, alice[2])
    attempts = list(load_attempts(data="sample"))
    kept = [a for a in attempts if a.model_type == "rlhf" and a.rating >= 2]
    page = data_client.get("/data/attempts/report?model_type=rlhf&min_rating=2&plots=1").text
    link = "/api/v1/data/attempts/report?model_type=rlhf&amp;min_rating=2"
    assert f"<a href='{link}' id='report-json'>" in page  # the filters, not plots=1
    assert "<link rel='icon' href='data:,'>" in page  # no request for /favicon.ico
    r = data_client.get(link.replace("&amp;", "&"))
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    got = r.json()
    expected = compute_report(kept, source=got["source"])
    assert got["records"] == len(kept) > 0
    assert got["sections"] == _json.loads(_json.dumps(expected["sections"]))
    none = data_client.get("/api/v1/data/attempts/report?q=zzzz-no-such-text")
    assert none.status_code == 404 and "nothing to report" in none.json()["error"]
    bad = data_client.get("/api/v1/data/attempts/report?min_rating=x")
    assert bad.status_code == 422


def test_the_report_page_may_use_its_own_styles_and_figures_only(data_client, alice):
    """The self-contained report keeps its <style> and data: figures under the app's policy:
    its styles are allowed by hash (no other inline style), scripts stay 'self' only."""
    import base64
    import hashlib
    import re

    login(data_client, alice[2])
    r = data_client.get("/data/attempts/report?model_type=rlhf")
    policy = dict(
        part.strip().split(" ", 1) for part in r.headers["content-security-policy"].split(";")
    )
    styles = re.findall(r"<style>(.*?)</style>", r.text, re.S)
    assert styles
    allowed = {
        "'sha256-" + base64.b64encode(hashlib.sha256(css.encode()).digest()).decode() + "'"
        for css in styles
    }
    assert set(policy["style-src"].split()) == {"'self'"} | allowed
    assert "unsafe-inline" not in r.headers["content-security-policy"]
    assert policy["script-src"] == "'self'" and policy["img-src"] == "'self' data:"
    assert policy["frame-ancestors"] == "'none'"
    # every other page keeps the strict policy
    other = data_client.get("/data/attempts").headers["content-security-policy"]
    assert "sha256-" not in other and "data:" not in other


DATA_API = (
    "/api/v1/data/subsets",
    "/api/v1/data/pairs",
    "/api/v1/data/pairs/helpful-base/train/0",
    "/api/v1/data/attempts",
    "/api/v1/data/attempts/report",
)
DATA_PAGES = (
    "/data",
    "/data/pairs/helpful-base/train/0",
    "/data/attempts",
    "/data/attempts/0",
    "/data/attempts/report",
)


def test_same_auth_as_the_app(make_client, settings, data_client, storage):
    anonymous = make_client(replace(settings, data="sample"))
    wrong = {"Authorization": "Bearer " + "x" * 43}
    for url in DATA_API:
        assert anonymous.get(url).status_code == 401, url
        assert anonymous.get(url, headers=wrong).status_code == 401, url
    for url in DATA_PAGES:
        page = anonymous.get(url)
        assert page.status_code == 401 and "login" in page.text.lower(), url
    _, token = annotators.add_annotator(storage, "carol")
    annotators.set_disabled(storage, "carol")
    disabled = make_client(replace(settings, data="sample"))
    for url in DATA_API:
        assert disabled.get(url, headers={"Authorization": f"Bearer {token}"}).status_code == 403
    login(disabled, token)
    for url in DATA_PAGES:
        assert disabled.get(url).status_code in (401, 403), url


def test_without_data_the_section_says_how(client, alice):
    r = client.get("/api/v1/data/pairs", headers=alice[1])
    assert r.status_code == 404 and "hh serve --data" in r.json()["error"]


def test_pages_list_filter_and_pair(data_client, sample_pairs, alice):
    login(data_client, alice[2])
    page = data_client.get("/data?class=empty_response")
    assert page.status_code == 200
    want = [p for p in sample_pairs if "empty_response" in p.classes]
    assert f"{len(want)} pairs" in page.text
    for p in want:
        assert f'href="/data/pairs/{p.subset}/{p.split}/{p.index}"' in page.text
    assert '<option value="empty_response" selected>' in page.text
    # a pair with a quirk: the quirk explained, the empty response marked, a JSON link
    p = want[0]
    page = data_client.get(f"/data/pairs/{p.subset}/{p.split}/{p.index}").text
    assert str(escape(PAIR_CLASSES["empty_response"])) in page
    assert "empty response" in page
    assert f'href="/api/v1/data/pairs/{p.subset}/{p.split}/{p.index}"' in page
    # paging links keep the filters (a deep link)
    page = data_client.get("/data?split=train&limit=10").text
    assert 'href="/data?split=train&amp;limit=10&amp;offset=10"' in page
    assert data_client.get("/data?turns=x").status_code == 422
    assert data_client.get("/data/pairs/nope/train/0").status_code == 404


def test_attempt_pages(data_client, alice):
    login(data_client, alice[2])
    attempts = list(load_attempts(data="sample"))
    page = data_client.get("/data/attempts?min_rating=4").text
    n = sum(1 for a in attempts if a.rating >= 4)
    assert f"{n} attempt" in page
    page = data_client.get("/data/attempts/0").text
    assert "Transcript" in page and str(attempts[0].rating) in page
    assert data_client.get("/data/attempts/100000").status_code == 404


def test_a_folder_without_attempts_says_so_and_offers_no_report(
    make_client, settings, alice, hostile_dir
):
    client = make_client(replace(settings, data=hostile_dir))  # preference pairs only
    login(client, alice[2])
    page = client.get("/data/attempts").text
    assert "There are no red-team attempts in" in page
    assert "red-team-attempts/red_team_attempts.jsonl.gz" in page
    assert 'id="report"' not in page and "/data/attempts/report" not in page
    # with attempts, a filter that keeps none says that instead, still without a report link
    sample = make_client(replace(settings, data="sample"))
    login(sample, alice[2])
    page = sample.get("/data/attempts?q=no-such-words-anywhere").text
    assert "No attempt matches these filters." in page and 'id="report"' not in page
    assert 'id="report"' in sample.get("/data/attempts").text


def test_the_collected_attempts_link_to_the_collected_attempts(
    make_client, settings, storage, admin
):
    from test_export import build

    build(storage)  # two finished red-team conversations
    client = make_client(replace(settings, data="sample"))
    login(client, admin[2])
    page = client.get("/data/attempts?source=collected").text
    assert "2 attempts" in page
    assert '<a href="/data/attempts?source=collected">Red-team attempts</a>' in page
    assert '<a href="/data?source=collected">Pairs</a>' in page
    assert '<a href="/data" id="files">The data folder</a>' in page
    assert '<input type="hidden" name="source" value="collected">' in page
    assert '<a href="/data/attempts/0?source=collected">' in page
    one = client.get("/data/attempts/0?source=collected").text
    assert "Get rude replies" in one  # the collected attempt, not the sample's first
    # on the files' pages the nav leads to the collected data instead
    page = client.get("/data/attempts").text
    assert '<a href="/data?source=collected" id="collected">Collected data</a>' in page
    assert '<a href="/data/attempts/0">' in page


def test_hostile_text_is_shown_literally(make_client, settings, alice, hostile_dir):
    client = make_client(replace(settings, data=hostile_dir))
    login(client, alice[2])
    escaped = (
        "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt; {{ 7*7 }}"
    )
    for url in ("/data", "/data/pairs/helpful-base/train/0", "/data?q=script"):
        page = client.get(url).text
        assert "<script>alert" not in page and "<b>bold" not in page
        if "q=" in url:  # the search words are marked, the rest escaped around the marks
            assert '&lt;<mark class="hit">script</mark>&gt;alert(&#34;x&#34;)' in page
            continue
        assert escaped in page or escaped[:40] in page, url
    page = client.get("/data/pairs/helpful-base/train/1").text
    assert "empty response" in page and "holds speaker markers" in page
    assert str(escape(PAIR_CLASSES["response_contains_turns"])) in page
    # the speaker marker the model wrote itself is shown as text
    assert "Knead it.\n\nHuman: thanks" in page


def test_diff_segments_rebuild_the_texts_and_mark_the_change():
    left, right = diff_segments("Mix the flour well.", "Mix the sugar well.")
    assert "".join(t for _, t in left) == "Mix the flour well."
    assert "".join(t for _, t in right) == "Mix the sugar well."
    assert [t for c, t in left if c] == ["flour"]
    assert [t for c, t in right if c] == ["sugar"]
    same = diff_segments("a b", "a b")
    assert not any(c for c, _ in same[0] + same[1])


def test_index_loads_a_folder(hostile_dir):
    index = DataIndex.load(hostile_dir)
    assert [f["rows"] for f in index.files] == [2]
    assert index.files[0]["classes"]["empty_response"] == 1
    assert index.seconds >= 0


def test_serve_refuses_missing_data(tmp_path, db_url):
    r = CliRunner().invoke(
        cli, ["serve", "--demo", "--db", db_url, "--data", str(tmp_path / "nope")]
    )
    assert r.exit_code != 0
    assert "error:" in r.output and "nope" in r.output and "Traceback" not in r.output


def test_collected_data_for_admins(client, storage, admin, bob, tmp_path):
    from test_export import build

    from hhrlhf.collect.services.export import export_collection

    build(storage)
    export_collection(storage, tmp_path / "out", min_strength=1, include_unfinished=True)
    exported = list(load_pairs(data=str(tmp_path / "out")))
    assert exported
    body = client.get("/api/v1/data/pairs?source=collected&limit=200", headers=admin[1]).json()
    assert body["total"] == len(exported)
    assert [p["prompt"] + p["chosen_response"] for p in body["pairs"]] == [
        p.chosen for p in exported
    ]
    r = client.get("/api/v1/data/pairs?source=collected", headers=bob[1])
    assert r.status_code == 403 and "admins only" in r.json()["error"]
    # the pages: the list and a pair, links keeping the source
    login(client, admin[2])
    page = client.get("/data?source=collected").text
    p = exported[0]
    link = f"/data/pairs/{p.subset}/{p.split}/{p.index}?source=collected"
    assert f'href="{link}"' in page
    pair = client.get(link)
    assert pair.status_code == 200 and "Chosen" in pair.text
    login(client, bob[2])
    assert client.get("/data?source=collected").status_code == 403


def test_collected_data_is_rebuilt_only_when_the_database_changed(
    client, storage, admin, monkeypatch
):
    from test_export import _turn, build

    from hhrlhf.collect.services import export

    build(storage)
    exports = []
    real_export = export.export_collection
    monkeypatch.setattr(
        export, "export_collection", lambda *a, **k: exports.append(1) or real_export(*a, **k)
    )
    h = admin[1]

    def pairs():
        return client.get("/api/v1/data/pairs?source=collected&limit=200", headers=h).json()

    def upworkers():
        got = client.get("/api/v1/data/attempts?source=collected", headers=h).json()
        return [a["is_upworker"] for a in got["attempts"]]

    first = pairs()
    assert pairs() == first and upworkers() == [False, False]
    assert len(exports) == 1  # three reads of an unchanged database, one export
    # a new choice is in the next read
    alice = annotators.annotator_by_name(storage, "alice")
    cid = conversations.create_conversation(storage, alice, "helpful", "Soup").id
    t = _turn(storage, alice, cid, "How long do I simmer soup?", "An hour.", "Ten seconds.")
    choices.record_choice(storage, alice, t, pick="a", strength=4, strength_points=4)
    assert pairs()["total"] == first["total"] + 1 and len(exports) == 2
    # so is an annotator's attribute, edited by an admin (it is the attempts' is_upworker)
    r = client.post(
        "/api/v1/admin/annotators/alice", json={"attributes": {"is_upworker": True}}, headers=h
    )
    assert r.status_code == 200, r.text
    assert upworkers() == [True, True] and len(exports) == 3
    # and so is a conversation finished (the red-team rating makes an attempt)
    cid = conversations.create_conversation(storage, alice, "red-team", "Rude", backend="m1").id
    t = _turn(storage, alice, cid, "Be rude.", "No.", "You are silly.")
    choices.record_choice(storage, alice, t, pick="b", strength=2, strength_points=4)
    assert len(upworkers()) == 2
    conversations.finish_conversation(storage, alice, cid, rating=3)
    assert len(upworkers()) == 3 and len(exports) == 5


REAL = os.environ.get("HH_RLHF_REAL")


@pytest.mark.real
@pytest.mark.skipif(
    not (REAL and os.path.exists(os.path.join(REAL, "harmless-base", "test.jsonl.gz"))),
    reason="set HH_RLHF_REAL to a folder holding the real harmless-base/test.jsonl.gz",
)
def test_real_file_class_counts_match_hh_check():
    index = DataIndex.load(REAL)
    checked = audit(data=REAL, near_duplicates=False).counts
    test_file = next(
        f for f in index.files if (f["subset"], f["split"]) == ("harmless-base", "test")
    )
    assert test_file["rows"] == 2312
    totals = Counter()
    for f in index.files:
        totals.update(f["classes"])
    assert {k: totals.get(k, 0) for k in PAIR_CLASSES} == {k: checked[k] for k in PAIR_CLASSES}


def test_one_file_that_names_no_subset(make_client, settings, alice, tmp_path):
    path = tmp_path / "train.jsonl"  # names its split, not its subset
    prompt = "\n\nHuman: How do I fold a paper crane?\n\nAssistant:"
    path.write_bytes(
        orjson.dumps({"chosen": prompt + " Start with a square.", "rejected": prompt + " No."})
        + b"\n"
    )
    client = make_client(replace(settings, data=str(path)))
    login(client, alice[2])
    page = client.get("/data").text
    link = next(part.split('"')[0] for part in page.split('href="/data/pairs/')[1:])
    r = client.get("/data/pairs/" + link)
    assert r.status_code == 200
    assert "Start with a square." in re.sub(r"<[^>]+>", "", r.text)


def test_text_index_finds_what_the_plain_scan_finds(tmp_path):
    """The casefolded buffer gives the rows a scan of every pair's strings gives."""
    from hhrlhf.collect.browse.index import PairQuery, _holds

    root = tmp_path / "data" / "helpful-base"
    root.mkdir(parents=True)
    prompt = "\n\nHuman: Was ist die STRASSE?\n\nAssistant:"
    rows = [
        {"chosen": prompt + " Die Straße.", "rejected": prompt + " Keine."},
        {"chosen": prompt + " a\0b", "rejected": prompt + " Weiß nicht."},
        {"chosen": "\n\nHuman: tea\n\nAssistant: Green tea.", "rejected": "\n\nHuman: tea"},
    ]
    with gzip.open(root / "train.jsonl.gz", "wb") as f:
        f.write(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    index = DataIndex.load(str(tmp_path / "data"))
    sample = DataIndex.load("sample")
    needles = ["strasse", "STRASSE", "ß", "weiss", "assistant: die", "a\0b", "tea", "?\n\nass"]
    needles += ["recipe", "the", "human:", "\n\nhuman:", "e", "zzzz-none"]
    for idx in (index, sample):
        for needle in needles:
            for where in ("any", "prompt", "responses"):
                total, _ = idx.query(PairQuery(q=needle, where=where), 0, 1)
                want = [p for p in idx.pairs if _holds(p, needle.casefold(), where)]
                assert total == len(want), (needle, where)
    assert index.query(PairQuery(q="STRASSE", where="responses"), 0, 5)[0] == 1  # Straße
    assert index.query(PairQuery(q="WEISS", where="responses"), 0, 5)[0] == 1  # Weiß
    assert index.query(PairQuery(q="assistant: die", where="prompt"), 0, 5)[0] == 0
    assert index.query(PairQuery(q="assistant: die"), 0, 5)[0] == 1  # across the boundary
    assert index.query(PairQuery(q="a\0b"), 0, 5)[0] == 1  # NUL: the plain scan


HOSTILE_DATA = os.path.join(os.path.dirname(__file__), "..", "data", "browse", "hostile")
#: every page of the data section, over the hostile fixture (script tags, template syntax,
#: an RTL override, NUL, fake speaker markers: tests/data/browse/hostile)
HOSTILE_PAGES = [
    "/data",
    "/data?q=script",
    "/data?q=water&where=prompt",
    "/data/pairs/helpful-base/train/0",
    "/data/pairs/helpful-base/train/1",
    "/data/pairs/helpful-base/train/2",
    "/data/attempts",
    "/data/attempts?q=script",
    "/data/attempts/0",
]


def test_hostile_fixture_is_shown_literally_on_every_page(make_client, settings, alice):
    client = make_client(replace(settings, data=HOSTILE_DATA))
    login(client, alice[2])
    for url in HOSTILE_PAGES:
        r = client.get(url)
        assert r.status_code == 200, url
        page = r.text
        assert "<script>window" not in page and "<img src=x" not in page, url
        script = (
            '&lt;<mark class="hit">script</mark>&gt;' if "q=script" in url else "&lt;script&gt;"
        )
        assert f"{script}window.__pwned=1" in page or "&lt;img src=x" in page, url
        assert "{{7*7}}" in page, url  # template syntax in the data is text
        assert "\u202e" not in page and "\0" not in page, url  # never raw
    pair = client.get("/data/pairs/helpful-base/train/2").text
    assert "\\u202edlrow" in pair and "olleh\\u202c" in pair and "before\\x00after" in pair
    assert "&lt;/textarea&gt;&lt;/div&gt;Daily" in pair
    fake = client.get("/data/pairs/helpful-base/train/1").text
    assert "holds speaker markers" in fake and "empty response" in fake
    assert "Mist it.\n\nHuman: fake turn written by the model" in fake
    attempt = client.get("/data/attempts/0").text
    assert "\\u202e" in attempt and "&lt;script&gt;" in attempt


def test_every_filter_state_is_a_deep_link(data_client, sample_pairs, alice):
    """A URL with every filter set opens the same list with the form filled in, and its
    page links keep every filter; the pair links open those pairs."""
    from hhrlhf.collect.browse import PairQuery

    login(data_client, alice[2])
    state = "subset=helpful-base&split=train&turns=1&chosen=longer&q=the&where=responses&limit=5"
    page = data_client.get(f"/data?{state}").text
    for selected in ("helpful-base", "train", "longer", "responses"):
        assert f'<option value="{selected}" selected>' in page
    assert 'name="turns" value="1"' in page and 'name="q" value="the"' in page
    index = DataIndex.load("sample")
    query = PairQuery("helpful-base", "train", None, 1, "longer", "the", "responses")
    total, first = index.query(query, 0, 5)
    assert total > 5 and f"{total} pairs" in page
    assert f'href="/data?{state.replace("&", "&amp;")}&amp;offset=5"' in page
    for p in first:
        link = f"/data/pairs/{p.subset}/{p.split}/{p.index}"
        assert f'href="{link}"' in page
        assert p.chosen_response[:20] in re.sub(r"<[^>]+>", "", data_client.get(link).text)
    second = data_client.get(f"/data?{state}&offset=5").text
    assert f'href="/data?{state.replace("&", "&amp;")}&amp;offset=0"' in second
    _, following = index.query(query, 5, 5)
    assert f'href="/data/pairs/{following[0].subset}/train/{following[0].index}"' in second
    # the attempts too, a repeated filter kept in the page links
    attempts = "model_type=rlhf&model_type=plain+lm&min_rating=1&limit=3"
    page = data_client.get(f"/data/attempts?{attempts}").text
    assert f'href="/data/attempts?{attempts.replace("&", "&amp;")}&amp;offset=3"' in page
    assert 'name="min_rating" value="1"' in page


def test_kept_queries_are_bounded_and_paging_reuses_them():
    from hhrlhf.collect.browse import PairQuery

    index = DataIndex.load("sample")
    first = index.query(PairQuery(split="train"), 0, 10)
    rows = index._found[PairQuery(split="train")]
    assert index.query(PairQuery(split="train"), 10, 10)[1] == [index.pairs[i] for i in rows[10:20]]
    assert index.query(PairQuery(split="train"), 0, 10) == first
    for turns in range(40):
        index.query(PairQuery(turns=turns), 0, 1)
    assert len(index._found) == 32 and PairQuery(turns=39) in index._found


def test_the_filters_offer_the_splits_and_subsets_there_are(
    make_client, settings, alice, hostile_dir
):
    import re

    client = make_client(replace(settings, data=hostile_dir))  # helpful-base/train only
    login(client, alice[2])
    page = client.get("/data").text
    for name, want in (("subset", ["helpful-base"]), ("split", ["train"])):
        select = page.split(f'<select name="{name}">')[1].split("</select>")[0]
        assert re.findall(r'<option value="([^"]+)"', select) == want
