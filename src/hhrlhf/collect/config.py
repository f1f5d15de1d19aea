"""The collection app's settings: a TOML file (see ``example-config.toml``) or the demo defaults."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, HHError, UnknownNameError, require
from .generation.kinds import BACKEND_KINDS
from .generation.protocol import BackendConfig

__all__ = [
    "BackendConfig",
    "Settings",
    "load_config",
    "check_model_folders",
    "demo_settings",
    "default_db_url",
    "DB_ENV",
    "EXAMPLE_CONFIG",
]

EXAMPLE_CONFIG = Path(__file__).with_name("example-config.toml")
PAIRINGS = ("random", "fixed")
CONTINUE = ("picked", "other")
#: which review a reviewer is given next (docs/collect.md, "Review and agreement")
REVIEW_ORDERS = ("fewest_reviews", "flagged")


#: the environment variable naming the database (``--db``'s default; ``hh serve`` sets it for
#: its workers)
DB_ENV = "HH_COLLECT_DB"


def default_db_url() -> str:
    """``$HH_COLLECT_DB``, else ``sqlite:///hh-collect.db`` in the current folder."""
    return os.environ.get(DB_ENV) or "sqlite:///hh-collect.db"


@dataclass(frozen=True)
class Settings:
    """Everything :func:`hhrlhf.collect.create_app` needs."""

    db_url: str = field(default_factory=default_db_url)
    backends: tuple[BackendConfig, ...] = ()
    strength_points: int = 4
    pairing: str = "random"
    red_team_continue: str = "picked"
    #: share of finished comparisons re-shown, blind, to other annotators (0 = no reviews)
    review_fraction: float = 0.1
    #: which review comes next: "fewest_reviews" (fewest reviews so far, then the oldest) or
    #: "flagged" (the comparisons hh collect flag doubts first, then the same)
    review_order: str = "fewest_reviews"
    #: share of review tasks that are gold comparisons (``hh collect gold import``), once a
    #: reviewer has passed the qualification round (no gold imported: no effect)
    gold_fraction: float = 0.05
    #: a new annotator's first reviews are this many gold comparisons; their collected data
    #: counts (export, leaderboard, agreement) only once they pass (0: no qualification round)
    qualification_reviews: int = 0
    #: the share of those gold reviews an annotator must get right to pass
    qualification_threshold: float = 0.8
    #: how often each worker reads the live backend states (paused, weights) set in /admin
    #: or by ``hh collect backend``: a change reaches every worker within this many seconds
    backend_refresh_seconds: float = 2.0
    session_hours: float = 24 * 14
    lease_seconds: float = 30.0
    #: PostgreSQL connections one ``hh serve`` host may hold, its workers sharing them equally
    db_connections: int = 40
    #: a response whose backend failed it this many times is retried with another backend
    #: (drawn by weight among the others; helpful conversations only; 0: never)
    retry_switch_after: int = 2
    max_message_chars: int = 20_000
    max_task_chars: int = 5_000
    max_edit_chars: int = 20_000
    max_comment_chars: int = 5_000
    #: a model's reply is cut (``cut``) at this many characters: a server that ignores
    #: ``max_tokens`` cannot fill the database; equal to ``max_edit_chars``, so every reply
    #: can be edited and saved
    max_response_chars: int = 20_000
    #: a model's reply still being written this many seconds after it was asked for is cut
    #: there (``cut``, rateable): a steady stream is never thrown away
    max_response_seconds: float = 300.0
    max_body_bytes: int = 256 * 1024
    rate_login_per_minute: int = 20
    rate_writes_per_minute: int = 600
    #: authenticated GETs per annotator per minute (a whole conversation counts as one more
    #: per 2,000 characters of its text)
    rate_reads_per_minute: int = 1200
    #: characters of markdown one worker renders for one annotator per minute; past it a
    #: text shows as plain text until the minute has room (the CPU one annotator can take)
    render_chars_per_minute: int = 100_000
    #: proxies whose X-Forwarded-For / -Proto are believed (uvicorn's --forwarded-allow-ips:
    #: comma-separated addresses or networks, "*" for any; "" for none)
    forwarded_allow_ips: str = "127.0.0.1"
    #: send Strict-Transport-Security (only behind TLS: browsers then refuse plain http)
    hsts: bool = False
    seed: int | None = None
    demo: bool = False
    #: HH data to browse at /data (a folder, a file, "sample"); None: no data section
    data: str | None = None

    def backend(self, name: str) -> BackendConfig:
        for b in self.backends:
            if b.name == name:
                return b
        raise UnknownNameError("backend", name, self.backend_names)

    @property
    def backend_names(self) -> list[str]:
        return [b.name for b in self.backends]

    def backend_weights(self, names: list[str]) -> list[float]:
        """The ``weight`` of each named backend (its share of the draw)."""
        return [self.backend(n).weight for n in names]

    @property
    def drawn_backend_names(self) -> list[str]:
        """The backends conversations draw from: all but those only sampled by a rerank one."""
        bases = {b.base for b in self.backends if b.kind == "rerank"}
        return [b.name for b in self.backends if b.name not in bases]


