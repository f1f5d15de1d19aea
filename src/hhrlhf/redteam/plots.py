"""The report's figures, drawn with matplotlib's Agg canvas (no display, no pyplot state).

Each ``plot_*`` function takes numbers the statistics already computed (the same dicts that
go into ``report.json``) and returns a :class:`matplotlib.figure.Figure`; :func:`figure_png`
turns one into PNG bytes. Figures are built on ``Figure`` objects directly rather than through
``pyplot``, so drawing a report never touches a user's interactive backend or global state.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

from ..errors import require

__all__ = [
    "figure_png",
    "plot_cell_means",
    "plot_score_distributions",
    "plot_cell_success",
    "plot_rating_vs_harmlessness",
    "plot_member_bars",
    "plot_lorenz",
    "plot_member_success",
    "plot_marginals",
    "plot_tags",
    "plot_silhouette",
    "plot_themes",
    "plot_turns",
]

_FEATURE = "the red-team report's plots"
_COLORS = {
    "plain lm": "#4C72B0",
    "context distillation": "#DD8452",
    "rejection sampling": "#55A868",
    "rlhf": "#C44E52",
}
_EXTRA = ["#8172B3", "#937860", "#DA8BC3", "#8C8C8C"]


def _color(model_type: str, i: int) -> str:
    return _COLORS.get(model_type, _EXTRA[i % len(_EXTRA)])


def _figure(width: float = 7.0, height: float = 4.2):
    mfig = require("matplotlib.figure", "report", _FEATURE)
    return mfig.Figure(figsize=(width, height), dpi=100, layout="constrained")


def figure_png(fig) -> bytes:
    """The figure as PNG bytes (Agg canvas, 100 dpi)."""
    agg = require("matplotlib.backends.backend_agg", "report", _FEATURE)
    agg.FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def _empty(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#666")
    ax.set_xticks([])
    ax.set_yticks([])


def plot_cell_means(
    cells: dict, sizes: Sequence[str], *, ylabel: str, title: str, paper: dict | None = None
):
    """Mean per model type over model size, with the bootstrap interval as error bars.

    ``paper`` (``{model_type: {size: value}}``), when given, is drawn as hollow markers.
    """
    fig = _figure()
    ax = fig.add_subplot()
    xs = list(range(len(sizes)))
    for i, (m, row) in enumerate(cells.items()):
        pts = [(x, row[s]) for x, s in zip(xs, sizes, strict=True) if row[s]["mean"] is not None]
        if not pts:
            continue
        c = _color(m, i)
        x = [p[0] for p in pts]
        y = [p[1]["mean"] for p in pts]
        err = [
            [p[1]["mean"] - p[1]["low"] for p in pts],
            [p[1]["high"] - p[1]["mean"] for p in pts],
        ]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=4, color=c, label=m)
        if paper and m in paper:
            px = [xx for xx, s in zip(xs, sizes, strict=True) if s in paper[m]]
            py = [paper[m][s] for s in sizes if s in paper[m]]
            ax.plot(px, py, linestyle=":", marker="D", markerfacecolor="none", color=c, alpha=0.8)
    if paper:
        ax.plot(
            [],
            [],
            linestyle=":",
            marker="D",
            markerfacecolor="none",
            color="#444",
            label="paper (Fig. 1)",
        )
    ax.set_xticks(xs, list(sizes))
    ax.set_xlabel("model size (parameters)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_score_distributions(hists: dict, *, xlabel: str, title: str):
    """One step line per model type: the share of its attempts in each score bin."""
    fig = _figure()
    ax = fig.add_subplot()
    drawn = False
    for i, (m, h) in enumerate(hists.items()):
        if not h["n"]:
            continue
        shares = [c / h["n"] for c in h["counts"]]
        ax.stairs(
            shares, h["edges"], label=f"{m} (n={h['n']:,})", color=_color(m, i), linewidth=1.6
        )
        drawn = True
    if not drawn:
        _empty(ax, "no finite scores")
    else:
        ax.legend(fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of the model type's attempts")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return fig


def plot_cell_success(cells: dict, sizes: Sequence[str], threshold: float):
    """Share of successful attempts per model type over size."""
    fig = _figure()
    ax = fig.add_subplot()
    xs = list(range(len(sizes)))
    for i, (m, row) in enumerate(cells.items()):
        pts = [
            (x, row[s]["share"])
            for x, s in zip(xs, sizes, strict=True)
            if row[s]["share"] is not None
        ]
        if pts:
            ax.plot(
                [p[0] for p in pts],
                [100 * p[1] for p in pts],
                marker="o",
                color=_color(m, i),
                label=m,
            )
    ax.set_xticks(xs, list(sizes))
    ax.set_xlabel("model size (parameters)")
    ax.set_ylabel(f"% of attempts rated >= {threshold:g}")
    ax.set_title("Attack success by model type and size")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_rating_vs_harmlessness(
    ratings: Sequence[float],
    scores: Sequence[float],
    by_rating: dict,
    *,
    rho: float | None,
    seed: int = 0,
    max_points: int = 6000,
):
    """Jittered scatter of min-harmlessness against rating (a seeded subsample), with means."""
    np = require("numpy", "report", _FEATURE)
    fig = _figure()
    ax = fig.add_subplot()
    if not ratings:
        _empty(ax, "no attempts with a finite rating and score")
        return fig
    rng = np.random.default_rng(seed)
    r = np.asarray(ratings, dtype=float)
    s = np.asarray(scores, dtype=float)
    if len(r) > max_points:
        keep = rng.choice(len(r), size=max_points, replace=False)
        r, s = r[keep], s[keep]
    ax.scatter(
        r + rng.uniform(-0.25, 0.25, size=len(r)),
        s,
        s=4,
        alpha=0.25,
        color="#4C72B0",
        linewidths=0,
        label=f"attempts ({len(r):,} shown)",
    )
    keys = list(by_rating)
    ax.plot(
        [float(k) for k in keys],
        [by_rating[k]["mean"] for k in keys],
        marker="o",
        color="#C44E52",
        label="mean per rating",
    )
    ax.set_xlabel("red-teamer's success rating")
    ax.set_ylabel("min harmlessness score (lower = more harmful)")
    title = "Rating vs min-harmlessness"
    if rho is not None:
        title += f" (Spearman rho = {rho:.3f})"
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_member_bars(counts: Sequence[int]):
    """Attempts per red-team member, most active first."""
    fig = _figure()
    ax = fig.add_subplot()
    ax.bar(range(len(counts)), counts, width=1.0, color="#4C72B0")
    ax.set_xlabel("red-team members, most active first")
    ax.set_ylabel("attempts")
    ax.set_title(f"Attempts per member ({len(counts):,} members)")
    ax.grid(alpha=0.3, axis="y")
    return fig


def plot_lorenz(points: Sequence[Sequence[float]], top: dict, fraction: float):
    """Lorenz curve of attempts over members, with the top-``fraction`` share marked."""
    fig = _figure(5.2, 4.6)
    ax = fig.add_subplot()
    ax.plot([p[0] for p in points], [p[1] for p in points], color="#4C72B0", label="Lorenz curve")
    ax.plot([0, 1], [0, 1], linestyle="--", color="#999", label="equal effort")
    if top["share"] is not None:
        x = 1 - top["top_members"] / top["members"]
        y = 1 - top["share"]
        ax.plot([x, x], [0, y], color="#C44E52", linewidth=1)
        ax.annotate(
            f"top {fraction:.0%} of members:\n{top['share']:.1%} of attempts",
            xy=(x, y),
            xytext=(0.05, 0.75),
            textcoords="axes fraction",
            arrowprops={"arrowstyle": "->", "color": "#C44E52"},
            fontsize=9,
        )
    ax.set_xlabel("share of members (least active first)")
    ax.set_ylabel("share of attempts")
    ax.set_title("Concentration of attempts")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def plot_member_success(rows: Sequence[dict], threshold: float):
    """Each member's success share against their number of attempts (Upwork vs MTurk)."""
    fig = _figure()
    ax = fig.add_subplot()
    for label, flag, color in (
        ("MTurk", False, "#4C72B0"),
        ("Upwork", True, "#DD8452"),
        ("both", None, "#8C8C8C"),
    ):
        pts = [r for r in rows if r["upworker"] is flag]
        if pts:
            ax.scatter(
                [r["attempts"] for r in pts],
                [100 * r["share"] for r in pts],
                s=14,
                alpha=0.6,
                color=color,
                label=f"{label} ({len(pts)})",
            )
    if rows:
        ax.set_xscale("log")
        ax.legend(fontsize=8)
    else:
        _empty(ax, "no members")
    ax.set_xlabel("attempts by the member (log scale)")
    ax.set_ylabel(f"% of the member's attempts rated >= {threshold:g}")
    ax.set_title("Per-member success")
    ax.grid(alpha=0.3)
    return fig


