"""The "Adding a format" and "Adding a check" examples in docs/convert.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

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


README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _scale_out_blocks() -> list[str]:
    section = README.split("## Scale out\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


_HARNESS = """
import json, sys
namespace = {"__name__": "__main__"}
exec(compile(sys.stdin.read(), sys.argv[1], "exec"), namespace)
train, mine = namespace.get("train"), namespace.get("mine")
print(json.dumps({"train": getattr(train, "num_rows", None),
                  "columns": list(getattr(train, "column_names", [])),
                  "mine": getattr(mine, "num_rows", None)}))
"""


def test_scale_out_examples_run(tmp_path):
    """The README's scale-out examples run as written, in order, each as a script in a fresh
    Python (the Polars one reads the Parquet file the DuckDB one writes); one whose package is
    not installed is skipped."""
    import importlib.util
    import json
    import subprocess
    import sys

    pytest.importorskip("datasets")
    blocks = _scale_out_blocks()
    assert len(blocks) == 3
    ran = []
    for k, code in enumerate(blocks):
        modules = re.findall(r"^import (\w+)", code, re.M)
        if any(importlib.util.find_spec(m) is None for m in modules):
            continue
        done = subprocess.run(
            [sys.executable, "-c", _HARNESS, f"README.md (Scale out, example {k + 1})"],
            input=code,
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        ran.append(json.loads(done.stdout.strip().splitlines()[-1]))
    if not ran:
        pytest.skip("datasets, duckdb and polars are not installed")
    first = ran[0]
    assert first["train"] == 240 and "turns" in first["columns"]
    assert first["mine"] == 60
    if (tmp_path / "hh-train.parquet").exists():
        import pyarrow.parquet as pq

        assert pq.read_table(tmp_path / "hh-train.parquet").num_rows == 240


TRL_DOC = Path(__file__).resolve().parents[1] / "docs" / "train-with-trl.md"


def _expected_prints(code: str) -> list[str]:
    """What a block says it prints: ``print(...)  # OUT``, or ``print(...)`` then ``# OUT``."""
    lines = code.splitlines()
    out = []
    for i, line in enumerate(lines):
        if not line.startswith("print("):
            continue
        m = re.search(r"\)\s+# (.+)$", line)
        if m:
            out.append(m.group(1))
        elif i + 1 < len(lines) and lines[i + 1].startswith("# "):
            out.append(lines[i + 1][2:])
    return out


@pytest.mark.train
def test_train_with_trl_examples_run(tmp_path):
    """Every Python block of docs/train-with-trl.md runs as written against the sample, in
    order, each in a fresh Python in one folder, and prints what its comments say it prints.
    They train TRL's DPOTrainer and RewardTrainer with the tiny local model: [train] extra."""
    import importlib.util
    import subprocess
    import sys

    missing = [m for m in ("torch", "transformers", "trl", "datasets", "tokenizers")
               if importlib.util.find_spec(m) is None]  # fmt: skip
    if missing:
        pytest.skip(f"needs the [train] extra (missing: {', '.join(missing)})")
    blocks = re.findall(r"```python\n(.*?)```", TRL_DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 3
    for k, code in enumerate(blocks):
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=600,
        )
        assert done.returncode == 0, f"block {k + 1}: {done.stderr[-3000:]}"
        printed = [line.strip() for line in done.stdout.splitlines()]
        expected = _expected_prints(code)
        assert expected, f"block {k + 1} says nothing it prints"
        for line in expected:
            assert line in printed, f"block {k + 1} did not print {line!r}: {printed}"
    assert (tmp_path / "tiny-rm" / "config.json").is_file()  # hh pm train's --base-model
