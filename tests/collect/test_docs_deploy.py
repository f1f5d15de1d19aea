"""docs/deploy.md cannot go stale: its configs load, its options and numbers are the code's,
and its backup commands (SQLite ``.backup`` through Python, ``pg_dump``/``pg_restore``) work."""

from __future__ import annotations

import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from hhrlhf.collect import config  # noqa: E402
from hhrlhf.collect.db import Storage, engine  # noqa: E402
from hhrlhf.collect.services import annotators, choices, conversations, leases, transcripts

DOC = Path(__file__).resolve().parents[2] / "docs" / "deploy.md"
TEXT = DOC.read_text(encoding="utf-8")


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", TEXT, flags=re.S)


def test_every_toml_example_loads(tmp_path):
    blocks = _blocks("toml")
    assert len(blocks) >= 2
    for i, block in enumerate(blocks):
        path = tmp_path / f"example{i}.toml"
        path.write_text(block, encoding="utf-8")
        settings = config.load_config(path, db_url="sqlite:///x.db")
        assert settings.backends


def test_named_config_keys_exist():
    keys = set(config._COLLECT_KEYS) | set(config._BACKEND_KEYS)
    # the database's own names
    named = set(re.findall(r"`([a-z]+(?:_[a-z]+)+)`", TEXT)) - {"lease_owner", "lease_until"}
    named -= {"rate_counts"}
    # PostgreSQL's own settings and programs
    named -= {"max_connections", "superuser_reserved_connections", "pg_dump", "pg_restore"}
    named -= {"idle_session_timeout", "pg_terminate_backend"}
    # nginx's own settings
    named -= {"client_header_timeout", "client_body_timeout", "limit_conn"}
    named -= {"proxy_request_buffering"}
    # PgBouncer's own settings, psycopg's URL parameter
    named -= {"max_prepared_statements", "prepare_threshold"}
    assert {"lease_seconds", "rate_login_per_minute", "max_body_bytes", "api_key_env"} <= named
    assert named <= keys, named - keys


def test_named_command_options_exist():
    from hhrlhf.cli import cli

    serve = cli.commands["serve"]
    export = cli.commands["collect"].commands["export"]
    for cmd, line_re in ((serve, r"hh serve ([^\n`]*)"), (export, r"hh collect export ([^\n`]*)")):
        opts = {o for p in cmd.params for o in p.opts}
        lines = re.findall(line_re, TEXT)
        assert lines
        for line in lines:
            for word in re.findall(r"(--[a-z-]+)", line):
                assert word in opts, f"{cmd.name} has no option {word}"


def test_the_numbers_are_the_codes():
    from hhrlhf.collect.web import stream

    lone = engine.POOL_SIZE + engine.MAX_OVERFLOW
    assert (
        f"take up to {lone} while they run ({engine.POOL_SIZE} kept, {engine.MAX_OVERFLOW} more"
        in TEXT
    )
    assert config.Settings.db_connections == engine.DB_CONNECTIONS
    assert f"(default {engine.DB_CONNECTIONS})**" in TEXT
    assert f"fits two hosts at the default ({2 * engine.DB_CONNECTIONS})" in TEXT
    two = engine.worker_connections(engine.DB_CONNECTIONS, 2)
    assert f"up to {2 * two} ({two} per worker;" in TEXT
    loop = engine.loop_share(two)  # the event loop's connections, then the threads'
    assert f"in threads ({two} per worker: {loop} and {two - loop})" in TEXT
    assert f"every {stream.KEEPALIVE_SECONDS:g} s" in TEXT
    assert f"`max_body_bytes` ({config.Settings.max_body_bytes // 1024} KiB)" in TEXT
    url = "postgresql+psycopg://u@/db?host=/nowhere"
    pytest.importorskip("psycopg")
    assert f"waits up to {engine.make_engine(url).pool.timeout():g} s" in TEXT


def _seed(url: str) -> dict:
    st = Storage(url)
    st.upgrade()
    who, _ = annotators.add_annotator(st, "alice")
    cid = conversations.create_conversation(st, who, "helpful", "task").id
    tid = conversations.create_turn(st, who, cid, "hello", ("demo-a", "demo-b")).id
    leases.acquire_lease(st, tid, "w", 60)
    leases.finish_generation(
        st, tid, "w", {s: {"text": f"answer {s}", "raw_text": s} for s in "ab"}
    )
    choices.record_choice(st, who, tid, pick="a", strength=3, strength_points=4)
    counts = transcripts.counts(st)
    st.dispose()
    return counts


def test_the_sqlite_backup_command_makes_a_usable_copy(tmp_path):
    (command,) = [c for c in re.findall(r"^python -c (.*)$", TEXT, flags=re.M)]
    counts = _seed(f"sqlite:///{tmp_path / 'hh-collect.db'}")
    p = subprocess.run([sys.executable, "-c", shlex.split(command)[0]], cwd=tmp_path)
    assert p.returncode == 0
    backup = tmp_path / "hh-collect-backup.db"
    with sqlite3.connect(backup) as c:
        assert c.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    copy = Storage(f"sqlite:///{backup}")
    try:
        copy.check_current()
        assert transcripts.counts(copy) == counts and counts["comparisons"] == 1
    finally:
        copy.dispose()


def test_the_pg_dump_and_restore_commands_make_a_usable_copy(postgres_server, tmp_path):
    url = postgres_server.new_database()
    counts = _seed(url)
    libpq = lambda u: u.replace("postgresql+psycopg://", "postgresql://")  # noqa: E731
    dump_line = re.search(r"^pg_dump (.*)$", TEXT, flags=re.M).group(1)
    restore_line = re.search(r"^pg_restore (.*)$", TEXT, flags=re.M).group(1)
    dump_opts = [w for w in shlex.split(dump_line) if w.startswith("--format")]
    restore_opts = [w for w in shlex.split(restore_line) if w == "--no-owner"]
    assert dump_opts == ["--format=custom"] and restore_opts == ["--no-owner"]
    bindir = postgres_server.bindir
    dump = tmp_path / "hh-collect.dump"
    subprocess.run([str(bindir / "pg_dump"), *dump_opts, f"--file={dump}", libpq(url)], check=True)
    target = postgres_server.new_database("restored")
    subprocess.run(
        [str(bindir / "pg_restore"), *restore_opts, f"--dbname={libpq(target)}", str(dump)],
        check=True,
    )
    copy = Storage(target)
    try:
        copy.check_current()
        assert transcripts.counts(copy) == counts and counts["comparisons"] == 1
    finally:
        copy.dispose()
