"""The steps of ``hh demo`` as library functions.

Each step reads, computes and writes its outputs under ``out``, and returns what it did; it
prints nothing (``hh demo`` prints the results, and another front end can show them its own
way). The red-team and collection steps need extras and raise
:class:`~hhrlhf.errors.MissingExtraError` without them; the collection step is
:func:`hhrlhf.collect.demo.run_scripted_collection`.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .dataset import DatasetDict, load_dataset
from .errors import HHError, OutputError
from .layout import DataFile, DataSource, resolve_source, select_files
from .outputs import MARKER, mark, replace_dir, replaceable, written_by
from .records import PreferencePair
from .stats import pair_stats
from .transcript import ASSISTANT_MARKER

if TYPE_CHECKING:
    from .checks import AuditResult
    from .reward.backends import RewardModel

__all__ = [
    "DemoData",
    "ShownPair",
    "ConvertDemo",
    "open_demo_data",
    "write_stats",
    "pick_pair",
    "convert_demo",
    "redteam_demo",
    "PmDemo",
    "pm_demo",
    "DEMO_MARKER",
    "is_demo_output",
    "start_demo_output",
    "finish_demo_output",
]

#: The file that marks a folder as an hhrlhf output (here: ``hh demo``'s), which a later demo
#: may replace: :data:`hhrlhf.outputs.MARKER`.
DEMO_MARKER = MARKER
_DEMO = "hh demo"

#: The export formats the convert step writes.
DEMO_FORMATS = ("dpo", "trl-conversational")


def is_demo_output(path: str | os.PathLike) -> bool:
    """Whether ``path`` (a link followed) is a folder that ``hh demo`` made and that holds
    nothing else: its :data:`DEMO_MARKER` says so and lists every file in it."""
    real = Path(os.path.realpath(path))
    return written_by(real) == _DEMO and replaceable(real)


def start_demo_output(path: str | os.PathLike) -> bool:
    """Make ``path`` a fresh demo output folder, marked with :data:`DEMO_MARKER`.

    A folder an earlier demo made (:func:`is_demo_output`) is emptied first, so running the
    demo twice works; so is any other hhrlhf output holding nothing else (the caller asks for
    ``--force`` there). A folder holding anything hhrlhf did not write is never touched: the
    caller refuses it. A link is followed. Returns whether an earlier demo's was replaced.
    """
    real = Path(os.path.realpath(path))
    replaced = is_demo_output(real)
    if real.is_dir() and any(real.iterdir()):
        if not replaceable(real):
            raise OutputError(path, "holds files hhrlhf did not write: choose another folder")
        shutil.rmtree(real)
    real.mkdir(parents=True, exist_ok=True)
    mark(real, _DEMO)
    return replaced


def finish_demo_output(path: str | os.PathLike) -> None:
    """List in the marker everything the demo wrote in ``path``, so that the next demo (or
    ``--force``) replaces it all, and nothing anyone added later."""
    mark(Path(os.path.realpath(path)), _DEMO)


@dataclass
class DemoData:
    """The data the demo walks through: where it is, its files, its preference pairs by split."""

    source: DataSource
    #: ``sample`` for the bundled sample, else ``data`` as given
    label: str
    files: list[DataFile]
    pairs: dict[str, list[PreferencePair]]

    @property
    def pair_files(self) -> list[DataFile]:
        return [f for f in self.files if not f.red_team]

    @property
    def has_red_team(self) -> bool:
        return any(f.red_team for f in self.files)

    @property
    def subsets(self) -> str:
        """The preference subsets there (or file names), comma-separated, in file order."""
        return ", ".join(dict.fromkeys(str(f.subset or f.path.name) for f in self.pair_files))


def open_demo_data(data: str | os.PathLike | DataSource = "sample") -> DemoData:
    """Select every file of ``data`` and load its preference pairs (:func:`load_dataset`).

    Raises :class:`~hhrlhf.errors.HHError` when there are no preference pairs to walk through.
    """
    src = resolve_source(data)
    files = select_files("all", data=src)
    label = "sample" if src.kind == "sample" else str(data)
    pairs: dict[str, list[PreferencePair]] = {}
    if any(not f.red_team for f in files):
        loaded = load_dataset(data=src)
        # no split named: one list per split (a red-team only source has no pair files here)
        pairs = dict(loaded) if isinstance(loaded, DatasetDict) else {}
    if not any(pairs.values()):
        raise HHError(f"{src.label}: no preference pairs to walk through")
    return DemoData(source=src, label=label, files=files, pairs=dict(pairs))


def write_stats(pairs: dict[str, list[PreferencePair]], out: str | os.PathLike) -> dict:
    """:func:`~hhrlhf.stats.pair_stats` of each split, also written to ``out/stats.json``."""
    stats = {split: pair_stats(split_pairs) for split, split_pairs in pairs.items()}
    (Path(out) / "stats.json").write_text(json.dumps(stats, indent=2))
    return stats


@dataclass
class ShownPair:
    """A pair worth showing, with the facts the demo says about it."""

    pair: PreferencePair
    #: ``prompt + chosen_response == chosen`` (and the same for rejected)
    chosen_reassembles: bool
    rejected_reassembles: bool
    #: where a split of ``chosen`` at its right-most assistant marker would end the prompt
    naive_prompt_end: int


def pick_pair(pairs: dict[str, list[PreferencePair]]) -> ShownPair:
    """The first pair whose response holds speaker markers itself (class
    ``response_contains_turns``), looking at harmless-base/test first; without one, the first
    test pair (or the first pair)."""
    every = [p for p in pairs.get("test", []) if p.subset == "harmless-base"]
    every += [p for split_pairs in pairs.values() for p in split_pairs if p not in every]
    default = pairs["test"][0] if pairs.get("test") else every[0]
    p = next((p for p in every if "response_contains_turns" in p.classes), default)
    naive = p.chosen.rfind(ASSISTANT_MARKER) + len(ASSISTANT_MARKER)
    return ShownPair(
        pair=p,
        chosen_reassembles=p.prompt + p.chosen_response == p.chosen,
        rejected_reassembles=p.prompt + p.rejected_response == p.rejected,
        naive_prompt_end=naive,
    )


@dataclass
class ConvertDemo:
    """What the convert step wrote: exports, the audit, the cleaned copy."""

    #: (file key, format, pairs written, path) of each export
    exports: list[tuple[str, str, int, Path]] = field(default_factory=list)
    #: the :class:`~hhrlhf.checks.AuditResult` of every check over every file
    audit: AuditResult | None = None
    clean_dir: Path | None = None
    #: the cleaned copy's manifest (:func:`hhrlhf.clean.clean`)
    manifest: dict = field(default_factory=dict)


def convert_demo(data: str | os.PathLike | DataSource, out: str | os.PathLike) -> ConvertDemo:
    """Export one preference file (harmless-base/test where it is there) in
    :data:`DEMO_FORMATS`, audit every file with every check and clean them; all under
    ``out/convert/`` (the cleaned copy in ``out/convert/clean``: an earlier hhrlhf output
    there is replaced whole, any other folder refused)."""
    from .checks import audit
    from .clean import clean
    from .convert import export_records
    from .reader import read_pairs

    base = Path(out) / "convert"
    base.mkdir(parents=True, exist_ok=True)
    files = [f for f in select_files(data=data) if not f.red_team]
    f = next((f for f in files if f.key == "harmless-base/test"), files[0])
    done = ConvertDemo()
    for fmt in DEMO_FORMATS:
        target = base / f"{f.subset}-{f.split}.{fmt}.jsonl"
        n = export_records(read_pairs(f.path, subset=f.subset, split=f.split), fmt, target)
        done.exports.append((f.key, fmt, n, target))
    done.audit = audit(["all"], data=data)
    done.clean_dir = base / "clean"
    # an earlier demo's copy is replaced whole; a folder hhrlhf did not write there is refused
    with replace_dir(done.clean_dir, command=_DEMO) as tmp:
        done.manifest = clean(["all"], out=tmp, data=data, result=done.audit)
    return done


def redteam_demo(
    data: str | os.PathLike | DataSource, out: str | os.PathLike
) -> tuple[dict[str, Path], dict]:
    """The red-team report of ``data`` under ``out/redteam``: ``(paths, report)``, the paths as
    :func:`~hhrlhf.redteam.report.generate_report` returns them and the report as report.json
    holds it."""
    from .redteam.report import generate_report

    paths = generate_report(data, Path(out) / "redteam")
    return paths, json.loads(paths["json"].read_text(encoding="utf-8"))


@dataclass
class PmDemo:
    """What :func:`pm_demo` did: where, the model and its evaluation report, or why not."""

    out: Path
    #: Why there is no model (no train or no test split), else None.
    skipped: str | None = None
    model: RewardModel | None = None
    report: dict | None = None
    train_pairs: int = 0


def _first_pair(f: DataFile) -> PreferencePair | None:
    from .reader import read_pairs

    return next(iter(read_pairs(f.path, subset=f.subset, split=f.split)), None)


def pm_demo(data: str | os.PathLike | DataSource, out: str | os.PathLike) -> PmDemo:
    """Train the linear PM on the train split of ``data``, evaluate it on the test split with
    the baselines, and write ``out/pm/model`` and ``out/pm/eval.json`` (needs ``[reward]``)."""
    import orjson

    from .reward.data import load_pairs
    from .reward.evaluate import evaluate_model
    from .reward.model import train_pm
    from .reward.saved import describe_training_data

    out = Path(out) / "pm"
    out.mkdir(parents=True, exist_ok=True)
    src = resolve_source(data)
    files = [f for f in select_files(data=src) if not f.red_team]
    train_files = [f for f in files if f.split == "train"]
    test_files = [f for f in files if f.split == "test"]
    if not train_files or not test_files:
        missing = "train" if not train_files else "test"
        return PmDemo(
            out,
            skipped=f"no {missing} split in {src.label} "
            "(a model is trained on train and evaluated on test)",
        )
    for name, split_files in (("train", train_files), ("test", test_files)):
        if not any(_first_pair(f) for f in split_files):  # there, as an empty file
            return PmDemo(
                out,
                skipped=f"the {name} split in {src.label} is empty "
                "(a model is trained on train and evaluated on test)",
            )
    train_pairs = load_pairs(train_files)
    test_pairs = load_pairs(test_files)
    record = describe_training_data(train_pairs, files=train_files, source=src.label)
    model = train_pm(train_pairs, training_data=record)
    model.save(out / "model")
    report = evaluate_model(model, test_pairs)
    (out / "eval.json").write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2))
    return PmDemo(out, model=model, report=report, train_pairs=len(train_pairs))
