"""Every ```python block of README.md and docs/*.md runs as written, imports and ``data=``
included: each in a fresh Python, in order, in one working folder per page (a block may read
what an earlier block of its page wrote), against the bundled sample.

A block that imports a package not installed here is skipped, saying which (a visible skip,
never a silent one); so is one whose hhrlhf extra is missing (a ``MissingExtraError``). A block
that imports torch, transformers, TRL or Ray carries the ``train`` or ``ray`` marker, so
``make test-extras`` runs it with those installed. A few blocks' results are checked too
(:data:`EXPECT`).
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


#: A block importing one of these carries that extra's marker: ``make test-extras`` runs it.
EXTRA_MARKERS = {"torch": "train", "transformers": "train", "trl": "train", "ray": "ray"}


def _markers(code: str) -> list[pytest.MarkDecorator]:
    modules = re.findall(r"^\s*(?:import|from)\s+([\w.]+)", code, re.M)
    names = {EXTRA_MARKERS[part] for m in modules for part in m.split(".") if part in EXTRA_MARKERS}
    return [getattr(pytest.mark, name) for name in sorted(names)]


def _blocks() -> list:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT).as_posix()
        for k, code in enumerate(re.findall(r"```python\n(.*?)```", text, re.S), 1):
            found.append(pytest.param(name, k, code, marks=_markers(code), id=f"{name}#{k}"))
    return found


BLOCKS = _blocks()

#: Blocks that read what an earlier block of their page writes: (page, block) -> that block.
AFTER = {("README.md", 5): 4}  # Polars reads the Parquet file the DuckDB example writes
#: What a block needs that its page says comes from elsewhere, run before it.
MIGRATE = 'from hhrlhf.collect import Storage\nStorage("sqlite:///hh-collect.db").upgrade()'
#: The flags and the export with margins that docs/pm.md's TRL example names ("hh pm flag ...").
FLAGGED_EXPORT = """import subprocess, sys
hh = [sys.executable, "-m", "hhrlhf", "-q"]
subprocess.run([*hh, "pm", "flag", "harmless-base", "--data", "sample", "--out", "flags.jsonl"], check=True)
subprocess.run([*hh, "export", "harmless-base", "--split", "train", "--format", "trl-standard",
                "--hf", "hh-trl", "--margins", "flags.jsonl", "--data", "sample"], check=True)
"""
#: Blocks that are scripts taking arguments, run with them by a test of their own.
SCRIPTS = {
    ("docs/scale-out.md", 1): "tests/test_ray.py runs this script (DATA MODEL OUT) itself",
    ("docs/collect.md", 1): "tests/collect/test_campaign.py runs it on SQLite and PostgreSQL",
}
SETUP = {
    ("docs/collect.md", 2): MIGRATE,
    ("docs/pm.md", 3): FLAGGED_EXPORT,
}  # "the database hh serve filled": hh serve migrates it
#: Results checked after a block: (page, block) -> (an expression in its namespace, its value).
EXPECT = {
    ("README.md", 3): ("(train.num_rows, mine.num_rows, 'turns' in train.column_names)", [240, 60, True]),
    ("README.md", 4): ("""duckdb.sql("SELECT count(*) FROM 'hh-train.parquet'").fetchall()[0][0]""", 240),
    ("docs/convert.md", 3): ("(len(back), row['prompt'] + row['chosen'] == test[0].chosen)", [20, True]),
    ("docs/convert.md", 4): ("dd['train'].column_names", ["prompt", "chosen", "rejected"]),
    ("docs/redteam.md", 1): ("len(rows)", 13),
}  # fmt: skip

_HARNESS = """
import json, sys
setup, code, expect = json.loads(sys.stdin.read())
if setup:
    exec(setup, {"__name__": "__setup__"})
namespace = {"__name__": "__main__"}
exec(compile(code, sys.argv[1], "exec"), namespace)
print("\\n" + json.dumps(eval(expect, namespace) if expect else None))
"""


def _not_installed(code: str) -> list[str]:
    names = re.findall(r"^\s*(?:import|from)\s+(\w+)", code, re.M)
    return sorted({n for n in names if importlib.util.find_spec(n) is None})


def test_every_page_with_python_is_found():
    blocks = {(param.values[0], param.values[1]) for param in BLOCKS}
    assert {"README.md", "docs/convert.md", "docs/pm.md", "docs/redteam.md"} <= {
        p for p, _ in blocks
    }
    for key in (*AFTER, *SETUP, *EXPECT, *SCRIPTS):
        assert key in blocks, key


def test_a_block_of_a_heavy_extra_carries_its_marker():
    assert [m.name for m in _markers("import hhrlhf\nfrom trl import DPOTrainer\n")] == ["train"]
    assert [m.name for m in _markers("from hhrlhf.integrations.ray import x\n")] == ["ray"]
    assert _markers("import datasets\n") == []


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """One working folder per page (``tests/`` linked in: a block may read tests/data), and
    which blocks ran."""
    made: dict[str, Path] = {}

    def folder(page: str) -> Path:
        if page not in made:
            made[page] = tmp_path_factory.mktemp(page.replace("/", "-"))
            (made[page] / "tests").symlink_to(ROOT / "tests")
        return made[page]

    return folder, set()


@pytest.mark.parametrize(("page", "k", "code"), BLOCKS)
def test_the_block_runs_as_written(folders, page, k, code):
    folder, ran = folders
    if (page, k) in SCRIPTS:
        pytest.skip(f"{page} block {k} is run by its own test: {SCRIPTS[page, k]}")
    missing = _not_installed(code)
    if missing:
        pytest.skip(f"{page} block {k} imports {', '.join(missing)}, not installed here")
    before = AFTER.get((page, k))
    if before is not None and (page, before) not in ran:
        pytest.skip(f"{page} block {k} reads what block {before} writes, which did not run")
    expect = EXPECT.get((page, k))
    done = subprocess.run(
        [sys.executable, "-c", _HARNESS, f"{page} (block {k})"],
        input=json.dumps([SETUP.get((page, k)), code, expect[0] if expect else None]),
        capture_output=True,
        text=True,
        cwd=folder(page),
        timeout=300,
    )
    if done.returncode != 0 and "MissingExtraError" in done.stderr:
        pytest.skip(f"{page} block {k}: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    ran.add((page, k))
    if expect is not None:
        assert json.loads(done.stdout.strip().splitlines()[-1]) == expect[1]
