"""Audit commands: ``hh check`` (every check over the data) and ``hh clean`` (a cleaned copy).

Option parsing and printing only: the checks run in :mod:`hhrlhf.checks`, the copy is
written by :mod:`hhrlhf.clean`.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import click

from ..errors import UnknownNameError
from ..outputs import replace_dir
from .data import NARROW
from .options import (
    check_outputs,
    data_option,
    emit_json,
    file_subsets,
    force_option,
    json_line,
    json_option,
    out_dir_option,
    print_table,
    subset_option,
)

__all__ = ["commands", "check", "clean"]


def _chatter(msg: str) -> None:
    click.echo(msg, err=True)


def _progress_line(msg: str) -> None:
    """A step of the work (``checking harmless-base/test``): progress, so ``-q`` hides it."""
    from ..progress import enabled

    if enabled():
        click.echo(msg, err=True)


def _class_names(values, option: str) -> list[str]:
    from ..checks import check_class_names

    try:
        return check_class_names(values)
    except UnknownNameError as exc:
        raise click.BadParameter(
            f"unknown class {exc.name!r}; valid classes: {', '.join(exc.known)}",
            param_hint=option,
        ) from None


#: ``--fail-on`` words that name a severity instead of a class (each includes the ones before).
_FAIL_SEVERITIES = {"error": ("error",), "warning": ("error", "warning")}


def _fail_classes(values: tuple[str, ...]) -> list[str]:
    """The classes ``hh check`` fails on: every error class by default; 'none' for none."""
    from ..checks import CLASSES

    words = [w.strip() for v in values for w in v.split(",") if w.strip()] or ["error"]
    out: list[str] = []
    for word in words:
        if word == "none":
            if len(words) > 1:
                raise click.BadParameter("'none' cannot be combined", param_hint="--fail-on")
        elif word in _FAIL_SEVERITIES:
            out += [n for n, k in CLASSES.items() if k.severity in _FAIL_SEVERITIES[word]]
        else:
            out += _class_names([word], "--fail-on")
    return list(dict.fromkeys(out))


def _report_skipped_checks(skipped: dict[str, str]) -> None:
    """One stderr line naming the checks that could not run on the data at hand, and why."""
    if skipped:
        why = "; ".join(dict.fromkeys(skipped.values()))
        _chatter(f"skipped {', '.join(skipped)}: {why}")


def _short(text: str, n: int = 64) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _classes_option(flag: str, dest: str, help_text: str):
    return click.option(flag, dest, multiple=True, metavar="CLASS", help=help_text)


def _threshold_option(help_text: str):
    return click.option(
        "--threshold",
        type=click.FloatRange(0, 1, min_open=True),
        default=0.8,
        show_default=True,
        help=help_text,
    )


def _selection(subsets, file_subset, split, data, threshold) -> dict:
    """What ``hh check`` and ``hh clean`` both hand the library: the files to read, the
    near-duplicate threshold, and progress on stderr."""
    subsets = file_subsets(subsets, file_subset, data)
    return {
        "subsets": subsets or None,
        "split": split,
        "data": data,
        "threshold": threshold,
        "progress": _progress_line,
    }


def _print_counts(result, wide: bool = False) -> None:
    """The class table, its meanings cut to fit :data:`NARROW` columns unless ``wide``."""
    from ..checks import CLASSES

    counts = result.counts
    flagged = [name for name in CLASSES if counts[name]]
    used = max([5, *map(len, flagged)]) + max([4, *(len(str(counts[n])) for n in flagged)])
    room = max(32, NARROW - used - len("severity") - 3 * 2)
    rows = [
        {
            "class": name,
            "rows": counts[name],
            "severity": CLASSES[name].severity,
            "meaning": CLASSES[name].description
            if wide
            else _short(CLASSES[name].description, room),
        }
        for name in flagged
    ]
    click.echo(f"{result.rows} rows in {len(result.files)} file(s); {len(result.flags)} flagged")
    if rows:
        print_table(rows, ["class", "rows", "severity", "meaning"])
    else:
        click.echo("no class flagged")
    odd = result.rows_of("non_alternating")
    if odd:
        more = f" and {len(odd) - 20} more (--report lists all)" if len(odd) > 20 else ""
        line = (
            f"non_alternating rows (strict chat templates reject them; hh export "
            f"--merge-consecutive joins same-role turns): {', '.join(odd[:20])}{more}"
        )
        click.echo(line if wide else "\n".join(textwrap.wrap(line, NARROW, break_on_hyphens=False)))


def _safe_line(row: dict) -> bytes:
    return (json_line(row) + "\n").encode()


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
@_classes_option(
    "--fail-on",
    "fail_on",
    "Exit 1 when any row has CLASS (repeat, or comma-separate); 'error' (the default) "
    "means every error-severity class, 'warning' adds the warning classes, 'none' never fails.",
)
@_threshold_option("Jaccard threshold for near_duplicate_leak.")
@click.option(
    "--near-dups/--no-near-dups",
    default=True,
    show_default=True,
    help="Run MinHash LSH near-duplicate detection (needs hhrlhf[audit]).",
)
@data_option
@subset_option
@json_option
@click.option(
    "--wide", is_flag=True, help=f"Each class's whole meaning, wider than {NARROW} columns."
)
@force_option
def check(
    subsets, split, report, fail_on, threshold, near_dups, data, file_subset, as_json, wide, force
):
    """Audit the data: per-pair classes, duplicates, train/test leaks, near duplicates, red team.

    SUBSETS default to the four preference subsets; 'all' adds red-team-attempts.

    \b
    Examples:
      hh check --data sample
      hh check all --json --report flagged.jsonl --data sample
      hh check --fail-on duplicate_pair,train_test_leak --data sample || echo "fix the data"
      hh check --fail-on none --data sample    # report only, exit 0

    Exits 1 when a row has an error-severity class (a line that is not JSON, an identical
    pair...), as linters do; --fail-on picks the classes instead.
    """
    from ..checks import audit

    selection = _selection(subsets, file_subset, split, data, threshold)
    fail_classes = _fail_classes(fail_on)
    check_outputs(force, report=(report, "file"))
    result = audit(**selection, near_duplicates=near_dups)
    _report_skipped_checks(result.skipped)
    if report:
        from ..convert import write_rows

        # bidi, zero-width and C1 characters of an excerpt as JSON escapes: the same strings,
        # nothing that reorders or hides text when the report is printed
        n = write_rows(result.report_rows(), report, encode=_safe_line)
        _chatter(f"wrote {n} flagged row(s) to {report}")
    if as_json:
        emit_json(result.to_json())
    else:
        _print_counts(result, wide)
    failed = [c for c in fail_classes if result.counts[c]]
    if failed:
        hint = "" if fail_on else " (error classes; --fail-on none exits 0)"
        _chatter("failing: " + ", ".join(f"{c} ({result.counts[c]})" for c in failed) + hint)
        sys.exit(1)


@click.command()
@click.argument("subsets", nargs=-1)
@click.option("--split", default=None, metavar="SPLIT", help="train or test (default: both).")
@out_dir_option("New directory for the cleaned copy (upstream layout).", "out")
@_classes_option(
    "--drop",
    "drop",
    "Drop rows with CLASS (repeat, or comma-separate); default: every error class.",
)
@_threshold_option("Jaccard threshold, when near_duplicate_leak is dropped.")
@click.option(
    "--keep-readable",
    is_flag=True,
    help="Clean a cut .gz up to where it breaks instead of failing; manifest.json records "
    "the lost part under 'lost' and each is reported on stderr (a CRC error still fails).",
)
@click.option(
    "--drop-flagged",
    "flags_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FLAGS.jsonl",
    help="Drop the pairs hh pm flag put in --classes (each in dropped.jsonl with its class, "
    "margin and p_mislabelled).",
)
@click.option(
    "--classes",
    "flag_classes",
    default="likely_mislabelled",
    show_default=True,
    metavar="CLASS[,CLASS]",
    help="With --drop-flagged: the classes of hh pm flag to act on.",
)
@click.option(
    "--flip",
    is_flag=True,
    help="With --drop-flagged: keep those pairs with chosen and rejected swapped instead "
    "(the weaker choice: docs/pm.md).",
)
@data_option
@subset_option
@json_option
@force_option
def clean(
    subsets,
    split,
    out,
    drop,
    threshold,
    keep_readable,
    flags_path,
    flag_classes,
    flip,
    data,
    file_subset,
    as_json,
    force,
):
    """Write a cleaned copy plus manifest.json and dropped.jsonl (rows in = kept + dropped).

    \b
    Examples:
      hh clean --out hh-clean --data sample
      hh clean all --out hh-clean --drop duplicate_pair --drop train_test_leak --data sample
    """
    from ..checks import default_drop
    from ..clean import clean as run_clean

    selection = _selection(subsets, file_subset, split, data, threshold)
    names = _class_names(drop, "--drop") if drop else list(default_drop())
    flagged = _flagged(flags_path, flag_classes, flip)
    check_outputs(force, out=(out, "dir"))
    with replace_dir(out) as tmp:  # all or nothing; --force replaces the old copy whole
        manifest = run_clean(
            **selection,
            out=tmp,
            drop=names,
            keep_readable=keep_readable,
            flagged=flagged,
            flip=flip,
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
    if "flipped" in manifest:
        click.echo(f"  flipped (chosen and rejected swapped, kept): {len(manifest['flipped'])}")


def _flagged(flags_path, classes: str, flip: bool) -> dict | None:
    """The rows of ``--drop-flagged`` in ``--classes`` (checked), or None without it."""
    from ..reward.flag import CLASSES, read_flags

    if flags_path is None:
        if flip:
            raise click.UsageError("--flip turns the pairs of --drop-flagged: give that too")
        return None
    wanted = [c.strip() for c in classes.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CLASSES]
    if unknown or not wanted:
        raise click.UsageError(
            f"--classes: unknown class {', '.join(unknown) or '(none)'}; known: {', '.join(CLASSES)}"
        )
    return read_flags(flags_path, keep=lambda row: row["class"] in wanted)


commands = [check, clean]
