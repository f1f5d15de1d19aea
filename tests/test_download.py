"""hhrlhf.download and ``hh download``, against a real HTTP server on 127.0.0.1 (no network)."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import random
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from hhrlhf import download as dl
from hhrlhf.cli.download import download_command
from hhrlhf.download import checksum, transfer
from hhrlhf.download.cache import locked
from hhrlhf.errors import (
    ChecksumMismatchError,
    DownloadError,
    HHError,
    OfflineError,
    UnknownSubsetError,
)
from hhrlhf.subsets import SUBSETS, all_files

# --------------------------------------------------------------------------- fixtures


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def payload(seed: int = 0, n: int = 150_000) -> bytes:
    """A gzip file of incompressible bytes (so it stays about ``n`` bytes long)."""
    return gzip.compress(random.Random(seed).randbytes(n), mtime=0)


class FakeUpstream:
    """Serves registered bytes by URL path; each path can be given a queue of misbehaviours."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.plans: dict[str, list[str]] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.lock = threading.Lock()
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_GET(self):
                path = urlsplit(self.path).path
                with upstream.lock:
                    upstream.requests.append((path, dict(self.headers.items())))
                    queue = upstream.plans.get(path) or []
                    plan = queue.pop(0) if queue else "normal"
                    data = upstream.files.get(path)
                if plan in ("404", "401", "403", "500", "503") or data is None:
                    code = int(plan) if plan.isdigit() else 404
                    body = b"nope\n"
                    self.send_response(code)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if plan == "redirect":  # like the Hub sending LFS files to its CDN
                    self.send_response(302)
                    self.send_header("Location", "/cdn" + path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if plan == "html":
                    data = b"<html>sign in</html>\n"
                start = 0
                rng = self.headers.get("Range")
                if rng and plan != "ignore_range":
                    start = int(rng.split("=")[1].split("-")[0])
                if start >= len(data) and start:
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = data[start:]
                if start:
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if plan == "truncate":  # promise the whole body, send 40% of it, hang up
                    self.wfile.write(body[: len(body) * 2 // 5])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def serve(self, spec, data: bytes, *, source="hub", revision=None, plan=()):
        path = urlsplit(dl.file_url(spec, source=source, revision=revision)).path
        self.files[path] = data
        self.plans[path] = list(plan)
        return path

    def hits(self, path: str | None = None) -> list[dict[str, str]]:
        return [h for p, h in self.requests if path is None or p == path]


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A clean environment: every variable the module reads points under tmp_path."""
    for name in (
        "HH_RLHF_CACHE",
        "HH_RLHF_OFFLINE",
        "HF_HUB_OFFLINE",
        "HF_DATASETS_OFFLINE",
        "HF_ENDPOINT",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_TOKEN_PATH",
        "HH_RLHF_GITHUB_RAW",
        "HH_RLHF_GITHUB_MEDIA",
        "HH_RLHF_RETRIES",
        "HH_RLHF_BACKOFF",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HH_RLHF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HH_RLHF_RETRIES", "0")
    monkeypatch.setenv("HH_RLHF_BACKOFF", "0")
    monkeypatch.setenv("HH_RLHF_TIMEOUT", "10")
    return tmp_path


@pytest.fixture
def upstream(env, monkeypatch):
    server = FakeUpstream()
    server.thread.start()
    monkeypatch.setenv("HF_ENDPOINT", server.base + "/hub/")
    monkeypatch.setenv("HH_RLHF_GITHUB_RAW", server.base + "/raw")
    monkeypatch.setenv("HH_RLHF_GITHUB_MEDIA", server.base + "/media")
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def fake(data: bytes | None, subset="harmless-base", split="test", *, known=True):
    """A registry spec whose published size and hash are those of ``data``."""
    spec = SUBSETS[subset].file(split)
    if not known or data is None:
        return dataclasses.replace(spec, sha256=None, size=None)
    return dataclasses.replace(spec, sha256=sha(data), size=len(data))


# --------------------------------------------------------------------------- locations


def test_hub_urls(env, monkeypatch):
    spec = SUBSETS["helpful-base"].file("train")
    assert dl.file_url(spec) == (
        "https://huggingface.co/datasets/Anthropic/hh-rlhf/resolve/main/helpful-base/train.jsonl.gz"
    )
    assert dl.file_url(spec, revision="refs/pr/1").endswith(
        "/resolve/refs%2Fpr%2F1/helpful-base/train.jsonl.gz"
    )
    monkeypatch.setenv("HF_ENDPOINT", "https://hf-mirror.example/")
    assert dl.file_url(spec, revision="abc123") == (
        "https://hf-mirror.example/datasets/Anthropic/hh-rlhf/resolve/abc123/"
        "helpful-base/train.jsonl.gz"
    )


def test_github_urls_raw_for_git_media_for_lfs(env, monkeypatch):
    git_file = SUBSETS["harmless-base"].file("test")
    lfs_file = SUBSETS["helpful-online"].file("test")
    red_team = SUBSETS["red-team-attempts"].file("train")
    assert not git_file.lfs and lfs_file.lfs
    assert dl.file_url(git_file, source="github") == (
        "https://raw.githubusercontent.com/anthropics/hh-rlhf/master/harmless-base/test.jsonl.gz"
    )
    assert dl.file_url(lfs_file, source="github") == (
        "https://media.githubusercontent.com/media/anthropics/hh-rlhf/master/"
        "helpful-online/test.jsonl.gz"
    )
    assert dl.file_url(red_team, source="github", revision="v1").startswith(
        "https://raw.githubusercontent.com/anthropics/hh-rlhf/v1/red-team-attempts/"
    )
    monkeypatch.setenv("HH_RLHF_GITHUB_RAW", "http://127.0.0.1:9/raw/")
    monkeypatch.setenv("HH_RLHF_GITHUB_MEDIA", "http://127.0.0.1:9/media")
    assert dl.file_url(git_file, source="github").startswith("http://127.0.0.1:9/raw/anthropics/")
    assert dl.file_url(lfs_file, source="github", revision="dev").startswith(
        "http://127.0.0.1:9/media/anthropics/hh-rlhf/dev/"
    )
    with pytest.raises(UnknownSubsetError, match="hub, github"):
        dl.file_url(git_file, source="ftp")


def test_cache_dir_precedence(env, monkeypatch):
    assert dl.cache_dir("/explicit") == Path("/explicit")
    assert dl.cache_dir() == env / "cache"
    monkeypatch.delenv("HH_RLHF_CACHE")
    assert dl.cache_dir() == env / "xdg" / "hhrlhf"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert dl.cache_dir() == env / "home" / ".cache" / "hhrlhf"


def test_cached_path_and_revisions(env):
    spec = SUBSETS["helpful-base"].file("test")
    root = env / "cache"
    assert dl.cached_path(spec) == root / "helpful-base" / "test.jsonl.gz"
    for default in (None, "main", "master"):
        assert dl.cached_path(spec, revision=default) == root / "helpful-base" / "test.jsonl.gz"
    assert dl.cached_path(spec, revision="abc", cache_dir=env / "x") == (
        env / "x" / "revisions" / "abc" / "helpful-base" / "test.jsonl.gz"
    )
    weird = dl.cached_path(spec, revision="refs/pr/1")
    assert weird.parent.parent == root / "revisions" / "refs%2Fpr%2F1"
    dots = dl.cached_path(spec, revision="..")
    assert root / "revisions" in dots.parents  # never escapes the cache


def test_is_offline(env, monkeypatch):
    assert dl.is_offline() is False
    assert dl.is_offline(True) is True
    monkeypatch.setenv("HH_RLHF_OFFLINE", "1")
    assert dl.is_offline() is True
    assert dl.is_offline(False) is False
    monkeypatch.setenv("HH_RLHF_OFFLINE", "0")
    assert dl.is_offline() is False
    monkeypatch.setenv("HF_HUB_OFFLINE", "true")
    assert dl.is_offline() is True


def test_hub_token_sources(env, monkeypatch):
    assert dl.hub_token() is None
    (env / "hf-home").mkdir()
    (env / "hf-home" / "token").write_text("hf_home_token\n")
    assert dl.hub_token() == "hf_home_token"
    (env / "tok").write_text("  hf_path_token \n")
    monkeypatch.setenv("HF_TOKEN_PATH", str(env / "tok"))
    assert dl.hub_token() == "hf_path_token"
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", "hf_legacy")
    assert dl.hub_token() == "hf_legacy"
    monkeypatch.setenv("HF_TOKEN", "hf_new")
    assert dl.hub_token() == "hf_new"


def test_sha256_file_and_verify_checksum(tmp_path):
    f = tmp_path / "x.bin"
    data = b"a" * (3 * dl.CHUNK + 17)
    f.write_bytes(data)
    assert dl.sha256_file(f) == sha(data)
    dl.verify_checksum(f, sha(data).upper())
    with pytest.raises(ChecksumMismatchError) as info:
        dl.verify_checksum(f, "0" * 64)
    assert info.value.expected == "0" * 64 and info.value.actual == sha(data)


# --------------------------------------------------------------------------- transfers


def test_happy_path_atomic_and_cached(upstream, monkeypatch):
    data = payload()
    spec = fake(data)
    url_path = upstream.serve(spec, data)
    path = dl.ensure_file(spec)
    assert path == dl.cached_path(spec) and path.read_bytes() == data
    assert not path.with_name(path.name + ".part").exists()
    assert not path.with_name(path.name + ".bad").exists()
    assert len(upstream.hits(url_path)) == 1
    assert dl.checksum_status(spec) == "verified"

    # cached: no request, and no rehash while size and mtime are unchanged
    def boom(_):
        raise AssertionError("rehashed a verified file")

    monkeypatch.setattr(checksum, "sha256_file", boom)
    assert dl.ensure_file(spec) == path
    assert dl.checksum_status(spec) == "verified"
    assert len(upstream.hits(url_path)) == 1


def test_token_goes_to_the_hub_only(upstream, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    data = payload(1, 5000)
    spec = fake(data)
    hub = upstream.serve(spec, data)
    gh = upstream.serve(spec, data, source="github")
    dl.ensure_file(spec, cache_dir=dl.cache_dir() / "a")
    dl.ensure_file(spec, cache_dir=dl.cache_dir() / "b", source="github")
    (hub_headers,) = upstream.hits(hub)
    (gh_headers,) = upstream.hits(gh)
    assert hub_headers.get("Authorization") == "Bearer hf_secret"
    assert "Authorization" not in gh_headers
    assert gh.startswith("/raw/anthropics/hh-rlhf/master/")


def test_redirect_drops_the_token_and_keeps_the_range(upstream, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    data = payload(18)
    spec = fake(data)
    hub = upstream.serve(spec, data, plan=["truncate", "redirect"])
    upstream.files["/cdn" + hub] = data
    with pytest.raises(DownloadError):
        dl.ensure_file(spec)
    assert dl.ensure_file(spec).read_bytes() == data
    first, second = upstream.hits(hub)
    (cdn,) = upstream.hits("/cdn" + hub)
    assert first["Authorization"] == second["Authorization"] == "Bearer hf_secret"
    assert "Authorization" not in cdn
    assert cdn["Range"] == second["Range"] and cdn["Range"].startswith("bytes=")


def test_github_lfs_file_comes_from_media(upstream):
    data = payload(2, 5000)
    spec = fake(data, "helpful-base", "test")
    media = upstream.serve(spec, data, source="github")
    assert media.startswith("/media/anthropics/hh-rlhf/master/helpful-base/")
    assert dl.ensure_file(spec, source="github").read_bytes() == data


def test_truncated_transfer_keeps_part_then_resumes_with_range(upstream):
    data = payload(3)
    spec = fake(data)
    url_path = upstream.serve(spec, data, plan=["truncate"])
    target = dl.cached_path(spec)
    part = target.with_name(target.name + ".part")
    with pytest.raises(DownloadError, match="truncated") as info:
        dl.ensure_file(spec)
    assert url_path in str(info.value)
    assert not target.exists()
    kept = part.stat().st_size
    assert 0 < kept < len(data)
    assert dl.checksum_status(spec) == "partial"

    path = dl.ensure_file(spec)
    assert path.read_bytes() == data and not part.exists()
    first, second = upstream.hits(url_path)
    assert "Range" not in first
    assert second["Range"] == f"bytes={kept}-"
    assert dl.checksum_status(spec) == "verified"


def test_truncated_transfer_retried_within_one_call(upstream, monkeypatch):
    monkeypatch.setenv("HH_RLHF_RETRIES", "2")
    data = payload(4)
    spec = fake(data)
    url_path = upstream.serve(spec, data, plan=["truncate", "truncate"])
    assert dl.ensure_file(spec).read_bytes() == data
    ranges = [h.get("Range") for h in upstream.hits(url_path)]
    assert ranges[0] is None and ranges[1] and ranges[2]
    assert len(ranges) == 3


def test_server_ignoring_range_restarts_from_zero(upstream):
    data = payload(5)
    spec = fake(data)
    url_path = upstream.serve(spec, data, plan=["ignore_range"])
    target = dl.cached_path(spec)
    target.parent.mkdir(parents=True)
    target.with_name(target.name + ".part").write_bytes(b"garbage that is not a prefix")
    assert dl.ensure_file(spec).read_bytes() == data
    (hit,) = upstream.hits(url_path)
    assert hit["Range"] == "bytes=28-"


def test_complete_part_is_finished_without_refetching_everything(upstream):
    data = payload(6, 3000)
    spec = dataclasses.replace(fake(data), size=None)  # size unknown: asks, gets 416
    url_path = upstream.serve(spec, data)
    target = dl.cached_path(spec)
    target.parent.mkdir(parents=True)
    target.with_name(target.name + ".part").write_bytes(data)
    assert dl.ensure_file(spec).read_bytes() == data
    assert len(upstream.hits(url_path)) == 1


def test_wrong_checksum_names_both_hashes_and_quarantines(upstream):
    data = payload(7, 4000)
    published = b"what the registry describes"
    spec = dataclasses.replace(fake(data), sha256=sha(published))
    upstream.serve(spec, data)
    target = dl.cached_path(spec)
    with pytest.raises(ChecksumMismatchError) as info:
        dl.ensure_file(spec)
    message = str(info.value)
    assert sha(published) in message and sha(data) in message
    assert info.value.expected == sha(published) and info.value.actual == sha(data)
    assert not target.exists()
    assert not target.with_name(target.name + ".part").exists()
    assert target.with_name(target.name + ".bad").read_bytes() == data
    assert dl.checksum_status(spec) == "missing"
    # --no-verify accepts it
    assert dl.ensure_file(spec, verify=False).read_bytes() == data
    assert dl.checksum_status(spec) == "mismatch"


def test_size_larger_than_published_is_rejected(upstream):
    data = payload(8, 4000)
    spec = dataclasses.replace(fake(data), size=len(data) - 10)
    upstream.serve(spec, data)
    with pytest.raises(DownloadError, match="expected"):
        dl.ensure_file(spec)
    target = dl.cached_path(spec)
    assert not target.exists() and not target.with_name(target.name + ".part").exists()


@pytest.mark.parametrize(
    ("code", "hint"), [("404", "revision"), ("401", "HF_TOKEN"), ("403", "HF_TOKEN")]
)
def test_http_errors(upstream, code, hint):
    data = payload(9, 1000)
    spec = fake(data)
    url_path = upstream.serve(spec, data, plan=[code])
    with pytest.raises(DownloadError) as info:
        dl.ensure_file(spec, revision=None)
    err = info.value
    assert err.status == int(code)
    assert code in str(err) and url_path in str(err)
    assert hint in err.hint
    assert len(upstream.hits(url_path)) == 1  # client errors are not retried
    assert not dl.cached_path(spec).exists()


def test_404_on_another_revision_names_it(upstream):
    spec = fake(payload(9, 1000))
    with pytest.raises(DownloadError) as info:
        dl.ensure_file(spec, revision="no-such-branch")
    assert info.value.status == 404 and "no-such-branch" in info.value.hint


def test_server_error_is_retried(upstream, monkeypatch):
    data = payload(10, 2000)
    spec = fake(data)
    url_path = upstream.serve(spec, data, plan=["500"])
    with pytest.raises(DownloadError) as info:
        dl.ensure_file(spec)  # HH_RLHF_RETRIES=0
    assert info.value.status == 500
    upstream.plans[url_path] = ["500", "503"]
    monkeypatch.setenv("HH_RLHF_RETRIES", "2")
    assert dl.ensure_file(spec).read_bytes() == data
    assert len(upstream.hits(url_path)) == 4


def test_retries_are_reported_with_progress(upstream, monkeypatch, capsys):
    monkeypatch.setenv("HH_RLHF_RETRIES", "2")
    monkeypatch.setenv("HH_RLHF_BACKOFF", "0")
    data = payload(11, 500)
    spec = fake(data)
    upstream.serve(spec, data, plan=["503"])
    assert dl.ensure_file(spec, progress=True).read_bytes() == data
    err = capsys.readouterr().err
    assert f"{spec.path}: " in err and "retry 1/2" in err


def test_connection_refused_is_a_download_error(env, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(DownloadError, match="connection failed"):
        dl.ensure_file(fake(b"x"))


def test_offline_never_touches_the_network(upstream, monkeypatch):
    data = payload(11, 1000)
    spec = fake(data)
    upstream.serve(spec, data)
    with pytest.raises(OfflineError, match=spec.path):
        dl.ensure_file(spec, offline=True)
    monkeypatch.setenv("HH_RLHF_OFFLINE", "1")
    with pytest.raises(OfflineError):
        dl.download(["harmless-base"])
    assert upstream.requests == []
    # a cached file is fine offline
    path = dl.ensure_file(spec, offline=False)
    assert dl.ensure_file(spec) == path
    assert len(upstream.requests) == 1


def test_trust_on_first_use(upstream):
    data = payload(12)
    spec = fake(None, "harmless-base", "train")  # the registry publishes no hash for it
    url_path = upstream.serve(spec, data)
    path = dl.ensure_file(spec)
    records = json.loads((dl.cache_dir() / "checksums.json").read_text())["files"]
    assert records[spec.path]["sha256"] == sha(data)
    assert records[spec.path]["size"] == len(data)
    assert dl.checksum_status(spec) == "recorded"

    path.write_bytes(payload(13))  # the cached file changes behind our back
    assert dl.checksum_status(spec) == "mismatch"
    with pytest.raises(ChecksumMismatchError) as info:
        dl.ensure_file(spec)
    assert sha(data) in str(info.value) and "checksums.json" in info.value.hint
    assert not path.exists() and path.with_name(path.name + ".bad").exists()

    # upstream now serves other bytes: the record catches it
    upstream.files[url_path] = payload(14)
    with pytest.raises(ChecksumMismatchError):
        dl.ensure_file(spec)
    upstream.files[url_path] = data
    assert dl.ensure_file(spec).read_bytes() == data
    assert dl.checksum_status(spec) == "recorded"


def test_tofu_refuses_to_record_an_html_page(upstream):
    spec = fake(None, "harmless-base", "train")
    upstream.serve(spec, payload(15, 1000), plan=["html"])
    with pytest.raises(DownloadError, match="not a gzip file"):
        dl.ensure_file(spec)
    assert not (dl.cache_dir() / "checksums.json").exists()
    assert not dl.cached_path(spec).exists()


def test_other_revisions_are_cached_apart_and_trusted_on_first_use(upstream):
    data = payload(16, 3000)
    spec = fake(b"the main revision's bytes")  # registry hash describes main only
    url_path = upstream.serve(spec, data, revision="v0")
    path = dl.ensure_file(spec, revision="v0")
    assert "/resolve/v0/" in url_path
    assert path == dl.cache_dir() / "revisions" / "v0" / spec.path
    assert dl.checksum_status(spec, revision="v0") == "recorded"
    assert dl.checksum_status(spec) == "missing"


def test_checksum_status_values(env):
    data = b"\x1f\x8b some bytes"
    known = fake(data)
    unknown = fake(None)
    assert dl.checksum_status(known) == "missing"
    target = dl.cached_path(known)
    target.parent.mkdir(parents=True)
    part = target.with_name(target.name + ".part")
    part.write_bytes(data[:3])
    assert dl.checksum_status(known) == "partial"
    part.unlink()
    target.write_bytes(data)
    assert dl.checksum_status(known) == "verified"
    assert dl.checksum_status(unknown) == "unverified"
    assert dl.checksum_status(dataclasses.replace(known, sha256=sha(b"other"))) == "mismatch"
    assert set(dl.STATUSES) == {
        "missing",
        "partial",
        "verified",
        "mismatch",
        "recorded",
        "unverified",
    }


def test_registry_files_and_download(upstream):
    assert len(dl.registry_files()) == 8
    assert len(dl.registry_files("all")) == 9
    assert [f.path for f in dl.registry_files(["red-team-attempts", "harmless-base"], "test")] == [
        "harmless-base/test.jsonl.gz"
    ]
    with pytest.raises(UnknownSubsetError):
        dl.registry_files("red-team-attempts", ["test"])
    with pytest.raises(UnknownSubsetError):
        dl.registry_files("nope")
    for i, spec in enumerate(all_files()):
        upstream.serve(spec, payload(100 + i, 500))
    paths = dl.download(["helpful-base", "red-team-attempts"], splits=("train",), verify=False)
    assert [p.relative_to(dl.cache_dir()).as_posix() for p in paths] == [
        "helpful-base/train.jsonl.gz",
        "red-team-attempts/red_team_attempts.jsonl.gz",
    ]


def test_progress_goes_to_stderr(upstream, capsys):
    data = payload(17, 3000)
    spec = fake(data)
    upstream.serve(spec, data)
    dl.ensure_file(spec, progress=True)
    out, err = capsys.readouterr()
    assert out == "" and spec.path in err


# --------------------------------------------------------------------------- CLI


@pytest.fixture
def fake_registry(upstream, monkeypatch):
    """Every registry file served with bytes whose hash the (patched) selection publishes."""
    fakes = {}
    for i, spec in enumerate(all_files()):
        data = payload(200 + i, 700)
        fakes[spec.path] = fake(data, spec.subset, spec.split)
        upstream.serve(spec, data)
        upstream.serve(spec, data, source="github")
    real = dl.registry_files
    monkeypatch.setattr(
        dl, "registry_files", lambda *a, **k: [fakes[s.path] for s in real(*a, **k)]
    )
    return fakes


def invoke(*args):
    return CliRunner().invoke(download_command, list(args), catch_exceptions=True)


def test_cli_downloads_everything_by_default(fake_registry, upstream):
    result = invoke()
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 9 and all(Path(line).is_file() for line in lines)
    assert "downloaded: red-team-attempts/red_team_attempts.jsonl.gz (verified)" in result.stderr
    again = invoke("all")
    assert again.exit_code == 0, again.output
    assert again.stdout == result.stdout and "cached: " in again.stderr
    assert len(upstream.requests) == 9


def test_cli_json(fake_registry, upstream, env):
    result = invoke(
        "harmless-base",
        "--split",
        "test",
        "--source",
        "github",
        "--json",
        "--cache-dir",
        str(env / "elsewhere"),
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    spec = fake_registry["harmless-base/test.jsonl.gz"]
    assert row == {
        "subset": "harmless-base",
        "split": "test",
        "path": str(env / "elsewhere" / "harmless-base" / "test.jsonl.gz"),
        "sha256": spec.sha256,
        "status": "verified",
    }
    assert upstream.requests[0][0].startswith("/raw/")


def test_cli_offline_and_errors(fake_registry, upstream):
    result = invoke("helpful-base", "--offline")
    assert result.exit_code == 1
    assert isinstance(result.exception, OfflineError)
    assert upstream.requests == []
    result = invoke("no-such-subset")
    assert result.exit_code == 1 and isinstance(result.exception, UnknownSubsetError)
    result = invoke("default", "--split", "test", "--revision", "missing-rev")
    assert result.exit_code == 1 and isinstance(result.exception, DownloadError)
    assert result.exception.status == 404


def test_cli_through_the_main_group(fake_registry, upstream):
    from hhrlhf.cli import cli  # a CLI that fails to import fails this test

    assert "download" in cli.commands
    runner = CliRunner()
    ok = runner.invoke(cli, ["download", "helpful-online", "--json"])
    assert ok.exit_code == 0, ok.output
    assert [r["status"] for r in json.loads(ok.stdout)] == ["verified", "verified"]
    bad = runner.invoke(cli, ["download", "helpful-online", "--offline", "--cache-dir", "/nope"])
    assert bad.exit_code == 1
    assert "offline mode" in bad.stderr and "hint:" in bad.stderr


# --------------------------------------------------------------------------- silent hosts


@pytest.fixture
def silent_host(env, monkeypatch):
    """A host that accepts connections and never answers them (as a dead proxy does)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        sock.settimeout(0.05)
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            accepted.append(conn)  # held open, never read from or written to

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{sock.getsockname()[1]}/hub/")
    yield accepted
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    sock.close()


def test_silent_host_fails_fast_with_a_timeout(silent_host, monkeypatch):
    monkeypatch.setenv("HH_RLHF_RETRIES", "3")  # timeouts still get one retry only
    started = time.monotonic()
    with pytest.raises(DownloadError, match=r"no answer from 127\.0\.0\.1:\d+ within 0\.3s"):
        dl.ensure_file(fake(b"x"), timeout=0.3)
    assert time.monotonic() - started < 5
    assert len(silent_host) == 2  # the first try and one retry


def test_default_timeout_fails_well_under_a_minute():
    # a silent host costs (1 + TIMEOUT_RETRIES) timeouts plus one backoff
    assert dl.TIMEOUT * (1 + dl.TIMEOUT_RETRIES) + dl.BACKOFF <= 30


def test_cli_timeout_and_lines_off_a_terminal(silent_host, monkeypatch):
    """Off a TTY (CliRunner) hh download still says what it does, at once, then fails."""
    monkeypatch.setenv("HH_RLHF_RETRIES", "3")
    started = time.monotonic()
    result = invoke("helpful-base", "--split", "test", "--timeout", "0.3")
    assert result.exit_code == 1 and isinstance(result.exception, DownloadError)
    assert time.monotonic() - started < 5
    lines = result.stderr.splitlines()
    assert lines[0] == "helpful-base/test.jsonl.gz: connecting to " + transfer.host(
        dl.file_url(SUBSETS["helpful-base"].file("test"))
    )
    assert any("no answer" in line and "retry 1/3" in line for line in lines)
    assert invoke("helpful-base", "--timeout", "0").exit_code == 2


def test_dns_failure_is_not_retried(env, monkeypatch):
    monkeypatch.setenv("HH_RLHF_RETRIES", "3")
    monkeypatch.setenv("HF_ENDPOINT", "http://no-such-host.invalid/")
    calls = []
    real_getaddrinfo = socket.getaddrinfo
    this_thread = threading.get_ident()

    def no_dns(*args, **kwargs):
        # Only lookups made by the download count: a server or client thread that an
        # earlier test left winding down may still resolve 127.0.0.1 meanwhile.
        if threading.get_ident() != this_thread:
            return real_getaddrinfo(*args, **kwargs)
        calls.append(args[0])
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    with pytest.raises(DownloadError, match="cannot resolve host 'no-such-host.invalid'") as info:
        dl.ensure_file(fake(b"x"))
    assert calls == ["no-such-host.invalid"]
    assert "HF_ENDPOINT" in info.value.hint


@pytest.mark.parametrize("code", ["404", "401", "403"])
def test_client_errors_are_not_retried_even_with_retries_left(upstream, monkeypatch, code):
    monkeypatch.setenv("HH_RLHF_RETRIES", "3")
    data = payload(9, 1000)
    spec = fake(data)
    url_path = upstream.serve(spec, data, plan=[code])
    with pytest.raises(DownloadError):
        dl.ensure_file(spec)
    assert len(upstream.hits(url_path)) == 1


# --------------------------------------------------------------------------- planted links


def test_planted_symlink_at_part_is_refused_not_written_through(upstream, tmp_path):
    data = payload(21, 3000)
    spec = fake(data)
    upstream.serve(spec, data)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    part = dl.cached_path(spec).with_name(dl.cached_path(spec).name + ".part")
    part.parent.mkdir(parents=True)
    part.symlink_to(victim)
    with pytest.raises(DownloadError, match="is a symbolic link; refusing") as info:
        dl.ensure_file(spec)
    assert victim.read_text() == "precious\n"
    assert str(part) in info.value.hint
    part.unlink()  # the fix the hint names
    assert dl.ensure_file(spec).read_bytes() == data


def test_planted_symlink_at_lock_is_refused(upstream, tmp_path):
    data = payload(22, 3000)
    spec = fake(data)
    upstream.serve(spec, data)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    lock = dl.cached_path(spec).with_name(dl.cached_path(spec).name + ".lock")
    lock.parent.mkdir(parents=True)
    lock.symlink_to(victim)
    with pytest.raises(HHError, match="cannot open the lock file"):
        dl.ensure_file(spec)
    assert victim.read_text() == "precious\n"


def test_resume_still_appends_to_a_real_part(upstream):
    data = payload(23, 5000)
    spec = fake(data)
    path = upstream.serve(spec, data)
    part = dl.cached_path(spec).with_name(dl.cached_path(spec).name + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:1234])
    assert dl.ensure_file(spec).read_bytes() == data
    assert upstream.hits(path)[-1]["Range"] == "bytes=1234-"


def test_unwritable_cache_is_one_error_before_any_transfer(upstream, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    data = payload(24, 1000)
    spec = fake(data)
    upstream.serve(spec, data)
    with pytest.raises(HHError, match=f"cache directory: {blocker} is a file, not a folder"):
        dl.ensure_file(spec, cache_dir=blocker / "cache")
    assert upstream.requests == []
    result = invoke("harmless-base", "--split", "test", "--cache-dir", "/proc/hh-no-cache")
    assert result.exit_code == 1 and isinstance(result.exception, HHError)
    assert "cannot write in /proc" in str(result.exception)


def _locks(root: Path) -> list[Path]:
    return sorted(root.rglob("*.lock"))


def test_no_lock_file_is_left_after_a_failed_or_a_finished_download(upstream):
    data = payload(31, 2000)
    spec = fake(data)
    upstream.serve(spec, data, plan=["404"])
    root = dl.cached_path(spec).parent.parent
    with pytest.raises(DownloadError):
        dl.ensure_file(spec, revision=None)
    assert _locks(root) == []
    upstream.serve(spec, data)
    assert dl.ensure_file(spec).read_bytes() == data
    assert _locks(root) == []


def test_a_lock_removed_by_its_holder_is_not_shared(tmp_path):
    """Two processes never hold the lock at once, though the holder removes the file: a
    waiter that locked the removed file locks the new one instead."""
    import multiprocessing

    lock = tmp_path / "x.lock"
    log = tmp_path / "log"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_hold, args=(lock, log, i)) for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    events = log.read_text().split()
    assert len(events) == 8
    # enter and leave strictly alternate: no two holders overlap
    assert all(
        events[k].startswith("in") and events[k + 1].startswith("out") for k in range(0, 8, 2)
    )
    assert not lock.exists()


def _hold(lock: Path, log: Path, i: int) -> None:
    import time

    with locked(lock):
        with open(log, "a") as f:
            f.write(f"in{i}\n")
        time.sleep(0.05)
        with open(log, "a") as f:
            f.write(f"out{i}\n")


def test_cli_offline_lists_the_status_of_every_file_then_fails(fake_registry, upstream, env):
    assert invoke("harmless-base", "--split", "test").exit_code == 0  # one file in the cache
    upstream.requests.clear()
    result = invoke("all", "--offline")
    assert result.exit_code == 1 and upstream.requests == []
    err = result.stderr.splitlines()
    assert len([x for x in err if x.startswith(("cached: ", "not cached: "))]) == 9
    assert "cached: harmless-base/test.jsonl.gz (verified)" in err
    assert "not cached: red-team-attempts/red_team_attempts.jsonl.gz (missing)" in err
    assert result.stdout.splitlines() == [str(env / "cache" / "harmless-base" / "test.jsonl.gz")]
    assert str(result.exception) == (
        "offline mode: 8 of 9 files are not in the cache and will not be downloaded"
    )
    rows = json.loads(invoke("all", "--offline", "--json").stdout)
    assert [r["status"] for r in rows].count("missing") == 8 and len(rows) == 9
