"""The report: every section and plot exists, its numbers are the functions' numbers, the page
is self-contained, degenerate inputs say what they dropped, and (marked browser) it displays."""

from __future__ import annotations

import json
import math
import shutil

import pytest

from headless import CHROMIUM, CHROMIUM_ARGS, need_browser
from hhrlhf.dataset import iter_attempts
from hhrlhf.redteam import stats as st
from hhrlhf.redteam.report import (
    PAPER_FIG1_HARMLESSNESS,
    PAPER_TABLE1,
    PLOTS,
    SECTIONS,
    compute_report,
    generate_report,
    read_report,
    write_report,
)

pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("redteam-report")
    paths = generate_report("sample", out, resamples=200)
    report = json.loads(paths["json"].read_text(encoding="utf-8"))
    attempts = list(iter_attempts(data="sample"))
    return out, paths, report, attempts


def test_every_section_and_plot_exists(sample_report):
    out, paths, report, attempts = sample_report
    assert list(report["sections"]) == list(SECTIONS)
    for sid, sec in report["sections"].items():
        assert sec["title"] == SECTIONS[sid]
        assert isinstance(sec["records_used"], int) and sec["records_used"] > 0, sid
        assert isinstance(sec["dropped"], dict), sid
    assert set(report["plots"]) == set(PLOTS)
    for name in PLOTS:
        data = (out / name).read_bytes()
        assert data.startswith(PNG_MAGIC), name
        assert paths[name] == out / name
    page = paths["html"].read_text(encoding="utf-8")
    for sid in SECTIONS:
        assert f"<section id='{sid}'" in page
    for name in PLOTS:
        assert f"data-plot='{name}'" in page
    assert page.count("src='data:image/png;base64,") == len(PLOTS)
    # self-contained: nothing fetched from anywhere
    assert "http://" not in page and "https://" not in page and "<script" not in page


def test_report_numbers_match_the_functions(sample_report):
    _, _, report, attempts = sample_report
    s = report["sections"]
    assert report["records"] == len(attempts) == s["table1"]["totals"]["attempts"]

    counts = st.cell_counts(attempts)
    for m, row in counts.items():
        for z, cell in row.items():
            got = s["table1"]["cells"][m][z]
            assert {k: got[k] for k in ("attempts", "members")} == cell
            assert got["paper_attempts"] == PAPER_TABLE1.get(m, {}).get(z)

    harm = st.cell_means(
        attempts, lambda a: a.min_harmlessness_score_transcript, seed=0, resamples=200
    )
    rating = st.cell_means(attempts, lambda a: a.rating, seed=0, resamples=200)
    for m in harm:
        for z in harm[m]:
            got = s["fig1"]["min_harmlessness"][m][z]
            assert {k: got[k] for k in harm[m][z]} == harm[m][z]
            assert got["paper_mean"] == PAPER_FIG1_HARMLESSNESS.get(m, {}).get(z)
            assert s["fig1"]["rating"][m][z] == rating[m][z]

    assert s["success"]["overall"] == st.success_share(a.rating for a in attempts)
    assert s["success"]["paper_overall_share"] == 0.338
    assert s["success"]["cells"] == st.cell_success(attempts)
    rvh = st.rating_vs_harmlessness(attempts)
    assert s["success"]["rating_vs_harmlessness"]["spearman"] == pytest.approx(rvh["spearman"])

    member_counts = list(st.member_counts(attempts).values())
    assert s["members"]["counts"] == member_counts
    assert s["members"]["top_share"] == st.top_share(member_counts, 0.15)
    assert s["members"]["covering_80"] == st.smallest_share_covering(member_counts, 0.8)
    assert s["members"]["pools"] == st.worker_pools(attempts)
    assert len(s["members"]["per_member"]) == len(member_counts)

    assert s["marginals"]["rating"] == st.value_counts(a.rating for a in attempts)
    tags = st.tag_counts(attempts)
    assert s["tags"]["overall"] == tags["overall"]
    assert s["tags"]["records_used"] == tags["tagged"]
    assert s["tags"]["dropped"].get("tags null", 0) == tags["untagged"]
    assert {k: s["turns"][k] for k in ("n", "by_turns")} == {
        k: v for k, v in st.turns_vs_success(attempts).items() if k != "spearman_turns_rating"
    }

    themes = s["themes"]
    assert themes["k"] in range(2, 11)
    assert sum(c["size"] for c in themes["clusters"]) == themes["records_used"]
    assert themes["silhouette"][str(themes["k"])] == max(themes["silhouette"].values())


def test_html_shows_paper_values_next_to_computed(sample_report):
    _, paths, report, _ = sample_report
    page = paths["html"].read_text(encoding="utf-8")
    assert "17,739" in page  # Table 1, context distillation 52B
    assert "1.72" in page  # Fig. 1, rejection sampling 52B
    assert "paper: 33.8%" in page
    n = report["records"]
    assert f"Used {n:,} records" in page


