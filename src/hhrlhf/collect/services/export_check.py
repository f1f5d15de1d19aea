"""The export's last line of defence: every line it writes parses back, with
:func:`hhrlhf.transcript.parse_transcript`, to exactly the turns stored for that comparison, and
to the same speakers after every normalisation of line ends a consumer is likely to apply
(:data:`hhrlhf.transcript.NORMALISATIONS`: CRLF to LF, ``str.splitlines``...), or the export
stops naming the conversation (:class:`~hhrlhf.errors.ExportCheckError`)."""

from __future__ import annotations

import re

from ...errors import ExportCheckError
from ...transcript import ASSISTANT, HUMAN, NORMALISATIONS, Turn, parse_transcript
from .transcripts import ExportConversation

__all__ = ["check_line", "stored_turns"]

#: a line break other than LF (only these make a normalisation change the line's turns)
_OTHER_BREAKS = re.compile("[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def stored_turns(conv: ExportConversation, upto: int) -> list[Turn]:
    """The turns stored for ``conv`` before turn ``upto``: each human message and the response
    the conversation continued with."""
    out = []
    for t in conv.turns:
        if t.index >= upto:
            continue
        out += [Turn(HUMAN, f" {t.human}"), Turn(ASSISTANT, f" {t.continued}")]
    return out


def check_line(
    conv: ExportConversation, index: int, line: str, expected: list[Turn], what: str
) -> None:
    """``line`` parses back to exactly ``expected``, or the export stops naming the conversation.

    Every text a person typed is refused when it holds a speaker marker and every response is
    cut at one, so this fails only when the database was changed past the app (by hand, or by
    a version that did not check); a line with turns nobody drove is never written.
    """
    got = parse_transcript(line)
    want = [t.role for t in expected]
    if got.preamble == "" and list(got.turns) == expected:
        if _OTHER_BREAKS.search(line) is None:  # LF only: no normalisation changes a turn
            return
        for name, normalise in NORMALISATIONS.items():
            found = [t.role for t in parse_transcript(normalise(line)).turns]
            if found != want:
                _refuse(conv, index, what, f"after {name} it parses to {_turns(found, want)}")
        return
    found = [t.role for t in got.turns]
    _refuse(
        conv,
        index,
        what,
        f"it parses to {_turns(found, want)}"
        if found != want
        else "a turn's text differs from the one stored",
    )


def _turns(found: list[str], want: list[str]) -> str:
    return f"{len(found)} turns ({', '.join(found)}), the database holds {len(want)}"


def _refuse(conv: ExportConversation, index: int, what: str, detail: str) -> None:
    raise ExportCheckError(
        f"conversation {conv.id} (uid {conv.uid}), turn {index + 1}: the {what} does not "
        f"parse back to the turns stored ({detail}; text holding '\\n\\nHuman:' or "
        "'\\n\\nAssistant:', or the same with other line breaks, was written to the database "
        "past the app?); nothing was exported: fix or delete that conversation and export again"
    )
