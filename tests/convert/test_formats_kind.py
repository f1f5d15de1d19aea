"""The red-team kind has one spelling across formats and subsets."""

from hhrlhf.convert import FORMATS
from hhrlhf.subsets import RED_TEAM, SUBSETS


def test_red_team_format_kind_matches_the_subset_kind():
    kinds = {f.kind for f in FORMATS.values()}
    assert SUBSETS[RED_TEAM].kind in kinds
    assert kinds <= {"preference", "conversation", SUBSETS[RED_TEAM].kind}
    assert FORMATS["redteam"].kind == SUBSETS[RED_TEAM].kind
