"""Rate limits: logins per client address and writes per annotator, 429 with Retry-After."""

from __future__ import annotations

from dataclasses import replace

import pytest
from logins import login

from hhrlhf.collect.web.ratelimit import Limits, RateLimited, RateLimiter


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


def test_a_limit_holds_across_workers_through_the_database(storage):
    """Two workers' limits on one database: each lets a key through until their counts,
    shared, reach the limit together; then both refuse it until the minute ends. Another key
    and the next minute start again, and minutes past are deleted as counts are shared."""
    from sqlalchemy import func, select

    from hhrlhf.collect.db.models import rate_counts_table

    wall = Clock()
    wall.t = 60 * 1_000_000 + 10.0  # 10 s into a minute
    one = Limits(0, 5, Clock(), worker="w1", wall=wall)
    two = Limits(0, 5, Clock(), worker="w2", wall=wall)
    assert not one.share(storage)  # nothing hit: no transaction
    for _ in range(3):
        one.check_write(7)
    two.check_write(7)
    two.check_write(8)
    assert one.share(storage) and two.share(storage) and one.share(storage)
    two.check_write(7)  # the fifth of key 7 in this minute, over both workers
    with pytest.raises(RateLimited):
        two.check_write(7)  # its own view has all five
    two.share(storage)
    one.share(storage)
    for limits in (one, two):
        with pytest.raises(RateLimited) as refused:
            limits.check_write(7)
        # to the end of the minute, and the second past it where the minute before (all
        # five) has begun to fall under the limit
        assert refused.value.retry_after == 51
    two.check_write(8)  # another key
    two.share(storage)
    with pytest.raises(RateLimited):
        one.check_write(7)  # still this minute
    wall.t += 60  # the next minute (and the local windows have moved on: their own clocks)
    one.login.clock.t += 61
    two.writes.clock.t += 61
    one.writes.clock.t += 61
    one.check_write(7)
    one.share(storage)
    with storage.read() as s:
        minutes = s.execute(select(func.min(rate_counts_table.c.minute))).scalar_one()
    assert minutes == int(wall.t // 60) - 1  # the minute before is kept, older ones go
    wall.t += 120
    one.writes.clock.t += 121
    one.check_write(7)
    one.share(storage)
    with storage.read() as s:
        kept = s.execute(select(rate_counts_table.c.minute)).scalars().all()
    assert set(kept) == {int(wall.t // 60)}


def test_a_burst_across_a_minutes_end_is_not_let_through_twice(storage):
    """The last minute's count weighs in by the part of it still in the last 60 s: five
    writes at 0:50 leave room for one at 1:05 (5 x 55/60 + 1 > 5), then the wait is until
    the old share has fallen enough (1:12), not the minute's end; two idle minutes later the
    worker shares nothing."""
    wall = Clock()
    wall.t = 60 * 2_000_000 + 50.0
    one = Limits(0, 5, Clock(), worker="w1", wall=wall)
    two = Limits(0, 5, Clock(), worker="w2", wall=wall)
    for _ in range(3):
        one.check_write(3)
    for _ in range(2):
        two.check_write(3)
    assert one.share(storage) and two.share(storage)
    wall.t += 15  # 1:05
    for limits in (one, two):  # the local windows would still allow it: they count 3 and 2
        limits.writes.clock.t += 15
    one.check_write(3)
    one.share(storage)
    two.share(storage)
    for limits in (one, two):
        with pytest.raises(RateLimited) as refused:
            limits.check_write(3)
        assert refused.value.retry_after == 7  # 5 x (1 - 12/60) + 1 < 5 from 1:12
    wall.t += 7.5
    two.check_write(3)
    wall.t += 180
    assert not one.share(storage)  # nothing hit for two minutes: no transaction


def test_login_attempts_from_an_address_are_counted_over_every_worker(storage):
    wall = Clock()
    one = Limits(2, 0, Clock(), worker="w1", wall=wall)
    two = Limits(2, 0, Clock(), worker="w2", wall=wall)
    one.check_login("203.0.113.9")
    two.check_login("203.0.113.9")
    one.check_write(1)  # writes off: nothing counted, nothing refused
    assert one.share(storage) and two.share(storage) and one.share(storage)
    for limits in (one, two):
        with pytest.raises(RateLimited, match="too many login attempts"):
            limits.check_login("203.0.113.9")
        limits.check_login("198.51.100.4")  # another address


def test_a_worker_that_cannot_share_keeps_its_counts_for_the_next_share(storage):
    wall = Clock()
    limits = Limits(0, 2, Clock(), worker="w1", wall=wall)
    limits.check_write(1)

    class Down:
        url = storage.url

        def write(self, **_kw):
            raise OSError("the database is away")

    with pytest.raises(OSError):
        limits.share(Down())
    other = Limits(0, 2, Clock(), worker="w2", wall=wall)
    other.check_write(1)
    assert other.share(storage) and limits.share(storage)  # the first hit was not lost
    with pytest.raises(RateLimited):
        limits.check_write(1)


def test_a_request_while_the_counts_are_being_shared_still_sees_them(storage, monkeypatch):
    """The counts a worker is sending stay counted until the totals that hold them come back:
    a write in between is refused (it once saw neither, and went through over the limit)."""
    from hhrlhf.collect.services import ratecounts

    wall = Clock()
    wall.t = 60 * 3_000_000 + 5.0
    one = Limits(0, 4, Clock(), worker="w1", wall=wall)
    two = Limits(0, 4, Clock(), worker="w2", wall=wall)
    for _ in range(2):
        two.check_write(5)
    assert two.share(storage)
    one.check_write(5)
    assert one.share(storage)  # w1 reads the totals: three
    one.check_write(5)  # the fourth over both workers
    real = ratecounts.share_counts
    during = []

    def share_with_a_write_in_between(*args, **kwargs):
        with pytest.raises(RateLimited):
            one.check_write(5)
        during.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(ratecounts, "share_counts", share_with_a_write_in_between)
    assert one.share(storage) and during == [True]
    with pytest.raises(RateLimited):
        one.check_write(5)


def test_two_apps_on_one_database_share_the_write_limit(make_client, settings, alice, monkeypatch):
    """Two workers serving one annotator (as a load balancer or the kernel spreads their
    connections): the limit is the annotator's, not each worker's, within about a second."""
    import time

    from hhrlhf.collect.web import app as app_module

    monkeypatch.setattr(app_module, "RATE_SHARE_SECONDS", 0.05)
    shares: dict[int, list[tuple[float, float]]] = {}  # id(limits) -> (began, ended) of each
    real_share = Limits.share

    def timed_share(self, storage):
        began = time.monotonic()
        try:
            return real_share(self, storage)
        finally:
            shares.setdefault(id(self), []).append((began, time.monotonic()))

    monkeypatch.setattr(Limits, "share", timed_share)

    def shared_after(limits, t: float) -> float:
        """When ``limits`` finished a share begun after ``t`` (waits for one)."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done = [end for began, end in shares.get(id(limits), []) if began > t]
            if done:
                return done[0]
            time.sleep(0.01)
        raise AssertionError("no share in 10 s")

    limited = replace(settings, rate_writes_per_minute=4)
    first, second = make_client(limited), make_client(limited)
    # a wall clock fixed mid-minute: past a minute's end the minute before counts only in
    # part, weighted, and one more write may pass (tested above with a clock of its own)
    for client in (first, second):
        client.app.state.context.limits.wall = lambda: 60 * 29_000_000 + 30.0
    _, h, _ = alice
    body = {"mode": "helpful", "task_description": "Grow basil"}
    created, refused = 0, set()
    for client, other in [(first, second), (second, first)] * 6:  # each alone: four through
        r = client.post("/api/v1/conversations", json=body, headers=h)
        created += r.status_code == 201
        if r.status_code == 429:
            refused.add(id(client))
        # this worker's count stored, then read by the other (their shares' interval apart)
        stored = shared_after(client.app.state.context.limits, time.monotonic())
        shared_after(other.app.state.context.limits, stored)
    assert created == 4 and refused == {id(first), id(second)}
    assert len(first.get("/api/v1/conversations", headers=h).json()["conversations"]) == 4


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
    from hhrlhf.collect.serve.factory import create_app_from_env

    monkeypatch.delenv("HH_COLLECT_CONFIG", raising=False)
    monkeypatch.setenv("HH_COLLECT_DB", db_url)
    monkeypatch.setenv("HH_COLLECT_FORWARDED_ALLOW_IPS", "10.0.0.5, 10.1.0.0/16")
    monkeypatch.setenv("HH_COLLECT_HSTS", "1")
    app = create_app_from_env()
    assert app.state.context.settings.forwarded_allow_ips == "10.0.0.5, 10.1.0.0/16"
    assert app.state.context.settings.hsts is True
    app.state.context.storage.dispose()


@pytest.mark.parametrize("into", [0.0, 5.0, 30.0, 54.0, 59.5])
@pytest.mark.parametrize("limit", [1, 5, 600])
def test_retry_after_says_when_the_next_write_goes_through(into, limit):
    """A burst up to the limit at any moment of a minute: the Retry-After of the refusal is
    the truth, to the second: a write then goes through, one a second earlier is refused
    (it once said 6 s after a burst 54 s into a minute, while the limit held for 60)."""
    clock = Clock()
    clock.t = 60 * 29_000_000 + into
    limits = Limits(20, limit, clock, wall=clock)
    for _ in range(limit):
        limits.check_write(7)
    start = clock.t
    with pytest.raises(RateLimited) as refused:
        limits.check_write(7)
    wait = refused.value.retry_after
    assert 1 <= wait <= 61
    clock.t = start + wait - 1
    with pytest.raises(RateLimited):
        limits.check_write(7)
    clock.t = start + wait
    limits.check_write(7)


def test_retry_after_on_another_worker_follows_the_shared_counts():
    """A worker that let none of the burst through itself waits as the shared count says:
    this minute's count, then the minute before's, weighted, falling under the limit."""
    clock = Clock()
    clock.t = 60 * 29_000_000 + 54.0
    limits = Limits(20, 10, clock, wall=clock)
    limits._turn_minute(int(clock.t // 60))
    limits._now[("writes", "7")] = 20  # another worker let twice the limit through
    with pytest.raises(RateLimited) as refused:
        limits.check_write(7)
    wait = refused.value.retry_after
    # next minute the 20 count as the minute before: 20 * (1 - x / 60) < 10 from x = 30 s on
    assert wait == 6 + 30 + 1
    clock.t += wait - 1
    limits._turn_minute(int(clock.t // 60))
    limits._before[("writes", "7")] = 20
    with pytest.raises(RateLimited):
        limits.check_write(7)
    clock.t += 1
    limits.check_write(7)
