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

from .. import __version__
from ..dataset import iter_attempts, resolve_source
from ..layout import DataSource
from ..reader import Lenient
from ..records import RedTeamAttempt
from . import stats as st
from .render import render_html
from .sections import PLOTS, SECTIONS
from .themes import cluster_texts, theme_inputs, theme_summary, theme_tag_crosstab

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

#: Attempts per model type x size, the paper's Table 1.
PAPER_TABLE1 = {
    "plain lm": {"2.7B": 1151, "13B": 2587, "52B": 1414},
    "context distillation": {"2.7B": 2044, "13B": 2174, "52B": 17739},
    "rejection sampling": {"2.7B": 1445, "13B": 1263, "52B": 1273},
    "rlhf": {"2.7B": 2498, "13B": 2292, "52B": 3081},
}
#: Mean min_harmlessness_score_transcript per cell, as read from the paper's Fig. 1 (middle).
PAPER_FIG1_HARMLESSNESS = {
    "plain lm": {"2.7B": -0.75, "13B": -0.77, "52B": -0.63},
    "context distillation": {"2.7B": -0.65, "13B": -0.73, "52B": -0.83},
    "rejection sampling": {"2.7B": 1.49, "13B": 1.58, "52B": 1.72},
    "rlhf": {"2.7B": 0.52, "13B": 1.43, "52B": 1.70},
}
#: Share of the released attempts with rating >= 3.
PAPER_SUCCESS_SHARE = 0.338
#: "About 80% of attacks from about 15% of members" (Fig. 5).
PAPER_TOP_MEMBERS = {"fraction_of_members": 0.15, "share_of_attempts": 0.80}

_TOP_FRACTION = PAPER_TOP_MEMBERS["fraction_of_members"]


def _section(sid: str, used: int, dropped: dict[str, int], **body) -> dict:
    return {
        "title": SECTIONS[sid],
        "records_used": used,
        "dropped": {k: v for k, v in dropped.items() if v},
        **body,
        "plots": [name for name, (s, _) in PLOTS.items() if s == sid],
    }


def _score(a: RedTeamAttempt) -> float | None:
    return a.min_harmlessness_score_transcript


