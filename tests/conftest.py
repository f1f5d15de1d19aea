"""Fixtures shared by the whole test tree."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from hhrlhf.dataset import SAMPLE_DIR

# helper modules that live beside the tests (pgserver) import as top-level modules
sys.path.insert(0, str(Path(__file__).parent))

from pgserver import SKIP_REASON, PostgresServer, find_bindir  # noqa: E402


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    """The bundled sample (tests/test_synth.py proves it is what the generator writes)."""
    return SAMPLE_DIR


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL server for the whole session (skips where the binaries are absent)."""
    pytest.importorskip(
        "psycopg", reason="psycopg is not installed (pip install 'hhrlhf[postgres]')"
    )
    if find_bindir() is None:
        if os.environ.get("HH_REQUIRE_POSTGRES"):  # CI installs the server: never skip there
            pytest.fail(SKIP_REASON)
        pytest.skip(SKIP_REASON)
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A SQLAlchemy URL of a new, empty PostgreSQL database for one test."""
    return postgres_server.new_database()
