"""A request's login is remembered for a few seconds, and every revocation made in this process
is honoured at once; one made by another process is honoured within ``AUTH_CACHE_SECONDS``."""

from __future__ import annotations

import pytest
from logins import login, session_cookie
from sqlalchemy import update

from hhrlhf.collect.db import Storage
from hhrlhf.collect.db.engine import count_statements
from hhrlhf.collect.db.models import Annotator
from hhrlhf.collect.services import annotators
from hhrlhf.collect.web import logins


@pytest.fixture
def clock(monkeypatch):
    """The cache's clock, moved by hand."""
    now = [1000.0]
    monkeypatch.setattr(logins, "_clock", lambda: now[0])
    return now


def _statements(client, headers) -> tuple[int, int]:
    with count_statements():
        r = client.get("/api/v1/me", headers=headers)
    timing = r.headers["server-timing"]
    return r.status_code, int(timing.split('sql;desc="')[1].rstrip('"'))


def test_a_known_token_is_looked_up_once_then_remembered(client, alice, clock):
    _, h, _ = alice
    assert _statements(client, h)[0] == 200
    status, n = _statements(client, h)
    assert (status, n) == (200, 0)  # no statement: answered from memory
    clock[0] += logins.AUTH_CACHE_SECONDS + 0.1
    status, n = _statements(client, h)
    assert status == 200 and n >= 1  # looked up again once the seconds have passed


def test_a_disable_in_this_process_is_refused_at_once(client, alice, admin, clock):
    who, h, _ = alice
    assert client.get("/api/v1/me", headers=h).status_code == 200  # remembered now
    annotators.set_disabled(storage_of(client), "alice")
    assert client.get("/api/v1/me", headers=h).status_code == 403
    annotators.set_disabled(storage_of(client), "alice", False)
    assert client.get("/api/v1/me", headers=h).status_code == 200
    # the admin API's change (set_annotator) too
    r = client.post("/api/v1/admin/annotators/alice", json={"disabled": True}, headers=admin[1])
    assert r.status_code == 200, r.text
    assert client.get("/api/v1/me", headers=h).status_code == 403


def test_a_rotated_token_and_a_logout_are_refused_at_once(client, storage, alice, clock):
    _, h, token = alice
    r = login(client, token)
    cookie = session_cookie(r)
    assert cookie
    assert client.get("/api/v1/me").json()["auth"] == "cookie"
    assert client.get("/api/v1/me", headers=h).status_code == 200
    annotators.rotate_token(storage, "alice")
    assert client.get("/api/v1/me", headers=h).status_code == 401
    assert client.get("/api/v1/me").status_code == 401  # rotation ends the sessions too


def test_a_logout_is_refused_at_once(client, storage, alice, clock):
    _, _, token = alice
    login(client, token)
    me = client.get("/api/v1/me").json()
    assert me["auth"] == "cookie"
    cookies = dict(client.cookies)
    r = client.post("/logout", headers={"X-CSRF-Token": me["csrf_token"]})
    assert r.status_code == 200
    client.cookies.update(cookies)  # the old cookie, replayed
    assert client.get("/api/v1/me").status_code == 401


def test_another_process_s_disable_is_honoured_within_the_cache_seconds(
    client, storage, alice, clock
):
    """Another process (a second handle on the same database, as another worker or host
    would be) disables alice: this one may accept her for AUTH_CACHE_SECONDS, no longer."""
    _, h, _ = alice
    assert client.get("/api/v1/me", headers=h).status_code == 200
    other = Storage(storage.url)
    try:
        annotators.set_disabled(other, "alice")
    finally:
        other.dispose()
    assert client.get("/api/v1/me", headers=h).status_code == 200  # still remembered here
    clock[0] += logins.AUTH_CACHE_SECONDS + 0.1
    assert client.get("/api/v1/me", headers=h).status_code == 403


