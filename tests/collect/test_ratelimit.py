"""Rate limits: logins per client address and writes per annotator, 429 with Retry-After."""

from __future__ import annotations

from dataclasses import replace

from logins import login

from hhrlhf.collect.web.ratelimit import RateLimiter


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


def test_forwarded_for_is_believed_only_from_a_configured_proxy(make_client, settings, alice):
    _, _, token = alice
    # the default trusts 127.0.0.1 only: a client naming other addresses is still one address
    client = make_client(replace(settings, rate_login_per_minute=3))
    for i in range(3):
        r = client.get("/login?token=guess", headers={"X-Forwarded-For": f"10.0.0.{i}"})
        assert r.status_code == 401
    r = client.get("/login?token=guess", headers={"X-Forwarded-For": "10.0.0.99"})
    assert r.status_code == 429


def test_a_flood_from_one_address_behind_the_proxy_locks_out_no_one_else(
    make_client, settings, alice
):
    """Behind a trusted proxy every request comes from the proxy's address; the limit counts
    the forwarded client address, so one client's flood of bad tokens is only its own."""
    _, _, token = alice
    # "testclient" is the in-process client's address, standing for the proxy here
    client = make_client(
        replace(settings, rate_login_per_minute=5, forwarded_allow_ips="testclient")
    )
    flood = {"X-Forwarded-For": "203.0.113.7"}
    statuses = [client.get("/login?token=guess", headers=flood).status_code for _ in range(50)]
    assert statuses[:5] == [401] * 5 and set(statuses[5:]) == {429}
    other = {"X-Forwarded-For": "198.51.100.20"}
    assert login(client, token, headers=other).status_code == 303
    # the flooding client cannot escape by prepending an address of its choice: the proxy
    # appends the real one, and the rightmost untrusted address is the one counted
    spoof = {"X-Forwarded-For": "198.51.100.21, 203.0.113.7"}
    assert client.get("/login?token=guess", headers=spoof).status_code == 429


def test_hh_serve_passes_the_proxy_and_hsts_options_to_every_worker(monkeypatch, db_url):
    from hhrlhf.collect.web.app import create_app_from_env

    monkeypatch.delenv("HH_COLLECT_CONFIG", raising=False)
    monkeypatch.setenv("HH_COLLECT_DB", db_url)
    monkeypatch.setenv("HH_COLLECT_FORWARDED_ALLOW_IPS", "10.0.0.5, 10.1.0.0/16")
    monkeypatch.setenv("HH_COLLECT_HSTS", "1")
    app = create_app_from_env()
    assert app.state.settings.forwarded_allow_ips == "10.0.0.5, 10.1.0.0/16"
    assert app.state.settings.hsts is True
    app.state.storage.dispose()
