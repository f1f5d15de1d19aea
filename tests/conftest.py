"""Fixtures shared by the whole test tree."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hhrlhf.dataset import SAMPLE_DIR

# helper modules that live beside the tests (pgserver) import as top-level modules
sys.path.insert(0, str(Path(__file__).parent))

from parts import need  # noqa: E402
from pgbouncer import PgBouncer  # noqa: E402
from pgserver import PostgresServer  # noqa: E402


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    """The bundled sample (tests/test_synth.py proves it is what the generator writes)."""
    return SAMPLE_DIR


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server for the whole session (skips where the binaries are
    absent, fails there with HH_REQUIRE_POSTGRES set: tests/parts.py)."""
    pytest.importorskip(
        "psycopg", reason="psycopg is not installed (pip install 'hhrlhf[postgres]')"
    )
    need("postgresql")
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A SQLAlchemy URL of a new, empty PostgreSQL database for one test."""
    return postgres_server.new_database()


@pytest.fixture
def start_pgbouncer(request):
    """``start_pgbouncer(pool_size) -> PgBouncer`` in front of the session's server, stopped at
    the end of the test (skips without pgbouncer, fails there with HH_REQUIRE_POSTGRES set)."""
    need("pgbouncer")  # before the server starts: a skip costs nothing
    postgres_server = request.getfixturevalue("postgres_server")
    started: list[PgBouncer] = []

    def start(pool_size: int) -> PgBouncer:
        started.append(PgBouncer(postgres_server, pool_size=pool_size).start())
        return started[-1]

    yield start
    for running in started:
        running.stop()
