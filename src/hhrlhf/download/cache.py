"""The local cache: where it is, where each file of each revision lives in it, offline mode,
and the lock and atomic write that keep it whole when processes share it."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from ..errors import HHError
from ..outputs import write_atomic
from ..subsets import FileSpec
from .sources import GITHUB_DEFAULT_REVISION, HUB_DEFAULT_REVISION

_TRUTHY = {"1", "true", "yes", "on", "y", "t"}
#: ``os.open`` flag refusing a symbolic link (0 where the platform has none)
NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)


def cache_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The cache root: ``override``, else ``$HH_RLHF_CACHE``, else ``$XDG_CACHE_HOME/hhrlhf``,
    else ``~/.cache/hhrlhf``. Not created here."""
    if override is not None and str(override) != "":
        return Path(override).expanduser()
    env = os.environ.get("HH_RLHF_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "hhrlhf"
    return Path.home() / ".cache" / "hhrlhf"


_cache_root = cache_dir  # the keyword arguments below shadow the name


def is_offline(flag: bool | None = None) -> bool:
    """``flag`` when given, else whether ``HH_RLHF_OFFLINE`` (or ``HF_HUB_OFFLINE`` /
    ``HF_DATASETS_OFFLINE``) is set to a true value (1, true, yes, on)."""
    if flag is not None:
        return bool(flag)
    return any(
        os.environ.get(name, "").strip().lower() in _TRUTHY
        for name in ("HH_RLHF_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def revision_dir(revision: str | None) -> str | None:
    """None for the default revision (``main`` on the Hub, ``master`` on GitHub, which hold the
    same files), else a single safe path component naming the revision."""
    if revision is None or revision in ("", HUB_DEFAULT_REVISION, GITHUB_DEFAULT_REVISION):
        return None
    name = quote(revision, safe="")
    if set(name) <= {"."}:
        name = name.replace(".", "%2E")
    return name


def relative_key(spec: FileSpec, revision: str | None) -> str:
    """``spec``'s path in the cache, relative to its root (``/``-separated)."""
    rev = revision_dir(revision)
    return spec.path if rev is None else f"revisions/{rev}/{spec.path}"


def cached_path(
    spec: FileSpec,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
) -> Path:
    """Where ``spec`` lives in the cache, present or not."""
    return _cache_root(cache_dir).joinpath(*relative_key(spec, revision).split("/"))


def sibling(path: Path, suffix: str) -> Path:
    """``path`` with ``suffix`` added to its name (``x.gz`` -> ``x.gz.part``)."""
    return path.with_name(path.name + suffix)


def write_json_atomic(path: Path, data: object) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file moved into place."""
    write_atomic(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"))


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """An exclusive advisory lock (POSIX ``flock``); a no-op where that is not available.

    The lock file is removed when the lock is released, whether the work succeeded or failed,
    so no empty ``.lock`` file is left in the cache. Removing it is safe because a process
    that locked a file checks that the path still names that file (not one a previous holder
    unlinked) and otherwise locks the new one.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o644)
        except OSError as exc:  # ELOOP: a symbolic link planted where the lock goes
            err = HHError(f"{lock_path}: cannot open the lock file ({exc.strerror or exc})")
            err.hint = f"remove {lock_path} if it is a symbolic link, and try again"
            raise err from None
        fh = os.fdopen(fd, "r+b")
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            named: os.stat_result | None = os.stat(lock_path, follow_symlinks=False)
        except FileNotFoundError:
            named = None
        held = os.fstat(fh.fileno())
        if named is not None and (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino):
            break
        fh.close()  # the holder before us removed this file: lock the one at the path now
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock_path)
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        fh.close()
