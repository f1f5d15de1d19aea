"""``hh demo``: the main job, end to end on the bundled sample (no network)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import click

from .data import format_pair
from .options import check_outputs, data_reads, force_option, print_table

__all__ = ["demo_command"]


def _step(title: str) -> None:
    click.echo(click.style(f"\n== {title} ==", bold=True))


def _optional(data: str, out: Path, module: str, extra: str) -> None:
    """Run a step that needs an extra; without it, say what to install instead of failing."""
    from ..errors import MissingExtraError

    step = __import__(f"{__package__}.{module}", fromlist=["demo_step"]).demo_step
    try:
        step(data, out)
    except MissingExtraError as exc:
        click.echo(f"skipped: {exc}")


@click.command("demo")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="hh-demo-out",
    show_default=True,
    help="Where the demo writes its outputs; a folder an earlier hh demo wrote is replaced "
    "(only one: a folder holding anything else is refused).",
)
@click.option(
    "--data",
    default="sample",
    show_default=True,
    metavar="PATH|sample",
    help="Data to walk through (default: the bundled sample).",
)
@force_option
def demo_command(out_dir, data, force):
    """Walk the bundled sample end to end: info, stats, a shown pair, and what each part writes.

    \b
    Example:
      hh demo --out /tmp/hh-demo
    """
    from ..demo import is_demo_output, open_demo_data, start_demo_output

    # an earlier demo's folder is replaced without --force; any other hhrlhf output with it
    check_outputs(force or is_demo_output(out_dir), out=(out_dir, "dir"), reads=data_reads(data))
    demo = open_demo_data(data)
    out = Path(out_dir)
    if start_demo_output(out):
        click.echo(f"replacing {out_dir} (an earlier hh demo's output)", err=True)
    try:
        _walk(demo, data, out)
    except BaseException:
        # no half demo: the folder was empty, or an hhrlhf output this run replaced
        shutil.rmtree(os.path.realpath(out), ignore_errors=True)
        raise


def _walk(demo, data: str, out: Path) -> None:
    from ..demo import finish_demo_output, pick_pair, write_stats

    ds, src, label = demo.pairs, demo.source, demo.label

    _step(f"1. the data (hh info --data {label})")
    click.echo(f"the preference data in {src.label} ({demo.subsets}), as load_dataset gives it:")
    print_table([{"split": k, "pairs": len(v)} for k, v in ds.items()])

    _step(f"2. statistics (hh stats --data {label})")
    for split, s in write_stats(ds, out).items():
        if not s["rows"]:
            click.echo(f"{split}: 0 pairs (an empty split: no statistics)")
            continue
        click.echo(
            f"{split}: {s['rows']} pairs, chosen response longer in "
            f"{100 * s['chosen_longer_share']:.1f}%, classes "
            + ", ".join(f"{k}={v}" for k, v in s["classes"].items() if v)
        )

    _step("3. a pair whose response contains speaker markers (hh show)")
    shown = pick_pair(ds)
    tricky = shown.pair
    click.echo(format_pair(tricky))
    click.echo(
        f"\nprompt + chosen_response == chosen: {shown.chosen_reassembles}"
        f"; prompt + rejected_response == rejected: {shown.rejected_reassembles}"
    )
    if shown.naive_prompt_end != tricky.prompt_end:
        click.echo(
            f"a right-most split of chosen would put the prompt at {shown.naive_prompt_end} "
            f"characters; the turn-level prompt ends at {tricky.prompt_end}"
        )

    _step("4. export, audit and clean (hh export / hh check / hh clean)")
    from . import convert

    convert.demo_step(data, out)

    _step("5. the red-team report (hh redteam report)")
    if demo.has_red_team:
        _optional(data, out, "redteam", "report")
    else:
        click.echo(f"skipped: no red-team attempts in {src.label}")

    _step("6. a preference model, trained and evaluated (hh pm train / hh pm eval)")
    _optional(data, out, "pm", "reward")

    _step("7. the collection loop: the app, one scripted conversation, its export (hh serve)")
    _optional(data, out, "collect_demo", "web")

    _step("done")
    finish_demo_output(out)
    click.echo(f"outputs are in {out.resolve()}")
