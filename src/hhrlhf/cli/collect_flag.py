"""``hh collect flag``: which collected comparisons to trust (over
:mod:`hhrlhf.collect.services.flags` and :mod:`hhrlhf.reward.flag`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .collect_db import db_option
from .options import check_outputs, emit_json, json_option, note_rows_read
from .pm_options import fold_options

if TYPE_CHECKING:
    from ..collect.services.flags import StoredRun

__all__ = ["collect_flag"]


def _upstream(sources: tuple[str, ...]) -> list[Any]:
    """Every pair of each source's train split (else its splits, said on stderr)."""
    from ..reward.data import load_pairs, select_pair_files

    pairs: list[Any] = []
    for data in sources:
        files, note = select_pair_files((), None, data, "train")
        if note:
            click.echo(note, err=True)
        pairs += load_pairs(files)
    if pairs:
        note_rows_read(len(pairs))
    return pairs


def _say_stored(stored: StoredRun) -> None:
    if stored.replaced:
        when = stored.previous
        at = f" (flagged {when:%Y-%m-%d %H:%M} UTC)" if when is not None else ""
        click.echo(
            f"replaced {stored.replaced:,} flags of an older run{at} with "
            f"{stored.stored:,} new ones",
            err=True,
        )
    else:
        click.echo(f"stored {stored.stored:,} flags in the database", err=True)


@click.command("flag")
@db_option
@click.option(
    "--data",
    "sources",
    multiple=True,
    metavar="UPSTREAM",
    help="HH data (a folder, a file, 'sample') whose train pairs join every fold's training "
    "set, never scored (repeatable).",
)
@fold_options("comparison")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="FLAGS.jsonl: also one JSON line per comparison (the export's subset/split/index "
    "and comparison_id).",
)
@click.option("--force", is_flag=True, help="Replace an existing --out file.")
@json_option
def collect_flag(
    db_url: str | None,
    sources: tuple[str, ...],
    folds: int,
    seeds: int,
    out: Path | None,
    force: bool,
    as_json: bool,
) -> None:
    """Flag the collected comparisons whose label the PM doubts, as hh pm flag does.

    The comparisons are the ones hh collect export writes (its defaults), each scored only by
    models that never saw it; --data pairs only train. The flags are stored in the database
    (a new run replaces the older run's: the review queue's review_order = "flagged" and the
    data browser read them) and, with --out, written as JSON lines. A flag is the model's
    disagreement, not the truth (docs/pm.md, "Which pairs to trust").

    \b
    Examples:
      hh collect flag --db sqlite:///collect.db
      hh collect flag --db sqlite:///collect.db --data sample --out flags.jsonl
    """
    from ..reward.flag import write_flags
    from .collect_db import database_reads, open_db
    from .flag import print_report

    check_outputs(force, reads=database_reads(db_url), out=(out, "file"))
    storage = open_db(db_url)
    from ..collect.services.flags import flag_collected, store_flags

    rows, report = flag_collected(storage, _upstream(sources), folds=folds, seeds=seeds)
    if out is not None:
        write_flags(rows, out)
        click.echo(f"wrote {len(rows):,} rows to {out}", err=True)
    _say_stored(store_flags(storage, rows))
    if as_json:
        emit_json(report)
    else:
        print_report(report)
        extra = report.get("extra_training")
        if extra:
            click.echo(
                f"{extra['pairs']:,} upstream pairs trained every fold"
                + (
                    f" ({extra['shared_prompt']:,} sharing a prompt with a comparison left out)"
                    if extra["shared_prompt"]
                    else ""
                )
            )
