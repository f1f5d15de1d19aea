"""Checksums: hashing, the hash remembered next to each cached file, the trust-on-first-use
records of files the registry has no hash for, and the verdict on a cached or fresh file."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Protocol

from ..errors import ChecksumMismatchError, DownloadError
from ..subsets import FileSpec
from .cache import (
    cache_dir as _cache_root,
)
from .cache import (
    cached_path,
    locked,
    relative_key,
    revision_dir,
    sibling,
    write_json_atomic,
)
from .sources import LFS_POINTER

#: The names :func:`checksum_status` can return.
STATUSES = ("missing", "partial", "verified", "mismatch", "recorded", "unverified")

CHUNK = 1 << 20
CHECKSUMS = "checksums.json"


class Hasher(Protocol):
    def update(self, data: bytes | memoryview, /) -> None: ...


class Readable(Protocol):
    def readinto(self, buffer: bytearray, /) -> int | None: ...


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        hash_stream(h, fh)
    return h.hexdigest()


def hash_stream(hasher: Hasher, fh: Readable) -> None:
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
    return sibling(path, ".sha256.json")


def remember_hash(path: Path, digest: str) -> None:
    """Remember ``digest`` as the hash of ``path`` at its current size and mtime."""
    st = path.stat()
    with contextlib.suppress(OSError):
        write_json_atomic(
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
    remember_hash(path, digest)
    return digest


# --------------------------------------------------------------------------- TOFU records


def _load_records(root: Path) -> dict[str, Any]:
    try:
        data = json.loads((root / CHECKSUMS).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return files if isinstance(files, dict) else {}


def _recorded_hash(root: Path, key: str) -> str | None:
    entry = _load_records(root).get(key)
    if isinstance(entry, dict) and isinstance(entry.get("sha256"), str):
        return str(entry["sha256"])
    return None


def _record_hash(root: Path, key: str, digest: str, size: int, url: str | None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    with locked(root / (CHECKSUMS + ".lock")):
        files = _load_records(root)
        files[key] = {
            "sha256": digest,
            "size": size,
            "url": url,
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        write_json_atomic(root / CHECKSUMS, {"version": 1, "files": files})


def _expected(spec: FileSpec, root: Path, revision: str | None) -> tuple[str | None, str]:
    """(expected sha256, where it comes from: "registry", "recorded" or "none").

    Registry hashes describe the default revision; files of other revisions are trusted on
    first use."""
    if spec.sha256 and revision_dir(revision) is None:
        return spec.sha256.lower(), "registry"
    recorded = _recorded_hash(root, relative_key(spec, revision))
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
        return "partial" if sibling(path, ".part").is_file() else "missing"
    expected, origin = _expected(spec, root, revision)
    if expected is None:
        return "unverified"
    if cached_sha256(path) != expected:
        return "mismatch"
    return "verified" if origin == "registry" else "recorded"


# --------------------------------------------------------------------------- verification


def _quarantine(path: Path) -> Path:
    bad = sibling(path, ".bad")
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
        hint += f" (or drop its entry from {root / CHECKSUMS} if upstream changed it)"
    err.hint = hint
    return err


def _looks_wrong(path: Path, name: str) -> str | None:
    """A reason why a downloaded file cannot be the data (checked when no hash is known)."""
    with open(path, "rb") as fh:
        head = fh.read(64)
    if head.startswith(LFS_POINTER):
        return "got a Git LFS pointer instead of the file"
    if name.endswith(".gz") and not head.startswith(b"\x1f\x8b"):
        return f"not a gzip file (starts with {head[:16]!r})"
    return None


def verify_cached(spec: FileSpec, path: Path, root: Path, revision: str | None) -> None:
    """Check the cached ``path`` against the hash known for ``spec`` (recording it when none
    is); a mismatching file is moved to ``<file>.bad`` and the mismatch raised."""
    expected, origin = _expected(spec, root, revision)
    actual = cached_sha256(path)
    if expected is None:
        _record_hash(root, relative_key(spec, revision), actual, path.stat().st_size, None)
        return
    if actual != expected:
        bad = _quarantine(path)
        raise _mismatch(spec, path, bad, expected, actual, origin, root)


def check_download(
    spec: FileSpec, path: Path, part: Path, digest: str, root: Path, revision: str | None, url: str
) -> None:
    """Check a finished ``part`` (hashing to ``digest``) before it becomes ``path``; a file
    that fails is moved to ``<file>.bad`` and the failure raised."""
    expected, origin = _expected(spec, root, revision)
    if expected is None:
        reason = _looks_wrong(part, path.name)
        if reason:
            bad = sibling(path, ".bad")
            os.replace(part, bad)
            raise DownloadError(url, f"{reason}; kept it as {bad}")
        _record_hash(root, relative_key(spec, revision), digest, part.stat().st_size, url)
        return
    if digest != expected:
        bad = sibling(path, ".bad")
        os.replace(part, bad)
        raise _mismatch(spec, path, bad, expected, digest, origin, root)
