"""Fixtures of the collection tests: a migrated database, the app in process, a loopback model server."""

from __future__ import annotations

import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sqlalchemy")
pytest.importorskip("alembic")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from contract import checked_client  # noqa: E402

from hhrlhf.collect.config import demo_settings  # noqa: E402
from hhrlhf.collect.db import Storage  # noqa: E402
from hhrlhf.collect.services import annotators  # noqa: E402

_REPORT = pytest.StashKey[list]()


@pytest.fixture
def report(request):
    """``report(line)``: a measurement printed at the end of the run (the load tests' latencies)."""
    return request.config.stash.setdefault(_REPORT, []).append


def pytest_terminal_summary(terminalreporter, config):
    lines = config.stash.get(_REPORT, [])
    if lines:
        terminalreporter.section("collection load figures")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture(params=["sqlite", "postgres"])
def empty_db_url(request, tmp_path):
    """An empty database, on SQLite and on PostgreSQL (a throwaway server): migration tests."""
    if request.param == "postgres":
        return request.getfixturevalue("postgres_url")
    return f"sqlite:///{tmp_path / 'collect.db'}"


@pytest.fixture(scope="session")
def _migrated_sqlite(tmp_path_factory):
    path = tmp_path_factory.mktemp("template") / "migrated.db"
    st = Storage(f"sqlite:///{path}")
    st.upgrade()
    st.dispose()  # the last connection's close checkpoints the WAL into the file
    return path


@pytest.fixture(scope="session")
def _migrated_postgres(postgres_server):
    url = postgres_server.new_database("template")
    st = Storage(url)
    st.upgrade()
    st.dispose()
    from sqlalchemy.engine import make_url

    return make_url(url).database


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path):
    """A migrated database of its own for every test, on SQLite and on PostgreSQL: a copy of one
    migrated at the start of the session (migrating each one costs more than the test)."""
    if request.param == "postgres":
        server = request.getfixturevalue("postgres_server")
        return server.new_database(template=request.getfixturevalue("_migrated_postgres"))
    path = tmp_path / "collect.db"
    shutil.copy(request.getfixturevalue("_migrated_sqlite"), path)
    return f"sqlite:///{path}"


@pytest.fixture
def sqlite_only(db_url):
    """For tests of SQLite's own settings (PRAGMAs, file permissions)."""
    if not db_url.startswith("sqlite"):
        pytest.skip("SQLite-specific")


@pytest.fixture
def storage(db_url):
    st = Storage(db_url)
    st.upgrade()
    yield st
    st.dispose()


@pytest.fixture
def settings(db_url):
    return replace(demo_settings(db_url), seed=7)


@pytest.fixture
def make_client(storage):
    """``make_client(settings) -> TestClient`` over the shared storage (closed at the end)."""
    from fastapi.testclient import TestClient

    from hhrlhf.collect.web.app import create_app

    clients = []

    def make(settings):
        client = TestClient(create_app(settings, storage=storage), base_url="http://testserver")
        checked_client(client)  # every JSON answer is held to its documented model
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for c in clients:
        c.__exit__(None, None, None)


@pytest.fixture
def client(make_client, settings):
    return make_client(settings)


@pytest.fixture
def alice(storage):
    who, token = annotators.add_annotator(storage, "alice")
    return who, {"Authorization": f"Bearer {token}"}, token


@pytest.fixture
def bob(storage):
    who, token = annotators.add_annotator(storage, "bob")
    return who, {"Authorization": f"Bearer {token}"}, token


@pytest.fixture
def admin(storage):
    who, token = annotators.add_annotator(storage, "root", role="admin")
    return who, {"Authorization": f"Bearer {token}"}, token


@pytest.fixture
def model_server():
    from openai_server import serve

    running = serve()
    yield running
    running.stop()