def test_degenerate_input_says_what_it_dropped(tmp_path, make_attempt):
    nan = float("nan")
    attempts = [
        make_attempt(model_type="rlhf", rating=4, score=nan, tags=None, task=""),
        make_attempt(
            model_type="plain lm", num_params="2.7B", rating=0, score=1.0, tags=[], task="cookies"
        ),
        make_attempt(model_type="rlhf", rating=1, score=1.0, tags=None, task=""),
    ]
    paths = write_report(attempts, tmp_path, resamples=50)
    report = json.loads(paths["json"].read_text(encoding="utf-8"))
    # a non-finite score leaves the attempt out of every section, like `hh check` flags it
    assert report["records_read"] == 3 and report["records"] == 2
    assert report["dropped"] == {"non-finite min_harmlessness_score_transcript": 1}
    assert report["dropped_rows"][0]["reason"] == "non-finite min_harmlessness_score_transcript"
    s = report["sections"]
    assert s["table1"]["totals"]["attempts"] == 2
    assert s["fig1"]["dropped"] == {}
    assert s["tags"]["records_used"] == 0
    assert s["tags"]["dropped"] == {"tags null": 1, "tags empty list": 1}
    assert s["themes"]["records_used"] == 0
    assert s["themes"]["dropped"] == {"blank task description": 1}
    assert "at least 3" in s["themes"]["skipped"]
    page = paths["html"].read_text(encoding="utf-8")
    assert "non-finite min_harmlessness_score_transcript: 1" in page
    assert "No tagged attempts" in page and "Not clustered" in page
    for name in PLOTS:
        assert (tmp_path / name).read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize("rating", [7, -1, 2.5, float("nan"), float("inf")])
def test_out_of_range_ratings_are_dropped_with_their_reason(tmp_path, make_attempt, rating):
    attempts = [
        make_attempt(rating=4, score=-1.0, member=1),
        make_attempt(rating=0, score=1.0, member=2),
        make_attempt(rating=rating, score=0.0, member=3),
    ]
    report = compute_report(attempts, resamples=20, k_range=range(2, 3))
    reason = "rating out of range (not a whole number from 0 to 4)"
    assert report["records"] == 2 and report["dropped"] == {reason: 1}
    assert report["dropped_rows"][0]["detail"] == f"rating is {rating!r}"
    s = report["sections"]
    assert s["marginals"]["means"]["rating"] == 2.0
    assert s["success"]["overall"]["share"] == 0.5
    assert s["members"]["members"] == 2


def test_read_report_reads_the_file_or_its_folder(sample_report):
    out, paths, report, _ = sample_report
    assert read_report(paths["json"]) == report
    assert read_report(out) == report
    assert read_report(str(out))["records"] == report["records"] > 0


def test_report_json_has_no_non_finite_numbers(sample_report):
    _, paths, _, _ = sample_report

    def walk(v):
        if isinstance(v, float):
            assert math.isfinite(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(json.loads(paths["json"].read_text(encoding="utf-8")))


@pytest.mark.browser
def test_report_displays_in_headless_chromium(sample_report, tmp_path):
    sync_api = need_browser()  # a skip without the browser, a failure in CI
    _, paths, _, _ = sample_report
    page_file = tmp_path / "report.html"
    shutil.copy(paths["html"], page_file)  # alone in its folder: nothing else to load
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(page_file.as_uri())
            for sid in SECTIONS:
                assert page.locator(f"section#{sid} h2").is_visible(), sid
            widths = page.eval_on_selector_all(
                "img", "imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)"
            )
            assert len(widths) == len(PLOTS)
            assert all(w > 0 for w in widths), widths
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert (tmp_path / "report.png").read_bytes().startswith(PNG_MAGIC)


def test_null_scores_are_left_out_of_score_statistics_only(make_attempt):
    attempts = [
        make_attempt(rating=4, score=None, task_score=None, num_params="70B", model_type="ours"),
        make_attempt(rating=1, score=1.0, num_params="8B"),
        make_attempt(rating=3, score=-1.0, num_params="52B"),
    ]
    report = compute_report(attempts, resamples=20)
    # kept in every count (the attempt is real), left out of the score means and counted there
    assert report["records"] == 3 and report["dropped"] == {}
    s = report["sections"]
    assert s["table1"]["totals"]["attempts"] == 3
    key = "null or non-finite min_harmlessness_score_transcript (score means only)"
    assert s["fig1"]["dropped"][key] == 1
    # sizes sort by their number: 8B, 52B, 70B
    assert st.sizes(attempts) == ["8B", "52B", "70B"]
    assert st.model_types(attempts) == ["rlhf", "ours"]
