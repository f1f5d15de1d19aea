"""The TOML config: the documented example parses; mistakes are one clear error."""

from __future__ import annotations

import pytest

from hhrlhf.collect.config import EXAMPLE_CONFIG, demo_settings, load_config
from hhrlhf.errors import HHError


def test_the_example_config_parses():
    s = load_config(EXAMPLE_CONFIG, db_url="sqlite:///x.db")
    assert s.db_url == "sqlite:///x.db"
    assert s.strength_points == 4 and s.pairing == "random" and s.red_team_continue == "picked"
    chat, completions = s.backends
    assert (chat.kind, chat.base_url, chat.api_key_env) == (
        "openai-chat",
        "http://127.0.0.1:8001/v1",
        "LOCAL_API_KEY",
    )
    assert chat.sampling_params() == {"temperature": 0.8, "max_tokens": 256}
    assert (chat.model_type, chat.num_params) == ("rlhf", "8B")
    assert completions.kind == "openai-completions"


def test_the_example_configs_commented_rerank_backend_parses(tmp_path):
    text = EXAMPLE_CONFIG.read_text(encoding="utf-8")
    block = text[text.index("# Rejection sampling") :]
    lines = [ln[2:] for ln in block.splitlines() if ln.startswith("# ") and "=" in ln]
    lines = ["[[backend]]"] + [ln for ln in lines if not ln.startswith("[")]
    p = tmp_path / "c.toml"
    p.write_text(text + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    r = load_config(p).backend("best-of-16")
    assert (r.kind, r.base, r.k, r.pm, r.red_team_pm) == (
        "rerank",
        "base-8b",
        16,
        "pm-round1/",
        "pm-harmless/",
    )


def test_db_precedence(tmp_path, monkeypatch):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[collect]\ndb = "sqlite:///file.db"\n[[backend]]\nname = "d"\nkind = "demo"\n')
    monkeypatch.setenv("HH_COLLECT_DB", "sqlite:///env.db")
    assert load_config(cfg).db_url == "sqlite:///file.db"
    assert load_config(cfg, db_url="sqlite:///flag.db").db_url == "sqlite:///flag.db"
    assert demo_settings().db_url == "sqlite:///env.db"
    monkeypatch.delenv("HH_COLLECT_DB")
    assert demo_settings().db_url == "sqlite:///hh-collect.db"


@pytest.mark.parametrize(
    "body, message",
    [
        ("[collect]\nstrength_points = 4\n", "no [[backend]]"),
        ('[[backend]]\nname = "x"\nkind = "magic"\n', "kind 'magic'"),
        ('[[backend]]\nname = "x"\nkind = "openai-chat"\nmodel = "m"\n', "missing 'base_url'"),
        ('[[backend]]\nkind = "demo"\n', "missing 'name'"),
        ('[[backend]]\nname = "x"\nkind = "demo"\ncolour = 1\n', "unknown key 'colour'"),
        ('[[backend]]\nname = "x"\nkind = "demo"\ntemperature = "hot"\n', "wrong type"),
        ('[collect]\npairing = "zigzag"\n[[backend]]\nname = "x"\nkind = "demo"\n', "pairing"),
        ('[collect]\nlease_seconds = 0\n[[backend]]\nname = "x"\nkind = "demo"\n', "lease_seconds"),
        (
            '[collect]\nreview_order = "newest"\n[[backend]]\nname = "x"\nkind = "demo"\n',
            "review_order must be one of: fewest_reviews, flagged",
        ),
        (
            '[collect]\nretry_switch_after = -1\n[[backend]]\nname = "x"\nkind = "demo"\n',
            "retry_switch_after must be 0",
        ),
        (
            '[[backend]]\nname = "x"\nkind = "demo"\n[[backend]]\nname = "x"\nkind = "demo"\n',
            "unique",
        ),
        (
            '[collect]\nmax_response_seconds = 0\n[[backend]]\nname = "x"\nkind = "demo"\n',
            "max_response_seconds must be above 0",
        ),
        ('[[backend]]\nname = "x"\nkind = "demo"\nidle_timeout = 0\n', "idle_timeout"),
        ("[extra]\n", "unknown table"),
        ("not = [toml", "not valid TOML"),
    ],
)
def test_config_mistakes(tmp_path, body, message):
    cfg = tmp_path / "c.toml"
    cfg.write_text(body)
    with pytest.raises(HHError, match=message.replace("[", r"\[")) as info:
        load_config(cfg)
    assert str(cfg) in str(info.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(HHError, match="cannot read"):
        load_config(tmp_path / "nope.toml")


def test_proxy_and_hsts_keys(tmp_path):
    cfg = tmp_path / "c.toml"
    backend = '[[backend]]\nname = "d"\nkind = "demo"\n'
    cfg.write_text(f'[collect]\nforwarded_allow_ips = "10.0.0.5"\nhsts = true\n{backend}')
    s = load_config(cfg, db_url="sqlite:///x.db")
    assert s.forwarded_allow_ips == "10.0.0.5" and s.hsts is True
    cfg.write_text(f'[collect]\nhsts = "yes"\n{backend}')
    with pytest.raises(HHError, match="hsts must be true or false"):
        load_config(cfg, db_url="sqlite:///x.db")
