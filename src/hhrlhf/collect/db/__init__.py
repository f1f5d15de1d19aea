"""The collection database. :class:`Storage` is the only code that touches it."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import random
import secrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DBSession
from sqlalchemy.orm import joinedload, selectinload, sessionmaker

from ...errors import (
    Conflict,
    Forbidden,
    HHError,
    Invalid,
    NotFound,
    UnknownNameError,
)
from ..finish import cut_reason
from .engine import WriterLock, bookkeeping, is_sqlite, make_engine, sqlite_file
from .models import Annotator, Base, Candidate, Comparison, Conversation, Session, Turn

__all__ = [
    "Storage",
    "AnnotatorInfo",
    "hash_token",
    "new_token",
    "Base",
    "render_prefix",
    "ROLES",
    "MODES",
]

ROLES = ("annotator", "admin")
MODES = ("helpful", "red-team")
SLOTS = ("a", "b")
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _aware(value: datetime | None) -> datetime | None:
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def new_token() -> str:
    """A random login token (256 bits)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def render_prefix(history: list[tuple[str, str]], human: str) -> str:
    """The HH transcript up to the next assistant turn: ``"\\n\\nHuman: h1\\n\\nAssistant: a1 ... \\n\\nHuman: ht\\n\\nAssistant:"``."""
    parts = [f"\n\nHuman: {h}\n\nAssistant: {a}" for h, a in history]
    parts.append(f"\n\nHuman: {human}\n\nAssistant:")
    return "".join(parts)


@dataclass(frozen=True)
class AnnotatorInfo:
    id: int
    name: str
    role: str
    disabled: bool
    member_id: int
    attributes: dict = field(default_factory=dict, compare=False)
    created_at: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "role": self.role,
            "disabled": self.disabled,
            "member_id": self.member_id,
            "attributes": self.attributes,
            "created_at": self.created_at,
        }


def _info(a: Annotator) -> AnnotatorInfo:
    return AnnotatorInfo(
        a.id, a.name, a.role, a.disabled, a.member_id, dict(a.attributes or {}), _iso(a.created_at)
    )


@dataclass(frozen=True)
class PendingCandidate:
    slot: str
    backend: str


@dataclass(frozen=True)
class Prompt:
    """What a backend answers: the conversation so far and the new human message."""

    history: tuple[tuple[str, str], ...]
    human: str
    prefix: str
    #: the conversation's mode: helpful | red-team (a rerank backend selects by it)
    mode: str = "helpful"

    @property
    def messages(self) -> list[dict]:
        out = []
        for h, a in self.history:
            out.append({"role": "user", "content": h})
            out.append({"role": "assistant", "content": a})
        out.append({"role": "user", "content": self.human})
        return out


