"""The Jinja2 templates shared by the HTML outputs (the collection app, reports): autoescape on."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .errors import require

if TYPE_CHECKING:
    import jinja2
    from fastapi.templating import Jinja2Templates

__all__ = ["TEMPLATES_DIR", "environment", "jinja2_templates"]

TEMPLATES_DIR = Path(__file__).with_name("templates")


def environment(extra: str = "web", purpose: str = "HTML templates") -> jinja2.Environment:
    """A Jinja2 Environment over ``hhrlhf/templates`` that escapes every value (HTML and XML alike).

    Without Jinja2 the error names ``pip install 'hhrlhf[<extra>]'`` for ``purpose``.
    """
    j2 = require("jinja2", extra, purpose)
    env: jinja2.Environment = j2.Environment(
        loader=j2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=True,
        undefined=j2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


def jinja2_templates() -> Jinja2Templates:
    """Starlette's ``Jinja2Templates`` over the same environment (autoescape on)."""
    require("fastapi", "web", "the collection app")
    from fastapi.templating import Jinja2Templates

    return Jinja2Templates(env=environment())
