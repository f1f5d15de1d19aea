"""The collected data in the browser, by ``hh collect flag``'s flags: the pair list filters by
flag class, the pair page shows the margin and p_mislabelled (escaped)."""

from __future__ import annotations

from logins import login
from planted import planted

from hhrlhf.collect.services.export import export_collection
from hhrlhf.collect.services.flags import store_flags

HOSTILE = '<i>x</i>&"'  # fits the class column (20 characters)


def _rows(ids):
    def row(i, cls, p, margin):
        return {"comparison_id": ids[i], "margin": margin, "margin_sd": 0.25,
                "p_mislabelled": p, "class": cls}  # fmt: skip

    return [row(4, "likely_mislabelled", 0.8125, -1.5), row(7, "ambiguous", 0.5, 0.0)] + [
        row(i, "clear", 0.05, 3.0) for i in (0, 1, 2)
    ]


def _keys(tmp_path, storage):
    """The collected data's (subset, split, index) of each comparison."""
    ids = {}
    export_collection(
        storage, tmp_path / "x", min_strength=1, include_unfinished=True, comparison_ids=ids
    )
    return {c: k for k, c in ids.items()}


def _listed(client, h, flag):
    got = client.get(f"/api/v1/data/pairs?source=collected&flag={flag}&limit=200", headers=h)
    assert got.status_code == 200, got.text
    return [(p["subset"], p["split"], p["index"]) for p in got.json()["pairs"]]


def test_the_pair_list_filters_by_flag(client, storage, admin, tmp_path):
    _, ids, _ = planted(storage, n=12, flipped=(4,))
    keys = _keys(tmp_path, storage)
    h = admin[1]
    assert len(_listed(client, h, "unflagged")) == 12  # before any run
    store_flags(storage, _rows(ids))  # a new run: the collected index is read again
    assert _listed(client, h, "likely_mislabelled") == [keys[ids[4]]]
    assert _listed(client, h, "ambiguous") == [keys[ids[7]]]
    assert sorted(_listed(client, h, "clear")) == sorted(keys[ids[i]] for i in (0, 1, 2))
    assert len(_listed(client, h, "unflagged")) == 12 - 5
    bad = client.get("/api/v1/data/pairs?source=collected&flag=wrong", headers=h)
    assert bad.status_code == 422 and "unknown flag 'wrong'" in bad.json()["error"]
    login(client, admin[2])
    page = client.get("/data?source=collected&flag=likely_mislabelled").text
    assert '<select name="flag" id="filter-flag">' in page
    assert '<option value="likely_mislabelled" selected>' in page
    assert '<span class="badge flag">likely_mislabelled</span>' in page


def test_the_pair_page_shows_the_margin_and_p_mislabelled(client, storage, admin, tmp_path):
    _, ids, _ = planted(storage, n=12, flipped=(4,))
    keys = _keys(tmp_path, storage)
    rows = _rows(ids)
    rows[1]["class"] = HOSTILE  # stored as given: the page must still escape it
    store_flags(storage, rows)
    login(client, admin[2])
    subset, split, index = keys[ids[4]]
    page = client.get(f"/data/pairs/{subset}/{split}/{index}?source=collected").text
    assert "margin -1.500 (sd 0.250) · p_mislabelled 0.812" in page
    assert '<span class="badge flag">likely_mislabelled</span>' in page
    subset, split, index = keys[ids[7]]
    page = client.get(f"/data/pairs/{subset}/{split}/{index}?source=collected").text
    assert HOSTILE not in page and "&lt;i&gt;x&lt;/i&gt;&amp;&#34;" in page
    subset, split, index = keys[ids[9]]
    page = client.get(f"/data/pairs/{subset}/{split}/{index}?source=collected").text
    assert "Not flagged" in page and "p_mislabelled" not in page
