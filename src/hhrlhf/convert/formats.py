"""The format registry: every export format, by the name trainers use, in one place.

Each format is one module holding a :class:`~hhrlhf.convert.base.Format` subclass (the
contract); :data:`FORMATS` lists one instance of each. Adding a format is one new module and
one line in the tuple below.

>>> sorted(FORMATS)[:3]
['dpo', 'messages', 'openai']
>>> get_format("dpo").kind
'preference'
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ..errors import HHError, RecordKindError, UnknownNameError
from ..records import PreferencePair, RedTeamAttempt
from .base import Format, merge_row
from .dpo import DpoFormat
from .messages import MessagesFormat
from .openai import OpenAIFormat
from .raw import RawFormat
from .redteam import RedTeamFormat
from .sft import SftFormat
from .trl_conversational import TrlConversationalFormat
from .trl_standard import TrlStandardFormat

__all__ = ["FORMATS", "MESSAGE_FORMATS", "get_format", "format_rows"]

#: Format name -> the :class:`~hhrlhf.convert.base.Format` that writes and reads its rows.
FORMATS: dict[str, Format] = {
    fmt.name: fmt
    for fmt in (
        RawFormat(),
        DpoFormat(),
        TrlStandardFormat(),
        TrlConversationalFormat(),
        MessagesFormat(),
        SftFormat(),
        OpenAIFormat(),
        RedTeamFormat(),
    )
}


def get_format(name: str | Format) -> Format:
    """The format called ``name`` (a :class:`Format` is returned as it is)."""
    if isinstance(name, Format):
        return name
    try:
        return FORMATS[name]
    except KeyError:
        raise UnknownNameError("format", name, list(FORMATS)) from None


def _check_kind(fmt: Format, record: object) -> None:
    wants_attempts = fmt.kind == "red-team"
    is_attempt = not hasattr(record, "chosen")
    if wants_attempts != is_attempt:
        what = "red-team attempts" if is_attempt else "preference pairs"
        raise RecordKindError(
            f"format {fmt.name!r} does not take {what}: "
            + ("use --format redteam" if is_attempt else "redteam is for red-team-attempts"),
            holds="attempts" if is_attempt else "pairs",
            wanted="pairs" if is_attempt else "attempts",
        )


#: Formats whose rows hold chat messages (what ``merge_consecutive`` applies to).
MESSAGE_FORMATS = ("trl-conversational", "messages", "sft", "openai", "redteam")


def format_rows(
    records: Iterable[PreferencePair | RedTeamAttempt],
    fmt: str | Format,
    *,
    source: bool = True,
    merge_consecutive: bool = False,
    merged: list[Any] | None = None,
    margins: Mapping[tuple[Any, Any, int], Mapping[str, Any]] | None = None,
) -> Iterator[dict[str, Any]]:
    """The rows of ``records`` in ``fmt`` (a generator; nothing is held in memory).

    ``margins`` (the rows of ``hh pm flag`` by ``(subset, split, index)``,
    :func:`hhrlhf.reward.flag.read_flags`) adds each pair's ``margin`` and ``p_mislabelled``
    columns; a pair without a row is an error.

    ``merge_consecutive`` (message formats only, :data:`MESSAGE_FORMATS`) joins same-role runs
    of messages into one, their contents joined by ``"\n\n"``
    (:func:`~hhrlhf.convert.base.merge_consecutive`); the records it changed are appended to
    ``merged``.
    """
    fmt = get_format(fmt)
    if merge_consecutive and fmt.name not in MESSAGE_FORMATS:
        raise HHError(
            f"--merge-consecutive joins chat messages; format {fmt.name!r} holds text "
            f"(message formats: {', '.join(MESSAGE_FORMATS)})"
        )
    first = True
    export_row = fmt.export_row
    for record in records:
        if first:
            _check_kind(fmt, record)
            first = False
        row = export_row(record, source=source)
        if margins is not None:
            _add_margin(row, record, margins)
        if merge_consecutive:
            row, changed = merge_row(row)
            if changed and merged is not None:
                merged.append(record)
        yield row


def _add_margin(row: dict[str, Any], record: Any, margins: Mapping[Any, Mapping[str, Any]]) -> None:
    key = (record.subset, record.split, record.index)
    flag = margins.get(key)
    if flag is None:
        raise HHError(
            f"the flags have no row for pair {key[0]}/{key[1]}/{key[2]} (flags of other data?)"
        )
    row["margin"], row["p_mislabelled"] = flag["margin"], flag["p_mislabelled"]
