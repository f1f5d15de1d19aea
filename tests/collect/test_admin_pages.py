"""The review page and the admin pages in process: access, content, escaping, no inline script."""

from __future__ import annotations

from dataclasses import replace

import pytest

pytest.importorskip("jinja2")

from logins import login as login_with_token  # noqa: E402
from test_pages import HOSTILE, _audit  # noqa: E402
from test_review import conversation  # noqa: E402

from hhrlhf.collect.services import annotators, choices, conversations, leases
from hhrlhf.collect.services.review import next_review, submit_review  # noqa: E402
from hhrlhf.collect.web.admin import split_prefix  # noqa: E402


@pytest.fixture
def app_client(make_client, settings):
    return make_client(replace(settings, review_fraction=1.0))


def login(client, storage, name, role="annotator"):
    who, token = annotators.add_annotator(storage, name, role=role)
    assert login_with_token(client, token).status_code == 303
    return who


def clean(response):
    audit = _audit(response.text)
    assert audit.inline == []
    assert audit.scripts == ["/static/collect.js", "/static/admin.js"]


def test_split_prefix():
    prefix = "\n\nHuman: Hi there\n\nAssistant: Hello!\n\nHuman: Tomatoes?\n\nAssistant:"
    assert split_prefix(prefix) == [
        {"role": "human", "text": "Hi there"},
        {"role": "assistant", "text": "Hello!"},
        {"role": "human", "text": "Tomatoes?"},
    ]


def test_pages_need_a_login(app_client):
    for path in ("/review", "/admin", "/admin/leaderboard"):
        r = app_client.get(path)
        assert r.status_code == 401 and "login" in r.text.lower()


def test_review_page_shows_a_blind_task_escaped(app_client, storage):
    author, _ = annotators.add_annotator(storage, "author")
    cid = conversations.create_conversation(storage, author, "helpful", "Garden").id
    # backend names no random token can hold (the page's CSRF token once held "m1")
    tid = conversations.create_turn(storage, author, cid, HOSTILE, ("model-one", "model-two")).id
    assert leases.acquire_lease(storage, tid, "w", 60)
    answers = {
        "a": {"text": "Left " + HOSTILE, "raw_text": "x"},
        "b": {"text": "Right answer.", "raw_text": "x"},
    }
    assert leases.finish_generation(storage, tid, "w", answers) == "ready"
    choices.record_choice(storage, author, tid, pick="a", strength=2, strength_points=4)
    conversations.finish_conversation(storage, author, cid)
    login(app_client, storage, "bob")
    r = app_client.get("/review")
    assert r.status_code == 200
    clean(r)
    assert "<script>alert(1)</script>" not in r.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert "Right answer." in r.text and "author" not in r.text
    assert "model-one" not in r.text and "model-two" not in r.text  # blind
    assert r.text.count('class="point review-point') == 8
    assert 'id="review" data-id="' in r.text
    assert 'href="/admin"' not in r.text  # not an admin


def test_review_page_when_nothing_is_left(app_client, storage):
    login(app_client, storage, "bob")
    r = app_client.get("/review")
    assert r.status_code == 200 and "Nothing to review" in r.text


def test_admin_pages_for_admins_only(app_client, storage):
    login(app_client, storage, "bob")
    for path in ("/admin", "/admin/leaderboard"):
        assert app_client.get(path).status_code == 403


def test_admin_page_lists_annotators_agreement_and_conversations(app_client, storage):
    alice, _ = annotators.add_annotator(storage, HOSTILE[:40])
    bob, _ = annotators.add_annotator(storage, "bob")
    conversation(storage, alice, [("a", 3), ("b", 2)])
    while (task := next_review(storage, bob, 1.0)) is not None:
        submit_review(storage, bob, task.id, "a", 2, 4)
    login(app_client, storage, "root", role="admin")
    r = app_client.get("/admin")
    assert r.status_code == 200
    clean(r)
    assert "<script>alert(1)" not in r.text and "&lt;script&gt;alert(1)" in r.text
    assert 'data-name="bob"' in r.text
    assert "Fleiss&#39; kappa" in r.text or "Fleiss' kappa" in r.text
    assert "2 reviewed comparisons, 4 ratings" in r.text
    assert "Garden questions" in r.text  # every conversation, not only the admin's own
    assert 'href="/admin/leaderboard"' in r.text
    # the admin cannot disable themself from the page (no buttons on their own row)
    row = r.text.split('data-name="root"')[1].split("</tr>")[0]
    assert "annotator-toggle" not in row


