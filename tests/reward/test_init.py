"""Importing hhrlhf.reward imports none of the heavy extras (the package docstring's promise)."""

import subprocess
import sys

HEAVY = ("numpy", "scipy", "sklearn", "torch", "transformers", "matplotlib")


def test_import_is_free_of_heavy_dependencies():
    code = (
        "import sys, hhrlhf.reward, hhrlhf.reward.backends, hhrlhf.reward.loss\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == ""
