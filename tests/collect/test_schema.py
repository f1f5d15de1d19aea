"""The migrations build exactly the schema the models describe, on SQLite and PostgreSQL.

A fresh database is migrated to the head and compared with ``Base.metadata`` by Alembic's own
autogenerate comparison (``compare_metadata``): a model changed without a migration, or a
migration that builds something the models do not say, shows up here as a difference.
"""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Column, Integer, MetaData, Table

from hhrlhf.collect.db import Storage
from hhrlhf.collect.db.models import Base


def _differences(st: Storage, metadata: MetaData) -> list:
    with st.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        return compare_metadata(context, metadata)


def test_a_migrated_database_matches_the_models(empty_db_url):
    st = Storage(empty_db_url)
    try:
        st.upgrade()
        assert _differences(st, Base.metadata) == []
    finally:
        st.dispose()


def test_the_comparison_sees_a_table_the_migrations_lack(empty_db_url):
    """The check above can fail: a model table no migration creates is a difference."""
    metadata = MetaData(naming_convention=Base.metadata.naming_convention)
    for table in Base.metadata.tables.values():
        table.to_metadata(metadata)
    Table("not_migrated", metadata, Column("id", Integer, primary_key=True))
    st = Storage(empty_db_url)
    try:
        st.upgrade()
        diffs = _differences(st, metadata)
    finally:
        st.dispose()
    assert [(d[0], d[1].name) for d in diffs] == [("add_table", "not_migrated")]
