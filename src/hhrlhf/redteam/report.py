"""The red-team report: the paper's analyses (and more) as ``report.json`` + ``report.html``.

:func:`compute_report` turns attempts into one JSON-able dict holding every number the page
shows, section by section; each section says how many records it used and what it dropped and
why. :func:`draw_figures` draws the plots from those numbers, :func:`render_html` writes a
self-contained page (plots inlined as base64 PNG data URIs, no network needed to view it), and
:func:`write_report` does all three into a directory, one PNG per plot beside the page.

Where the paper published a number (Table 1 counts, Fig. 1 mean min-harmlessness, the 33.8%
success share, "about 80% of attacks from about 15% of members"), the report shows it in a
"paper" column next to the computed one, so a run on the real file can be checked at a glance.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from .. import __version__
from ..dataset import iter_attempts, resolve_source
from ..reader import Lenient
from ..records import RedTeamAttempt
from . import stats as st
from .themes import cluster_texts, theme_inputs, theme_summary, theme_tag_crosstab

__all__ = [
    "PAPER_TABLE1",
    "PAPER_FIG1_HARMLESSNESS",
    "PAPER_SUCCESS_SHARE",
    "PAPER_TOP_MEMBERS",
    "SECTIONS",
    "compute_report",
    "draw_figures",
    "render_html",
    "write_report",
    "generate_report",
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

#: Section id -> title, in page order.
SECTIONS = {
    "table1": "Table 1: attempts per model type and size",
    "fig1": "Fig. 1: mean rating and min-harmlessness by model type and size",
    "success": "Attack success and rating vs min-harmlessness (Fig. 11)",
    "members": "Fig. 5: red-team members",
    "marginals": "Fig. 7: marginal distributions",
    "tags": "Fig. 9: tags, total vs successful",
    "themes": "Attack themes: clusters of task descriptions",
    "turns": "Turns: human turns per attempt vs success",
}

#: Plot file name -> (section, caption).
PLOTS = {
    "fig1_rating.png": (
        "fig1",
        "Mean success rating per model type and size, 95% bootstrap intervals",
    ),
    "fig1_min_harmlessness.png": (
        "fig1",
        "Mean min-harmlessness per model type and size, 95% "
        "bootstrap intervals; hollow markers: the paper",
    ),
    "min_harmlessness_by_model_type.png": (
        "fig1",
        "Distribution of min-harmlessness per model type",
    ),
    "success_by_cell.png": ("success", "Share of successful attempts per model type and size"),
    "rating_vs_harmlessness.png": ("success", "Rating vs min-harmlessness (jittered)"),
    "members_bar.png": ("members", "Attempts per member, most active first"),
    "members_lorenz.png": ("members", "Lorenz curve of attempts over members"),
    "members_success.png": ("members", "Per-member success share vs attempts"),
    "marginals.png": ("marginals", "Ratings, min-harmlessness and task-description scores"),
    "tags.png": ("tags", "Tag counts per model type, total vs successful"),
    "themes_silhouette.png": ("themes", "Silhouette per candidate k"),
    "themes.png": ("themes", "Cluster sizes, top terms and success"),
    "turns.png": ("turns", "Attempts and success share by number of human turns"),
}

_TOP_FRACTION = PAPER_TOP_MEMBERS["fraction_of_members"]


def _section(sid: str, used: int, dropped: dict[str, int], **body) -> dict:
    return {
        "title": SECTIONS[sid],
        "records_used": used,
        "dropped": {k: v for k, v in dropped.items() if v},
        **body,
        "plots": [name for name, (s, _) in PLOTS.items() if s == sid],
    }


def _score(a: RedTeamAttempt) -> float:
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
            "non-finite min_harmlessness_score_transcript (score means only)": score_drop,
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
        {"non-finite rating or score (correlation only)": rvh["dropped"]},
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
            "non-finite min_harmlessness_score_transcript": score_drop,
            "non-finite task_description_harmlessness_score": task_drop,
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
    pairs = [
        (a.rating, _score(a))
        for a in attempts
        if math.isfinite(a.rating) and math.isfinite(_score(a))
    ]
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


# --------------------------------------------------------------------------- HTML

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;
background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:1.5rem 2rem 4rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.5rem;border-bottom:2px solid #ddd;
padding-bottom:.3rem}h3{font-size:1.05rem;margin-top:1.4rem}
.meta{color:#555;font-size:.9rem}.used{background:#eef3f8;border-left:4px solid #4C72B0;
padding:.4rem .8rem;font-size:.9rem}
table{border-collapse:collapse;margin:.6rem 0 1rem;font-size:.84rem;background:#fff}
th,td{border:1px solid #ddd;padding:.25rem .45rem;text-align:right}
th{background:#f0f0f0}td.l,th.l{text-align:left}.paper{color:#7a4b00;background:#fff8e8}
figure{margin:1rem 0;background:#fff;border:1px solid #e4e4e4;padding:.5rem;display:inline-block;
max-width:100%}figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.85rem;color:#555;margin-top:.3rem}
nav ol{columns:2;column-gap:3rem;font-size:.92rem}.scroll{overflow-x:auto}
td{white-space:nowrap}code{background:#f0f0f0;padding:0 .2rem}
"""


