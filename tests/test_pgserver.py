"""The throwaway PostgreSQL server the collection tests run on."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest


@pytest.mark.postgres
def test_server_answers_and_databases_are_separate(postgres_server, postgres_url):
    psycopg = pytest.importorskip("psycopg")
    other = postgres_server.new_database()
    assert other != postgres_url
    dbname = urlsplit(postgres_url).path.lstrip("/")
    with psycopg.connect(postgres_server.conninfo(dbname)) as conn:
        conn.execute("CREATE TABLE t (x int)")
        conn.execute("INSERT INTO t VALUES (41), (1)")
        assert conn.execute("SELECT sum(x) FROM t").fetchone() == (42,)
    other_name = urlsplit(other).path.lstrip("/")
    with psycopg.connect(postgres_server.conninfo(other_name)) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 't'").fetchone()
        assert tables == (0,)


@pytest.mark.postgres
def test_server_listens_on_a_socket_only(postgres_server):
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(postgres_server.conninfo()) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
        assert conn.execute("SHOW max_connections").fetchone() == ("200",)
