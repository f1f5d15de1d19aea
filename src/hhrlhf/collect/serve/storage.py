"""The database a command works on, opened: migrated or checked current, or one error naming it."""

from __future__ import annotations

from ...errors import HHError
from ..db import Storage
from ..db.engine import shown_url
from ..db.errors import DATABASE_ERRORS, describe

__all__ = ["open_storage"]


def open_storage(url: str, *, migrate: bool = False) -> Storage:
    """The database at ``url``, migrated (``migrate``) or checked to be current; one error
    naming it when it cannot be opened."""
    storage = Storage(url)
    try:
        if migrate:
            storage.upgrade()
        else:
            storage.check_current()
    except DATABASE_ERRORS as exc:  # no server there, a wrong password, a missing database
        storage.dispose()
        raise HHError(f"--db {shown_url(url)}: cannot open the database: {describe(exc)}") from exc
    return storage
