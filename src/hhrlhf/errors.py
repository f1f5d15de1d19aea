"""One root exception, :class:`HHError`, and its documented children.

Every error a user can cause (bad files, wrong checksums, missing extras, unknown
names) is one of these, carries what is needed to act on it, and renders as one
clear line. The CLI prints ``str(error)`` and exits non-zero.
"""

from __future__ import annotations

import difflib
import os
from types import ModuleType

__all__ = [
    "HHError",
    "DataFormatError",
    "TruncatedStreamError",
    "ChecksumMismatchError",
    "DownloadError",
    "OfflineError",
    "NotCachedError",
    "UnknownNameError",
    "UnknownSubsetError",
    "MissingExtraError",
    "ModelFormatError",
    "OutputError",
    "NoDataError",
    "RecordKindError",
    "ConfigError",
    "BackendError",
    "CollectError",
    "Invalid",
    "TooLarge",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "Unavailable",
    "RateLimited",
    "ReportBusy",
    "ExportCheckError",
]


class HHError(Exception):
    """Root of every error hhrlhf raises on purpose.

    Every one pickles with its attributes (``path``, ``line``, ``hint``, ...), so an error
    raised in another process (a ``multiprocessing`` pool, a Ray worker) arrives as itself.
    """

    #: A one-line hint on how to fix the problem, shown by the CLI when set.
    hint: str | None = None

    def __reduce__(self) -> tuple[object, ...]:
        # the default calls ``cls(*self.args)``, which a class whose __init__ takes other
        # arguments than its message cannot take
        return (_restore_error, (type(self), self.args, dict(self.__dict__)))


def _restore_error(
    cls: type[HHError], args: tuple[object, ...], state: dict[str, object]
) -> HHError:
    """An :class:`HHError` unpickled: its message arguments and attributes, without running
    its ``__init__``."""
    err = cls.__new__(cls, *args)
    err.args = args
    err.__dict__.update(state)
    return err


class DataFormatError(HHError, ValueError):
    """A data file is malformed: names the file, the 1-based line (or record) and the problem.

    ``line`` is the physical line for JSONL, or the 1-based element number for a JSON
    array file (``record`` says which of the two it is). ``line`` is None when the
    problem is the file as a whole (empty file, truncated gzip before any line, ...).
    """

    def __init__(
        self, path: str | os.PathLike[str], line: int | None, problem: str, *, unit: str = "line"
    ):
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.unit = unit
        where = self.path if line is None else f"{self.path}, {unit} {line}"
        super().__init__(f"{where}: {problem}")


class TruncatedStreamError(DataFormatError):
    """A compressed stream is cut short or corrupt: the rest of the file cannot be read.

    Lost data, not a bad row: raised in strict and in lenient mode alike, since no reader can
    say how many rows the unreadable part held. ``last_good_line`` is the last line read
    intact (0 when none), ``rows_read`` how many lines were read before the damage, and
    ``kind`` one of ``"truncated"`` (the file ends before the end-of-stream marker),
    ``"crc"`` (the stored checksum does not match the data: some of it is corrupt, and the
    lines read cannot be trusted either) or ``"corrupt"`` (undecodable compressed data).
    """

    def __init__(
        self,
        path: str,
        problem: str,
        *,
        last_good_line: int,
        rows_read: int,
        kind: str = "truncated",
        unit: str = "line",
    ):
        self.last_good_line = last_good_line
        self.rows_read = rows_read
        self.kind = kind
        if kind == "crc":
            tail = (
                f"{rows_read:,} {unit}(s) were decompressed before the check failed and any of "
                "them may be damaged; the file is unusable"
            )
        else:
            good = (
                f"the last good {unit} is {last_good_line:,}" if last_good_line else "none intact"
            )
            tail = (
                f"{rows_read:,} {unit}(s) read ({good}); the rest of the file is unreadable "
                "(its rows are lost)"
            )
        super().__init__(path, None, f"{problem}: {tail}", unit=unit)
        self.hint = "download or copy the file again from an intact source"

    def lost_json(self, *, path: bool = True) -> dict[str, object]:
        """What the cut file lost, for a JSON report: (the file,) lines read, the last good
        line and why; ``path=False`` where the report keys it by the file already."""
        return {
            **({"path": self.path} if path else {}),
            "rows_read": self.rows_read,
            "last_good_line": self.last_good_line,
            "problem": self.problem,
        }


