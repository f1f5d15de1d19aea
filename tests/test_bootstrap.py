"""The package has one bootstrap (hhrlhf/bootstrap.py): every interval is drawn there."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

import hhrlhf
from hhrlhf.bootstrap import bootstrap_interval, bootstrap_mean

PACKAGE = Path(hhrlhf.__file__).parent


def test_no_other_module_defines_a_bootstrap():
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "bootstrap.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and "bootstrap" in node.name:
                found.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert found == []


def test_the_mean_interval_is_seeded_and_brackets_the_mean():
    pytest.importorskip("numpy")
    values = [1.0] * 60 + [0.0] * 40
    a = bootstrap_mean(values, seed=3)
    assert a == bootstrap_mean(values, seed=3)
    assert a["n"] == 100 and a["mean"] == pytest.approx(0.6)
    assert a["low"] < 0.6 < a["high"]
    assert bootstrap_mean([2.5]) == {"n": 1, "mean": 2.5, "low": 2.5, "high": 2.5}


def test_the_interval_of_any_statistic_drops_undefined_draws():
    units = [1, 2, 3, 4, 5, 6]
    lo, hi = bootstrap_interval(units, lambda xs: sum(xs) / len(xs), resamples=200, seed=1)
    assert lo <= 3.5 <= hi
    nan_when_constant = bootstrap_interval(
        [1, 1, 1], lambda xs: math.nan if len(set(xs)) == 1 else 0.0, resamples=50
    )
    assert all(math.isnan(x) for x in nan_when_constant)
