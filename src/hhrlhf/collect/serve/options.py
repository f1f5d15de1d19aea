"""What ``hh serve`` hands every worker process: :class:`ServeOptions`, written to the
``HH_COLLECT_*`` environment by the command and read back by each worker.

The workers are separate processes (spawned, or uvicorn's own), started by an import string:
the environment is how they learn the options. Each variable's name and type are said once,
by the field that holds it (its ``env`` metadata and its annotation), and
:meth:`ServeOptions.environ` and :meth:`ServeOptions.from_env` are each other's inverse.
"""

from __future__ import annotations

import os
import typing
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ...errors import HHError
from ..config import DB_ENV, Settings, default_db_url, demo_settings, load_config

__all__ = ["ServeOptions", "HEADER_TIMEOUT", "MAX_CONNECTIONS"]

#: seconds a connection has to send a request's complete headers (``--header-timeout``)
HEADER_TIMEOUT = 20.0
#: open connections per worker before the oldest one still waiting for headers is closed
MAX_CONNECTIONS = 1000


def _env(name: str) -> dict[str, str]:
    return {"env": name}


@dataclass(frozen=True)
class ServeOptions:
    """The options every worker of one ``hh serve`` shares (the rest, host and port, are
    uvicorn's own)."""

    #: the database, as the command resolved it (``--db``, ``$HH_COLLECT_DB``, the default)
    db_url: str = field(default_factory=default_db_url, metadata=_env(DB_ENV))
    #: the TOML config, an absolute path; None: the demo backends
    config: str | None = field(default=None, metadata=_env("HH_COLLECT_CONFIG"))
    #: demo backends only: seconds per word
    demo_delay: float = field(default=0.0, metadata=_env("HH_COLLECT_DEMO_DELAY"))
    #: HH data to browse at /data (an absolute path, "sample" or "cache"); None: none
    data: str | None = field(default=None, metadata=_env("HH_COLLECT_DATA"))
    #: trusted proxies, as ``--forwarded-allow-ips`` (None: the config's)
    forwarded_allow_ips: str | None = field(
        default=None, metadata=_env("HH_COLLECT_FORWARDED_ALLOW_IPS")
    )
    #: send Strict-Transport-Security
    hsts: bool = field(default=False, metadata=_env("HH_COLLECT_HSTS"))
    header_timeout: float = field(
        default=HEADER_TIMEOUT, metadata=_env("HH_COLLECT_HEADER_TIMEOUT")
    )
    max_connections: int = field(
        default=MAX_CONNECTIONS, metadata=_env("HH_COLLECT_MAX_CONNECTIONS")
    )
    #: worker processes (each takes its share of the host's database connections)
    workers: int = field(default=1, metadata=_env("HH_COLLECT_WORKERS"))

    @staticmethod
    def variables() -> dict[str, str]:
        """``{field name: environment variable}``, for every field."""
        return {f.name: f.metadata["env"] for f in fields(ServeOptions)}

    def environ(self) -> dict[str, str | None]:
        """Each variable's text; None for a field that is None (the variable is removed)."""
        out: dict[str, str | None] = {}
        for name, var in self.variables().items():
            value = getattr(self, name)
            if value is None:
                out[var] = None
            elif isinstance(value, bool):
                out[var] = "1" if value else "0"
            else:
                out[var] = str(value)
        return out

    def export(self, environ: MutableMapping[str, str] = os.environ) -> None:
        """Write :meth:`environ` into ``environ`` (the process's own: the workers inherit it),
        removing the variables of fields that are None, so nothing from before is read back."""
        for var, text in self.environ().items():
            if text is None:
                environ.pop(var, None)
            else:
                environ[var] = text

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> ServeOptions:
        """The options :meth:`export` wrote; an unset variable (or an empty number) is its
        field's default. A value of the wrong type is an error naming the variable."""
        types = typing.get_type_hints(cls)
        found: dict[str, Any] = {}
        for f in fields(cls):
            var = f.metadata["env"]
            text = environ.get(var)
            if text is None:
                continue
            kind = types[f.name]
            if kind in (str, str | None):
                found[f.name] = text
            elif text.strip():
                found[f.name] = _parse(var, text, kind)
        return cls(**found)

    def settings(self) -> Settings:
        """The app's settings: the config (or the demo's), with the command's options."""
        if self.config:
            settings = load_config(self.config, db_url=self.db_url)
        else:
            settings = demo_settings(self.db_url, token_delay=self.demo_delay)
        if self.data:
            settings = replace(settings, data=self.data)
        if self.forwarded_allow_ips is not None:
            settings = replace(settings, forwarded_allow_ips=self.forwarded_allow_ips)
        if self.hsts:
            settings = replace(settings, hsts=True)
        return settings


def _parse(var: str, text: str, kind: object) -> bool | int | float:
    if kind is bool:
        if text in ("0", "1"):
            return text == "1"
        raise HHError(f"${var}: expected 0 or 1, got {text!r}")
    try:
        return int(text) if kind is int else float(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise HHError(f"${var}: expected {what}, got {text!r}") from None
