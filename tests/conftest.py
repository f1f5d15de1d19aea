"""Fixtures shared by the whole test tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from hhrlhf.dataset import SAMPLE_DIR


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    """The bundled sample (tests/test_synth.py proves it is what the generator writes)."""
    return SAMPLE_DIR
