"""Convert commands: ``hh export`` and ``hh import`` (``hh check``/``hh clean``: :mod:`.audit`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..convert import FORMATS
from ..convert.formats import MESSAGE_FORMATS
from ..errors import HHError
from ..outputs import atomic_files, replace_dir
from ..subsets import RED_TEAM
from .options import (
    Choice,
    check_outputs,
    data_option,
    fail_if_all_skipped,
    file_subsets,
    force_option,
    lenient_option,
    note_rows_read,
    pass_lenient,
    report_skipped,
    subset_option,
)

__all__ = ["commands", "export", "import_", "demo_step"]


def _chatter(msg: str) -> None:
    click.echo(msg, err=True)


def _records(subsets, split, data, fmt, lenient=None):
    """(split name -> iterator of records) for export; ``lenient`` skips bad rows."""
    from ..layout import select_files
    from ..reader import read_attempts, read_pairs

    names = list(subsets)
    if fmt.kind == "red-team":
        if names and names != [RED_TEAM]:
            raise click.BadParameter("--format redteam exports red-team-attempts only")
        files = select_files(names or RED_TEAM, split=split, data=data)
        if not files[0].red_team:
            raise click.BadParameter(f"{files[0].path} holds pairs: use a pair format")
        return {files[0].split: read_attempts(files[0].path, lenient=lenient)}
    if RED_TEAM in names:
        raise click.BadParameter("red-team-attempts holds attempts: use --format redteam")
    files = [f for f in select_files(names or None, split=split, data=data) if not f.red_team]
    if not files:
        raise click.BadParameter("the data holds red-team attempts: use --format redteam")
    by_split: dict[str, list] = {}
    for f in files:
        by_split.setdefault(f.split, []).append(f)

    def chain(fs):
        for f in fs:
            yield from read_pairs(f.path, subset=f.subset, split=f.split, lenient=lenient)

    return {s: chain(fs) for s, fs in by_split.items()}


@click.command()
@click.argument("subsets", nargs=-1)
@click.option("--split", default=None, metavar="SPLIT", help="train or test (default: both).")
@click.option(
    "--format",
    "fmt_name",
    required=True,
    metavar="FORMAT",
    type=Choice(list(FORMATS)),
    help=f"Output format: {', '.join(FORMATS)} (docs/convert.md says which trainer takes which).",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output file; the container follows the name: .jsonl, .jsonl.gz, .parquet. "
    "Several splits selected: one file per split, named from it (x.jsonl -> x.train.jsonl, "
    "x.test.jsonl). '-': stdout (JSONL, one split).",
)
@click.option(
    "--hf",
    "hf_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write a Hugging Face DatasetDict here (save_to_disk) instead of a file.",
)
@click.option("--no-source", is_flag=True, help="Leave out the subset/split/index of each row.")
@click.option(
    "--merge-consecutive",
    is_flag=True,
    help="Message formats: join two or more same-role turns in a row into one message "
    '(contents joined by "\\n\\n"), for chat templates that require alternating roles.',
)
@click.option(
    "--margins",
    "margins_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FLAGS.jsonl",
    help="Add each pair's margin and p_mislabelled columns from hh pm flag's output (for an "
    "adaptive margin or label smoothing: docs/pm.md).",
)
@data_option
@subset_option
@lenient_option
@force_option
@pass_lenient
def export(
    subsets,
    split,
    fmt_name,
    out,
    hf_dir,
    no_source,
    merge_consecutive,
    margins_path,
    data,
    file_subset,
    lenient,
    force,
):
    """Export pairs (or red-team attempts) in the format a trainer wants.

    \b
    Examples:
      hh export harmless-base --split test --format dpo --out test.dpo.jsonl --data sample
      hh export --format trl-conversational --hf hh-trl --data sample
      hh export red-team-attempts --format redteam --out rt.parquet --data sample
    """
    from ..convert import get_format

    if (out is None) == (hf_dir is None):
        raise click.UsageError("give exactly one of --out FILE or --hf DIR")
    to_stdout = out == "-"
    if not to_stdout:
        check_outputs(force, hf=(hf_dir, "dir"))
    subsets = file_subsets(subsets, file_subset, data)
    fmt = get_format(fmt_name)
    if merge_consecutive and fmt.name not in MESSAGE_FORMATS:
        raise click.BadParameter(
            f"joins chat messages; format {fmt.name!r} holds text "
            f"(message formats: {', '.join(MESSAGE_FORMATS)})",
            param_hint="--merge-consecutive",
        )
    splits = _records(subsets, split, data, fmt, lenient)
    merged: list = []
    merging = {"merge_consecutive": merge_consecutive, "merged": merged}
    if margins_path is not None:
        if fmt.kind == "red-team":
            raise click.UsageError("--margins: red-team attempts have no pair flags")
        from ..reward.flag import read_flags

        merging["margins"] = read_flags(margins_path)
    job = _Export(fmt, list(subsets) or None, data, lenient, not no_source, merging)
    if hf_dir:
        _export_hf(job, splits, hf_dir)
    elif to_stdout:
        _export_stdout(job, splits)
    else:
        _export_files(job, splits, out, force)
    _report_merged(merged, merge_consecutive)


@dataclass(frozen=True)
class _Export:
    """What ``hh export`` writes: the format, the data it reads, whether rows keep their
    source, and the row options (``merge_consecutive``, ``merged``, ``margins``)."""

    fmt: Any
    subsets: list[str] | None
    data: Any
    lenient: Any
    source: bool
    merging: dict[str, Any]

    def straight_to_arrow(self) -> bool:
        """Whether the rows can go from the files into Arrow columns (the same rows, errors
        and order), without records."""
        from ..convert.export import ARROW_FORMATS

        return self.fmt.name in ARROW_FORMATS and "margins" not in self.merging

    def arrow_table(self, split: str) -> Any:
        from ..dataset import load_arrow

        return load_arrow(
            self.subsets, split=split, data=self.data, columns=self.fmt.name, lenient=self.lenient
        )


def _export_hf(job: _Export, splits: dict[str, Any], hf_dir: Path) -> None:
    """``--hf DIR``: a DatasetDict, one dataset per split."""
    from ..convert import export_hf
    from ..convert.export import export_arrow

    if job.straight_to_arrow():
        tables = {s: job.arrow_table(s) for s in splits}
        with replace_dir(hf_dir) as tmp:
            dd = export_arrow(tables, hf_dir=tmp, source=job.source)
    else:
        with replace_dir(hf_dir) as tmp:
            dd = export_hf(splits, job.fmt, tmp, source=job.source, **job.merging)
    note_rows_read(sum(len(v) for v in dd.values()))
    sizes = ", ".join(f"{k}: {len(v)}" for k, v in dd.items())
    _chatter(f"wrote DatasetDict ({sizes}) in format {job.fmt.name} to {hf_dir}")


def _export_stdout(job: _Export, splits: dict[str, Any]) -> None:
    """``--out -``: one split's rows to stdout."""
    from ..convert import format_rows

    # one split only: a file of several splits is the trap this command avoids
    if len(splits) > 1:
        raise HHError(
            f"--out - writes one split, and {len(splits)} are selected "
            f"({', '.join(splits)}): pass --split {next(iter(splits))}, or an --out file "
            "(one file per split)"
        )
    n = 0
    write = sys.stdout.buffer.write
    fmt = job.fmt
    rows = format_rows(next(iter(splits.values())), fmt, source=job.source, **job.merging)
    for row in rows:
        write(fmt.encode(row))
        n += 1
    sys.stdout.flush()
    note_rows_read(n)
    _chatter(f"wrote {n} rows in format {fmt.name} to stdout")


