import pytest

from hhrlhf.errors import DataFormatError, HHError
from hhrlhf.reward.rerank import as_prompt, rerank, rerank_file

from .test_score import LengthModel


def test_as_prompt():
    assert as_prompt("How?") == "\n\nHuman: How?\n\nAssistant:"
    t = "\n\nHuman: a\n\nAssistant:"
    assert as_prompt(t) == t
    assert as_prompt("\n\nHuman: a") == t


def test_rerank_best_of_k():
    model = LengthModel()
    out = rerank(model, "q", ["bb", "a", "dddd", "ccc"], k=3)
    # scored with a leading space added: lengths 3, 2, 5 (the 4th candidate is beyond k)
    assert out["scores"] == [3.0, 2.0, 5.0]
    assert out["ranking"] == [2, 0, 1]
    assert out["best"] == 2 and out["best_response"] == "dddd"
    assert out["margin"] == 2.0 and out["tied_best"] is False
    assert model.calls[0][0] == ["\n\nHuman: q\n\nAssistant:"] * 3
    assert rerank(model, "q", ["x"])["margin"] is None
    tie = rerank(model, "q", ["ab", "cd"])
    assert tie["ranking"] == [0, 1] and tie["tied_best"] is True
    with pytest.raises(HHError):
        rerank(model, "q", [])


def test_rerank_file(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(
        '{"id": "a", "prompt": "q", "candidates": ["x", "xyz"]}\n\n'
        '{"prompt": "r", "responses": ["long one", "s"]}\n'
    )
    out = rerank_file(LengthModel(), p)
    assert [(r["id"], r["best"], r["k"]) for r in out] == [("a", 1, 2), (3, 0, 2)]


@pytest.mark.parametrize(
    "line, k, message",
    [
        ("{bad", None, "line 1: invalid JSON"),
        ('{"prompt": 1, "candidates": ["a"]}', None, '"prompt" must be a string'),
        ('{"prompt": "q", "candidates": []}', None, "non-empty list of strings"),
        ('{"prompt": "q", "candidates": ["a", "b"]}', 3, "2 candidates, fewer than --k 3"),
    ],
)
def test_rerank_file_errors(tmp_path, line, k, message):
    p = tmp_path / "c.jsonl"
    p.write_text(line + "\n")
    with pytest.raises(DataFormatError, match=message):
        rerank_file(LengthModel(), p, k=k)
