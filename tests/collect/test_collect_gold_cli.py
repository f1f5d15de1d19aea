"""``hh collect gold`` and ``hh collect qualification``: import (a bad line is one error line
naming the file and line, nothing added), list, the round's table and a reset."""

from __future__ import annotations

import json
import random

import orjson
from click.testing import CliRunner
from test_gold import GOOD, hh, write
from test_qualification import answer_gold

from hhrlhf.cli import cli
from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.gold import gold_counts, import_gold, read_gold
from hhrlhf.collect.services.qualification import set_round


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_import_then_again_then_list(storage, db_url, tmp_path):
    path = write(tmp_path / "gold.jsonl", GOOD)
    r = run("collect", "gold", "import", path, "--db", db_url)
    assert r.exit_code == 0, r.output
    assert "imported 3 helpful gold items from 3 pairs (0 already there)" in r.output
    r = run("collect", "gold", "import", path, "--db", db_url, "--json")
    assert orjson.loads(r.output) == {"read": 3, "added": 0, "already": 3, "refused": 0}
    r = run("collect", "gold", "import", path, "--mode", "red-team", "--db", db_url)
    assert r.exit_code == 0 and "imported 3 red-team gold items" in r.output
    r = run("collect", "gold", "list", "--db", db_url, "--json")
    assert orjson.loads(r.output)["items"] == {"helpful": 3, "red-team": 3}


def test_a_bad_line_is_one_error_and_nothing_is_added(storage, db_url, tmp_path):
    path = write(
        tmp_path / "bad.jsonl", [GOOD[0], json.dumps(hh(["Same?"], "Yes.", "Yes.")) + "\n"]
    )
    r = CliRunner().invoke(cli, ["collect", "gold", "import", str(path), "--db", db_url])
    assert r.exit_code == 1
    assert r.output.startswith(f"error: {path}, line 2: ") and "same text" in r.output
    assert "hint: nothing was imported; --skip-refused imports the other pairs" in r.output
    assert "Traceback" not in r.output
    assert gold_counts(storage).total == 0
    # --skip-refused: the pair that cannot be gold is said and skipped, the rest imported
    r = CliRunner().invoke(
        cli, ["collect", "gold", "import", str(path), "--skip-refused", "--db", db_url]
    )
    assert r.exit_code == 0, r.output
    assert r.stderr.startswith(f"warning: refused {path}, line 2: ") and "same text" in r.stderr
    assert "imported 1 helpful gold item from 1 pair (0 already there, 1 refused)" in r.stdout
    assert gold_counts(storage).total == 1
    broken = write(tmp_path / "broken.jsonl", [GOOD[0], "{not json\n"])
    r = CliRunner().invoke(cli, ["collect", "gold", "import", str(broken), "--skip-refused"])
    assert r.exit_code == 1 and f"error: {broken}, line 2: invalid JSON" in r.output
    r = CliRunner().invoke(cli, ["collect", "gold", "import", str(tmp_path / "nope.jsonl")])
    assert r.exit_code == 1 and "no such file" in r.output
    r = CliRunner().invoke(cli, ["collect", "gold", "import", str(path), "--mode", "harmful"])
    assert r.exit_code == 2


def test_qualification_list_and_reset(storage, db_url, tmp_path):
    r = run("collect", "qualification", "list", "--db", db_url)
    assert "no qualification round" in r.output
    items = read_gold(
        write(tmp_path / "g.jsonl", [hh([f"Q{i}?"], f"R{i}.", f"W{i}.") for i in range(4)])
    )
    import_gold(storage, items)
    bob, _ = annotators.add_annotator(storage, "bob")
    annotators.add_annotator(storage, "cleo")
    set_round(storage, 2, 1.0)
    answer_gold(storage, bob, {g.chosen for g in items}, [True, False], random.Random(1))
    r = run("collect", "qualification", "list", "--db", db_url, "--json")
    out = orjson.loads(r.output)
    assert out["round"] == {"reviews": 2, "threshold": 1.0} and out["warning"] is None
    rows = {a["name"]: a for a in out["annotators"]}
    assert (rows["bob"]["status"], rows["bob"]["accuracy"]) == ("failed", 0.5)
    assert (rows["cleo"]["status"], rows["cleo"]["answered"]) == ("waiting", 0)
    r = run("collect", "qualification", "list", "--db", db_url)
    assert "bob" in r.output and "1/2" not in r.output and "2/2" in r.output
    r = CliRunner().invoke(cli, ["collect", "qualification", "reset", "cleo", "--db", db_url])
    assert r.exit_code == 1 and "has not failed" in r.output
    r = run("collect", "qualification", "reset", "bob", "--db", db_url)
    assert r.exit_code == 0 and "bob: waiting for a new round of 2 gold reviews" in r.output
    set_round(storage, 10, 0.8)
    r = run("collect", "qualification", "list", "--db", db_url)
    assert "only 4 gold items" in r.output


def test_stats_says_gold_only_when_there_is_some(storage, db_url, tmp_path):
    r = run("collect", "stats", "--db", db_url, "--json", "--resamples", 10)
    assert "gold" not in orjson.loads(r.output)
    import_gold(storage, read_gold(write(tmp_path / "g.jsonl", GOOD)))
    r = run("collect", "stats", "--db", db_url, "--json", "--resamples", 10)
    assert orjson.loads(r.output)["gold"]["items"] == {"helpful": 3, "red-team": 0}
    r = run("collect", "stats", "--db", db_url, "--resamples", 10)
    assert "gold: 3 helpful items, 0 gold reviews answered" in r.output
