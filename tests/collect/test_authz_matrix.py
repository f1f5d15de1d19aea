"""The authorisation matrix: every route x {no token, wrong token, disabled annotator, another
annotator, admin, the owner's cookie without a CSRF token}. A refused request changes nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from logins import login

from hhrlhf.collect.services import annotators, transcripts

WHO = ("none", "wrong", "disabled", "other", "admin", "forged")

# route -> expected status per identity (the owner is alice; "forged" is alice's cookie session
# sending a state-changing request with no X-CSRF-Token, as a cross-site form would)
MATRIX = {
    ("GET", "/api/v1/health"): (200, 200, 200, 200, 200, 200),
    ("GET", "/api/v1/me"): (401, 401, 403, 200, 200, 200),
    ("GET", "/api/v1/conversations"): (401, 401, 403, 200, 200, 200),
    ("POST", "/api/v1/conversations"): (401, 401, 403, 201, 201, 403),
    ("GET", "/api/v1/conversations/{cid}"): (401, 401, 403, 404, 200, 200),
    ("POST", "/api/v1/conversations/{cid}/turns"): (401, 401, 403, 404, 403, 403),
    ("GET", "/api/v1/turns/{tid}/stream"): (401, 401, 403, 404, 200, 200),
    ("POST", "/api/v1/turns/{tid}/retry"): (401, 401, 403, 404, 200, 403),
    ("POST", "/api/v1/turns/{tid}/stop"): (401, 401, 403, 404, 200, 403),
    ("POST", "/api/v1/turns/{tid}/withdraw"): (401, 401, 403, 404, 403, 403),
    ("POST", "/api/v1/turns/{tid}/choice"): (401, 401, 403, 404, 403, 403),
    ("POST", "/api/v1/conversations/{cid}/finish"): (401, 401, 403, 404, 403, 403),
    ("GET", "/"): (401, 401, 403, 200, 200, 200),
    ("GET", "/conversations/{cid}"): (401, 401, 403, 404, 200, 200),
    ("GET", "/help"): (200, 200, 200, 200, 200, 200),
    ("GET", "/static/collect.js"): (200, 200, 200, 200, 200, 200),
    ("GET", "/favicon.ico"): (200, 200, 200, 200, 200, 200),
    ("POST", "/logout"): (200, 200, 200, 200, 200, 403),
    ("GET", "/login"): (401, 401, 401, 401, 401, 401),  # no token in the URL
    ("POST", "/login"): (403, 403, 403, 403, 403, 403),  # no login form value (its cookie)
    # review tasks (nothing is due: review 0 does not exist) and the admin's routes
    ("GET", "/api/v1/reviews/next"): (401, 401, 403, 200, 200, 200),
    ("POST", "/api/v1/reviews/{rid}"): (401, 401, 403, 404, 404, 403),
    ("POST", "/api/v1/reviews/{rid}/skip"): (401, 401, 403, 404, 404, 403),
    ("GET", "/review"): (401, 401, 403, 200, 200, 200),
    ("GET", "/api/v1/admin/stats"): (401, 401, 403, 403, 200, 403),
    ("GET", "/api/v1/admin/leaderboard"): (401, 401, 403, 403, 200, 403),
    ("GET", "/api/v1/admin/trends"): (401, 401, 403, 403, 200, 403),
    ("POST", "/api/v1/admin/annotators"): (401, 401, 403, 403, 201, 403),
    ("POST", "/api/v1/admin/annotators/{name}"): (401, 401, 403, 403, 200, 403),
    # backends live ("bob" is no backend: the admin's request reaches the rule, 404)
    ("GET", "/api/v1/admin/backends"): (401, 401, 403, 403, 200, 403),
    ("POST", "/api/v1/admin/backends/{name}/pause"): (401, 401, 403, 403, 404, 403),
    ("POST", "/api/v1/admin/backends/{name}/resume"): (401, 401, 403, 403, 404, 403),
    ("POST", "/api/v1/admin/backends/{name}/weight"): (401, 401, 403, 403, 404, 403),
    ("GET", "/admin"): (401, 401, 403, 403, 200, 403),
    ("GET", "/admin/leaderboard"): (401, 401, 403, 403, 200, 403),
    ("GET", "/admin/backends"): (401, 401, 403, 403, 200, 403),
    ("GET", "/admin/annotators"): (401, 401, 403, 403, 200, 403),
    ("GET", "/admin/export"): (401, 401, 403, 403, 200, 403),
    # review by the reviewers: reviewers and admins (comparison 0 does not exist)
    ("GET", "/api/v1/judge/next"): (401, 401, 403, 403, 200, 403),
    ("POST", "/api/v1/judge/{comparison_id}"): (401, 401, 403, 403, 404, 403),
    ("GET", "/judge"): (401, 401, 403, 403, 200, 403),
    ("GET", "/api/v1/admin/verdicts"): (401, 401, 403, 403, 200, 403),
    # the guidelines (none published: there is no version 1 to acknowledge)
    ("GET", "/api/v1/guidelines"): (401, 401, 403, 200, 200, 200),
    ("POST", "/api/v1/guidelines/acknowledge"): (401, 401, 403, 404, 404, 403),
    ("GET", "/api/v1/admin/guidelines"): (401, 401, 403, 403, 200, 403),
    ("POST", "/api/v1/admin/guidelines"): (401, 401, 403, 403, 201, 403),
    ("POST", "/api/v1/admin/guidelines/preview"): (401, 401, 403, 403, 200, 403),
    ("GET", "/guidelines"): (401, 401, 403, 200, 200, 200),
    ("GET", "/admin/guidelines"): (401, 401, 403, 403, 200, 403),
    # feedback and quality control (no round: a reset has nothing to do, 409)
    ("GET", "/api/v1/feedback"): (401, 401, 403, 200, 200, 200),
    ("GET", "/feedback"): (401, 401, 403, 200, 200, 200),
    ("GET", "/api/v1/admin/qualification"): (401, 401, 403, 403, 200, 403),
    ("POST", "/api/v1/admin/qualification/{name}/reset"): (401, 401, 403, 403, 409, 403),
    ("GET", "/admin/quality"): (401, 401, 403, 403, 200, 403),
    # the campaign: one's own progress; tasks and settings for admins (task 0 does not exist)
    ("GET", "/api/v1/progress"): (401, 401, 403, 200, 200, 200),
    ("GET", "/api/v1/admin/tasks"): (401, 401, 403, 403, 200, 403),
    ("POST", "/api/v1/admin/tasks"): (401, 401, 403, 403, 201, 403),
    ("POST", "/api/v1/admin/tasks/{task_id}/disable"): (401, 401, 403, 403, 404, 403),
    ("GET", "/api/v1/admin/campaign"): (401, 401, 403, 403, 200, 403),
    ("POST", "/api/v1/admin/campaign"): (401, 401, 403, 403, 200, 403),
    ("GET", "/api/v1/admin/campaign/progress"): (401, 401, 403, 403, 200, 403),
    ("GET", "/admin/campaign"): (401, 401, 403, 403, 200, 403),
    # the data browser over the bundled sample
    ("GET", "/api/v1/data/subsets"): (401, 401, 403, 200, 200, 200),
    ("GET", "/api/v1/data/pairs"): (401, 401, 403, 200, 200, 200),
    ("GET", "/api/v1/data/pairs/{subset}/{split}/{row}"): (401, 401, 403, 200, 200, 200),
    ("GET", "/api/v1/data/attempts"): (401, 401, 403, 200, 200, 200),
    ("GET", "/api/v1/data/attempts/report"): (401, 401, 403, 200, 200, 200),
    ("GET", "/data"): (401, 401, 403, 200, 200, 200),
    ("GET", "/data/pairs/{subset}/{split}/{row}"): (401, 401, 403, 200, 200, 200),
    ("GET", "/data/attempts"): (401, 401, 403, 200, 200, 200),
    ("GET", "/data/attempts/report"): (401, 401, 403, 200, 200, 200),
    ("GET", "/data/attempts/{row}"): (401, 401, 403, 200, 200, 200),
}
#: values of the path parameters beyond the conversation and the turn
PARAMS = {"rid": 0, "name": "bob", "subset": "helpful-base", "split": "train", "row": 0,
          "comparison_id": 0, "task_id": 0}  # fmt: skip
#: a reviewer (role "reviewer") is an annotator who may also judge: on every route they get
#: what another annotator ("other") gets, except on these
REVIEWER = {
    ("GET", "/api/v1/judge/next"): 200,
    ("POST", "/api/v1/judge/{comparison_id}"): 404,
    ("GET", "/judge"): 200,
}

BODIES = {
    "/api/v1/conversations": {"mode": "helpful", "task_description": "Plant garlic"},
    "/api/v1/conversations/{cid}/turns": {"text": "When do I plant garlic?"},
    "/api/v1/turns/{tid}/choice": {"pick": "a", "strength": 2},
    "/api/v1/conversations/{cid}/finish": {"comment": "done"},
    "/api/v1/reviews/{rid}": {"pick": "a", "strength": 2},
    "/api/v1/admin/annotators": {"name": "dave"},
    "/api/v1/admin/annotators/{name}": {"disabled": True},
    "/api/v1/judge/{comparison_id}": {"verdict": "accept"},
    "/api/v1/guidelines/acknowledge": {"version": 1},
    "/api/v1/admin/guidelines": {"text": "# Rules\n\nBe kind."},
    "/api/v1/admin/guidelines/preview": {"text": "# Rules"},
    "/api/v1/admin/tasks": {"text": "Plant garlic"},
    "/api/v1/admin/campaign": {"free_conversations": True},
    "/api/v1/admin/backends/{name}/weight": {"weight": 2},
}


@pytest.fixture
def world(client, storage):
    _, ta = annotators.add_annotator(storage, "alice")
    _, tb = annotators.add_annotator(storage, "bob")
    _, tc = annotators.add_annotator(storage, "carol")
    _, tr = annotators.add_annotator(storage, "root", role="admin")
    _, tv = annotators.add_annotator(storage, "vera", role="reviewer")
    ha = {"Authorization": f"Bearer {ta}"}
    cid = client.post("/api/v1/conversations", json=BODIES["/api/v1/conversations"], headers=ha)
    cid = cid.json()["id"]
    tid = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": "hi"}, headers=ha)
    tid = tid.json()["id"]
    annotators.set_disabled(storage, "carol")
    headers = {
        "none": {},
        "wrong": {"Authorization": "Bearer " + "x" * 43},
        "disabled": {"Authorization": f"Bearer {tc}"},
        "other": {"Authorization": f"Bearer {tb}"},
        "admin": {"Authorization": f"Bearer {tr}"},
        "reviewer": {"Authorization": f"Bearer {tv}"},
    }
    return {"cid": cid, "tid": tid, "alice": ta, "headers": headers, "owner": ha}


def _snapshot(storage, client, world):
    conv = client.get(f"/api/v1/conversations/{world['cid']}", headers=world["owner"]).json()
    return transcripts.counts(storage), conv


@pytest.mark.parametrize("route", list(MATRIX), ids=lambda r: f"{r[0]} {r[1]}")
def test_every_route_for_every_identity(route, make_client, settings, storage, world):
    method, path = route
    url = path.format(cid=world["cid"], tid=world["tid"], **PARAMS)
    settings = replace(settings, data="sample")
    body = BODIES.get(path)
    got = {}
    for who in WHO:
        client = make_client(settings)  # a fresh cookie jar per identity
        headers = dict(world["headers"].get(who, {}))
        if who == "forged":
            r = login(client, world["alice"])
            assert r.status_code == 303
            headers["Origin"] = "http://testserver"  # same host, but no CSRF token
        before = _snapshot(storage, client, world)
        r = client.request(method, url, json=body, headers=headers, follow_redirects=False)
        got[who] = r.status_code
        if r.status_code >= 400:
            assert "text/html" in r.headers["content-type"] or "error" in r.json()
            assert _snapshot(storage, client, world) == before, (who, url)
    assert tuple(got[w] for w in WHO) == MATRIX[route], got


@pytest.mark.parametrize("route", list(MATRIX), ids=lambda r: f"{r[0]} {r[1]}")
def test_every_route_for_a_reviewer(route, make_client, settings, storage, world):
    method, path = route
    url = path.format(cid=world["cid"], tid=world["tid"], **PARAMS)
    client = make_client(replace(settings, data="sample"))
    before = _snapshot(storage, client, world)
    r = client.request(
        method, url, json=BODIES.get(path), headers=world["headers"]["reviewer"],
        follow_redirects=False,
    )  # fmt: skip
    assert r.status_code == REVIEWER.get(route, MATRIX[route][WHO.index("other")])
    if r.status_code >= 400:
        assert _snapshot(storage, client, world) == before, url


def _routes(routes):
    """Every route, included routers' routes too (the app lists an included router as one)."""
    for r in routes:
        if hasattr(r, "original_router"):
            yield from _routes(r.original_router.routes)
        else:
            yield r


def test_the_matrix_covers_every_route(client):
    from fastapi.routing import APIRoute

    routes = {
        (m, r.path)
        for r in _routes(client.app.routes)
        if isinstance(r, APIRoute)
        for m in r.methods
        if m != "HEAD"
    }
    assert len(routes) > 30  # the walk reaches into the included routers
    paths = {
        (m, p.replace("{cid}", "{conversation_id}").replace("{tid}", "{turn_id}"))
        for m, p in MATRIX
    }
    paths |= {(m, p.replace("{rid}", "{review_id}")) for m, p in paths}
    assert routes <= paths, routes - paths