def _fmt(v, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return html.escape(str(v))


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.1f}%"


def _table(
    head: Sequence[str], rows: Sequence[Sequence], *, left: int = 1, paper_cols: Sequence[int] = ()
) -> str:
    def cell(tag, i, v):
        cls = []
        if i < left:
            cls.append("l")
        if i in paper_cols:
            cls.append("paper")
        c = f' class="{" ".join(cls)}"' if cls else ""
        return f"<{tag}{c}>{v}</{tag}>"

    out = ["<div class='scroll'><table><thead><tr>"]
    out += [cell("th", i, html.escape(h)) for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join(cell("td", i, v) for i, v in enumerate(r)) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _ci(c: dict) -> str:
    if c["mean"] is None:
        return "–"
    return f"{c['mean']:.3f} [{c['low']:.3f}, {c['high']:.3f}]"


def _used(sec: dict) -> str:
    dropped = sec["dropped"]
    what = (
        "; dropped: " + ", ".join(f"{html.escape(k)}: {v:,}" for k, v in dropped.items())
        if dropped
        else "; nothing dropped"
    )
    extra = f" ({html.escape(sec['skipped'])})" if sec.get("skipped") else ""
    return f'<p class="used">Used {sec["records_used"]:,} records{what}.{extra}</p>'


def _section_body(sid: str, sec: dict, report: dict) -> str:  # noqa: C901 - one branch per section
    s = report["sections"]
    sizes = s["table1"]["sizes"]
    parts: list[str] = []
    if sid == "table1":
        head = ["model type"]
        for z in sizes:
            head += [f"{z} attempts", f"{z} paper", f"{z} members"]
        rows = []
        for m, row in sec["cells"].items():
            r = [html.escape(m)]
            for z in sizes:
                c = row[z]
                r += [_fmt(c["attempts"]), _fmt(c["paper_attempts"]), _fmt(c["members"])]
            rows.append(r)
        paper_cols = [2 + 3 * i for i in range(len(sizes))]
        parts.append(_table(head, rows, paper_cols=paper_cols))
        parts.append(
            f"<p>Total: {sec['totals']['attempts']:,} attempts by "
            f"{sec['totals']['members']:,} members (paper: {sec['paper_total']:,}). "
            "“members” counts the distinct red-team members who attacked the cell.</p>"
        )
    elif sid == "fig1":
        parts.append(f"<p>Intervals: {html.escape(sec['interval'])}.</p>")
        for key, label, paper in (
            ("rating", "Mean success rating", False),
            ("min_harmlessness", "Mean min-harmlessness", True),
        ):
            head = ["model type"]
            for z in sizes:
                head += [f"{z} mean [95% CI]", f"{z} n"] + ([f"{z} paper"] if paper else [])
            rows = []
            for m, row in sec[key].items():
                r = [html.escape(m)]
                for z in sizes:
                    r += [_ci(row[z]), _fmt(row[z]["n"])]
                    if paper:
                        r.append(_fmt(row[z]["paper_mean"], 2))
                rows.append(r)
            parts.append(f"<h3>{label}</h3>")
            parts.append(
                _table(
                    head, rows, paper_cols=[3 + 3 * i for i in range(len(sizes))] if paper else ()
                )
            )
    elif sid == "success":
        o = sec["overall"]
        paper = sec["paper_overall_share"]
        parts.append(
            f"<p>Success = rating ≥ {sec['threshold']:g}: {o['successful']:,} of "
            f"{o['n']:,} attempts, <b>{_pct(o['share'])}</b>"
            + (f' <span class="paper">(paper: {_pct(paper)})</span>' if paper else "")
            + ".</p>"
        )
        head = ["model type"] + [f"{z}" for z in sizes]
        rows = [
            [html.escape(m)]
            + [f"{_pct(row[z]['share'])} ({row[z]['successful']:,}/{row[z]['n']:,})" for z in sizes]
            for m, row in sec["cells"].items()
        ]
        parts.append(_table(head, rows))
        rvh = sec["rating_vs_harmlessness"]
        parts.append("<h3>Rating vs min-harmlessness</h3>")
        parts.append(
            f"<p>Spearman rank correlation over {rvh['n']:,} attempts: "
            f"<b>{_fmt(rvh['spearman'])}</b> (negative: attempts the red-teamer rated "
            "more successful got lower harmlessness scores).</p>"
        )
        parts.append(
            _table(
                ["model type", "Spearman rho"],
                [[html.escape(m), _fmt(v)] for m, v in rvh["by_model_type"].items()],
            )
        )
        parts.append(
            _table(
                ["rating", "attempts", "mean score", "median score"],
                [
                    [html.escape(k), _fmt(v["n"]), _fmt(v["mean"]), _fmt(v["median"])]
                    for k, v in rvh["by_rating"].items()
                ],
            )
        )
    elif sid == "members":
        t, c = sec["top_share"], sec["covering_80"]
        p = sec["paper"]
        parts.append(
            f"<p>{sec['members']:,} members. The most active {_pct(_TOP_FRACTION)} "
            f"({t['top_members']:,} members) made <b>{_pct(t['share'])}</b> of the attempts; "
            f"80% of the attempts came from {c['needed']:,} members "
            f"(<b>{_pct(c['share_of_members'])}</b>). Gini {_fmt(sec['gini'])}. "
            f'<span class="paper">Paper: about {_pct(p["share_of_attempts"])} of attacks from '
            f"about {_pct(p['fraction_of_members'])} of members.</span></p>"
        )
        parts.append("<h3>Upwork vs MTurk</h3>")
        parts.append(
            _table(
                [
                    "pool",
                    "attempts",
                    "members",
                    "successful",
                    "success share",
                    "mean rating",
                    "mean min-harmlessness",
                ],
                [
                    [
                        k,
                        _fmt(v["attempts"]),
                        _fmt(v["members"]),
                        _fmt(v["successful"]),
                        _pct(v["share"]),
                        _fmt(v["mean_rating"]),
                        _fmt(v["mean_min_harmlessness"]),
                    ]
                    for k, v in sec["pools"].items()
                ],
            )
        )
        parts.append("<h3>Most active members</h3>")
        parts.append(
            _table(
                ["member", "upworker", "attempts", "successful", "success share"],
                [
                    [
                        html.escape(str(r["member"])),
                        _fmt(r["upworker"]),
                        _fmt(r["attempts"]),
                        _fmt(r["successful"]),
                        _pct(r["share"]),
                    ]
                    for r in sec["per_member"][:15]
                ],
            )
        )
        parts.append(
            f"<p>All {len(sec['per_member']):,} members are in "
            "<code>report.json</code> (sections.members.per_member).</p>"
        )
    elif sid == "marginals":
        parts.append(
            _table(
                ["rating"] + list(sec["rating"]),
                [["attempts"] + [_fmt(v) for v in sec["rating"].values()]],
            )
        )
        mm = sec["means"]
        parts.append(
            f"<p>Means: rating {_fmt(mm['rating'])}, min-harmlessness "
            f"{_fmt(mm['min_harmlessness'])}, task-description harmlessness "
            f"{_fmt(mm['task_description_harmlessness'])}. Histograms (40 bins) are in "
            "<code>report.json</code>.</p>"
        )
    elif sid == "tags":
        models = list(sec["by_model_type"])
        head = ["tag", "total", "successful", "share"] + [f"{m} total/succ." for m in models]
        rows = []
        for tag, v in sec["overall"].items():
            r = [
                html.escape(tag),
                _fmt(v["total"]),
                _fmt(v["successful"]),
                _pct(v["successful"] / v["total"]),
            ]
            for m in models:
                e = sec["by_model_type"][m]["tags"].get(tag)
                r.append(f"{e['total']:,}/{e['successful']:,}" if e else "–")
            rows.append(r)
        parts.append(
            f"<p>{sec['tagged']:,} tagged attempts; successful = rating ≥ {sec['threshold']:g}.</p>"
        )
        parts.append(_table(head, rows) if rows else "<p>No tagged attempts.</p>")
    elif sid == "themes":
        if sec.get("skipped"):
            parts.append(f"<p>Not clustered: {html.escape(sec['skipped'])}</p>")
        else:
            parts.append(
                f"<p>TF-IDF (English stop words removed, {sec['vocabulary']:,} terms) "
                f"+ k-means, seed {sec['seed']}. k = <b>{sec['k']}</b>, chosen by "
                f"{html.escape(sec['criterion'])}; candidates "
                f"{sec['k_range'][0]}–{sec['k_range'][-1]}.</p>"
            )
            if sec["k_at_edge"]:
                parts.append(
                    "<p>The largest candidate won: the silhouette was still rising, "
                    "so finer themes may separate better (see <code>--max-k</code>).</p>"
                )
            parts.append(
                _table(
                    ["k"] + list(sec["silhouette"]),
                    [["silhouette"] + [_fmt(v) for v in sec["silhouette"].values()]],
                )
            )
            parts.append(
                _table(
                    ["cluster", "top terms", "size", "success share", "mean min-harmlessness"],
                    [
                        [
                            str(c["cluster"]),
                            html.escape(", ".join(c["top_terms"])),
                            _fmt(c["size"]),
                            _pct(c["success_share"]),
                            _fmt(c["mean_min_harmlessness"]),
                        ]
                        for c in sec["clusters"]
                    ],
                    left=2,
                )
            )
            ct = sec["crosstab"]
            parts.append(f"<h3>Clusters x tags ({ct['tagged']:,} tagged attempts)</h3>")
            if ct["tags"]:
                parts.append(
                    _table(
                        ["cluster"] + ct["tags"],
                        [
                            [k] + [_fmt(row[t]) for t in ct["tags"]]
                            for k, row in ct["table"].items()
                        ],
                    )
                )
            else:
                parts.append("<p>No tagged attempts to compare with.</p>")
    elif sid == "turns":
        rho = sec["spearman_turns_rating"]
        parts.append(f"<p>Spearman correlation of human turns with rating: {_fmt(rho)}.</p>")
        parts.append(
            _table(
                ["human turns", "attempts", "successful", "share"],
                [
                    [k, _fmt(v["attempts"]), _fmt(v["successful"]), _pct(v["share"])]
                    for k, v in sec["by_turns"].items()
                ],
            )
        )
    return "".join(parts)


def render_html(report: dict, pngs: dict[str, bytes]) -> str:
    """A self-contained page: every section, its tables, and its plots as data URIs."""
    title = html.escape(report["title"])
    out = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{title}</title><style>{_CSS}</style></head><body><main>",
        f"<h1>{title}</h1>",
        f"<p class='meta'>Source: <code>{html.escape(report['source'])}</code> · "
        f"{report['records']:,} attempts · success = rating ≥ {report['success_threshold']:g} · "
        f"seed {report['seed']} · {html.escape(report['generator'])}. Every number on this page "
        "is in <code>report.json</code>.</p>",
    ]
    if report.get("dropped"):
        out.append(
            f"<p class='used'>{len(report['dropped_rows']):,} attempt(s) left out of every "
            "section for an out-of-range value; dropped: "
            + ", ".join(f"{html.escape(k)}: {v:,}" for k, v in report["dropped"].items())
            + " (each is listed in report.json).</p>"
        )
    if report["skipped_rows"]:
        out.append(
            f"<p class='used'>{len(report['skipped_rows']):,} row(s) of the file were "
            "skipped while reading (lenient mode); they are listed in report.json.</p>"
        )
    out.append(
        "<nav><ol>"
        + "".join(
            f"<li><a href='#{sid}'>{html.escape(SECTIONS[sid])}</a></li>"
            for sid in report["sections"]
        )
        + "</ol></nav>"
    )
    for sid, sec in report["sections"].items():
        out.append(
            f"<section id='{sid}' class='report-section'><h2>{html.escape(sec['title'])}</h2>"
        )
        out.append(_used(sec))
        out.append(_section_body(sid, sec, report))
        for name in sec["plots"]:
            if name not in pngs:
                continue
            data = base64.b64encode(pngs[name]).decode("ascii")
            out.append(
                f"<figure><img src='data:image/png;base64,{data}' "
                f"alt='{html.escape(PLOTS[name][1])}' data-plot='{name}'>"
                f"<figcaption>{html.escape(PLOTS[name][1])} "
                f"(<code>{name}</code>)</figcaption></figure>"
            )
        out.append("</section>")
    out.append("</main></body></html>")
    return "\n".join(out)


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


def generate_report(
    data: str | os.PathLike | None,
    out_dir: str | os.PathLike,
    *,
    lenient: bool | Lenient = False,
    skipped: list | None = None,
    **options,
) -> dict[str, Path]:
    """Read the attempts from ``data`` (a path, "sample" or the cache) and write the report."""
    policy = Lenient.of(lenient, skipped)
    src = resolve_source(data)
    attempts = list(iter_attempts(data=src, lenient=policy))
    rows = policy.skipped if policy is not None else []
    return write_report(attempts, out_dir, source=src.label, skipped_rows=rows, **options)
