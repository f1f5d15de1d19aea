"""``hh collect flag``: the export's comparisons flagged as ``hh pm flag`` flags pairs, the
flags stored in the database (a new run replacing the older one's) and written as JSON lines."""

from __future__ import annotations

import gzip

import orjson
from click.testing import CliRunner
from planted import planted

from hhrlhf.cli import cli
from hhrlhf.collect.services.export import export_collection
from hhrlhf.collect.services.flags import store_flags, stored_flags


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_flags_find_the_planted_flips_and_match_the_export(storage, db_url, sqlite_only, tmp_path):
    _, ids, flips = planted(storage, weak=(7,))
    out = tmp_path / "flags.jsonl"
    r = run("collect", "flag", "--db", db_url, "--out", out, "--seeds", 1)
    assert r.exit_code == 0, r.output
    assert "likely_mislabelled" in r.output and "39 pairs" in r.output
    assert "stored 39 flags" in r.output
    stored = stored_flags(storage)
    assert set(stored) == set(ids) - {ids[7]}  # the weak pick: the export leaves it out
    likely = {c for c, f in stored.items() if f.cls == "likely_mislabelled"}
    assert set(flips) <= likely and len(likely) <= len(flips) + 2
    rows = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert {r["comparison_id"] for r in rows} == set(stored)
    # each row names the export's line of its comparison
    export_collection(storage, tmp_path / "export")
    lines = {}
    for path in (tmp_path / "export").glob("*/*.jsonl.gz"):
        for i, line in enumerate(gzip.open(path).read().splitlines()):
            lines[path.parent.name, path.name.split(".")[0], i] = orjson.loads(line)
    assert len(lines) == len(rows)
    ids_of = {}
    export_collection(storage, tmp_path / "again", comparison_ids=ids_of)
    for row in rows:
        assert ids_of[row["subset"], row["split"], row["index"]] == row["comparison_id"]


def test_a_new_run_replaces_the_older_runs_flags(storage, db_url, sqlite_only, tmp_path):
    planted(storage, n=20, flipped=(4,))
    first = run("collect", "flag", "--db", db_url, "--seeds", 1, "--folds", 3)
    assert first.exit_code == 0 and "stored 20 flags" in first.output
    again = run("collect", "flag", "--db", db_url, "--seeds", 1, "--folds", 3, "--json")
    assert again.exit_code == 0
    assert "replaced 20 flags of an older run (flagged " in again.output
    assert len(stored_flags(storage)) == 20


def test_upstream_pairs_only_train(storage, db_url, sqlite_only):
    planted(storage, n=20, flipped=(4,))
    r = run("collect", "flag", "--db", db_url, "--data", "sample", "--seeds", 1, "--json")
    assert r.exit_code == 0, r.output
    report = orjson.loads(r.stdout[r.stdout.index("{") :])
    assert report["pairs"] == 20 and report["extra_training"]["pairs"] > 0


def test_store_flags_replaces_every_row(storage):
    _, ids, _ = planted(storage, n=4, flipped=())
    row = {"margin": 1.0, "margin_sd": 0.0, "p_mislabelled": 0.2, "class": "clear"}
    assert store_flags(storage, [{"comparison_id": c, **row} for c in ids]).replaced == 0
    second = store_flags(storage, [{"comparison_id": ids[0], **row, "class": "ambiguous"}])
    assert second.replaced == 4 and second.previous is not None and second.stored == 1
    assert {c: f.cls for c, f in stored_flags(storage).items()} == {ids[0]: "ambiguous"}


def test_nothing_to_flag_and_an_existing_out_are_one_error_line(
    storage, db_url, sqlite_only, tmp_path
):
    r = run("collect", "flag", "--db", db_url)
    assert r.exit_code == 1 and r.output.startswith("error: ") and "nothing to flag" in r.output
    out = tmp_path / "flags.jsonl"
    out.write_text("keep\n")
    r = run("collect", "flag", "--db", db_url, "--out", out)
    assert r.exit_code == 1 and "error: " in r.output and out.read_text() == "keep\n"
