"""``hh collect backend``: pause, resume, weight and list over the config's backends, each
change logged as the command line's (``cli (user@host)``); bad names and weights refused in
one line."""

from __future__ import annotations

import getpass
import socket

import orjson
from click.testing import CliRunner

from hhrlhf.cli import cli
from hhrlhf.collect.services import backend_live

CONFIG = """\
[collect]
backend_refresh_seconds = 0.5

[[backend]]
name = "local-8b"
kind = "demo"
weight = 2

[[backend]]
name = "other"
kind = "demo"
"""


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _config(tmp_path):
    path = tmp_path / "collect.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def test_pause_weight_resume_and_list(db_url, storage, tmp_path):
    config = _config(tmp_path)
    where = ("--config", config, "--db", db_url)
    r = run("collect", "backend", "pause", "local-8b", *where)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(
        "local-8b is paused (on every worker within 0.5 s; turns already drawn finish)"
    )
    r = run("collect", "backend", "pause", "local-8b", *where)
    assert r.exit_code == 0 and "was paused already: nothing changed" in r.stdout
    assert run("collect", "backend", "weight", "local-8b", "0.5", *where).exit_code == 0
    assert run("collect", "backend", "resume", "local-8b", *where).exit_code == 0
    r = run("collect", "backend", "list", *where, "--json")
    assert r.exit_code == 0, r.output
    got = orjson.loads(r.stdout)
    author = f"cli ({getpass.getuser()}@{socket.gethostname()})"
    assert [(b["name"], b["paused"], b["weight"], b["config_weight"]) for b in got["backends"]] == [
        ("local-8b", False, 0.5, 2.0),
        ("other", False, 1.0, 1.0),
    ]
    assert [(e["action"], e["value"], e["previous"], e["by"]) for e in got["events"]] == [
        ("pause", None, None, author),
        ("weight", 0.5, 2.0, author),
        ("resume", None, None, author),
    ]
    r = run("collect", "backend", "list", *where)
    assert "local-8b" in r.stdout and "local-8b weight 2 -> 0.5 at " in r.stdout
    # what the command stored is what the service reads
    assert [e.by for e in backend_live.backend_events(storage)] == [author] * 3


def test_bad_names_and_weights_are_refused_in_one_line(db_url, tmp_path):
    config = _config(tmp_path)
    where = ("--config", config, "--db", db_url)
    r = run("collect", "backend", "pause", "local-9b", *where)
    assert r.exit_code == 2
    assert "unknown backend 'local-9b'; the configured backends: local-8b, other" in r.stderr
    for bad in ("0", "-1", "inf", "nan", "many"):
        r = run("collect", "backend", "weight", *where, "--", "other", bad)
        assert r.exit_code == 2, bad
        assert "Invalid value for 'W'" in r.stderr and "Traceback" not in r.stderr
        if bad == "-1":
            assert "weight must be a finite number above 0, not -1.0" in r.stderr
    assert run("collect", "backend", "pause", "other", *where).exit_code == 0
    r = run("collect", "backend", "pause", "local-8b", *where)
    assert r.exit_code == 1
    assert r.stderr.strip() == (
        "error: backend 'local-8b' cannot be paused: new conversations would have no "
        "backend left to draw (resume another one first)"
    )
    r = run("collect", "backend", "list", "--db", db_url)
    assert r.exit_code == 2 and "--config" in r.stderr
    r = run("collect", "backend", "list", "--config", tmp_path / "none.toml", "--db", db_url)
    assert r.exit_code == 1 and r.stderr.startswith("error: ") and "none.toml" in r.stderr


def test_the_leaderboard_says_when_weights_changed(db_url, storage):
    from test_backend_live import _log, _picks_around_now

    _picks_around_now(storage)
    r = run("collect", "leaderboard", "--db", db_url, "--resamples", "20")
    assert r.exit_code == 0 and "weights changed" not in r.stdout
    _log(storage, "m1", "weight", 0.5, -0.5)
    r = run("collect", "leaderboard", "--db", db_url, "--resamples", "20")
    assert r.exit_code == 0, r.output
    [line] = [x for x in r.stdout.splitlines() if x.startswith("weights changed")]
    assert line.startswith(
        "weights changed during the collection (the pair mix with them): m1 weight 0.5 at 20"
    )
    assert line.endswith(" by alice")
    r = run("collect", "leaderboard", "--db", db_url, "--resamples", "20", "--json")
    assert [c["value"] for c in orjson.loads(r.stdout)["weight_changes"]] == [0.5]