class ChecksumMismatchError(HHError):
    """A file's sha256 is not the one the registry (or the trust-on-first-use record) expects."""

    def __init__(self, path: str, expected: str, actual: str):
        self.path = str(path)
        self.expected = expected
        self.actual = actual
        self.hint = "delete the file and download again, or pass --no-verify if you trust it"
        super().__init__(f"{self.path}: sha256 mismatch: expected {expected}, got {actual}")


class DownloadError(HHError):
    """A transfer failed: HTTP error, connection error, or a short/oversized body."""

    def __init__(self, url: str, problem: str, *, status: int | None = None):
        self.url = url
        self.problem = problem
        self.status = status
        super().__init__(f"{url}: {problem}")


class OfflineError(HHError):
    """A file is needed from the network but offline mode (``HH_RLHF_OFFLINE=1``/``--offline``) is on."""

    def __init__(self, what: str, *, many: bool = False):
        self.what = what
        it, verb = ("them", "are") if many else ("it", "is")
        self.hint = (
            f"unset HH_RLHF_OFFLINE (or drop --offline) to download {it}, or use --data PATH"
        )
        super().__init__(f"offline mode: {what} {verb} not in the cache and will not be downloaded")


class NotCachedError(HHError):
    """A subset file is not in the cache and downloading was not allowed."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = str(path)
        self.hint = "run `hh download` first, or pass --data PATH|sample"
        super().__init__(f"{self.path} is not in the cache")


class UnknownNameError(HHError, KeyError):
    """A name (a subset, a split, a format, a check class, a source, a backend, ...) that is
    not among the ``known`` ones.

    ``kind`` says what the name is ("subset", "split", ...); ``where`` (optional) says where it
    was looked for (a directory, a file), and the message then lists what is there. A known
    name close to the given one (a typo) is ``suggestion``, and the message ends with "did you
    mean ...?". The former two-argument form ``UnknownSubsetError(name, known)`` still works
    (kind "name").

    >>> str(UnknownNameError("subset", "harmles-base", ["harmless-base", "helpful-base"]))
    "unknown subset 'harmles-base'; expected one of: harmless-base, helpful-base; did you mean 'harmless-base'?"
    """

    def __init__(
        self,
        kind: str,
        name: str | list[str] | tuple[str, ...],
        known: list[str] | tuple[str, ...] | None = None,
        *,
        where: str | None = None,
    ):
        if known is None:  # the former UnknownSubsetError(name, known)
            kind, name, known = "name", kind, list(name)
        self.kind = kind
        self.name = name
        self.known = list(known)
        self.where = where
        self.suggestion = _closest(name, self.known)
        if where is None:
            msg = f"unknown {kind} {name!r}; expected one of: {', '.join(self.known)}"
        else:
            there = ", ".join(self.known) or "nothing"
            msg = f"{where}: no {kind} {name!r}; {kind}s there: {there}"
        if self.suggestion is not None:
            msg += f"; did you mean {self.suggestion!r}?"
        super().__init__(msg)

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


def _closest(name: object, known: list[str]) -> str | None:
    """The known name most like ``name`` (case aside), when one is close enough to be a typo."""
    if not isinstance(name, str):
        return None
    by_lower = {str(k).lower(): str(k) for k in known}
    match = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.75)
    if not match and len(name) >= 3:  # the start of one name only ("red-team")
        match = [k for k in by_lower if k.startswith(name.lower())]
    if len(match) != 1 or by_lower[match[0]] == name:
        return None
    return by_lower[match[0]]


#: The former name of :class:`UnknownNameError`, kept for callers.
UnknownSubsetError = UnknownNameError


class MissingExtraError(HHError, ImportError):
    """An optional dependency is missing; names the ``pip install 'hhrlhf[extra]'`` to run."""

    def __init__(self, extra: str, module: str, feature: str | None = None):
        self.extra = extra
        self.module = module
        what = feature or "this feature"
        self.hint = f"pip install 'hhrlhf[{extra}]'"
        super().__init__(f"{what} needs the {module!r} package: pip install 'hhrlhf[{extra}]'")


class ModelFormatError(HHError):
    """A saved preference model is missing, corrupt, or from another format version."""

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class OutputError(HHError):
    """An output path cannot be written, or exists and ``--force`` was not given.

    Raised by :func:`hhrlhf.outputs.check_writable` before any work starts."""

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class NoDataError(HHError):
    """The data asked for is not there: no such file or directory, or a directory holding no
    data file. ``path`` is what was looked for."""

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class RecordKindError(HHError, ValueError):
    """Records of one kind where the other is needed: red-team attempts given to a reader, a
    format or a command of preference pairs, or the reverse. ``holds`` and ``wanted`` are
    ``"pairs"`` or ``"attempts"``."""

    def __init__(self, message: str, *, holds: str, wanted: str):
        self.holds = holds
        self.wanted = wanted
        super().__init__(message)


class ConfigError(HHError, ValueError):
    """A configuration file cannot be read or does not say what is needed (``path``: the file)."""

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class BackendError(HHError):
    """A generation backend failed: ``message`` is safe to show an annotator, ``detail`` is
    for the operator."""

    def __init__(self, message: str, detail: str = ""):
        self.message = message
        self.detail = detail
        super().__init__(f"{message}: {detail}" if detail else message)


def require(module: str, extra: str, feature: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(extra, module.split(".")[0], feature) from exc


def require_installed(module: str, extra: str, feature: str | None = None) -> None:
    """:func:`require` without the import: raise :class:`MissingExtraError` now if ``module``
    is not installed, and leave its import for when it is needed."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses it, a module without a spec
        found = False
    if not found:
        raise MissingExtraError(extra, module.split(".")[0], feature)