class Storage:
    """All reads and writes of the collection database, one short transaction per call."""

    def __init__(self, url: str):
        self.url = url
        self.engine = make_engine(url)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        if is_sqlite(url):
            # writers queue on a lock (in this process, and across processes on the same file)
            # instead of SQLite's sleeping busy handler, which makes the tail latency of
            # concurrent writes long; readers never wait (WAL)
            self._write_lock = WriterLock(sqlite_file(url))
            self.read_engine = make_engine(url, writer=False)
        else:
            self._write_lock = contextlib.nullcontext()
            self.read_engine = self.engine
        self._readers = sessionmaker(self.read_engine, expire_on_commit=False)

    # -- schema ---------------------------------------------------------------------------
    def _alembic_config(self, connection):
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        cfg.set_main_option("sqlalchemy.url", self.url.replace("%", "%%"))
        cfg.attributes["connection"] = connection
        return cfg

    def upgrade(self, revision: str = "head") -> None:
        """Create or migrate the database (``alembic upgrade head``)."""
        from alembic import command

        with self.engine.begin() as connection:
            command.upgrade(self._alembic_config(connection), revision)

    def downgrade(self, revision: str = "base") -> None:
        from alembic import command

        with self.engine.begin() as connection:
            command.downgrade(self._alembic_config(connection), revision)

    def revision(self) -> str | None:
        """The database's migration revision (None for an empty database)."""
        from alembic.runtime.migration import MigrationContext

        with self.engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()

    def head(self) -> str:
        from alembic.script import ScriptDirectory

        return ScriptDirectory.from_config(self._alembic_config(None)).get_current_head()

    def check_current(self) -> None:
        current = self.revision()
        if current != self.head():
            raise HHError(
                f"{self.url}: database schema is at {current or 'nothing'}, the code needs "
                f"{self.head()}; run `hh serve` (it migrates) first"
            )

    def dispose(self) -> None:
        if isinstance(self._write_lock, WriterLock):
            self._write_lock.close()
        self.engine.dispose()
        self.read_engine.dispose()

    def _read(self) -> DBSession:
        """A session for reading (SQLite: a deferred transaction, concurrent with a writer)."""
        return self._readers()

    @contextlib.contextmanager
    def _write(self, *, durable: bool = True) -> Iterator[DBSession]:
        """One write transaction, committed on exit (SQLite: BEGIN IMMEDIATE, one writer at a time).

        ``durable=False``: state the app can redo after a power loss (SQLite: NORMAL sync;
        see :func:`.engine.bookkeeping`).
        """
        with contextlib.ExitStack() as stack:
            if not durable:
                stack.enter_context(bookkeeping())
            with self._write_lock, self._sessions() as s, s.begin():
                yield s

    # kept for tests that add rows by hand
    def _session(self) -> DBSession:
        return self._sessions()

    # -- annotators -------------------------------------------------------------------------
    def add_annotator(
        self, name: str, role: str = "annotator", attributes: dict | None = None
    ) -> tuple[AnnotatorInfo, str]:
        """Create an annotator; returns it and its token (only the hash is stored)."""
        name = name.strip()
        if not name or len(name) > 200:
            raise HHError("annotator name must be 1-200 characters")
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
            raise HHError(f"annotator name {name!r} holds a control character")
        if role not in ROLES:
            raise UnknownNameError("role", role, list(ROLES))
        token = new_token()
        with self._write() as s:
            if s.scalar(select(Annotator.id).where(Annotator.name == name)) is not None:
                raise HHError(f"annotator {name!r} already exists")
            member_id = (s.scalar(select(func.max(Annotator.member_id))) or 0) + 1
            a = Annotator(
                name=name,
                token_hash=hash_token(token),
                role=role,
                disabled=False,
                attributes={"is_upworker": False, **(attributes or {})},
                member_id=member_id,
                created_at=now(),
            )
            s.add(a)
            s.flush()
            info = _info(a)
        return info, token

    def list_annotators(self) -> list[AnnotatorInfo]:
        with self._read() as s:
            return [_info(a) for a in s.scalars(select(Annotator).order_by(Annotator.id))]

    def set_disabled(self, name: str, disabled: bool = True) -> AnnotatorInfo:
        with self._write() as s:
            a = s.scalar(select(Annotator).where(Annotator.name == name))
            if a is None:
                raise HHError(f"no annotator named {name!r}")
            a.disabled = disabled
            if disabled:
                s.execute(Session.__table__.delete().where(Session.annotator_id == a.id))
            return _info(a)

    def annotator_by_name(self, name: str) -> AnnotatorInfo | None:
        with self._read() as s:
            a = s.scalar(select(Annotator).where(Annotator.name == name))
            return _info(a) if a else None

    def annotator_by_token(self, token: str) -> AnnotatorInfo | None:
        """The annotator holding ``token`` (disabled ones included: the caller decides)."""
        if not token or len(token) > 200:
            return None
        digest = hash_token(token)
        with self._read() as s:
            a = s.scalar(select(Annotator).where(Annotator.token_hash == digest))
            if a is None or not hmac.compare_digest(a.token_hash, digest):
                return None
            return _info(a)

    def rotate_token(self, name: str) -> str:
        token = new_token()
        with self._write() as s:
            a = s.scalar(select(Annotator).where(Annotator.name == name))
            if a is None:
                raise HHError(f"no annotator named {name!r}")
            a.token_hash = hash_token(token)
            s.execute(Session.__table__.delete().where(Session.annotator_id == a.id))
        return token

    # -- sessions ---------------------------------------------------------------------------
    def create_session(self, annotator_id: int, hours: float) -> tuple[str, str]:
        """A new cookie session: returns (cookie value, CSRF token)."""
        cookie, csrf = new_token(), new_token()
        with self._write(durable=False) as s:
            t = now()
            s.add(
                Session(
                    id=hash_token(cookie),
                    annotator_id=annotator_id,
                    csrf_token=csrf,
                    created_at=t,
                    expires_at=t + timedelta(hours=hours),
                )
            )
            # housekeeping: expired sessions go
            s.execute(Session.__table__.delete().where(Session.expires_at < t))
        return cookie, csrf

    def session_annotator(self, cookie: str) -> tuple[AnnotatorInfo, str] | None:
        """(annotator, CSRF token) of a live session, or None."""
        if not cookie or len(cookie) > 200:
            return None
        with self._read() as s:
            row = s.execute(
                select(Session, Annotator)
                .join(Annotator, Annotator.id == Session.annotator_id)
                .where(Session.id == hash_token(cookie))
            ).first()
            if row is None:
                return None
            sess, a = row
            if _aware(sess.expires_at) < now():
                return None
            return _info(a), sess.csrf_token

    def delete_session(self, cookie: str) -> None:
        with self._write(durable=False) as s:
            s.execute(Session.__table__.delete().where(Session.id == hash_token(cookie)))

    # -- conversations ------------------------------------------------------------------------
    def _conversation(
        self, s: DBSession, who: AnnotatorInfo, conversation_id: int, *, lock: bool = False
    ) -> Conversation:
        q = select(Conversation).where(Conversation.id == conversation_id)
        if lock and not is_sqlite(self.url):
            q = q.with_for_update()
        c = s.scalar(q)
        if c is None or (c.annotator_id != who.id and not who.is_admin):
            raise NotFound(f"conversation {conversation_id} not found")
        return c

    def create_conversation(
        self,
        who: AnnotatorInfo,
        mode: str,
        task_description: str,
        *,
        backend: str | None = None,
        red_team_continue: str | None = None,
    ) -> dict:
        if mode not in MODES:
            raise Invalid(f"mode {mode!r}; expected one of: {', '.join(MODES)}")
        task_description = task_description.strip()
        if not task_description:
            raise Invalid("task_description is empty: say what you want to do")
        with self._write() as s:
            c = Conversation(
                uid=uuid.uuid4().hex,
                annotator_id=who.id,
                mode=mode,
                task_description=task_description,
                status="open",
                backend=backend if mode == "red-team" else None,
                red_team_continue=red_team_continue if mode == "red-team" else None,
                created_at=now(),
            )
            s.add(c)
            s.flush()
            return self._conversation_summary(c, 0)

    @staticmethod
    def _conversation_summary(c: Conversation, turns: int) -> dict:
        return {
            "id": c.id,
            "mode": c.mode,
            "task_description": c.task_description,
            "status": c.status,
            "turns": turns,
            "created_at": _iso(c.created_at),
            "finished_at": _iso(c.finished_at),
        }

    def list_conversations(self, who: AnnotatorInfo, *, all_: bool | None = None) -> list[dict]:
        """One's own conversations, newest first (admins: everyone's unless ``all_`` is False)."""
        turns = (
            select(Turn.conversation_id, func.count(Turn.id).label("n"))
            .group_by(Turn.conversation_id)
            .subquery()
        )
        q = (
            select(Conversation, func.coalesce(turns.c.n, 0), Annotator.name)
            .outerjoin(turns, turns.c.conversation_id == Conversation.id)
            .join(Annotator, Annotator.id == Conversation.annotator_id)
            .order_by(Conversation.id.desc())
        )
        show_all = who.is_admin if all_ is None else (all_ and who.is_admin)
        if not show_all:
            q = q.where(Conversation.annotator_id == who.id)
        with self._read() as s:
            out = []
            for c, n, name in s.execute(q):
                d = self._conversation_summary(c, n)
                if who.is_admin:
                    d["annotator"] = name
                out.append(d)
            return out

    def get_conversation(self, who: AnnotatorInfo, conversation_id: int) -> dict:
        """The whole conversation; backend names only for admins."""
        with self._read() as s:
            c = self._conversation(s, who, conversation_id)
            turns = s.scalars(
                select(Turn)
                .where(Turn.conversation_id == c.id)
                .order_by(Turn.index)
                .options(selectinload(Turn.candidates), selectinload(Turn.comparisons))
            ).all()
            out = {
                "id": c.id,
                "mode": c.mode,
                "task_description": c.task_description,
                "status": c.status,
                "comment": c.comment,
                "rating": c.rating,
                "created_at": _iso(c.created_at),
                "finished_at": _iso(c.finished_at),
                "turns": [self._turn_dict(t, admin=who.is_admin) for t in turns],
            }
            if who.is_admin:
                out["backend"] = c.backend
                out["red_team_continue"] = c.red_team_continue
            return out

    @staticmethod
    def _turn_dict(t: Turn, *, admin: bool) -> dict:
        pick = next((x for x in t.comparisons if x.kind == "pick"), None)
        edit = next((x for x in t.comparisons if x.kind == "edit"), None)
        cands = []
        for cand in t.candidates:
            d = {
                "slot": cand.slot,
                "text": cand.text,
                "cut": cand.cut,
                "cut_reason": cut_reason(cand.cut, cand.finish_reason),
                "status": cand.status,
            }
            if cand.status == "failed":
                d["error"] = "the response could not be generated; retry"
            if admin:
                d.update(
                    backend=cand.backend,
                    model=cand.model,
                    params=cand.params,
                    finish_reason=cand.finish_reason,
                    latency_ms=cand.latency_ms,
                    error=cand.error,
                )
            cands.append(d)
        return {
            "id": t.id,
            "index": t.index,
            "human": t.human,
            "status": t.status,
            "candidates": cands,
            "pick": pick.pick if pick else None,
            "strength": pick.strength if pick else None,
            "edit": edit.chosen_text if edit else None,
            "continued": t.continued,
            "decided_at": _iso(pick.decided_at) if pick else None,
        }

    def finish_conversation(
        self,
        who: AnnotatorInfo,
        conversation_id: int,
        comment: str | None = None,
        rating: int | None = None,
    ) -> dict:
        with self._write() as s:
            c = self._conversation(s, who, conversation_id, lock=True)
            if c.annotator_id != who.id:
                raise Forbidden("only the conversation's annotator can finish it")
            if c.mode == "red-team":
                if rating is None:
                    raise Invalid("a red-team conversation needs a rating, 0 to 4")
                if not 0 <= rating <= 4:
                    raise Invalid("rating must be 0 to 4")
            elif rating is not None:
                raise Invalid("only red-team conversations take a rating")
            comment = (comment or "").strip() or None
            if c.status == "finished":
                if (c.comment, c.rating) == (comment, rating):
                    return self._conversation_summary(c, len(c.turns))
                raise Conflict(f"conversation {c.id} is already finished")
            c.status = "finished"
            c.comment = comment
            c.rating = rating
            c.finished_at = now()
            return self._conversation_summary(c, len(c.turns))

    # -- turns ------------------------------------------------------------------------------
    def create_turn(
        self,
        who: AnnotatorInfo,
        conversation_id: int,
        text: str,
        backends: tuple[str, str] | Callable[[str, str | None], tuple[str, str]],
        *,
        lease: tuple[str, float] | None = None,
    ) -> dict:
        """A new human message: a pending turn with two pending candidates (slot a shown as A).

        ``backends``: the two backends' names, or a function of the conversation's mode and
        backend that returns them. ``lease``: (owner, seconds): the turn is created already
        leased to ``owner`` for generating (one transaction where :meth:`acquire_lease` would be
        a second); the answer then holds the ``prompt`` and the ``pending`` candidates too.
        """
        text = text.strip()
        if not text:
            raise Invalid("the message is empty")
        with self._write() as s:
            c = self._conversation(s, who, conversation_id, lock=True)
            if c.annotator_id != who.id:
                raise Forbidden("only the conversation's annotator can write in it")
            if c.status != "open":
                raise Conflict(f"conversation {c.id} is finished")
            turns = s.scalars(
                select(Turn).where(Turn.conversation_id == c.id).order_by(Turn.index)
            ).all()
            if turns and turns[-1].continued is None:
                raise Conflict(
                    "the last turn has no choice yet: pick a response before writing again",
                )
            history = [(t.human, t.continued) for t in turns]
            if callable(backends):
                backends = backends(c.mode, c.backend)
            t = Turn(
                conversation_id=c.id,
                index=len(turns),
                human=text,
                prefix=render_prefix(history, text),
                status="pending",
                created_at=now(),
            )
            if lease is not None:
                t.status = "generating"
                t.lease_owner = lease[0]
                t.lease_until = t.created_at + timedelta(seconds=lease[1])
            s.add(t)
            s.flush()
            for slot, backend in zip(SLOTS, backends, strict=True):
                s.add(Candidate(turn_id=t.id, slot=slot, backend=backend, status="pending"))
            try:
                s.flush()
            except IntegrityError as exc:  # a concurrent message took this index
                raise Conflict("another message was sent at the same time") from exc
            out = {"id": t.id, "index": t.index, "conversation_id": c.id, "status": t.status}
            if lease is not None:
                out["prompt"] = Prompt(tuple(history), t.human, t.prefix, c.mode)
                out["pending"] = [
                    PendingCandidate(slot, backend)
                    for slot, backend in zip(SLOTS, backends, strict=True)
                ]
            return out

    def turn_owner(self, who: AnnotatorInfo, turn_id: int) -> dict:
        """Authorise access to a turn (404 if not one's own); returns its status."""
        with self._read() as s:
            t = s.get(Turn, turn_id)
            if t is None:
                raise NotFound(f"turn {turn_id} not found")
            c = s.get(Conversation, t.conversation_id)
            if c.annotator_id != who.id and not who.is_admin:
                raise NotFound(f"turn {turn_id} not found")
            return {"id": t.id, "status": t.status, "conversation_id": c.id}

    def acquire_lease(
        self, turn_id: int, owner: str, seconds: float
    ) -> tuple[Prompt, list[PendingCandidate]] | None:
        """Take the right to generate a turn (one generator per turn across workers), or None."""
        t0 = now()
        with self._write(durable=False) as s:
            res = s.execute(
                update(Turn)
                .where(Turn.id == turn_id)
                .where(
                    or_(
                        Turn.status == "pending",
                        (Turn.status == "generating") & (Turn.lease_until < t0),
                    )
                )
                .values(
                    status="generating",
                    lease_owner=owner,
                    lease_until=t0 + timedelta(seconds=seconds),
                )
            )
            if res.rowcount != 1:
                return None
            t = s.get(Turn, turn_id)
            history = s.execute(
                select(Turn.human, Turn.continued)
                .where(Turn.conversation_id == t.conversation_id, Turn.index < t.index)
                .order_by(Turn.index)
            ).all()
            prompt = Prompt(
                tuple((h, a) for h, a in history), t.human, t.prefix, t.conversation.mode
            )
            pending = [
                PendingCandidate(c.slot, c.backend)
                for c in s.scalars(
                    select(Candidate).where(Candidate.turn_id == turn_id).order_by(Candidate.slot)
                )
                if c.status != "ready"
            ]
            return prompt, pending

    def renew_lease(self, turn_id: int, owner: str, seconds: float) -> bool:
        """Extend a lease this owner still holds (a live run's heartbeat); False if it was lost."""
        with self._write(durable=False) as s:
            res = s.execute(
                update(Turn)
                .where(Turn.id == turn_id, Turn.lease_owner == owner, Turn.status == "generating")
                .values(lease_until=now() + timedelta(seconds=seconds))
            )
            return res.rowcount == 1

    def save_candidate(self, turn_id: int, slot: str, *, owner: str, **fields) -> bool:
        """Store one generated (or failed) candidate; False if the lease was lost meanwhile.

        ``fields``: ``text``, ``raw_text``, ``cut``, ``model``, ``model_type``, ``num_params``,
        ``params``, ``finish_reason``, ``latency_ms``, ``error``.
        """
        with self._write(durable=False) as s:
            t = s.get(Turn, turn_id)
            if t is None or t.lease_owner != owner or t.status != "generating":
                return False
            c = s.scalar(
                select(Candidate).where(Candidate.turn_id == turn_id, Candidate.slot == slot)
            )
            _apply_candidate(c, **fields)
            return True

    def finish_generation(self, turn_id: int, owner: str, results: dict[str, dict]) -> str | None:
        """Store every generated (or failed) candidate and release the lease, in one transaction.

        ``results`` maps a slot to :meth:`save_candidate`'s keyword arguments. Returns the turn's
        new status (ready or failed), or None if the lease was lost meanwhile (nothing stored).
        """
        with self._write(durable=False) as s:
            t = s.get(Turn, turn_id)
            if t is None or t.lease_owner != owner or t.status != "generating":
                return None
            cands = s.scalars(select(Candidate).where(Candidate.turn_id == turn_id)).all()
            for c in cands:
                if c.slot in results:
                    _apply_candidate(c, **results[c.slot])
            t.status = "ready" if all(c.status == "ready" for c in cands) else "failed"
            if t.status == "ready":
                t.ready_at = now()
            t.lease_owner = None
            t.lease_until = None
            return t.status

    def end_generation(self, turn_id: int, owner: str) -> str:
        """Release the lease: the turn becomes ready (both candidates) or failed."""
        with self._write(durable=False) as s:
            t = s.get(Turn, turn_id)
            if t.lease_owner != owner or t.status != "generating":
                return t.status
            statuses = s.scalars(select(Candidate.status).where(Candidate.turn_id == turn_id)).all()
            t.status = "ready" if all(x == "ready" for x in statuses) else "failed"
            if t.status == "ready":
                t.ready_at = now()
            t.lease_owner = None
            t.lease_until = None
            return t.status

    def turn_state(self, turn_id: int) -> dict:
        """Status and candidates of a turn (no authorisation: call :meth:`turn_owner` first)."""
        with self._read() as s:
            t = s.get(Turn, turn_id)
            cands = s.scalars(
                select(Candidate).where(Candidate.turn_id == turn_id).order_by(Candidate.slot)
            ).all()
            return {
                "id": t.id,
                "index": t.index,
                "status": t.status,
                "lease_until": _aware(t.lease_until),
                "candidates": [
                    {
                        "slot": c.slot,
                        "status": c.status,
                        "text": c.text,
                        "cut": c.cut,
                        "cut_reason": cut_reason(c.cut, c.finish_reason),
                        "error": c.error,
                    }
                    for c in cands
                ],
            }

    def retry_turn(self, who: AnnotatorInfo, turn_id: int) -> str:
        """Failed candidates back to pending; nothing else is touched."""
        self.turn_owner(who, turn_id)
        with self._write(durable=False) as s:
            t = s.get(Turn, turn_id)
            if t.status in ("pending", "generating", "ready"):
                return t.status
            s.execute(
                update(Candidate)
                .where(Candidate.turn_id == turn_id, Candidate.status == "failed")
                .values(status="pending", error=None)
            )
            t.status = "pending"
            return "pending"

    # -- choices ----------------------------------------------------------------------------
    def record_choice(
        self,
        who: AnnotatorInfo,
        turn_id: int,
        *,
        pick: str,
        strength: int | None,
        strength_points: int,
        edit: str | None = None,
        request_id: str | None = None,
    ) -> dict:
        """Store the annotator's choice; returns the turn once the transaction has committed.

        A repeat (same ``request_id``, or the same pick, strength and edit) returns the stored
        answer; a different choice for a decided turn is a 409. ``strength`` None: allowed only
        when both responses are the same text (an identical pair: nothing to compare), stored
        as 1, the point the instructions give for "about the same"; an identical pair is never
        exported, reviewed, or a leaderboard game.
        """
        if pick not in SLOTS:
            raise Invalid("pick must be 'a' or 'b'")
        if strength is not None and not 1 <= strength <= strength_points:
            raise Invalid(f"strength must be 1 to {strength_points}")
        if edit is not None:
            edit = edit.strip()
            if not edit:
                raise Invalid("the edit is empty")
        for attempt in range(2):
            try:
                return self._record_choice(who, turn_id, pick, strength, edit, request_id)
            except IntegrityError:
                # another request stored a choice first: answer as a repeat, or 409
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _record_choice(self, who, turn_id, pick, strength, edit, request_id) -> dict:
        with self._write_lock, self._sessions() as s:
            with s.begin():
                # one statement for the turn, its conversation, candidates and comparisons
                # (at most 2 x 2 joined rows): each round trip is a wait on a busy server
                t = (
                    s.scalars(
                        select(Turn)
                        .where(Turn.id == turn_id)
                        .options(
                            joinedload(Turn.conversation),
                            joinedload(Turn.candidates),
                            joinedload(Turn.comparisons),
                        )
                    )
                    .unique()
                    .one_or_none()
                )
                if t is None:
                    raise NotFound(f"turn {turn_id} not found")
                c = t.conversation
                if c.annotator_id != who.id and not who.is_admin:
                    raise NotFound(f"turn {turn_id} not found")
                if strength is None:
                    texts = {x.slot: x.text for x in t.candidates}
                    if t.status != "ready" or texts.get("a") != texts.get("b"):
                        raise Invalid("strength is required: the two responses differ")
                    strength = 1
                existing = list(t.comparisons)
                stored = next((x for x in existing if x.kind == "pick"), None)
                if stored is not None:
                    stored_edit = next((x.chosen_text for x in existing if x.kind == "edit"), None)
                    same = (stored.pick, stored.strength, stored_edit) == (pick, strength, edit)
                    if (request_id and stored.request_id == request_id) or same:
                        return self._turn_dict(t, admin=who.is_admin)
                    raise Conflict(
                        f"turn {turn_id} already has a different choice ({stored.pick}, "
                        f"strength {stored.strength})",
                    )
                if c.annotator_id != who.id:
                    raise Forbidden("only the conversation's annotator can choose")
                if c.status != "open":
                    raise Conflict(f"conversation {c.id} is finished")
                if t.status != "ready":
                    raise Conflict(
                        f"turn {turn_id} is not ready for a choice (status {t.status})",
                    )
                if edit is not None and c.mode != "helpful":
                    raise Invalid("edits are for helpful conversations only")
                cands = {x.slot: x for x in t.candidates}
                other = "b" if pick == "a" else "a"
                picked_text, other_text = cands[pick].text, cands[other].text
                decided = now()
                common = dict(
                    turn_id=t.id,
                    annotator_id=who.id,
                    pick=pick,
                    strength=strength,
                    request_id=request_id,
                    shown_at=t.ready_at,
                    decided_at=decided,
                )
                t.comparisons.append(
                    Comparison(
                        kind="pick",
                        chosen_slot=pick,
                        rejected_slot=other,
                        chosen_text=picked_text,
                        rejected_text=other_text,
                        **common,
                    )
                )
                if edit is not None and edit != picked_text:
                    t.comparisons.append(
                        Comparison(
                            kind="edit",
                            chosen_slot=None,
                            rejected_slot=pick,
                            chosen_text=edit,
                            rejected_text=picked_text,
                            **common,
                        )
                    )
                if edit is not None:
                    t.continued = edit
                elif c.mode == "red-team" and c.red_team_continue == "other":
                    t.continued = other_text
                else:
                    t.continued = picked_text
                s.flush()
            # committed: only now is the choice acknowledged (the objects are not expired)
            return self._turn_dict(t, admin=who.is_admin)

    # -- export -----------------------------------------------------------------------------
    def iter_conversations_for_export(self, batch: int = 500) -> Iterator[dict]:
        """Every conversation with its turns, candidates and comparisons, oldest first.

        Read ``batch`` conversations at a time in four statements (conversations, their
        annotators, turns, and the turns' candidates and comparisons), not three per
        conversation: an export of thousands of conversations was mostly round trips.
        """
        with self._read() as s:
            ids = s.scalars(select(Conversation.id).order_by(Conversation.id)).all()
            for start in range(0, len(ids), batch):
                chunk = ids[start : start + batch]
                convs = s.scalars(
                    select(Conversation).where(Conversation.id.in_(chunk)).order_by(Conversation.id)
                ).all()
                people = {
                    a.id: a
                    for a in s.scalars(
                        select(Annotator).where(Annotator.id.in_({c.annotator_id for c in convs}))
                    )
                }
                turns: dict[int, list[Turn]] = {c.id: [] for c in convs}
                for t in s.scalars(
                    select(Turn)
                    .where(Turn.conversation_id.in_(chunk))
                    .order_by(Turn.conversation_id, Turn.index)
                    .options(selectinload(Turn.candidates), selectinload(Turn.comparisons))
                ):
                    turns[t.conversation_id].append(t)
                for c in convs:
                    yield _export_dict(c, people[c.annotator_id], turns[c.id])
                s.expunge_all()  # one batch's rows in memory at a time

    def export_stamp(self) -> tuple:
        """What the export depends on, in two statements: equal stamps, equal exports.

        Rows are only added (conversations, turns, comparisons) or changed once (a conversation
        finished, a turn continued), so counts and highest ids see every change; the
        annotators' attributes (``is_upworker``) can be edited at any time and are part of it.
        """
        with self._read() as s:
            row = s.execute(
                select(
                    select(func.count()).select_from(Conversation).scalar_subquery(),
                    select(func.max(Conversation.id)).scalar_subquery(),
                    select(func.count())
                    .where(Conversation.status == "finished")
                    .select_from(Conversation)
                    .scalar_subquery(),
                    select(func.max(Turn.id)).scalar_subquery(),
                    select(func.count())
                    .where(Turn.continued.is_not(None))
                    .select_from(Turn)
                    .scalar_subquery(),
                    select(func.count()).select_from(Comparison).scalar_subquery(),
                    select(func.max(Comparison.id)).scalar_subquery(),
                )
            ).one()
            people = s.execute(
                select(Annotator.id, Annotator.member_id, Annotator.attributes).order_by(
                    Annotator.id
                )
            ).all()
        return tuple(row) + (repr([(i, m, sorted((a or {}).items())) for i, m, a in people]),)

    def counts(self) -> dict:
        with self._read() as s:
            return {
                name: s.scalar(select(func.count()).select_from(model))
                for name, model in (
                    ("annotators", Annotator),
                    ("conversations", Conversation),
                    ("turns", Turn),
                    ("comparisons", Comparison),
                )
            }


