"""The one rule for optional system parts (tests/parts.py): a skip where one is missing, a
failure where the environment demands it, and no test that reaches a part around it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from parts import PARTS, missing, need

ROOT = Path(__file__).resolve().parents[1]
#: The modules that find and start the parts (and the tests of the lookups themselves); every
#: other test goes through tests/parts.py.
HELPERS = {"parts.py", "pgserver.py", "pgbouncer.py", "headless.py", "axe.py", "conftest.py"}
HELPERS |= {"test_parts.py", "test_headless.py"}


@pytest.fixture
def bare(monkeypatch):
    for variable in ("CI", "HH_REQUIRE_POSTGRES", "HH_TEST_HIDE"):
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


@pytest.mark.parametrize("part", sorted(PARTS))
def test_a_hidden_part_skips_the_test_naming_it(bare, part):
    bare.setenv("HH_TEST_HIDE", f"something-else, {part}")
    assert missing(part) == f"{part} is hidden by HH_TEST_HIDE"
    with pytest.raises(pytest.skip.Exception, match=f"{part} is hidden"):
        need(part)


@pytest.mark.parametrize(
    ("part", "variable"),
    [("postgresql", "HH_REQUIRE_POSTGRES"), ("pgbouncer", "HH_REQUIRE_POSTGRES"),
     ("chromium", "CI"), ("axe", "CI")],
)  # fmt: skip
def test_a_missing_part_fails_where_it_is_demanded(bare, part, variable):
    bare.setenv("HH_TEST_HIDE", part)
    bare.setenv(variable, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{variable} is set and {part} is missing"):
        need(part)


def test_a_part_that_is_there_is_used(bare):
    need("postgresql", lambda: None)  # nothing raised: the test goes on


def test_no_test_reaches_a_part_around_the_rule():
    """Starting a server, a pooler or a browser, or deciding a skip, happens in the helpers."""
    around = re.compile(
        r"PgBouncer\(|PostgresServer\(|find_pgbouncer\(|find_bindir\(|browser_missing\(|"
        r"axe_missing\(|SKIP_REASON\)|/usr/bin/chromium"
    )
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path.name not in HELPERS
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if around.search(line)
    ]
    assert not found, found


def test_the_pgbouncer_tests_skip_on_a_machine_without_it():
    """Both PgBouncer tests, run as on a machine without the package: skipped, not errors."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HH_REQUIRE_POSTGRES")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         str(ROOT / "tests" / "collect" / "test_pgbouncer.py")],
        env={**env, "HH_TEST_HIDE": "pgbouncer"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 skipped" in run.stdout, run.stdout
    assert "pgbouncer is hidden by HH_TEST_HIDE" in run.stdout, run.stdout