def demo_settings(db_url: str | None = None, *, token_delay: float = 0.0) -> Settings:
    """Two demo backends answering on the human's topic from a template: no model, no network."""
    backends = (
        BackendConfig("demo-a", "demo", model="sample", variant=0, token_delay=token_delay),
        BackendConfig("demo-b", "demo", model="sample", variant=1, token_delay=token_delay),
    )
    return Settings(db_url=db_url or default_db_url(), backends=backends, demo=True)


def _toml_loads(text: str) -> dict[str, Any]:
    """The TOML document ``text`` (the standard library's reader, or tomli before 3.11)."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)
    tomli = require("tomli", "web", "reading the collection config")
    doc: dict[str, Any] = tomli.loads(text)
    return doc


#: a key of a table -> the type(s) its value may have
KeyTypes = dict[str, type | tuple[type, ...]]

_COLLECT_KEYS: KeyTypes = {
    "strength_points": int,
    "pairing": str,
    "red_team_continue": str,
    "review_fraction": (int, float),
    "review_order": str,
    "gold_fraction": (int, float),
    "qualification_reviews": int,
    "qualification_threshold": (int, float),
    "backend_refresh_seconds": (int, float),
    "session_hours": (int, float),
    "lease_seconds": (int, float),
    "retry_switch_after": int,
    "db_connections": int,
    "max_message_chars": int,
    "max_task_chars": int,
    "max_edit_chars": int,
    "max_comment_chars": int,
    "max_response_chars": int,
    "max_response_seconds": (int, float),
    "max_body_bytes": int,
    "rate_login_per_minute": int,
    "rate_writes_per_minute": int,
    "rate_reads_per_minute": int,
    "render_chars_per_minute": int,
    "forwarded_allow_ips": str,
    "hsts": bool,
    "seed": int,
    "db": str,
}
_BACKEND_KEYS: KeyTypes = {
    "name": str,
    "kind": str,
    "model": str,
    "base_url": str,
    "api_key_env": str,
    "temperature": (int, float),
    "top_p": (int, float),
    "max_tokens": int,
    "timeout": (int, float),
    "idle_timeout": (int, float),
    "model_type": str,
    "num_params": str,
    "variant": int,
    "token_delay": (int, float),
    "base": str,
    "k": int,
    "pm": str,
    "red_team_pm": str,
    "concurrency": int,
    "weight": (int, float),
}


def _check_table(path: Path, where: str, table: dict[str, Any], keys: KeyTypes) -> None:
    for key, value in table.items():
        if key not in keys:
            raise ConfigError(
                path, f"{where}: unknown key {key!r}; expected one of: {', '.join(keys)}"
            )
        if keys[key] is bool:
            if not isinstance(value, bool):
                raise ConfigError(path, f"{where}: {key} must be true or false")
        elif not isinstance(value, keys[key]) or isinstance(value, bool):
            raise ConfigError(path, f"{where}: {key} has the wrong type ({type(value).__name__})")


def load_config(path: str | os.PathLike[str], *, db_url: str | None = None) -> Settings:
    """Read a TOML config file (``[collect]`` and ``[[backend]]`` tables) into :class:`Settings`.

    ``db_url`` (``--db``) wins over the file's ``collect.db``, which wins over the default.
    """
    path = Path(path)
    doc = _read_toml(path)
    unknown = set(doc) - {"collect", "backend"}
    if unknown:
        raise ConfigError(path, f"unknown table(s): {', '.join(sorted(unknown))}")
    collect = doc.get("collect", {})
    _check_table(path, "[collect]", collect, _COLLECT_KEYS)
    backends = _backends(path, doc.get("backend", []))
    settings = dict(collect)
    file_db = settings.pop("db", None)
    _check_collect(path, settings)
    return Settings(
        db_url=db_url or file_db or default_db_url(), backends=tuple(backends), **settings
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(path, f"cannot read the config: {exc.strerror or exc}") from exc
    try:
        doc = _toml_loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(path, f"not valid TOML: {exc}") from exc
    return doc


def _backends(path: Path, tables: list[dict[str, Any]]) -> list[BackendConfig]:
    """The ``[[backend]]`` tables, each checked, then checked together."""
    backends = [_backend(path, f"[[backend]] #{i}", table) for i, table in enumerate(tables, 1)]
    if not backends:
        raise ConfigError(path, "no [[backend]] table; at least one is needed")
    for b in backends:
        if not b.weight > 0:
            raise ConfigError(path, f"backend {b.name!r}: weight must be above 0")
        if not (b.timeout > 0 and b.idle_seconds > 0):
            raise ConfigError(path, f"backend {b.name!r}: timeout and idle_timeout must be above 0")
    names = [b.name for b in backends]
    if len(set(names)) != len(names):
        raise ConfigError(path, "backend names must be unique")
    for b in backends:
        if b.kind == "rerank":
            base = next((x for x in backends if x.name == b.base), None)
            if base is None or base.kind == "rerank":
                raise ConfigError(
                    path,
                    f"backend {b.name!r}: base {b.base!r} must name another, non-rerank backend",
                )
    return backends


def _backend(path: Path, where: str, table: dict[str, Any]) -> BackendConfig:
    """One ``[[backend]]`` table: its keys, its kind and what that kind needs."""
    _check_table(path, where, table, _BACKEND_KEYS)
    for key in ("name", "kind"):
        if key not in table:
            raise ConfigError(path, f"{where}: missing {key!r}")
    kind = BACKEND_KINDS.get(table["kind"])
    if kind is None:
        raise ConfigError(
            path,
            f"{where}: kind {table['kind']!r}; expected one of: {', '.join(BACKEND_KINDS)}",
        )
    for key in kind.required:
        if key not in table:
            raise ConfigError(path, f"{where} ({table['name']}): missing {key!r}")
    if kind.name == "rerank" and (
        not 2 <= table.get("k", 16) <= 256 or table.get("concurrency", 4) < 1
    ):
        raise ConfigError(
            path, f"{where} ({table['name']}): k must be 2 to 256, concurrency at least 1"
        )
    return BackendConfig(**table)


def _check_collect(path: Path, settings: dict[str, Any]) -> None:
    """The ``[collect]`` values' ranges (their types are checked already)."""
    if not settings.get("lease_seconds", 30.0) > 0:
        raise ConfigError(path, "lease_seconds must be above 0")
    if settings.get("db_connections", 40) < 2:
        raise ConfigError(path, "db_connections must be at least 2")
    if settings.get("retry_switch_after", 2) < 0:
        raise ConfigError(path, "retry_switch_after must be 0 (never) or more")
    if settings.get("pairing", "random") not in PAIRINGS:
        raise ConfigError(path, f"pairing must be one of: {', '.join(PAIRINGS)}")
    if settings.get("red_team_continue", "picked") not in CONTINUE:
        raise ConfigError(path, f"red_team_continue must be one of: {', '.join(CONTINUE)}")
    if not 0 <= settings.get("review_fraction", 0.1) <= 1:
        raise ConfigError(path, "review_fraction must be between 0 and 1")
    if settings.get("review_order", "fewest_reviews") not in REVIEW_ORDERS:
        raise ConfigError(path, f"review_order must be one of: {', '.join(REVIEW_ORDERS)}")
    if not 0 <= settings.get("gold_fraction", 0.05) <= 1:
        raise ConfigError(path, "gold_fraction must be between 0 and 1")
    if settings.get("qualification_reviews", 0) < 0:
        raise ConfigError(path, "qualification_reviews must be 0 (no round) or more")
    if not 0 <= settings.get("qualification_threshold", 0.8) <= 1:
        raise ConfigError(path, "qualification_threshold must be between 0 and 1")
    if not settings.get("backend_refresh_seconds", 2.0) > 0:
        raise ConfigError(path, "backend_refresh_seconds must be above 0")
    if settings.get("max_response_chars", 20_000) < 1:
        raise ConfigError(path, "max_response_chars must be at least 1")
    if not settings.get("max_response_seconds", 300.0) > 0:
        raise ConfigError(path, "max_response_seconds must be above 0")
    if not 1 <= settings.get("strength_points", 4) <= 10:
        raise ConfigError(path, "strength_points must be between 1 and 10")


def check_model_folders(settings: Settings, path: str | os.PathLike[str]) -> None:
    """Each ``rerank`` backend's preference models (``pm``, ``red_team_pm``) are hhrlhf model
    folders: their ``model.json`` is read, nothing is loaded. ``hh serve`` calls it before it
    starts, so a wrong folder is one error at start, not a failed turn for every annotator.
    Relative folders are from the current directory, where ``hh serve`` runs."""
    try:
        from ..reward.saved import read_model_json
    except ModuleNotFoundError:  # no [reward] extra: the turn says which extra to install
        return
    for b in settings.backends:
        if b.kind != "rerank":
            continue
        for key in ("pm", "red_team_pm"):
            folder = getattr(b, key)
            if folder:
                try:
                    read_model_json(folder)
                except HHError as exc:
                    raise ConfigError(path, f"backend {b.name!r}: {key}: {exc}") from exc
