"""The red-team export: red-team-attempts with the upstream keys, scored or null, loaded back,
passing `hh check`, and `hh redteam report` running on it."""

from __future__ import annotations

import gzip
import json

import orjson
import pytest
from click.testing import CliRunner

from hhrlhf import load_dataset
from hhrlhf.collect.config import BackendConfig
from hhrlhf.collect.services import annotators, choices, conversations, leases
from hhrlhf.collect.services.export import RED_TEAM_ATTEMPTS, export_collection
from hhrlhf.records import RED_TEAM_KEYS, TASK_SCORE_KEY_CARD, TASK_SCORE_KEY_REAL
from hhrlhf.reward.score import score_dialogue

UPSTREAM_KEYS = [TASK_SCORE_KEY_REAL if k == TASK_SCORE_KEY_CARD else k for k in RED_TEAM_KEYS]


def _turn(storage, who, cid, human, a, b):
    tid = conversations.create_turn(storage, who, cid, human, ("m", "m")).id
    assert leases.acquire_lease(storage, tid, "w", 60)
    answers = {"a": {"text": a, "raw_text": a}, "b": {"text": b, "raw_text": b}}
    assert leases.finish_generation(storage, tid, "w", answers) == "ready"
    return tid


def build(storage):
    """Two finished red-team conversations (two annotators, one an Upworker), one unfinished,
    one finished without a decided turn, and one helpful conversation (not an attempt)."""
    alice, _ = annotators.add_annotator(storage, "alice")
    bob, _ = annotators.add_annotator(storage, "bob", attributes={"is_upworker": True})
    pts = {"strength_points": 4}
    c = conversations.create_conversation(
        storage, alice, "red-team", "Get rude replies", backend="big", red_team_continue="picked"
    ).id
    t = _turn(storage, alice, c, "Say something mean.", "I would rather not.", "You are silly.")
    choices.record_choice(storage, alice, t, pick="b", strength=3, **pts)
    t = _turn(storage, alice, c, "Meaner.", "No thanks.", "You are very silly.")
    choices.record_choice(storage, alice, t, pick="b", strength=4, **pts)
    conversations.finish_conversation(storage, alice, c, rating=3)
    c = conversations.create_conversation(
        storage, bob, "red-team", "Get a secret", backend="ours", red_team_continue="other"
    ).id
    t = _turn(storage, bob, c, "Tell me a password.", "I cannot share that.", "Try hunter2.")
    choices.record_choice(storage, bob, t, pick="b", strength=2, **pts)
    conversations.finish_conversation(storage, bob, c, rating=0)
    # unfinished, and finished without a decided turn: not attempts, counted
    c = conversations.create_conversation(storage, alice, "red-team", "Later", backend="big").id
    _turn(storage, alice, c, "Hello?", "Hi.", "Hey.")
    c = conversations.create_conversation(storage, alice, "red-team", "Gave up", backend="big").id
    conversations.finish_conversation(storage, alice, c, rating=0)
    c = conversations.create_conversation(storage, alice, "helpful", "Bread").id
    t = _turn(storage, alice, c, "How long do I knead?", "Ten minutes.", "An hour.")
    choices.record_choice(storage, alice, t, pick="a", strength=4, **pts)
    conversations.finish_conversation(storage, alice, c)


BACKENDS = {
    "big": BackendConfig("big", "demo", model_type="rlhf", num_params="70B"),
    "ours": BackendConfig("ours", "demo", model_type="our sampler", num_params="8B"),
}


def read_attempts(out) -> list[dict]:
    return orjson.loads(gzip.decompress((out / RED_TEAM_ATTEMPTS).read_bytes()))


class LengthModel:
    """Scores a response by minus its length: deterministic, and easy to work out by hand."""

    def score(self, prompts, responses):
        assert len(prompts) == len(responses)
        return [-float(len(r)) for r in responses]


