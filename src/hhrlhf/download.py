"""Fetch the upstream files into a local cache: Hub or GitHub, resume, checksums, offline.

Sources
    ``hub`` (default): ``{HF_ENDPOINT}/datasets/Anthropic/hh-rlhf/resolve/{revision}/{path}``,
    revision ``main``. A Hub token is sent (to the Hub only) when one is found in the usual
    places: ``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``, the file named by ``HF_TOKEN_PATH``, else
    ``$HF_HOME/token`` (``HF_HOME`` defaults to ``~/.cache/huggingface``).

    ``github``: the ``anthropics/hh-rlhf`` repository, branch ``master``. Files stored in git
    itself come from ``raw.githubusercontent.com``, Git LFS files (``helpful-*``) from
    ``media.githubusercontent.com``.

The cache
    :func:`cache_dir` is, in order: the explicit override (``--cache-dir``), ``$HH_RLHF_CACHE``,
    ``$XDG_CACHE_HOME/hhrlhf``, ``~/.cache/hhrlhf``. The default revision's files live at
    ``<cache>/<path>`` (``<cache>/helpful-base/train.jsonl.gz``), any other revision's under
    ``<cache>/revisions/<revision>/<path>``. Next to each file, ``<file>.sha256.json`` remembers
    the hash of the file at a given size and mtime, so a verified file is not rehashed on every
    call. ``<cache>/checksums.json`` records the hashes of files the registry has no hash for
    (``harmless-base/train``, other revisions): trust on first use, verified afterwards.

Transfers
    Standard library only (``urllib.request``). Bytes go to ``<file>.part`` (opened without
    following symbolic links: a link planted there is refused, never written through;
    created exclusively when a transfer starts over) and are moved into
    place with :func:`os.replace` once complete and verified, so a cache entry is never half a
    file. An interrupted transfer keeps its ``.part``; the next call resumes it with a
    ``Range`` request (and starts over if the server ignores the range). Connection errors and
    5xx answers are retried with exponential backoff. A file whose sha256 does not match is
    moved to ``<file>.bad`` and :class:`~hhrlhf.errors.ChecksumMismatchError` names both hashes.

Environment
    ``HH_RLHF_CACHE``          cache directory (see above)
    ``HH_RLHF_OFFLINE``        ``1`` = never touch the network (``HF_HUB_OFFLINE`` and
                               ``HF_DATASETS_OFFLINE`` count too)
    ``HF_ENDPOINT``            Hub base URL (default ``https://huggingface.co``)
    ``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``, ``HF_TOKEN_PATH``, ``HF_HOME``   Hub token
    ``HH_RLHF_GITHUB_RAW``     base for git-stored files (default
                               ``https://raw.githubusercontent.com``)
    ``HH_RLHF_GITHUB_MEDIA``   base for Git LFS files (default
                               ``https://media.githubusercontent.com/media``)
    ``HH_RLHF_RETRIES``        retries after a connection error or 5xx (default 3)
    ``HH_RLHF_BACKOFF``        first backoff delay in seconds, doubled each retry (default 1)
    ``HH_RLHF_TIMEOUT``        connect and read timeout in seconds (default 10; ``timeout=``
                               and ``hh download --timeout`` override it)

    What cannot heal is not retried: a host name that does not resolve, 401/403 and 404. A
    server that stays silent past the timeout is retried once, so a host that accepts a
    connection and never answers fails after about twice the timeout.

Example::

    from hhrlhf.download import download, ensure_file
    from hhrlhf.subsets import SUBSETS

    paths = download(["helpful-base"], splits=["test"], progress=True)
    path = ensure_file(SUBSETS["harmless-base"].file("test"), source="github")
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import sys
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote

from .errors import (
    ChecksumMismatchError,
    DownloadError,
    HHError,
    OfflineError,
    UnknownNameError,
)
from .outputs import check_writable, write_atomic
from .subsets import FileSpec, resolve_subsets

__all__ = [
    "SOURCES",
    "HUB_REPO",
    "GITHUB_REPO",
    "cache_dir",
    "is_offline",
    "cached_path",
    "file_url",
    "hub_token",
    "ensure_file",
    "download",
    "checksum_status",
    "registry_files",
    "sha256_file",
    "cached_sha256",
    "verify_checksum",
]

SOURCES: tuple[str, ...] = ("hub", "github")
HUB_REPO = "Anthropic/hh-rlhf"
GITHUB_REPO = "anthropics/hh-rlhf"
HUB_DEFAULT_REVISION = "main"
GITHUB_DEFAULT_REVISION = "master"
DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_GITHUB_RAW = "https://raw.githubusercontent.com"
DEFAULT_GITHUB_MEDIA = "https://media.githubusercontent.com/media"

#: Defaults for the transfer knobs; the ``HH_RLHF_*`` variables override them.
RETRIES = 3
BACKOFF = 1.0
TIMEOUT = 10.0
#: Attempts that time out before any byte arrives are retried this many times at most.
TIMEOUT_RETRIES = 1

#: The names :func:`checksum_status` can return.
STATUSES = ("missing", "partial", "verified", "mismatch", "recorded", "unverified")

CHUNK = 1 << 20
_CHECKSUMS = "checksums.json"
_TRUTHY = {"1", "true", "yes", "on", "y", "t"}
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"
_USER_AGENT = "hhrlhf (+https://github.com/anthropics/hh-rlhf; python-urllib)"


# --------------------------------------------------------------------------- locations


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


def _revision_dir(revision: str | None) -> str | None:
    """None for the default revision (``main`` on the Hub, ``master`` on GitHub, which hold the
    same files), else a single safe path component naming the revision."""
    if revision is None or revision in ("", HUB_DEFAULT_REVISION, GITHUB_DEFAULT_REVISION):
        return None
    name = quote(revision, safe="")
    if set(name) <= {"."}:
        name = name.replace(".", "%2E")
    return name


def _relative_key(spec: FileSpec, revision: str | None) -> str:
    rev = _revision_dir(revision)
    return spec.path if rev is None else f"revisions/{rev}/{spec.path}"


def cached_path(
    spec: FileSpec,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
) -> Path:
    """Where ``spec`` lives in the cache, present or not."""
    return _cache_root(cache_dir).joinpath(*_relative_key(spec, revision).split("/"))


def _sibling(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def file_url(spec: FileSpec, *, source: str = "hub", revision: str | None = None) -> str:
    """The URL ``spec`` is downloaded from (``source`` is ``"hub"`` or ``"github"``)."""
    if source == "hub":
        base = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
        rev = quote(revision or HUB_DEFAULT_REVISION, safe="")
        return f"{base}/datasets/{HUB_REPO}/resolve/{rev}/{quote(spec.path)}"
    if source == "github":
        if spec.lfs:
            base = os.environ.get("HH_RLHF_GITHUB_MEDIA") or DEFAULT_GITHUB_MEDIA
        else:
            base = os.environ.get("HH_RLHF_GITHUB_RAW") or DEFAULT_GITHUB_RAW
        rev = quote(revision or GITHUB_DEFAULT_REVISION, safe="/")
        return f"{base.rstrip('/')}/{GITHUB_REPO}/{rev}/{quote(spec.path)}"
    raise UnknownNameError("source", source, SOURCES)


def hub_token() -> str | None:
    """The Hugging Face token from ``HF_TOKEN``, ``HUGGING_FACE_HUB_TOKEN``, the file at
    ``HF_TOKEN_PATH``, or ``$HF_HOME/token``; None when there is none."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    token_path = os.environ.get("HF_TOKEN_PATH")
    if not token_path:
        hf_home = os.environ.get("HF_HOME")
        if not hf_home:
            xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
            hf_home = os.path.join(xdg, "huggingface")
        token_path = os.path.join(os.path.expanduser(hf_home), "token")
    try:
        value = Path(token_path).expanduser().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return value or None


