"""Helpers: tiny corpora laid out like upstream, written into tmp_path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from checks_helpers import write_lines  # noqa: E402


@pytest.fixture
def corpus(tmp_path):
    """Write {"subset/split": [rows or raw lines]} as an upstream-like dir; returns its root."""

    def make(files: dict) -> Path:
        root = tmp_path / "data"
        for key, lines in files.items():
            write_lines(root / f"{key}.jsonl", lines)
        return root

    return make
