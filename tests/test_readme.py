"""The README's example sessions are the real output of today's code.

Every ```console block of README.md is replayed in a fresh folder, in order, as one shell
session in which ``hh`` is this checkout's ``python -m hhrlhf --quiet``, with stderr merged
into stdout as a terminal shows them. ``--quiet`` only removes progress output, which on a
terminal is a bar that erases itself and off a terminal holds timings.

Which commands run: a command runs when it reads ``--data sample`` or only what an earlier
command of the README wrote, and is not a ``make`` target or a ``pip install``; the others
(``hh download``, the download cache, the reader's own files) are skipped by rule, listed in
:data:`SKIP`.

How output is compared, line by line after trailing spaces are removed:

- a command shown with no output lines is run (later commands may need what it writes) but
  its output is not compared: the README claims nothing about it;
- a line that is exactly ``...`` stands for any number of lines (none included);
- ``...`` inside a line stands for any text on that line.

Nothing else is tolerated.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: Commands that are not replayed, with why.
SKIP = {
    "make": "a Makefile target (builds a virtual environment)",
    "pip install": "installs into the environment running the tests",
    "hh stats --data ~/": "the reader's own data, which the tests do not have",
    "hh show --data ~/": "the reader's own data, which the tests do not have",
    "hh download": "network",
    "hh info": "without --data it reads the download cache",
    "hh show helpful-base --sample 3 --seed 1": "without --data it reads the download cache",
    "hh serve": "starts a server that runs until it is stopped (tests/collect runs it)",
    "hh collect export": "reads the database a person filled through hh serve",
}


def console_blocks(text: str) -> list[list[tuple[str, list[str]]]]:
    """Each ```console block as [(command, shown output lines)]."""
    blocks = []
    for body in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        steps: list[tuple[str, list[str]]] = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line.rstrip())
            else:
                steps.append((line, []))  # a block of bare commands (make ...)
        blocks.append(steps)
    return blocks


def skipped(command: str) -> str | None:
    for prefix, why in SKIP.items():
        if command.startswith(prefix):
            return why
    return None


def matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` with ``...`` lines (any lines) and ``...`` in a line (any text)."""
    pattern = []
    for line in expected:
        if line == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*".join(map(re.escape, line.split("..."))) + r"\n")
    return re.fullmatch("".join(pattern), "".join(a + "\n" for a in actual)) is not None


def test_matches_rules():
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["a", "...", "d"], ["a", "d"])
    assert matches(["x ... z"], ["x y y z"])
    assert not matches(["a", "d"], ["a", "b", "d"])
    assert not matches(["a"], ["a", "b"])
    assert not matches(["x ... z"], ["x y y", "z"])


STEPS = [
    (i, cmd, shown)
    for i, block in enumerate(console_blocks(README.read_text()))
    for cmd, shown in block
]


def test_the_readme_has_sessions_to_check():
    ran = [cmd for _, cmd, shown in STEPS if not skipped(cmd) and shown]
    assert len(ran) >= 7, ran


def test_docs_pm_shows_the_readme_rerank_session():
    """docs/pm.md repeats the README's rerank session (the file it makes, the table it prints)."""
    readme = README.read_text(encoding="utf-8")
    pm = (ROOT / "docs" / "pm.md").read_text(encoding="utf-8")
    start = readme.index('$ echo \'{"id": "bread"')
    session = readme[start : readme.index("```", start)]
    assert "hh pm rerank" in session and session in pm


def test_readme_console_outputs_are_real(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "200",
        "NO_COLOR": "1",
    }
    env.pop("HH_RLHF_DATA", None)
    hh = f"{shlex.quote(sys.executable)} -m hhrlhf --quiet"
    failures = []
    for _block, command, shown in STEPS:
        if skipped(command):
            continue
        script = f'hh() {{ {hh} "$@"; }}\n{command}\n'
        proc = subprocess.run(
            ["bash", "-c", script],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=300,
        )
        actual = [line.rstrip() for line in proc.stdout.splitlines()]
        if shown and not matches(shown, actual):
            failures.append(
                f"$ {command}\n--- README\n"
                + "\n".join(shown)
                + "\n--- actual\n"
                + "\n".join(actual)
            )
    assert not failures, "\n\n".join(failures)