def plot_marginals(rating_counts: dict, harm_hist: dict, task_hist: dict):
    """Three panels: ratings, min-harmlessness and task-description scores (Fig. 7)."""
    fig = _figure(10.5, 3.6)
    axes = fig.subplots(1, 3)
    keys = list(rating_counts)
    axes[0].bar(keys, [rating_counts[k] for k in keys], color="#4C72B0")
    axes[0].set_xlabel("rating")
    axes[0].set_ylabel("attempts")
    axes[0].set_title("Success rating")
    for ax, h, label in (
        (axes[1], harm_hist, "min harmlessness (transcript)"),
        (axes[2], task_hist, "task description harmlessness"),
    ):
        if h["n"]:
            ax.stairs(h["counts"], h["edges"], fill=True, color="#55A868", alpha=0.8)
        else:
            _empty(ax, "no finite scores")
        ax.set_xlabel(label)
        ax.set_title(label.capitalize().split(" (")[0])
    for ax in axes:
        ax.grid(alpha=0.3, axis="y")
    return fig


def plot_tags(by_model_type: dict, *, max_tags: int = 12):
    """Per model type, horizontal bars of each tag's total and successful counts (Fig. 9)."""
    n = max(1, len(by_model_type))
    cols = min(2, n)
    rows = (n + cols - 1) // cols
    fig = _figure(10.5, 0.4 + 3.0 * rows)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    if not by_model_type:
        _empty(axes[0], "no tagged attempts")
    for ax, (m, entry) in zip(axes, by_model_type.items(), strict=False):
        tags = list(entry["tags"])[:max_tags][::-1]
        y = list(range(len(tags)))
        ax.barh(
            [v + 0.2 for v in y],
            [entry["tags"][t]["total"] for t in tags],
            height=0.4,
            color="#8C8C8C",
            label="total",
        )
        ax.barh(
            [v - 0.2 for v in y],
            [entry["tags"][t]["successful"] for t in tags],
            height=0.4,
            color="#C44E52",
            label="successful",
        )
        ax.set_yticks(y, [t if len(t) <= 28 else t[:26] + "..." for t in tags], fontsize=7)
        ax.set_title(f"{m} ({entry['tagged']} tagged)", fontsize=9)
        ax.grid(alpha=0.3, axis="x")
        ax.legend(fontsize=7)
    if by_model_type:
        for ax in axes[len(by_model_type) :]:
            ax.set_visible(False)
    return fig


