"""Annotators and their logins: accounts, tokens (only their hashes are stored) and
browser sessions."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import weakref
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select

from ...errors import Conflict, HHError, Invalid, NotFound, UnknownNameError
from ..db import Storage
from ..db.models import Annotator, Session
from ..domain import (
    ROLES,
    AnnotatorInfo,
    aware,
    iso,
    now,
)

#: deletes of login sessions (plain SQL: no session object is loaded to be deleted)
_delete_sessions = delete(Session).execution_options(synchronize_session=False)

#: logins read by one statement of :func:`logins_now` at most
REFRESH_BATCH = 500

#: what forgets this process's remembered logins of a database (``web/logins.py``'s memory
#: of them), called after every change to who may log in
_forgetters: weakref.WeakKeyDictionary[Storage, list[Callable[[], None]]] = (
    weakref.WeakKeyDictionary()
)
_forgetters_lock = threading.Lock()


def on_login_change(storage: Storage, forget: Callable[[], None]) -> None:
    """Call ``forget`` after every change made here to who may log in to ``storage``."""
    with _forgetters_lock:
        _forgetters.setdefault(storage, []).append(forget)


def forget_logins(storage: Storage) -> None:
    """Tell this process's memories of logins (:func:`on_login_change`) to forget them: who
    may log in has changed (a disable, a role, a rotated token, a logout)."""
    for forget in tuple(_forgetters.get(storage, ())):
        forget()


def logins_now(
    storage: Storage, token_digests: list[str], session_ids: list[str]
) -> tuple[dict[str, AnnotatorInfo], dict[str, tuple[AnnotatorInfo, str, datetime]]]:
    """The annotators holding these token digests, and the live sessions of these ids with
    (annotator, CSRF token, expiry), in one read: a statement per kind and
    :data:`REFRESH_BATCH` logins. One not found is gone (or expired)."""
    tokens: dict[str, AnnotatorInfo] = {}
    sessions: dict[str, tuple[AnnotatorInfo, str, datetime]] = {}
    with storage.read() as s:
        for i in range(0, len(token_digests), REFRESH_BATCH):
            batch = token_digests[i : i + REFRESH_BATCH]
            for a in s.scalars(select(Annotator).where(Annotator.token_hash.in_(batch))):
                tokens[a.token_hash] = annotator_info(a)
        for i in range(0, len(session_ids), REFRESH_BATCH):
            rows = s.execute(
                select(Session, Annotator)
                .join(Annotator, Annotator.id == Session.annotator_id)
                .where(Session.id.in_(session_ids[i : i + REFRESH_BATCH]))
            )
            for sess, a in rows:
                if aware(sess.expires_at) >= now():
                    sessions[sess.id] = (annotator_info(a), sess.csrf_token, sess.expires_at)
    return tokens, sessions


def _could_be_a_name(name: str) -> bool:
    """Whether an annotator could have this name (:func:`add_annotator`'s rule): lookups
    of other text find nobody without asking the database (PostgreSQL refuses NUL)."""
    return 0 < len(name) <= 200 and not any(ord(ch) < 32 or ord(ch) == 127 for ch in name)


def add_annotator(
    storage: Storage, name: str, role: str = "annotator", attributes: dict[str, Any] | None = None
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
    with storage.write() as s:
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
        info = annotator_info(a)
    return info, token


def list_annotators(storage: Storage) -> list[AnnotatorInfo]:
    with storage.read() as s:
        return [annotator_info(a) for a in s.scalars(select(Annotator).order_by(Annotator.id))]


def set_disabled(storage: Storage, name: str, disabled: bool = True) -> AnnotatorInfo:
    """Disable (or enable) an annotator; their sessions end. Refused for the last enabled
    admin, as :func:`set_annotator` refuses it (the CLI and the web follow one rule)."""
    set_annotator(storage, name, disabled=disabled)
    info = annotator_by_name(storage, name)
    if info is None:  # deleted meanwhile
        raise NotFound(f"no annotator named {name!r}")
    return info


def annotator_by_name(storage: Storage, name: str) -> AnnotatorInfo | None:
    if not _could_be_a_name(name):
        return None
    with storage.read() as s:
        a = s.scalar(select(Annotator).where(Annotator.name == name))
        return annotator_info(a) if a else None


def annotator_by_token(storage: Storage, token: str) -> AnnotatorInfo | None:
    """The annotator holding ``token`` (disabled ones included: the caller decides)."""
    if not token or len(token) > 200:
        return None
    digest = hash_token(token)
    with storage.read() as s:
        a = s.scalar(select(Annotator).where(Annotator.token_hash == digest))
        if a is None or not hmac.compare_digest(a.token_hash, digest):
            return None
        return annotator_info(a)


def rotate_token(storage: Storage, name: str) -> str:
    if not _could_be_a_name(name):
        raise HHError(f"no annotator named {name!r}")
    token = new_token()
    with storage.write() as s:
        a = s.scalar(select(Annotator).where(Annotator.name == name))
        if a is None:
            raise HHError(f"no annotator named {name!r}")
        a.token_hash = hash_token(token)
        s.execute(_delete_sessions.where(Session.annotator_id == a.id))
    forget_logins(storage)
    return token


def create_session(storage: Storage, annotator_id: int, hours: float) -> tuple[str, str]:
    """A new cookie session: returns (cookie value, CSRF token)."""
    cookie, csrf = new_token(), new_token()
    with storage.write(durable=False) as s:
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
        s.execute(_delete_sessions.where(Session.expires_at < t))
    return cookie, csrf


def session_annotator(storage: Storage, cookie: str) -> tuple[AnnotatorInfo, str] | None:
    """(annotator, CSRF token) of a live session, or None."""
    if not cookie or len(cookie) > 200:
        return None
    found = live_session(storage, cookie)
    return None if found is None else (found[0], found[1])


def live_session(storage: Storage, cookie: str) -> tuple[AnnotatorInfo, str, datetime] | None:
    """(annotator, CSRF token, expiry) of a live session, or None."""
    with storage.read() as s:
        row = s.execute(
            select(Session, Annotator)
            .join(Annotator, Annotator.id == Session.annotator_id)
            .where(Session.id == hash_token(cookie))
        ).first()
        if row is None:
            return None
        sess, a = row
        if aware(sess.expires_at) < now():
            return None
        return annotator_info(a), sess.csrf_token, sess.expires_at


def delete_session(storage: Storage, cookie: str) -> None:
    with storage.write(durable=False) as s:
        s.execute(_delete_sessions.where(Session.id == hash_token(cookie)))
    forget_logins(storage)


def new_token() -> str:
    """A random login token (256 bits)."""
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def annotator_info(a: Annotator) -> AnnotatorInfo:
    return AnnotatorInfo(
        a.id, a.name, a.role, a.disabled, a.member_id, dict(a.attributes or {}), iso(a.created_at)
    )


def set_annotator(
    storage: Storage,
    name: str,
    *,
    role: str | None = None,
    attributes: dict[str, Any] | None = None,
    disabled: bool | None = None,
) -> AnnotatorInfo:
    """Change an annotator's role, disabled flag and/or merge attributes (a ``None`` value
    removes a key), in one transaction; returns the annotator as changed.

    A change that would leave no enabled admin is refused (409, :class:`Conflict`), from the
    web and the CLI alike: the last admin cannot be demoted or disabled, by themself or by
    anyone else (an app without an admin cannot manage annotators). The enabled admins' rows
    are locked first
    (PostgreSQL: ``FOR UPDATE``; SQLite: the one writer), so two admins demoting each other at
    once cannot both succeed.
    """
    if role is not None and role not in ROLES:
        raise Invalid(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if not _could_be_a_name(name):
        raise NotFound(f"no annotator named {name!r}")
    with storage.write() as s:
        admins = list(
            s.scalars(
                select(Annotator.id)
                .where(Annotator.role == "admin", Annotator.disabled.is_(False))
                .order_by(Annotator.id)
                .with_for_update()
            )
        )
        a = s.scalar(select(Annotator).where(Annotator.name == name))
        if a is None:
            raise NotFound(f"no annotator named {name!r}")
        stays_admin = (role or a.role) == "admin" and not (
            a.disabled if disabled is None else disabled
        )
        if a.id in admins and len(admins) == 1 and not stays_admin:
            raise Conflict(
                f"{a.name!r} is the last admin: make another annotator an admin first "
                "(an app without an admin cannot manage annotators)",
            )
        if role is not None:
            a.role = role
        if disabled is not None:
            a.disabled = disabled
            if disabled:
                s.execute(_delete_sessions.where(Session.annotator_id == a.id))
        if attributes:
            merged = dict(a.attributes or {})
            for k, v in attributes.items():
                if v is None:
                    merged.pop(k, None)
                else:
                    merged[k] = v
            a.attributes = merged
        s.flush()
        out = annotator_info(a)
    forget_logins(storage)
    return out
