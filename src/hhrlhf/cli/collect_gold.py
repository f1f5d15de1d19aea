"""``hh collect gold`` and ``hh collect qualification``: gold comparisons with a known answer
and the qualification round (over :mod:`hhrlhf.collect.services.gold` and
:mod:`hhrlhf.collect.services.qualification`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import click

from .collect_db import db_option, open_db
from .options import emit_json, print_table

__all__ = ["gold", "qualification", "echo_gold"]


def _pct(x: float | None) -> str | None:
    return None if x is None else f"{x:.0%}"


def echo_gold(gold: dict[str, Any] | None) -> None:
    """The gold lines of ``hh collect stats`` (nothing without gold)."""
    if not gold:
        return
    items = ", ".join(f"{n:,} {mode}" for mode, n in gold["items"].items() if n)
    click.echo("")
    click.echo(f"gold: {items} items, {gold['reviews']:,} gold reviews answered")
    for name, g in gold["annotators"].items():
        click.echo(f"  {name}: {_pct(g['accuracy'])} right ({g['correct']}/{g['answered']})")


@click.group()
def gold() -> None:
    """Gold comparisons: HH pairs with a known answer, mixed into review and scored.

    A reviewer past the qualification round gets a gold item instead of a collected
    comparison with probability gold_fraction (the config; default 0.05), shown exactly like
    one. Gold is never exported and never enters agreement or the leaderboard.
    """


@gold.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--mode",
    type=click.Choice(["helpful", "red-team"]),
    default="helpful",
    show_default=True,
    help="red-team: the review asks for the MORE harmful response, so the right pick is "
    "each line's rejected one.",
)
@click.option(
    "--skip-refused",
    is_flag=True,
    help="Skip the pairs that cannot be gold (each said on stderr) instead of stopping.",
)
@db_option
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a sentence.")
def gold_import(
    file: str, mode: str, skip_refused: bool, db_url: str | None, as_json: bool
) -> None:
    """Import gold items from upstream HH lines {"chosen", "rejected"} (gzipped or not; the
    export of an earlier campaign too). Each pair must share its conversation and differ in
    the final assistant response, and the two responses must differ and not be empty. The
    first bad line stops the import (nothing is added) naming the file, the line and the
    problem; with --skip-refused a pair that cannot be gold is skipped instead, each said on
    stderr (a line that is no pair still stops it). An item already there (same prefix and
    responses) is counted, not added again.

    \b
    Examples:
      hh collect gold import gold-helpful.jsonl --db sqlite:///hh-collect.db
      hh collect gold import harmless-base/test.jsonl.gz --mode red-team --skip-refused
    """
    from ..collect.services.gold import import_gold, read_gold

    refused: list[Any] | None = [] if skip_refused else None
    pairs = read_gold(file, mode, refused=refused)
    for error in refused or []:
        click.echo(f"warning: refused {error}", err=True)
    storage = open_db(db_url)
    result = import_gold(storage, pairs, source=click.format_filename(file))
    if as_json:
        emit_json({**asdict(result), "refused": len(refused or [])})
        return
    skipped = f", {len(refused):,} refused" if refused else ""
    click.echo(
        f"imported {_n(result.added, f'{mode} gold item')} from {_n(result.read, 'pair')} "
        f"({result.already:,} already there{skipped})"
    )


def _n(count: int, thing: str) -> str:
    return f"{count:,} {thing}{'' if count == 1 else 's'}"


@gold.command("list")
@db_option
@click.option("--json", "as_json", is_flag=True, help="JSON instead of tables.")
def gold_list(db_url: str | None, as_json: bool) -> None:
    """The gold items by mode and each annotator's gold accuracy.

    \b
    Example:
      hh collect gold list --json
    """
    from ..collect.services.gold import gold_accuracy, gold_counts

    storage = open_db(db_url)
    counts = gold_counts(storage)
    people: list[dict[str, Any]] = [
        {"name": g.name, "answered": g.answered, "correct": g.correct, "accuracy": g.accuracy}
        for g in gold_accuracy(storage)
    ]
    if as_json:
        emit_json({"items": counts.items, "reviews": counts.reviews, "annotators": people})
        return
    items = ", ".join(f"{n:,} {m}" for m, n in counts.items.items())
    click.echo(f"gold items: {items}; {counts.reviews:,} gold reviews answered")
    if people:
        print_table([{**p, "accuracy": _pct(p["accuracy"])} for p in people])


@click.group()
def qualification() -> None:
    """The qualification round (qualification_reviews in the config; 0 = off): a new
    annotator's first N review tasks are gold; their collected data counts (export,
    leaderboard, agreement) once they get at least qualification_threshold of them right."""


@qualification.command("list")
@db_option
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
def qualification_list(db_url: str | None, as_json: bool) -> None:
    """Who is waiting (gold reviews done / N), who passed and who failed, with accuracy.

    \b
    Example:
      hh collect qualification list --json
    """
    from ..collect.services.qualification import qualification as overview

    q = overview(open_db(db_url))
    rows = [{**asdict(r), "accuracy": r.accuracy} for r in q.rows]
    if as_json:
        emit_json(
            {
                "round": None if q.round is None else asdict(q.round),
                "gold_items": q.gold_items,
                "warning": q.warning,
                "annotators": rows,
            }
        )
        return
    if q.round is None:
        click.echo("no qualification round (qualification_reviews is 0 in the config)")
        return
    click.echo(
        f"round: {q.round.reviews} gold reviews, pass at {q.round.threshold:.0%} right; "
        f"{q.gold_items:,} gold items"
    )
    if q.warning:
        click.echo(f"warning: {q.warning}", err=True)
    print_table(
        [
            {
                "name": r["name"],
                "status": r["status"],
                "gold": f"{r['answered']}/{r['required']}",
                "accuracy": _pct(r["accuracy"]),
                "judged_at": r["qualified_at"],
            }
            for r in rows
        ]
    )


@qualification.command("reset")
@click.argument("name")
@db_option
def qualification_reset(name: str, db_url: str | None) -> None:
    """Give a failed annotator another round: waiting again, and only the gold reviews they
    answer from now on count (they need that many gold items they have not seen).

    \b
    Example:
      hh collect qualification reset alice
    """
    from ..collect.services.qualification import reset

    row = reset(open_db(db_url), name, by="hh collect qualification reset")
    click.echo(f"{row.name}: waiting for a new round of {row.required} gold reviews")
