"""The source distribution: the package, its data, its licence, and on purpose no tests.

Built from a copy of the checkout in ``tmp_path`` with ``python -m build --sdist
--no-isolation`` (no network: the installed setuptools builds it).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What a build reads from the checkout.
SOURCES = ["pyproject.toml", "setup.py", "README.md", "LICENSE", "MANIFEST.in", "src", "tests"]
#: Built or cached files the checkout may hold beside the sources.
BUILT = shutil.ignore_patterns(
    "*.so", "*.pyd", "__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis"
)


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> tuple[dict[str, bytes], Path]:
    """``({path inside the sdist: content}, copied checkout)``."""
    pytest.importorskip("build", reason="the build package is not installed (dev group)")
    pytest.importorskip("setuptools")
    tmp = tmp_path_factory.mktemp("sdist")
    src = tmp / "checkout"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=BUILT)
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    dist = tmp / "dist"
    run = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(dist)],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (archive,) = dist.glob("hhrlhf-*.tar.gz")
    with tarfile.open(archive) as tar:
        files = {
            m.name.split("/", 1)[1]: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
            if m.isfile()
        }
    return files, src


def test_the_sdist_holds_every_package_file(sdist):
    files, src = sdist
    package = {
        p.relative_to(src).as_posix()
        for p in (src / "src" / "hhrlhf").rglob("*")
        # .keep placeholders of empty folders are not package data
        if p.is_file() and p.suffix not in (".pyc", ".so") and not p.name.startswith(".")
    }
    assert package, "nothing copied"
    assert package <= set(files), sorted(package - set(files))
    for needed in ("src/hhrlhf/py.typed", "src/hhrlhf/_jsonl.c", "src/hhrlhf/_jsonl.pyi"):
        assert needed in files


def test_the_sdist_carries_the_mit_licence(sdist):
    files, _ = sdist
    assert files["LICENSE"] == (ROOT / "LICENSE").read_bytes()
    assert files["LICENSE"].startswith(b"MIT License")
    meta = files["PKG-INFO"].decode()
    assert "License-Expression: MIT" in meta.splitlines()
    assert "License-File: LICENSE" in meta.splitlines()


def test_the_sdist_leaves_the_tests_and_built_files_out(sdist):
    files, _ = sdist
    assert not [f for f in files if f.startswith("tests/")]
    assert not [f for f in files if f.endswith((".so", ".pyd", ".pyc"))]
