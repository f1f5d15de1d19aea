"""The numbers of each section of the red-team report, one function a section.

Each takes the attempts that can enter the statistics (out-of-range ones already dropped by
:func:`hhrlhf.redteam.stats.drop_out_of_range`) and returns the section as plain JSON values:
its title, how many records it used, what it dropped and why, its numbers, and its plots.
Where the paper published a number, the section holds it beside the computed one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..records import RedTeamAttempt
from . import stats as st
from .sections import PLOTS, SECTIONS
from .themes import cluster_texts, theme_inputs, theme_summary, theme_tag_crosstab

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

Section = dict[str, Any]


def section(sid: str, used: int, dropped: dict[str, int], **body: Any) -> Section:
    """Section ``sid``: its title, the records it used, what it dropped (non-zero counts),
    ``body`` and the names of its plots."""
    return {
        "title": SECTIONS[sid],
        "records_used": used,
        "dropped": {k: v for k, v in dropped.items() if v},
        **body,
        "plots": [name for name, (s, _) in PLOTS.items() if s == sid],
    }


def _score(a: RedTeamAttempt) -> float | None:
    return a.min_harmlessness_score_transcript


def table1(attempts: Sequence[RedTeamAttempt]) -> Section:
    """Attempts and members per model type x size, beside the paper's Table 1."""
    n = len(attempts)
    counts = st.cell_counts(attempts)
    for m, row in counts.items():
        for s, cell in row.items():
            cell["paper_attempts"] = PAPER_TABLE1.get(m, {}).get(s)
    return section(
        "table1",
        n,
        {},
        model_types=st.model_types(attempts),
        sizes=st.sizes(attempts),
        cells=counts,
        totals={"attempts": n, "members": len({a.red_team_member_id for a in attempts})},
        paper_total=sum(sum(r.values()) for r in PAPER_TABLE1.values()),
    )


def fig1(attempts: Sequence[RedTeamAttempt], *, seed: int, resamples: int) -> Section:
    """Mean rating and mean min-harmlessness per cell (bootstrap intervals, the paper's
    Fig. 1 beside them) and the score's distribution per model type."""
    _, rating_drop = st.finite(a.rating for a in attempts)
    scores_f, score_drop = st.finite(_score(a) for a in attempts)
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
        for m in st.model_types(attempts)
    }
    return section(
        "fig1",
        len(attempts) - max(rating_drop, score_drop),
        {
            "non-finite rating (rating means only)": rating_drop,
            "null or non-finite min_harmlessness_score_transcript (score means only)": score_drop,
        },
        interval=f"percentile bootstrap, {resamples} resamples, 95%, seed {seed}",
        rating=rating_means,
        min_harmlessness=harm_means,
        distribution=distribution,
    )


def success(attempts: Sequence[RedTeamAttempt], threshold: float) -> Section:
    """The share of successful attempts, overall and per cell, and how the rating relates to
    the min-harmlessness score (overall and per model type)."""
    rvh = st.rating_vs_harmlessness(attempts)
    rvh["by_model_type"] = {
        m: st.rating_vs_harmlessness([a for a in attempts if a.model_type == m])["spearman"]
        for m in st.model_types(attempts)
    }
    return section(
        "success",
        len(attempts),
        {"non-finite rating, null or non-finite score (correlation only)": rvh["dropped"]},
        threshold=threshold,
        overall=st.success_share((a.rating for a in attempts), threshold),
        paper_overall_share=PAPER_SUCCESS_SHARE if threshold == 3 else None,
        cells=st.cell_success(attempts, threshold),
        rating_vs_harmlessness=rvh,
    )


def members(attempts: Sequence[RedTeamAttempt], threshold: float) -> Section:
    """How the attempts spread over red-team members (the paper's "80% from 15%"), their
    success, and the Upwork and MTurk pools."""
    member_counts = list(st.member_counts(attempts).values())
    return section(
        "members",
        len(attempts),
        {},
        members=len(member_counts),
        counts=member_counts,
        top_share=st.top_share(member_counts, PAPER_TOP_MEMBERS["fraction_of_members"]),
        covering_80=st.smallest_share_covering(member_counts, 0.8),
        paper=PAPER_TOP_MEMBERS,
        gini=st.gini(member_counts),
        lorenz=[list(p) for p in st.lorenz_curve(member_counts)],
        per_member=st.member_success(attempts, threshold),
        pools=st.worker_pools(attempts, threshold),
    )


def marginals(attempts: Sequence[RedTeamAttempt]) -> Section:
    """The distribution and mean of the rating and of both harmlessness scores."""
    ratings_f, rating_drop = st.finite(a.rating for a in attempts)
    scores_f, score_drop = st.finite(_score(a) for a in attempts)
    tasks_f, task_drop = st.finite(a.task_description_harmlessness_score for a in attempts)
    return section(
        "marginals",
        len(attempts),
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


def tags(attempts: Sequence[RedTeamAttempt], threshold: float) -> Section:
    """Tag counts, total and successful, on the tagged attempts."""
    counts = st.tag_counts(attempts, threshold)
    return section(
        "tags",
        counts["tagged"],
        {"tags null": counts["untagged"], "tags empty list": counts["empty"]},
        threshold=threshold,
        **counts,
    )


def themes(
    attempts: Sequence[RedTeamAttempt], threshold: float, *, seed: int, k_range: Sequence[int]
) -> Section:
    """Clusters of the task descriptions (k chosen by silhouette over ``k_range``), each with
    its top terms, success and tags; empty, saying why, when there is too little to cluster."""
    kept, blank = theme_inputs(attempts)
    body: dict[str, Any] = {"k_range": list(k_range), "seed": seed}
    try:
        clusters = cluster_texts([a.task_description for a in kept], k_range=k_range, seed=seed)
    except ValueError as exc:
        body.update(
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
        body.update(clusters, clusters=summary, crosstab=theme_tag_crosstab(kept, labels))
        used = len(kept)
    return section("themes", used, {"blank task description": blank}, **body)


def turns(attempts: Sequence[RedTeamAttempt], threshold: float) -> Section:
    """Success by the number of human turns."""
    return section(
        "turns",
        len(attempts),
        {},
        threshold=threshold,
        **st.turns_vs_success(attempts, threshold),
    )
