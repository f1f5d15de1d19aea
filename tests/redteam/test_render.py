"""The report's page from the templates: its tables are the computed tables cell for cell, its
numbers are report.json's, and every value from the data is escaped."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from hhrlhf.dataset import iter_attempts
from hhrlhf.redteam.render import Table, ci, fmt, pct, render_html, section_tables
from hhrlhf.redteam.report import PLOTS, SECTIONS, compute_report

pytest.importorskip("jinja2")
pytest.importorskip("numpy")
pytest.importorskip("sklearn")


class _Page(HTMLParser):
    """Sections -> their tables as lists of rows of cell text (head row first), and the text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections: dict[str, list[list[list[str]]]] = {}
        self.classes: dict[str, list[list[list[str]]]] = {}
        self.text: list[str] = []
        self._sid = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self._sid = a["id"]
            self.sections[self._sid] = []
            self.classes[self._sid] = []
        elif tag == "table":
            self.sections[self._sid].append([])
            self.classes[self._sid].append([])
        elif tag == "tr":
            self.sections[self._sid][-1].append([])
            self.classes[self._sid][-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
            self.classes[self._sid][-1][-1].append(a.get("class") or "")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.sections[self._sid][-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def report():
    return compute_report(list(iter_attempts(data="sample")), resamples=100, source="sample")


def _parse(page: str) -> _Page:
    p = _Page()
    p.feed(page)
    return p


def test_formatting_helpers():
    assert fmt(None) == "–" and fmt(True) == "yes" and fmt(False) == "no"
    assert fmt(12345) == "12,345" and fmt(-0.57412) == "-0.574" and fmt(1.5, 2) == "1.50"
    assert fmt("<b>") == "<b>"  # plain text: the template escapes it
    assert pct(None) == "–" and pct(0.338) == "33.8%"
    assert ci({"mean": None}) == "–"
    assert ci({"mean": 1.0, "low": 0.5, "high": 1.25}) == "1.000 [0.500, 1.250]"


def test_section_tables_are_pure_text_from_the_numbers(report):
    s = report["sections"]
    t = section_tables("table1", s["table1"], report)["cells"]
    sizes = s["table1"]["sizes"]
    assert t["head"][0] == "model type" and len(t["head"]) == 1 + 3 * len(sizes)
    assert t["paper_cols"] == [2 + 3 * i for i in range(len(sizes))]
    m = next(iter(s["table1"]["cells"]))
    row = next(r for r in t["rows"] if r[0] == m)
    assert row[1] == f"{s['table1']['cells'][m][sizes[0]]['attempts']:,}"
    turns = section_tables("turns", s["turns"], report)["by_turns"]
    assert [r[0] for r in turns["rows"]] == list(s["turns"]["by_turns"])
    assert [r[1] for r in turns["rows"]] == [
        f"{v['attempts']:,}" for v in s["turns"]["by_turns"].values()
    ]


def test_page_tables_are_the_computed_tables(report):
    page = _parse(render_html(report, {name: b"png" for name in PLOTS}))
    assert list(page.sections) == list(SECTIONS)
    for sid, sec in report["sections"].items():
        expected = list(section_tables(sid, sec, report).values())
        shown = page.sections[sid]
        assert len(shown) == len(expected), sid
        for t, cells, classes in zip(expected, shown, page.classes[sid], strict=True):
            assert isinstance(t, Table)
            assert cells == [t["head"], *t["rows"]], sid
            # left-aligned and paper columns keep their classes
            for row in classes:
                for i, cls in enumerate(row):
                    assert ("l" in cls.split()) == (i < t["left"]), (sid, i)
                    assert ("paper" in cls.split()) == (i in t["paper_cols"]), (sid, i)


def test_page_prose_shows_report_numbers(report):
    text = "".join(_parse(render_html(report, {})).text)
    s = report["sections"]
    assert f"Total: {s['table1']['totals']['attempts']:,} attempts" in text
    o = s["success"]["overall"]
    assert f"{o['successful']:,} of {o['n']:,} attempts, {pct(o['share'])}" in text
    assert f"Gini {fmt(s['members']['gini'])}" in text
    assert f"{len(s['members']['per_member']):,} members are in report.json" in text
    assert (
        f"Spearman correlation of human turns with rating: {fmt(s['turns']['spearman_turns_rating'])}"
        in text
    )
    for sid, sec in s.items():
        assert f"Used {sec['records_used']:,} records" in text, sid
    assert "<figure" not in render_html(report, {})  # no PNG given, no figure


def test_the_page_links_its_numbers(report):
    """Beside the written report.json by default; where the app serves them when told."""
    assert "<a href='report.json' id='report-json'><code>report.json</code></a>" in render_html(
        report, {}
    )
    page = render_html(report, {}, json_href="/api/numbers?a=1&b=<2>")
    assert "<a href='/api/numbers?a=1&amp;b=&lt;2&gt;' id='report-json'>" in page


def test_values_from_the_data_are_escaped(make_attempt):
    attempts = [
        make_attempt(model_type="<script>x</script>", rating=4, score=-1.0, member=1, tags=["a&b"]),
        make_attempt(model_type="rlhf", rating=0, score=1.0, member=2, tags=["<i>"]),
        make_attempt(model_type="rlhf", rating=1, score=0.5, member=3, tags=None),
    ]
    report = compute_report(attempts, resamples=20, k_range=range(2, 3), source="<x>'\"")
    page = render_html(report, {})
    assert "<script" not in page and "<i>" not in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page
    assert "a&amp;b" in page and "&lt;i&gt;" in page
    assert "<code>&lt;x&gt;&#39;&#34;</code>" in page
    parsed = _parse(page)
    assert ["<script>x</script>"] in [r[:1] for t in parsed.sections["table1"] for r in t]
