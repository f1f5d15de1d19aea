"""Review by the reviewers through the API and the CLI: the judge routes (annotators 403),
the verdict counts, the reviewer role, and ``hh collect export --accepted-only``."""

from __future__ import annotations

import orjson
import pytest
from click.testing import CliRunner
from test_api_review import finished_conversation

from hhrlhf.cli import cli
from hhrlhf.collect.services import annotators


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def reviewer(storage):
    who, token = annotators.add_annotator(storage, "vera", role="reviewer")
    return who, {"Authorization": f"Bearer {token}"}, token


def test_a_reviewer_judges_and_an_annotator_may_not(client, alice, bob, reviewer, admin):
    _, ha, _ = alice
    _, hb, _ = bob
    _, hv, _ = reviewer
    _, hr, _ = admin
    finished_conversation(client, ha, [("a", 3), ("b", 2)])
    assert client.get("/api/v1/judge/next", headers=hb).status_code == 403
    nxt = client.get("/api/v1/judge/next", headers=hv).json()
    assert nxt["waiting"] == 2 and nxt["strength_points"] == 4
    first = nxt["item"]
    assert (first["pick"], first["strength"], first["annotator"]) == ("a", 3, "alice")
    url = f"/api/v1/judge/{first['comparison_id']}"
    assert client.post(url, json={"verdict": "accept"}, headers=hb).status_code == 403
    r = client.post(url, json={"verdict": "reject"}, headers=hv)
    assert r.status_code == 422 and "reason" in r.json()["error"]
    r = client.post(url, json={"verdict": "reject", "reason": "off-task"}, headers=hv)
    assert r.status_code == 200, r.text
    assert r.json()["verdict"]["reviewer"] == "vera"
    # skipping the first one left gives the same (nothing else is left)
    second = client.get("/api/v1/judge/next", headers=hv).json()["item"]
    skip = client.get(f"/api/v1/judge/next?skip={second['comparison_id']}", headers=hv).json()
    assert skip["item"]["comparison_id"] == second["comparison_id"]
    fix = {"verdict": "fix", "pick": "a", "strength": 4}
    r = client.post(f"/api/v1/judge/{second['comparison_id']}", json=fix, headers=hv)
    assert r.json()["verdict"]["fixed_pick"] == "a"
    assert client.get("/api/v1/judge/next", headers=hv).json()["item"] is None
    # the counts: admins only
    assert client.get("/api/v1/admin/verdicts", headers=hv).status_code == 403
    counts = client.get("/api/v1/admin/verdicts", headers=hr).json()
    assert counts == {"accepted": 0, "rejected": 1, "fixed": 1, "waiting": 0,
                      "rejected_by_reason": {"off-task": 1}}  # fmt: skip
    # a reviewer's verdict stands; an admin's replaces it
    r = client.post(url, json={"verdict": "accept"}, headers=hv)
    assert r.status_code == 409
    assert (
        client.post(url, json={"verdict": "accept"}, headers=hr).json()["verdict"]["reviewer"]
        == "root"
    )


def test_the_judge_page_for_each_role(client, alice, bob, reviewer, admin):
    _, ha, _ = alice
    finished_conversation(client, ha, [("b", 3)])
    page = client.get("/judge", headers=reviewer[1])
    assert page.status_code == 200 and 'id="judge"' in page.text
    assert "picked" in page.text and 'id="verdict-counts"' not in page.text
    assert client.get("/judge", headers=bob[1]).status_code == 403
    admin_page = client.get("/judge", headers=admin[1])
    assert 'id="verdict-counts"' in admin_page.text
    assert client.get("/judge", headers=ha).status_code == 403  # an annotator
    assert 'href="/judge#verdict-counts"' in client.get("/admin", headers=admin[1]).text
    # a judged one, opened by its id: its verdict shown, the reason escaped
    cid = client.get("/api/v1/judge/next", headers=reviewer[1]).json()["item"]["comparison_id"]
    hostile = {"verdict": "reject", "reason": "<script>alert(1)</script>"}
    assert client.post(f"/api/v1/judge/{cid}", json=hostile, headers=reviewer[1]).is_success
    page = client.get(f"/judge?id={cid}", headers=admin[1]).text
    assert 'id="judge-existing"' in page and "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert client.get("/judge?id=999999", headers=admin[1]).status_code == 404


def test_an_admin_adds_a_reviewer(client, admin):
    r = client.post("/api/v1/admin/annotators", json={"name": "rex", "role": "reviewer"},
                    headers=admin[1])  # fmt: skip
    assert r.status_code == 201 and r.json()["annotator"]["role"] == "reviewer"
    r = client.post("/api/v1/admin/annotators", json={"name": "max", "role": "boss"},
                    headers=admin[1])  # fmt: skip
    assert r.status_code == 422


def test_cli_roles_and_export_accepted_only(storage, db_url, tmp_path, client, alice):
    _, ha, _ = alice
    finished_conversation(client, ha, [("a", 3), ("b", 3)])
    r = run("collect", "annotator", "add", "vera", "--role", "reviewer", "--db", db_url)
    assert r.exit_code == 0, r.output
    r = run("collect", "annotator", "set", "alice", "--role", "reviewer", "--db", db_url)
    assert r.exit_code == 0 and "alice: reviewer" in r.output
    vera = annotators.annotator_by_name(storage, "vera")
    from hhrlhf.collect.services.verdicts import judge_queue, record_verdict

    first, second = judge_queue(storage, vera)
    record_verdict(storage, vera, first, "fix", pick="b", strength=2)
    r = run("collect", "export", "--db", db_url, "--out", str(tmp_path / "all"), "--json")
    assert orjson.loads(r.stdout)["rows"] == 2 and "accepted_only" not in r.stdout
    out = tmp_path / "accepted"
    r = run("collect", "export", "--db", db_url, "--out", str(out), "--accepted-only", "--json")
    assert r.exit_code == 0, r.output
    manifest = orjson.loads(r.stdout)
    assert manifest["rows"] == 1 and manifest["accepted_only"] is True
    assert manifest["left_out"]["no_verdict"] == 1 and manifest["left_out"]["rejected"] == 0
    r = run("collect", "export", "--db", db_url, "--out", str(tmp_path / "x"), "--accepted-only")
    assert "no_verdict 1" in r.output
