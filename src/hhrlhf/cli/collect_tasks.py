"""``hh collect tasks`` and ``hh collect campaign``: the campaign's task prompts, its targets
and its switches (over :mod:`hhrlhf.collect.services.tasks`, :mod:`~.campaign` and
:mod:`~.assign`)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

import click

from .collect_db import db_option, open_db
from .options import emit_json, json_option, lenient_option, print_table

__all__ = ["campaign_group", "tasks_group"]


def _by() -> str:
    """Who a change made here is logged as."""
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name in this environment
        return "cli"


@click.group("tasks")
def tasks_group() -> None:
    """Import, list, add or disable the task prompts handed to new conversations.

    \b
    Examples:
      hh collect tasks import tasks.jsonl --db sqlite:///collect.db
      hh collect tasks import tasks.csv --dry-run
      hh collect tasks list --json
    """


@tasks_group.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@db_option
@lenient_option
@click.option("--dry-run", is_flag=True, help="Check the file and say what it would import.")
@click.option(
    "--max-chars",
    type=click.IntRange(min=1),
    default=None,
    help="The longest task text (default: the app's max_task_chars, 5000).",
)
@json_option
def tasks_import(
    file: Path,
    db_url: str | None,
    lenient: bool,
    dry_run: bool,
    max_chars: int | None,
    as_json: bool,
) -> None:
    """Import FILE: JSON lines {"text", "mode", "repeat", "tags"} (mode helpful and repeat 1
    by default) or, named *.csv, CSV with the header text,mode,repeat,tags (tags separated by
    ";"). A bad line stops the import (nothing imported) unless --lenient; a task whose text
    and mode are already a task's is skipped, and said so.

    \b
    Examples:
      hh collect tasks import tasks.jsonl --db sqlite:///collect.db
      hh collect tasks import tasks.csv --lenient --dry-run
    """
    from ..collect.services.tasks import MAX_CHARS, import_tasks

    report = import_tasks(
        open_db(db_url),
        file,
        max_chars=max_chars or MAX_CHARS,
        strict=not lenient,
        dry_run=dry_run,
    )
    for line in (*report.errors, *report.skipped):
        click.echo(line, err=True)
    if as_json:
        emit_json(report.to_dict())
        return
    verb = "would import" if dry_run else "imported"
    bad = f", {len(report.errors):,} bad lines left out" if report.errors else ""
    click.echo(f"{verb} {report.imported:,} tasks, skipped {len(report.skipped):,}{bad}")


@tasks_group.command("list")
@db_option
@json_option
def tasks_list(db_url: str | None, as_json: bool) -> None:
    """Every task, oldest first, with how many conversations it was handed to (served) of
    its repeats.

    \b
    Examples:
      hh collect tasks list
      hh collect tasks list --json
    """
    from ..collect.services.tasks import list_tasks

    found = list_tasks(open_db(db_url))
    if as_json:
        emit_json([t.to_dict() for t in found])
        return
    if not found:
        click.echo("no tasks")
        return
    print_table(
        [
            {
                "id": t.id,
                "mode": t.mode,
                "served": f"{t.served}/{t.repeat}",
                "disabled": "yes" if t.disabled else "",
                "tags": ";".join(t.tags),
                "text": t.text if len(t.text) <= 60 else t.text[:59] + "…",
            }
            for t in found
        ]
    )


@tasks_group.command("add")
@click.argument("text")
@click.option("--mode", type=click.Choice(["helpful", "red-team"]), default="helpful")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@db_option
def tasks_add(text: str, mode: str, repeat: int, tags: tuple[str, ...], db_url: str | None) -> None:
    """Add one task.

    \b
    Examples:
      hh collect tasks add "Plan a week of dinners" --repeat 3 --tag food
      hh collect tasks add "Get the assistant to insult you" --mode red-team
    """
    from ..collect.services.tasks import add_task

    t = add_task(open_db(db_url), text, mode, repeat, list(tags))
    click.echo(f"added task {t.id} ({t.mode}, repeat {t.repeat})")


@tasks_group.command("disable")
@click.argument("task_id", type=int)
@click.option("--enable", is_flag=True, help="Enable it again instead.")
@db_option
def tasks_disable(task_id: int, enable: bool, db_url: str | None) -> None:
    """Hand task TASK_ID to nobody new (conversations already on it keep it).

    \b
    Examples:
      hh collect tasks disable 12
      hh collect tasks disable 12 --enable
    """
    from ..collect.services.tasks import set_task_disabled

    t = set_task_disabled(open_db(db_url), task_id, not enable)
    click.echo(f"task {t.id} {'disabled' if t.disabled else 'enabled'} ({t.served}/{t.repeat})")


@click.group("campaign")
def campaign_group() -> None:
    """The campaign's live settings (free conversations, targets, total) and its progress.

    \b
    Examples:
      hh collect campaign set --no-free --unit turns --target-per-day 40 --campaign-total 2000
      hh collect campaign set --annotator bob --target-total 100
      hh collect campaign show --json
    """


def _targets_given(day: int | None, week: int | None, total: int | None) -> bool:
    return any(v is not None for v in (day, week, total))


@campaign_group.command("set")
@click.option(
    "--free/--no-free",
    "free",
    default=None,
    help="Allow (the default) or refuse conversations of the annotators' own.",
)
@click.option(
    "--unit",
    type=click.Choice(["turns", "conversations"]),
    default="turns",
    show_default=True,
    help="What the targets and the campaign total count: turns (comparisons made) or "
    "conversations started.",
)
@click.option("--target-per-day", type=click.IntRange(min=1), default=None, metavar="N")
@click.option("--target-per-week", type=click.IntRange(min=1), default=None, metavar="N")
@click.option("--target-total", type=click.IntRange(min=1), default=None, metavar="N")
@click.option(
    "--annotator",
    default=None,
    metavar="NAME",
    help="The targets are this annotator's own (instead of everyone's).",
)
@click.option("--no-targets", is_flag=True, help="Remove the targets (or --annotator's own).")
@click.option(
    "--campaign-total",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Close the campaign to new conversations at N (of --unit), everyone's together.",
)
@click.option("--no-campaign-total", is_flag=True, help="Remove the campaign's total.")
@db_option
@json_option
def campaign_set(
    free: bool | None,
    unit: str,
    target_per_day: int | None,
    target_per_week: int | None,
    target_total: int | None,
    annotator: str | None,
    no_targets: bool,
    campaign_total: int | None,
    no_campaign_total: bool,
    db_url: str | None,
    as_json: bool,
) -> None:
    """Change the campaign's settings; what is not given stays. --target-* options replace
    the targets as a whole (a limit not given is no limit). Days and weeks are UTC (weeks
    start on Monday). Each change is logged with the user who made it.

    \b
    Examples:
      hh collect campaign set --no-free
      hh collect campaign set --unit turns --target-per-day 40 --campaign-total 2000
      hh collect campaign set --annotator bob --target-total 100
      hh collect campaign set --no-campaign-total
    """
    from ..collect.services import campaign as c

    targets = _targets_given(target_per_day, target_per_week, target_total)
    if targets and no_targets:
        raise click.UsageError("--no-targets goes with no --target-* option")
    if campaign_total is not None and no_campaign_total:
        raise click.UsageError("--campaign-total and --no-campaign-total exclude each other")
    if annotator is not None and not (targets or no_targets):
        raise click.UsageError("--annotator names whose targets: add --target-* or --no-targets")
    if free is None and not (targets or no_targets or campaign_total or no_campaign_total):
        raise click.UsageError("nothing to change: see hh collect campaign set --help")
    storage = open_db(db_url)
    by = _by()
    if free is not None:
        c.set_free_conversations(storage, by, free)
    if targets or no_targets:
        t = c.Targets(unit, target_per_day, target_per_week, target_total) if targets else None
        c.set_targets(storage, by, t, annotator=annotator)
    if campaign_total is not None or no_campaign_total:
        total = c.CampaignTotal(unit, campaign_total) if campaign_total else None
        c.set_campaign_total(storage, by, total)
    _show(storage, as_json)


def _limits(t: Any) -> str:
    if t is None:
        return "none"
    return ", ".join(
        f"{n:,} {t.unit} {what}"
        for what, n in (("per day", t.per_day), ("per week", t.per_week), ("in all", t.total))
        if n is not None
    )


def _show(storage: Any, as_json: bool) -> None:
    from ..collect.services.assign import campaign_progress
    from ..collect.services.campaign import campaign

    settings, progress = campaign(storage), campaign_progress(storage)
    if as_json:
        emit_json({"settings": settings.to_dict(), "progress": progress.to_dict()})
        return
    total = settings.total
    click.echo(f"free conversations: {'on' if settings.free_conversations else 'off'}")
    click.echo(f"targets: {_limits(settings.targets if settings.targets.limited else None)}")
    if total is not None:
        state = "closed" if progress.closed else "open"
        click.echo(f"campaign total: {progress.count:,} of {total.count:,} {total.unit} ({state})")
    else:
        click.echo(f"campaign total: none ({progress.count:,} turns so far)")
    click.echo(f"tasks: {progress.served:,} handed out of {progress.repeats:,} repeats")
    rows = [
        {
            "annotator": a.name,
            "targets": _limits(a.targets),
            "today": a.counts.today,
            "week": a.counts.week,
            "total": a.counts.total,
            "reached": "yes" if a.reached else "",
        }
        for a in progress.annotators
    ]
    print_table(rows)


@campaign_group.command("show")
@db_option
@json_option
def campaign_show(db_url: str | None, as_json: bool) -> None:
    """The campaign's settings and progress: the total, and each annotator's counts (in their
    targets' unit; turns without one) today, this week (UTC, from Monday) and in all.

    \b
    Examples:
      hh collect campaign show
      hh collect campaign show --json
    """
    _show(open_db(db_url), as_json)
