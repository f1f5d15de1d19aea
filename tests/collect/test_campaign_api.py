"""The campaign from outside: ``hh collect tasks`` / ``hh collect campaign`` (messages, exit
codes) and the JSON routes (who may call which, what a new conversation is handed)."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli
from hhrlhf.collect.services import annotators, campaign, tasks
from hhrlhf.collect.services.campaign import Targets


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


# -- CLI -------------------------------------------------------------------------------------


def test_import_prints_counts_and_a_bad_line_is_one_error_line(storage, db_url, tmp_path):
    good = tmp_path / "tasks.jsonl"
    good.write_text('{"text": "Plan a garden"}\n{"text": "Plan a garden"}\n{"text": "Bake"}\n')
    r = run("collect", "tasks", "import", good, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "imported 2 tasks, skipped 1" in r.output
    assert f"{good}, line 2: skipped: the same text and mode as line 1" in r.output
    bad = tmp_path / "bad.csv"
    bad.write_text("text,mode,repeat,tags\nfine,helpful,1,\nworse,helpful,zero,\n")
    # a real process: one "error:" line, no traceback, exit status 1, nothing imported
    p = subprocess.run(
        [sys.executable, "-m", "hhrlhf", "collect", "tasks", "import", str(bad), "--db", db_url],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1
    assert p.stderr.strip() == (
        f"error: {bad}, line 3: repeat must be a whole number >= 1, not 'zero' (nothing imported)"
    )
    assert "Traceback" not in p.stderr
    assert len(tasks.list_tasks(storage)) == 2
    r = run("collect", "tasks", "import", bad, "--db", db_url, "--lenient", "--dry-run", "--json")
    assert r.exit_code == 0
    out = orjson.loads(r.stdout)
    assert (out["imported"], out["dry_run"], len(out["errors"])) == (1, True, 1)


def test_tasks_list_and_campaign_set_and_show(storage, db_url):
    tasks.add_task(storage, "Ask about tides", "red-team", 2, ["sea"])
    r = run("collect", "tasks", "list", "--db", db_url, "--json")
    assert orjson.loads(r.stdout)[0]["served"] == 0
    annotators.add_annotator(storage, "bob")
    r = run(
        "collect", "campaign", "set", "--db", db_url, "--no-free", "--unit", "conversations",
        "--target-per-day", 3, "--campaign-total", 2000,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "free conversations: off" in r.output
    assert "targets: 3 conversations per day" in r.output
    assert "campaign total: 0 of 2,000 conversations (open)" in r.output
    c = campaign.campaign(storage)
    assert (c.free_conversations, c.targets.per_day, c.total.count) == (False, 3, 2000)
    assert c.changed["targets"][0].startswith("cli")
    r = run("collect", "campaign", "set", "--db", db_url, "--annotator", "bob", "--target-total", 9)
    assert campaign.campaign(storage).targets_for(
        annotators.annotator_by_name(storage, "bob").id
    ) == (Targets("turns", None, None, 9))
    r = run("collect", "campaign", "show", "--db", db_url, "--json")
    shown = orjson.loads(r.stdout)
    assert shown["progress"]["annotators"][0]["targets"]["total"] == 9
    assert run("collect", "campaign", "set", "--db", db_url).exit_code == 2
    r = run("collect", "campaign", "set", "--db", db_url, "--no-targets", "--target-total", 1)
    assert r.exit_code == 2 and "--no-targets goes with no --target-* option" in r.output


# -- API -------------------------------------------------------------------------------------


ADMIN_ROUTES = [
    ("GET", "/api/v1/admin/tasks", None),
    ("POST", "/api/v1/admin/tasks", {"text": "t"}),
    ("POST", "/api/v1/admin/tasks/1/disable", {}),
    ("GET", "/api/v1/admin/campaign", None),
    ("POST", "/api/v1/admin/campaign", {"free_conversations": False}),
    ("GET", "/api/v1/admin/campaign/progress", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_ROUTES)
def test_admin_routes_refuse_annotators_and_visitors(client, alice, method, path, body):
    _, headers, _ = alice
    assert client.request(method, path, json=body).status_code == 401
    assert client.request(method, path, json=body, headers=headers).status_code == 403


def test_a_campaign_through_the_api(client, admin, alice, storage):
    _, ah, _ = admin
    _, h, _ = alice
    r = client.post(
        "/api/v1/admin/tasks",
        json={"text": "Plan a picnic", "repeat": 1, "tags": ["food"]},
        headers=ah,
    )
    assert r.status_code == 201 and r.json()["served"] == 0
    tid = r.json()["id"]
    assert (
        client.post("/api/v1/admin/tasks", json={"text": "x", "repeat": 0}, headers=ah).status_code
        == 422
    )
    p = client.get("/api/v1/progress", headers=h).json()
    assert p["next_task"]["text"] == "Plan a picnic" and p["can_start"] and p["free_allowed"]
    r = client.post(
        "/api/v1/admin/campaign",
        json={"free_conversations": False, "targets": {"unit": "conversations", "total": 1}},
        headers=ah,
    )
    assert r.status_code == 200
    assert r.json()["targets"] == {
        "unit": "conversations",
        "per_day": None,
        "per_week": None,
        "total": 1,
    }
    # a bad value changes nothing, not even the valid part of the body
    r = client.post(
        "/api/v1/admin/campaign",
        json={"free_conversations": True, "targets": {"unit": "hours"}},
        headers=ah,
    )
    assert r.status_code == 422 and "unit 'hours'" in r.json()["error"]
    assert client.get("/api/v1/admin/campaign", headers=ah).json()["free_conversations"] is False
    r = client.post("/api/v1/conversations", json={"task_description": "mine"}, headers=h)
    assert r.status_code == 403 and "Conversations of your own are off" in r.json()["error"]
    r = client.post("/api/v1/conversations", json={}, headers=h)
    assert r.status_code == 201 and r.json()["task_description"] == "Plan a picnic"
    r = client.post("/api/v1/conversations", json={}, headers=h)
    assert r.status_code == 409
    assert r.json()["error"].startswith("You have reached your target of 1 conversation")
    p = client.get("/api/v1/progress", headers=h).json()
    assert (p["counts"]["total"], p["can_start"], p["next_task"]) == (1, False, None)
    tasks_now = client.get("/api/v1/admin/tasks", headers=ah).json()["tasks"]
    assert [(t["id"], t["served"]) for t in tasks_now] == [(tid, 1)]
    r = client.post(f"/api/v1/admin/tasks/{tid}/disable", json={}, headers=ah)
    assert r.json()["disabled"] is True
    board = client.get("/api/v1/admin/campaign/progress", headers=ah).json()
    assert board["tasks_served"] == 1
    assert {a["name"]: a["counts"]["total"] for a in board["annotators"]}["alice"] == 1
    r = client.post("/api/v1/admin/campaign", json={"annotator": "alice"}, headers=ah)
    assert r.status_code == 422 and 'send "targets" with it' in r.json()["error"]
    r = client.post("/api/v1/admin/campaign", json={"campaign_total": {"count": 5}}, headers=ah)
    assert r.json()["campaign_total"] == {"unit": "turns", "count": 5}
    assert campaign.campaign(storage).changed["campaign_total"][0] == "root"
