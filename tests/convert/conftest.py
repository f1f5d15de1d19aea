"""Fixtures: the bundled sample (or the same sample written by hhrlhf.synth while it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent.parent / "data" / "convert"


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory) -> Path:
    from hhrlhf.dataset import SAMPLE_DIR

    if (SAMPLE_DIR / "harmless-base").is_dir():
        return SAMPLE_DIR
    from hhrlhf.synth import write_corpus

    root = tmp_path_factory.mktemp("sample")
    write_corpus(root, scale="sample")
    return root


@pytest.fixture(scope="session")
def sample_pairs(sample_dir):
    import hhrlhf

    ds = hhrlhf.load_dataset(data=sample_dir)
    return list(ds["train"]) + list(ds["test"])


@pytest.fixture(scope="session")
def sample_attempts(sample_dir):
    import hhrlhf

    return list(hhrlhf.load_dataset("red-team-attempts", data=sample_dir, split="train"))
