"""Statistics as pictures: PNG charts of ``hh stats`` numbers, per subset and split.

:func:`write_stats_plots` takes the dict ``hh stats`` builds (``"subset/split"`` ->
:func:`hhrlhf.stats.pair_stats` output) and writes, for each key, three charts: human turns
per prompt, response lengths of chosen vs rejected, and class counts; plus ``stats.json``
with the same numbers. The length chart is a histogram when the stats kept every length
(``pair_stats(..., keep_lengths=True)``, as ``hh stats --plots`` does; the bin counts go into
``stats.json`` in place of the raw lengths) and a chart of the summary otherwise.
matplotlib runs with its Agg backend, through the object API (no pyplot state).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .errors import require
from .stats import bin_counts

__all__ = ["write_stats_plots", "histogram"]


def _figure(width=6.4, height=4.0):
    require("matplotlib", "plots", "hh stats --plots")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def histogram(values: list[int], edges: list[float]) -> list[int]:
    """Counts of ``values`` in ``[edges[i], edges[i+1])``; the last bin also takes every value
    at or above the top edge (:func:`hhrlhf.stats.bin_counts`)."""
    return bin_counts(values, edges, clip_top=True)


def _edges(values: list[int], bins: int = 30) -> list[float]:
    top = max(values, default=0)
    top = max(top, 1)
    # a log-like scale would hide the empty responses; plain bins up to the 99th percentile
    s = sorted(values)
    cap = s[min(len(s) - 1, (99 * len(s)) // 100)] if s else 1
    cap = max(cap, 1)
    step = cap / bins
    edges = [round(i * step, 3) for i in range(bins)] + [float(top)]
    return edges


def _safe(key: str) -> str:
    return key.replace("/", "-")


def write_stats_plots(result: dict, out_dir: str | os.PathLike) -> list[Path]:
    """Write the PNG charts and ``stats.json`` to ``out_dir``; return the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    numbers = {k: {n: x for n, x in v.items() if n != "lengths"} for k, v in result.items()}
    for key, s in result.items():
        name = _safe(key)
        written.append(_turns_chart(key, s, out / f"{name}-turns.png"))
        lengths = s.get("lengths")
        if lengths is not None:
            edges = _edges(lengths["chosen"] + lengths["rejected"])
            hist = {side: histogram(v, edges) for side, v in lengths.items()}
            numbers[key]["response_length_histogram"] = {"edges": edges, **hist}
            written.append(_length_histogram(key, edges, hist, out / f"{name}-lengths.png"))
        else:
            written.append(_length_summary(key, s, out / f"{name}-lengths.png"))
        written.append(_classes_chart(key, s, out / f"{name}-classes.png"))
    stats_path = out / "stats.json"
    stats_path.write_text(json.dumps(numbers, indent=2) + "\n")
    written.append(stats_path)
    return written


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path)
    return path


def _turns_chart(key, s, path):
    fig = _figure()
    ax = fig.add_subplot()
    turns = s["human_turns"]
    xs = [int(k) for k in turns]
    ax.bar(xs, [turns[k] for k in turns], color="#4c72b0")
    ax.set_xlabel("human turns in the prompt")
    ax.set_ylabel("pairs")
    ax.set_title(f"{key}: turns per pair ({s['rows']} pairs)")
    return _save(fig, path)


def _length_histogram(key, edges, hist, path):
    fig = _figure()
    ax = fig.add_subplot()
    widths = [b - a for a, b in zip(edges[:-1], edges[1:], strict=True)]
    widths[-1] = widths[0]  # the overflow bin is drawn as wide as the others
    for side, color in (("chosen", "#55a868"), ("rejected", "#c44e52")):
        ax.bar(
            edges[:-1],
            hist[side],
            width=widths,
            align="edge",
            alpha=0.5,
            color=color,
            label=f"{side} ({sum(hist[side])})",
        )
    ax.set_xlabel(f"final response length (characters; the last bar: {edges[-2]:.0f} and longer)")
    ax.set_ylabel("pairs")
    ax.set_title(f"{key}: response lengths, chosen vs rejected")
    ax.legend()
    return _save(fig, path)


def _length_summary(key, s, path):
    fig = _figure()
    ax = fig.add_subplot()
    stats = ["min", "median", "mean", "p90", "max"]
    xs = range(len(stats))
    c, r = s["chosen_response_chars"], s["rejected_response_chars"]
    # an empty split has no lengths (None): no bar
    ax.bar(
        [x - 0.2 for x in xs],
        [c[k] or 0 for k in stats],
        width=0.4,
        color="#55a868",
        label="chosen",
    )
    ax.bar(
        [x + 0.2 for x in xs],
        [r[k] or 0 for k in stats],
        width=0.4,
        color="#c44e52",
        label="rejected",
    )
    ax.set_xticks(list(xs), stats)
    ax.set_ylabel("final response length (characters)")
    ax.set_title(f"{key}: response lengths, chosen vs rejected")
    ax.legend()
    return _save(fig, path)


def _classes_chart(key, s, path):
    fig = _figure(7.0, 4.0)
    ax = fig.add_subplot()
    names = list(s["classes"])
    ax.barh(names, [s["classes"][n] for n in names], color="#8172b2")
    ax.invert_yaxis()
    ax.set_xlabel("pairs")
    ax.set_title(f"{key}: class counts")
    return _save(fig, path)