def test_a_lookup_racing_a_change_is_not_remembered(storage, alice, clock):
    """A lookup that read the old state before a change cannot store it after the change."""
    _, _, token = alice
    cache = logins._cache(storage)
    generation = cache.generation
    who = annotators.annotator_by_token(storage, token)
    with storage.write() as s:  # the change commits, then this process forgets
        s.execute(update(Annotator).where(Annotator.name == "alice").values(disabled=True))
    annotators.forget_logins(storage)
    cache.put(generation, "t" + annotators.hash_token(token), (who, None, None))
    assert logins.cached_annotator_by_token(storage, token).disabled


def storage_of(client):
    return client.app.state.context.storage


def test_a_remembered_login_takes_no_thread_only_a_lookup_does(client, alice, monkeypatch):
    """The login dependency is async: a remembered login (token or cookie) is settled on the
    event loop; only a lookup in the database is a unit of work (:meth:`Storage.call`: a
    thread on SQLite, the loop's async connection on PostgreSQL)."""
    storage = storage_of(client)
    hops: list[str] = []
    real = storage.call

    async def counted(func, *args):
        if func is not logins.refresh_logins:  # the app's own check of logins in use
            hops.append(func.__name__)
        return await real(func, *args)

    monkeypatch.setattr(storage, "call", counted)
    _, h, token = alice
    assert client.get("/api/v1/conversations", headers=h).status_code == 200
    assert hops == ["_settle"]  # looked up once
    assert client.get("/api/v1/conversations", headers=h).status_code == 200
    assert hops == ["_settle"]  # remembered: no lookup
    assert login(client, token).status_code == 303  # a cookie session
    client.headers.pop("authorization", None)
    hops.clear()
    for _ in range(2):
        assert client.get("/api/v1/conversations").status_code == 200
    assert hops == ["_settle"]
    assert (
        client.get("/api/v1/conversations", headers={"Authorization": "Bearer nope"}).status_code
        == 401
    )


def _remembered(storage, key_of) -> float | None:
    """Until when this process remembers a login (its cache entry's end), or None."""
    hit = logins._cache(storage).entries.get(key_of)
    return None if hit is None else hit[0]


def test_logins_in_use_are_checked_again_in_one_read_and_never_lapse(
    client, storage, alice, bob, clock
):
    """Annotators who all logged in at once would all wait on the database at once when their
    logins lapsed: the logins in use are checked again together, before they lapse."""
    _, alice_h, alice_token = alice
    _, bob_h, _ = bob
    r = login(client, alice_token)  # a cookie session too
    assert session_cookie(r)
    for _ in range(2):  # looked up, then used from memory
        assert client.get("/api/v1/me", headers=alice_h).status_code == 200
        assert client.get("/api/v1/me", headers=bob_h).status_code == 200
        client.headers.pop("authorization", None)
        assert client.get("/api/v1/me").json()["auth"] == "cookie"
    assert logins.refresh_logins(storage) == 0  # none is old enough yet
    clock[0] += logins.AUTH_REFRESH_AFTER + 0.1
    with count_statements() as n:
        assert logins.refresh_logins(storage) == 3  # two tokens and a session
    assert n[0] <= (3 if storage.url.startswith("sqlite") else 2)  # (SQLite: its BEGIN)
    clock[0] += logins.AUTH_CACHE_SECONDS - logins.AUTH_REFRESH_AFTER + 0.1
    # past the first lookups' AUTH_CACHE_SECONDS: still remembered, no statement
    assert _statements(client, alice_h) == (200, 0)
    assert _statements(client, bob_h) == (200, 0)
    with count_statements() as n:
        assert client.get("/api/v1/me").json()["auth"] == "cookie"
    assert n[0] == 0


def test_a_check_again_sees_another_process_s_changes(client, storage, alice, bob, clock):
    _, alice_h, _ = alice
    _, bob_h, _ = bob
    for _ in range(2):
        assert client.get("/api/v1/me", headers=alice_h).status_code == 200
        assert client.get("/api/v1/me", headers=bob_h).status_code == 200
    other = Storage(storage.url)  # another worker or host
    try:
        annotators.set_disabled(other, "alice")
        annotators.rotate_token(other, "bob")
    finally:
        other.dispose()
    clock[0] += logins.AUTH_REFRESH_AFTER + 0.1
    assert logins.refresh_logins(storage) == 2
    assert _statements(client, alice_h) == (403, 0)  # remembered as disabled
    status, n = _statements(client, bob_h)  # forgotten: looked up, no one has the token
    assert status == 401 and n >= 1


