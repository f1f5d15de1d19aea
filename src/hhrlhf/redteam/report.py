"""The red-team report: the paper's analyses (and more) as ``report.json`` + ``report.html``.

:func:`compute_report` turns attempts into one JSON-able dict holding every number the page
shows, section by section; each section says how many records it used and what it dropped and
why. :func:`draw_figures` draws the plots from those numbers, :func:`render_html`
(:mod:`hhrlhf.redteam.render`, Jinja2 templates) writes a self-contained page (plots inlined as base64
PNG data URIs, no network needed to view it), and
:func:`write_report` does all three into a directory, one PNG per plot beside the page.

Where the paper published a number (Table 1 counts, Fig. 1 mean min-harmlessness, the 33.8%
success share, "about 80% of attacks from about 15% of members"), the report shows it in a
"paper" column next to the computed one, so a run on the real file can be checked at a glance.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..dataset import iter_attempts, resolve_source
from ..layout import DataSource
from ..reader import Lenient
from ..records import RedTeamAttempt
from . import analyses as an
from . import stats as st
from .analyses import (
    PAPER_FIG1_HARMLESSNESS,
    PAPER_SUCCESS_SHARE,
    PAPER_TABLE1,
    PAPER_TOP_MEMBERS,
)
from .render import render_html
from .sections import PLOTS, SECTIONS

__all__ = [
    "PAPER_TABLE1",
    "PAPER_FIG1_HARMLESSNESS",
    "PAPER_SUCCESS_SHARE",
    "PAPER_TOP_MEMBERS",
    "PLOTS",
    "SECTIONS",
    "compute_report",
    "draw_figures",
    "render_html",
    "write_report",
    "generate_report",
    "read_report",
]

_TOP_FRACTION = PAPER_TOP_MEMBERS["fraction_of_members"]


def _score(a: RedTeamAttempt) -> float | None:
    return a.min_harmlessness_score_transcript


def compute_report(
    attempts: Sequence[RedTeamAttempt],
    *,
    threshold: float = st.DEFAULT_THRESHOLD,
    seed: int = 0,
    resamples: int = 1000,
    source: str = "",
    skipped_rows: Sequence[object] = (),
    k_range: Sequence[int] = range(2, 11),
) -> dict[str, Any]:
    """Every number of the report, by section (see :data:`SECTIONS`), as plain JSON values.

    Attempts with an out-of-range value (:func:`hhrlhf.redteam.stats.value_problem`: a rating
    outside 0-4, a non-finite score) are left out of every section and counted under the
    report's ``dropped``, by reason; ``dropped_rows`` lists each one. Each section is computed
    by its function in :mod:`hhrlhf.redteam.analyses`.
    """
    read = list(attempts)
    kept, out_of_range = st.drop_out_of_range(read)
    sections = {
        "table1": an.table1(kept),
        "fig1": an.fig1(kept, seed=seed, resamples=resamples),
        "success": an.success(kept, threshold),
        "members": an.members(kept, threshold),
        "marginals": an.marginals(kept),
        "tags": an.tags(kept, threshold),
        "themes": an.themes(kept, threshold, seed=seed, k_range=k_range),
        "turns": an.turns(kept, threshold),
    }
    return {
        "title": "HH-RLHF red-team attempts: analysis report",
        "generator": f"hhrlhf {__version__}",
        "source": source,
        "records": len(kept),
        "records_read": len(read),
        "skipped_rows": [str(s) for s in skipped_rows],
        "dropped": dict(Counter(reason for _, reason, _ in out_of_range)),
        "dropped_rows": [
            {"index": a.index, "reason": reason, "detail": detail}
            for a, reason, detail in out_of_range
        ],
        "success_threshold": threshold,
        "seed": seed,
        "sections": sections,
        "plots": {name: s for name, (s, _) in PLOTS.items()},
    }


def draw_figures(report: dict[str, Any], attempts: Sequence[RedTeamAttempt]) -> dict[str, Any]:
    """Every plot in :data:`PLOTS` as a matplotlib Figure, drawn from ``report``'s numbers.

    ``attempts`` is needed only for the rating-vs-score scatter (the points themselves).
    """
    from . import plots as pl

    s = report["sections"]
    sizes = s["table1"]["sizes"]
    thr = report["success_threshold"]
    scored = [(a.rating, _score(a)) for a in attempts]
    pairs = [(r, h) for r, h in scored if math.isfinite(r) and h is not None and math.isfinite(h)]
    themes = s["themes"]
    return {
        "fig1_rating.png": pl.plot_cell_means(
            s["fig1"]["rating"],
            sizes,
            ylabel="mean success rating (0-4)",
            title="Mean success rating (higher = attacks worked)",
        ),
        "fig1_min_harmlessness.png": pl.plot_cell_means(
            s["fig1"]["min_harmlessness"],
            sizes,
            ylabel="mean min harmlessness score",
            title="Mean min-harmlessness (lower = more harmful)",
            paper=PAPER_FIG1_HARMLESSNESS,
        ),
        "min_harmlessness_by_model_type.png": pl.plot_score_distributions(
            s["fig1"]["distribution"],
            xlabel="min harmlessness score",
            title="Min-harmlessness by model type",
        ),
        "success_by_cell.png": pl.plot_cell_success(s["success"]["cells"], sizes, thr),
        "rating_vs_harmlessness.png": pl.plot_rating_vs_harmlessness(
            [p[0] for p in pairs],
            [p[1] for p in pairs],
            s["success"]["rating_vs_harmlessness"]["by_rating"],
            rho=s["success"]["rating_vs_harmlessness"]["spearman"],
            seed=report["seed"],
        ),
        "members_bar.png": pl.plot_member_bars(s["members"]["counts"]),
        "members_lorenz.png": pl.plot_lorenz(
            s["members"]["lorenz"], s["members"]["top_share"], _TOP_FRACTION
        ),
        "members_success.png": pl.plot_member_success(s["members"]["per_member"], thr),
        "marginals.png": pl.plot_marginals(
            s["marginals"]["rating"],
            s["marginals"]["min_harmlessness"],
            s["marginals"]["task_description_harmlessness"],
        ),
        "tags.png": pl.plot_tags(s["tags"]["by_model_type"]),
        "themes_silhouette.png": pl.plot_silhouette(themes["silhouette"], themes["k"]),
        "themes.png": pl.plot_themes(themes["clusters"], themes["top_terms"]),
        "turns.png": pl.plot_turns(s["turns"]["by_turns"], thr),
    }


def write_report(
    attempts: Sequence[RedTeamAttempt],
    out_dir: str | os.PathLike[str],
    **options: Any,
) -> dict[str, Path]:
    """Compute, draw and write ``report.json``, ``report.html`` and one PNG per plot.

    ``options`` go to :func:`compute_report`. Returns ``{"json", "html", <plot name>: path}``.
    """
    from ..progress import progress
    from .plots import figure_png

    attempts = list(attempts)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with progress(total=2 + len(PLOTS), desc="redteam report", unit="steps") as bar:
        report = compute_report(attempts, **options)
        bar.update(1)
        figures = draw_figures(report, st.drop_out_of_range(attempts)[0])
        bar.update(1)
        pngs = {}
        for name, fig in figures.items():
            pngs[name] = figure_png(fig)
            bar.update(1)
    paths: dict[str, Path] = {}
    for name, data in pngs.items():
        (out / name).write_bytes(data)
        paths[name] = out / name
    paths["json"] = out / "report.json"
    paths["json"].write_text(
        json.dumps(report, indent=1, allow_nan=False, ensure_ascii=False), encoding="utf-8"
    )
    paths["html"] = out / "report.html"
    paths["html"].write_text(render_html(report, pngs), encoding="utf-8")
    return paths


def read_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The numbers of a written report: ``report.json`` itself, or the folder that holds it."""
    p = Path(path)
    if p.is_dir():
        p = p / "report.json"
    report: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    return report


def generate_report(
    data: str | os.PathLike[str] | DataSource | None,
    out_dir: str | os.PathLike[str],
    *,
    lenient: bool | Lenient | None = False,
    skipped: list[Any] | None = None,
    **options: Any,
) -> dict[str, Path]:
    """Read the attempts from ``data`` (a path, "sample" or the cache) and write the report."""
    policy = Lenient.of(lenient, skipped)
    src = resolve_source(data)
    attempts = list(iter_attempts(data=src, lenient=policy))
    rows = policy.skipped if policy is not None else []
    return write_report(attempts, out_dir, source=src.label, skipped_rows=rows, **options)
