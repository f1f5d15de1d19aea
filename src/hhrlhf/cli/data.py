"""Data commands: ``hh info``, ``hh show``, ``hh stats``."""

from __future__ import annotations

import random
import textwrap

import click

from ..errors import HHError, NoDataError, RecordKindError
from ..layout import (
    IgnoredFilesWarning,
    ignored_files,
    preferred_split,
    resolve_source,
    scan,
    select_files,
    why_no_data,
)
from ..outputs import replace_dir
from ..reader import detect_container, read_objects, read_pairs
from ..records import PAIR_CLASSES, PreferencePair
from ..stats import pair_stats
from ..subsets import RED_TEAM, SUBSETS
from ..text import printable, wrap_paragraphs
from .options import (
    check_outputs,
    data_option,
    emit_json,
    file_subsets,
    force_option,
    json_option,
    lenient_option,
    note_rows_read,
    pass_lenient,
    print_table,
    seed_option,
    subset_option,
)

#: The width ``hh stats`` keeps to without --wide (the upstream subset names fit it).
NARROW = 100

__all__ = ["commands", "info", "show", "stats", "format_pair"]


def _count_rows(path) -> int:
    return sum(1 for _ in read_objects(path))


@click.command()
@data_option
@json_option
def info(data, as_json):
    """Subsets, splits, rows, files, and whether each file is cached and verified.

    \b
    Examples:
      hh info                 # the cache: expected rows, cached or not, checksum status
      hh info --data sample   # the bundled sample: rows actually present
    """
    src = resolve_source(data)
    rows = []
    if src.kind == "cache":
        from .. import download as dl

        for subset in SUBSETS.values():
            for spec in subset.files:
                path = dl.cached_path(spec, cache_dir=src.cache_dir)
                rows.append(
                    {
                        "subset": subset.name,
                        "split": spec.split,
                        "expected_rows": spec.rows,
                        "file": spec.path,
                        "path": str(path),
                        "cached": path.exists(),
                        "checksum": dl.checksum_status(spec, cache_dir=src.cache_dir),
                        "sha256": spec.sha256,
                    }
                )
    elif src.kind != "file":  # what is there, registry subsets first
        found = scan(src.root)
        if not found:  # a subset folder given for its parent, or nothing there
            raise NoDataError(src.label, why_no_data(src))
        for name, splits in found.items():
            for split, path in splits.items():
                known = SUBSETS.get(name)
                spec = next((f for f in known.files if f.split == split), None) if known else None
                rows.append(
                    {
                        "subset": name,
                        "split": split,
                        "expected_rows": spec.rows if spec else "-",
                        "file": spec.path if spec else f"{name}/{path.name}",
                        "path": str(path.relative_to(src.root)),
                        "rows": _count_rows(path),
                    }
                )
    if src.kind == "file":
        rows.append(
            {
                "file": str(src.root),
                "container": detect_container(src.root),
                "rows": _count_rows(src.root),
            }
        )
    ignored = ignored_files(src.root) if src.kind == "dir" and src.root else []
    if ignored:
        click.echo(f"warning: {printable(str(IgnoredFilesWarning(src.root, ignored)))}", err=True)
    if as_json:
        extra = {"ignored": [p.relative_to(src.root).as_posix() for p in ignored]}
        emit_json({"data": src.label, "files": rows, **(extra if ignored else {})})
        return
    for row in rows:
        if row.get("path", "") is None:
            row["path"] = "not present"
    click.echo(f"data: {src.label}", err=True)
    if src.kind == "cache":
        cols = ["subset", "split", "expected_rows", "cached", "checksum", "path"]
    elif src.kind == "file":
        cols = ["file", "container", "rows"]
    else:
        cols = ["subset", "split", "rows", "expected_rows", "path"]
    print_table(rows, cols)


def _wrap(text: str, indent: str) -> str:
    """``text`` with its control characters escaped, wrapped to 96 columns (linear time)."""
    return wrap_paragraphs(printable(text), 96, indent)


