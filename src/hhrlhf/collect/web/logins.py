"""Who is asking, and the memory of logins that answers it without the database.

Every request names its annotator by a bearer token or a session cookie; looking either up
is a read of the database, and it used to be the most frequent statement of the annotation
loop. So each worker remembers the logins it has checked, per database:

- :func:`current_annotator` (who a request is: ``(annotator, CSRF token, "bearer"|"cookie")``)
  answers from memory for :data:`AUTH_CACHE_SECONDS`, else looks the login up and remembers
  it; :func:`settle_login` does the same for an ``async`` route, settling a remembered login
  on the event loop and only a lookup as a unit of work (:meth:`Storage.call`);
- the logins in use are checked again before they lapse, all of a worker's in one read
  (:func:`refresh_logins`, every :data:`LOGIN_REFRESH_SECONDS` while the app serves:
  :func:`keep_logins_fresh`), so annotators who logged in together never all wait on the
  database together once their logins lapse;
- a change to who may log in made in this process (disable, role, token rotation, logout)
  empties the memory at once (``services.annotators`` announces it, :meth:`_AuthCache.forget`
  listens); one made by another process (another worker, another host, ``hh collect
  annotators disable``) is seen within :data:`AUTH_CACHE_SECONDS`. A lookup read before a
  change is never remembered after it (``generation``).

What a login may do (disabled accounts, CSRF, Origin, rate limits) is :mod:`.auth`'s; the
reads themselves are ``services.annotators``'.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from datetime import datetime

from fastapi import Request

from ..db import Storage
from ..domain import AnnotatorInfo, aware, now
from ..services import annotators
from .context import app_context

__all__ = [
    "AUTH_CACHE_SECONDS",
    "AUTH_CACHE_SIZE",
    "AUTH_REFRESH_AFTER",
    "COOKIE",
    "LOGIN_REFRESH_SECONDS",
    "Login",
    "cached_annotator_by_token",
    "cached_session_annotator",
    "current_annotator",
    "keep_logins_fresh",
    "logins_due",
    "refresh_logins",
    "remembered_session",
    "remembered_token",
    "settle_login",
]

log = logging.getLogger("hhrlhf.collect")

#: the session cookie's name
COOKIE = "hh_session"
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
#: seconds between two checks of the logins this worker remembers (:func:`keep_logins_fresh`)
LOGIN_REFRESH_SECONDS = 1.0

#: a request's login: (annotator, CSRF token or None, "bearer"|"cookie")
Login = tuple[AnnotatorInfo, str | None, str]
#: what is remembered of a login: (annotator, CSRF token, session expiry); a token has neither
_Found = tuple[AnnotatorInfo, str | None, datetime | None]


class _AuthCache:
    """Recent logins of one database: key -> (until, annotator, CSRF token, session expiry).

    A key is ``"t"`` and a token's digest, or ``"s"`` and a session's id. ``generation``
    counts the changes: a lookup read before a change is not remembered after it, so a
    request racing a disable cannot put the old state back.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[str, tuple[float, AnnotatorInfo, str | None, datetime | None]] = {}
        self.generation = 0
        #: keys read since they were last checked
        self.used: set[str] = set()

    def get(self, key: str) -> _Found | None:
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
        self, generation: int, checked: float, keys: list[str], found: dict[str, _Found]
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

    def put(self, generation: int, key: str, value: _Found) -> None:
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
            cache = _caches.get(storage)
            if cache is None:
                cache = _caches[storage] = _AuthCache()
                annotators.on_login_change(storage, cache.forget)
    return cache


def _live(found: _Found) -> tuple[AnnotatorInfo, str] | None:
    """A remembered session's (annotator, CSRF token), or None once it has expired."""
    who, csrf, expires = found
    if expires is not None and csrf is not None and aware(expires) >= now():
        return who, csrf
    return None


def cached_annotator_by_token(storage: Storage, token: str) -> AnnotatorInfo | None:
    """``annotators.annotator_by_token``, remembered for :data:`AUTH_CACHE_SECONDS` (found
    ones only)."""
    if not token or len(token) > 200:
        return None
    cache = _cache(storage)
    key = "t" + annotators.hash_token(token)
    hit = cache.get(key)
    if hit is not None:
        return hit[0]
    generation = cache.generation
    who = annotators.annotator_by_token(storage, token)
    if who is not None:
        cache.put(generation, key, (who, None, None))
    return who


