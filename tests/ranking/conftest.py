"""The ranking tests import their simulator (sim.py) as a top-level module."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
