"""The scripted collection loop as a library call: the app, one conversation, an export."""

from __future__ import annotations

import gzip
import json

import pytest

from hhrlhf.errors import MissingExtraError


def test_run_scripted_collection_returns_the_turns_and_the_export(tmp_path, capsys):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    pytest.importorskip("httpx")
    from hhrlhf.collect.demo import SCRIPT, run_scripted_collection

    done = run_scripted_collection(tmp_path)
    assert done.base_url.startswith("http://127.0.0.1:")
    assert [(t.text, t.pick, t.strength, t.edit) for t in done.turns] == SCRIPT
    assert all([s for s, _ in t.candidates] == ["a", "b"] for t in done.turns)
    assert all(text for t in done.turns for _, text in t.candidates)
    assert done.target == tmp_path / "collect-export"
    manifest = json.loads((done.target / "manifest.json").read_text())
    assert done.manifest["rows"] == manifest["rows"] == len(SCRIPT) + 1
    rows = []
    for f in sorted((done.target / "helpful-base").glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            rows += [json.loads(line) for line in fh]
    assert len(rows) == manifest["rows"]
    assert capsys.readouterr() == ("", "")


def test_run_scripted_collection_without_the_web_extra_says_which(tmp_path, monkeypatch):
    import hhrlhf.collect.demo as demo

    def missing(module, extra, feature=None):
        raise MissingExtraError(extra, module, feature)

    monkeypatch.setattr(demo, "require", missing)
    with pytest.raises(MissingExtraError, match=r"hhrlhf\[web\]"):
        demo.run_scripted_collection(tmp_path)
    assert not (tmp_path / "collect-export").exists()