def test_leaderboard_page(app_client, storage):
    alice, _ = annotators.add_annotator(storage, "alice")
    conversation(storage, alice, [("a", 3), ("a", 3), ("b", 2)], backends=("model-x", "model-y"))
    login(app_client, storage, "root", role="admin")
    r = app_client.get("/admin/leaderboard")
    assert r.status_code == 200
    assert _audit(r.text).inline == []
    table = r.text.split('id="leaderboard"')[1]
    assert table.index("model-x") < table.index("model-y")  # 2 wins of 3 ranks first
    assert "3 votes in 1 conversations, from 20" in r.text  # and the date range
    # model-x leads 2 to 1: both of its wins must go before model-y is first
    robust = r.text.split('id="leaderboard-robustness">')[1].split("</p>")[0]
    assert "The top rank changes (to model-y) if these 2 votes are removed" in robust
    assert robust.count("conversation ") == 2


def test_leaderboard_page_empty(app_client, storage):
    login(app_client, storage, "root", role="admin")
    assert (
        "No comparisons between two different backends" in app_client.get("/admin/leaderboard").text
    )


def test_admin_opens_anyone_s_conversation(app_client, storage):
    alice, _ = annotators.add_annotator(storage, "alice")
    cid = conversation(storage, alice, [("a", 3)])
    login(app_client, storage, "root", role="admin")
    r = app_client.get(f"/conversations/{cid}")
    assert r.status_code == 200 and "Garden questions" in r.text  # turns load by script


def _columns(table_html):
    """(header classes, first row's cell classes) of a table, in column order."""
    import re

    head = re.findall(r"<th(\s[^>]*)?>", table_html.split("</thead>")[0])
    row = table_html.split("<tbody>")[1].split("</tr>")[0]
    cells = re.findall(r"<td(\s[^>]*)?>", row)
    return ["num" in h for h in head], ["num" in c for c in cells]


def test_number_columns_align_their_headers(app_client, storage):
    # right-aligned numbers under left-aligned headers read as the next column's
    alice, _ = annotators.add_annotator(storage, "alice")
    conversation(storage, alice, [("a", 3), ("b", 2)], backends=("model-x", "model-y"))
    login(app_client, storage, "root", role="admin")
    for path, table in (("/admin", 'id="annotators"'), ("/admin/leaderboard", 'id="leaderboard"')):
        html = app_client.get(path).text.split(table)[1].split("</table>")[0]
        head, cells = _columns(html)
        assert any(cells) and head[: len(cells)] == cells, path


def test_leaderboard_page_warns_where_an_interval_means_nothing(app_client, storage):
    """model-x never lost and model-y never won: no 0-width interval, a warning each."""
    alice, _ = annotators.add_annotator(storage, "alice")
    conversation(storage, alice, [("a", 3), ("a", 3)], backends=("model-x", "model-y"))
    login(app_client, storage, "root", role="admin")
    r = app_client.get("/admin/leaderboard")
    assert r.status_code == 200
    table = r.text.split('id="leaderboard"')[1].split("</table>")[0]
    assert table.count("none: never lost") == 1 and table.count("none: never won") == 1
    assert " to " not in table  # no interval shown
    warned = r.text.split('id="leaderboard-warnings">')[1].split("</ul>")[0]
    assert '<strong dir="auto">model-x</strong>: never lost: no interval' in warned
    assert '<strong dir="auto">model-y</strong>: never won: no interval' in warned
