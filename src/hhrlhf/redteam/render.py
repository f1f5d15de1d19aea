"""The red-team report's page: ``report.json``'s numbers through the Jinja2 templates.

Computing lives in :mod:`hhrlhf.redteam.report`; this module only formats. Each section has
its template in ``hhrlhf/templates/report/sections/<id>.html``; the tables a section shows are
built here as plain text (:func:`section_tables`) and escaped by the templates, which share the
autoescaping environment of :mod:`hhrlhf.templates` with the collection app.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from ..templates import environment
from .sections import PLOTS, SECTIONS

__all__ = ["Table", "fmt", "pct", "ci", "section_tables", "render_html"]

DASH = "–"


def fmt(v, digits: int = 3) -> str:
    """A number as the page shows it: thousands separated, floats to ``digits`` places."""
    if v is None:
        return DASH
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return str(v)


def pct(v) -> str:
    """A share as a percentage with one decimal."""
    return DASH if v is None else f"{100 * v:.1f}%"


def ci(c: dict) -> str:
    """``mean [low, high]`` of a bootstrap interval."""
    if c["mean"] is None:
        return DASH
    return f"{c['mean']:.3f} [{c['low']:.3f}, {c['high']:.3f}]"


class Table(dict):
    """One table: ``head`` and ``rows`` of plain text; the first ``left`` columns align left,
    the ``paper_cols`` hold the paper's numbers."""

    def __init__(
        self,
        head: Sequence[str],
        rows: Sequence[Sequence[str]],
        *,
        left: int = 1,
        paper_cols: Sequence[int] = (),
    ):
        super().__init__(head=list(head), rows=[list(r) for r in rows], left=left)
        self["paper_cols"] = list(paper_cols)


def _table1(sec: dict, sizes: list[str]) -> dict[str, Table]:
    head = ["model type"]
    for z in sizes:
        head += [f"{z} attempts", f"{z} paper", f"{z} members"]
    rows = []
    for m, row in sec["cells"].items():
        r = [m]
        for z in sizes:
            c = row[z]
            r += [fmt(c["attempts"]), fmt(c["paper_attempts"]), fmt(c["members"])]
        rows.append(r)
    return {"cells": Table(head, rows, paper_cols=[2 + 3 * i for i in range(len(sizes))])}


def _fig1(sec: dict, sizes: list[str]) -> dict[str, Table]:
    out = {}
    for key, paper in (("rating", False), ("min_harmlessness", True)):
        head = ["model type"]
        for z in sizes:
            head += [f"{z} mean [95% CI]", f"{z} n"] + ([f"{z} paper"] if paper else [])
        rows = []
        for m, row in sec[key].items():
            r = [m]
            for z in sizes:
                r += [ci(row[z]), fmt(row[z]["n"])]
                if paper:
                    r.append(fmt(row[z]["paper_mean"], 2))
            rows.append(r)
        cols = [3 + 3 * i for i in range(len(sizes))] if paper else ()
        out[key] = Table(head, rows, paper_cols=cols)
    return out


def _success(sec: dict, sizes: list[str]) -> dict[str, Table]:
    rvh = sec["rating_vs_harmlessness"]
    return {
        "cells": Table(
            ["model type"] + list(sizes),
            [
                [m]
                + [
                    f"{pct(row[z]['share'])} ({row[z]['successful']:,}/{row[z]['n']:,})"
                    for z in sizes
                ]
                for m, row in sec["cells"].items()
            ],
        ),
        "by_model_type": Table(
            ["model type", "Spearman rho"], [[m, fmt(v)] for m, v in rvh["by_model_type"].items()]
        ),
        "by_rating": Table(
            ["rating", "attempts", "mean score", "median score"],
            [
                [k, fmt(v["n"]), fmt(v["mean"]), fmt(v["median"])]
                for k, v in rvh["by_rating"].items()
            ],
        ),
    }


