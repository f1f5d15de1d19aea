"""`hh serve` and `hh collect`: annotators, the export, errors, and a real server on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from logins import login_form
from serving import wait_until_serving

from hhrlhf.cli import cli
from hhrlhf.collect.serve.workers import free_port

SRC = str(Path(__file__).resolve().parents[2] / "src")


def run(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_annotator_add_list_disable(db_url):
    r = run("collect", "annotator", "add", "alice", "--db", db_url)
    assert r.exit_code == 0, r.output
    token = r.stdout.strip().splitlines()[-1]
    assert len(token) >= 43 and " " not in token
    r = run("collect", "annotator", "add", "root", "--role", "admin", "--db", db_url)
    assert r.exit_code == 0
    r = run("collect", "annotator", "list", "--db", db_url, "--json")
    import orjson

    rows = orjson.loads(r.stdout)["annotators"]
    assert [(a["name"], a["role"], a["disabled"]) for a in rows] == [
        ("alice", "annotator", False),
        ("root", "admin", False),
    ]
    assert token not in r.stdout
    r = run("collect", "annotator", "disable", "alice", "--db", db_url)
    assert r.exit_code == 0 and "disabled" in r.stdout
    r = run("collect", "annotator", "list", "--db", db_url)
    assert "alice" in r.stdout and "True" in r.stdout
    r = run("collect", "annotator", "add", "alice", "--db", db_url)
    assert r.exit_code == 1 and r.stderr.strip() == "error: annotator 'alice' already exists"


def test_db_defaults_to_the_environment(tmp_path):
    url = f"sqlite:///{tmp_path / 'env.db'}"
    r = run("collect", "annotator", "add", "alice", env={"HH_COLLECT_DB": url})
    assert r.exit_code == 0 and (tmp_path / "env.db").exists()


def test_export_command(db_url, tmp_path, storage):
    from test_export import build

    build(storage)
    out = tmp_path / "out"
    r = run("collect", "export", "--db", db_url, "--out", str(out), "--test-fraction", "0.5")
    assert r.exit_code == 0, r.output
    assert "helpful-base: train 3 rows, test 1 rows" in r.stdout
    assert "weak 1" in r.stdout and "unfinished 1" in r.stdout
    r = run("collect", "export", "--db", db_url, "--out", str(out))
    assert r.exit_code == 1 and "--force" in r.stderr and "Traceback" not in r.output
    r = run("collect", "export", "--db", db_url, "--out", str(out), "--force", "--json")
    assert r.exit_code == 0 and '"left_out"' in r.stdout
    # an --out with a trailing slash (as a shell completes it) gives no double slash
    r = run("collect", "export", "--db", db_url, "--out", f"{out}/", "--force")
    assert r.exit_code == 0, r.output
    assert f"{out}/helpful-base: train" in r.stdout and f"(see {out}/manifest.json)" in r.stdout
    assert "//" not in r.stdout
    # an empty split gets no file, and the summary says so rather than a bare zero
    r = run(
        "collect", "export", "--db", db_url, "--out", str(out), "--force", "--test-fraction", "0"
    )
    assert r.exit_code == 0, r.output
    assert "helpful-base: train 4 rows, test 0 rows (no file)" in r.stdout


def test_export_errors_are_one_line(db_url, tmp_path, storage):
    (tmp_path / "file").write_text("x")
    r = run("collect", "export", "--db", db_url, "--out", str(tmp_path / "file" / "sub"))
    assert r.exit_code == 1
    assert r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
    r = run(
        "collect",
        "export",
        "--db",
        f"sqlite:///{tmp_path / 'new.db'}",
        "--out",
        str(tmp_path / "o"),
    )
    assert r.exit_code == 1 and "hh serve" in r.stderr
    r = run("collect", "export", "--db", db_url, "--out", str(tmp_path / "o"), "--subset", "nope")
    assert r.exit_code == 1 and "preference subset" in r.stderr


@pytest.mark.parametrize(
    "command",
    [["collect", "annotator", "list"], ["collect", "export", "--out", "OUT"], ["serve", "--demo"]],
)
def test_a_database_that_cannot_be_opened_is_one_line_without_its_password(
    command, postgres_server, tmp_path
):
    """No server on the port, a database that is not there, a port that is not a number:
    one ``error:`` line naming the URL with its password hidden, and exit 1 (no traceback:
    ``catch_exceptions=False`` would raise it here)."""
    nothing_there = f"postgresql+psycopg://hh:s3cret-pw@127.0.0.1:{free_port('127.0.0.1')}/db"
    missing = (
        f"postgresql+psycopg://{postgres_server.role}:s3cret-pw@/no_such_database"
        f"?host={postgres_server.root}"
    )
    bad_port = "postgresql+psycopg://hh:s3cret-pw@localhost:port/db"
    for url, problem in (
        (nothing_there, "Connection refused"),
        (missing, "does not exist"),
        (bad_port, "not a database URL"),
    ):
        args = [str(tmp_path / "out") if x == "OUT" else x for x in command]
        r = run(*args, "--db", url)
        assert r.exit_code == 1, r.output
        [line] = r.stderr.strip().splitlines()
        assert line.startswith("error: --db ") and problem in line, line
        assert "s3cret-pw" not in r.output and ":***@" in line


def test_an_unmigrated_database_is_named_without_its_password(postgres_url):
    """A database at no schema yet: the message names it (password hidden) and the fix."""
    user, rest = postgres_url.split("://", 1)[1].split("@", 1)
    with_pw = f"postgresql+psycopg://{user}:s3cret-pw@{rest}"  # the test server trusts it
    r = run("collect", "annotator", "list", "--db", with_pw)
    assert r.exit_code == 1
    assert "s3cret-pw" not in r.output and ":***@" in r.stderr and "hh serve" in r.stderr


def test_shown_urls_hide_the_password():
    from hhrlhf.collect.db.engine import shown_url

    assert shown_url("postgresql+psycopg://u:p%40ss@h:5432/db?x=1") == (
        "postgresql+psycopg://u:***@h:5432/db?x=1"
    )
    assert (
        shown_url("postgresql+psycopg://u@/db?host=/run") == "postgresql+psycopg://u@/db?host=/run"
    )
    assert shown_url("sqlite:///a/b.db") == "sqlite:///a/b.db"
    assert shown_url("weird://u:pw@h:x/db") == "weird://u:***@h:x/db"  # not a URL it reads
    assert shown_url("postgresql+psycopg://u:pw@/db?host=/run") == (
        "postgresql+psycopg://u:***@/db?host=/run"  # the rest as typed
    )


def test_serve_needs_config_or_demo():
    r = CliRunner().invoke(cli, ["serve"])
    assert r.exit_code == 2 and "--config FILE or --demo" in r.output


def test_serve_stops_waiting_for_its_app_once_the_server_has_returned(tmp_path, monkeypatch):
    # the thread that prints the login line when the app answers must not poll a server
    # that is gone (it did, forever, in every in-process serve)
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: None)
    before = {t for t in threading.enumerate() if t.name == "hh-serve-ready"}
    r = CliRunner().invoke(cli, ["serve", "--demo", "--db", f"sqlite:///{tmp_path / 'x.db'}"])
    assert r.exit_code == 0, r.output
    started = [t for t in threading.enumerate() if t.name == "hh-serve-ready" and t not in before]
    for thread in started:
        thread.join(timeout=5)
    assert not [t for t in started if t.is_alive()]


def test_bad_config_is_one_line(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[collect]\nstrength_points = 4\n[[backend]]\nname = "x"\nkind = "magic"\n')
    r = run("serve", "--config", str(cfg), "--db", f"sqlite:///{tmp_path / 'x.db'}")
    assert r.exit_code == 1 and "kind 'magic'" in r.stderr


def test_missing_web_extra_names_the_install():
    code = (
        "import sys; sys.modules['fastapi'] = None\n"
        "from hhrlhf.cli import main\n"
        "main(['collect', 'annotator', 'list'])\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert p.returncode == 1
    assert "pip install 'hhrlhf[web]'" in p.stderr and "Traceback" not in p.stderr


def test_hh_help_and_import_do_not_load_the_web_stack():
    code = (
        "import sys, hhrlhf\n"
        "from hhrlhf.cli import cli\n"
        "from click.testing import CliRunner\n"
        "assert CliRunner().invoke(cli, ['--help']).exit_code == 0\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('fastapi', 'sqlalchemy', 'alembic', 'uvicorn', 'openai', 'jinja2')))\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def _serve_demo(tmp_path, port: int) -> tuple[subprocess.Popen, str]:
    """``hh serve --demo --port PORT`` on a fresh SQLite file; (the process, its --db)."""
    db = f"sqlite:///{tmp_path / 'serve.db'}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "hhrlhf", "serve", "--demo", "--port", str(port), "--db", db],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": SRC},
        cwd=tmp_path,
    )
    return proc, db


def test_serve_demo_prints_a_login_url_that_works(tmp_path):
    port = free_port("127.0.0.1")
    proc, db = _serve_demo(tmp_path, port)
    try:
        login = proc.stdout.readline().strip()
        assert login.startswith(f"log in: http://127.0.0.1:{port}/login?token="), login
        url = login.split(" ", 2)[2]
        wait_until_serving(proc, f"http://127.0.0.1:{port}", timeout=30, log=proc.stderr.read)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as c:
            r = c.get(url.replace(f"http://127.0.0.1:{port}", ""))
            assert r.status_code == 200 and "hh_session" not in r.cookies  # a page, no session
            assert "Log in as demo" in r.text
            token = url.split("token=", 1)[1]
            r = c.post("/login", data={"token": token, "form": login_form(r.text)})
            assert r.status_code == 303 and "hh_session" in r.cookies
            me = c.get("/api/v1/me").json()
            assert me["name"] == "demo" and me["role"] == "admin"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    # a second start reuses the demo admin (a new token) and the migrated database
    r = run("collect", "annotator", "list", "--db", db, "--json")
    assert r.exit_code == 0 and r.stdout.count('"name"') == 1


def test_serve_on_port_0_prints_the_port_it_serves(tmp_path):
    proc, _ = _serve_demo(tmp_path, 0)
    try:
        login = proc.stdout.readline().strip()
        served = proc.stdout.readline().strip()
        port = int(login.split("http://127.0.0.1:", 1)[1].split("/", 1)[0])
        assert port > 0 and served == f"serving on http://127.0.0.1:{port}/ (Ctrl+C to stop)"
        assert httpx.get(f"http://127.0.0.1:{port}/api/v1/health").status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.parametrize(
    "subcommand", [["collect", "--help"], ["serve", "--help"], ["collect", "export", "--help"]]
)
def test_help_has_examples(subcommand):
    r = CliRunner().invoke(cli, subcommand)
    assert r.exit_code == 0 and "hh " in r.output


def test_a_database_failure_during_a_command_is_one_line(db_url, monkeypatch):
    """The database failing after it opened (its server gone mid-command): one ``error:``
    line in the driver's words and exit 1, no traceback (``catch_exceptions=False``)."""
    from sqlalchemy.exc import OperationalError

    from hhrlhf.collect.services import annotators

    def gone(*_args, **_kwargs):
        why = Exception("server closed the connection unexpectedly\n\tmore detail")
        raise OperationalError("SELECT annotators.id FROM annotators", {}, why)

    monkeypatch.setattr(annotators, "list_annotators", gone)
    r = run("collect", "annotator", "list", "--db", db_url)
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines() == [
        "error: the database failed: server closed the connection unexpectedly; "
        "the command stopped there"
    ]


