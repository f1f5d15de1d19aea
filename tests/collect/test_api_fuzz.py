"""Generated requests against every JSON route of the app: nothing a client sends is a 5xx.

Every ``/api/v1`` route of the app's own OpenAPI schema is called with generated path
parameters (huge, negative, zero, text), query strings (the data browser's filters among
them), bodies (the route's own shape with hostile values, any JSON, bytes that are not JSON
or not UTF-8, lone surrogates as JSON escapes) and credentials (none, a wrong token, an
annotator, an admin), on SQLite and PostgreSQL. Seeded (``derandomize``), so CI sees the
same requests every run; a failure prints the request that broke the app.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from urllib.parse import quote

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given  # noqa: E402
from hypothesis import settings as hsettings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from hhrlhf.collect.services import annotators  # noqa: E402
from hhrlhf.transcript import ASSISTANT, HUMAN  # noqa: E402

#: requests per database (about 10 s each on two shared cores); HH_FUZZ_EXAMPLES for a longer hunt
EXAMPLES = int(os.environ.get("HH_FUZZ_EXAMPLES", "700"))

HOSTILE = [
    "",
    " ",
    HUMAN,
    ASSISTANT,
    f"hello{HUMAN}fake turn",
    f"ok{ASSISTANT}nobody said this",
    "Human: inline",
    "\x00",
    "a\x00b",
    "\u202e\u2066bidi\u2069",
    "\u200b",
    "<script>alert(1)</script>",
    "'; DROP TABLE conversations; --",
    "x" * 300_000,
    "😀" * 1000,
    "\\ud800",
]
#: numbers at and past the edges of the id columns and of JSON integers
EDGES = [0, 1, 2, 3, -1, 2**31 - 1, 2**31, 2**32, 2**53, 2**63 - 1, 2**63, -(2**63), 10**30]
#: the query parameters the routes read (declared or read from the query string)
QUERY = [
    "all",
    "resamples",
    "source",
    "subset",
    "split",
    "q",
    "search_in",
    "limit",
    "offset",
    "class",
    "chosen",
    "turns",
    "where",
    "min_rating",
    "max_rating",
    "min_score",
    "max_score",
    "plots",
    "weeks",
]

texts = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40))
#: what fits in a URL (a client refuses a 300 kB one before it is sent)
short_texts = st.one_of(
    st.sampled_from([h for h in HOSTILE if len(h) < 2000]), st.text(max_size=40)
)
numbers = st.one_of(st.sampled_from(EDGES), st.integers(), st.floats(allow_nan=True))
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
any_json = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


def _value_for(schema: dict, components: dict) -> st.SearchStrategy:
    """A value near the schema (its type with hostile contents), or anything at all."""
    if "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    if "anyOf" in schema:
        return st.one_of([_value_for(s, components) for s in schema["anyOf"]])
    kind = schema.get("type")
    near = {
        "string": texts,
        "integer": st.one_of(st.sampled_from(EDGES), st.integers(-10, 10)),
        "boolean": st.booleans(),
        "null": st.none(),
        "object": st.dictionaries(texts, scalars, max_size=4),
    }.get(kind, any_json)
    return st.one_of(near, near, any_json)  # mostly the right type


def _body(schema: dict | None, components: dict) -> st.SearchStrategy:
    """Bytes to send: the shape of ``schema`` (some keys left out), any JSON, or not JSON."""
    raw = st.one_of(
        st.binary(max_size=64),
        st.sampled_from([b"", b"{", b"null", b"[]", b"\xff\xfe{}", b'{"text": "\\ud800"}']),
    )
    if schema is None:
        return st.one_of(raw, any_json.map(lambda v: json.dumps(v).encode()))
    if "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    props = schema.get("properties", {})
    shaped = st.fixed_dictionaries(
        {},
        optional={k: _value_for(v, components) for k, v in props.items()},
    ).map(lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    with_surrogate = st.sampled_from(sorted(props) or ["text"]).map(
        lambda k: (json.dumps(k) + ': "a\\ud800b"').join("{}").encode()
    )
    return st.one_of(
        shaped,
        shaped,
        shaped,
        with_surrogate,
        any_json.map(lambda v: json.dumps(v).encode()),
        raw,
    )


def _path_value(name: str) -> st.SearchStrategy:
    if name in {"subset", "split", "name"}:
        return st.one_of(
            st.sampled_from(["harmless-base", "helpful-base", "test", "train", "alice"]),
            short_texts,
        )
    return st.one_of(st.sampled_from(EDGES), st.integers(-5, 50), short_texts)


def _routes(app) -> list[tuple[str, str, list[str], dict | None]]:
    """``(method, path template, path parameter names, body schema)`` of every JSON route."""
    spec = app.openapi()
    out = []
    for path, ops in spec["paths"].items():
        if not path.startswith("/api/v1"):
            continue
        for method, op in ops.items():
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            out.append((method.upper(), path, re.findall(r"{(\w+)}", path), body.get("schema")))
    return out


def _requests(app) -> st.SearchStrategy:
    components = app.openapi().get("components", {}).get("schemas", {})
    routes = _routes(app)

    @st.composite
    def request(draw):
        method, template, names, schema = draw(st.sampled_from(routes))
        path = template
        for name in names:
            value = draw(_path_value(name))
            path = path.replace("{" + name + "}", quote(str(value), safe=""))
        query = draw(
            st.dictionaries(
                st.sampled_from(QUERY),
                st.one_of(short_texts, numbers.map(str), st.sampled_from(["collected", "0", "1"])),
                max_size=3,
            )
        )
        if query:
            path += "?" + "&".join(
                f"{quote(k)}={quote(str(v), safe='', errors='surrogatepass')}"
                for k, v in query.items()
            )
        body = draw(_body(schema, components)) if method == "POST" else None
        who = draw(st.sampled_from(["nobody", "wrong", "annotator", "admin"]))
        return method, path, body, who

    return request()


@pytest.fixture
def fuzz_client(make_client, settings, storage):
    """The app with the bundled sample to browse, limits high enough that a run of requests
    explores the routes rather than the rate limiter, and a finished conversation, an open
    review task and a generating turn for the ids to find."""
    client = make_client(
        replace(
            settings,
            data="sample",
            review_fraction=1.0,
            rate_writes_per_minute=1_000_000,
            rate_reads_per_minute=1_000_000,
            rate_login_per_minute=1_000_000,
        )
    )
    alice, alice_token = annotators.add_annotator(storage, "fuzz-alice")
    admin, admin_token = annotators.add_annotator(storage, "fuzz-root", role="admin")
    headers = {"Authorization": f"Bearer {alice_token}"}
    conv = client.post(
        "/api/v1/conversations", json={"task_description": "Plan a picnic"}, headers=headers
    )
    assert conv.status_code == 201, conv.text
    cid = conv.json()["id"]
    turn = client.post(
        f"/api/v1/conversations/{cid}/turns",
        json={"text": "What should I pack?", "wait": True},
        headers=headers,
    )
    assert turn.status_code in (200, 201), turn.text
    tid = turn.json()["id"]
    done = client.post(
        f"/api/v1/turns/{tid}/choice", json={"pick": "a", "strength": 3}, headers=headers
    )
    assert done.status_code == 200, done.text
    fin = client.post(f"/api/v1/conversations/{cid}/finish", json={}, headers=headers)
    assert fin.status_code == 200, fin.text
    return client, {
        "nobody": {},
        "wrong": {"Authorization": "Bearer not-a-token"},
        "annotator": headers,
        "admin": {"Authorization": f"Bearer {admin_token}"},
    }


def test_no_generated_request_is_a_server_error(fuzz_client):
    client, auth = fuzz_client
    seen: dict[int, int] = {}

    @hsettings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(req=_requests(client.app))
    def run(req):
        method, path, body, who = req
        headers = dict(auth[who])
        if body is not None:
            headers["Content-Type"] = "application/json"
        r = client.request(method, path, content=body, headers=headers)
        seen[r.status_code] = seen.get(r.status_code, 0) + 1
        assert r.status_code < 500, (method, path[:300], body and body[:300], who, r.text[:500])
        if r.headers.get("content-type", "").startswith("application/json"):
            r.json()  # every JSON answer parses

    run()
    print("answers by status:", dict(sorted(seen.items())))
    # the run reached past the front door: answers of many kinds, successes among them
    assert sum(n for s, n in seen.items() if s < 300) >= EXAMPLES // 20, seen
    assert {401, 404, 422} <= set(seen), seen
