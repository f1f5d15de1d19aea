"""``hh leaderboard`` (also ``hh collect leaderboard``): rank models from pairwise votes.

The votes come from a battles file (``--battles``, LMArena's layout) or from the collection
database (``--db``, the default). A thin layer over :func:`hhrlhf.ranking.rank`.
"""

from __future__ import annotations

import click

from ..text import printable
from .collect import _resamples_option, collect
from .collect_db import db_option, open_db
from .options import emit_json, print_table

__all__ = ["commands", "leaderboard_cmd", "robustness_sentence"]


@click.command("leaderboard")
@db_option
@click.option(
    "--battles",
    "battles",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Rank the votes of a battles file (JSON lines, optionally .gz, LMArena's layout) "
    "instead of the database.",
)
@_resamples_option(
    "Bootstrap resamples for the 95% intervals (whole conversations; single votes of --battles)."
)
@click.option(
    "--style-control",
    is_flag=True,
    help="Length as a covariate: ratings net of the pull of longer answers.",
)
@click.option(
    "--robustness",
    is_flag=True,
    help="Search for a few votes whose removal changes the first-ranked model.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON instead of a table.")
def leaderboard_cmd(db_url, battles, resamples, style_control, robustness, as_json):
    """Rank models (or the collection's backends) by a Bradley-Terry fit of pairwise votes.

    Ratings are on the Elo scale (400 points = 10:1 odds, mean 1000) with 95% bootstrap
    intervals that resample whole conversations (votes, for --battles). Helpful: the picked
    response wins; red-team: the less harmful one wins. Comparisons between two responses of
    one backend are not used. A tie in a battles file counts as half a win each way.

    A model that never lost or never won, or that took part in one vote only, has no
    interval: its rating rests on the prior, and a warning says so (the table, stderr and
    --json's "warning").

    \b
    Examples:
      hh leaderboard --battles battles.jsonl.gz
      hh leaderboard --battles battles.jsonl.gz --style-control --robustness --json
      hh leaderboard --db sqlite:///hh-collect.db
    """
    options = {"resamples": resamples, "style_control": style_control, "robustness": robustness}
    if battles is not None:
        if db_url is not None:
            raise click.UsageError("--battles and --db: rank one or the other")
        from ..ranking import rank, read_battles

        out = rank(read_battles(battles), **options)
    else:
        storage = open_db(db_url)
        from ..collect.services.stats import model_leaderboard

        out = model_leaderboard(storage, **options)
    if as_json:
        emit_json(out)
        return
    if not out["models"]:
        if battles is not None:
            click.echo(f"no votes in {printable(battles)}")
        else:
            click.echo("no comparisons between two different backends yet")
        return
    print_table([_row(r) for r in out["models"]])
    for line in _leaderboard_notes(out):
        click.echo(line)
    for r in out["models"]:
        if r["warning"]:
            click.echo(f"warning: {printable(r['name'])}: {r['warning']}", err=True)


def _row(r: dict) -> dict:
    if r["warning"]:
        interval = f"none ({r['warning'].split(':')[0]})"
    elif r["ci_low"] is None:
        interval = "-"
    else:
        interval = f"{r['ci_low']:.0f} to {r['ci_high']:.0f}"
    return {
        "model": r["name"],
        "rating": f"{r['rating']:.0f}",
        "95% interval": interval,
        "comparisons": r["comparisons"],
        "win_rate": f"{r['win_rate']:.0%}",
    }


def _leaderboard_notes(out: dict) -> list[str]:
    """The lines under the leaderboard table: counts, dates, intervals, style, robustness."""
    lines = []
    where = f" in {out['conversations']:,} conversations" if "conversations" in out else ""
    ties = f" ({out['ties']:,} ties)" if out["ties"] else ""
    lines.append(f"{out['comparisons']:,} comparisons{where}{ties}")
    if out["dates"]:
        lines.append(f"from {out['dates']['first']} to {out['dates']['last']}")
    lines.append(
        f"intervals: {out['intervals']['method']}, {out['intervals']['resamples']:,} resamples"
    )
    if out["style"]:
        s = out["style"]["length"]
        ci = (
            ""
            if s["ci_low"] is None
            else f"95% interval {s['ci_low']:+.3f} to {s['ci_high']:+.3f}; "
        )
        lines.append(
            f"style control: length coefficient {s['coef']:+.3f} "
            f"({ci}{s['elo_per_unit']:+.0f} Elo per unit)"
        )
    if "robustness" in out:
        lines.append(robustness_sentence(out["robustness"]))
    if out.get("weight_changes"):
        from ..collect.services.backend_live import BackendChange

        said = "; ".join(BackendChange(**c).describe() for c in out["weight_changes"])
        lines.append(
            printable(f"weights changed during the collection (the pair mix with them): {said}")
        )
    return lines


def robustness_sentence(robustness: dict) -> str:
    """One sentence: how many votes hold the top rank."""
    flip = robustness["flip_top"]
    if flip is None:
        return (
            f"robustness: no set of up to {robustness['limit']:,} votes found whose removal "
            "changes the top rank"
        )
    k = flip["votes"]
    refs = flip.get("lines", flip.get("turns", flip.get("refs")))
    shown = ", ".join(map(str, refs[:10])) + (", ..." if k > 10 else "")
    what = "lines" if "lines" in flip else "votes"
    return (
        f"robustness: the top rank changes (to {flip['new_top']}) if "
        f"{'this vote is' if k == 1 else f'these {k:,} votes are'} removed ({what} {shown})"
    )


collect.add_command(leaderboard_cmd)  # `hh collect leaderboard`: the same command
commands = [leaderboard_cmd]
