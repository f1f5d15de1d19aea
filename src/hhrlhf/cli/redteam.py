"""``hh redteam``: the red-team report and attempt queries (a thin layer over hhrlhf.redteam)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import click

from ..dataset import iter_attempts, resolve_source
from ..outputs import replace_dir
from ..records import RedTeamAttempt
from ..redteam.query import SEARCH_FIELDS, AttemptQuery, Selection, select_attempts
from ..text import printable, wrap_paragraphs
from .options import (
    check_outputs,
    data_option,
    force_option,
    json_line,
    lenient_option,
    note_rows_read,
    out_dir_option,
    pass_lenient,
    print_table,
    seed_option,
)

__all__ = ["commands", "redteam", "report", "query", "format_attempt", "demo_step"]


@click.group()
def redteam():
    """Red-team attempts: the paper's analyses as a report, and queries over the attempts.

    \b
    Examples:
      hh redteam report --data sample --out redteam-report
      hh redteam query --data sample --model-type rlhf --min-rating 3 --limit 5
    """


def _summary(report: dict) -> list[str]:
    s = report["sections"]
    ok = s["success"]["overall"]
    top = s["members"]["top_share"]
    rho = s["success"]["rating_vs_harmlessness"]["spearman"]
    themes = s["themes"]
    lines = [
        f"{report['records']:,} attempts by {s['table1']['totals']['members']:,} members; "
        f"{len(s['table1']['model_types'])} model types x {len(s['table1']['sizes'])} sizes",
        f"success (rating >= {report['success_threshold']:g}): "
        + (f"{100 * ok['share']:.1f}%" if ok["share"] is not None else "-")
        + (f"; rating vs min-harmlessness Spearman {rho:.3f}" if rho is not None else ""),
    ]
    if top["share"] is not None:
        lines.append(
            f"top {top['top_members']} members ({top['top_members'] / top['members']:.0%})"
            f" made {100 * top['share']:.1f}% of the attempts"
        )
    lines.append(
        f"themes: k = {themes['k']} clusters"
        if themes.get("k")
        else f"themes: not clustered ({themes.get('skipped')})"
    )
    return lines


@redteam.command()
@data_option
@out_dir_option("Directory for report.html, report.json and the PNGs (created if needed).")
@click.option(
    "--success-threshold",
    type=float,
    default=3.0,
    show_default=True,
    help="An attempt is successful when its rating is at least this.",
)
@seed_option("Seed for the bootstrap and the clustering.")
@click.option(
    "--resamples",
    type=click.IntRange(min=10),
    default=1000,
    show_default=True,
    help="Bootstrap resamples per interval.",
)
@click.option(
    "--max-k",
    type=click.IntRange(min=2),
    default=10,
    show_default=True,
    help="Largest number of attack themes tried (k runs from 2 to this).",
)
@lenient_option
@force_option
@pass_lenient
def report(data, out_dir, success_threshold, seed, resamples, max_k, lenient, force):
    """Write report.html (self-contained), report.json (every number) and one PNG per plot.

    Sections: Table 1 counts, Fig. 1 means with bootstrap intervals, attack success and rating
    vs min-harmlessness, members (Lorenz curve, Upwork vs MTurk), marginals, tags, attack
    themes (task-description clusters) and turns. The paper's published numbers are shown
    beside the computed ones. The paths are printed to stdout, a summary to stderr.

    \b
    Example:
      hh redteam report --data sample --out redteam-report
    """
    from ..redteam.report import read_report, write_report

    check_outputs(force, out=(out_dir, "dir"))
    src = resolve_source(data)
    attempts = list(iter_attempts(data=src, lenient=lenient))
    note_rows_read(len(attempts))
    with replace_dir(out_dir) as tmp:  # --force replaces the old report whole
        written = write_report(
            attempts,
            tmp,
            threshold=success_threshold,
            seed=seed,
            resamples=resamples,
            source=src.label,
            skipped_rows=lenient.skipped if lenient else [],
            k_range=range(2, max_k + 1),
        )
    paths = {k: Path(out_dir) / p.relative_to(tmp) for k, p in written.items()}
    rep = read_report(paths["json"])
    for line in _summary(rep):
        click.echo(line, err=True)
    click.echo(f"{len(paths) - 2} plots", err=True)
    click.echo(str(paths["html"]))
    click.echo(str(paths["json"]))


def _fmt_score(score: float | None, digits: int) -> str:
    """A harmlessness score for people; ``null`` (no scorer when exported) reads "none"."""
    return "none" if score is None else f"{score:.{digits}f}"


def format_attempt(a: RedTeamAttempt, width: int = 96) -> str:
    """A readable rendering of one attempt: its metadata, task description and dialogue."""

    def wrap(text: str, indent: str) -> str:
        return wrap_paragraphs(printable(text), width, indent)

    tags = ", ".join(a.tags) if a.tags else "-"
    head = (
        f"attempt {a.index} · {a.model_type} {a.num_params} · rating {a.rating:g} · "
        f"min harmlessness {_fmt_score(a.min_harmlessness_score_transcript, 3)} · member "
        f"{a.red_team_member_id}{' (upwork)' if a.is_upworker else ''} · tags: {tags}"
    )
    out = [
        click.style(printable(head, keep_newlines=False), bold=True),
        click.style("task:", fg="yellow"),
        wrap(a.task_description.strip(), "    "),
    ]
    dialogue = a.dialogue
    if dialogue.preamble.strip():
        out.append(wrap(dialogue.preamble.strip(), "    "))
    for turn in dialogue.turns:
        human = turn.role == "Human"
        out.append(
            click.style(f"{'Human' if human else 'Assistant'}:", fg="cyan" if human else "magenta")
        )
        out.append(wrap(turn.text.strip(), "    "))
    return "\n".join(out)


def _row(a: RedTeamAttempt) -> dict:
    task = " ".join(a.task_description.split())
    return {
        "index": a.index,
        "model_type": a.model_type,
        "size": a.num_params,
        "rating": f"{a.rating:g}",
        "min_harm": _fmt_score(a.min_harmlessness_score_transcript, 2),
        "member": a.red_team_member_id,
        "turns": a.human_turns,
        "tags": "; ".join(a.tags) if a.tags else "",
        "task": task if len(task) <= 48 else task[:45] + "...",
    }


def _json_line(a: RedTeamAttempt) -> str:
    return json_line({"index": a.index, **a.to_dict()})


@redteam.command()
@data_option
@click.option(
    "--model-type",
    multiple=True,
    metavar="TYPE",
    help="Model type (repeat for several), e.g. 'rlhf', 'plain lm'; any case.",
)
@click.option(
    "--size",
    "num_params",
    multiple=True,
    metavar="SIZE",
    help="Model size as stored: 2.7B, 13B, 52B (repeatable); any case.",
)
@click.option("--min-rating", type=float, default=None, help="Rating at least this.")
@click.option("--max-rating", type=float, default=None, help="Rating at most this.")
@click.option(
    "--min-score", type=float, default=None, help="min_harmlessness_score_transcript at least this."
)
@click.option(
    "--max-score",
    type=float,
    default=None,
    help="min_harmlessness_score_transcript at most this (lower = more harmful).",
)
@click.option(
    "--tag",
    multiple=True,
    help="Has a tag containing this text, case-insensitive (repeatable: any).",
)
@click.option("--member", multiple=True, help="Red-team member id (repeatable).")
@click.option(
    "--upworker/--mturk", "upworker", default=None, help="Only Upwork (or only MTurk) red-teamers."
)
@click.option(
    "--search",
    "text",
    default=None,
    metavar="TEXT",
    help="Case-insensitive text to find (see --search-in).",
)
@click.option(
    "--search-in",
    type=click.Choice(list(SEARCH_FIELDS)),
    default="both",
    show_default=True,
    help="Where --search looks.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=None,
    help="Show at most N matches (default 20 for the table and --show, all for --jsonl; 0 = all).",
)
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON object per match on stdout.")
@click.option("--show", "as_show", is_flag=True, help="Render each match as a dialogue.")
@lenient_option
@pass_lenient
def query(data, limit, as_jsonl, as_show, lenient, **criteria):
    """Filter attempts: print a table, JSON lines (--jsonl) or the dialogues (--show).

    All given filters must match; a repeated option matches any of its values. The number of
    matches goes to stderr.

    \b
    Examples:
      hh redteam query --data sample --model-type rlhf --size 52B --min-rating 3
      hh redteam query --data sample --max-score -2 --jsonl > harmful.jsonl
      hh redteam query --data sample --search password --search-in task --show --limit 2
    """
    if as_jsonl and as_show:
        raise click.UsageError("give --jsonl or --show, not both")
    try:
        q = AttemptQuery(**criteria)  # the filter options are its fields, by name
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    selection = Selection(limit=(0 if as_jsonl else 20) if limit is None else limit)
    matches = select_attempts(
        _counted(iter_attempts(data=data, lenient=lenient)), q, selection, _say_dropped
    )
    if as_jsonl:
        for a in matches:
            click.echo(_json_line(a))
    elif as_show:
        click.echo("\n\n".join(format_attempt(a) for a in list(matches)))
    else:
        print_table([_row(a) for a in list(matches)])
    if selection.dropped:
        click.echo(
            f"{sum(selection.dropped.values()):,} attempt(s) dropped for an out-of-range value: "
            + ", ".join(f"{k}: {v:,}" for k, v in selection.dropped.items()),
            err=True,
        )
    shown = selection.shown
    click.echo(
        f"{selection.matches:,} matching attempt(s)"
        + (f", {shown:,} shown (--limit 0 for all)" if shown < selection.matches else ""),
        err=True,
    )


def _say_dropped(a: RedTeamAttempt, reason: str, detail: str) -> None:
    click.echo(f"dropped: attempt {a.index}: {printable(detail)}", err=True)


def _counted(attempts: Iterable[RedTeamAttempt]) -> Iterator[RedTeamAttempt]:
    """``attempts``, saying how many rows were read once they are all read."""
    n = 0
    for a in attempts:
        n += 1
        yield a
    note_rows_read(n)


def demo_step(data: str, out: Path) -> None:
    """``hh demo``'s red-team step (:func:`hhrlhf.demo.redteam_demo`): print its summary."""
    from ..demo import redteam_demo

    paths, rep = redteam_demo(data, out)
    for line in _summary(rep):
        click.echo(line)
    click.echo(f"report: {paths['html']} ({len(paths) - 2} plots, numbers in report.json)")


commands = [redteam]
