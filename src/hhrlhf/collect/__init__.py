"""The collection app (``hh serve``): two live responses per turn, continue with the pick, export.

Needs the ``[web]`` extra. ``import hhrlhf.collect`` stays light; the web parts load on use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .config import BackendConfig, Settings, default_db_url, demo_settings, load_config

if TYPE_CHECKING:  # loaded on use (:func:`__getattr__`): they need the [web] extra
    from .db import Storage
    from .services.export import export_collection
    from .web.app import create_app

__all__ = [
    "BackendConfig",
    "Settings",
    "create_app",
    "default_db_url",
    "demo_settings",
    "export_collection",
    "load_config",
    "Storage",
]


def __getattr__(name: str) -> object:
    if name == "create_app":
        from .web.app import create_app

        return create_app
    if name == "Storage":
        from .db import Storage

        return Storage
    if name == "export_collection":
        from .services.export import export_collection

        return export_collection
    raise AttributeError(name)