def _export_dict(c: Conversation, a: Annotator, turns: list[Turn]) -> dict:
    return {
        "id": c.id,
        "uid": c.uid,
        "mode": c.mode,
        "status": c.status,
        "task_description": c.task_description,
        "rating": c.rating,
        "backend": c.backend,
        "annotator": {
            "name": a.name,
            "member_id": a.member_id,
            "attributes": dict(a.attributes or {}),
        },
        "turns": [
            {
                "index": t.index,
                "human": t.human,
                "prefix": t.prefix,
                "continued": t.continued,
                "candidates": {
                    x.slot: {
                        "text": x.text,
                        "cut": x.cut,
                        "backend": x.backend,
                        "model_type": x.model_type,
                        "num_params": x.num_params,
                    }
                    for x in t.candidates
                },
                "comparisons": [
                    {
                        "kind": x.kind,
                        "pick": x.pick,
                        "strength": x.strength,
                        "chosen_slot": x.chosen_slot,
                        "rejected_slot": x.rejected_slot,
                        "chosen_text": x.chosen_text,
                        "rejected_text": x.rejected_text,
                    }
                    for x in t.comparisons
                ],
            }
            for t in turns
        ],
    }


def _apply_candidate(
    c: Candidate,
    *,
    text: str | None,
    raw_text: str | None,
    cut: bool = False,
    model: str | None = None,
    model_type: str | None = None,
    num_params: str | None = None,
    params: dict | None = None,
    finish_reason: str | None = None,
    latency_ms: int | None = None,
    error: str | None = None,
) -> None:
    c.status = "failed" if error else "ready"
    c.text = text
    c.raw_text = raw_text
    c.cut = cut
    c.model = model
    c.model_type = model_type
    c.num_params = num_params
    c.params = params or {}
    c.finish_reason = finish_reason
    c.latency_ms = latency_ms
    c.error = error
    c.attempts = (c.attempts or 0) + 1