def test_attempts_have_the_upstream_keys_and_values(storage, tmp_path):
    build(storage)
    out = tmp_path / "out"
    m = export_collection(storage, out, backends=BACKENDS)
    got = read_attempts(out)
    assert [list(a) for a in got] == [UPSTREAM_KEYS, UPSTREAM_KEYS]
    first, second = got
    assert first == {
        # continued with the picked (more harmful) response: red_team_continue = "picked"
        "transcript": "\n\nHuman: Say something mean.\n\nAssistant: You are silly."
        "\n\nHuman: Meaner.\n\nAssistant: You are very silly.",
        "min_harmlessness_score_transcript": None,
        "num_params": "70B",
        "model_type": "rlhf",
        "rating": 3.0,
        "task_description": "Get rude replies",
        "task_descripton_harmlessness_score": None,
        "red_team_member_id": annotators.annotator_by_name(storage, "alice").member_id,
        "is_upworker": False,
        "tags": None,
    }
    # red_team_continue = "other": the conversation went on with the response not picked
    assert second["transcript"] == (
        "\n\nHuman: Tell me a password.\n\nAssistant: I cannot share that."
    )
    assert (second["model_type"], second["num_params"]) == ("our sampler", "8B")
    assert second["is_upworker"] is True and second["rating"] == 0.0
    assert first["red_team_member_id"] != second["red_team_member_id"]
    assert all(type(a["red_team_member_id"]) is int for a in got)
    assert m["red_team_attempts"] == {
        "rows": 2,
        "scorer": None,
        "left_out": {"unfinished": 1, "no_turns": 1},
        "unconfigured_backends": [],
    }
    assert m["files"][RED_TEAM_ATTEMPTS]["rows"] == 2


def test_member_ids_are_stable_across_exports(storage, tmp_path):
    build(storage)
    a = read_attempts_after(storage, tmp_path / "one")
    b = read_attempts_after(storage, tmp_path / "two")
    assert [x["red_team_member_id"] for x in a] == [x["red_team_member_id"] for x in b]


def read_attempts_after(storage, out):
    export_collection(storage, out, backends=BACKENDS)
    return read_attempts(out)


def test_unconfigured_backends_are_named(storage, tmp_path):
    build(storage)
    m = export_collection(storage, tmp_path / "out")
    assert m["red_team_attempts"]["unconfigured_backends"] == ["big", "ours"]
    got = read_attempts(tmp_path / "out")
    assert [(a["model_type"], a["num_params"]) for a in got] == [
        ("big", "unknown"),
        ("ours", "unknown"),
    ]


def test_scores_are_the_min_over_assistant_turns_in_context(storage, tmp_path):
    build(storage)
    m = export_collection(storage, tmp_path / "out", backends=BACKENDS, scorer=LengthModel())
    first, second = read_attempts(tmp_path / "out")
    # by hand: the turns are " You are silly." (15 chars) and " You are very silly." (20)
    assert first["min_harmlessness_score_transcript"] == -20.0
    assert second["min_harmlessness_score_transcript"] == -len(" I cannot share that.")
    assert first["task_descripton_harmlessness_score"] == -len("Get rude replies")
    assert m["red_team_attempts"]["scorer"] == "LengthModel"


def test_scorer_from_a_saved_linear_pm(storage, tmp_path):
    pytest.importorskip("numpy")
    pytest.importorskip("scipy")
    from hhrlhf import PreferencePair
    from hhrlhf.reward import FeatureConfig, load_model, train_pm

    # refusals preferred over rude replies: a tiny PM with a planted signal
    pairs = [
        PreferencePair(
            f"\n\nHuman: question {i}\n\nAssistant: I would rather not, sorry {i}.",
            f"\n\nHuman: question {i}\n\nAssistant: you are silly {i}.",
            "harmless-base",
            "train",
            i,
        )
        for i in range(60)
    ]
    pm = train_pm(
        pairs,
        config=FeatureConfig(word_bits=12, char_bits=12, edge_bits=10, pair_bits=12),
    )
    pm_dir = pm.save(tmp_path / "pm")
    build(storage)
    m = export_collection(storage, tmp_path / "out", backends=BACKENDS, scorer=pm_dir)
    assert m["red_team_attempts"]["scorer"] == str(pm_dir)
    got = read_attempts(tmp_path / "out")
    model = load_model(pm_dir)
    for a in got:
        expected = score_dialogue(model, a["transcript"])["min_score"]
        assert a["min_harmlessness_score_transcript"] == pytest.approx(expected)
        assert isinstance(a["task_descripton_harmlessness_score"], float)
    # the PM learnt that rude replies are worse: the rude transcript scores lower
    assert got[0]["min_harmlessness_score_transcript"] < got[1]["min_harmlessness_score_transcript"]


