"""Export formats: one module per format, the shared contract in :mod:`.base`.

``FORMATS`` maps each name trainers use to its :class:`~hhrlhf.convert.base.Format`:

>>> from hhrlhf.convert import FORMATS
>>> sorted(FORMATS)[:3]
['dpo', 'messages', 'openai']
"""

from __future__ import annotations

from .base import Format, messages_of, normalise_transcript, render_messages
from .dpo import DpoFormat
from .export import (
    FORMATS,
    export_hf,
    export_records,
    format_rows,
    get_format,
    hf_splits,
    import_records,
)
from .files import read_rows, write_rows
from .messages import MessagesFormat
from .openai import OpenAIFormat
from .raw import RawFormat
from .redteam import RedTeamFormat
from .sft import SftFormat
from .trl_conversational import TrlConversationalFormat
from .trl_standard import TrlStandardFormat

for _fmt in (
    RawFormat(),
    DpoFormat(),
    TrlStandardFormat(),
    TrlConversationalFormat(),
    MessagesFormat(),
    SftFormat(),
    OpenAIFormat(),
    RedTeamFormat(),
):
    FORMATS[_fmt.name] = _fmt

__all__ = [
    "FORMATS",
    "Format",
    "get_format",
    "format_rows",
    "export_records",
    "export_hf",
    "import_records",
    "hf_splits",
    "read_rows",
    "write_rows",
    "messages_of",
    "render_messages",
    "normalise_transcript",
]
