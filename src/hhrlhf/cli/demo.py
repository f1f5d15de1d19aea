"""``hh demo``: the main job, end to end on the bundled sample (no network)."""

from __future__ import annotations

from pathlib import Path

import click

from ..dataset import load_dataset
from ..stats import pair_stats
from .data import format_pair
from .options import check_outputs, force_option, print_table

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
    help="Where the demo writes its outputs.",
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
    from ..errors import HHError
    from ..layout import resolve_source, select_files

    check_outputs(force, out=(out_dir, "dir"))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    src = resolve_source(data)
    label = "sample" if src.kind == "sample" else str(data)
    files = select_files("all", data=src)
    pair_files = [f for f in files if not f.red_team]

    _step(f"1. the data (hh info --data {label})")
    ds = load_dataset(data=src) if pair_files else {}
    if not any(ds.values()):
        raise HHError(f"{src.label}: no preference pairs to walk through")
    what = ", ".join(dict.fromkeys(str(f.subset or f.path.name) for f in pair_files))
    click.echo(f"the preference data in {src.label} ({what}), as load_dataset gives it:")
    print_table([{"split": k, "pairs": len(v)} for k, v in ds.items()])

    _step(f"2. statistics (hh stats --data {label})")
    stats = {}
    for split, pairs in ds.items():
        stats[split] = pair_stats(pairs)
        s = stats[split]
        click.echo(
            f"{split}: {s['rows']} pairs, chosen response longer in "
            f"{100 * s['chosen_longer_share']:.1f}%, classes "
            + ", ".join(f"{k}={v}" for k, v in s["classes"].items() if v)
        )
    (out / "stats.json").write_text(__import__("json").dumps(stats, indent=2))

    _step("3. a pair whose response contains speaker markers (hh show)")
    # harmless-base/test first where it is there, then every other pair
    every = [p for p in ds.get("test", []) if p.subset == "harmless-base"]
    every += [p for pairs in ds.values() for p in pairs if p not in every]
    default = ds["test"][0] if ds.get("test") else every[0]
    tricky = next((p for p in every if "response_contains_turns" in p.classes), default)
    click.echo(format_pair(tricky))
    click.echo(
        f"\nprompt + chosen_response == chosen: {tricky.prompt + tricky.chosen_response == tricky.chosen}"
        f"; prompt + rejected_response == rejected: "
        f"{tricky.prompt + tricky.rejected_response == tricky.rejected}"
    )
    naive = tricky.chosen.rfind("\n\nAssistant:") + len("\n\nAssistant:")
    if naive != tricky.prompt_end:
        click.echo(
            f"a right-most split of chosen would put the prompt at {naive} characters; "
            f"the turn-level prompt ends at {tricky.prompt_end}"
        )

    _step("4. export, audit and clean (hh export / hh check / hh clean)")
    from . import convert

    convert.demo_step(data, out)

    _step("5. the red-team report (hh redteam report)")
    if any(f.red_team for f in files):
        _optional(data, out, "redteam", "report")
    else:
        click.echo(f"skipped: no red-team attempts in {src.label}")

    _step("6. a preference model, trained and evaluated (hh pm train / hh pm eval)")
    _optional(data, out, "pm", "reward")

    _step("7. the collection loop: the app, one scripted conversation, its export (hh serve)")
    _optional(data, out, "collect_demo", "web")

    _step("done")
    click.echo(f"outputs are in {out.resolve()}")