def format_pair(pair: PreferencePair) -> str:
    """A readable rendering: the prompt's turns, then both final responses, then the classes."""
    head = printable(
        f"{pair.subset or '?'} / {pair.split or '?'} / index {pair.index}", keep_newlines=False
    )
    out = [click.style(head, bold=True)]
    for turn in pair.prompt_dialogue.turns:
        who = "Human" if turn.role == "Human" else "Assistant"
        out.append(click.style(f"{who}:", fg="cyan" if who == "Human" else "magenta"))
        out.append(_wrap(turn.text.strip(), "    "))
    for label, text, color in (
        ("CHOSEN response", pair.chosen_response, "green"),
        ("REJECTED response", pair.rejected_response, "red"),
    ):
        out.append(click.style(f"── {label} " + "─" * (60 - len(label)), fg=color))
        shown = text.strip()
        out.append(_wrap(shown, "    ") if shown else "    (empty)")
    classes = printable(", ".join(sorted(pair.classes)) or "none", keep_newlines=False)
    out.append(f"classes: {classes}")
    return "\n".join(out)


def pair_json(pair: PreferencePair) -> dict:
    return pair.to_view(full=True)


@click.command()
@click.argument("subset", required=False)
@click.option(
    "--split",
    default=None,
    metavar="SPLIT",
    help="Split to show (default: train where there is one, else the split there).",
)
@click.option("--index", "index", type=int, default=None, help="0-based row of the pair.")
@click.option("--sample", "sample", type=int, default=None, help="Show K random pairs.")
@seed_option("Seed for --sample.")
@data_option
@subset_option
@json_option
@lenient_option
@pass_lenient
def show(subset, split, index, sample, seed, data, file_subset, as_json, lenient):
    """Show a pair as a readable dialogue: the prompt, both responses marked, its classes.

    SUBSET may be left out when the data holds one preference subset (or is one file).

    \b
    Examples:
      hh show harmless-base --split test --index 0 --data sample
      hh show helpful-base --sample 3 --seed 1 --json
    """
    if index is not None and sample is not None:
        raise click.UsageError("give --index or --sample, not both")
    if subset == RED_TEAM:
        raise click.BadParameter("red-team-attempts has no pairs: see `hh redteam query`")
    names = list(file_subsets((subset,) if subset else (), file_subset, data)) or None
    files = [f for f in select_files(names, split=split, data=data) if not f.red_team]
    names = list(dict.fromkeys(f.subset for f in files))
    if len(names) > 1:
        raise click.UsageError(f"name the subset to show: one of {', '.join(map(str, names))}")
    if not files:
        raise RecordKindError(
            f"{resolve_source(data).label}: holds red-team attempts, not pairs",
            holds="attempts",
            wanted="pairs",
        )
    split = split or preferred_split(files, "train") or files[0].split
    f = next(f for f in files if f.split == split)
    subset = f.subset or f.path.name
    pairs = read_pairs(f.path, subset=f.subset, split=f.split, lenient=lenient)
    if sample is None:
        index = index or 0
        if index < 0:
            raise click.BadParameter("--index must be >= 0")
        picked, n = None, 0
        for p in pairs:  # read on to the end: a damaged file is an error, not a partial view
            n += 1
            if picked is None and p.index == index:
                picked = p
        note_rows_read(n)
        if picked is None:
            raise HHError(f"{subset}/{split} has no pair with index {index}")
        chosen = [picked]
    else:
        population = list(pairs)
        note_rows_read(len(population))
        if not population:
            raise HHError(f"{subset}/{split} has no pairs to sample")
        chosen = random.Random(seed).sample(population, min(sample, len(population)))
    if as_json:
        emit_json([pair_json(p) for p in chosen] if sample is not None else pair_json(chosen[0]))
        return
    click.echo("\n\n".join(format_pair(p) for p in chosen))


