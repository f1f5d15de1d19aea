"""The campaign's guidelines: versioned Markdown an admin publishes, and what each annotator
must read and acknowledge before a conversation.

Opt-in: with no version published nobody has anything to read. An annotator must read the
current version when they have acknowledged none, and again when a version newer than their
latest acknowledged one is marked ``important`` (a plain new version is shown, not
required). :func:`hhrlhf.collect.services.conversations.create_conversation` refuses a new
conversation while reading is due (admins are not held: they write the guidelines and try
the app) and stamps each conversation with the version current when it started.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from ...errors import Conflict, Forbidden, Invalid, NotFound
from ..db.models import Guidelines, GuidelinesAck
from ..db.queries import guidelines as q
from ..domain import AnnotatorInfo, iso, now
from .rules import check_size
from .writers import lock_writer

if TYPE_CHECKING:
    from sqlalchemy import Connection

    from ..db import Storage

__all__ = [
    "MAX_GUIDELINES_CHARS",
    "GuidelinesStatus",
    "GuidelinesVersion",
    "GuidelinesTally",
    "acknowledge",
    "check_text",
    "publish",
    "refuse_start",
    "status",
    "versions",
]

#: the longest guidelines text (characters): some twenty pages of Markdown
MAX_GUIDELINES_CHARS = 50_000


@dataclass(frozen=True, slots=True)
class GuidelinesVersion:
    """One published version (its text is :attr:`GuidelinesStatus.text`, for the current)."""

    version: int
    important: bool
    author: str | None
    created_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class GuidelinesStatus:
    """The current guidelines as an annotator sees them."""

    #: None: no guidelines are published (nothing to read)
    current: GuidelinesVersion | None
    text: str | None
    #: the latest version this annotator acknowledged (None: none)
    acknowledged: int | None
    #: they must read and acknowledge the current version
    must_acknowledge: bool
    #: and until they do, they cannot start a conversation (annotators; admins are not held)
    blocks_new_conversations: bool


def check_text(text: str) -> str:
    """``text`` without its surrounding whitespace; refused when empty or too long."""
    check_size("guidelines", text, MAX_GUIDELINES_CHARS)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Invalid(
            f"the guidelines hold a lone surrogate at character {exc.start}, which is not "
            "a character: remove it or paste the text again"
        ) from exc
    text = text.strip()
    if not text:
        raise Invalid("the guidelines are empty: write what annotators should read")
    return text


def _version(g: Guidelines) -> GuidelinesVersion:
    return GuidelinesVersion(g.version, bool(g.important), g.author, iso(g.created_at))


def publish(
    storage: Storage, who: AnnotatorInfo, text: str, *, important: bool = False
) -> GuidelinesVersion:
    """A new current version (the previous + 1), authored by ``who`` (an admin).
    ``important``: every annotator must read it again before their next conversation."""
    if not who.is_admin:
        raise Forbidden("only an admin can publish guidelines")
    text = check_text(text)
    try:
        with storage.write() as s:
            latest = s.scalar(select(func.max(Guidelines.version))) or 0
            g = Guidelines(
                version=latest + 1,
                text=text,
                important=important,
                author=who.name,
                created_at=now(),
            )
            s.add(g)
            s.flush()
            return _version(g)
    except IntegrityError as exc:  # another admin took this version number
        raise Conflict("another version was published at the same time: reload") from exc


def versions(storage: Storage) -> list[GuidelinesVersion]:
    """Every version, newest first (without their texts)."""
    with storage.read() as s:
        rows = s.execute(
            select(
                Guidelines.version, Guidelines.important, Guidelines.author, Guidelines.created_at
            ).order_by(Guidelines.version.desc())
        ).all()
    return [GuidelinesVersion(v, bool(imp), a, iso(at)) for v, imp, a, at in rows]


def _status(conn: Connection, who: AnnotatorInfo) -> GuidelinesStatus:
    gate = q.gate(conn, who.id)
    if gate.current is None:
        return GuidelinesStatus(None, None, gate.acked, False, False)
    text, important, author, at = conn.execute(
        select(
            Guidelines.text, Guidelines.important, Guidelines.author, Guidelines.created_at
        ).where(Guidelines.version == gate.current)
    ).one()
    current = GuidelinesVersion(gate.current, bool(important), author, iso(at))
    due = bool(gate.due)
    return GuidelinesStatus(current, text, gate.acked, due, due and not who.is_admin)


def status(storage: Storage, who: AnnotatorInfo) -> GuidelinesStatus:
    """The current guidelines, and whether ``who`` must acknowledge them."""
    with storage.read() as s:
        return _status(s.connection(), who)


def acknowledge(storage: Storage, who: AnnotatorInfo, version: int) -> GuidelinesStatus:
    """``who`` has read ``version``, which must be the current one (acknowledging a version
    again changes nothing)."""
    try:
        with storage.write() as s:
            lock_writer(s, who)
            current = s.scalar(select(func.max(Guidelines.version)))
            done = s.get(GuidelinesAck, (who.id, version))
            if done is None:
                if current is None or s.get(Guidelines, version) is None:
                    raise NotFound(f"guidelines version {version} not found")
                if version != current:
                    raise Conflict(
                        f"guidelines version {version} is not the current one: "
                        f"read version {current} and acknowledge it"
                    )
                s.add(GuidelinesAck(annotator_id=who.id, version=version, acked_at=now()))
    except IntegrityError:  # the same acknowledgement, sent twice at once: it is there
        pass
    return status(storage, who)


def refuse_start(conn: Connection, who: AnnotatorInfo) -> NoReturn:
    """Why a new conversation of ``who``'s was not inserted: disabled (403), or the
    guidelines to read first (409)."""
    gate = q.gate(conn, who.id)
    if gate.who_disabled is None or gate.who_disabled:
        raise Forbidden(f"annotator {who.name!r} is disabled")
    if not gate.due:  # acknowledged (or re-enabled) meanwhile
        raise Conflict("the guidelines or your account changed meanwhile: try again")
    if gate.acked is None:
        raise Conflict(
            f"read and acknowledge the guidelines (version {gate.current}) before your "
            "first conversation: open /guidelines"
        )
    raise Conflict(
        f"the guidelines changed in an important way: read and acknowledge version "
        f"{gate.current} before your next conversation: open /guidelines"
    )


@dataclass
class GuidelinesTally:
    """The export's record of the guidelines each line was collected under: conversations by
    version, and each file's lines as runs of ``[version, lines]`` in the file's order."""

    conversations: Counter[int | None] = field(default_factory=Counter)
    lines: dict[str, list[list[int | None]]] = field(default_factory=dict)

    def add_line(self, path: str, version: int | None) -> None:
        runs = self.lines.setdefault(path, [])
        if runs and runs[-1][0] == version:
            runs[-1][1] = (runs[-1][1] or 0) + 1
        else:
            runs.append([version, 1])

    def manifest(self) -> dict[str, Any] | None:
        """The manifest's ``guidelines`` entry; None when no conversation has a version
        (the manifest then stays as it was before guidelines existed)."""
        if not any(v is not None for v in self.conversations):
            return None
        rows: Counter[int | None] = Counter()
        for runs in self.lines.values():
            for version, n in runs:
                rows[version] += n or 0

        def by_version(counts: Counter[int | None]) -> dict[str, int]:
            keys = sorted((v for v in counts if v is not None), key=int)
            out = {str(v): counts[v] for v in keys}
            if counts[None]:
                out["none"] = counts[None]
            return out

        return {
            "conversations": by_version(self.conversations),
            "rows": by_version(rows),
            "lines": {path: self.lines[path] for path in sorted(self.lines)},
        }
