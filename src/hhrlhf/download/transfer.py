"""One file over HTTP into its ``.part``: resumed with a ``Range`` request, retried with
backoff while the failure may heal, checked for truncation, hashed as it arrives.

The HTTP stack (``urllib.request``, ``http.client``, ``ssl``) is imported only when a
transfer starts: it is a third of ``import hhrlhf``, and only a transfer needs it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..errors import DownloadError
from .cache import NOFOLLOW
from .checksum import CHUNK, Hasher, hash_stream
from .progress import Progress, say
from .sources import LFS_POINTER, http_hint

if TYPE_CHECKING:
    from http.client import HTTPResponse

#: Defaults for the transfer knobs; the ``HH_RLHF_*`` variables override them.
RETRIES = 3
BACKOFF = 1.0
TIMEOUT = 10.0
#: Attempts that time out before any byte arrives are retried this many times at most.
TIMEOUT_RETRIES = 1

_USER_AGENT = "hhrlhf (+https://github.com/anthropics/hh-rlhf; python-urllib)"


@dataclass(frozen=True)
class Transfer:
    """How to fetch one file: ``auth`` headers (never forwarded to a redirect's host), the
    published size when it is checked, a progress ``label``, where it comes from (for the
    hints) and the connect/read ``timeout`` (None: ``HH_RLHF_TIMEOUT``, else 10 s)."""

    auth: dict[str, str]
    expected_size: int | None
    progress: bool
    label: str
    source: str
    revision: str | None
    timeout: float | None = None


def env_number(name: str, default: float) -> float:
    """The number in environment variable ``name``, ``default`` when unset or not a number."""
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return default


def host(url: str) -> str:
    """The host (and port) of ``url``."""
    return urllib.parse.urlsplit(url).netloc or url


class _Retry(Exception):
    """A transient failure: retried while the budget lasts, else raised as ``error``.
    ``timed_out``: the server stayed silent (retried at most :data:`TIMEOUT_RETRIES` times)."""

    def __init__(self, error: DownloadError, delay: float | None = None, timed_out: bool = False):
        super().__init__(str(error))
        self.error = error
        self.delay = delay
        self.timed_out = timed_out


class _Restart(Exception):
    """The server's answer does not continue the ``.part``: start it over (once)."""


def fetch(url: str, part: Path, transfer: Transfer) -> str:
    """Download ``url`` into ``part`` (resuming it), with retries; returns the sha256."""
    retries = int(env_number("HH_RLHF_RETRIES", RETRIES))
    backoff = env_number("HH_RLHF_BACKOFF", BACKOFF)
    attempt = 0
    timeouts = 0
    restarted = False
    if transfer.progress:
        say(f"{transfer.label}: connecting to {host(url)}")
    while True:
        try:
            return _fetch_once(url, part, transfer)
        except _Restart:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()
            if restarted:
                raise DownloadError(
                    url, "the server does not answer range requests consistently"
                ) from None
            restarted = True
        except _Retry as exc:
            timeouts += exc.timed_out
            if attempt >= retries or timeouts > TIMEOUT_RETRIES:
                raise exc.error from None
            delay = backoff * (2**attempt) if exc.delay is None else min(exc.delay, 60.0)
            attempt += 1
            if transfer.progress:
                say(
                    f"{transfer.label}: {exc.error.problem}; retry {attempt}/{retries} in "
                    f"{delay:.1f}s"
                )
            time.sleep(max(delay, 0.0))


def _fetch_once(url: str, part: Path, transfer: Transfer) -> str:
    """One attempt: ask for what the ``.part`` lacks, append it, check the size."""
    expected_size = transfer.expected_size
    offset = part_size(part, url)
    if expected_size is not None and offset > expected_size:
        raise _Restart()
    hasher = hashlib.sha256()
    if expected_size is not None and offset == expected_size and offset > 0:
        hash_into(hasher, part)  # a complete .part from an earlier call: nothing to fetch
        return hasher.hexdigest()
    resp = _open(url, offset, transfer)
    if resp is None:  # the server says the .part already holds the whole file
        hash_into(hasher, part)
        return hasher.hexdigest()
    with resp:
        header = resp.headers.get("Content-Length")
        length = int(header) if header and header.isdigit() else None
        offset, append, total = _continuation(resp, url, part, offset, length, hasher)
        if total is None:
            total = expected_size
        bar = Progress(transfer.label, total, offset) if transfer.progress else None
        try:
            received = _receive(resp, url, part, offset, append, hasher, bar)
        finally:
            if bar:
                bar.close()
    _check_received(url, part, offset + received, received, length, expected_size)
    return hasher.hexdigest()


def _open(url: str, offset: int, transfer: Transfer) -> HTTPResponse | None:
    """The server's answer to a request for ``url`` from byte ``offset`` on; None when it
    says (416) the ``offset`` bytes already held are the whole file. What may heal is raised
    as :class:`_Retry`, what may not as :class:`DownloadError`."""
    import http.client
    import socket
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        url, headers={"User-Agent": _USER_AGENT, "Accept-Encoding": "identity"}
    )
    for key, value in transfer.auth.items():
        req.add_unredirected_header(key, value)  # never forwarded to a redirect's host
    if offset:
        req.add_header("Range", f"bytes={offset}-")
    timeout = transfer.timeout
    if timeout is None:
        timeout = env_number("HH_RLHF_TIMEOUT", TIMEOUT)
    try:
        resp: HTTPResponse = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        status = exc.code
        if status == 416 and offset:
            _, total = parse_content_range(exc.headers.get("Content-Range"))
            exc.close()
            if total is not None and total == offset:
                return None
            raise _Restart() from None
        retry_after = exc.headers.get("Retry-After") if exc.headers else None
        exc.close()
        err = DownloadError(url, f"HTTP {status} {exc.reason}", status=status)
        err.hint = http_hint(status, transfer.source, transfer.revision)
        if status >= 500 or status in (408, 429):
            delay = float(retry_after) if retry_after and retry_after.isdigit() else None
            raise _Retry(err, delay) from None
        raise err from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        if isinstance(reason, socket.gaierror):  # the name does not resolve: cannot heal
            err = DownloadError(url, f"cannot resolve host {host(url)!r} ({reason})")
            err.hint = "check the host name (HF_ENDPOINT, HH_RLHF_GITHUB_*) and the network"
            raise err from None
        if isinstance(reason, TimeoutError):
            raise _Retry(
                DownloadError(url, f"no answer from {host(url)} within {timeout:g}s (--timeout)"),
                timed_out=True,
            ) from None
        raise _Retry(DownloadError(url, f"connection failed: {reason}")) from None
    return resp


