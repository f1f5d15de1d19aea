"""The shared contract of every export format, and the message helpers they build on.

A :class:`Format` turns one record into one row (a JSON-able dict) and reads such a row
back. Exact formats (``raw``, ``dpo``) give back the very strings they were given; the
clean-text formats hold chat messages, whose ``content`` is each turn's text with
surrounding whitespace removed. Their round trip is exact *after* :func:`normalise_transcript`,
the one documented normalisation: each turn becomes ``"\\n\\n<Role>: <stripped text>"``.

Nothing is dropped on the way to messages: two Human turns in a row stay two ``user``
messages, an empty response stays an empty ``assistant`` message, and text before the first
marker (a transcript missing its leading ``"\\n\\n"``) is parsed as the turn it starts, or
kept as a leading ``user`` message when it starts with no speaker label.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import orjson

from ..records import PreferencePair
from ..transcript import (
    ASSISTANT_MARKER,
    Dialogue,
    find_lookalike_marker,
    find_marker,
    parse_transcript,
)

__all__ = [
    "Format",
    "SOURCE_KEYS",
    "messages_of",
    "render_messages",
    "normalise_transcript",
    "prompt_messages",
    "response_messages",
    "require_key",
    "MERGE_JOIN",
    "merge_consecutive",
    "merge_row",
]

#: The keys every exported row carries unless ``source=False`` (``--no-source``).
SOURCE_KEYS = ("subset", "split", "index")
_LABEL_RE = re.compile(r"(Human|Assistant):")


def messages_of(text: str) -> list[dict[str, str]]:
    """A transcript as ``[{"role": "user"|"assistant", "content": str}, ...]``, losing no turn."""
    d = parse_transcript(text)
    pre = d.preamble.strip()
    out: list[dict[str, str]] = []
    if pre:
        if _LABEL_RE.match(pre):  # "Human: hi\n\nAssistant: ..." without the leading "\n\n"
            out.extend(parse_transcript("\n\n" + pre).to_messages())
        else:
            out.append({"role": "user", "content": pre})
    out.extend(d.to_messages())
    return out


def render_messages(messages) -> str:
    """Messages back to a transcript: ``"\\n\\nHuman: <content>\\n\\nAssistant: <content>"``."""
    return Dialogue.from_messages(messages).render()


def normalise_transcript(text: str) -> str:
    """The normal form clean-text formats keep: every turn ``"\\n\\n<Role>: <stripped text>"``."""
    return render_messages(messages_of(text))


def prompt_messages(pair: PreferencePair) -> list[dict[str, str]]:
    """The prompt's turns as messages (without the trailing empty assistant marker)."""
    if pair.prompt_end == 0:
        return []
    p = pair.prompt
    if p.endswith(ASSISTANT_MARKER):
        p = p[: -len(ASSISTANT_MARKER)]
    return messages_of(p) if p else []


def response_messages(pair: PreferencePair, side: str) -> list[dict[str, str]]:
    """One assistant message holding the final response (stripped; markers inside stay text).

    A pair without a shared prompt (``no_prompt``) has whole transcripts as responses; they
    become their full message lists so that no turn is lost.
    """
    if pair.prompt_end == 0:
        return messages_of(getattr(pair, side))
    text = pair.chosen_response if side == "chosen" else pair.rejected_response
    return [{"role": "assistant", "content": text.strip()}]


#: What ``--merge-consecutive`` puts between the contents of two same-role turns it joins.
MERGE_JOIN = "\n\n"


def merge_consecutive(
    messages: list[dict[str, str]], join: str = MERGE_JOIN
) -> list[dict[str, str]]:
    """``messages`` with every run of same-role messages joined into one (contents joined by
    ``join``; an empty content adds nothing), so roles alternate as strict chat templates
    require. Messages are copied, never changed in place."""
    out: list[dict[str, str]] = []
    for m in messages:
        if out and out[-1]["role"] == m["role"]:
            parts = [c for c in (out[-1]["content"], m["content"]) if c]
            out[-1] = {**out[-1], "content": join.join(parts)}
        else:
            out.append(dict(m))
    return out


def _is_messages(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in value)
    )


def merge_row(row: dict, join: str = MERGE_JOIN) -> tuple[dict, bool]:
    """``(row, changed)``: every message list in ``row`` (also one level down, as in
    ``{"input": {"messages": [...]}}``) with its same-role runs joined (:func:`merge_consecutive`)."""
    changed = False
    out = dict(row)
    for key, value in row.items():
        if _is_messages(value):
            merged = merge_consecutive(value, join)
            changed |= len(merged) != len(value)
            out[key] = merged
        elif isinstance(value, dict):
            out[key], inner = merge_row(value, join)
            changed |= inner
    return out, changed


