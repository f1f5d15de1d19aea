"""One root exception, :class:`HHError`, and its documented children.

Every error a user can cause (bad files, wrong checksums, missing extras, unknown
names) is one of these, carries what is needed to act on it, and renders as one
clear line. The CLI prints ``str(error)`` and exits non-zero.
"""

from __future__ import annotations

__all__ = [
    "HHError",
    "DataFormatError",
    "ChecksumMismatchError",
    "DownloadError",
    "OfflineError",
    "NotCachedError",
    "UnknownSubsetError",
    "MissingExtraError",
    "ModelFormatError",
    "CollectError",
]


class HHError(Exception):
    """Root of every error hhrlhf raises on purpose."""

    #: A one-line hint on how to fix the problem, shown by the CLI when set.
    hint: str | None = None


class DataFormatError(HHError, ValueError):
    """A data file is malformed: names the file, the 1-based line (or record) and the problem.

    ``line`` is the physical line for JSONL, or the 1-based element number for a JSON
    array file (``record`` says which of the two it is). ``line`` is None when the
    problem is the file as a whole (empty file, truncated gzip before any line, ...).
    """

    def __init__(self, path: str, line: int | None, problem: str, *, unit: str = "line"):
        self.path = str(path)
        self.line = line
        self.problem = problem
        self.unit = unit
        where = self.path if line is None else f"{self.path}, {unit} {line}"
        super().__init__(f"{where}: {problem}")


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

    def __init__(self, what: str):
        self.what = what
        self.hint = "unset HH_RLHF_OFFLINE (or drop --offline) to download it, or use --data PATH"
        super().__init__(f"offline mode: {what} is not in the cache and will not be downloaded")


class NotCachedError(HHError):
    """A subset file is not in the cache and downloading was not allowed."""

    def __init__(self, path: str):
        self.path = str(path)
        self.hint = "run `hh download` first, or pass --data PATH|sample"
        super().__init__(f"{self.path} is not in the cache")


class UnknownSubsetError(HHError, KeyError):
    """A subset or split name that the registry does not know."""

    def __init__(self, name: str, known: list[str] | tuple[str, ...]):
        self.name = name
        self.known = list(known)
        super().__init__(f"unknown name {name!r}; expected one of: {', '.join(self.known)}")

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


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

    def __init__(self, path: str, problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def require(module: str, extra: str, feature: str | None = None):
    """Import ``module`` or raise :class:`MissingExtraError` naming the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(extra, module.split(".")[0], feature) from exc


class CollectError(HHError):
    """A request the collection app refuses: ``status`` is the HTTP status it maps to."""

    def __init__(self, message: str, status: int = 400):
        self.status = status
        super().__init__(message)
