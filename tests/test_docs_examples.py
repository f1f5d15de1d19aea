"""The "Adding a format" and "Adding a check" examples in docs/convert.md do what they say
(tests/test_docs_python.py runs every Python block of the README and docs/ as written)."""

from __future__ import annotations

import re
from pathlib import Path

import hhrlhf
from hhrlhf.checks import CHECKS, CLASSES, run_checks
from hhrlhf.checks.base import Check
from hhrlhf.convert import FORMATS, export_records, import_records
from hhrlhf.records import PreferencePair

DOC = (Path(__file__).resolve().parents[1] / "docs" / "convert.md").read_text(encoding="utf-8")


def _example(heading: str) -> dict:
    section = DOC.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, f"docs/convert.md ({heading})", "exec"), namespace)
    return namespace


def test_adding_a_format_example_round_trips(tmp_path, monkeypatch):
    cls = _example("Adding a format")["BetterWorseFormat"]
    fmt = cls()
    monkeypatch.setitem(FORMATS, fmt.name, fmt)  # the one registration line
    pairs = hhrlhf.load_dataset("harmless-base", split="test", data="sample")[:5]
    out = tmp_path / "bw.jsonl"
    assert export_records(pairs, "better-worse", out) == 5
    first = out.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith('{"better":"')
    back = list(import_records(out, "better-worse"))
    assert [(p.chosen, p.rejected) for p in back] == [(p.chosen, p.rejected) for p in pairs]


def test_adding_a_check_example_flags_what_it_says(monkeypatch):
    cls = _example("Adding a check")["Shouting"]
    assert issubclass(cls, Check) and [c.name for c in cls.classes] == ["shouting"]
    monkeypatch.setitem(CHECKS, cls.name, cls)  # the one registration line
    assert CLASSES["shouting"].severity == "info"
    loud = PreferencePair(
        chosen="\n\nHuman: hi\n\nAssistant: HELLO THERE",
        rejected="\n\nHuman: hi\n\nAssistant: hi",
        subset="helpful-base",
        split="train",
        index=0,
    )
    quiet = PreferencePair(
        chosen="\n\nHuman: hi\n\nAssistant: Hello there",
        rejected="\n\nHuman: hi\n\nAssistant: hi",
        subset="helpful-base",
        split="train",
        index=1,
    )
    assert list(CHECKS["shouting"]().check(loud)) == [("shouting", "11 capitals")]
    r = run_checks([loud, quiet])
    assert r.flags[("helpful-base", "train", 0)]["shouting"] == "11 capitals"
    assert r.counts["shouting"] == 1
