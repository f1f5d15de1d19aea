"""The red-team report routes: cached per filter set, at most two computed at once, the rest
answered from the cache or 503 with Retry-After, so report requests never starve the app."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from hhrlhf.collect import browse
from hhrlhf.errors import NotFound
from hhrlhf.redteam import report as report_module

REPORT = "/api/v1/data/attempts/report"


@pytest.fixture
def blocked(monkeypatch):
    """compute_report waits for ``release`` and counts its calls."""
    release = threading.Event()
    started = threading.Semaphore(0)
    calls: list[int] = []
    real = report_module.compute_report

    def slow(kept, **kw):
        calls.append(len(kept))
        started.release()
        assert release.wait(30), "the test never released the computation"
        return real(kept, **kw)

    monkeypatch.setattr(report_module, "compute_report", slow)
    return release, started, calls


def test_two_reports_at_once_then_503_and_the_app_still_answers(
    make_client, settings, alice, blocked
):
    release, started, calls = blocked
    client = make_client(replace(settings, data="sample"))
    client.headers.update(alice[1])
    answers: dict[str, object] = {}

    def ask(name: str, url: str) -> None:
        answers[name] = client.get(url)

    threads = [
        threading.Thread(target=ask, args=(name, f"{REPORT}?{query}"))
        for name, query in (("first", "min_rating=0"), ("second", "min_rating=1"))
    ]
    for t in threads:
        t.start()
    for _ in threads:  # both computations are running (and blocked)
        assert started.acquire(timeout=30)
    # a third report, and the first one again, are refused at once, not queued
    for url in (f"{REPORT}?min_rating=2", f"{REPORT}?min_rating=0", "/data/attempts/report"):
        r = client.get(url)
        assert r.status_code == 503, (url, r.status_code)
        assert int(r.headers["retry-after"]) >= 1
    # everything else answers while both slots are busy
    t0 = time.monotonic()
    assert client.get("/api/v1/health").status_code == 200
    assert client.get("/api/v1/data/attempts?limit=1").status_code == 200
    assert time.monotonic() - t0 < 10  # generous: the point is "not after the reports"
    release.set()
    for t in threads:
        t.join(30)
    assert answers["first"].status_code == 200 and answers["second"].status_code == 200
    assert len(calls) == 2
    # the cache answers the same filters again without computing
    again = client.get(f"{REPORT}?min_rating=0")
    assert again.status_code == 200 and again.json() == answers["first"].json()
    assert len(calls) == 2


def test_many_concurrent_requests_for_one_report_compute_it_once(
    make_client, settings, alice, blocked
):
    release, started, calls = blocked
    client = make_client(replace(settings, data="sample"))
    client.headers.update(alice[1])
    first = threading.Thread(target=client.get, args=(f"{REPORT}?min_rating=0.5",))
    first.start()
    assert started.acquire(timeout=30)
    statuses = []
    lock = threading.Lock()

    def ask() -> None:
        r = client.get(f"{REPORT}?min_rating=0.5")
        with lock:
            statuses.append(r.status_code)

    crowd = [threading.Thread(target=ask) for _ in range(20)]
    for t in crowd:
        t.start()
    for t in crowd:
        t.join(30)
    assert statuses == [503] * 20 and len(calls) == 1
    release.set()
    first.join(30)
    assert client.get(f"{REPORT}?min_rating=0.5").status_code == 200
    assert len(calls) == 1


def test_the_gate_frees_its_slot_when_the_computation_fails():
    gate = browse.ReportGate(slots=1)
    cache: dict = {}

    def fail():
        raise NotFound("nothing to report")

    for _ in range(3):
        with pytest.raises(NotFound):
            gate.get(cache, "k", fail)
    assert gate.get(cache, "k", lambda: {"ok": 1}) == {"ok": 1}
    assert gate.get(cache, "k", fail) == {"ok": 1}  # cached
