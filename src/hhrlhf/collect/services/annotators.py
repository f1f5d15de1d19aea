"""Annotators and their logins: accounts, tokens (only their hashes are stored) and
browser sessions."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
import weakref
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

#: seconds a request's login (bearer token or cookie session) is answered from this process's
#: memory instead of the database. A change made in this process (disable, role, token
#: rotation, logout) empties the memory at once; one made by another process (another worker,
#: another host, ``hh collect annotators disable``) is seen within this many seconds.
AUTH_CACHE_SECONDS = 5.0
#: logins remembered at most (the memory is emptied when full)
AUTH_CACHE_SIZE = 10_000
#: a remembered login used since it was last checked is checked again (:func:`refresh_logins`,
#: all such logins of the process in one read) once it is this many seconds old: in use, it
#: never lapses, so annotators who all logged in at once do not all wait on the database at
#: once AUTH_CACHE_SECONDS later
AUTH_REFRESH_AFTER = AUTH_CACHE_SECONDS / 2
#: logins checked by one statement of :func:`refresh_logins` at most
REFRESH_BATCH = 500


class _AuthCache:
    """Recent logins of one database: digest -> (until, annotator, CSRF token, session expiry).

    ``generation`` counts the changes: a lookup read before a change is not remembered after
    it, so a request racing a disable cannot put the old state back.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[str, tuple[float, AnnotatorInfo, str | None, datetime | None]] = {}
        self.generation = 0
        #: keys read since they were last checked
        self.used: set[str] = set()

    def get(self, key: str) -> tuple[AnnotatorInfo, str | None, datetime | None] | None:
        hit = self.entries.get(key)
        if hit is None or hit[0] < _clock():
            return None
        self.used.add(key)
        return hit[1], hit[2], hit[3]

    def due(self) -> list[str]:
        """The keys to check again: used since their last check, and checked
        :data:`AUTH_REFRESH_AFTER` seconds ago or more (and not lapsed)."""
        now_ = _clock()
        with self.lock:
            # a copy first: get() adds to the set from other threads without the lock
            return [
                key
                for key in tuple(self.used)
                if (hit := self.entries.get(key)) is not None
                and now_ <= hit[0] <= now_ + AUTH_CACHE_SECONDS - AUTH_REFRESH_AFTER
            ]

    def refresh(
        self,
        generation: int,
        checked: float,
        keys: list[str],
        found: dict[str, tuple[AnnotatorInfo, str | None, datetime | None]],
    ) -> None:
        """Remember ``keys`` as a read begun at ``checked`` found them (a key not ``found``
        is forgotten), unless a change came since that read began."""
        with self.lock:
            if generation != self.generation:
                return
            for key in keys:
                self.used.discard(key)
                if key in found:
                    self.entries[key] = (checked + AUTH_CACHE_SECONDS, *found[key])
                else:
                    self.entries.pop(key, None)

    def put(
        self,
        generation: int,
        key: str,
        value: tuple[AnnotatorInfo, str | None, datetime | None],
    ) -> None:
        with self.lock:
            if generation != self.generation:
                return
            if len(self.entries) >= AUTH_CACHE_SIZE:
                self.entries.clear()
                self.used.clear()
            self.entries[key] = (_clock() + AUTH_CACHE_SECONDS, *value)

    def forget(self) -> None:
        with self.lock:
            self.generation += 1
            self.entries.clear()
            self.used.clear()


