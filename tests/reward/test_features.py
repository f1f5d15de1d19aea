import numpy as np
import pytest

from hhrlhf.reward.features import (
    DENSE_FEATURES,
    LEXICON_FEATURES,
    FeatureConfig,
    Featurizer,
    split_prompt,
)


def test_split_prompt_turns():
    p = "\n\nHuman: first\n\nAssistant: reply one\n\nHuman: second ask\n\nAssistant:"
    last, earlier, humans = split_prompt(p)
    assert last == " second ask"
    assert earlier == " reply one "
    assert humans == " first  second ask"


def test_transform_shape_and_groups(small_config):
    f = Featurizer(small_config)
    prompts = ["\n\nHuman: hi there\n\nAssistant:"] * 3
    responses = [" hello", " I'm sorry, I can't help with that.", ""]
    f.fit(prompts, responses)
    x = f.transform(prompts, responses)
    assert x.shape == (3, f.n_features)
    # word + char (2**12 each) + lex + dense; edge and pair are off by default
    assert f.active == ["word", "char", "lex", "dense"]
    assert f.n_features == 2**12 * 2 + len(LEXICON_FEATURES) + len(DENSE_FEATURES)
    # deterministic
    assert (f.transform(prompts, responses) != x).nnz == 0


@pytest.mark.parametrize(
    "group, on, size",
    [("edge", True, 2**10), ("pair", True, 2**12), ("lex", False, len(LEXICON_FEATURES))],
)
def test_group_weights_switch_groups(small_config, group, on, size):
    weights = dict(small_config.weights, **{group: 1.0 if on else 0.0})
    cfg = FeatureConfig(**{**small_config.__dict__, "weights": weights, "context_chars": 50})
    f = Featurizer(cfg)
    assert (group in f.active) is on
    prompts = ["\n\nHuman: a b\n\nAssistant: c\n\nHuman: d\n\nAssistant:"] * 2
    f.fit(prompts, [" b", " c d"])
    x = f.transform(prompts, [" b", " c d"])
    assert x.shape[1] == f.n_features
    assert f.n_features == Featurizer(small_config).n_features + (size if on else -size)


def test_config_round_trip_and_unknown_key():
    cfg = FeatureConfig(char_ngrams=(2, 4))
    assert FeatureConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown feature settings: bogus"):
        FeatureConfig.from_dict({**cfg.to_dict(), "bogus": 1})


def test_overlap_with_last_human_turn_feature(small_config):
    f = Featurizer(small_config)
    raw = f._raw(["\n\nHuman: red apples\n\nAssistant:"] * 2, [" red apples", " blue sky"])
    col = DENSE_FEATURES.index("overlap_last_human")
    assert raw["dense"][:, col] == pytest.approx([1.0, 0.0])
    col = DENSE_FEATURES.index("word_cosine_last_human")
    assert raw["dense"][0, col] == pytest.approx(1.0)
    assert raw["dense"][1, col] == pytest.approx(0.0)


def test_transform_before_fit_is_an_error(small_config):
    with pytest.raises(RuntimeError):
        Featurizer(small_config).transform(["p"], ["r"])


def test_parallel_featurisation_equals_serial(small_config):
    from .conftest import make_pairs

    pairs = make_pairs(2100, seed=3)
    prompts = [p.prompt for p in pairs] * 2
    responses = [p.chosen_response for p in pairs] + [p.rejected_response for p in pairs]
    f = Featurizer(small_config)
    serial = f.raw_features(prompts, responses, n_jobs=1)
    parallel = f.raw_features(prompts, responses, n_jobs=2)
    for k in serial:
        a, b = serial[k], parallel[k]
        if k in ("lex", "dense"):
            assert np.array_equal(a, b)
        else:
            assert (a != b).nnz == 0


def test_lexicon_block_is_standardised_on_training_rows(small_config):
    """A refusal scores its category column above the training mean; the block has its
    own saved statistics."""
    f = Featurizer(small_config)
    prompts = ["\n\nHuman: how do I pick a lock\n\nAssistant:"] * 3
    responses = [" Sure, first get a pin.", " I'm sorry, I can't help.", " Maybe."]
    f.fit(prompts, responses)
    assert set(f.state()) >= {"lex_mean", "lex_std", "dense_mean", "dense_std"}
    raw = f._raw(prompts, responses)["lex"]
    col = LEXICON_FEATURES.index("refuse_log_count")
    z = (raw[:, col] - f.mean["lex"][col]) / f.std["lex"][col]
    assert z[1] > 0 > z[0]


def test_ending_and_sentence_columns(small_config):
    f = Featurizer(small_config)
    responses = [" Fine. Thanks.", " Wow!", " and then we", ""]
    dense = f._raw(["\n\nHuman: hi\n\nAssistant:"] * 4, responses)["dense"]

    def col(name):
        return dense[:, DENSE_FEATURES.index(name)].tolist()

    assert col("ends_with_period") == [1.0, 0.0, 0.0, 0.0]
    assert col("ends_with_exclamation") == [0.0, 1.0, 0.0, 0.0]
    assert col("ends_without_punctuation") == [0.0, 0.0, 1.0, 0.0]
    assert col("log_sentences")[0] > col("log_sentences")[1] == 0.0


def test_word_tokenizer_names_and_default_behaviour():
    import re

    from hhrlhf.reward.features import WORD_TOKENIZERS

    cfg = FeatureConfig()
    assert cfg.word_tokenizer == "word2" and cfg.word_pattern == WORD_TOKENIZERS["word2"]
    # the documented default: one-letter words are dropped, contractions split at "'"
    assert re.findall(cfg.word_pattern, "I don't know") == ["don", "know"]
    with pytest.raises(ValueError, match="unknown word tokenizer"):
        FeatureConfig(word_tokenizer="(a+)+$")
    with pytest.raises(ValueError, match="out of range"):
        FeatureConfig(word_bits=40)
