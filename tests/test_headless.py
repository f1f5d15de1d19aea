"""The page tests' browser lookup: a skip where the browser is missing, a failure in CI."""

from __future__ import annotations

import sys

import pytest

from headless import browser_missing, in_ci, need_browser


@pytest.fixture(autouse=True)
def _nothing_hidden(monkeypatch):
    """These tests are of the lookup itself: HH_TEST_HIDE (tests/parts.py) would answer first."""
    monkeypatch.delenv("HH_TEST_HIDE", raising=False)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, False), ("", False), ("0", False), ("false", False), ("true", True), ("1", True)],
)
def test_ci_is_read_from_the_environment(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert in_ci() is expected


def test_a_missing_browser_is_named(tmp_path):
    reason = browser_missing(tmp_path / "no-chromium")
    assert reason is not None
    assert str(tmp_path / "no-chromium") in reason
    assert "apt-get install -y chromium" in reason


def test_a_missing_browser_skips_outside_ci(monkeypatch, tmp_path):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
        need_browser(tmp_path / "no-chromium")


def test_a_missing_browser_fails_in_ci(monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set and chromium is missing"):
        need_browser(tmp_path / "no-chromium")


def test_a_missing_playwright_fails_in_ci(monkeypatch, tmp_path):
    chromium = tmp_path / "chromium"
    chromium.write_text("")
    monkeypatch.setitem(sys.modules, "playwright.sync_api", None)  # an import of it fails
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="playwright package is not installed"):
        need_browser(chromium)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="playwright package is not installed"):
        need_browser(chromium)
