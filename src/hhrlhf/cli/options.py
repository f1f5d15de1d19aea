"""Options shared by the commands, as reusable decorators, and small output helpers."""

from __future__ import annotations

import functools
import os
import sys

import click
import orjson

from ..text import json_safe, printable

__all__ = [
    "data_option",
    "json_option",
    "lenient_option",
    "force_option",
    "check_outputs",
    "split_option",
    "out_dir_option",
    "seed_option",
    "subset_option",
    "file_subsets",
    "emit_json",
    "json_line",
    "print_table",
    "pass_lenient",
    "report_skipped",
    "note_rows_read",
    "fail_if_all_skipped",
    "Choice",
]


class Choice(click.Choice):
    """``click.Choice`` that says which choice a typo was meant to be ("did you mean 'test'?"),
    as an unknown subset or split name does."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter as exc:
            from ..errors import _closest

            near = _closest(value, [str(c) for c in self.choices])
            if near is None:
                raise
            raise click.BadParameter(f"{exc.message} Did you mean {near!r}?", ctx, param) from None


def _note_data(ctx: click.Context, param: click.Parameter, value):
    """Remember ``--data`` for :func:`check_outputs` (an output never replaces its input)."""
    ctx.meta[_READS] = value
    return value


def data_reads(data) -> list[tuple[object, str]]:
    """What ``--data`` reads, as :func:`hhrlhf.outputs.check_writable`'s ``reads``: the
    folder or file given, or the download cache (the bundled sample is never an output)."""
    if data is not None and str(data) in ("sample",):
        return []
    if data is None or str(data) == "cache":
        from ..download import cache_dir

        return [(cache_dir(), "the download cache")]
    return [(os.path.expanduser(str(data)), "the data")]


def data_option(f):
    return click.option(
        "--data",
        "data",
        metavar="PATH|sample",
        default=None,
        envvar="HH_RLHF_DATA",
        callback=_note_data,
        help="Where the data is: a directory laid out like upstream, one file, 'sample' "
        "(the bundled benign sample) or, by default, the download cache.",
    )(f)


def subset_option(f):
    return click.option(
        "--subset",
        "file_subset",
        metavar="NAME",
        default=None,
        help="The subset a single --data FILE holds, when its path does not say "
        "(.../harmless-base/test.jsonl.gz does).",
    )(f)


def file_subsets(subsets, file_subset, data) -> tuple:
    """SUBSETS with ``--subset`` added; ``--subset`` is for a single ``--data`` file only."""
    if file_subset is None:
        return tuple(subsets)
    from ..layout import resolve_source

    if resolve_source(data).kind != "file":
        raise click.UsageError(
            "--subset names the subset of a single --data FILE; "
            "for a directory, name subsets as arguments"
        )
    return (*subsets, file_subset)


def json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Print JSON to stdout.")(f)


lenient_option = click.option(
    "--lenient",
    is_flag=True,
    help="Skip bad rows instead of stopping; every skipped row is reported on stderr.",
)

force_option = click.option(
    "--force",
    is_flag=True,
    help="Replace outputs that exist already (refused otherwise): a file, or a folder hhrlhf "
    "wrote (its .hh-output lists every file in it); any other folder is always refused.",
)


def out_dir_option(help: str, dest: str = "out_dir"):
    """``--out DIRECTORY``, required: the folder a command writes."""
    return click.option("--out", dest, required=True, type=click.Path(file_okay=False), help=help)


def seed_option(help: str):
    return click.option("--seed", type=int, default=0, show_default=True, help=help)


def check_outputs(force: bool, reads=None, **outputs) -> None:
    """Check every output before the work starts: ``option=(path, "file"|"dir")``, the
    option named with underscores (``hf=(hf_dir, "dir")`` checks ``--hf``); None paths are
    skipped. ``reads``: what the command reads, that no output may be or hold (default: the
    command's ``--data``, :func:`data_reads`). Raises :class:`~hhrlhf.errors.OutputError`
    (one ``error:`` line, exit 1)."""
    from ..outputs import check_writable

    ctx = click.get_current_context(silent=True)
    if reads is None:
        reads = data_reads(ctx.meta[_READS]) if ctx is not None and _READS in ctx.meta else []
    for name, (path, kind) in outputs.items():
        if path is not None:
            target = check_writable(
                path, kind=kind, force=force, option="--" + name.replace("_", "-"), reads=reads
            )
            if ctx is not None:  # what a failed lenient run takes back (fail_if_all_skipped)
                ctx.meta.setdefault(_OUTPUTS, []).append((target, kind, _stamp(target)))


def _stamp(path) -> int | None:
    """``path``'s modification time in ns, or None where nothing is there."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def split_option(default=None, help="Split to use (train or test); default: all."):
    return click.option("--split", "split", default=default, metavar="SPLIT", help=help)


def emit_json(obj) -> None:
    """Write ``obj`` as indented JSON to stdout; invisible and control characters in strings
    are ``\\uNNNN`` escapes (:func:`hhrlhf.text.json_safe`)."""
    text = orjson.dumps(obj, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    sys.stdout.write(json_safe(text) + "\n")


def json_line(obj) -> str:
    """``obj`` as one compact JSON line (no newline), for output that prints JSON lines."""
    return json_safe(orjson.dumps(obj).decode())


def _cell(value) -> str:
    return "-" if value is None else printable(str(value), keep_newlines=False)


def print_table(rows: list[dict], columns: list[str] | None = None, *, file=None) -> None:
    """A plain aligned text table; control characters (newline and tab too) in cells are escaped
    and a missing value (``None``) shows as ``-``."""
    if not rows:
        return
    keys = columns or list(rows[0])
    columns = [printable(str(c), keep_newlines=False) for c in keys]
    cells = [[_cell(r.get(c, "")) for c in keys] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]

    def numeric(v: str) -> bool:
        return (
            v in ("-", "n/a")
            or v.lstrip("-").replace(".", "").replace(",", "").replace("%", "").isdigit()
        )

    def line(values):
        return "  ".join(
            v.rjust(w) if numeric(v) else v.ljust(w) for v, w in zip(values, widths, strict=True)
        ).rstrip()

    out = [line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells]
    click.echo("\n".join(out), file=file)


_ROWS_READ = "hhrlhf.rows_read"


#: ``ctx.meta`` key: the command's ``--data``
_READS = "hhrlhf.reads"

#: ``ctx.meta`` key: the outputs a command checked, as (path, kind, its stamp then)
_OUTPUTS = "hhrlhf.outputs"


def note_rows_read(n: int) -> None:
    """Count ``n`` rows a command read and kept, for the closing "read N of M rows" line of
    its ``--lenient`` run (M adds the skipped rows)."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[_ROWS_READ] = ctx.meta.get(_ROWS_READ, 0) + n


def _rows_read() -> int | None:
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.meta.get(_ROWS_READ)


def report_skipped(skipped, *, lenient: bool = True) -> None:
    """Lenient mode: every skipped row, with its reason, on stderr, then "read N of M rows"
    (when the command counted its rows with :func:`note_rows_read`)."""
    for row in skipped:
        click.echo(f"skipped: {row}", err=True)
    read = _rows_read() if lenient else None
    if read is not None:
        total = read + len(skipped)
        click.echo(f"read {read:,} of {total:,} rows ({len(skipped):,} skipped)", err=True)
    elif skipped:
        click.echo(f"{len(skipped)} row(s) skipped", err=True)


def fail_if_all_skipped(skipped) -> None:
    """A lenient run that skipped every row it read read nothing: one error, exit 1. What it
    wrote is removed (an empty export left behind would be read as data by the next step, and
    a rerun would need --force): every output file it wrote, and every output folder it
    created; a file it left as it was stays."""
    if skipped and _rows_read() == 0:
        from ..errors import NoDataError

        paths = ", ".join(dict.fromkeys(str(s.path) for s in skipped))
        removed = _remove_outputs()
        raise NoDataError(
            paths,
            f"every row was skipped ({len(skipped):,} of {len(skipped):,})"
            + (f"; removed what this run wrote: {', '.join(removed)}" if removed else ""),
        )


def _remove_outputs() -> list[str]:
    import shutil

    ctx = click.get_current_context(silent=True)
    removed: list[str] = []
    for path, kind, before in ctx.meta.get(_OUTPUTS, []) if ctx is not None else []:
        if kind == "file" and path.is_file() and _stamp(path) != before:
            path.unlink()
        elif kind == "dir" and before is None and path.is_dir():
            shutil.rmtree(path)
        else:
            continue
        removed.append(str(path))
    return removed


def _finish(skipped, lenient: bool, run):
    try:
        result = run()
    except BaseException:
        report_skipped(skipped, lenient=lenient)
        raise
    report_skipped(skipped, lenient=lenient)
    if lenient:
        fail_if_all_skipped(skipped)
    return result


def pass_lenient(f):
    """Turn the ``--lenient`` flag into the command's ``lenient`` policy (a
    :class:`~hhrlhf.reader.Lenient`, None when strict) and report its skipped rows on stderr
    when the command returns (see :func:`report_skipped`); a run that skipped every row it
    read fails."""

    @functools.wraps(f)
    def wrapper(*args, lenient: bool = False, **kwargs):
        from ..reader import Lenient

        policy = Lenient.of(lenient)
        if policy is None:
            return f(*args, lenient=None, **kwargs)
        return _finish(policy.skipped, True, lambda: f(*args, lenient=policy, **kwargs))

    return wrapper


def pass_skipped(f):
    """Give the command a ``skipped`` list and report it when the command returns (with the
    "read N of M rows" line and the all-skipped failure when ``lenient`` is on)."""

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        skipped: list = []
        lenient = bool(kwargs.get("lenient"))
        return _finish(skipped, lenient, lambda: f(*args, skipped=skipped, **kwargs))

    return wrapper
