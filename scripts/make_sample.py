"""Regenerate the bundled synthetic sample in ``src/hhrlhf/sample_data/``.

Usage: ``python scripts/make_sample.py``. The output is deterministic (seed 0), and
``tests/test_synth.py`` checks that the committed files match what this writes.
"""

from __future__ import annotations

from pathlib import Path

from hhrlhf.testing.synth import write_corpus

ROOT = Path(__file__).resolve().parents[1] / "src" / "hhrlhf" / "sample_data"


def main() -> None:
    written = write_corpus(ROOT, scale="sample", seed=0)
    total = 0
    for path, rows in written.items():
        size = (ROOT / path).stat().st_size
        total += size
        print(f"{path}: {rows} rows, {size:,} bytes")
    print(f"total: {total:,} bytes in {ROOT}")


if __name__ == "__main__":
    main()
