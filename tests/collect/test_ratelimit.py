"""Rate limits: logins per client address and writes per annotator, 429 with Retry-After."""

from __future__ import annotations

from dataclasses import replace

from logins import login

from hhrlhf.collect.ratelimit import RateLimiter


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_sliding_window_allows_the_limit_then_says_how_long_to_wait():
    clock = Clock()
    rl = RateLimiter(3, 60.0, clock)
    assert [rl.hit("k") for _ in range(3)] == [None, None, None]
    assert rl.hit("k") == 60
    assert rl.hit("other") is None  # keys are separate
    clock.t += 59.5
    assert rl.hit("k") == 1  # rounded up, never 0
    clock.t += 0.6
    assert rl.hit("k") is None  # the oldest hit left the window
    assert RateLimiter(0, 60.0, clock).hit("k") is None  # 0 = no limit


def test_writes_are_limited_per_annotator_with_retry_after(make_client, settings, alice, bob):
    client = make_client(replace(settings, rate_writes_per_minute=3))
    _, ha, _ = alice
    _, hb, _ = bob
    body = {"mode": "helpful", "task_description": "Grow basil"}
    for _ in range(3):
        assert client.post("/api/v1/conversations", json=body, headers=ha).status_code == 201
    r = client.post("/api/v1/conversations", json=body, headers=ha)
    assert r.status_code == 429
    assert 1 <= int(r.headers["retry-after"]) <= 60
    assert "too many requests" in r.json()["error"]
    assert r.headers["x-content-type-options"] == "nosniff"
    # refused writes changed nothing; reads are not limited; another annotator is unaffected
    assert len(client.get("/api/v1/conversations", headers=ha).json()["conversations"]) == 3
    assert client.post("/api/v1/conversations", json=body, headers=hb).status_code == 201


def test_logins_are_limited_per_address(make_client, settings, alice):
    client = make_client(replace(settings, rate_login_per_minute=5))
    _, _, token = alice
    for _ in range(3):
        assert client.get("/login?token=guess", follow_redirects=False).status_code == 401
    assert login(client, token).status_code == 303  # the link's page and its POST: two
    r = login(client, token)
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert "hh_session" not in r.headers.get("set-cookie", "")
