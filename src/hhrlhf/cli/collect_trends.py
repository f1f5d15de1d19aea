"""``hh collect trends``: each annotator's weekly trend and drift flags (over
:mod:`hhrlhf.collect.services.trends`)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

import click

from ..text import printable
from .collect_db import db_option
from .options import emit_json, json_option, print_table

if TYPE_CHECKING:
    from ..collect.services.trends import WeekPoint

__all__ = ["collect_trends", "text_spark"]

#: the eight heights of a text plot, lowest first; a week without a value is a dot
_BARS = "▁▂▃▄▅▆▇█"


def text_spark(values: list[float | None], top: float | None = None) -> str:
    """One character per value, its height from 0 to ``top`` (default: the largest)."""
    high = top if top is not None else max((v for v in values if v is not None), default=0.0)
    out = []
    for v in values:
        if v is None:
            out.append("·")
        else:
            level = round(v / high * (len(_BARS) - 1)) if high else 0
            out.append(_BARS[max(0, min(level, len(_BARS) - 1))])
    return "".join(out)


def _cell(points: tuple[WeekPoint, ...], key: str, top: float | None, last: str) -> str:
    values = [getattr(p, key) for p in points]
    return f"{text_spark(values, top)} {last}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


@click.command("trends")
@db_option
@click.option(
    "--weeks",
    default=8,
    show_default=True,
    type=click.IntRange(1, 52),
    help="ISO weeks (UTC) to show, this one included.",
)
@json_option
def collect_trends(db_url: str | None, weeks: int, as_json: bool) -> None:
    """Each annotator's weekly trend and drift flags, as /admin/annotators shows them.

    Per annotator: picks today and this week, then per ISO week (UTC, oldest first): picks,
    median seconds per pick, A-share (position bias), agreement with blind reviews, gold
    accuracy and the share of picks too fast to read, each as a small text plot with this
    week's value. Drift flags follow, each with its reason (the rules: docs/collect.md,
    "Annotator trends and drift").

    \b
    Examples:
      hh collect trends --db sqlite:///collect.db
      hh collect trends --weeks 12 --json
    """
    from ..collect.services.trends import annotator_trends
    from .collect_db import open_db

    trends = annotator_trends(open_db(db_url), weeks=weeks)
    if as_json:
        emit_json(asdict(trends))
        return
    click.echo(f"weeks {trends.weeks[0].label} to {trends.weeks[-1].label} (UTC)")
    rows = []
    for a in trends.annotators:
        p = a.weeks[-1]
        seconds = "-" if p.median_seconds is None else f"{p.median_seconds:g}"
        rows.append(
            {
                "name": a.name + (" (disabled)" if a.disabled else ""),
                "today": a.turns_today,
                "week": a.turns_this_week,
                "turns": _cell(a.weeks, "turns", None, str(p.turns)),
                "median_s": _cell(a.weeks, "median_seconds", None, seconds),
                "share_A": _cell(a.weeks, "share_a", 1.0, _pct(p.share_a)),
                "agree": _cell(a.weeks, "agreement", 1.0, _pct(p.agreement)),
                "gold": _cell(a.weeks, "gold_accuracy", 1.0, _pct(p.gold_accuracy)),
                "too_fast": _cell(a.weeks, "too_fast", 1.0, _pct(p.too_fast)),
                "flags": len(a.flags),
            }
        )
    print_table(rows)
    flagged = [(a.name, f.reason) for a in trends.annotators for f in a.flags]
    if flagged:
        click.echo("")
        click.echo("drift:")
        for name, reason in flagged:
            click.echo(f"  {printable(name)}: {reason}")
