"""docs/collect.md cannot go stale: every config key and every API route is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from hhrlhf.collect import config  # noqa: E402

DOC = Path(__file__).resolve().parents[2] / "docs" / "collect.md"


def test_every_config_key_is_in_the_reference():
    text = DOC.read_text(encoding="utf-8")
    for key in [*config._COLLECT_KEYS, *config._BACKEND_KEYS]:
        assert f"| `{key}` |" in text, (
            f"[collect]/[[backend]] key {key!r} is not in docs/collect.md"
        )


def test_every_api_route_is_documented(tmp_path):
    from hhrlhf.collect.config import demo_settings
    from hhrlhf.collect.db import Storage
    from hhrlhf.collect.web.app import create_app

    text = re.sub(r"\{[a-z_]+\}", "{id}", DOC.read_text(encoding="utf-8"))
    url = f"sqlite:///{tmp_path / 'c.db'}"
    storage = Storage(url)
    storage.upgrade()
    try:
        app = create_app(demo_settings(url), storage=storage)
        paths = app.openapi()["paths"]
        routes = [
            (method.upper(), path)
            for path, ops in paths.items()
            if path.startswith("/api/v1/")
            for method in ops
        ]
    finally:
        storage.dispose()
    assert len(routes) >= 10
    for method, path in routes:
        documented = re.sub(r"\{[a-z_]+\}", "{id}", path)
        assert f"`{method} {documented}`" in text, f"{method} {path} is not in docs/collect.md"


def test_the_example_config_is_quoted_as_shipped():
    text = DOC.read_text(encoding="utf-8")
    example = (Path(config.__file__).with_name("example-config.toml")).read_text(encoding="utf-8")
    collect = example[
        example.index("[collect]") : example.index("\n\n", example.index("[collect]"))
    ]
    assert collect in text
