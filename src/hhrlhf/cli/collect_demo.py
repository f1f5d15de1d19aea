"""``hh demo``'s collection step: prints what :func:`hhrlhf.collect.demo.run_scripted_collection` did."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["demo_step"]


def demo_step(data: str, out: Path) -> None:
    """Run the scripted collection (the app, one conversation, an export) and print it."""
    from ..collect.demo import run_scripted_collection

    done = run_scripted_collection(out)
    click.echo(f"the app is up at {done.base_url} (demo backend: no model, no network)")
    for t in done.turns:
        click.echo(f"\nHuman: {t.text}")
        for slot, text in t.candidates:
            click.echo(f"  {slot.upper()}: {_short(text)}")
        click.echo(
            f"  picked {t.pick.upper()}{t.strength}"
            + (f", edited to: {_short(t.edit)}" if t.edit else "")
        )
    m = done.manifest
    click.echo(
        f"\nexported {m['rows']} comparisons ({m['comparisons']['pick']} picks, "
        f"{m['comparisons']['edit']} edit) to {done.target} "
        "(hh collect export; loadable with load_dataset('helpful-base', data=...))"
    )
    click.echo("try it by hand: hh serve --demo   (then open the login link it prints)")
    click.echo("browse the sample: hh serve --demo --data sample   (then open /data)")


def _short(text: str, width: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