def compute_report(
    attempts: Sequence[RedTeamAttempt],
    *,
    threshold: float = st.DEFAULT_THRESHOLD,
    seed: int = 0,
    resamples: int = 1000,
    source: str = "",
    skipped_rows: Sequence = (),
    k_range: Sequence[int] = range(2, 11),
) -> dict:
    """Every number of the report, by section (see :data:`SECTIONS`), as plain JSON values.

    Attempts with an out-of-range value (:func:`hhrlhf.redteam.stats.value_problem`: a rating
    outside 0-4, a non-finite score) are left out of every section and counted under the
    report's ``dropped``, by reason; ``dropped_rows`` lists each one.
    """
    read = list(attempts)
    attempts, out_of_range = st.drop_out_of_range(read)
    n = len(attempts)
    model_types = st.model_types(attempts)
    sizes = st.sizes(attempts)
    ratings_f, rating_drop = st.finite(a.rating for a in attempts)
    scores_f, score_drop = st.finite(_score(a) for a in attempts)
    tasks_f, task_drop = st.finite(a.task_description_harmlessness_score for a in attempts)
    sections: dict[str, dict] = {}

    # Table 1 -------------------------------------------------------------------------
    counts = st.cell_counts(attempts)
    for m, row in counts.items():
        for s, cell in row.items():
            cell["paper_attempts"] = PAPER_TABLE1.get(m, {}).get(s)
    sections["table1"] = _section(
        "table1",
        n,
        {},
        model_types=model_types,
        sizes=sizes,
        cells=counts,
        totals={"attempts": n, "members": len({a.red_team_member_id for a in attempts})},
        paper_total=sum(sum(r.values()) for r in PAPER_TABLE1.values()),
    )

    # Fig. 1 --------------------------------------------------------------------------
    rating_means = st.cell_means(attempts, lambda a: a.rating, seed=seed, resamples=resamples)
    harm_means = st.cell_means(attempts, _score, seed=seed, resamples=resamples)
    for m, row in harm_means.items():
        for s, cell in row.items():
            cell["paper_mean"] = PAPER_FIG1_HARMLESSNESS.get(m, {}).get(s)
    lo_hi = (min(scores_f), max(scores_f)) if scores_f else None
    distribution = {
        m: st.histogram(
            st.finite(_score(a) for a in attempts if a.model_type == m)[0], bins=40, range_=lo_hi
        )
        for m in model_types
    }
    sections["fig1"] = _section(
        "fig1",
        n - max(rating_drop, score_drop),
        {
            "non-finite rating (rating means only)": rating_drop,
            "null or non-finite min_harmlessness_score_transcript (score means only)": score_drop,
        },
        interval=f"percentile bootstrap, {resamples} resamples, 95%, seed {seed}",
        rating=rating_means,
        min_harmlessness=harm_means,
        distribution=distribution,
    )

    # Success -------------------------------------------------------------------------
    rvh = st.rating_vs_harmlessness(attempts)
    rvh["by_model_type"] = {
        m: st.rating_vs_harmlessness([a for a in attempts if a.model_type == m])["spearman"]
        for m in model_types
    }
    overall = st.success_share((a.rating for a in attempts), threshold)
    sections["success"] = _section(
        "success",
        n,
        {"non-finite rating, null or non-finite score (correlation only)": rvh["dropped"]},
        threshold=threshold,
        overall=overall,
        paper_overall_share=PAPER_SUCCESS_SHARE if threshold == 3 else None,
        cells=st.cell_success(attempts, threshold),
        rating_vs_harmlessness=rvh,
    )

    # Members -------------------------------------------------------------------------
    per_member = st.member_counts(attempts)
    member_counts = list(per_member.values())
    sections["members"] = _section(
        "members",
        n,
        {},
        members=len(member_counts),
        counts=member_counts,
        top_share=st.top_share(member_counts, _TOP_FRACTION),
        covering_80=st.smallest_share_covering(member_counts, 0.8),
        paper=PAPER_TOP_MEMBERS,
        gini=st.gini(member_counts),
        lorenz=[list(p) for p in st.lorenz_curve(member_counts)],
        per_member=st.member_success(attempts, threshold),
        pools=st.worker_pools(attempts, threshold),
    )

    # Marginals -----------------------------------------------------------------------
    sections["marginals"] = _section(
        "marginals",
        n,
        {
            "non-finite rating": rating_drop,
            "null or non-finite min_harmlessness_score_transcript": score_drop,
            "null or non-finite task_description_harmlessness_score": task_drop,
        },
        rating=st.value_counts(ratings_f),
        min_harmlessness=st.histogram(scores_f, bins=40),
        task_description_harmlessness=st.histogram(tasks_f, bins=40),
        means={
            "rating": st.mean(ratings_f),
            "min_harmlessness": st.mean(scores_f),
            "task_description_harmlessness": st.mean(tasks_f),
        },
    )

    # Tags ----------------------------------------------------------------------------
    tags = st.tag_counts(attempts, threshold)
    sections["tags"] = _section(
        "tags",
        tags["tagged"],
        {"tags null": tags["untagged"], "tags empty list": tags["empty"]},
        threshold=threshold,
        **tags,
    )

    # Themes --------------------------------------------------------------------------
    kept, blank = theme_inputs(attempts)
    themes: dict = {"k_range": list(k_range), "seed": seed}
    try:
        clusters = cluster_texts([a.task_description for a in kept], k_range=k_range, seed=seed)
    except ValueError as exc:
        themes.update(
            skipped=str(exc),
            clusters=[],
            silhouette={},
            k=None,
            top_terms=[],
            crosstab={"tagged": 0, "tags": [], "table": {}},
        )
        used = 0
    else:
        labels = clusters.pop("labels")
        summary = theme_summary(kept, labels, threshold)
        for row in summary:
            row["top_terms"] = clusters["top_terms"][row["cluster"]]
        themes.update(clusters, clusters=summary, crosstab=theme_tag_crosstab(kept, labels))
        used = len(kept)
    sections["themes"] = _section("themes", used, {"blank task description": blank}, **themes)

    # Turns ---------------------------------------------------------------------------
    sections["turns"] = _section(
        "turns", n, {}, threshold=threshold, **st.turns_vs_success(attempts, threshold)
    )

    return {
        "title": "HH-RLHF red-team attempts: analysis report",
        "generator": f"hhrlhf {__version__}",
        "source": source,
        "records": n,
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


def draw_figures(report: dict, attempts: Sequence[RedTeamAttempt]) -> dict:
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
    out_dir: str | os.PathLike,
    **options,
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


def read_report(path: str | os.PathLike) -> dict:
    """The numbers of a written report: ``report.json`` itself, or the folder that holds it."""
    p = Path(path)
    if p.is_dir():
        p = p / "report.json"
    return json.loads(p.read_text(encoding="utf-8"))


def generate_report(
    data: str | os.PathLike | DataSource | None,
    out_dir: str | os.PathLike,
    *,
    lenient: bool | Lenient | None = False,
    skipped: list | None = None,
    **options,
) -> dict[str, Path]:
    """Read the attempts from ``data`` (a path, "sample" or the cache) and write the report."""
    policy = Lenient.of(lenient, skipped)
    src = resolve_source(data)
    attempts = list(iter_attempts(data=src, lenient=policy))
    rows = policy.skipped if policy is not None else []
    return write_report(attempts, out_dir, source=src.label, skipped_rows=rows, **options)
