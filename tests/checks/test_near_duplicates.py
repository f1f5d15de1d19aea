import pytest
from checks_helpers import t

from hhrlhf.checks.near_duplicates import MinHasher, NearDuplicateLeak, optimal_bands
from hhrlhf.records import PreferencePair

np = pytest.importorskip("numpy", reason="near-duplicate detection needs hhrlhf[audit]")

WORDS = "the quick brown fox jumps over the lazy dog near the quiet river bank at dawn".split()
BASE = " ".join(WORDS)  # 16 words -> 14 word 3-grams


def test_optimal_bands_match_datasketch():
    assert optimal_bands(0.8, 128) == (9, 13)
    try:
        from datasketch.lsh import _optimal_param
    except ImportError:
        return
    assert optimal_bands(0.5, 64) == _optimal_param(0.5, 64, 0.5, 0.5)


def test_signature_estimates_jaccard():
    # replacing the last word changes 1 of 14 shingles: J = 13 / 15
    other = " ".join(WORDS[:-1] + ["dusk"])
    sig, has = MinHasher(1024).signatures([BASE, other, "completely unrelated words here", ""])
    assert has.tolist() == [True, True, True, False]
    est = (sig[0] == sig[1]).mean()
    assert abs(est - 13 / 15) < 0.05
    assert (sig[0] == sig[2]).mean() < 0.02


def test_normalisation_and_short_texts():
    h = MinHasher(64)
    sig, has = h.signatures(["Hello   World", "hello world", "hello"])
    assert has.all()
    assert (sig[0] == sig[1]).all() and not (sig[0] == sig[2]).all()


def test_shingles_never_cross_documents():
    sh, doc = MinHasher(8).shingles(["a b c", "d e f g"])
    assert doc.tolist() == [0, 1, 1]


def pp(text, split, index):
    return PreferencePair(t(text, "x"), t(text, "y"), "helpful-base", split, index)


def test_near_duplicate_leak_flags_close_but_not_exact():
    check = NearDuplicateLeak(threshold=0.7, chunk=2)
    check.check(pp(BASE, "train", 0))
    check.check(pp("an entirely different question about gardening and tomatoes", "train", 1))
    check.check(pp("yet another train prompt that is unrelated to anything", "train", 2))
    check.check(pp(" ".join(WORDS[:-1] + ["dusk"]), "test", 0))  # near
    check.check(pp(BASE.upper(), "test", 1))  # exact after normalisation: a leak, not near
    check.check(pp("what is the capital of france", "test", 2))  # far
    got = check.finish()
    assert [f.source for f in got] == [("helpful-base", "test", 0)]
    assert "helpful-base/train index 0" in got[0].detail


def test_threshold_is_validated():
    with pytest.raises(ValueError, match="threshold"):
        NearDuplicateLeak(threshold=0)
