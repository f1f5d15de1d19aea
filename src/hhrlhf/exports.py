"""Telling an ``hh export`` output apart from upstream's rows, so one given back as data is
named, not read as pairs with empty prompts.

Upstream rows are ``{"chosen", "rejected"}`` whole transcripts (``"\\n\\nHuman: ..."``). The
export formats other than ``raw`` (which is upstream's shape) are not: ``dpo`` and
``trl-standard`` have a ``prompt`` and responses without the Human marker, the conversational
formats hold lists of messages. ``hh import --format NAME`` reads each of them back.
"""

from __future__ import annotations

import os
from typing import Any

from .errors import DataFormatError

__all__ = ["export_format", "refuse_export"]

HUMAN = "\n\nHuman:"


def export_format(obj: Any) -> str | None:
    """The ``hh export`` format a decoded row is in, or None when it may be an upstream row.

    >>> export_format({"prompt": "\\n\\nHuman: Hi\\n\\nAssistant:", "chosen": " Hello", "rejected": " No"})
    'dpo'
    >>> export_format({"chosen": "\\n\\nHuman: Hi\\n\\nAssistant: Hello", "rejected": "..."}) is None
    True
    """
    if type(obj) is not dict:
        return None
    prompt, chosen = obj.get("prompt"), obj.get("chosen")
    if isinstance(prompt, list):
        return "trl-conversational"
    if isinstance(prompt, str) and isinstance(chosen, str) and HUMAN not in chosen:
        return "dpo" if prompt.startswith(HUMAN) else "trl-standard"
    if "preferred_output" in obj and "input" in obj:
        return "openai"
    if isinstance(obj.get("messages"), list) and "chosen" not in obj:
        return "sft"
    if isinstance(chosen, list):
        return "messages"
    return None


def refuse_export(path: str | os.PathLike[str], position: int, obj: Any) -> None:
    """Raise :class:`~hhrlhf.errors.DataFormatError` when ``obj`` (the file's first row, at
    ``position``) is a row of an ``hh export`` format."""
    fmt = export_format(obj)
    if fmt is None:
        return
    raise DataFormatError(
        path,
        position,
        f"this file is an hh export (format {fmt}), not upstream's "
        '{"chosen", "rejected"} transcripts; read it back with '
        f"hh import {os.fspath(path)} --format {fmt}",
    )