# --------------------------------------------------------------------------- hashing


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        _hash_stream(h, fh)
    return h.hexdigest()


def _hash_stream(hasher, fh) -> None:
    """Feed an unbuffered binary file to ``hasher`` in ``CHUNK``-sized reads."""
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    while n := fh.readinto(buf):
        hasher.update(view[:n])


def verify_checksum(path: str | os.PathLike[str], expected: str) -> None:
    """Raise :class:`ChecksumMismatchError` unless ``path`` hashes to ``expected``."""
    actual = sha256_file(path)
    if actual.lower() != expected.lower():
        raise ChecksumMismatchError(str(path), expected.lower(), actual)


def _state_path(path: Path) -> Path:
    return _sibling(path, ".sha256.json")


def _write_json_atomic(path: Path, data: object) -> None:
    write_atomic(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def _remember_hash(path: Path, digest: str) -> None:
    st = path.stat()
    with contextlib.suppress(OSError):
        _write_json_atomic(
            _state_path(path), {"sha256": digest, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
        )


def cached_sha256(path: str | os.PathLike[str]) -> str:
    """The file's sha256, from its ``.sha256.json`` when size and mtime still match (else
    hashed now and remembered)."""
    path = Path(path)
    st = path.stat()
    try:
        state = json.loads(_state_path(path).read_text(encoding="utf-8"))
        if state.get("size") == st.st_size and state.get("mtime_ns") == st.st_mtime_ns:
            return str(state["sha256"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    digest = sha256_file(path)
    _remember_hash(path, digest)
    return digest


# --------------------------------------------------------------------------- TOFU records


def _load_records(root: Path) -> dict[str, dict]:
    try:
        data = json.loads((root / _CHECKSUMS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


def _recorded_hash(root: Path, key: str) -> str | None:
    entry = _load_records(root).get(key)
    if isinstance(entry, dict) and isinstance(entry.get("sha256"), str):
        return entry["sha256"]
    return None


def _record_hash(root: Path, key: str, digest: str, size: int, url: str | None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / (_CHECKSUMS + ".lock")):
        files = _load_records(root)
        files[key] = {
            "sha256": digest,
            "size": size,
            "url": url,
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        _write_json_atomic(root / _CHECKSUMS, {"version": 1, "files": files})


def _expected(spec: FileSpec, root: Path, revision: str | None) -> tuple[str | None, str]:
    """(expected sha256, where it comes from: "registry", "recorded" or "none").

    Registry hashes describe the default revision; files of other revisions are trusted on
    first use."""
    if spec.sha256 and _revision_dir(revision) is None:
        return spec.sha256.lower(), "registry"
    recorded = _recorded_hash(root, _relative_key(spec, revision))
    if recorded:
        return recorded.lower(), "recorded"
    return None, "none"


def checksum_status(
    spec: FileSpec,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    revision: str | None = None,
) -> str:
    """One of ``missing``, ``partial`` (a ``.part`` is waiting to be resumed), ``verified``
    (matches the registry), ``recorded`` (matches the trust-on-first-use record),
    ``mismatch``, ``unverified`` (present, no hash known). Never touches the network; hashes
    the file only when its remembered hash is stale."""
    root = _cache_root(cache_dir)
    path = cached_path(spec, cache_dir=root, revision=revision)
    if not path.is_file():
        return "partial" if _sibling(path, ".part").is_file() else "missing"
    expected, origin = _expected(spec, root, revision)
    if expected is None:
        return "unverified"
    if cached_sha256(path) != expected:
        return "mismatch"
    return "verified" if origin == "registry" else "recorded"


# --------------------------------------------------------------------------- public API


def ensure_file(
    spec: FileSpec,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    source: str = "hub",
    revision: str | None = None,
    offline: bool | None = None,
    verify: bool = True,
    progress: bool = False,
    timeout: float | None = None,
) -> Path:
    """The cached path of ``spec``, downloading it first when it is not in the cache.

    ``timeout`` is the connect and read timeout in seconds (default ``HH_RLHF_TIMEOUT``,
    else 10). ``progress`` writes what is happening to stderr: a bar on a terminal,
    plain lines otherwise (the URL before connecting, every retry, the end).

    With ``verify`` (the default) the file must match the registry's sha256 (or the hash
    recorded the first time it was seen); a mismatching file is moved to ``<file>.bad`` and
    :class:`ChecksumMismatchError` is raised. In offline mode a missing file raises
    :class:`OfflineError` without any network access. Transfer problems raise
    :class:`DownloadError`; an interrupted transfer keeps its ``.part`` for the next call.
    """
    root = _cache_root(cache_dir)
    path = cached_path(spec, cache_dir=root, revision=revision)
    if path.is_file():
        if verify:
            _verify_cached(spec, path, root, revision, url=None)
        return path
    if is_offline(offline):
        raise OfflineError(f"{spec.path} (subset {spec.subset}, split {spec.split})")
    url = file_url(spec, source=source, revision=revision)
    # an unwritable cache is one clear error before any transfer, not a traceback after it
    check_writable(path.parent, kind="dir", into=True, option="cache directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(_sibling(path, ".lock")):
        if path.is_file():  # another process finished it while we waited
            if verify:
                _verify_cached(spec, path, root, revision, url=None)
            return path
        headers = {}
        if source == "hub":
            token = hub_token()
            if token:
                headers["Authorization"] = f"Bearer {token}"
        # the published size, checked like the hash (so --no-verify skips it too)
        size = spec.size if verify and _revision_dir(revision) is None else None
        part = _sibling(path, ".part")
        digest = _fetch(
            url,
            part,
            auth=headers,
            expected_size=size,
            progress=progress,
            label=spec.path,
            source=source,
            revision=revision,
            timeout=timeout,
        )
        if verify:
            _check_download(spec, path, part, digest, root, revision, url)
        os.replace(part, path)
        _remember_hash(path, digest)
    return path


def download(
    subsets: str | Iterable[str] | None = None,
    *,
    splits: str | Iterable[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    source: str = "hub",
    revision: str | None = None,
    offline: bool | None = None,
    verify: bool = True,
    progress: bool = False,
    timeout: float | None = None,
) -> list[Path]:
    """Ensure every file of ``subsets`` (names as :func:`~hhrlhf.subsets.resolve_subsets`
    takes them: None or ``"default"`` = the four preference subsets, ``"all"`` = all five),
    limited to ``splits`` when given, is in the cache. Returns the paths in registry order."""
    return [
        ensure_file(
            spec,
            cache_dir=cache_dir,
            source=source,
            revision=revision,
            offline=offline,
            verify=verify,
            progress=progress,
            timeout=timeout,
        )
        for spec in registry_files(subsets, splits)
    ]


def registry_files(
    subsets: str | Iterable[str] | None = None, splits: str | Iterable[str] | None = None
) -> list[FileSpec]:
    """The upstream registry's files (what to download) of ``subsets`` limited to ``splits`` (an
    unknown split raises). Files to read are :func:`hhrlhf.layout.select_files`'s."""
    names = subsets if subsets is None or isinstance(subsets, str) else list(subsets)
    chosen = resolve_subsets(names)
    files = [f for s in chosen for f in s.files]
    if splits is None:
        return files
    wanted = [splits] if isinstance(splits, str) else list(splits)
    if not wanted:
        return files
    known = sorted({f.split for f in files})
    for name in wanted:
        if name not in known:
            raise UnknownNameError("split", name, known)
    return [f for f in files if f.split in wanted]


# --------------------------------------------------------------------------- verification


def _quarantine(path: Path) -> Path:
    bad = _sibling(path, ".bad")
    os.replace(path, bad)
    with contextlib.suppress(OSError):
        _state_path(path).unlink()
    return bad


def _mismatch(
    spec: FileSpec, path: Path, bad: Path, expected: str, actual: str, origin: str, root: Path
) -> ChecksumMismatchError:
    err = ChecksumMismatchError(str(path), expected, actual)
    where = "the registry" if origin == "registry" else "the hash recorded on first download"
    hint = f"the file does not match {where}; it was moved to {bad}. Run `hh download` again"
    if origin == "registry" and spec.reported:
        hint += " (this file's published figures were reported by a third party: if a fresh "
        hint += "download mismatches too, the figure may be wrong; pass --no-verify)"
    elif origin == "recorded":
        hint += f" (or drop its entry from {root / _CHECKSUMS} if upstream changed it)"
    err.hint = hint
    return err


def _looks_wrong(path: Path, name: str) -> str | None:
    """A reason why a downloaded file cannot be the data (checked when no hash is known)."""
    with open(path, "rb") as fh:
        head = fh.read(64)
    if head.startswith(_LFS_POINTER):
        return "got a Git LFS pointer instead of the file"
    if name.endswith(".gz") and not head.startswith(b"\x1f\x8b"):
        return f"not a gzip file (starts with {head[:16]!r})"
    return None


def _verify_cached(
    spec: FileSpec, path: Path, root: Path, revision: str | None, url: str | None
) -> None:
    expected, origin = _expected(spec, root, revision)
    actual = cached_sha256(path)
    if expected is None:
        _record_hash(root, _relative_key(spec, revision), actual, path.stat().st_size, url)
        return
    if actual != expected:
        bad = _quarantine(path)
        raise _mismatch(spec, path, bad, expected, actual, origin, root)


def _check_download(
    spec: FileSpec, path: Path, part: Path, digest: str, root: Path, revision: str | None, url: str
) -> None:
    expected, origin = _expected(spec, root, revision)
    if expected is None:
        reason = _looks_wrong(part, path.name)
        if reason:
            bad = _sibling(path, ".bad")
            os.replace(part, bad)
            raise DownloadError(url, f"{reason}; kept it as {bad}")
        _record_hash(root, _relative_key(spec, revision), digest, part.stat().st_size, url)
        return
    if digest != expected:
        bad = _sibling(path, ".bad")
        os.replace(part, bad)
        raise _mismatch(spec, path, bad, expected, digest, origin, root)


# --------------------------------------------------------------------------- transfer


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
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
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o644)
        except OSError as exc:  # ELOOP: a symbolic link planted where the lock goes
            err = HHError(f"{lock_path}: cannot open the lock file ({exc.strerror or exc})")
            err.hint = f"remove {lock_path} if it is a symbolic link, and try again"
            raise err from None
        fh = os.fdopen(fd, "r+b")
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            named = os.stat(lock_path, follow_symlinks=False)
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


def _env_number(name: str, default: float) -> float:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return default


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


def _http_hint(status: int, source: str, revision: str | None, url: str) -> str | None:
    if status in (401, 403):
        if source == "hub":
            return (
                "the Hub refused access: set HF_TOKEN (or run `huggingface-cli login`) "
                "and check the token can read Anthropic/hh-rlhf"
            )
        return "GitHub refused access (rate limit?): wait, or use --source hub"
    if status == 404:
        rev = revision or (HUB_DEFAULT_REVISION if source == "hub" else GITHUB_DEFAULT_REVISION)
        return (
            f"no such file at revision {rev!r}: check --revision (a branch, tag or "
            f"commit of the {source} repository) and the file path"
        )
    return None


def _parse_content_range(value: str | None) -> tuple[int | None, int | None]:
    """(first byte, total size) of a ``Content-Range`` header (``bytes 10-99/100``)."""
    if not value:
        return None, None
    m = re.match(r"\s*bytes\s+(?:(\d+)-\d+|\*)/(\d+|\*)", value)
    if not m:
        return None, None
    start = int(m.group(1)) if m.group(1) else None
    total = int(m.group(2)) if m.group(2) != "*" else None
    return start, total


def _fetch(url: str, part: Path, **options) -> str:
    """Download ``url`` into ``part`` (resuming it), with retries; returns the sha256.
    ``options`` are :func:`_fetch_once`'s."""
    retries = int(_env_number("HH_RLHF_RETRIES", RETRIES))
    backoff = _env_number("HH_RLHF_BACKOFF", BACKOFF)
    attempt = 0
    timeouts = 0
    restarted = False
    if options["progress"]:
        _say(f"{options['label']}: connecting to {_host(url)}")
    while True:
        try:
            return _fetch_once(url, part, **options)
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
            if options["progress"]:
                _say(
                    f"{options['label']}: {exc.error.problem}; retry {attempt}/{retries} in "
                    f"{delay:.1f}s"
                )
            time.sleep(max(delay, 0.0))


def _fetch_once(
    url: str,
    part: Path,
    *,
    auth: dict[str, str],
    expected_size: int | None,
    progress: bool,
    label: str,
    source: str,
    revision: str | None,
    timeout: float | None = None,
) -> str:
    # imported here, not with the module: they are a third of `import hhrlhf`, and only a
    # transfer needs them
    import http.client
    import socket
    import urllib.error
    import urllib.request

    offset = _part_size(part, url)
    if expected_size is not None and offset > expected_size:
        raise _Restart()
    hasher = hashlib.sha256()
    if expected_size is not None and offset == expected_size and offset > 0:
        _hash_into(hasher, part)  # a complete .part from an earlier call: nothing to fetch
        return hasher.hexdigest()

    req = urllib.request.Request(
        url, headers={"User-Agent": _USER_AGENT, "Accept-Encoding": "identity"}
    )
    for key, value in auth.items():
        req.add_unredirected_header(key, value)  # never forwarded to a redirect's host
    if offset:
        req.add_header("Range", f"bytes={offset}-")
    if timeout is None:
        timeout = _env_number("HH_RLHF_TIMEOUT", TIMEOUT)
    try:
        resp = urllib.request.urlopen(req, timeout=timeout)
    except urllib.error.HTTPError as exc:
        status = exc.code
        if status == 416 and offset:
            _, total = _parse_content_range(exc.headers.get("Content-Range"))
            exc.close()
            if total is not None and total == offset:
                _hash_into(hasher, part)
                return hasher.hexdigest()
            raise _Restart() from None
        retry_after = exc.headers.get("Retry-After") if exc.headers else None
        exc.close()
        err = DownloadError(url, f"HTTP {status} {exc.reason}", status=status)
        err.hint = _http_hint(status, source, revision, url)
        if status >= 500 or status in (408, 429):
            delay = float(retry_after) if retry_after and retry_after.isdigit() else None
            raise _Retry(err, delay) from None
        raise err from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        if isinstance(reason, socket.gaierror):  # the name does not resolve: cannot heal
            err = DownloadError(url, f"cannot resolve host {_host(url)!r} ({reason})")
            err.hint = "check the host name (HF_ENDPOINT, HH_RLHF_GITHUB_*) and the network"
            raise err from None
        if isinstance(reason, TimeoutError):
            raise _Retry(
                DownloadError(url, f"no answer from {_host(url)} within {timeout:g}s (--timeout)"),
                timed_out=True,
            ) from None
        raise _Retry(DownloadError(url, f"connection failed: {reason}")) from None

    with resp:
        status = resp.status
        length = resp.headers.get("Content-Length")
        length = int(length) if length and length.isdigit() else None
        if status == 206 and offset:
            start, total = _parse_content_range(resp.headers.get("Content-Range"))
            if start is not None and start != offset:
                raise _Restart()
            mode = "ab"
            _hash_into(hasher, part)
            if total is None and length is not None:
                total = offset + length
        elif status in (200, 203):
            offset, mode = 0, "wb"  # no range asked for, or the server ignored it
            total = length
        else:
            raise DownloadError(url, f"unexpected HTTP {status}", status=status)
        if total is None:
            total = expected_size

        received = 0
        bar = _Progress(label, total, offset) if progress else None
        try:
            with _open_part(part, append=mode == "ab", url=url) as out:
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
        finally:
            if bar:
                bar.close()

    size = offset + received
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
            if fh.read(len(_LFS_POINTER)) == _LFS_POINTER:
                part.unlink()
                raise DownloadError(
                    url,
                    "got a Git LFS pointer instead of the file: use the "
                    "media URL (--source github does) or --source hub",
                )
    return hasher.hexdigest()


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc or url


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _part_size(part: Path, url: str) -> int:
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


def _open_part(part: Path, *, append: bool, url: str):
    """Open the partial file for writing without following symbolic links: appended to
    when resuming, else created exclusively (any old one removed first)."""
    _part_size(part, url)  # refuses a symbolic link or a special file
    if append:
        flags = os.O_WRONLY | os.O_APPEND | _NOFOLLOW
    else:
        with contextlib.suppress(FileNotFoundError):
            part.unlink()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    try:
        fd = os.open(part, flags, 0o644)
    except OSError as exc:
        err = DownloadError(url, f"cannot write {part} ({exc.strerror or exc})")
        err.hint = f"remove {part} and download again"
        raise err from None
    return os.fdopen(fd, "ab" if append else "wb")


def _hash_into(hasher, path: Path) -> None:
    with os.fdopen(os.open(path, os.O_RDONLY | _NOFOLLOW), "rb", buffering=0) as fh:
        _hash_stream(hasher, fh)


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover


class _Progress:
    """A one-line progress bar on stderr (redrawn on a terminal, start/end lines otherwise)."""

    def __init__(self, label: str, total: int | None, done: int = 0):
        self.label = label
        self.total = total
        self.done = done
        self.start_done = done
        self.started = time.monotonic()
        self.last = 0.0
        self.tty = sys.stderr.isatty()
        if not self.tty:
            resumed = f" (resuming at {_human(done)})" if done else ""
            size = f" {_human(total)}" if total else ""
            print(f"downloading {label}{size}{resumed}", file=sys.stderr)
        else:
            self._draw()

    def update(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if self.tty and now - self.last >= 0.1:
            self.last = now
            self._draw()
        elif not self.tty and now - self.last >= 10.0:  # a line every 10 s off a terminal
            if self.last:
                self._line()
            self.last = now

    def _line(self) -> None:
        of = f" of {_human(self.total)}" if self.total else ""
        print(f"{self.label}: {_human(self.done)}{of}", file=sys.stderr, flush=True)

    def _draw(self, end: str = "") -> None:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = (self.done - self.start_done) / elapsed
        if self.total:
            frac = min(self.done / self.total, 1.0)
            width = 24
            fill = int(frac * width)
            bar = f"[{'#' * fill}{'-' * (width - fill)}] {frac:4.0%} "
            amount = f"{_human(self.done)}/{_human(self.total)}"
        else:
            bar, amount = "", _human(self.done)
        sys.stderr.write(f"\r{self.label} {bar}{amount} {_human(rate)}/s\x1b[K{end}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            self._draw(end="\n")
        else:
            self._line()
