"""hhrlhf.integrations and streaming without their extras: a clear error naming the install."""

from __future__ import annotations

import importlib
import sys

import pytest

import hhrlhf.integrations
from hhrlhf.errors import MissingExtraError


def test_the_ray_module_without_ray_names_the_extra(monkeypatch):
    for name in ("ray", "ray.data"):
        monkeypatch.setitem(sys.modules, name, None)  # import ray fails, as when not installed
    monkeypatch.delitem(sys.modules, "hhrlhf.integrations.ray", raising=False)
    with pytest.raises(MissingExtraError, match=r"pip install 'hhrlhf\[ray\]'") as raised:
        importlib.import_module("hhrlhf.integrations.ray")
    assert raised.value.extra == "ray"
    assert "hhrlhf.integrations.ray" in str(raised.value)


def test_the_package_imports_no_engine():
    assert hhrlhf.integrations.__doc__
    code = "import sys, hhrlhf.integrations; print('ray' in sys.modules)"
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_streaming_without_datasets_names_the_extra(monkeypatch):
    import hhrlhf

    monkeypatch.setitem(sys.modules, "datasets", None)  # as when not installed
    with pytest.raises(MissingExtraError, match=r"pip install 'hhrlhf\[hf\]'"):
        hhrlhf.load_dataset(data="sample", streaming=True)
