"""`hh demo`'s collection step: the app on loopback, one scripted conversation, an export that loads."""

from __future__ import annotations

import gzip
import json

import pytest

from hhrlhf.errors import MissingExtraError


def test_demo_step_runs_a_conversation_and_exports_it(tmp_path, capsys):
    pytest.importorskip("fastapi")
    pytest.importorskip("uvicorn")
    pytest.importorskip("httpx")
    from hhrlhf.cli.collect_demo import demo_step
    from hhrlhf.collect.demo import SCRIPT

    demo_step("sample", tmp_path)
    out = capsys.readouterr().out
    assert "the app is up at http://127.0.0.1:" in out
    assert "hh serve --demo" in out
    assert "browse the sample: hh serve --demo --data sample" in out
    manifest = json.loads((tmp_path / "collect-export" / "manifest.json").read_text())
    # every scripted choice is at or above the default --min-strength 2; one is edited
    assert manifest["comparisons"] == {"pick": len(SCRIPT), "edit": 1}
    rows = []
    for f in sorted((tmp_path / "collect-export" / "helpful-base").glob("*.jsonl.gz")):
        with gzip.open(f, "rt", encoding="utf-8") as fh:
            rows += [json.loads(line) for line in fh]
    assert len(rows) == len(SCRIPT) + 1
    edited = next(e for *_, e in SCRIPT if e)
    assert sum(r["chosen"].endswith("\n\nAssistant: " + edited) for r in rows) == 1
    assert all(r["chosen"].count("\n\nHuman: ") in (1, 2) for r in rows)
    # a second run replaces its own earlier export
    demo_step("sample", tmp_path)
    assert "exported 3 comparisons" in capsys.readouterr().out


def test_demo_step_without_the_web_extra_names_the_install(tmp_path, monkeypatch, capsys):
    import hhrlhf.collect.demo as step
    from hhrlhf.cli.demo import _optional

    def missing(module, extra, feature=None):
        raise MissingExtraError(extra, module, feature)

    monkeypatch.setattr(step, "require", missing)
    _optional("sample", tmp_path, "collect_demo", "web")
    out = capsys.readouterr().out
    assert out.startswith("skipped: ") and "hhrlhf[web]" in out
    assert not (tmp_path / "collect-export").exists()
