"""The preference pairs a model trains or is evaluated on: which files, read how.

``hh pm train`` reads the ``train`` split where there is one and ``hh pm eval`` the ``test``
split; :func:`select_pair_files` makes that choice for any caller, and :func:`load_pairs`
reads the chosen files completely (fast loader, same records and errors as the reader).
"""

from __future__ import annotations

from ..errors import HHError
from ..layout import DataFile, preferred_split, resolve_source, select_files
from ..subsets import RED_TEAM

__all__ = ["select_pair_files", "load_pairs"]


def select_pair_files(
    subsets, split: str | None, data, preferred: str
) -> tuple[list[DataFile], str | None]:
    """The preference files to read and a note for the user (or None).

    ``split`` when given; else ``preferred`` where some file is of that split; else every
    split there, and the note says so. The red-team attempts hold no pairs: an error.
    """
    if RED_TEAM in subsets:
        raise HHError("red-team-attempts holds attempts, not pairs")
    files = [
        f for f in select_files(list(subsets) or None, split=split, data=data) if not f.red_team
    ]
    note = None
    if split is None and files:
        split = preferred_split(files, preferred)
        if split is None:
            there = ", ".join(dict.fromkeys(f.split for f in files))
            note = f"no {preferred} split in {resolve_source(data).label}: using {there}"
        files = [f for f in files if split is None or f.split == split]
    return files, note


def load_pairs(files: list[DataFile], *, lenient=False, skipped: list | None = None):
    """Every pair of ``files``, in order; an error when there are none. ``lenient``: a flag
    (skipped rows appended to ``skipped``) or a :class:`~hhrlhf.reader.Lenient` policy."""
    from ..fastload import load_files
    from ..reader import Lenient

    pairs = []
    jobs = [(f.path, f.subset, f.split) for f in files]
    for got in load_files(jobs, lenient=Lenient.of(lenient, skipped)):
        pairs += got
    if not pairs:
        raise HHError("no pairs selected (check the subsets, --split and --data)")
    return pairs
