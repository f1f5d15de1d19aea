"""Whether the annotator writing is still enabled, read in the write's own transaction.

Each worker remembers a checked login for a few seconds (``web/logins.AUTH_CACHE_SECONDS``),
so a login disabled elsewhere (another worker or host, ``hh collect annotator disable``)
would keep writing until then. The writes add :func:`writer_disabled` as one more column of
the statement they run first (no statement more: the columns are
:mod:`..db.queries.writers`'), and :func:`check_writer` refuses the write
when the annotator is disabled (or gone) at that moment.
"""

from __future__ import annotations

from typing import Any

from ...errors import Forbidden
from ..db.queries.writers import annotator_disabled_for_update, writer_disabled, writer_enabled
from ..domain import AnnotatorInfo

__all__ = ["writer_disabled", "writer_enabled", "check_writer", "lock_writer"]


def check_writer(row: Any, who: AnnotatorInfo) -> None:
    """Refuse the write (403) when the row's ``who_disabled`` says the annotator may not."""
    if row.who_disabled is None or row.who_disabled:
        raise Forbidden(f"annotator {who.name!r} is disabled")


def lock_writer(s: Any, who: AnnotatorInfo) -> None:
    """Lock the writing annotator's row for the transaction (one statement) and refuse the
    write when they are disabled now (the review routes, which take that lock anyway or
    write one row)."""
    disabled = annotator_disabled_for_update(s, who.id)
    if disabled is None or disabled:
        raise Forbidden(f"annotator {who.name!r} is disabled")
