"""Fixtures: the sample's pairs and attempts (`sample_dir` is in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent.parent / "data" / "convert"


@pytest.fixture(scope="session")
def sample_pairs(sample_dir):
    import hhrlhf

    ds = hhrlhf.load_dataset(data=sample_dir)
    return list(ds["train"]) + list(ds["test"])


@pytest.fixture(scope="session")
def sample_attempts(sample_dir):
    import hhrlhf

    return list(hhrlhf.load_dataset("red-team-attempts", data=sample_dir, split="train"))
