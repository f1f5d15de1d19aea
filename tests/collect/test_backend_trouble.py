"""Backend trouble reaches the operator first: the start-up check of every OpenAI-compatible
backend, the server's own explanation of a failure (logged, stored, shown), and ``hh serve``'s
start and stop (against the loopback server of openai_server.py, in a subprocess)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from openai_server import Script, serve
from test_api import say, sse, start

from hhrlhf.collect.config import BackendConfig
from hhrlhf.collect.generation.backends import server_message
from hhrlhf.collect.generation.health import check_backend
from hhrlhf.collect.serve.workers import free_port
from hhrlhf.collect.services import annotators, leases

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def strict_server():
    """A server that serves only ``real-model`` and answers 404 for any other, as real ones do."""
    running = serve(Script(models=["real-model"], strict_models=True))
    yield running
    running.stop()


def _backend(name: str, base_url: str, model: str, kind: str = "openai-chat") -> BackendConfig:
    return BackendConfig(name=name, kind=kind, base_url=base_url, model=model, timeout=5)


def test_the_check_names_a_wrong_model_and_what_the_server_serves(strict_server):
    health = check_backend(_backend("m", strict_server.base_url, "wrong-model"))
    assert not health.ok
    assert "'wrong-model' is not served" in health.problem and "real-model" in health.problem
    assert check_backend(_backend("m", strict_server.base_url, "real-model")).ok


def test_the_check_hints_at_a_base_url_without_v1(strict_server):
    base = strict_server.base_url.removesuffix("/v1")
    health = check_backend(_backend("m", base, "real-model", "openai-completions"))
    assert not health.ok
    assert "HTTP 404" in health.problem
    assert (
        f"base_url has no /v1: OpenAI-compatible servers answer under {base}/v1" in health.problem
    )


def test_the_check_says_an_unreachable_server_is_unreachable():
    health = check_backend(_backend("m", "http://127.0.0.1:9/v1", "real-model"))
    assert not health.ok and "could not be reached" in health.problem


def test_demo_backends_are_not_asked():
    assert check_backend(BackendConfig("d", "demo", model="sample")).ok


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"error": {"message": "The model `x` does not exist."}}, "The model `x` does not exist."),
        ({"message": "bad request"}, "bad request"),
        ({"detail": "Not Found"}, "Not Found"),
        ("plain words\n\x1b[31m", "plain words \\x1b[31m"),
        (None, "fallback"),
    ],
)
def test_the_server_message_is_read_from_each_error_shape(body, expected):
    assert server_message(body, "fallback") == expected


def test_a_failure_carries_the_servers_words_to_the_log_and_the_candidate_not_the_annotator(
    make_client, settings, strict_server, alice, storage, caplog
):
    backends = (
        _backend("m1", strict_server.base_url, "wrong-model"),
        _backend("m2", strict_server.base_url, "wrong-model", "openai-completions"),
    )
    client = make_client(replace(settings, backends=backends, pairing="fixed"))
    _, h, _ = alice
    with caplog.at_level(logging.WARNING, logger="hhrlhf.collect.backends"):
        t = say(client, h, start(client, h), wait=False)
        events = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    words = "The model `wrong-model` does not exist."
    errors = [d for e, d in events if e == "error"]
    assert [d["message"] for d in errors] == [
        "Response A: the model could not answer. Retry.",
        "Response B: the model could not answer. Retry.",
    ]
    logged = [r.getMessage() for r in caplog.records if r.name == "hhrlhf.collect.backends"]
    assert len(logged) == 2 and all(words in line and "wrong-model" in line for line in logged)
    stored = leases.turn_state(storage, t["id"]).candidates
    assert all(c.status == "failed" and c.error and words in c.error for c in stored)
    # the page reloaded: the same generic note, never the server's words
    replay = sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    assert [d for e, d in replay if e == "error"] == errors


def _retry(client, h, tid):
    r = client.post(f"/api/v1/turns/{tid}/retry", headers=h)
    assert r.status_code == 200 and r.json() == {"status": "pending"}, r.text
    return sse(client.get(f"/api/v1/turns/{tid}/stream", headers=h).text)


def _backends_of(storage, tid):
    from sqlalchemy import select

    from hhrlhf.collect.db.models import Candidate

    with storage.read() as s:
        rows = s.execute(
            select(Candidate.slot, Candidate.backend, Candidate.status)
            .where(Candidate.turn_id == tid)
            .order_by(Candidate.slot)
        ).all()
    return [tuple(r) for r in rows]


@pytest.mark.parametrize("mode", ["helpful", "red-team"])
def test_a_backend_that_keeps_failing_is_replaced_on_the_second_retry(
    make_client, settings, strict_server, alice, storage, caplog, mode
):
    backends = (
        _backend("down", strict_server.base_url, "wrong-model"),
        _backend("up", strict_server.base_url, "real-model"),
    )
    client = make_client(replace(settings, backends=backends, pairing="fixed"))
    _, h, _ = alice
    t = say(client, h, start(client, h, mode=mode), wait=False)
    sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    # the first retry gives the failing backend its second chance
    second = _retry(client, h, t["id"])
    before = _backends_of(storage, t["id"])
    assert ("a", "down", "failed") in before
    assert sorted(d["slot"] for e, d in second if e == "error") == [
        slot for slot, _, status in before if status == "failed"
    ]
    with caplog.at_level(logging.WARNING, logger="hhrlhf.collect.backends"):
        third = _retry(client, h, t["id"])
    if mode == "helpful":  # failed twice: drawn another backend, and the turn is ready
        assert before == [("a", "down", "failed"), ("b", "up", "ready")]
        assert sorted(d["slot"] for e, d in third if e == "done") == ["a", "b"]
        assert not [e for e, _ in third if e == "error"]
        assert third[-1] == ("end", {"status": "ready"})
        assert _backends_of(storage, t["id"]) == [("a", "up", "ready"), ("b", "up", "ready")]
        assert any(
            "backend down failed 2 times; retried with up" in r.getMessage() for r in caplog.records
        )
    else:  # a red-team attempt keeps the models it ran on, however often they fail
        assert _backends_of(storage, t["id"]) == before
        assert not any("retried with" in r.getMessage() for r in caplog.records)


def test_retry_switch_after_zero_never_switches(
    make_client, settings, strict_server, alice, storage
):
    backends = (
        _backend("down", strict_server.base_url, "wrong-model"),
        _backend("up", strict_server.base_url, "real-model"),
    )
    client = make_client(
        replace(settings, backends=backends, pairing="fixed", retry_switch_after=0)
    )
    _, h, _ = alice
    t = say(client, h, start(client, h), wait=False)
    sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    for _ in range(3):
        _retry(client, h, t["id"])
    assert _backends_of(storage, t["id"])[0] == ("a", "down", "failed")


def test_the_backends_connections_close_with_the_app(settings, strict_server, alice, storage):
    """Left to the garbage collector, a client's connections were closed later on another test's
    event loop ("Event loop is closed", logged by asyncio): the app closes them as it stops."""
    from fastapi.testclient import TestClient

    from hhrlhf.collect.web.app import create_app

    backends = (
        _backend("m1", strict_server.base_url, "real-model"),
        _backend("m2", strict_server.base_url, "real-model", "openai-completions"),
    )
    app = create_app(replace(settings, backends=backends, pairing="fixed"), storage=storage)
    _, h, _ = alice
    with TestClient(app, base_url="http://testserver") as client:
        say(client, h, start(client, h))
        opened = [b._client for b in app.state.context.generator.backends.values()]
        assert all(c is not None and not c.is_closed() for c in opened)
    assert all(c.is_closed() for c in opened)
    assert all(b._client is None for b in app.state.context.generator.backends.values())


# ---- hh serve in a subprocess -------------------------------------------------------------


def _config(tmp_path: Path, backends: list[tuple[str, str, str]]) -> Path:
    lines = ['[collect]\npairing = "fixed"\n']
    for name, base_url, model in backends:
        lines.append(
            f'[[backend]]\nname = "{name}"\nkind = "openai-chat"\n'
            f'base_url = "{base_url}"\nmodel = "{model}"\ntimeout = 60\n'
        )
    path = tmp_path / "collect.toml"
    path.write_text("\n".join(lines))
    return path


class _Serve:
    """``hh serve ...`` with its stdout and stderr read line by line as they come."""

    def __init__(self, args: list[str], cwd: Path):
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONUNBUFFERED": "1"}
        for k in [k for k in env if k.startswith("HH_COLLECT_")]:
            del env[k]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hhrlhf", "serve", *args],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.out: list[tuple[float, str]] = []
        self.err: list[str] = []
        threading.Thread(target=self._read, args=(self.proc.stdout, True), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, False), daemon=True).start()

    def _read(self, stream, out: bool) -> None:
        for line in stream:
            (self.out.append((time.monotonic(), line)) if out else self.err.append(line))

    def wait_for(self, text: str, timeout: float = 60) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, line in self.out:
                if text in line:
                    return at
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        pytest.fail(f"no {text!r} on stdout; stderr:\n{''.join(self.err)}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def test_hh_serve_warns_about_each_wrong_backend_and_still_starts(tmp_path, strict_server):
    port = free_port("127.0.0.1")
    config = _config(
        tmp_path,
        [
            ("wrong", strict_server.base_url, "wrong-model"),
            ("nov1", strict_server.base_url.removesuffix("/v1"), "real-model"),
            ("down", "http://127.0.0.1:9/v1", "real-model"),
            ("good", strict_server.base_url, "real-model"),
        ],
    )
    served = _Serve(
        ["--config", str(config), "--db", "sqlite:///c.db", "--port", str(port)], tmp_path
    )
    try:
        served.wait_for("serving on")
        err = "".join(served.err)
        assert "warning: backend wrong: model 'wrong-model' is not served there" in err
        assert "warning: backend nov1: " in err and "base_url has no /v1" in err
        assert (
            "warning: backend down: the server at http://127.0.0.1:9/v1 could not be reached" in err
        )
        assert "backend good: ok" in err and "warning: backend good" not in err
    finally:
        served.stop()


def test_hh_serve_says_serving_only_once_it_answers(tmp_path):
    port = free_port("127.0.0.1")
    served = _Serve(
        ["--demo", "--data", "sample", "--db", "sqlite:///c.db", "--port", str(port)], tmp_path
    )
    try:
        served.wait_for("serving on")
        # the very moment the line is out, the app answers (no retry, no wait)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=2) as r:
            assert r.status == 200
        login = served.wait_for("log in:")
        assert login <= served.wait_for("serving on")  # the login link comes with it
    finally:
        served.stop()


def test_ctrl_c_stops_hh_serve_within_2_s_while_a_backend_stalls(tmp_path):
    stalled = serve(Script(stall=True))
    try:
        port = free_port("127.0.0.1")
        config = _config(
            tmp_path,
            [("s1", stalled.base_url, "test-model"), ("s2", stalled.base_url, "test-model")],
        )
        db = f"sqlite:///{tmp_path / 'c.db'}"
        from hhrlhf.collect.db import Storage

        st = Storage(db)
        st.upgrade()
        _, token = annotators.add_annotator(st, "ann")
        st.dispose()
        served = _Serve(["--config", str(config), "--db", db, "--port", str(port)], tmp_path)
        try:
            served.wait_for("serving on")
            import httpx

            base = f"http://127.0.0.1:{port}"
            h = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=base, headers=h, timeout=10) as client:
                cid = client.post("/api/v1/conversations", json={"task_description": "t"}).json()
                turn = client.post(
                    f"/api/v1/conversations/{cid['id']}/turns",
                    json={"text": "hello", "wait": False},
                ).json()

                def listen() -> None:
                    try:
                        with client.stream("GET", f"/api/v1/turns/{turn['id']}/stream") as r:
                            for _ in r.iter_bytes():
                                pass
                    except httpx.HTTPError:
                        pass

                threading.Thread(target=listen, daemon=True).start()
                deadline = time.monotonic() + 10
                while len(stalled.script.requests) < 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert len(stalled.script.requests) == 2  # both requests wait on the server
                t0 = time.monotonic()
                served.proc.send_signal(signal.SIGINT)
                served.proc.wait(15)
                took = time.monotonic() - t0
            assert took < 2.0, f"hh serve took {took:.1f} s to stop"
        finally:
            served.stop()
    finally:
        stalled.stop()


@pytest.mark.browser
def test_the_annotator_reads_a_generic_note_and_the_admin_the_servers_words_escaped(
    tmp_path, strict_server
):
    from logins import browser_login
    from test_browser import TIMEOUT_MS, _login_and_start, _watch, open_chromium, serve_app

    from hhrlhf.collect.config import demo_settings

    hostile = "<img src=x onerror=alert(1)>"

    def make(url):
        backends = (
            _backend("kestrel-backend", strict_server.base_url, hostile),
            _backend("wren-backend", strict_server.base_url, "real-model"),
        )
        return replace(demo_settings(url), backends=backends, pairing="fixed")

    with serve_app(tmp_path, make) as (base, storage, token, _, _), open_chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        seen = _watch(page)
        received = []  # every response the annotator's browser gets: headers, and bodies

        def keep(r):
            body = ""
            if "event-stream" not in r.headers.get("content-type", ""):
                try:
                    body = r.text()
                except Exception:  # a redirect has no body to read
                    body = ""
            received.append(f"{r.url}\n{r.headers}\n{body}")

        page.on("requestfinished", lambda req: keep(req.response()) if req.response() else None)
        _login_and_start(page, base, token, "Ask about tea")
        page.fill("#message", "How long should green tea steep?")
        page.press("#message", "Enter")
        page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
        note = page.text_content('.candidate[data-slot="a"] [data-role="note"]')
        assert note == "Response A: the model could not answer. Retry."
        page.click("#retry")  # fails again: the stream replays, the conversation is read back
        page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
        page.reload()
        page.wait_for_selector("#turn-error:not([hidden])", timeout=TIMEOUT_MS)
        for shown in (page.content(), page.inner_text("body"), *received):
            tells = ("does not exist", strict_server.base_url, "kestrel-backend", "wren-backend")
            for tell in (*tells, hostile, "real-model"):
                assert tell not in shown, (tell, shown[:300])
        assert len(received) > 8
        assert page.is_visible("#retry")
        assert seen["dialogs"] == [] and seen["errors"] == []
        # the admin reads the server's own words, as text
        _, admin_token = annotators.add_annotator(storage, "lead", role="admin")
        admin = browser.new_page(viewport={"width": 1280, "height": 800})
        admin_seen = _watch(admin)
        browser_login(admin, base, admin_token)
        admin.goto(f"{base}/admin/backends")
        assert f"The model `{hostile}` does not exist." in admin.inner_text("main")
        assert admin.locator("main img").count() == 0
        assert admin_seen["dialogs"] == [] and admin_seen["errors"] == []
