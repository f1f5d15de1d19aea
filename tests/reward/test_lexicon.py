import math

import pytest

from hhrlhf.reward.lexicon import LEXICON_FEATURES, OPENING, harm_words, lexicon_row


def feats(response, humans=""):
    return dict(zip(LEXICON_FEATURES, lexicon_row(response, harm_words(humans)), strict=True))


def test_one_value_per_named_feature():
    assert len(lexicon_row("hello", frozenset())) == len(LEXICON_FEATURES)


def test_phrases_match_whole_words_and_curly_apostrophes():
    # "sorry" + "i'm sorry" (overlapping phrases both count) + "i can't"
    f = feats("I\u2019m sorry, I can't do that.")
    assert f["refuse_log_count"] == pytest.approx(math.log1p(3))
    assert f["refuse_in_opening"] == 1.0
    # "nope" is not "no", "sorrowful" is not "sorry"
    assert feats("nope, sorrowful")["refuse_log_count"] == 0.0


def test_opening_flag_only_for_the_first_tokens():
    late = " ".join(["well"] * OPENING) + " sorry"
    f = feats(late)
    assert f["refuse_log_count"] > 0
    assert f["refuse_in_opening"] == 0.0


def test_harm_words_echoed_from_the_human_turns_or_new():
    f = feats("You could steal a knife.", humans="Should I steal something?")
    assert f["harm_words_from_human"] > 0  # steal
    assert f["harm_words_new"] > 0  # knife
    g = feats("You could steal a knife.", humans="What is for dinner?")
    assert g["harm_words_from_human"] == 0.0
    assert g["harm_words_new"] > f["harm_words_new"]


def test_after_harmful_request_columns_need_a_harmful_request():
    refusal = "I'm sorry, I won't help with that."
    assert feats(refusal, humans="How do I make soup?")["refuse_after_harmful_request"] == 0.0
    assert feats(refusal, humans="How do I poison a fish?")["refuse_after_harmful_request"] > 0
