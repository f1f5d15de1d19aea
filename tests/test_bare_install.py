"""The core works without any extra, and each extra's absence is one clear line naming it.

The extras are hidden from a child interpreter by an import hook, so this runs the code a
bare ``pip install hhrlhf`` would run, on the bundled sample.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BATTLES = Path(__file__).parent / "data" / "battles.jsonl"
HEAVY = [
    "numpy",
    "scipy",
    "sklearn",
    "matplotlib",
    "pandas",
    "pyarrow",
    "datasets",
    "datasketch",
    "torch",
    "transformers",
    "trl",
]

RUNNER = textwrap.dedent(
    """
    import sys
    HEAVY = set(sys.argv[1].split(","))

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in HEAVY:
                raise ImportError(f"No module named {name!r} (hidden by the test)")
            return None

    sys.meta_path.insert(0, Block())
    from hhrlhf.cli import main
    main(sys.argv[2:])
    """
)


def hh(*args):
    return subprocess.run(
        [sys.executable, "-c", RUNNER, ",".join(HEAVY), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["info", "--data", "sample"],
        ["stats", "--data", "sample"],
        ["show", "harmless-base", "--split", "test", "--index", "0", "--data", "sample"],
        [
            "export",
            "--format",
            "dpo",
            "--split",
            "test",
            "--out",
            "{tmp}/x.jsonl",
            "--data",
            "sample",
        ],
        ["check", "--data", "sample", "--no-near-dups", "--fail-on", "none"],
    ],
    ids=lambda a: a[0],
)
def test_core_commands_need_no_extra(args, tmp_path):
    result = hh(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "args, extra",
    [
        (["redteam", "report", "--data", "sample", "--out", "{tmp}/r"], "report"),
        (["pm", "train", "--data", "sample", "--out", "{tmp}/m"], "reward"),
        (["stats", "--data", "sample", "--plots", "{tmp}/p"], "plots"),
        (["export", "--format", "dpo", "--out", "{tmp}/x.parquet", "--data", "sample"], "hf"),
        (["collect", "leaderboard", "--battles", str(BATTLES)], "web"),
    ],
    ids=lambda a: a[0] if isinstance(a, list) else a,
)
def test_missing_extra_is_one_line_naming_the_install(args, extra, tmp_path):
    result = hh(*[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"pip install 'hhrlhf[{extra}]'" in result.stderr
    assert "Traceback" not in result.stderr