def test_the_cli_cannot_demote_or_disable_the_last_admin(db_url):
    """The service keeps an enabled admin whoever asks: the CLI follows the web's rule."""
    assert (
        run("collect", "annotator", "add", "root", "--role", "admin", "--db", db_url).exit_code == 0
    )
    assert run("collect", "annotator", "add", "alice", "--db", db_url).exit_code == 0
    for args in (("disable", "root"), ("set", "root", "--role", "annotator")):
        r = run("collect", "annotator", *args, "--db", db_url)
        assert r.exit_code == 1, r.output
        assert r.stderr.startswith("error: 'root' is the last admin: make another annotator")
        assert "Traceback" not in r.output
    import orjson

    r = run("collect", "annotator", "list", "--db", db_url, "--json")
    rows = {a["name"]: a for a in orjson.loads(r.stdout)["annotators"]}
    assert (rows["root"]["role"], rows["root"]["disabled"]) == ("admin", False)
    # with a second admin, either may go; disabling a plain annotator was never in question
    assert (
        run("collect", "annotator", "set", "alice", "--role", "admin", "--db", db_url).exit_code
        == 0
    )
    assert run("collect", "annotator", "disable", "root", "--db", db_url).exit_code == 0
    r = run("collect", "annotator", "disable", "alice", "--db", db_url)
    assert r.exit_code == 1 and "'alice' is the last admin" in r.stderr
    r = run("collect", "annotator", "disable", "root", "--enable", "--db", db_url)
    assert r.exit_code == 0 and "root: enabled" in r.stdout


