"""The error hierarchy: unknown names say which kind of name, and the old name still works."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import hhrlhf
from hhrlhf import errors, load_arrow, load_dataset
from hhrlhf.checks import check_class_names
from hhrlhf.convert import format_rows, get_format, read_rows
from hhrlhf.convert.files import container_of
from hhrlhf.dataset import iter_attempts, iter_pairs
from hhrlhf.errors import (
    BackendError,
    ConfigError,
    HHError,
    NoDataError,
    RecordKindError,
    UnknownNameError,
    UnknownSubsetError,
)
from hhrlhf.subsets import RED_TEAM, get_subset


@pytest.mark.parametrize(
    ("lookup", "kind"),
    [
        (lambda: get_subset("nope"), "subset"),
        (lambda: get_subset("helpful-base").file("dev"), "split"),
        (lambda: get_format("nope"), "format"),
        (lambda: check_class_names(["nope"]), "check class"),
    ],
    ids=["subset", "split", "format", "check class"],
)
def test_unknown_names_say_what_kind_of_name(lookup, kind):
    with pytest.raises(UnknownNameError) as info:
        lookup()
    exc = info.value
    assert (exc.kind, exc.name) == (kind, "nope" if kind != "split" else "dev")
    assert str(exc).startswith(f"unknown {kind} ")
    assert exc.known and all(k in str(exc) for k in exc.known)


def test_unknown_source_names_the_sources():
    from hhrlhf.download import file_url
    from hhrlhf.subsets import get_subset

    spec = get_subset("helpful-base").file("train")
    with pytest.raises(UnknownNameError, match="unknown source 'ftp'; expected one of: hub"):
        file_url(spec, source="ftp")


def test_the_former_name_is_the_same_class_and_takes_the_former_arguments():
    assert UnknownSubsetError is UnknownNameError
    exc = UnknownSubsetError("x", ["a", "b"])
    assert (exc.kind, exc.name, exc.known) == ("name", "x", ["a", "b"])
    assert isinstance(exc, HHError) and isinstance(exc, KeyError)
    assert str(exc) == "unknown name 'x'; expected one of: a, b"


# --------------------------------------------------------------------------- specific types

GOOD = Path(__file__).parent / "data" / "good"


def test_the_wrong_kind_of_records_is_a_record_kind_error(tmp_path):
    with pytest.raises(RecordKindError, match="holds red-team attempts, not pairs") as info:
        list(iter_pairs(data=GOOD / "red_team.json"))
    assert (info.value.holds, info.value.wanted) == ("attempts", "pairs")
    pairs = tmp_path / "train.jsonl"
    pairs.write_bytes((GOOD / "pairs.jsonl").read_bytes())
    with pytest.raises(RecordKindError, match="holds preference pairs, not red-team") as info:
        list(iter_attempts(data=pairs))
    assert (info.value.holds, info.value.wanted) == ("pairs", "attempts")
    with pytest.raises(RecordKindError, match="attempts, not pairs: use iter_attempts"):
        list(iter_pairs(RED_TEAM, data="sample"))
    attempt = next(iter(load_dataset(RED_TEAM, data="sample", split="train")))
    with pytest.raises(RecordKindError, match="format 'dpo' does not take red-team attempts"):
        list(format_rows([attempt], "dpo"))


def test_missing_data_is_a_no_data_error(tmp_path):
    with pytest.raises(NoDataError, match="no such file or directory") as info:
        load_dataset(data=tmp_path / "nope.jsonl")
    assert info.value.path == str(tmp_path / "nope.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoDataError, match="no data files found"):
        load_dataset(data=tmp_path / "empty")
    with pytest.raises(NoDataError, match="no such file"):
        list(read_rows(tmp_path / "nope.jsonl"))


def test_more_unknown_names(tmp_path):
    with pytest.raises(UnknownNameError, match="unknown columns 'wide'; expected one of: dpo"):
        load_arrow(data="sample", columns="wide")
    with pytest.raises(UnknownNameError) as info:
        container_of(tmp_path / "rows.txt")
    assert (info.value.kind, info.value.name) == ("file ending", "rows.txt")
    assert ".jsonl.gz" in info.value.known


def test_config_problems_are_config_errors(tmp_path):
    from hhrlhf.collect.config import load_config

    path = tmp_path / "hh.toml"
    path.write_text(
        '[[backend]]\nname = "a"\nkind = "demo"\n[[backend]]\nname = "a"\nkind = "demo"\n'
    )
    with pytest.raises(ConfigError, match="backend names must be unique") as info:
        load_config(path)
    assert info.value.path == str(path) and str(info.value).startswith(f"{path}: ")
    path.write_text('[[backend]]\nname = "a"\nkind = "demo"\n')
    with pytest.raises(UnknownNameError, match="unknown backend 'b'; expected one of: a"):
        load_config(path).backend("b")


def test_the_collection_errors_live_in_errors_py():
    from hhrlhf.collect.generation import backends

    assert backends.BackendError is BackendError
    assert issubclass(BackendError, HHError)


def test_no_error_type_is_defined_outside_errors_py():
    """Every exception a user can meet is in errors.py (private control-flow ones aside)."""
    src = Path(hhrlhf.__file__).parent
    outside = []
    for path in src.rglob("*.py"):
        if path.name == "errors.py" and path.parent == src:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            bases = {
                b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
            }
            if bases & ({"HHError", "Exception"} | set(errors.__all__)):
                outside.append(f"{path.relative_to(src)}: {node.name}")
    # fastload.Fallback: an internal signal between the fast path and the reference reader
    assert outside == ["fastload/parse.py: Fallback"]


def test_truncated_stream_error_says_what_was_lost_as_json():
    exc = errors.TruncatedStreamError(
        "d/train.jsonl.gz", "cut short", last_good_line=4, rows_read=4
    )
    lost = exc.lost_json()
    assert lost == {
        "path": "d/train.jsonl.gz",
        "rows_read": 4,
        "last_good_line": 4,
        "problem": exc.problem,
    }
    assert exc.problem.startswith("cut short: 4 line(s) read (the last good line is 4)")
    assert exc.lost_json(path=False) == {k: v for k, v in lost.items() if k != "path"}


SUBSET_NAMES = [
    "harmless-base",
    "helpful-base",
    "helpful-online",
    "helpful-rejection-sampled",
    "red-team-attempts",
]


@pytest.mark.parametrize(
    ("kind", "name", "known", "suggestion"),
    [
        ("subset", "harmles-base", SUBSET_NAMES, "harmless-base"),
        ("subset", "Helpful_Base", SUBSET_NAMES, "helpful-base"),
        ("subset", "red-team", SUBSET_NAMES, "red-team-attempts"),
        ("subset", "helpful", SUBSET_NAMES, None),  # the start of three names: no guess
        ("subset", "cooking", SUBSET_NAMES, None),
        ("split", "tset", ["train", "test"], "test"),
        ("split", "trian", ["train", "test"], "train"),
        ("split", "dev", ["train", "test"], None),
    ],
)
def test_unknown_name_suggests_a_close_name(kind, name, known, suggestion):
    exc = UnknownNameError(kind, name, known)
    assert exc.suggestion == suggestion
    assert str(exc).endswith(f"; did you mean {suggestion!r}?") is (suggestion is not None)


def test_a_typo_in_a_subset_or_split_says_did_you_mean_in_one_line():
    from click.testing import CliRunner

    from hhrlhf.cli import cli

    r = CliRunner().invoke(cli, ["show", "harmles-base", "--data", "sample"])
    assert r.exit_code == 2  # a usage error, as click's own
    assert r.stderr.splitlines() == [
        "error: sample: no subset 'harmles-base'; subsets there: harmless-base, helpful-base, "
        "helpful-online, helpful-rejection-sampled, red-team-attempts; "
        "did you mean 'harmless-base'?"
    ]
    r = CliRunner().invoke(cli, ["stats", "helpful-base", "--split", "tset", "--data", "sample"])
    assert r.exit_code == 2 and r.stderr.rstrip().endswith("did you mean 'test'?")


def test_a_typo_in_a_fixed_choice_says_did_you_mean(tmp_path):
    from click.testing import CliRunner

    from hhrlhf.cli import cli

    args = ["download", "harmless-base", "--split", "tset", "--offline"]
    r = CliRunner().invoke(cli, [*args, "--cache-dir", str(tmp_path)])
    assert r.exit_code == 2 and "Did you mean 'test'?" in r.stderr
    r = CliRunner().invoke(cli, ["export", "--format", "trl-standrad", "--out", "-"])
    assert r.exit_code == 2 and "Did you mean 'trl-standard'?" in r.stderr
    r = CliRunner().invoke(cli, ["export", "--format", "zzz", "--out", "-"])
    assert r.exit_code == 2 and "Did you mean" not in r.stderr


def test_every_error_pickles_with_its_attributes(tmp_path):
    """An error raised in another process (a pool, a Ray worker) arrives as itself: same
    class, message and attributes, though most take other arguments than their message."""
    import gzip
    import pickle

    cut = tmp_path / "test.jsonl.gz"
    cut.write_bytes(gzip.compress(b'{"chosen": "a", "rejected": "b"}\n' * 500)[:-40])
    with pytest.raises(errors.TruncatedStreamError) as raised:
        list(iter_pairs(data=cut, split="test"))
    made = [
        raised.value,
        errors.DataFormatError("a.jsonl", 3, "invalid JSON"),
        UnknownNameError("subset", "harmles-base", ["harmless-base"]),
        errors.MissingExtraError("ray", "ray", "read_pairs()"),
        errors.RateLimited("slow down", 30),
        errors.ChecksumMismatchError("a.gz", "00", "ff"),
    ]
    for err in made:
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err)
        assert str(back) == str(err)
        assert back.args == err.args
        assert back.__dict__ == err.__dict__
