"""Attack surface of the collection app: headers, cookies, templates, CSRF, tokens, size limits.

- every kind of response (page, JSON, error, redirect, static file, event stream, 413, 429,
  an unexpected 500) carries the CSP (no inline script), ``frame-ancestors 'none'``, nosniff
  and Referrer-Policy;
- the session cookie is HttpOnly and SameSite, and Secure over HTTPS (direct or behind a proxy
  that sets ``X-Forwarded-Proto``, as ``hh serve`` trusts by default);
- no template or script holds inline script, an event-handler attribute or an HTML sink;
- a forged state-changing request from a cookie session gets 403 and changes nothing;
- tokens are 256 random bits, the database holds only their hashes;
- every input has a size limit, refused with a clear 413/422 naming it, storing nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from logins import login, login_form, session_cookie
from sqlalchemy import MetaData, select

from hhrlhf.cli import cli
from hhrlhf.collect.services import annotators, transcripts
from hhrlhf.collect.services.annotators import new_token
from hhrlhf.collect.web.app import SECURITY_HEADERS

PKG = Path(__file__).resolve().parents[2] / "src" / "hhrlhf"


def _csp(headers) -> dict[str, list[str]]:
    out = {}
    for part in headers["content-security-policy"].split(";"):
        name, *values = part.split()
        out[name] = values
    return out


def _check_headers(r, what: str) -> None:
    for k, v in SECURITY_HEADERS.items():
        assert r.headers.get(k) == v, (what, r.status_code, k)
    csp = _csp(r.headers)
    assert csp["script-src"] == ["'self'"], what
    assert csp["frame-ancestors"] == ["'none'"], what
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "same-origin"


def test_the_policy_allows_no_inline_script_and_no_framing():
    csp = _csp({"content-security-policy": SECURITY_HEADERS["content-security-policy"]})
    assert csp["default-src"] == ["'self'"] and csp["script-src"] == ["'self'"]
    assert csp["object-src"] == ["'none'"] and csp["base-uri"] == ["'none'"]
    assert csp["frame-ancestors"] == ["'none'"] and csp["form-action"] == ["'self'"]
    flat = " ".join(v for vs in csp.values() for v in vs)
    for loose in ("unsafe-inline", "unsafe-eval", "data:", "*", "http:", "https:"):
        assert loose not in flat.split(), loose


def test_every_kind_of_response_carries_the_headers(make_client, settings, alice, storage):
    from fastapi.testclient import TestClient

    from hhrlhf.collect.web.app import create_app

    app = create_app(replace(settings, rate_login_per_minute=3), storage=storage)

    @app.get("/boom")
    def boom():
        raise RuntimeError("an unexpected bug")

    client = TestClient(app, base_url="http://testserver", raise_server_exceptions=False)
    _, h, token = alice
    cid = client.post("/api/v1/conversations", json={"task_description": "t"}, headers=h).json()
    turn = client.post(
        f"/api/v1/conversations/{cid['id']}/turns", json={"text": "hi", "wait": False}, headers=h
    ).json()
    responses = {
        "health": client.get("/api/v1/health"),
        "401 json": client.get("/api/v1/me"),
        "404 json": client.get("/api/v1/nope"),
        "404 huge id": client.get("/api/v1/conversations/99999999999999999999", headers=h),
        "405": client.get(f"/api/v1/turns/{turn['id']}/choice", headers=h),
        "422": client.post("/api/v1/conversations", content=b"{", headers=h),
        "413": client.post("/api/v1/conversations", content=b"x" * 300_000, headers=h),
        "stream": client.get(f"/api/v1/turns/{turn['id']}/stream", headers=h),
        "static js": client.get("/static/collect.js"),
        "static css": client.get("/static/collect.css"),
        "static 404": client.get("/static/nope.js"),
        "login page": client.get("/login?token=bad"),
        "login redirect": login(client, token),
        "home page": client.get("/"),
        "help page": client.get("/help"),
        "conversation page": client.get(f"/conversations/{cid['id']}"),
        "error page": client.get("/conversations/424242"),
        "429": client.get("/login?token=bad"),
        "500": client.get("/boom"),
    }
    expected = {"413": 413, "429": 429, "500": 500, "login redirect": 303, "405": 405}
    for what, r in responses.items():
        want = expected.get(what)
        if want:
            assert r.status_code == want, (what, r.status_code)
        _check_headers(r, what)
    assert responses["stream"].headers["content-type"].startswith("text/event-stream")
    assert responses["404 huge id"].status_code == 404
    assert "not found" in responses["404 huge id"].json()["error"]
    client.close()


@pytest.mark.parametrize("route", ["/api/v1/conversations/{n}", "/conversations/{n}"])
@pytest.mark.parametrize(
    "n",
    [
        "2147483648",  # one past PostgreSQL's integer column (was a 503 there)
        "99999999999",
        "-2147483649",
        "9223372036854775808",
        "-9223372036854775809",
        "1" + "0" * 40,
    ],
)
def test_an_id_beyond_the_id_columns_is_not_found(client, alice, route, n):
    _, h, _ = alice
    r = client.get(route.format(n=n), headers=h)
    assert r.status_code == 404 and "not found" in r.json()["error"]
    r = client.post(f"/api/v1/turns/{n}/choice", json={"pick": "a", "strength": 2}, headers=h)
    assert r.status_code == 404


def _login(client, token) -> str:
    r = login(client, token)
    assert r.status_code == 303
    return session_cookie(r)


def _attrs(cookie: str) -> set[str]:
    return {p.strip().split("=")[0].lower() for p in cookie.split(";")[1:]}


def test_the_session_cookie_is_httponly_samesite_and_secure_over_https(
    make_client, settings, storage, alice
):
    from fastapi.testclient import TestClient
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    from hhrlhf.collect.web.app import create_app

    _, _, token = alice
    plain = _login(make_client(settings), token)
    assert {"httponly", "samesite"} <= _attrs(plain) and "secure" not in _attrs(plain)
    assert "samesite=lax" in plain.lower()
    # served over HTTPS
    with TestClient(create_app(settings, storage=storage), base_url="https://testserver") as c:
        cookie = _login(c, token)
        assert {"httponly", "samesite", "secure"} <= _attrs(cookie)
    # behind a TLS proxy: uvicorn's proxy headers (hh serve: proxy_headers=True, trusting
    # FORWARDED_ALLOW_IPS, 127.0.0.1 by default) make the scheme https
    app = ProxyHeadersMiddleware(create_app(settings, storage=storage), trusted_hosts="*")
    with TestClient(app, base_url="http://testserver") as c:
        form = login_form(c.get(f"/login?token={token}").text)
        r = c.post(
            "/login",
            data={"token": token, "form": form},
            headers={"X-Forwarded-Proto": "https", "X-Forwarded-For": "10.0.0.1"},
            follow_redirects=False,
        )
        assert r.status_code == 303 and "secure" in _attrs(session_cookie(r))
        assert "secure" not in _attrs(_login(c, token))  # no header: plain http


# -- no inline script anywhere ------------------------------------------------------------

TEMPLATE_RULES = {
    "an inline <script> (scripts must have src)": re.compile(
        r"<script\b(?![^>]*\bsrc\s*=)", re.IGNORECASE
    ),
    "an inline event-handler attribute": re.compile(r"<[^>]*\son[a-z]+\s*=", re.IGNORECASE),
    "a javascript: URL": re.compile(r"javascript\s*:", re.IGNORECASE),
    "an inline style attribute (CSP style-src 'self')": re.compile(
        r"<[^>]*\sstyle\s*=", re.IGNORECASE
    ),
    "an inline <style> element": re.compile(r"<style\b", re.IGNORECASE),
    "autoescaping turned off (|safe, autoescape false, Markup)": re.compile(
        r"\|\s*safe\b|autoescape\s+false|Markup\(", re.IGNORECASE
    ),
}

SCRIPT_RULES = {
    "an HTML sink (innerHTML, outerHTML, insertAdjacentHTML, document.write)": re.compile(
        r"\.(innerHTML|outerHTML)\s*[+]?=|insertAdjacentHTML|document\.write"
    ),
    "code from a string (eval, new Function, setTimeout with a string)": re.compile(
        r"\beval\s*\(|new\s+Function\s*\(|set(Timeout|Interval)\s*\(\s*['\"`]"
    ),
    "a javascript: URL": re.compile(r"javascript\s*:", re.IGNORECASE),
}


def _scan(files, rules, root=PKG) -> list[str]:
    found = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        for why, rule in rules.items():
            for m in rule.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{f.relative_to(root)}:{line}: {why}")
    return found


def test_no_template_holds_inline_script_handlers_or_unescaped_output():
    files = sorted((PKG / "templates").rglob("*.html"))
    assert any(f.parent.name == "collect" for f in files)
    # the red-team report is one self-contained file (opened from disk, mailed around): its
    # styles are one <style> element; every other rule holds for it too
    report = [f for f in files if f.parent.name == "report"]
    assert report
    app = [f for f in files if f not in report]
    standalone = {k: v for k, v in TEMPLATE_RULES.items() if k != "an inline <style> element"}
    assert _scan(app, TEMPLATE_RULES) + _scan(report, standalone) == []


def test_no_script_parses_text_as_html_or_code():
    files = sorted((PKG / "static").rglob("*.js"))
    assert files
    assert _scan(files, SCRIPT_RULES) == []


def test_the_scans_catch_what_they_look_for(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<script>x()</script>\n<button onclick="x()">\n<a href="javascript:x()">\n'
        '<p style="color:red">\n<style>p{}</style>\n{{ text | safe }}\n<script src="/s.js"></script>'
    )
    assert len(_scan([bad], TEMPLATE_RULES, tmp_path)) == 6
    js = tmp_path / "bad.js"
    js.write_text("el.innerHTML = t;\nel.insertAdjacentHTML('beforeend', t);\neval(t);\n")
    assert len(_scan([js], SCRIPT_RULES, tmp_path)) == 3
    ok = tmp_path / "ok.js"
    ok.write_text("el.textContent = t;\nwindow.setTimeout(() => go(), 10);\n")
    assert _scan([ok], SCRIPT_RULES, tmp_path) == []


# -- CSRF -----------------------------------------------------------------------------------


@pytest.fixture
def session(make_client, settings, storage, alice, bob):
    """Alice logged in by cookie, with an open conversation and a ready turn."""
    client = make_client(settings)
    _, ha, token = alice
    cid = client.post("/api/v1/conversations", json={"task_description": "Bake"}, headers=ha)
    cid = cid.json()["id"]
    tid = client.post(f"/api/v1/conversations/{cid}/turns", json={"text": "hi"}, headers=ha)
    tid = tid.json()["id"]
    _login(client, token)
    csrf = client.get("/api/v1/me").json()["csrf_token"]
    other = make_client(settings)
    _login(other, bob[2])
    bob_csrf = other.get("/api/v1/me").json()["csrf_token"]
    return {"client": client, "cid": cid, "tid": tid, "csrf": csrf, "bob_csrf": bob_csrf}


WRITES = {
    "/api/v1/conversations": {"mode": "helpful", "task_description": "Forged"},
    "/api/v1/conversations/{cid}/turns": {"text": "forged"},
    "/api/v1/turns/{tid}/choice": {"pick": "a", "strength": 4},
    "/api/v1/turns/{tid}/retry": None,
    "/api/v1/conversations/{cid}/finish": {"comment": "forged"},
    "/logout": None,
}


def _forgeries(s) -> dict[str, dict]:
    return {
        "no token, cross-site form": {
            "headers": {
                "Origin": "http://evil.example",
                "Content-Type": "application/x-www-form-urlencoded",
            },
            "form": True,
        },
        "no token, no Origin": {"headers": {}},
        "no token, same Origin": {"headers": {"Origin": "http://testserver"}},
        "wrong token": {"headers": {"X-CSRF-Token": "x" * 43}},
        "another session's token": {"headers": {"X-CSRF-Token": s["bob_csrf"]}},
        "right token, other Origin": {
            "headers": {"X-CSRF-Token": s["csrf"], "Origin": "http://evil.example"}
        },
        "right token, Origin null": {"headers": {"X-CSRF-Token": s["csrf"], "Origin": "null"}},
        "right token, other port": {
            "headers": {"X-CSRF-Token": s["csrf"], "Origin": "http://testserver:8080"}
        },
    }


def _state(storage, s):
    client = s["client"]
    conv = client.get(f"/api/v1/conversations/{s['cid']}").json()
    return transcripts.counts(storage), conv, client.get("/api/v1/me").status_code


@pytest.mark.parametrize("path", list(WRITES))
def test_a_forged_write_is_403_and_changes_nothing(session, storage, path):
    s, client = session, session["client"]
    url = path.format(cid=s["cid"], tid=s["tid"])
    body = WRITES[path]
    for what, forgery in _forgeries(s).items():
        before = _state(storage, s)
        if forgery.get("form"):
            r = client.post(url, content=b"pick=a&strength=4", headers=forgery["headers"])
        else:
            r = client.post(url, json=body, headers=forgery["headers"])
        assert r.status_code == 403, (what, r.status_code, r.text)
        assert "X-CSRF-Token" in r.json()["error"] or "Origin" in r.json()["error"], what
        assert _state(storage, s) == before, what  # the session is alive too (no logout)
    # the page's own request (the right token, this Origin) goes through
    good = {"X-CSRF-Token": s["csrf"], "Origin": "http://testserver"}
    if path.endswith("/turns"):  # the open turn is decided first
        client.post(
            f"/api/v1/turns/{s['tid']}/choice", json={"pick": "a", "strength": 2}, headers=good
        )
    r = client.post(
        url, json=body, headers={"X-CSRF-Token": s["csrf"], "Origin": "http://testserver"}
    )
    assert r.status_code in (200, 201), (url, r.text)


def test_bearer_calls_need_no_csrf_token_and_never_fall_back_to_the_cookie(session, alice):
    client = session["client"]
    _, ha, _ = alice
    r = client.post("/api/v1/conversations", json={"task_description": "x"}, headers=ha)
    assert r.status_code == 201
    # a wrong bearer token with a valid cookie is refused, not served as the cookie's owner
    r = client.post(
        "/api/v1/conversations",
        json={"task_description": "x"},
        headers={"Authorization": "Bearer nope", "X-CSRF-Token": session["csrf"]},
    )
    assert r.status_code == 401


def test_the_csrf_token_is_compared_in_constant_time(session, monkeypatch):
    calls = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    r = session["client"].post(
        "/api/v1/conversations",
        json={"task_description": "x"},
        headers={"X-CSRF-Token": "guess"},
    )
    assert r.status_code == 403
    assert (b"guess", session["csrf"].encode()) in calls


# -- tokens ---------------------------------------------------------------------------------


def test_tokens_are_256_random_bits():
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    for t in tokens:
        assert re.fullmatch(r"[A-Za-z0-9_-]{43}", t)
        assert len(base64.urlsafe_b64decode(t + "=")) == 32


def _dump(storage) -> str:
    meta = MetaData()
    meta.reflect(storage.engine)
    rows = []
    with storage.engine.connect() as c:
        for table in meta.sorted_tables:
            rows += [repr(tuple(r)) for r in c.execute(select(table))]
    return "\n".join(rows)


def test_the_database_never_holds_a_login_token_or_a_session_cookie(
    make_client, settings, storage, db_url
):
    r = CliRunner().invoke(cli, ["collect", "annotator", "add", "alice", "--db", db_url])
    assert r.exit_code == 0, r.output
    token = r.stdout.strip().splitlines()[-1]
    client = make_client(settings)
    cookie_header = _login(client, token)
    cookie = re.match(r"hh_session=([^;]+)", cookie_header).group(1)
    csrf = client.get("/api/v1/me").json()["csrf_token"]
    r = client.post(
        "/api/v1/conversations", json={"task_description": "x"}, headers={"X-CSRF-Token": csrf}
    )
    assert r.status_code == 201
    dump = _dump(storage)
    assert "alice" in dump  # the dump reads the rows
    assert token not in dump and cookie not in dump
    assert hashlib.sha256(token.encode()).hexdigest() in dump
    assert hashlib.sha256(cookie.encode()).hexdigest() in dump
    # a rotated token replaces the hash; the old one no longer logs in
    new = annotators.rotate_token(storage, "alice")
    assert new not in _dump(storage)
    assert make_client(settings).get(f"/login?token={token}").status_code == 401


# -- size limits ----------------------------------------------------------------------------

LIMITS = {
    # input -> (settings field, what the error names)
    "task_description": ("max_task_chars", "task_description is too long"),
    "text": ("max_message_chars", "the message is too long"),
    "edit": ("max_edit_chars", "the edit is too long"),
    "comment": ("max_comment_chars", "the comment is too long"),
}


def _ready(client, h):
    cid = client.post("/api/v1/conversations", json={"task_description": "t"}, headers=h).json()
    tid = client.post(f"/api/v1/conversations/{cid['id']}/turns", json={"text": "hi"}, headers=h)
    return cid["id"], tid.json()["id"]


def _send(client, h, field, value, cid, tid):
    if field == "task_description":
        return client.post("/api/v1/conversations", json={field: value}, headers=h)
    if field == "text":
        return client.post(f"/api/v1/conversations/{cid}/turns", json={field: value}, headers=h)
    if field == "edit":
        return client.post(
            f"/api/v1/turns/{tid}/choice",
            json={"pick": "a", "strength": 2, "edit": value},
            headers=h,
        )
    return client.post(f"/api/v1/conversations/{cid}/finish", json={field: value}, headers=h)


@pytest.mark.parametrize("field", list(LIMITS))
def test_each_input_has_a_limit_named_in_the_refusal(make_client, settings, storage, alice, field):
    setting, says = LIMITS[field]
    limit = 300
    client = make_client(replace(settings, **{setting: limit}))
    _, h, _ = alice
    cid, tid = _ready(client, h)
    before = transcripts.counts(storage)
    r = _send(client, h, field, "é" * (limit + 1), cid, tid)
    assert r.status_code == 413, r.text
    assert says in r.json()["error"] and f"the limit is {limit}" in r.json()["error"]
    assert transcripts.counts(storage) == before
    conv = client.get(f"/api/v1/conversations/{cid}", headers=h).json()
    assert conv["status"] == "open" and conv["turns"][0]["pick"] is None
    # exactly at the limit is accepted (characters, not bytes)
    if field == "text":  # the open turn must be decided before another message
        client.post(f"/api/v1/turns/{tid}/choice", json={"pick": "a", "strength": 2}, headers=h)
    r = _send(client, h, field, "é" * limit, cid, tid)
    assert r.status_code in (200, 201), r.text


def test_request_id_annotator_name_login_token_and_body_are_limited(client, storage, alice, db_url):
    _, h, _ = alice
    cid, tid = _ready(client, h)
    r = client.post(
        f"/api/v1/turns/{tid}/choice",
        json={"pick": "a", "strength": 2, "request_id": "r" * 101},
        headers=h,
    )
    assert r.status_code == 413 and "request_id is too long" in r.json()["error"]
    # the annotator name: a clear one-line error from the command, nothing added
    r = CliRunner().invoke(cli, ["collect", "annotator", "add", "n" * 201, "--db", db_url])
    assert r.exit_code != 0 and "error: annotator name must be 1-200 characters" in r.output
    assert "Traceback" not in r.output
    assert annotators.annotator_by_name(storage, "n" * 201) is None
    # a login token far too long for any real one is refused without a session
    r = client.get("/login?token=" + "t" * 10_000, follow_redirects=False)
    assert r.status_code == 401 and not session_cookie(r)
    r = client.post("/login", data={"token": "t" * 10_000, "form": login_form(r.text)})
    assert r.status_code == 401 and not session_cookie(r)
    # the whole body: 413 naming it, with or without a Content-Length (chunked)
    big = b'{"task_description": "' + b"q" * 300_000 + b'"}'
    before = transcripts.counts(storage)
    for content in (big, iter([big[:150_000], big[150_000:]])):
        r = client.post(
            "/api/v1/conversations",
            content=content,
            headers={**h, "Content-Type": "application/json"},
        )
        assert r.status_code == 413 and "request body too large" in r.json()["error"]
    assert transcripts.counts(storage) == before


# -- caching and HSTS ---------------------------------------------------------------------


def test_pages_and_answers_that_carry_a_csrf_token_are_never_stored(client, alice, storage):
    _, _, token = alice
    login_page = client.get(f"/login?token={token}")
    assert login_page.headers["cache-control"] == "no-store"  # its one-time form value
    assert client.get("/").headers["cache-control"] == "no-store"  # the login prompt
    assert login(client, token).status_code == 303
    csrf = client.get("/api/v1/me")
    assert csrf.json()["csrf_token"] and csrf.headers["cache-control"] == "no-store"
    for path in ("/", "/help", "/review"):
        r = client.get(path)
        assert 'name="csrf-token"' in r.text, path
        assert r.headers["cache-control"] == "no-store", path
    assert "no-store" not in client.get("/static/collect.css").headers.get("cache-control", "")


def test_hsts_only_when_asked(make_client, settings, alice):
    _, h, _ = alice
    plain = make_client(settings)
    assert "strict-transport-security" not in plain.get("/api/v1/health").headers
    hsts = make_client(replace(settings, hsts=True))
    for r in (
        hsts.get("/api/v1/health"),
        hsts.get("/"),
        hsts.get("/api/v1/conversations/424242", headers=h),
        hsts.post("/api/v1/conversations", content=b"x" * 300_000, headers=h),
    ):
        assert r.headers["strict-transport-security"] == "max-age=31536000", r.status_code


def test_odd_path_text_is_not_found_not_a_server_error(client, admin):
    """Found by the API fuzz: a NUL in an annotator's name reached PostgreSQL (503), and a
    superscript digit passed str.isdigit() into int() (500)."""
    _, headers, _ = admin
    r = client.post("/api/v1/admin/annotators/%00", json={}, headers=headers)
    assert r.status_code == 404 and "no annotator" in r.json()["error"]
    r = client.post("/api/v1/turns/%C2%B9/retry", headers=headers)
    assert r.status_code in (404, 422), r.text
