"""The RewardModel contract and the backend registry."""

import json

import numpy as np
import pytest

from hhrlhf.errors import ModelFormatError, UnknownNameError
from hhrlhf.reward import (
    BACKENDS,
    HFRewardModel,
    PreferenceModel,
    RewardModel,
    get_backend,
    load_model,
    train_model,
)

from .conftest import SMALL, make_pairs


def test_registry_names_each_backend_and_its_model_class():
    assert list(BACKENDS) == ["linear", "transformers"]
    assert get_backend("linear").model is PreferenceModel
    assert get_backend("transformers").model is HFRewardModel
    assert get_backend("transformers").required == ("base_model",)
    for name, spec in BACKENDS.items():
        assert spec.name == name and spec.model.backend == name
        # every model class offers the contract's four methods
        for method in ("score", "score_pairs", "save", "load"):
            assert callable(getattr(spec.model, method)), (name, method)


def test_unknown_backend_names_the_known_ones():
    with pytest.raises(UnknownNameError) as err:
        get_backend("forest")
    assert (err.value.kind, err.value.name, err.value.known) == (
        "backend",
        "forest",
        ["linear", "transformers"],
    )
    assert "unknown backend 'forest'; expected one of: linear, transformers" in str(err.value)


def test_train_model_writes_a_directory_load_model_reads_back(tmp_path):
    pairs, test = make_pairs(120, seed=1), make_pairs(40, seed=2)
    model = train_model("linear", pairs, tmp_path / "pm", config=SMALL, harm_weight=2.0)
    assert isinstance(model, RewardModel)
    meta = json.loads((tmp_path / "pm" / "model.json").read_text())
    assert meta["backend"] == "linear" and meta["hyperparameters"]["harm_weight"] == 2.0
    loaded = load_model(tmp_path / "pm")
    assert isinstance(loaded, PreferenceModel) and isinstance(loaded, RewardModel)
    for a, b in zip(model.score_pairs(test), loaded.score_pairs(test), strict=True):
        assert np.array_equal(a, b)
    # load is the class's own: same model from the directory and its checked model.json
    again = PreferenceModel.load(tmp_path / "pm", meta)
    assert np.array_equal(again.weights, model.weights)


def test_train_model_refuses_options_the_backend_does_not_take(tmp_path):
    pairs = make_pairs(20, seed=1)
    with pytest.raises(TypeError, match="not epochs"):
        train_model("linear", pairs, tmp_path / "pm", epochs=3)
    with pytest.raises(ValueError, match="needs base_model"):
        train_model("transformers", pairs, tmp_path / "hf")
    with pytest.raises(UnknownNameError):
        train_model("forest", pairs, tmp_path / "x")
    assert not (tmp_path / "pm").exists()


def test_a_model_file_with_an_unknown_backend_is_a_format_error(tmp_path):
    model = train_model("linear", make_pairs(40, seed=1), tmp_path / "pm", config=SMALL)
    assert model.meta["metrics"]["pairs"] == 40
    meta = json.loads((tmp_path / "pm" / "model.json").read_text())
    meta["backend"] = "forest"
    (tmp_path / "pm" / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="unknown backend 'forest'; this hhrlhf knows"):
        load_model(tmp_path / "pm")