def _export_files(job: _Export, splits: dict[str, Any], out: str, force: bool) -> None:
    """``--out FILE``: one file, or one file per split; all of them written or none."""
    from ..convert import export_records
    from ..convert.export import export_arrow
    from ..convert.files import CONTAINERS, container_of, split_path

    # a single-file --out never mixes splits: several splits get one file each
    targets = {s: Path(out) for s in splits}
    if len(splits) > 1 and any(out.endswith(e) for e in CONTAINERS):
        targets = {s: split_path(out, s) for s in splits}
    for target in dict.fromkeys(targets.values()):
        check_outputs(force, out=(target, "file"))
    container_of(out)  # an unknown ending is an error before any work
    if len(splits) > 1:
        _chatter(
            f"{len(splits)} splits selected ({', '.join(splits)}): one file per split, "
            f"named from {out} (--split SPLIT writes one file under that name)"
        )
    wrote = []
    # every split to a temporary file first, then all moved in: all of them or none
    with atomic_files([targets[s] for s in splits]) as parts:
        for (s, records), part in zip(splits.items(), parts, strict=True):
            if job.straight_to_arrow() and container_of(targets[s]) == "parquet":
                n = export_arrow({s: job.arrow_table(s)}, part, source=job.source)
            else:
                n = export_records(records, job.fmt, part, source=job.source, **job.merging)
            note_rows_read(n)
            what = f"{n} {s} rows" if len(splits) > 1 else f"{n} rows"
            wrote.append(f"wrote {what} in format {job.fmt.name} to {targets[s]}")
    for line in wrote:
        _chatter(line)