def require_key(row: Any, key: str, kind: type | tuple[type, ...] | None = None):
    """``row[key]``, or ``ValueError`` naming the key (and the type when ``kind`` is given)."""
    if type(row) is not dict:
        raise ValueError(f"expected a JSON object, got {type(row).__name__}")
    if key not in row:
        raise ValueError(f"missing key {key!r}")
    value = row[key]
    if kind is not None and not isinstance(value, kind):
        raise ValueError(
            f"{key!r} must be {getattr(kind, '__name__', kind)}, got {type(value).__name__}"
        )
    return value


def _messages(row, key, response: bool = False) -> list[dict[str, str]]:
    """The message list ``row[key]``, checked. No content may hold a turn boundary under any
    line-end convention (:func:`hhrlhf.transcript.find_marker`): read back into a transcript
    it would start a turn nobody wrote. ``response``: the response side of a pair, whose text
    may go on with the transcript's later turns in plain ``"\\n\\nHuman:"`` markers (as
    :func:`response_messages` writes a pair that differs before its last turn); a boundary
    written with other line breaks is refused there too."""
    value = require_key(row, key, list)
    for i, m in enumerate(value):
        if (
            type(m) is not dict
            or type(m.get("role")) is not str
            or type(m.get("content")) is not str
        ):
            raise ValueError(f"{key!r}[{i}] must be {{'role': str, 'content': str}}")
        if m["role"] not in ("user", "assistant"):
            raise ValueError(f"{key!r}[{i}]: role must be 'user' or 'assistant', got {m['role']!r}")
        found = find_marker(m["content"], strict_ok=response)
        if found is not None:
            raise ValueError(
                f"{key!r}[{i}] holds a speaker marker at character {found.start()} "
                f"({found.group()!r}: a blank line, then '{found.group(1)}:', with any line "
                "breaks), which would start a turn nobody wrote in the transcript; remove the "
                f"blank line before '{found.group(1)}:'"
            )
        role = find_lookalike_marker(m["content"])
        if role is not None:
            raise ValueError(
                f"{key!r}[{i}] holds look-alike characters that NFKC normalisation (applied by "
                f"some tokenizers and text-cleaning tools) turns into the speaker marker "
                f"'\\n\\n{role}:', which would start a turn nobody wrote; write it in plain "
                "letters without the blank line before it"
            )
    return value


class Format:
    """One export format. Subclasses set the class attributes and implement two methods.

    ``row(record)`` builds the row without source keys; ``read(row)`` builds the record back
    (a :class:`PreferencePair`, a :class:`~hhrlhf.transcript.Dialogue` for single-conversation
    formats, a :class:`~hhrlhf.records.RedTeamAttempt` for ``redteam``), carrying the source
    keys when the row has them.
    """

    name: ClassVar[str]
    #: "preference" (pairs in, pairs back), "conversation" (pairs in, one dialogue back),
    #: or "red-team" (attempts in and back; spelt as the red-team subset's kind).
    kind: ClassVar[str] = "preference"
    description: ClassVar[str]
    #: True when ``read(row(x))`` gives back ``x`` exactly; else see ``normalisation``.
    exact: ClassVar[bool] = False
    normalisation: ClassVar[str] = "each turn's text is stripped (normalise_transcript)"

    def row(self, record) -> dict:
        raise NotImplementedError

    def read(self, row: dict):
        raise NotImplementedError

    def encode(self, row: dict) -> bytes:
        """One JSONL line (with its newline)."""
        return orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)

    def export_row(self, record, *, source: bool = True) -> dict:
        row = self.row(record)
        if source:
            row["subset"] = record_subset(record)
            row["split"] = record_split(record)
            row["index"] = record.index
        return row

    # helpers for subclasses -------------------------------------------------------------
    @staticmethod
    def _pair(row: dict, chosen: str, rejected: str) -> PreferencePair:
        return PreferencePair(
            chosen, rejected, row.get("subset"), row.get("split"), row.get("index")
        )

    _messages = staticmethod(_messages)

    def __repr__(self) -> str:
        return f"<Format {self.name}>"


def record_subset(record):
    return getattr(record, "subset", "red-team-attempts")


def record_split(record):
    return getattr(record, "split", "train")
