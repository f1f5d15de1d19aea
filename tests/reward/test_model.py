import json

import numpy as np
import pytest

from hhrlhf.errors import ModelFormatError
from hhrlhf.reward import load_model, train_pm
from hhrlhf.reward.model import FORMAT_VERSION, pair_weights

from .conftest import SMALL, make_pairs


def _accuracy(model, pairs):
    c, r = model.score_pairs(pairs)
    return float(np.mean(c > r))


@pytest.fixture(scope="module")
def planted():
    train, test = make_pairs(300, seed=1), make_pairs(300, seed=2)
    return train_pm(train, config=SMALL), test


def test_planted_signal_is_learned(planted):
    model, test = planted
    assert _accuracy(model, test) >= 0.95
    assert model.meta["metrics"]["train_accuracy"] >= 0.95
    assert model.meta["metrics"]["converged"]


def test_shuffled_labels_give_chance_accuracy():
    model = train_pm(make_pairs(300, seed=1, signal=False), config=SMALL)
    acc = _accuracy(model, make_pairs(400, seed=2))
    # 400 pairs: the standard error at chance is 0.025; 0.5 +- 0.1 is four of them.
    assert 0.4 <= acc <= 0.6


def test_training_is_deterministic():
    pairs = make_pairs(120, seed=5)
    a, b = train_pm(pairs, config=SMALL), train_pm(pairs, config=SMALL)
    assert np.array_equal(a.weights, b.weights)


def test_pair_weights_mix_harm_with_lambda():
    w = pair_weights(["helpful-base", "harmless-base", "helpful-online"], 2.5)
    assert w.tolist() == [1.0, 2.5, 1.0]


def test_lambda_changes_the_fit_only_when_harm_pairs_exist():
    helpful = make_pairs(80, seed=6, subset="helpful-base")
    # harmless pairs with the opposite cue: lambda decides which side wins
    harm = [
        type(p)(p.rejected, p.chosen, "harmless-base", "train", p.index)
        for p in make_pairs(80, seed=7)
    ]
    low = train_pm(helpful + harm, config=SMALL, harm_weight=0.1)
    high = train_pm(helpful + harm, config=SMALL, harm_weight=10.0)
    probe = make_pairs(100, seed=8)
    # weighted counts 80 vs 8 (low) and 80 vs 800 (high) favour opposite sides
    margin_low = np.subtract(*low.score_pairs(probe)).mean()
    margin_high = np.subtract(*high.score_pairs(probe)).mean()
    assert margin_low > 0 > margin_high
    assert _accuracy(low, probe) > 0.8
    assert _accuracy(high, probe) < 0.5
    same_a = train_pm(helpful, config=SMALL, harm_weight=0.1)
    same_b = train_pm(helpful, config=SMALL, harm_weight=10.0)
    assert np.array_equal(same_a.weights, same_b.weights)


def test_save_load_round_trip(planted, tmp_path):
    model, test = planted
    path = model.save(tmp_path / "pm")
    meta = json.loads((path / "model.json").read_text())
    assert meta["format_version"] == FORMAT_VERSION
    assert meta["backend"] == "linear"
    assert meta["training_data"]["rows"] == {"helpful-base/train": 300}
    assert meta["hyperparameters"]["l2"] == 5e-4
    assert "package_version" in meta and "metrics" in meta
    loaded = load_model(path)
    for a, b in zip(model.score_pairs(test), loaded.score_pairs(test), strict=True):
        assert np.array_equal(a, b)


@pytest.mark.parametrize("offset", [-1, 1])
def test_other_format_version_is_a_clear_error(planted, tmp_path, offset):
    """Older models (before the lexicon features) and newer ones are refused by name."""
    model, _ = planted
    path = model.save(tmp_path / "pm")
    meta = json.loads((path / "model.json").read_text())
    meta["format_version"] = FORMAT_VERSION + offset
    (path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match=f"format version {FORMAT_VERSION + offset}"):
        load_model(path)


@pytest.mark.parametrize(
    "damage, message",
    [
        ("no_json", "no model.json"),
        ("bad_json", "unreadable model.json"),
        ("not_ours", "not an hhrlhf preference model"),
        ("no_weights", "corrupt model"),
    ],
)
def test_damaged_model_directories(planted, tmp_path, damage, message):
    model, _ = planted
    path = model.save(tmp_path / "pm")
    if damage == "no_json":
        (path / "model.json").unlink()
    elif damage == "bad_json":
        (path / "model.json").write_text("{")
    elif damage == "not_ours":
        (path / "model.json").write_text('{"format": "other"}')
    else:
        (path / "weights.npz").unlink()
    with pytest.raises(ModelFormatError, match=message):
        load_model(path)


def test_no_pairs_is_an_error():
    with pytest.raises(ValueError, match="no pairs"):
        train_pm([], config=SMALL)


MODELS = __import__("pathlib").Path(__file__).parents[1] / "data" / "models"
EVIL = sorted(p.name for p in MODELS.glob("*.json"))


@pytest.mark.parametrize("name", EVIL)
def test_hostile_feature_settings_are_refused(planted, tmp_path, name):
    """A model directory is data: no user regex is compiled, no number allocates gigabytes."""
    model, _ = planted
    path = model.save(tmp_path / "pm")
    meta = json.loads((path / "model.json").read_text())
    meta["features"].update(json.loads((MODELS / name).read_text()))
    (path / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="bad feature settings"):
        load_model(path)


def test_old_model_files_with_the_default_pattern_still_load(planted, tmp_path):
    model, test = planted
    path = model.save(tmp_path / "pm")
    meta = json.loads((path / "model.json").read_text())
    assert meta["features"]["word_tokenizer"] == "word2"
    del meta["features"]["word_tokenizer"]
    meta["features"]["word_pattern"] = r"(?u)\b\w\w+\b"
    (path / "model.json").write_text(json.dumps(meta))
    loaded = load_model(path)
    assert loaded.featurizer.config.word_tokenizer == "word2"
    assert np.array_equal(model.score_pairs(test)[0], loaded.score_pairs(test)[0])


def test_oversized_arrays_are_refused_before_they_are_read(planted, tmp_path):
    model, _ = planted
    path = model.save(tmp_path / "pm")
    too_big = model.featurizer.n_features_max + 1
    np.savez_compressed(path / "weights.npz", weights=np.zeros(too_big))
    with pytest.raises(ModelFormatError, match="does not fit the feature settings"):
        load_model(path)