@click.command()
@click.argument("subsets", nargs=-1)
@click.option("--split", default=None, help="train or test (default: both).")
@click.option(
    "--plots",
    "plots_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Also write PNG charts and the numbers as JSON to this directory (needs hhrlhf[plots]).",
)
@data_option
@subset_option
@json_option
@click.option(
    "--wide", is_flag=True, help=f"One table, wider than {NARROW} columns, with longer headers."
)
@lenient_option
@force_option
@pass_lenient
def stats(subsets, split, plots_dir, data, file_subset, as_json, wide, lenient, force):
    """Rows, human turns per prompt, response lengths, chosen-longer share and class counts.

    \b
    Examples:
      hh stats --data sample
      hh stats harmless-base --split test --json
    """
    check_outputs(force, plots=(plots_dir, "dir"))
    result = {}
    subsets = file_subsets(subsets, file_subset, data)
    files = select_files(list(subsets) or None, split=split, data=data)
    if any(f.red_team for f in files):
        raise click.BadParameter("red-team-attempts has no pairs: see `hh redteam report`")
    for f in files:
        pairs = read_pairs(f.path, subset=f.subset, split=f.split, lenient=lenient)
        key = f"{f.subset or f.path.name}/{f.split}"
        result[key] = pair_stats(pairs, keep_lengths=bool(plots_dir))
        note_rows_read(result[key]["rows"])
    if plots_dir:
        from ..plots import write_stats_plots

        with replace_dir(plots_dir) as tmp:  # --force replaces the old charts whole
            written = write_stats_plots(result, tmp)
        click.echo(f"wrote {len(written)} file(s) to {plots_dir}", err=True)
        for s in result.values():
            s.pop("lengths", None)
    if as_json:
        emit_json(result)
        return
    _print_stats(result, wide)


#: The class columns of ``hh stats``: (short header, header under --wide).
_CLASS_HEADERS = {
    "empty_response": ("empty", "empty"),
    "response_contains_turns": ("resp turns", "turns in resp"),
    "non_alternating": ("non-alt", "non-alt"),
    "inline_speaker_label": ("inline", "inline label"),
    "identical_pair": ("identical", "identical"),
    "diverges_before_final_turn": ("early div", "early diverge"),
    "no_prompt": ("no prompt", "no prompt"),
}


def _print_stats(result: dict, wide: bool) -> None:
    """One table (``wide``), or two that fit :data:`NARROW` columns: lengths, then classes."""
    lengths, classes = [], []
    for key, s in result.items():
        empty = s["rows"] == 0  # no median or share to show: n/a, not zeros that look like data
        lengths.append(
            {
                "subset/split": key,
                "rows": s["rows"],
                "med chosen": "n/a" if empty else s["chosen_response_chars"]["median"],
                "med rejected": "n/a" if empty else s["rejected_response_chars"]["median"],
                "chosen longer": "n/a" if empty else f"{100 * s['chosen_longer_share']:.1f}%",
            }
        )
        header = 1 if wide else 0
        classes.append(
            {"subset/split": key}
            | {_CLASS_HEADERS[name][header]: s["classes"][name] for name in PAIR_CLASSES}
        )
    if wide:
        print_table([a | b for a, b in zip(lengths, classes, strict=True)])
    else:
        print_table(lengths)
        click.echo()
        print_table(classes)
    turns: dict[int, int] = {}
    for s in result.values():
        for k, v in s["human_turns"].items():
            turns[int(k)] = turns.get(int(k), 0) + v
    line = "human turns per prompt: " + (  # no break inside one "turns: count"
        ", ".join(f"{k}:\xa0{v}" for k, v in sorted(turns.items())) or "n/a (no rows)"
    )
    text = line if wide else "\n".join(textwrap.wrap(line, NARROW, break_on_hyphens=False))
    click.echo("\n" + text.replace("\xa0", " "))
    note = "med = median final-response length in characters; class columns count pairs"
    click.echo(f"({note})" if wide else f"({note}; --wide: one table)", err=True)


commands = [info, show, stats]