def test_a_login_not_used_since_its_check_lapses(client, storage, alice, clock):
    _, h, token = alice
    assert client.get("/api/v1/me", headers=h).status_code == 200  # looked up, not used since
    clock[0] += logins.AUTH_REFRESH_AFTER + 0.1
    assert logins.refresh_logins(storage) == 0
    assert client.get("/api/v1/me", headers=h).status_code == 200  # used now
    assert logins.logins_due(storage)
    clock[0] += logins.AUTH_CACHE_SECONDS
    assert not logins.logins_due(storage)  # lapsed: a request looks it up again
    assert logins.refresh_logins(storage) == 0
    status, n = _statements(client, h)
    assert status == 200 and n >= 1


def test_a_check_racing_a_change_is_not_remembered(client, storage, alice, clock):
    """A check that read the old state before a change in this process cannot store it."""
    _, h, token = alice
    for _ in range(2):
        assert client.get("/api/v1/me", headers=h).status_code == 200
    clock[0] += logins.AUTH_REFRESH_AFTER + 0.1
    cache = logins._cache(storage)
    keys, generation = cache.due(), cache.generation
    key = "t" + annotators.hash_token(token)
    assert keys == [key]
    who = annotators.annotator_by_token(storage, token)
    annotators.set_disabled(storage, "alice")  # forgets every login
    cache.refresh(generation, clock[0], keys, {key: (who, None, None)})
    assert _remembered(storage, key) is None
    assert client.get("/api/v1/me", headers=h).status_code == 403


def test_the_app_checks_the_logins_in_use_while_it_serves(make_client, settings, alice, clock):
    import time

    client = make_client(settings)
    storage = storage_of(client)
    _, h, token = alice
    key = "t" + annotators.hash_token(token)
    for _ in range(2):
        assert client.get("/api/v1/me", headers=h).status_code == 200
    first = _remembered(storage, key)
    clock[0] += logins.AUTH_REFRESH_AFTER + 0.1
    deadline = time.monotonic() + 5 * logins.LOGIN_REFRESH_SECONDS
    while _remembered(storage, key) == first and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _remembered(storage, key) == clock[0] + logins.AUTH_CACHE_SECONDS


def test_many_logins_are_checked_in_batches(client, storage, alice, bob, clock, monkeypatch):
    """The check's statements stay bounded however many logins are in use."""
    monkeypatch.setattr(annotators, "REFRESH_BATCH", 1)
    for _, h, _ in (alice, bob):
        for _ in range(2):
            assert client.get("/api/v1/me", headers=h).status_code == 200
    clock[0] += logins.AUTH_REFRESH_AFTER + 0.1
    with count_statements() as n:
        assert logins.refresh_logins(storage) == 2
    assert n[0] == (3 if storage.url.startswith("sqlite") else 2)  # one per login (and BEGIN)
    for _, h, _ in (alice, bob):  # both found and kept
        assert _statements(client, h) == (200, 0)


def test_the_logins_due_are_listed_while_requests_use_logins():
    """Requests mark logins used from other threads without the cache's lock: listing the
    logins due meanwhile must not fail (it did: "Set changed size during iteration")."""
    import threading
    import time

    cache = logins._AuthCache()
    keys = [f"t{i}" for i in range(20_000)]
    until = time.monotonic() + 60
    for key in keys:
        cache.entries[key] = (until, None, None, None)
    stop = threading.Event()

    def requests():
        while not stop.is_set():
            for key in keys[:2000]:
                cache.get(key)
            cache.refresh(cache.generation, time.monotonic(), keys[:2000], {})  # checked: unused
            for key in keys[:2000]:
                cache.entries[key] = (until, None, None, None)

    worker = threading.Thread(target=requests)
    worker.start()
    try:
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            cache.due()
    finally:
        stop.set()
        worker.join()
