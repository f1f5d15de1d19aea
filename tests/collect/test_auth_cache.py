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


@pytest.fixture
def clock(monkeypatch):
    """The cache's clock, moved by hand."""
    now = [1000.0]
    monkeypatch.setattr(annotators, "_clock", lambda: now[0])
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
    clock[0] += annotators.AUTH_CACHE_SECONDS + 0.1
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
    clock[0] += annotators.AUTH_CACHE_SECONDS + 0.1
    assert client.get("/api/v1/me", headers=h).status_code == 403


def test_a_lookup_racing_a_change_is_not_remembered(storage, alice, clock):
    """A lookup that read the old state before a change cannot store it after the change."""
    _, _, token = alice
    cache = annotators._cache(storage)
    generation = cache.generation
    who = annotators.annotator_by_token(storage, token)
    with storage.write() as s:  # the change commits, then this process forgets
        s.execute(update(Annotator).where(Annotator.name == "alice").values(disabled=True))
    annotators.forget_logins(storage)
    cache.put(generation, "t" + annotators.hash_token(token), (who, None, None))
    assert annotators.cached_annotator_by_token(storage, token).disabled


def storage_of(client):
    return client.app.state.storage


def test_a_remembered_login_takes_no_thread_only_a_lookup_does(client, alice, monkeypatch):
    """The login dependency is async: a remembered login (token or cookie) is settled on the
    event loop; only a lookup in the database is a unit of work (:meth:`Storage.call`: a
    thread on SQLite, the loop's async connection on PostgreSQL)."""
    storage = storage_of(client)
    hops: list[str] = []
    real = storage.call

    async def counted(func, *args):
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