def _continuation(
    resp: HTTPResponse, url: str, part: Path, offset: int, length: int | None, hasher: Hasher
) -> tuple[int, bool, int | None]:
    """(offset, append, total size when known) of the answer ``resp``: a 206 continuing the
    ``.part`` (whose bytes are hashed first), or a whole file (the server ignored the range)."""
    status = resp.status
    if status == 206 and offset:
        start, total = parse_content_range(resp.headers.get("Content-Range"))
        if start is not None and start != offset:
            raise _Restart()
        hash_into(hasher, part)
        if total is None and length is not None:
            total = offset + length
        return offset, True, total
    if status in (200, 203):
        return 0, False, length  # no range asked for, or the server ignored it
    raise DownloadError(url, f"unexpected HTTP {status}", status=status)


def _receive(
    resp: HTTPResponse,
    url: str,
    part: Path,
    offset: int,
    append: bool,
    hasher: Hasher,
    bar: Progress | None,
) -> int:
    """Copy the body of ``resp`` into ``part`` (hashing it); returns the bytes received."""
    import http.client

    received = 0
    with open_part(part, append=append, url=url) as out:
        while True:
            try:
                chunk = resp.read(CHUNK)
            except (OSError, http.client.HTTPException) as exc:
                silent = isinstance(exc, TimeoutError) and not received
                raise _Retry(
                    DownloadError(
                        url,
                        f"transfer interrupted after {offset + received} bytes "
                        f"({exc or type(exc).__name__}); the partial file {part} will "
                        "be resumed",
                    ),
                    timed_out=silent,
                ) from None
            if not chunk:
                break
            out.write(chunk)
            hasher.update(chunk)
            received += len(chunk)
            if bar:
                bar.update(len(chunk))
    return received


def _check_received(
    url: str, part: Path, size: int, received: int, length: int | None, expected_size: int | None
) -> None:
    """Raise unless ``part`` (``size`` bytes, ``received`` of them now) is the whole file: a
    short one is kept to resume, a long one or a Git LFS pointer is removed."""
    if length is not None and received < length:
        raise _Retry(
            DownloadError(
                url,
                f"truncated transfer: got {received} of {length} bytes (file now {size} "
                f"bytes); {part} is kept and the next download resumes it",
            )
        )
    if expected_size is not None and size < expected_size:
        raise _Retry(
            DownloadError(
                url,
                f"truncated transfer: file is {size} of {expected_size} bytes; {part} is "
                "kept and the next download resumes it",
            )
        )
    if expected_size is not None and size > expected_size:
        part.unlink()
        raise DownloadError(
            url, f"got {size} bytes, expected {expected_size}: not the published file"
        )
    if size < 1024:
        with open(part, "rb") as fh:
            if fh.read(len(LFS_POINTER)) == LFS_POINTER:
                part.unlink()
                raise DownloadError(
                    url,
                    "got a Git LFS pointer instead of the file: use the "
                    "media URL (--source github does) or --source hub",
                )


def parse_content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, total size) of a ``Content-Range`` header (``bytes 10-99/100``)."""
    if not value:
        return None, None
    m = re.match(r"\s*bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)", value)
    if not m:
        return None, None
    start = int(m.group(1)) if m.group(1) else None
    total = int(m.group(2)) if m.group(2) != "*" else None
    return start, total


def part_size(part: Path, url: str) -> int:
    """Bytes already in the partial file (0 when none); refuses anything but a regular file,
    so a symbolic link planted at ``<file>.part`` is never written through."""
    try:
        st = os.lstat(part)
    except FileNotFoundError:
        return 0
    if not stat.S_ISREG(st.st_mode):
        what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        err = DownloadError(url, f"{part} is {what}; refusing to write through it")
        err.hint = f"remove {part} and download again"
        raise err
    return st.st_size


def open_part(part: Path, *, append: bool, url: str) -> BinaryIO:
    """Open the partial file for writing without following symbolic links: appended to
    when resuming, else created exclusively (any old one removed first)."""
    part_size(part, url)  # refuses a symbolic link or a special file
    if append:
        flags = os.O_WRONLY | os.O_APPEND | NOFOLLOW
    else:
        with contextlib.suppress(FileNotFoundError):
            part.unlink()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW
    try:
        fd = os.open(part, flags, 0o644)
    except OSError as exc:
        err = DownloadError(url, f"cannot write {part} ({exc.strerror or exc})")
        err.hint = f"remove {part} and download again"
        raise err from None
    return os.fdopen(fd, "ab" if append else "wb")


def hash_into(hasher: Hasher, path: Path) -> None:
    """Feed the file at ``path`` (not followed if a symbolic link) to ``hasher``."""
    with os.fdopen(os.open(path, os.O_RDONLY | NOFOLLOW), "rb", buffering=0) as fh:
        hash_stream(hasher, fh)
