"""The operator's admin pages: the export download, the Backends page, the conversation list
by page and filter. In process, then what a person sees in chromium."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zipfile
from dataclasses import replace

import pytest

pytest.importorskip("jinja2")

from logins import login as login_with_token  # noqa: E402
from openai_server import Script, serve  # noqa: E402
from test_review import conversation  # noqa: E402

from hhrlhf.collect.config import BackendConfig  # noqa: E402
from hhrlhf.collect.services import annotators, conversations
from hhrlhf.collect.services.export import export_collection  # noqa: E402


def login(client, storage, name, role="admin"):
    who, token = annotators.add_annotator(storage, name, role=role)
    assert login_with_token(client, token).status_code == 303
    return who


def _export_files(tmp_path, storage) -> dict[str, bytes]:
    """What ``hh collect export`` writes for this database: name -> content (gz unpacked)."""
    out = tmp_path / "cli-export"
    export_collection(storage, out)
    return {
        p.relative_to(out).as_posix(): _plain(p.name, p.read_bytes())
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def _plain(name: str, data: bytes) -> bytes:
    return gzip.decompress(data) if name.endswith(".gz") else data


def _without_time(files: dict[str, bytes]) -> dict[str, bytes]:
    import json

    out = dict(files)
    manifest = json.loads(out.pop("manifest.json"))
    manifest.pop("created_at", None)
    manifest.pop("exported_at", None)
    out["manifest.json"] = json.dumps(manifest, sort_keys=True).encode()
    return out


@pytest.mark.parametrize("fmt", ["zip", "tar.gz"])
def test_the_export_button_downloads_what_the_cli_writes(
    make_client, settings, storage, tmp_path, fmt
):
    client = make_client(settings)
    who = login(client, storage, "root")
    for _ in range(3):
        conversation(storage, who, [("a", 3), ("b", 2)])
    r = client.get("/admin/export", params={"format": fmt})
    assert r.status_code == 200
    assert r.headers["content-disposition"].startswith("attachment; filename=")
    assert r.headers["content-disposition"].endswith(f'.{fmt}"')
    if fmt == "zip":
        with zipfile.ZipFile(io.BytesIO(r.content)) as z:
            got = {n: _plain(n, z.read(n)) for n in z.namelist() if not n.endswith("/")}
    else:
        with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:gz") as t:
            got = {
                m.name.removeprefix("./"): _plain(m.name, t.extractfile(m).read())
                for m in t.getmembers()
                if m.isfile()
            }
    expected = _export_files(tmp_path, storage)
    helpful = b"".join(v for k, v in expected.items() if k.startswith("helpful-base/"))
    assert b"Answer A0." in helpful  # the comparisons are in it
    assert _without_time(got) == _without_time(expected)


def test_the_accepted_only_button_downloads_only_the_accepted(make_client, settings, storage):
    from sqlalchemy import select

    from hhrlhf.collect.db.models import Comparison
    from hhrlhf.collect.services.verdicts import record_verdict

    client = make_client(settings)
    who = login(client, storage, "root")
    conversation(storage, who, [("a", 3), ("b", 2)])
    judge, _ = annotators.add_annotator(storage, "vera", role="reviewer")
    with storage.read() as s:
        first = s.scalar(select(Comparison.id).order_by(Comparison.id))
    record_verdict(storage, judge, first, "accept", points=settings.strength_points)
    r = client.get("/admin/export", params={"format": "zip", "accepted_only": "true"})
    assert r.status_code == 200
    with zipfile.ZipFile(io.BytesIO(r.content)) as z:
        manifest = json.loads(z.read("manifest.json"))
    assert manifest["accepted_only"] is True and manifest["rows"] == 1
    assert manifest["left_out"]["no_verdict"] == 1
    page = client.get("/admin")
    assert 'href="/admin/export?format=zip&amp;accepted_only=true"' in page.text


def test_the_export_is_for_admins_only(make_client, settings, storage):
    client = make_client(settings)
    login(client, storage, "ann", role="annotator")
    assert client.get("/admin/export").status_code == 403
    assert client.get("/admin/backends").status_code == 403


def test_an_unknown_archive_format_is_refused(make_client, settings, storage):
    client = make_client(settings)
    login(client, storage, "root")
    r = client.get("/admin/export", params={"format": "rar"})
    assert r.status_code == 400 and "zip or tar.gz" in r.text


def test_the_conversation_list_pages_and_filters(make_client, settings, storage):
    client = make_client(settings)
    root = login(client, storage, "root")
    ann, _ = annotators.add_annotator(storage, "ann")
    for i in range(60):
        conversation(storage, root, [("a", 2)], finish=i % 2 == 0)
    for _ in range(7):
        conversation(storage, ann, [("a", 2)], mode="red-team", backends=("m1", "m1"))
    first = client.get("/admin").text
    assert "67 conversations, page 1 of 2" in first
    assert first.count('href="/conversations/') == 50
    assert 'id="page-next" href="/admin?page=2#conversations"' in first
    second = client.get("/admin", params={"page": 2}).text
    assert second.count('href="/conversations/') == 17 and 'id="page-prev"' in second
    red = client.get("/admin", params={"mode": "red-team"}).text
    assert "7 conversations" in red and red.count('href="/conversations/') == 7
    assert client.get("/admin", params={"annotator": "ann"}).text.count("/conversations/") == 7
    both = client.get("/admin", params={"annotator": "root", "status": "open"}).text
    assert "30 conversations" in both
    assert '<option value="open" selected>' in both
    # the filters ride along the page links
    many = client.get("/admin", params={"annotator": "root"}).text
    assert 'href="/admin?annotator=root&amp;page=2#conversations"' in many
    assert "0 conversations" in client.get("/admin", params={"mode": "<b>x</b>"}).text


@pytest.fixture
def strict_server():
    running = serve(Script(models=["real-model"], strict_models=True))
    yield running
    running.stop()


def test_the_backends_page_shows_health_latency_and_the_servers_words(
    make_client, settings, storage, strict_server
):
    from test_api import say, sse, start

    hostile = "<script>alert(1)</script>"
    backends = (
        BackendConfig("good", "openai-chat", base_url=strict_server.base_url, model="real-model"),
        BackendConfig("bad", "openai-chat", base_url=strict_server.base_url, model=hostile),
        BackendConfig("demo-a", "demo", model="sample"),
    )
    client = make_client(replace(settings, backends=backends, pairing="fixed"))
    login(client, storage, "root")
    _, token = annotators.add_annotator(storage, "ann")
    h = {"Authorization": f"Bearer {token}"}
    for _ in range(3):
        t = say(client, h, start(client, h), wait=False)
        sse(client.get(f"/api/v1/turns/{t['id']}/stream", headers=h).text)
    page = client.get("/admin/backends")
    assert page.status_code == 200
    text = page.text
    assert hostile not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    good = text[text.index('data-name="good"') : text.index('data-name="bad"')]
    assert '<span class="badge ok">ok</span>' in good
    assert '<td class="num">3</td>' in good  # three ready responses in the last hour
    bad = text[text.index('data-name="bad"') : text.index('data-name="demo-a"')]
    assert "problem" in bad and "is not served there" in bad
    assert bad.count("does not exist.") == 3  # each failure with the server's own message
    assert "not a server" in text[text.index('data-name="demo-a"') :]


def test_nearest_rank_percentiles():
    from hhrlhf.collect.services.overview import _percentile

    values = list(range(100, 0, -1))  # 1..100, unordered
    assert (_percentile(values, 50), _percentile(values, 95)) == (50, 95)
    assert _percentile([7], 95) == 7 and _percentile([], 50) is None


def test_the_backends_activity_counts_the_last_hour_only(storage):
    from datetime import datetime, timedelta, timezone

    from test_review import make_turn

    from hhrlhf.collect.services.overview import backend_activity

    who, _ = annotators.add_annotator(storage, "ann")
    cid = conversations.create_conversation(storage, who, "helpful", "t").id
    make_turn(storage, who, cid, "q?", "a", "b", ("m1", "m2"))
    activity = backend_activity(storage)
    assert activity["m1"].ready == 1 and activity["m2"].ready == 1
    later = datetime.now(timezone.utc) + timedelta(hours=2)
    assert "m1" not in backend_activity(storage, now=later)


@pytest.mark.browser
def test_an_admin_exports_filters_and_checks_backends_in_the_browser(tmp_path):
    from test_browser import TIMEOUT_MS, _watch, open_chromium, serve_app

    from hhrlhf.collect.config import demo_settings

    with serve_app(tmp_path, demo_settings, name="root") as (base, storage, _, _, _):
        root = annotators.annotator_by_name(storage, "root")
        _, token = annotators.add_annotator(storage, "boss", role="admin")
        for i in range(55):
            conversation(storage, root, [("a", 2)], finish=i % 2 == 0)
        with open_chromium() as browser:
            ctx = browser.new_context(
                accept_downloads=True, viewport={"width": 1280, "height": 800}
            )
            page = ctx.new_page()
            seen = _watch(page)
            page.goto(f"{base}/login?token={token}&next=/admin")
            with page.expect_navigation(timeout=TIMEOUT_MS):
                page.click("#login-submit")
            assert "55 conversations, page 1 of 2" in page.text_content("#conversation-count")
            with page.expect_download(timeout=TIMEOUT_MS) as dl:
                page.click("#export-zip")
            path = dl.value.path()
            with zipfile.ZipFile(path) as z:
                assert "manifest.json" in z.namelist()
            page.select_option("#f-status", "open")
            with page.expect_navigation(timeout=TIMEOUT_MS):
                page.click(".admin-filter button[type=submit]")
            assert "27 conversations" in page.text_content("#conversation-count")
            page.click("#backends-link")
            page.wait_for_selector("#backends", timeout=TIMEOUT_MS)
            assert page.locator("#backends tbody tr[data-name]:not(.disabled)").count() == 2
            assert "not configured any more" in page.text_content('#backends tr[data-name="m1"]')
            assert seen["dialogs"] == [] and seen["errors"] == []
