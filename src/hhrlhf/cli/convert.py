"""Convert and audit commands: ``hh export``, ``hh import``, ``hh check``, ``hh clean``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..convert import FORMATS
from ..errors import UnknownSubsetError
from ..subsets import RED_TEAM
from .options import data_option, emit_json, json_option, print_table

__all__ = ["commands", "export", "import_", "check", "clean", "demo_step"]


def _format_names() -> list[str]:
    from ..convert import FORMATS

    return list(FORMATS)


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
    from ..dataset import iter_attempts, iter_pairs, resolve_source

    names = list(subsets)
    if fmt.kind == "redteam":
        if names and names != [RED_TEAM]:
            raise click.BadParameter("--format redteam exports red-team-attempts only")
        if split not in (None, "train"):
            raise click.BadParameter("red-team-attempts has only the train split")
        return {"train": iter_attempts(data=data)}
    if RED_TEAM in names:
        raise click.BadParameter("red-team-attempts holds attempts: use --format redteam")
    src = resolve_source(data)
    splits = [split] if split else (["train"] if src.kind == "file" else ["train", "test"])
    if src.kind == "file":
        ident = src.file_identity()[1]
        splits = [ident] if split is None else splits
    return {s: iter_pairs(names or None, split=s, data=src) for s in splits}


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
def export(subsets, split, fmt_name, out, hf_dir, no_source, data):
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
        dd = export_hf(splits, fmt, hf_dir, source=not no_source)
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
def import_(file, fmt_name, out, with_source, lenient):
    """Read an exported file back into upstream rows ({"chosen", "rejected"}, or red-team records).

    \b
    Examples:
      hh import test.dpo.jsonl --format dpo --out test.jsonl.gz
      hh import rt.jsonl --format redteam | head -1
    """
    from ..convert import get_format, import_records, write_rows

    fmt = get_format(fmt_name)
    skipped: list = []
    records = import_records(file, fmt, lenient=lenient, skipped=skipped)
    if fmt.kind == "redteam":
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
@json_option
def check(subsets, split, report, fail_on, threshold, near_dups, data, as_json):
    """Audit the data: per-pair classes, duplicates, train/test leaks, near duplicates, red team.

    SUBSETS default to the four preference subsets; 'all' adds red-team-attempts.

    \b
    Examples:
      hh check --data sample
      hh check all --json --report flagged.jsonl --data sample
      hh check --fail-on duplicate_pair,train_test_leak --data sample || echo "fix the data"
    """
    from ..checks import audit

    fail_classes = _class_names(fail_on, "--fail-on")
    result = audit(
        subsets or None,
        split=split,
        data=data,
        near_duplicates=near_dups,
        threshold=threshold,
        progress=_chatter,
    )
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
@data_option
@json_option
def clean(subsets, split, out, drop, threshold, data, as_json):
    """Write a cleaned copy plus manifest.json and dropped.jsonl (rows in = kept + dropped).

    \b
    Examples:
      hh clean --out hh-clean --data sample
      hh clean all --out hh-clean --drop duplicate_pair --drop train_test_leak --data sample
    """
    from ..checks import DEFAULT_DROP
    from ..clean import clean as run_clean

    names = _class_names(drop, "--drop") if drop else list(DEFAULT_DROP)
    manifest = run_clean(
        subsets or None,
        out=out,
        split=split,
        data=data,
        drop=names,
        threshold=threshold,
        progress=_chatter,
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
    """Export, audit and clean ``data``; outputs under ``out/convert/``."""
    from ..checks import audit
    from ..clean import clean as run_clean
    from ..convert import export_records
    from ..dataset import iter_pairs

    base = Path(out) / "convert"
    base.mkdir(parents=True, exist_ok=True)
    for fmt in ("dpo", "trl-conversational"):
        n = export_records(
            iter_pairs("harmless-base", split="test", data=data),
            fmt,
            base / f"harmless-base-test.{fmt}.jsonl",
        )
        click.echo(
            f"export: {n} harmless-base/test pairs as {fmt} -> "
            f"{base / f'harmless-base-test.{fmt}.jsonl'}"
        )
    result = audit(["all"], data=data)
    flagged = {k: v for k, v in result.counts.items() if v}
    click.echo(
        f"check: {result.rows} rows, {len(result.flags)} flagged: "
        + ", ".join(f"{k}={v}" for k, v in flagged.items())
    )
    target = base / "clean"
    if target.exists():
        import shutil

        shutil.rmtree(target)
    m = run_clean(["all"], out=target, data=data, result=result)
    click.echo(
        f"clean: {m['rows']} rows in = {m['kept']} kept + {m['dropped']} dropped "
        f"({', '.join(f'{k}={v}' for k, v in m['dropped_by_reason'].items())}) -> {target}"
    )


commands = [export, import_, check, clean]
