"""Export formats: one module per format, the shared contract in :mod:`.base`.

``FORMATS`` (filled in :mod:`.formats`) maps each name trainers use to its
:class:`~hhrlhf.convert.base.Format`:

>>> from hhrlhf.convert import FORMATS
>>> sorted(FORMATS)[:3]
['dpo', 'messages', 'openai']
"""

from __future__ import annotations

from .base import Format, messages_of, normalise_transcript, render_messages
from .export import export_hf, export_records, hf_splits, import_records
from .files import read_rows, write_rows
from .formats import FORMATS, format_rows, get_format

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