def choose_backends(
    names: list[str],
    pairing: str,
    rng: random.Random,
    *,
    weights: list[float] | None = None,
    rerank: frozenset[str] | set[str] = frozenset(),
) -> tuple[str, str]:
    """Which backends answer as A and B (docs/collect.md, "How pairs are drawn").

    ``random``: the first backend is drawn by ``weights`` (default equal) among ``names``; a
    ``rerank`` one answers both slots (its best two); otherwise the second is drawn by weight
    among the other plain backends (the same one again when it is the only one), and the two
    are put in A and B in random order. So each backend is drawn first with a probability of
    its weight over the total, whatever its kind. ``fixed``: the first answers A, the second B.
    """
    if not names:
        raise HHError("no backend is configured")
    if weights is None:
        weights = [1.0] * len(names)
    if pairing == "fixed" or len(names) == 1:
        a, b = names[0], names[1] if len(names) > 1 else names[0]
        if a in rerank or b in rerank:
            a = b = a if a in rerank else b
        return a, b
    first = rng.choices(names, weights)[0]
    if first in rerank:
        return first, first
    others = [(n, w) for n, w in zip(names, weights, strict=True) if n != first and n not in rerank]
    if not others:
        return first, first
    second = rng.choices([n for n, _ in others], [w for _, w in others])[0]
    return (first, second) if rng.random() < 0.5 else (second, first)
