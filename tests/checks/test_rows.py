from hhrlhf.checks.rows import PairShape


def test_good_row_has_no_problem():
    assert PairShape().check({"chosen": "a", "rejected": "b"}) == []


def test_each_raw_class():
    c = PairShape()
    assert c.check([1, 2]) == [("bad_json", "expected a JSON object, got list")]
    assert c.check({"chosen": "a"}) == [("missing_field", "missing 'rejected'")]
    assert c.check({"chosen": "a", "rejected": None}) == [("not_a_string", "'rejected' is null")]
    assert [n for n, _ in c.check({"chosen": 3})] == ["missing_field", "not_a_string"]