def _report_merged(merged: list, on: bool) -> None:
    """One stderr line: how many rows --merge-consecutive changed, and which."""
    if not on:
        return
    names = [f"{r.subset}/{r.split}/{r.index}" for r in merged[:20]]
    more = f" and {len(merged) - 20} more" if len(merged) > 20 else ""
    _chatter(
        f"--merge-consecutive: joined same-role turns in {len(merged)} row(s)"
        + (f": {', '.join(names)}{more}" if merged else "")
    )


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--format",
    "fmt_name",
    required=True,
    metavar="FORMAT",
    # a conversation format (sft) reads back into one dialogue, not a pair
    type=Choice([n for n, f in FORMATS.items() if f.kind != "conversation"]),
    help="The format FILE was written in.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write upstream-style rows here (.jsonl or .jsonl.gz); default: stdout.",
)
@click.option(
    "--source",
    "with_source",
    is_flag=True,
    help="Keep subset/split/index on each row (default: upstream keys only).",
)
@click.option(
    "--lenient",
    is_flag=True,
    help="Skip rows that do not fit the format; each is reported on stderr.",
)
@force_option
def import_(file, fmt_name, out, with_source, lenient, force):
    """Read an exported file back into upstream rows ({"chosen", "rejected"}, or red-team records).

    \b
    Examples:
      hh import test.dpo.jsonl --format dpo --out test.jsonl.gz
      hh import rt.jsonl --format redteam | head -1
    """
    from ..convert import get_format, import_records, write_rows
    from ..reader import Lenient

    check_outputs(force, reads=[(file, "the file")], out=(out, "file"))
    fmt = get_format(fmt_name)
    policy = Lenient.of(lenient)
    records = import_records(file, fmt, lenient=policy)
    if fmt.kind == "red-team":
        rows = (
            dict(r.to_dict(real_keys=True), **({"index": r.index} if with_source else {}))
            for r in records
        )
    else:
        rows = (r.to_dict(source=with_source) for r in records)
    raw = get_format("raw")
    skipped = policy.skipped if policy is not None else []
    try:
        if out:
            n = write_rows(rows, out, encode=raw.encode)
            _chatter(f"wrote {n} rows to {out}")
        else:
            n = 0
            for row in rows:
                sys.stdout.buffer.write(raw.encode(row))
                n += 1
            sys.stdout.flush()
        note_rows_read(n)
    finally:
        report_skipped(skipped, lenient=policy is not None)
    if policy is not None:
        fail_if_all_skipped(skipped)


def demo_step(data: str, out: Path) -> None:
    """Export, audit and clean ``data`` (:func:`hhrlhf.demo.convert_demo`); print what it did."""
    from ..demo import convert_demo

    done = convert_demo(data, out)
    for key, fmt, n, target in done.exports:
        click.echo(f"export: {n} {key} pairs as {fmt} -> {target}")
    result = done.audit
    assert result is not None  # convert_demo always audits
    flagged = {k: v for k, v in result.counts.items() if v}
    click.echo(
        f"check: {result.rows} rows, {len(result.flags)} flagged: "
        + ", ".join(f"{k}={v}" for k, v in flagged.items())
    )
    if result.skipped:
        why = "; ".join(dict.fromkeys(result.skipped.values()))
        click.echo(f"check: skipped {', '.join(result.skipped)}: {why}")
    m = done.manifest
    click.echo(
        f"clean: {m['rows']} rows in = {m['kept']} kept + {m['dropped']} dropped "
        f"({', '.join(f'{k}={v}' for k, v in m['dropped_by_reason'].items())}) -> {done.clean_dir}"
    )


commands = [export, import_]
