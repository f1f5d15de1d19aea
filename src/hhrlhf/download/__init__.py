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

Modules
    :mod:`.sources` (URLs, the Hub token), :mod:`.cache` (locations, offline mode, the lock),
    :mod:`.checksum` (hashes, trust-on-first-use records, verdicts), :mod:`.transfer` (HTTP,
    resume, retries) and :mod:`.progress` (what a transfer says on stderr). Every public name
    imports from ``hhrlhf.download``.

Example::

    from hhrlhf.download import download, ensure_file
    from hhrlhf.subsets import SUBSETS

    paths = download(["helpful-base"], splits=["test"], progress=True)
    path = ensure_file(SUBSETS["harmless-base"].file("test"), source="github")
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import OfflineError, UnknownNameError
from ..outputs import check_writable
from ..subsets import FileSpec, resolve_subsets
from .cache import cache_dir, cached_path, is_offline, locked, revision_dir, sibling
from .checksum import (
    CHUNK,
    STATUSES,
    cached_sha256,
    check_download,
    checksum_status,
    remember_hash,
    sha256_file,
    verify_cached,
    verify_checksum,
)
from .sources import GITHUB_REPO, HUB_REPO, SOURCES, auth_headers, file_url, hub_token
from .transfer import BACKOFF, RETRIES, TIMEOUT, TIMEOUT_RETRIES, Transfer, fetch

__all__ = [
    "SOURCES",
    "HUB_REPO",
    "GITHUB_REPO",
    "STATUSES",
    "CHUNK",
    "RETRIES",
    "BACKOFF",
    "TIMEOUT",
    "TIMEOUT_RETRIES",
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

_cache_root = cache_dir  # the keyword arguments below shadow the name


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
            verify_cached(spec, path, root, revision)
        return path
    if is_offline(offline):
        raise OfflineError(f"{spec.path} (subset {spec.subset}, split {spec.split})")
    url = file_url(spec, source=source, revision=revision)
    # an unwritable cache is one clear error before any transfer, not a traceback after it
    check_writable(path.parent, kind="dir", into=True, option="cache directory")
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(sibling(path, ".lock")):
        if path.is_file():  # another process finished it while we waited
            if verify:
                verify_cached(spec, path, root, revision)
            return path
        transfer = Transfer(
            auth=auth_headers(source),
            # the published size, checked like the hash (so --no-verify skips it too)
            expected_size=spec.size if verify and revision_dir(revision) is None else None,
            progress=progress,
            label=spec.path,
            source=source,
            revision=revision,
            timeout=timeout,
        )
        part = sibling(path, ".part")
        digest = fetch(url, part, transfer)
        if verify:
            check_download(spec, path, part, digest, root, revision, url)
        os.replace(part, path)
        remember_hash(path, digest)
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