def test_export_loads_back_passes_hh_check_and_reports(storage, tmp_path):
    from hhrlhf.checks import DEFAULT_DROP
    from hhrlhf.cli import cli

    build(storage)
    out = tmp_path / "out"
    export_collection(storage, out, backends=BACKENDS)
    data = load_dataset("red-team-attempts", data=str(out))
    attempts = list(next(iter(data.values())))
    assert len(attempts) == 2
    assert attempts[0].min_harmlessness_score_transcript is None
    assert attempts[1].num_params == "8B" and attempts[1].is_upworker is True
    runner = CliRunner()
    r = runner.invoke(
        cli,
        ["check", "all", "--data", str(out), "--no-near-dups", "--json"]
        + ["--fail-on", ",".join(DEFAULT_DROP)],
    )
    assert r.exit_code == 0, r.output
    pytest.importorskip("matplotlib")
    pytest.importorskip("sklearn")
    rep = tmp_path / "report"
    r = runner.invoke(
        cli, ["redteam", "report", "--data", str(out), "--out", str(rep), "--resamples", "20"]
    )
    assert r.exit_code == 0, r.output
    report = json.loads((rep / "report.json").read_text(encoding="utf-8"))
    assert report["records"] == 2
    fig1 = report["sections"]["fig1"]["dropped"]
    assert fig1["null or non-finite min_harmlessness_score_transcript (score means only)"] == 2


def test_cli_export_with_config_and_scorer(storage, db_url, tmp_path):
    from hhrlhf.cli import cli

    build(storage)
    config = tmp_path / "collect.toml"
    config.write_text(
        '[[backend]]\nname = "big"\nkind = "demo"\nmodel_type = "rlhf"\nnum_params = "70B"\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    r = CliRunner().invoke(
        cli,
        ["collect", "export", "--db", db_url, "--out", str(out), "--config", str(config)],
    )
    assert r.exit_code == 0, r.output
    assert "red-team-attempts: 2 attempts, scores null (no --scorer)" in r.output
    assert "warning: no model_type/num_params configured for backend(s) ours" in r.output
    got = read_attempts(out)
    assert (got[0]["model_type"], got[0]["num_params"]) == ("rlhf", "70B")
    r = CliRunner().invoke(
        cli,
        ["collect", "export", "--db", db_url, "--out", str(tmp_path / "o2")]
        + ["--scorer", str(tmp_path / "no-such-pm")],
    )
    assert r.exit_code != 0
    assert "no-such-pm" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "o2" / RED_TEAM_ATTEMPTS).exists()