def cached_session_annotator(storage: Storage, cookie: str) -> tuple[AnnotatorInfo, str] | None:
    """``annotators.session_annotator``, remembered for :data:`AUTH_CACHE_SECONDS` (live ones
    only; the session's own expiry is checked on every use)."""
    if not cookie or len(cookie) > 200:
        return None
    cache = _cache(storage)
    key = "s" + annotators.hash_token(cookie)
    hit = cache.get(key)
    if hit is not None:
        return _live(hit)
    generation = cache.generation
    found = annotators.live_session(storage, cookie)
    if found is None:
        return None
    cache.put(generation, key, found)
    return found[0], found[1]


def remembered_token(storage: Storage, token: str) -> AnnotatorInfo | None:
    """The annotator of ``token`` if this process remembers the login (no database work, so an
    async caller can ask on its event loop); None: not remembered (ask
    :func:`cached_annotator_by_token`)."""
    if not token or len(token) > 200:
        return None
    hit = _cache(storage).get("t" + annotators.hash_token(token))
    return None if hit is None else hit[0]


def remembered_session(storage: Storage, cookie: str) -> tuple[AnnotatorInfo, str] | None:
    """A remembered, live cookie session's (annotator, CSRF token) (no database work); None:
    not remembered or expired (ask :func:`cached_session_annotator`)."""
    if not cookie or len(cookie) > 200:
        return None
    hit = _cache(storage).get("s" + annotators.hash_token(cookie))
    return None if hit is None else _live(hit)


# -- the check of the logins in use ----------------------------------------------------------


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
    tokens, sessions = annotators.logins_now(
        storage, [k[1:] for k in keys if k[0] == "t"], [k[1:] for k in keys if k[0] == "s"]
    )
    found: dict[str, _Found] = {"t" + digest: (who, None, None) for digest, who in tokens.items()}
    found.update(("s" + sid, session) for sid, session in sessions.items())
    cache.refresh(generation, checked, keys, found)
    return len(keys)


async def keep_logins_fresh(storage: Storage) -> None:
    """Check the logins in use again while the worker serves (:func:`refresh_logins`, a unit
    of work, every :data:`LOGIN_REFRESH_SECONDS`); a failure lets them lapse, and each request
    then looks its login up itself."""
    while True:
        await asyncio.sleep(LOGIN_REFRESH_SECONDS)
        try:
            if logins_due(storage):  # an idle worker asks nothing
                await storage.call(refresh_logins)
        except Exception as exc:  # the database away: the requests will say so
            log.warning("logins not checked again: %s", exc)


# -- who is asking ---------------------------------------------------------------------------


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def current_annotator(request: Request) -> Login | None:
    """(annotator, CSRF token or None, "bearer"|"cookie"), or None when not logged in.

    A wrong bearer token is None too (401), never a fallback to the cookie. A login found is
    remembered for :data:`AUTH_CACHE_SECONDS`, and the answer for the rest of the request.
    """
    if hasattr(request.state, "auth"):  # this request's answer, found once
        cached: Login | None = request.state.auth
        return cached
    storage = app_context(request).storage
    result: Login | None = None
    token = _bearer(request)
    if token is not None:
        who = cached_annotator_by_token(storage, token)
        result = (who, None, "bearer") if who else None
    else:
        cookie = request.cookies.get(COOKIE)
        if cookie:
            found = cached_session_annotator(storage, cookie)
            if found:
                result = (found[0], found[1], "cookie")
    request.state.auth = result
    return result


def _remembered(request: Request) -> bool:
    """Settle this request's login from the process's memory alone (True), or leave it to
    :func:`current_annotator` (False: a database lookup)."""
    storage = app_context(request).storage
    token = _bearer(request)
    if token is not None:
        who = remembered_token(storage, token)
        if who is None:
            return False
        request.state.auth = (who, None, "bearer")
        return True
    cookie = request.cookies.get(COOKIE)
    if not cookie:
        request.state.auth = None
        return True
    found = remembered_session(storage, cookie)
    if found is None:
        return False
    request.state.auth = (found[0], found[1], "cookie")
    return True


def _settle(_storage: Storage, request: Request) -> None:
    """:func:`current_annotator` as a unit of work for :meth:`Storage.call`."""
    current_annotator(request)


async def settle_login(request: Request) -> None:
    """Find the request's login for an ``async`` route: a remembered one on the event loop;
    only a database lookup is a unit of work (:meth:`Storage.call`: a thread on SQLite, an
    async wait on PostgreSQL), where a sync dependency would always take a thread. Then
    :func:`current_annotator` answers from the request."""
    if not hasattr(request.state, "auth") and not _remembered(request):
        await app_context(request).storage.call(_settle, request)