def test_serve_uses_the_configs_database_unless_db_or_its_variable_says_otherwise(
    tmp_path, monkeypatch
):
    """The config's ``[collect] db`` is the database ``hh serve`` opens; ``--db`` and
    ``$HH_COLLECT_DB`` win over it (it was never read: every start opened hh-collect.db)."""
    from hhrlhf.collect.serve import bootstrap

    seen = []
    monkeypatch.setattr(bootstrap, "serve", lambda options, host, port: seen.append(options.db_url))
    monkeypatch.delenv("HH_COLLECT_DB", raising=False)
    cfg = tmp_path / "c.toml"
    in_file = f"sqlite:///{tmp_path / 'from-file.db'}"
    cfg.write_text(
        f'[collect]\ndb = "{in_file}"\n[[backend]]\nname = "d"\nkind = "demo"\n', encoding="utf-8"
    )
    assert CliRunner().invoke(cli, ["serve", "--config", str(cfg)]).exit_code == 0
    given = f"sqlite:///{tmp_path / 'given.db'}"
    assert CliRunner().invoke(cli, ["serve", "--config", str(cfg), "--db", given]).exit_code == 0
    monkeypatch.setenv("HH_COLLECT_DB", f"sqlite:///{tmp_path / 'env.db'}")
    assert CliRunner().invoke(cli, ["serve", "--config", str(cfg)]).exit_code == 0
    assert seen == [in_file, given, f"sqlite:///{tmp_path / 'env.db'}"]
