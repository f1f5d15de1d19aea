"""hhrlhf: Anthropic's HH-RLHF preference and red-team data, loaded exactly, converted, audited.

>>> import hhrlhf
>>> ds = hhrlhf.load_dataset("harmless-base", data="sample")
>>> pair = ds["test"][0]
>>> pair.prompt + pair.chosen_response == pair.chosen
True
"""

from .dataset import (
    DatasetDict,
    RecordList,
    iter_attempts,
    iter_pairs,
    load_arrow,
    load_attempts,
    load_dataset,
    load_pairs,
    resolve_source,
)
from .download import ensure_file
from .errors import (
    ChecksumMismatchError,
    DataFormatError,
    DownloadError,
    HHError,
    MissingExtraError,
    OfflineError,
    UnknownNameError,
)
from .layout import DataFile, select_files
from .reader import SkippedRow, read_attempts, read_pairs
from .records import PAIR_CLASSES, PreferencePair, RedTeamAttempt, classify_pair
from .subsets import DEFAULT, SUBSETS, FileSpec, Subset
from .transcript import Dialogue, Turn, align_pair, parse_transcript, render_transcript

__version__ = "0.1.0"

__all__ = [
    "load_dataset",
    "load_arrow",
    "iter_pairs",
    "select_files",
    "DataFile",
    "DatasetDict",
    "UnknownNameError",
    "iter_attempts",
    "load_pairs",
    "load_attempts",
    "resolve_source",
    "ensure_file",
    "RecordList",
    "read_pairs",
    "read_attempts",
    "SkippedRow",
    "PreferencePair",
    "RedTeamAttempt",
    "PAIR_CLASSES",
    "classify_pair",
    "Dialogue",
    "Turn",
    "parse_transcript",
    "render_transcript",
    "align_pair",
    "SUBSETS",
    "DEFAULT",
    "Subset",
    "FileSpec",
    "HHError",
    "DataFormatError",
    "ChecksumMismatchError",
    "DownloadError",
    "OfflineError",
    "MissingExtraError",
    "__version__",
]
