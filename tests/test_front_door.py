"""The README's set-up holds on a fresh machine: CI runs its test command exactly as written,
first, and the venv the Makefile makes has the setuptools the build asks for (Python 3.11's venv
ships setuptools 65, which rejects ``license = "MIT"``; tests/test_sdist.py builds without
isolation, with the installed one)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def _recipe(target: str) -> str:
    """The recipe lines of one Makefile rule."""
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", MAKEFILE, re.M)
    assert match, target
    return match.group(1)


def test_ci_runs_the_readmes_test_command_first_then_the_extras():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"^make test +#", readme, re.M), "the README's test command"
    steps = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    makes = [line for line in steps if line.startswith(("make ", "if ! make "))]
    assert makes == ["if ! make lint; then", "make test", "make test-extras"]


def test_a_new_venv_gets_the_setuptools_the_build_asks_for():
    (wanted,) = [r for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    assert f"'{wanted}'" in _recipe("$(BIN)/python")  # when the venv is made
    assert wanted in PYPROJECT["dependency-groups"]["dev"]  # and with the test tools


def test_test_extras_installs_and_runs_the_train_and_ray_tests():
    recipe = _recipe("test-extras")
    assert 'pytest -q -m "train or ray"' in recipe
    rule = re.search(r"^test-extras:(.*)$", MAKEFILE, re.M).group(1)
    assert "$(VENV)/.installed-train" in rule and "$(VENV)/.installed-ray" in rule
    assert "'.[ray]'" in _recipe("$(VENV)/.installed-ray")
    assert "ray" in PYPROJECT["project"]["optional-dependencies"]
    markers = [m.split(":")[0] for m in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]]
    assert {"train", "ray"} <= set(markers)
