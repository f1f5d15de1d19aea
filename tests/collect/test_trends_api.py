"""The annotator trends outside the service: ``GET /api/v1/admin/trends`` (admins only), the
``/admin/annotators`` page in process, ``hh collect trends``, and where slot A is shown."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from click.testing import CliRunner
from logins import login as login_with_token
from test_pages import HOSTILE
from test_review import conversation, make_turn
from trends_rows import plant

from hhrlhf.cli import cli
from hhrlhf.collect.domain import now
from hhrlhf.collect.services import annotators, conversations
from hhrlhf.collect.web.admin_trends import sparkline

pytest.importorskip("jinja2")


def _week_of_work(storage, name: str, *, seconds: float = 12.0, read: float = 30.0) -> int:
    """An annotator with 20 picks made today, a minute apart (half of them for A)."""
    who, _ = annotators.add_annotator(storage, name)
    midnight = now().replace(hour=0, minute=0, second=0, microsecond=0)
    at = max(now() - timedelta(hours=1, minutes=19), midnight)
    plant(storage, who.id, at, [seconds] * 20, picks="ab" * 10, read=[read] * 20)
    return who.id


def test_the_trends_route_answers_admins_only(client, storage, admin, alice):
    _week_of_work(storage, "worker")
    r = client.get("/api/v1/admin/trends?weeks=3", headers=admin[1])
    assert r.status_code == 200
    body = r.json()
    assert len(body["weeks"]) == 3 and re.fullmatch(r"\d{4}-W\d\d", body["weeks"][-1]["label"])
    worker = next(a for a in body["annotators"] if a["name"] == "worker")
    assert worker["turns_this_week"] == 20
    assert worker["weeks"][-1]["share_a"] == 0.5 and worker["weeks"][-1]["median_seconds"] == 12.0
    assert client.get("/api/v1/admin/trends", headers=alice[1]).status_code == 403
    assert client.get("/api/v1/admin/trends").status_code == 401
    for weeks in (0, 53):
        r = client.get(f"/api/v1/admin/trends?weeks={weeks}", headers=admin[1])
        assert r.status_code == 422


def test_the_trends_page_plots_each_metric_with_its_numbers_in_words(client, storage):
    _week_of_work(storage, HOSTILE, read=1.0)  # every pick too fast to read
    _, token = annotators.add_annotator(storage, "root", role="admin")
    assert login_with_token(client, token).status_code == 303
    r = client.get("/admin/annotators")
    assert r.status_code == 200
    page = r.text
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    svgs = re.findall(
        r'<svg class="spark"[^>]*aria-label="([^"]*)"[^>]*><title>([^<]*)</title>', page
    )
    assert len(svgs) == 2 * 6  # two annotators, six metrics
    labels = [label for label, title in svgs if label == title]
    assert len(labels) == len(svgs)
    assert any(label.startswith("A-share by week: ") and label.endswith(" 50%") for label in labels)
    assert "100% of picks faster than the text can be read in " in page
    assert '<span class="badge drift">too fast</span>' in page
    assert "<details><summary>weeks" in page
    admin_page = client.get("/admin").text
    assert 'href="/admin/annotators"' in admin_page


def test_the_trends_page_is_for_admins(client, storage):
    _, token = annotators.add_annotator(storage, "annie")
    assert client.get("/admin/annotators").status_code == 401
    assert login_with_token(client, token).status_code == 303
    assert client.get("/admin/annotators").status_code == 403


def test_a_sparkline_breaks_at_a_week_without_data_and_marks_flagged_weeks():
    weeks = ["W1", "W2", "W3", "W4"]
    s = sparkline("x", weeks, [1.0, 2.0, None, 4.0], str, flagged=frozenset({"W4"}))
    assert len(s.lines) == 1 and len(s.lines[0].split()) == 2  # W3 breaks the line; W4 alone
    assert [f for _, _, f in s.dots] == [False, False, True]
    assert s.label == "x by week: W1 1.0, W2 2.0, W3 no data, W4 4.0"
    assert s.last == "4.0"
    assert max(y for _, y, _ in s.dots) > min(y for _, y, _ in s.dots)  # higher is up
    assert sparkline("x", weeks, [None] * 4, str).last == "–"


def test_the_conversation_page_shows_slot_a_first_as_a(client, storage, alice):
    """The A-share counts ``pick == "a"``: slot a is the response shown first, labelled A."""
    who, _, token = alice
    cid = conversations.create_conversation(storage, who, "helpful", "Garden").id
    make_turn(storage, who, cid, "Which?", "First answer.", "Second answer.")
    assert login_with_token(client, token).status_code == 303
    page = client.get(f"/conversations/{cid}").text
    slots = re.findall(
        r'<article class="candidate" data-slot="(\w)">\s*<header><span class="slot">(\w)', page
    )
    assert slots == [("a", "A"), ("b", "B")]


def test_hh_collect_trends_prints_json_and_a_table(db_url, storage):
    _week_of_work(storage, "worker")
    annotators.add_annotator(storage, "rev")
    who = annotators.annotator_by_name(storage, "worker")
    conversation(storage, who, [("a", 3)])
    run = CliRunner().invoke
    r = run(cli, ["collect", "trends", "--db", db_url, "--weeks", "2", "--json"])
    assert r.exit_code == 0, r.output
    body = json.loads(r.stdout)
    assert [len(body["weeks"]), body["annotators"][0]["name"]] == [2, "rev"]
    worker = body["annotators"][1]
    assert worker["turns_this_week"] == 21 and worker["flags"] == []
    r = run(cli, ["collect", "trends", "--db", db_url])
    assert r.exit_code == 0, r.output
    assert re.search(r"^worker\s+21\s+21\s", r.stdout, re.M), r.stdout
    r = run(cli, ["collect", "trends", "--db", db_url, "--weeks", "0"])
    assert r.exit_code == 2 and "--weeks" in r.output
