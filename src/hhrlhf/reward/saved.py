"""The saved-model format every backend shares: a directory with a versioned ``model.json``.

``model.json`` holds the format name and version, the package version that wrote it, the
backend's name, and whatever the backend records (feature settings, hyperparameters, the
training data, training metrics). The backend keeps its own files beside it (the linear
model's ``weights.npz``, the transformers model's ``hf/``). :func:`read_model_json` refuses a
directory written with another :data:`FORMAT_VERSION` with :class:`~hhrlhf.errors.ModelFormatError`.

The training data is described by :func:`describe_training_data`: subsets, splits and rows per
``subset/split`` and, when the files are known, the sha256 of each file read, which lets
:func:`training_overlap` say whether an evaluation reads a file the model was trained on.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .. import __version__
from ..errors import ModelFormatError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "RESERVED_KEYS",
    "read_model_json",
    "write_model_json",
    "user_meta",
    "describe_training_data",
    "file_checksums",
    "training_overlap",
]

#: 2: the ``lex`` group and five more ``dense`` columns (a version-1 model's weights would not
#: line up with this featuriser's columns).
FORMAT_VERSION = 2
FORMAT_NAME = "hhrlhf-preference-model"
#: Keys of ``model.json`` that the format owns; a model's own record (``meta``) never sets them.
RESERVED_KEYS = frozenset({"format", "format_version", "package_version", "backend", "features"})


def user_meta(meta: dict) -> dict:
    """``meta`` without the keys the format owns (:data:`RESERVED_KEYS`)."""
    return {k: v for k, v in meta.items() if k not in RESERVED_KEYS}


def write_model_json(path: str | os.PathLike, backend: str, meta: dict, **owned) -> dict:
    """Write ``path/model.json`` for ``backend`` and return what was written.

    ``owned`` are format-owned keys the backend fills (the linear model's ``features``);
    ``meta`` is the model's own record (hyperparameters, training data, metrics).
    """
    written = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "package_version": __version__,
        "backend": backend,
        **owned,
        **user_meta(meta),
    }
    Path(path, "model.json").write_text(json.dumps(written, indent=2, sort_keys=True) + "\n")
    return written


def read_model_json(path: str | os.PathLike) -> dict:
    """``model.json`` of a model directory, checked for format and version."""
    path = Path(path)
    meta_path = path / "model.json"
    if not meta_path.is_file():
        raise ModelFormatError(path, "not a model directory (no model.json)")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelFormatError(meta_path, f"unreadable model.json: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ModelFormatError(
            meta_path, f"not an hhrlhf preference model (format != {FORMAT_NAME!r})"
        )
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ModelFormatError(
            meta_path,
            f"saved with model format version {version!r}; this hhrlhf ({__version__}) reads "
            f"version {FORMAT_VERSION}: retrain the model or use the hhrlhf version that wrote it "
            f"(package {meta.get('package_version', 'unknown')})",
        )
    return meta


def describe_training_data(pairs, *, files=None, source: str | None = None) -> dict:
    """Subsets, splits and rows per ``subset/split`` of ``pairs``; with ``source`` (a label)
    and ``files`` (:class:`~hhrlhf.layout.DataFile`), also where they came from and the
    sha256 of each file read."""
    rows: dict[str, int] = {}
    for p in pairs:
        key = f"{p.subset}/{p.split}"
        rows[key] = rows.get(key, 0) + 1
    out: dict = {} if source is None else {"source": source}
    out["subsets"] = sorted({str(p.subset) for p in pairs})
    out["splits"] = sorted({str(p.split) for p in pairs})
    out["rows"] = rows
    if files is not None:
        out["sha256"] = file_checksums(files)
    return out


def file_checksums(files) -> dict[str, str]:
    """``{file.rel: sha256}`` of :class:`~hhrlhf.layout.DataFile` s."""
    from ..download import sha256_file

    return {f.rel: sha256_file(f.path) for f in files}


def training_overlap(meta: dict | None, files) -> list[str] | None:
    """The names (``rel``) of ``files`` whose sha256 the model's training record (``meta``)
    lists, sorted; None when the model has no training record with checksums (then no file
    is read)."""
    record = (meta or {}).get("training_data")
    if not isinstance(record, dict) or not isinstance(record.get("sha256"), dict):
        return None
    trained = set(record["sha256"].values())
    return sorted(f for f, digest in file_checksums(files).items() if digest in trained)
