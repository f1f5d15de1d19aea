"""hh serve's options reach every worker through the environment: ServeOptions writes each
variable and reads it back, one field one variable."""

from __future__ import annotations

import pytest

from hhrlhf.collect.serve.options import ServeOptions
from hhrlhf.errors import HHError

GIVEN = ServeOptions(
    db_url="postgresql+psycopg://hh@db.internal/hhcollect",
    config="/srv/collect.toml",
    demo_delay=0.25,
    data="/srv/hh-rlhf",
    forwarded_allow_ips="10.0.0.5, 10.1.0.0/16",
    hsts=True,
    header_timeout=7.5,
    max_connections=321,
    workers=4,
)


@pytest.mark.parametrize(
    "options",
    [
        GIVEN,
        ServeOptions(db_url="sqlite:///x.db"),
        ServeOptions(db_url="sqlite:///x.db", forwarded_allow_ips="", data="sample"),
    ],
)
def test_what_is_exported_is_read_back(options):
    environ = {"HOME": "/home/x"}
    options.export(environ)
    assert ServeOptions.from_env(environ) == options
    assert environ["HOME"] == "/home/x"


def test_each_field_has_its_own_hh_collect_variable():
    names = ServeOptions.variables()
    assert set(names) == set(vars(GIVEN))
    assert len(set(names.values())) == len(names)
    assert all(v.startswith("HH_COLLECT_") for v in names.values())
    assert names["db_url"] == "HH_COLLECT_DB" and names["workers"] == "HH_COLLECT_WORKERS"
    assert set(GIVEN.environ()) == set(names.values())


def test_a_field_that_is_none_removes_what_an_earlier_start_left():
    environ: dict[str, str] = {}
    GIVEN.export(environ)
    ServeOptions(db_url="sqlite:///x.db").export(environ)
    for var in ("HH_COLLECT_CONFIG", "HH_COLLECT_DATA", "HH_COLLECT_FORWARDED_ALLOW_IPS"):
        assert var not in environ
    assert environ["HH_COLLECT_HSTS"] == "0"
    assert ServeOptions.from_env(environ) == ServeOptions(db_url="sqlite:///x.db")


def test_unset_and_empty_numbers_are_the_defaults():
    environ = {"HH_COLLECT_DB": "sqlite:///y.db", "HH_COLLECT_WORKERS": ""}
    assert ServeOptions.from_env(environ) == ServeOptions(db_url="sqlite:///y.db")


@pytest.mark.parametrize(
    "var, text, expected",
    [
        ("HH_COLLECT_WORKERS", "four", "expected an integer"),
        ("HH_COLLECT_HEADER_TIMEOUT", "soon", "expected a number"),
        ("HH_COLLECT_HSTS", "yes", "expected 0 or 1"),
    ],
)
def test_a_wrong_value_names_its_variable(var, text, expected):
    with pytest.raises(HHError, match=rf"\${var}: {expected}, got '{text}'"):
        ServeOptions.from_env({var: text})


def test_the_settings_take_the_options_over_the_config(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(
        '[collect]\nforwarded_allow_ips = "127.0.0.1"\n\n[[backend]]\nname = "d"\nkind = "demo"\n',
        encoding="utf-8",
    )
    options = ServeOptions(
        db_url="sqlite:///z.db",
        config=str(config),
        data="sample",
        forwarded_allow_ips="*",
        hsts=True,
    )
    settings = options.settings()
    assert settings.backend_names == ["d"] and settings.db_url == "sqlite:///z.db"
    assert (settings.data, settings.forwarded_allow_ips, settings.hsts) == ("sample", "*", True)
    demo = ServeOptions(db_url="sqlite:///z.db", demo_delay=0.5).settings()
    assert demo.demo and {b.token_delay for b in demo.backends} == {0.5}
    assert demo.forwarded_allow_ips == "127.0.0.1" and not demo.hsts and demo.data is None