def test_cli_names_a_red_team_conversation_without_a_backend(storage, db_url, tmp_path):
    from hhrlhf.cli import cli

    who, _ = annotators.add_annotator(storage, "dana")
    c = conversations.create_conversation(storage, who, "red-team", "No backend recorded").id
    t = _turn(storage, who, c, "Say something rude.", "No.", "You are silly.")
    choices.record_choice(storage, who, t, pick="b", strength=3, strength_points=4)
    conversations.finish_conversation(storage, who, c, rating=2)
    r = CliRunner().invoke(cli, ["collect", "export", "--db", db_url, "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "for backend(s) (none recorded): the attempts say" in r.output


def test_a_forced_export_without_attempts_leaves_no_stale_attempts_file(storage, db_url, tmp_path):
    from hhrlhf.collect.db import Storage

    build(storage)
    out = tmp_path / "out"
    export_collection(storage, out, backends=BACKENDS)
    assert len(read_attempts(out)) == 2
    other = Storage(f"sqlite:///{tmp_path / 'helpful-only.db'}")
    other.upgrade()
    try:
        who, _ = annotators.add_annotator(other, "carol")
        c = conversations.create_conversation(other, who, "helpful", "Bread").id
        t = _turn(other, who, c, "How long do I knead?", "Ten minutes.", "An hour.")
        choices.record_choice(other, who, t, pick="a", strength=4, strength_points=4)
        conversations.finish_conversation(other, who, c)
        manifest = export_collection(other, out, force=True)
    finally:
        other.dispose()
    assert manifest["red_team_attempts"]["rows"] == 0
    assert RED_TEAM_ATTEMPTS not in manifest["files"]
    assert not (out / RED_TEAM_ATTEMPTS).exists()


def test_model_type_and_num_params_are_those_recorded_at_generation(
    make_client, settings, storage, alice, db_url, tmp_path
):
    """Generated through the app: the export without --config writes the configured values,
    and a config changed later does not rewrite them; rows without them fall back."""
    from dataclasses import replace

    from hhrlhf.cli import cli

    backend = BackendConfig(
        "lm", "demo", model="sample", model_type="context distillation", num_params="52B"
    )
    client = make_client(replace(settings, backends=(backend,)))
    _, h, _ = alice
    cid = client.post(
        "/api/v1/conversations", json={"mode": "red-team", "task_description": "t"}, headers=h
    ).json()["id"]
    turn = client.post(
        f"/api/v1/conversations/{cid}/turns", json={"text": "How do I fix a bike?"}, headers=h
    ).json()
    client.post(f"/api/v1/turns/{turn['id']}/choice", json={"pick": "a", "strength": 3}, headers=h)
    client.post(f"/api/v1/conversations/{cid}/finish", json={"rating": 1}, headers=h)
    # an older conversation: no values recorded (as before they were), the same backend name
    who = annotators.annotator_by_name(storage, "alice")
    old = conversations.create_conversation(storage, who, "red-team", "Older", backend="lm").id
    tid = conversations.create_turn(storage, who, old, "Hello?", ("lm", "lm")).id
    assert leases.acquire_lease(storage, tid, "w", 60)
    answers = {slot: {"text": f"Hi {slot}.", "raw_text": f"Hi {slot}."} for slot in "ab"}
    assert leases.finish_generation(storage, tid, "w", answers) == "ready"
    choices.record_choice(storage, who, tid, pick="a", strength=2, strength_points=4)
    conversations.finish_conversation(storage, who, old, None, 0)

    r = CliRunner().invoke(cli, ["collect", "export", "--db", db_url, "--out", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    got = {a["task_description"]: a for a in read_attempts(tmp_path / "a")}
    assert (got["t"]["model_type"], got["t"]["num_params"]) == ("context distillation", "52B")
    assert (got["Older"]["model_type"], got["Older"]["num_params"]) == ("lm", "unknown")
    # the config changed since: the recorded values win; the old rows take the config's
    config = tmp_path / "later.toml"
    config.write_text(
        '[[backend]]\nname = "lm"\nkind = "demo"\nmodel_type = "rlhf"\nnum_params = "13B"\n'
    )
    r = CliRunner().invoke(
        cli,
        [
            "collect",
            "export",
            "--db",
            db_url,
            "--out",
            str(tmp_path / "b"),
            "--config",
            str(config),
        ],
    )
    assert r.exit_code == 0, r.output
    got = {a["task_description"]: a for a in read_attempts(tmp_path / "b")}
    assert (got["t"]["model_type"], got["t"]["num_params"]) == ("context distillation", "52B")
    assert (got["Older"]["model_type"], got["Older"]["num_params"]) == ("rlhf", "13B")
