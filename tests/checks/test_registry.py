"""Adding a check is one class and one registration line: everything else follows."""

from __future__ import annotations

import gzip
import json

from checks_helpers import pair

from hhrlhf.checks import (
    CHECKS,
    CLASSES,
    Check,
    CheckClass,
    audit,
    check_class_names,
    default_drop,
    run_checks,
)
from hhrlhf.clean import clean
from hhrlhf.records import PreferencePair


class Shouting(Check):
    """A chosen response written in capitals (the whole of a new check's module)."""

    name = "shouting"
    classes = (CheckClass("shouting", "error", "the chosen response is all capitals"),)

    def check(self, pair):
        text = pair.chosen_response.strip()
        return [("shouting", f"{len(text)} capitals")] if text.isupper() else []


def read_lines(path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


LOUD = pair(("Say hello.",), "HELLO THERE", "hi")
QUIET = pair(("Say hello.",), "Hello there", "hi")


def test_a_registered_check_runs_everywhere(monkeypatch, corpus, tmp_path):
    assert "shouting" not in CHECKS and "shouting" not in CLASSES
    monkeypatch.setitem(CHECKS, Shouting.name, Shouting)  # the one registration line

    # the registry's views follow: class names, --drop names, the default drop
    assert CLASSES["shouting"].severity == "error"
    assert check_class_names(["shouting"]) == ["shouting"]
    assert "shouting" in default_drop()

    # run_checks, on records in memory
    records = [
        PreferencePair(row["chosen"], row["rejected"], "helpful-base", "train", i)
        for i, row in enumerate([LOUD, QUIET])
    ]
    r = run_checks(records)
    assert r.flags[("helpful-base", "train", 0)]["shouting"] == "11 capitals"
    assert "shouting" not in r.flags.get(("helpful-base", "train", 1), {})
    assert r.counts["shouting"] == 1

    # audit() over files, and hh clean's default drop
    root = corpus({"helpful-base/train": [LOUD, QUIET]})
    assert audit(["helpful-base"], data=root).counts["shouting"] == 1
    manifest = clean(["helpful-base"], out=tmp_path / "clean", data=root)
    assert manifest["dropped_by_reason"] == {"shouting": 1}
    (rel,) = manifest["files"]
    kept = [json.loads(line) for line in read_lines(tmp_path / "clean" / rel)]
    assert [row["chosen"] for row in kept] == [QUIET["chosen"]]


def test_unregistered_the_check_is_gone():
    assert "shouting" not in CHECKS and "shouting" not in CLASSES
    assert "shouting" not in default_drop()
