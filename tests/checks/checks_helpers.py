"""Transcript and corpus helpers for the check tests (imported through conftest's sys.path)."""

from __future__ import annotations

import json
from pathlib import Path


def t(*turns: str) -> str:
    """A transcript from alternating texts: t("hi", "hello") -> Human hi, Assistant hello."""
    roles = ("Human", "Assistant")
    return "".join(f"\n\n{roles[i % 2]}: {x}" for i, x in enumerate(turns))


def pair(prompt: tuple, chosen: str, rejected: str) -> dict:
    return {"chosen": t(*prompt, chosen), "rejected": t(*prompt, rejected)}


def write_lines(path: Path, lines: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    return path
