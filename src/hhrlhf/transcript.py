"""Transcripts: ``Turn``, ``Dialogue``, exact parse/render, and turn-level pair alignment.

An HH-RLHF transcript is ``"\\n\\nHuman: ...\\n\\nAssistant: ..."``. A turn starts at a
*marker*, ``"\\n\\nHuman:"`` or ``"\\n\\nAssistant:"``; its text is everything up to the next
marker, leading space included. A label without the ``"\\n\\n"`` prefix (``"... Human: hi"``)
is content, not a turn boundary. Text before the first marker (normally none) is kept as
the dialogue's ``preamble``, so ``render_transcript(parse_transcript(x)) == x`` for every
string ``x``.

Pairs are aligned at turn level: the prompt is the run of turns both transcripts share,
ending with the ``"\\n\\nAssistant:"`` marker of the assistant turn where they diverge. It is
never found by a right-most split of one side (wrong when a response itself contains a
marker) nor by a character-level common prefix (wrong when both responses start alike).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "HUMAN",
    "ASSISTANT",
    "Turn",
    "Dialogue",
    "Alignment",
    "parse_transcript",
    "render_transcript",
    "align_pair",
    "prompt_length",
    "has_inline_label",
    "is_alternating",
    "ROLE_TO_MESSAGE_ROLE",
    "LOOSE_MARKER_RE",
    "NORMALISATIONS",
    "find_marker",
    "find_lookalike_marker",
    "partial_marker",
    "MARKER_STARTS",
]

HUMAN = "Human"
ASSISTANT = "Assistant"
ROLE_TO_MESSAGE_ROLE = {HUMAN: "user", ASSISTANT: "assistant"}
MESSAGE_ROLE_TO_ROLE = {"user": HUMAN, "assistant": ASSISTANT}

#: A turn boundary. ``re.split`` with the group gives ``[preamble, role, text, role, text, ...]``.
MARKER_RE = re.compile(r"\n\n(Human|Assistant):")
ASSISTANT_MARKER = "\n\nAssistant:"
HUMAN_MARKER = "\n\nHuman:"
#: A line break as a consumer that normalises line ends (CRLF or CR to LF) or splits lines
#: (``str.splitlines``) reads one: ``\r\n`` is one break, a lone ``\r`` another, and so are
#: ``\n``, ``\v``, ``\f``, ``\x1c``-``\x1e``, NEL (``\x85``), U+2028 and U+2029.
LINE_BREAK = r"(?:\r\n|\r(?!\n)|[\n\v\f\x1c\x1d\x1e\x85\u2028\u2029])"
_BREAK_CHARS = "\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029"
#: the characters a turn boundary may start with (a text holding none holds none, whole or begun)
MARKER_STARTS = frozenset(_BREAK_CHARS)
#: A turn boundary as any of those consumers may read it: two line breaks of any kind, then a
#: speaker label. Text that people or models write must hold none (the app refuses it in a
#: person's text and cuts a model's reply there; ``hh import`` refuses it in a message): with
#: ``"\r\n\r\nHuman:"`` or ``"\u2028\u2028Human:"`` in a turn, the exported line parses to
#: the turns stored as written, and to more after a consumer's normalisation.
LOOSE_MARKER_RE = re.compile(f"{LINE_BREAK}{LINE_BREAK}(Human|Assistant):")
_LABELS = ("Human:", "Assistant:")


#: The normalisations of line ends a consumer is likely to apply to an exported line, by name.
NORMALISATIONS: dict[str, Callable[[str], str]] = {
    "CRLF to LF": lambda t: t.replace("\r\n", "\n"),
    "CR and CRLF to LF": lambda t: t.replace("\r\n", "\n").replace("\r", "\n"),
    "str.splitlines": lambda t: "\n".join(t.splitlines()),
    "every line break to LF": lambda t: re.sub(LINE_BREAK, "\n", t),
}


def find_marker(text: str, *, strict_ok: bool = False) -> re.Match[str] | None:
    """The first turn boundary in ``text`` under any line-end convention (see
    :data:`LOOSE_MARKER_RE`), or None. ``strict_ok``: only the boundaries written otherwise
    than ``"\\n\\nHuman:"`` / ``"\\n\\nAssistant:"`` (those that a normalisation would add)."""
    if not any(c in text for c in _BREAK_CHARS):
        return None
    for found in LOOSE_MARKER_RE.finditer(text):
        if not strict_ok or not found.group().startswith("\n\n"):
            return found
    return None


def find_lookalike_marker(text: str) -> str | None:
    """The speaker (``"Human"`` or ``"Assistant"``) of a turn boundary that ``text`` writes with
    look-alike characters (``"\\n\\n\uff28uman:"``, ``"Human\uff1a"``, ``"Assi\ufb06ant:"``):
    one that NFKC normalisation, which some tokenizers and text-cleaning tools apply, turns into a
    real boundary; else None. ASCII text holds none (checked first: it costs nothing then)."""
    if text.isascii() or not any(c in text for c in _BREAK_CHARS):
        return None
    folded = unicodedata.normalize("NFKC", text)
    if folded == text:
        return None
    before = LOOSE_MARKER_RE.findall(text)
    after = LOOSE_MARKER_RE.findall(folded)
    if len(after) <= len(before):
        return None
    extra = list(after)
    for role in before:
        extra.remove(role)
    return str(extra[0])


def _prefixes(word: str) -> str:
    return "|".join(re.escape(word[:k]) for k in range(len(word) - 1, 0, -1))


#: a proper beginning of a turn boundary (what more text could make one)
_PARTIAL_RE = re.compile(
    f"{LINE_BREAK}\\r?|{LINE_BREAK}{LINE_BREAK}(?:{_prefixes(_LABELS[0])}|{_prefixes(_LABELS[1])})?"
)


def partial_marker(text: str) -> int:
    """The length of the longest end of ``text`` that more text could make a turn boundary
    (0 when none): what a stream holds back before showing it."""
    for k in range(min(len(text), 2 * 2 + len(_LABELS[1]) - 1), 0, -1):
        if text[-k] in _BREAK_CHARS and _PARTIAL_RE.fullmatch(text, len(text) - k):
            return k
    return 0


#: A speaker label that is not a turn boundary (no ``"\n\n"`` right before it).
_INLINE_LABEL_RE = re.compile(r"(?<!\n\n)(?:Human|Assistant):")


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn: ``role`` is ``"Human"`` or ``"Assistant"``; ``text`` is exact (leading space kept)."""

    role: str
    text: str

    @property
    def content(self) -> str:
        """The text as a chat message would hold it: surrounding whitespace removed."""
        return self.text.strip()

    @property
    def message_role(self) -> str:
        return ROLE_TO_MESSAGE_ROLE[self.role]

    def render(self) -> str:
        return f"\n\n{self.role}:{self.text}"

    def to_message(self) -> dict[str, str]:
        return {"role": self.message_role, "content": self.content}