_clock = time.monotonic
_caches: weakref.WeakKeyDictionary[Storage, _AuthCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def _cache(storage: Storage) -> _AuthCache:
    cache = _caches.get(storage)
    if cache is None:
        with _caches_lock:
            cache = _caches.setdefault(storage, _AuthCache())
    return cache


def forget_logins(storage: Storage) -> None:
    """Empty this process's memory of logins (called after every change to who may log in)."""
    _cache(storage).forget()


def cached_annotator_by_token(storage: Storage, token: str) -> AnnotatorInfo | None:
    """:func:`annotator_by_token`, remembered for :data:`AUTH_CACHE_SECONDS` (found ones only)."""
    if not token or len(token) > 200:
        return None
    cache = _cache(storage)
    key = "t" + hash_token(token)
    hit = cache.get(key)
    if hit is not None:
        return hit[0]
    generation = cache.generation
    who = annotator_by_token(storage, token)
    if who is not None:
        cache.put(generation, key, (who, None, None))
    return who


def cached_session_annotator(storage: Storage, cookie: str) -> tuple[AnnotatorInfo, str] | None:
    """:func:`session_annotator`, remembered for :data:`AUTH_CACHE_SECONDS` (live ones only;
    the session's own expiry is checked on every use)."""
    if not cookie or len(cookie) > 200:
        return None
    cache = _cache(storage)
    key = "s" + hash_token(cookie)
    hit = cache.get(key)
    if hit is not None:
        who, csrf, expires = hit
        if expires is not None and csrf is not None and aware(expires) >= now():
            return who, csrf
        return None
    generation = cache.generation
    found = _session_row(storage, cookie)
    if found is None:
        return None
    who, csrf, expires = found
    cache.put(generation, key, (who, csrf, expires))
    return who, csrf


def logins_due(storage: Storage) -> bool:
    """Whether :func:`refresh_logins` has a login to check (no database work)."""
    return bool(_cache(storage).due())


def refresh_logins(storage: Storage) -> int:
    """Check again, in one read, the logins this process remembers that were used since
    they were last checked and are :data:`AUTH_REFRESH_AFTER` seconds old: each is
    remembered as the read found it, for :data:`AUTH_CACHE_SECONDS` from the read's start
    (so a change made elsewhere is still seen within those seconds); a token no longer
    anyone's, or a session gone or expired, is forgotten. Returns how many were checked."""
    cache = _cache(storage)
    keys = cache.due()
    if not keys:
        return 0
    generation, checked = cache.generation, _clock()
    tokens = [k[1:] for k in keys if k[0] == "t"]
    cookies = [k[1:] for k in keys if k[0] == "s"]
    found: dict[str, tuple[AnnotatorInfo, str | None, datetime | None]] = {}
    with storage.read() as s:  # a statement per kind and REFRESH_BATCH logins
        for i in range(0, len(tokens), REFRESH_BATCH):
            batch = tokens[i : i + REFRESH_BATCH]
            for a in s.scalars(select(Annotator).where(Annotator.token_hash.in_(batch))):
                found["t" + a.token_hash] = (annotator_info(a), None, None)
        for i in range(0, len(cookies), REFRESH_BATCH):
            rows = s.execute(
                select(Session, Annotator)
                .join(Annotator, Annotator.id == Session.annotator_id)
                .where(Session.id.in_(cookies[i : i + REFRESH_BATCH]))
            )
            for sess, a in rows:
                if aware(sess.expires_at) >= now():
                    found["s" + sess.id] = (annotator_info(a), sess.csrf_token, sess.expires_at)
    cache.refresh(generation, checked, keys, found)
    return len(keys)


def remembered_token(storage: Storage, token: str) -> AnnotatorInfo | None:
    """The annotator of ``token`` if this process remembers the login (no database work, so an
    async caller can ask on its event loop); None: not remembered (ask
    :func:`cached_annotator_by_token`)."""
    if not token or len(token) > 200:
        return None
    hit = _cache(storage).get("t" + hash_token(token))
    return None if hit is None else hit[0]


def remembered_session(storage: Storage, cookie: str) -> tuple[AnnotatorInfo, str] | None:
    """A remembered, live cookie session's (annotator, CSRF token) (no database work); None:
    not remembered or expired (ask :func:`cached_session_annotator`)."""
    if not cookie or len(cookie) > 200:
        return None
    hit = _cache(storage).get("s" + hash_token(cookie))
    if hit is None:
        return None
    who, csrf, expires = hit
    if expires is not None and csrf is not None and aware(expires) >= now():
        return who, csrf
    return None


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
    found = _session_row(storage, cookie)
    return None if found is None else (found[0], found[1])


def _session_row(storage: Storage, cookie: str) -> tuple[AnnotatorInfo, str, datetime] | None:
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
    if role is not None and role not in ("annotator", "admin"):
        raise Invalid(f"role must be 'annotator' or 'admin', not {role!r}")
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
