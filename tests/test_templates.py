"""The shared Jinja2 environment escapes every value."""

from __future__ import annotations

import pytest

pytest.importorskip("jinja2")


def test_templates_escape_by_default():
    from hhrlhf.templates import environment

    out = environment().from_string("<p>{{ x }}</p>").render(x="<script>alert(1)</script>")
    assert out == "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"