@dataclass(frozen=True, slots=True)
class Dialogue:
    """A parsed transcript. ``render()`` gives back the exact input string."""

    turns: tuple[Turn, ...]
    preamble: str = ""

    @classmethod
    def parse(cls, text: str) -> Dialogue:
        return parse_transcript(text)

    @classmethod
    def from_messages(cls, messages: Iterable[Mapping[str, str]]) -> Dialogue:
        """Build from ``[{"role": "user"|"assistant", "content": str}, ...]`` (one space after each label)."""
        turns = []
        for i, m in enumerate(messages):
            try:
                role = MESSAGE_ROLE_TO_ROLE[m["role"]]
            except KeyError:
                raise ValueError(
                    f"message {i}: role must be 'user' or 'assistant', got {m.get('role')!r}"
                ) from None
            turns.append(Turn(role, " " + m["content"]))
        return cls(tuple(turns))

    def render(self) -> str:
        return render_transcript(self)

    def to_messages(self) -> list[dict[str, str]]:
        return [t.to_message() for t in self.turns]

    @property
    def human_turns(self) -> int:
        return sum(1 for t in self.turns if t.role == HUMAN)

    @property
    def assistant_turns(self) -> int:
        return sum(1 for t in self.turns if t.role == ASSISTANT)

    def __len__(self) -> int:
        return len(self.turns)


def parse_transcript(text: str) -> Dialogue:
    """Split ``text`` into turns at every ``"\\n\\nHuman:"`` / ``"\\n\\nAssistant:"`` marker."""
    parts = MARKER_RE.split(text)
    it = iter(parts[1:])
    return Dialogue(tuple(Turn(role, body) for role, body in zip(it, it, strict=False)), parts[0])


def render_transcript(dialogue: Dialogue) -> str:
    """Inverse of :func:`parse_transcript`."""
    return dialogue.preamble + "".join(f"\n\n{t.role}:{t.text}" for t in dialogue.turns)


def has_inline_label(text: str) -> bool:
    """True when a speaker label occurs without the ``"\\n\\n"`` prefix (content, not a turn)."""
    return _INLINE_LABEL_RE.search(text) is not None