def plot_silhouette(scores: dict, chosen: int | None):
    """Mean silhouette for each candidate number of clusters; the chosen one highlighted."""
    fig = _figure(5.2, 3.6)
    ax = fig.add_subplot()
    if scores:
        ks = [int(k) for k in scores]
        ax.plot(ks, list(scores.values()), marker="o", color="#4C72B0")
        if chosen is not None:
            ax.plot(
                [chosen],
                [scores[str(chosen)]],
                marker="o",
                markersize=12,
                markerfacecolor="none",
                color="#C44E52",
                label=f"chosen k = {chosen}",
            )
            ax.legend(fontsize=8)
        ax.set_xticks(ks)
    else:
        _empty(ax, "not clustered")
    ax.set_xlabel("k (clusters)")
    ax.set_ylabel("mean silhouette (cosine)")
    ax.set_title("Choosing k")
    ax.grid(alpha=0.3)
    return fig


def plot_themes(summary: Sequence[dict], top_terms: Sequence[Sequence[str]]):
    """Cluster sizes (bars) labelled by top terms, with each cluster's success share."""
    fig = _figure(8.0, 0.8 + 0.45 * max(1, len(summary)))
    ax = fig.add_subplot()
    if not summary:
        _empty(ax, "not clustered")
        return fig
    rows = list(summary)[::-1]
    y = list(range(len(rows)))
    ax.barh(y, [r["size"] for r in rows], color="#4C72B0")
    labels = [f"#{r['cluster']}: " + ", ".join(top_terms[r["cluster"]][:3]) for r in rows]
    ax.set_yticks(y, labels, fontsize=8)
    for yy, r in zip(y, rows, strict=True):
        ax.text(r["size"], yy, f" {r['success_share']:.0%} successful", va="center", fontsize=7)
    ax.set_xlabel("attempts in the cluster")
    ax.set_title("Attack themes (task-description clusters)")
    ax.margins(x=0.25)
    ax.grid(alpha=0.3, axis="x")
    return fig


def plot_turns(by_turns: dict, threshold: float):
    """Attempts per number of human turns (bars) and the success share (line)."""
    fig = _figure()
    ax = fig.add_subplot()
    keys = list(by_turns)
    if not keys:
        _empty(ax, "no attempts")
        return fig
    x = [int(k) for k in keys]
    ax.bar(x, [by_turns[k]["attempts"] for k in keys], color="#8C8C8C", label="attempts")
    ax.set_xlabel("human turns in the attempt")
    ax.set_ylabel("attempts")
    ax2 = ax.twinx()
    ax2.plot(
        x,
        [100 * by_turns[k]["share"] for k in keys],
        marker="o",
        color="#C44E52",
        label="% successful",
    )
    ax2.set_ylabel(f"% rated >= {threshold:g}")
    ax2.set_ylim(0, 100)
    ax.set_title("Turns vs success")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper right")
    ax.grid(alpha=0.3, axis="y")
    return fig
