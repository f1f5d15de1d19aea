"""Convert and audit commands: ``hh export``, ``hh import``, ``hh check``, ``hh clean``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..convert import FORMATS
from ..errors import UnknownSubsetError
from ..outputs import replace_dir
from ..subsets import RED_TEAM
from .options import (
    check_outputs,
    data_option,
    emit_json,
    file_subsets,
    force_option,
    json_option,
    print_table,
    subset_option,
)

__all__ = ["commands", "export", "import_", "check", "clean", "demo_step"]


def _chatter(msg: str) -> None:
    click.echo(msg, err=True)


def _class_names(values, option: str) -> list[str]:
    from ..checks import check_class_names

    try:
        return check_class_names(values)
    except UnknownSubsetError as exc:
        raise click.BadParameter(
            f"unknown class {exc.name!r}; valid classes: {', '.join(exc.known)}",
            param_hint=option,
        ) from None


def _records(subsets, split, data, fmt):
    """(split name -> iterator of records) for export."""
    from ..layout import select_files
    from ..reader import read_attempts, read_pairs

    names = list(subsets)
    if fmt.kind == "red-team":
        if names and names != [RED_TEAM]:
            raise click.BadParameter("--format redteam exports red-team-attempts only")
        files = select_files(names or RED_TEAM, split=split, data=data)
        if not files[0].red_team:
            raise click.BadParameter(f"{files[0].path} holds pairs: use a pair format")
        return {files[0].split: read_attempts(files[0].path)}
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
            yield from read_pairs(f.path, subset=f.subset, split=f.split)

    return {s: chain(fs) for s, fs in by_split.items()}


@click.command()
@click.argument("subsets", nargs=-1)
@click.option("--split", default=None, metavar="SPLIT", help="train or test (default: both).")
@click.option(
    "--format",
    "fmt_name",
    required=True,
    metavar="FORMAT",
    type=click.Choice(list(FORMATS)),
    help="Output format (see docs/convert.md).",
)
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Output file; the container follows the name: .jsonl, .jsonl.gz, .parquet.",
)
@click.option(
    "--hf",
    "hf_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Write a Hugging Face DatasetDict here (save_to_disk) instead of a file.",
)
@click.option("--no-source", is_flag=True, help="Leave out the subset/split/index of each row.")
@data_option
@subset_option
@force_option
def export(subsets, split, fmt_name, out, hf_dir, no_source, data, file_subset, force):
    """Export pairs (or red-team attempts) in the format a trainer wants.

    \b
    Examples:
      hh export harmless-base --split test --format dpo --out test.dpo.jsonl --data sample
      hh export --format trl-conversational --hf hh-trl --data sample
      hh export red-team-attempts --format redteam --out rt.parquet --data sample
    """
    from ..convert import export_hf, export_records, get_format
    from ..convert.export import ARROW_FORMATS, export_arrow
    from ..convert.files import container_of

    if (out is None) == (hf_dir is None):
        raise click.UsageError("give exactly one of --out FILE or --hf DIR")
    check_outputs(force, out=(out, "file"), hf=(hf_dir, "dir"))
    subsets = file_subsets(subsets, file_subset, data)
    fmt = get_format(fmt_name)
    splits = _records(subsets, split, data, fmt)
    if fmt.name in ARROW_FORMATS and (hf_dir or container_of(out) == "parquet"):
        # straight from the files into Arrow columns (the same rows, errors and order)
        from ..dataset import load_arrow

        tables = {
            s: load_arrow(list(subsets) or None, split=s, data=data, columns=fmt.name)
            for s in splits
        }
        got = export_arrow(tables, out, hf_dir=hf_dir, source=not no_source)
        if hf_dir:
            sizes = ", ".join(f"{k}: {len(v)}" for k, v in got.items())
            _chatter(f"wrote DatasetDict ({sizes}) in format {fmt.name} to {hf_dir}")
        else:
            _chatter(f"wrote {got} rows in format {fmt.name} to {out}")
        return
    if hf_dir:
        with replace_dir(hf_dir) as tmp:
            dd = export_hf(splits, fmt, tmp, source=not no_source)
        sizes = ", ".join(f"{k}: {len(v)}" for k, v in dd.items())
        _chatter(f"wrote DatasetDict ({sizes}) in format {fmt.name} to {hf_dir}")
        return
    import itertools

    n = export_records(
        itertools.chain.from_iterable(splits.values()), fmt, out, source=not no_source
    )
    _chatter(f"wrote {n} rows in format {fmt.name} to {out}")


@click.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--format",
    "fmt_name",
    required=True,
    metavar="FORMAT",
    # a conversation format (sft) reads back into one dialogue, not a pair
    type=click.Choice([n for n, f in FORMATS.items() if f.kind != "conversation"]),
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

    check_outputs(force, out=(out, "file"))
    fmt = get_format(fmt_name)
    skipped: list = []
    records = import_records(file, fmt, lenient=lenient, skipped=skipped)
    if fmt.kind == "red-team":
        rows = (
            dict(r.to_dict(real_keys=True), **({"index": r.index} if with_source else {}))
            for r in records
        )
    else:
        rows = (r.to_dict(source=with_source) for r in records)
    raw = get_format("raw")
    try:
        if out:
            n = write_rows(rows, out, encode=raw.encode)
            _chatter(f"wrote {n} rows to {out}")
        else:
            for row in rows:
                sys.stdout.buffer.write(raw.encode(row))
            sys.stdout.flush()
    finally:
        for s in skipped:
            _chatter(f"skipped: {s}")
        if skipped:
            _chatter(f"{len(skipped)} row(s) skipped")


def _report_skipped_checks(skipped: dict[str, str]) -> None:
    """One stderr line naming the checks that could not run on the data at hand, and why."""
    if skipped:
        why = "; ".join(dict.fromkeys(skipped.values()))
        _chatter(f"skipped {', '.join(skipped)}: {why}")


def _short(text: str, n: int = 64) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _print_counts(result) -> None:
    from ..checks import CLASSES

    counts = result.counts
    rows = [
        {
            "class": name,
            "rows": counts[name],
            "severity": CLASSES[name].severity,
            "meaning": _short(CLASSES[name].description),
        }
        for name in CLASSES
        if counts[name]
    ]
    click.echo(f"{result.rows} rows in {len(result.files)} file(s); {len(result.flags)} flagged")
    if rows:
        print_table(rows, ["class", "rows", "severity", "meaning"])
    else:
        click.echo("no class flagged")


@click.command()
@click.argument("subsets", nargs=-1)
@click.option("--split", default=None, metavar="SPLIT", help="train or test (default: both).")
@click.option(
    "--report",
    "report",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write one JSON line per flagged row (source, classes, excerpt).",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    metavar="CLASS",
    help="Exit 1 when any row has CLASS (repeat, or comma-separate).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.8,
    show_default=True,
    help="Jaccard threshold for near_duplicate_leak.",
)
@click.option(
    "--near-dups/--no-near-dups",
    default=True,
    show_default=True,
    help="Run MinHash LSH near-duplicate detection (needs hhrlhf[audit]).",
)
@data_option
@subset_option
@json_option
@force_option
def check(subsets, split, report, fail_on, threshold, near_dups, data, file_subset, as_json, force):
    """Audit the data: per-pair classes, duplicates, train/test leaks, near duplicates, red team.

    SUBSETS default to the four preference subsets; 'all' adds red-team-attempts.

    \b
    Examples:
      hh check --data sample
      hh check all --json --report flagged.jsonl --data sample
      hh check --fail-on duplicate_pair,train_test_leak --data sample || echo "fix the data"
    """
    from ..checks import audit

    subsets = file_subsets(subsets, file_subset, data)
    fail_classes = _class_names(fail_on, "--fail-on")
    check_outputs(force, report=(report, "file"))
    result = audit(
        subsets or None,
        split=split,
        data=data,
        near_duplicates=near_dups,
        threshold=threshold,
        progress=_chatter,
    )
    _report_skipped_checks(result.skipped)
    if report:
        from ..convert import write_rows

        n = write_rows(result.report_rows(), report)
        _chatter(f"wrote {n} flagged row(s) to {report}")
    if as_json:
        emit_json(result.to_json())
    else:
        _print_counts(result)
    failed = [c for c in fail_classes if result.counts[c]]
    if failed:
        _chatter("failing: " + ", ".join(f"{c} ({result.counts[c]})" for c in failed))
        sys.exit(1)


@click.command()
@click.argument("subsets", nargs=-1)
@click.option("--split", default=None, metavar="SPLIT", help="train or test (default: both).")
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False),
    help="New directory for the cleaned copy (upstream layout).",
)
@click.option(
    "--drop",
    "drop",
    multiple=True,
    metavar="CLASS",
    help="Drop rows with CLASS (repeat, or comma-separate); default: every error class.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.8,
    show_default=True,
    help="Jaccard threshold, when near_duplicate_leak is dropped.",
)
@click.option(
    "--keep-readable",
    is_flag=True,
    help="Clean a cut .gz up to where it breaks instead of failing; manifest.json records "
    "the lost part under 'lost' and each is reported on stderr (a CRC error still fails).",
)
@data_option
@subset_option
@json_option
@force_option
def clean(subsets, split, out, drop, threshold, keep_readable, data, file_subset, as_json, force):
    """Write a cleaned copy plus manifest.json and dropped.jsonl (rows in = kept + dropped).

    \b
    Examples:
      hh clean --out hh-clean --data sample
      hh clean all --out hh-clean --drop duplicate_pair --drop train_test_leak --data sample
    """
    from ..checks import DEFAULT_DROP
    from ..clean import clean as run_clean

    subsets = file_subsets(subsets, file_subset, data)
    names = _class_names(drop, "--drop") if drop else list(DEFAULT_DROP)
    check_outputs(force, out=(out, "dir"))
    with replace_dir(out) as tmp:  # all or nothing; --force replaces the old copy whole
        manifest = run_clean(
            subsets or None,
            out=tmp,
            split=split,
            data=data,
            drop=names,
            threshold=threshold,
            progress=_chatter,
            keep_readable=keep_readable,
        )
    _report_skipped_checks(manifest.get("skipped", {}))
    for rel, lost in manifest.get("lost", {}).items():
        _chatter(
            f"LOST DATA: {rel}: {lost['problem']}; the copy holds only the "
            f"{lost['rows_read']:,} line(s) before it"
        )
    if as_json:
        emit_json(manifest)
        return
    click.echo(
        f"{manifest['rows']} rows in, {manifest['kept']} kept, "
        f"{manifest['dropped']} dropped -> {out}"
    )
    for reason, n in manifest["dropped_by_reason"].items():
        click.echo(f"  {reason}: {n}")


def demo_step(data: str, out: Path) -> None:
    """Export, audit and clean ``data`` (:func:`hhrlhf.demo.convert_demo`); print what it did."""
    from ..demo import convert_demo

    done = convert_demo(data, out)
    for key, fmt, n, target in done.exports:
        click.echo(f"export: {n} {key} pairs as {fmt} -> {target}")
    result = done.audit
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


commands = [export, import_, check, clean]