def is_alternating(roles: Iterable[str]) -> bool:
    """Strictly Human, Assistant, Human, ... starting with Human."""
    expected = HUMAN
    for role in roles:
        if role != expected:
            return False
        expected = ASSISTANT if expected == HUMAN else HUMAN
    return True


@dataclass(frozen=True, slots=True)
class Alignment:
    """Where a pair splits into prompt and responses.

    ``prompt_end``: length of the shared prompt (``chosen[:prompt_end] == rejected[:prompt_end]``,
    ending with ``"\\n\\nAssistant:"`` unless it is 0). ``diverge_turn``: index of the first turn
    that differs (None for identical transcripts). ``diverge_role``: that turn's role in both,
    or None when the roles themselves differ, or the preambles differ.
    ``chosen_turns`` / ``rejected_turns``: turn counts of each side.
    """

    prompt_end: int
    diverge_turn: int | None
    diverge_role: str | None
    chosen_turns: int
    rejected_turns: int


def align_pair(chosen: str, rejected: str) -> Alignment:
    """Align a pair at turn level. See the module docstring."""
    pc = MARKER_RE.split(chosen)
    pr = MARKER_RE.split(rejected)
    nc = (len(pc) - 1) // 2
    nr = (len(pr) - 1) // 2
    if pc[0] != pr[0]:
        return Alignment(0, 0, None, nc, nr)
    pos = len(pc[0])
    last_assistant_end = 0
    n = min(len(pc), len(pr))
    i = 1
    while i + 1 < n:
        role = pc[i]
        if role != pr[i]:
            return Alignment(last_assistant_end, i // 2, None, nc, nr)
        marker_end = pos + 3 + len(role)
        if role == ASSISTANT:
            last_assistant_end = marker_end
        text = pc[i + 1]
        if text != pr[i + 1]:
            return Alignment(last_assistant_end, i // 2, role, nc, nr)
        pos = marker_end + len(text)
        i += 2
    # One side is a turn-level prefix of the other, or they are identical.
    diverge = None if nc == nr else min(nc, nr)
    return Alignment(last_assistant_end, diverge, None, nc, nr)


def prompt_length(chosen: str, rejected: str) -> int:
    """The length of the shared prompt; the hot path of loading (no objects built).

    Equal to ``align_pair(chosen, rejected).prompt_end`` for every pair. The common case
    is answered with a few C-level string searches instead of splitting both sides:

    Let ``i`` be the last ``"\\n\\nAssistant:"`` in ``chosen``, at the same position in
    ``rejected``, ``e = i + 12``, ``chosen[:e] == rejected[:e]``, and neither tail after ``e``
    holding ``"\\n\\nHuman:"``. Markers cannot overlap (a marker's only newlines are its
    first two characters), so the regex finds exactly the occurrences ``find`` finds, none
    straddles ``e``, and both tails are marker-free: each side is the same turns up to that
    final assistant marker plus one final assistant turn. The turn walk below then matches
    every earlier turn, records ``e`` at the final assistant marker and stops there (the
    final texts differ, or the sides are identical and the first branch gives ``e`` too).
    Every other pair takes the walk itself (:func:`align_pair`).

    The first test is the same condition found more cheaply, for the usual pair whose
    final responses hold no newline at all: ``j``, the last ``"\\n"`` of ``chosen`` (a
    ``memrchr``), is the second newline of an ``"\\n\\nAssistant:"`` starting at
    ``i = j - 1``; ``rejected``'s last newline is at ``j`` too, and ``rejected`` starts with
    ``chosen[:e]``. Then neither tail after ``e = j + 11`` holds a newline, so neither holds
    a marker, which is the condition above.
    """
    j = chosen.rfind("\n")
    if j > 0 and rejected.rfind("\n") == j and chosen.startswith(ASSISTANT_MARKER, j - 1):
        e = j + 11
        if rejected.startswith(chosen[:e]):
            return e
    i = chosen.rfind(ASSISTANT_MARKER)
    if i >= 0 and rejected.rfind(ASSISTANT_MARKER) == i:
        e = i + 12  # len(ASSISTANT_MARKER)
        if (
            chosen.find(HUMAN_MARKER, e) < 0
            and rejected.find(HUMAN_MARKER, e) < 0
            and rejected.startswith(chosen[:e])
        ):
            return e
    if chosen == rejected:
        i = chosen.rfind(ASSISTANT_MARKER)
        return 0 if i < 0 else i + len(ASSISTANT_MARKER)
    return align_pair(chosen, rejected).prompt_end
