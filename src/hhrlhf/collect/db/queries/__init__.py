"""The hot paths' SQL: statements built once (their cache keys too), run on the caller's
connection, each function one statement (or one per dialect: SQLite's and PostgreSQL's
locking and inserts differ here, and only here), returning typed rows. The rules over them
(who may write, what a status may become) are the services'."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection


def on_sqlite(conn: Connection) -> bool:
    """Whether ``conn`` is SQLite's (one writer holds the file: no row lock is needed)."""
    return bool(conn.dialect.name == "sqlite")


__all__ = ["on_sqlite"]