def _members(sec: dict, sizes: list[str]) -> dict[str, Table]:
    pools = Table(
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
                fmt(v["attempts"]),
                fmt(v["members"]),
                fmt(v["successful"]),
                pct(v["share"]),
                fmt(v["mean_rating"]),
                fmt(v["mean_min_harmlessness"]),
            ]
            for k, v in sec["pools"].items()
        ],
    )
    top = Table(
        ["member", "upworker", "attempts", "successful", "success share"],
        [
            [
                str(r["member"]),
                fmt(r["upworker"]),
                fmt(r["attempts"]),
                fmt(r["successful"]),
                pct(r["share"]),
            ]
            for r in sec["per_member"][:15]
        ],
    )
    return {"pools": pools, "top": top}


def _marginals(sec: dict, sizes: list[str]) -> dict[str, Table]:
    return {
        "rating": Table(
            ["rating"] + list(sec["rating"]),
            [["attempts"] + [fmt(v) for v in sec["rating"].values()]],
        )
    }


def _tags(sec: dict, sizes: list[str]) -> dict[str, Table]:
    models = list(sec["by_model_type"])
    head = ["tag", "total", "successful", "share"] + [f"{m} total/succ." for m in models]
    rows = []
    for tag, v in sec["overall"].items():
        r = [tag, fmt(v["total"]), fmt(v["successful"]), pct(v["successful"] / v["total"])]
        for m in models:
            e = sec["by_model_type"][m]["tags"].get(tag)
            r.append(f"{e['total']:,}/{e['successful']:,}" if e else DASH)
        rows.append(r)
    return {"tags": Table(head, rows)} if rows else {}


def _themes(sec: dict, sizes: list[str]) -> dict[str, Table]:
    if sec.get("skipped"):
        return {}
    ct = sec["crosstab"]
    out = {
        "silhouette": Table(
            ["k"] + list(sec["silhouette"]),
            [["silhouette"] + [fmt(v) for v in sec["silhouette"].values()]],
        ),
        "clusters": Table(
            ["cluster", "top terms", "size", "success share", "mean min-harmlessness"],
            [
                [
                    str(c["cluster"]),
                    ", ".join(c["top_terms"]),
                    fmt(c["size"]),
                    pct(c["success_share"]),
                    fmt(c["mean_min_harmlessness"]),
                ]
                for c in sec["clusters"]
            ],
            left=2,
        ),
    }
    if ct["tags"]:
        out["crosstab"] = Table(
            ["cluster"] + ct["tags"],
            [[k] + [fmt(row[t]) for t in ct["tags"]] for k, row in ct["table"].items()],
        )
    return out


def _turns(sec: dict, sizes: list[str]) -> dict[str, Table]:
    return {
        "by_turns": Table(
            ["human turns", "attempts", "successful", "share"],
            [
                [k, fmt(v["attempts"]), fmt(v["successful"]), pct(v["share"])]
                for k, v in sec["by_turns"].items()
            ],
        )
    }


_TABLES = {
    "table1": _table1,
    "fig1": _fig1,
    "success": _success,
    "members": _members,
    "marginals": _marginals,
    "tags": _tags,
    "themes": _themes,
    "turns": _turns,
}


def section_tables(sid: str, sec: dict, report: dict) -> dict[str, Table]:
    """The tables of section ``sid``, by name, as plain text (the template escapes them)."""
    return _TABLES[sid](sec, report["sections"]["table1"]["sizes"])


def render_html(report: dict, pngs: dict[str, bytes], *, json_href: str = "report.json") -> str:
    """A self-contained page: every section, its tables, and its plots as data URIs.

    ``json_href``: where the page's link to its numbers points (the ``report.json`` written
    beside it; the app serves them from its API).
    """
    env = environment("report", "the red-team report page")
    env.filters.update(fmt=fmt, pct=pct, num=lambda v: f"{v:,}", g=lambda v: f"{v:g}")
    sections = [
        {
            "id": sid,
            "sec": sec,
            "template": f"report/sections/{sid}.html",
            "tables": section_tables(sid, sec, report),
            "figures": [
                {
                    "name": name,
                    "caption": PLOTS[name][1],
                    "data": base64.b64encode(pngs[name]).decode("ascii"),
                }
                for name in sec["plots"]
                if name in pngs
            ],
        }
        for sid, sec in report["sections"].items()
    ]
    page = env.get_template("report/page.html")
    return page.render(report=report, sections=sections, titles=SECTIONS, json_href=json_href)