class CollectError(HHError):
    """Something the collection app refuses to do. Its subclasses say why, in the app's own
    words (no HTTP here: the web layer maps each class to a status, in one table)."""


class Invalid(CollectError):
    """The input breaks a rule (a speaker marker in a message, an unknown mode, a choice
    without a strength...)."""


class TooLarge(Invalid):
    """A field or a body over its size limit."""


class Unauthorized(CollectError):
    """No valid login or token."""


class Forbidden(CollectError):
    """Signed in, but not allowed (another annotator's conversation, an admin page)."""


class NotFound(CollectError):
    """No such conversation, turn, review, annotator or row (or not one this person may see)."""


class Conflict(CollectError):
    """The state changed first: a turn already answered, a review taken, the last admin."""


class Unavailable(CollectError):
    """The app cannot do it now (busy, or a part missing); ``retry_after``: seconds to wait,
    when known."""

    def __init__(self, message: str, retry_after: int | None = None):
        self.retry_after = retry_after
        super().__init__(message)


class RateLimited(CollectError):
    """Too many requests; ``retry_after`` is the whole seconds to wait."""

    def __init__(self, message: str, retry_after: int):
        self.retry_after = retry_after
        super().__init__(message)


class ReportBusy(Unavailable):
    """Every red-team report slot is busy, or this very report is being computed."""

    def __init__(self, message: str, retry_after: int = 5):
        super().__init__(message, retry_after)


class ExportCheckError(HHError):
    """A line ``hh collect export`` would write does not parse back to the turns stored for its
    comparison (the export stops; nothing is written)."""
