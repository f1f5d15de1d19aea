"""What text a person may send to the collection app: the one check every JSON field goes through.

Every string in a request body (a message, an edit, a task description, a comment, a name, an
attribute key or value) is refused with a 422 naming the field when it holds:

- a speaker marker, ``"\\n\\nHuman:"`` or ``"\\n\\nAssistant:"``, written with any line breaks
  that a tool normalising line ends or splitting lines would turn into one (``"\\r\\n"``,
  ``"\\r"``, NEL, U+2028...: :data:`hhrlhf.transcript.LOOSE_MARKER_RE`). The HH
  layout has one grammar and these two strings are its turn boundaries: stored as typed, they
  would add turns nobody drove to the exported transcripts. A label after a single newline
  (``"\\nHuman:"``) is ordinary text, as in upstream data: the app strips the ends of every
  text, so no text ends in a newline that a following marker could join;
- the same marker written with look-alike characters (a fullwidth ``"\uff28"``, a
  mathematical letter, the ligature ``"\ufb06"`` for "st", a fullwidth colon): NFKC
  normalisation, which some tokenizers and cleaning tools apply, makes a real marker of it
  (:func:`hhrlhf.transcript.find_lookalike_marker`);
- a lone surrogate (``"\\ud800"`` in JSON): not a character, it cannot be encoded as UTF-8, so
  it could be neither stored nor sent back;
- U+0000 (NUL), which PostgreSQL cannot store in text.

Text from a model is not checked here: :func:`hhrlhf.collect.finish.finalize` cuts it at a
speaker marker and :func:`clean_model_text` replaces what cannot be stored.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, StrictBool, StrictInt, StrictStr
from pydantic_core import PydanticCustomError

from ..transcript import find_lookalike_marker, find_marker

__all__ = [
    "Text",
    "AttributeValue",
    "TEXT_ERROR",
    "FIELD_LABELS",
    "text_problem",
    "clean_model_text",
    "safe_for_json",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
#: the validation error type of a refused text (the app's 422 message names the field)
TEXT_ERROR = "hh_text"
#: how a 422 names a body field a person typed (others by their key: ``task_description``)
FIELD_LABELS = {"text": "the message", "edit": "the edit", "comment": "the comment"}


def text_problem(value: str) -> str | None:
    """Why ``value`` may not be stored as a person's text, or None when it may."""
    found = find_marker(value)
    if found is not None:
        return (
            f"holds the speaker marker '\\n\\n{found.group(1)}:' (a blank line, then "
            f"'{found.group(1)}:'), which would start a new turn in the exported transcript; "
            f"remove the blank line before '{found.group(1)}:' or rephrase it"
        )
    role = find_lookalike_marker(value)
    if role is not None:
        return (
            f"holds look-alike characters that NFKC normalisation (applied by some tokenizers "
            f"and text-cleaning tools) turns into the speaker marker '\\n\\n{role}:', which "
            f"would start a new turn there; write '{role}:' in plain letters without the blank "
            "line before it, or rephrase it"
        )
    found = _SURROGATE.search(value)
    if found is not None:
        return (
            f"holds a lone surrogate (U+{ord(found.group()):04X} at character {found.start()}), "
            "which is not a character; remove it or paste the text again"
        )
    if "\x00" in value:
        return "holds a NUL character (U+0000), which cannot be stored"
    return None


def _check(value: Any) -> Any:
    problem = text_problem(value) if isinstance(value, str) else None
    if problem is not None:
        raise PydanticCustomError(TEXT_ERROR, "{problem}", {"problem": problem})
    return value


#: a string field of a request body: every route's text goes through :func:`text_problem`
Text = Annotated[StrictStr, AfterValidator(_check)]
#: an annotator attribute's value (a string value is checked as :data:`Text` is)
AttributeValue = Annotated[StrictStr | StrictBool | StrictInt | None, AfterValidator(_check)]


def clean_model_text(text: str) -> str:
    """A model's text as stored: lone surrogates and NUL become U+FFFD (the replacement character).

    Neither can be stored (UTF-8 has no lone surrogates; PostgreSQL has no NUL in text), and a
    response is the model's, not a person's to fix: it is kept, with the replacement visible.
    """
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if _SURROGATE.search(text):
        # UTF-16 joins a high and a low surrogate that arrived apart; the rest become U+FFFD
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def safe_for_json(value: Any) -> str:
    """``str(value)`` that can always be encoded as UTF-8 (a lone surrogate written as ``\\udXXX``)."""
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")
