"""Docs cannot go stale: the CLI reference is regenerated and compared; every command is in it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click
import pytest

from hhrlhf.cli import cli

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location(
    "cli_reference", ROOT / "scripts" / "cli_reference.py"
)
cli_reference = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cli_reference)


def test_cli_reference_is_current():
    current = (ROOT / "docs" / "cli-reference.md").read_text()
    assert current == cli_reference.render(), "run: python scripts/cli_reference.py"


def test_cli_reference_names_the_command_hh():
    text = cli_reference.render()
    assert "Usage: hh check [OPTIONS]" in text and "Usage: hh [OPTIONS] COMMAND" in text
    assert "Usage: cli" not in text


def test_every_command_is_documented_with_an_example():
    reference = (ROOT / "docs" / "cli-reference.md").read_text()
    for path in cli_reference.walk(cli, []):
        assert f"## hh {' '.join(path)}\n" in reference
        command = cli
        for name in path:
            command = command.commands[name]
        if not isinstance(command, click.Group) or not command.commands:
            assert "Example" in (command.help or ""), f"hh {' '.join(path)} has no example"


def test_readme_mentions_every_top_level_command():
    readme = (ROOT / "README.md").read_text()
    for name in cli.commands:
        assert f"hh {name}" in readme, f"README does not mention `hh {name}`"


def test_every_project_file_the_source_cites_exists():
    """A docstring or comment that points at docs/, bench/, scripts/ or tests/ names a file that is
    there (e.g. no facts file the project does not have)."""
    import re

    cited = re.compile(r"\b(?:docs|bench|scripts|tests)/[A-Za-z0-9_./-]+\.(?:md|py)\b")
    missing = []
    for path in sorted((ROOT / "src" / "hhrlhf").rglob("*.py")):
        for name in cited.findall(path.read_text(encoding="utf-8")):
            if not (ROOT / name).is_file():
                missing.append(f"{path.relative_to(ROOT)}: {name}")
    assert not missing


def test_collect_quick_start_names_the_revision_hh_serve_migrates_to(tmp_path):
    """docs/collect.md shows `hh serve`'s first line: the revision it migrates a new database to."""
    pytest.importorskip("alembic")
    from hhrlhf.collect.db import Storage

    storage = Storage(f"sqlite:///{tmp_path / 'hh-collect.db'}")
    try:
        storage.upgrade()
        revision = storage.revision()
    finally:
        storage.dispose()
    doc = (ROOT / "docs" / "collect.md").read_text(encoding="utf-8")
    assert f"database: sqlite:///hh-collect.db (migrated to {revision})\n" in doc
