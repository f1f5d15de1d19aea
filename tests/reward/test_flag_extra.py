"""Flags with extra training pairs (``hh collect flag --data``): in every fold's training set,
never scored."""

import numpy as np
import pytest

from hhrlhf.reward.flag import flag_pairs
from hhrlhf.reward.flag_eval import auroc, inject_flips
from hhrlhf.reward.flag_fit import ExtraTraining
from hhrlhf.reward.flag_run import run_flag

from .conftest import SMALL, make_pairs


class Spy:
    def __init__(self, n):
        self.fixed = np.linspace(-1, 1, n)
        self.calls = []
        self.used = []

    def margins(self, train, predict, *, desc=""):
        self.calls.append((set(train.tolist()), predict.tolist()))
        self.used.append("spy")
        return self.fixed[predict]


def test_extra_pairs_train_every_fold_and_are_never_scored():
    own, extra = make_pairs(40, seed=31), make_pairs(25, seed=32)
    spy = Spy(len(own) + len(extra))
    result = flag_pairs(own, ExtraTraining(spy, len(own), len(extra)), folds=4, seeds=2)
    assert len(result.rows) == len(own) and result.solvers == {"spy": 8}
    everything_extra = set(range(len(own), len(own) + len(extra)))
    for train, predict in spy.calls:
        assert everything_extra <= train
        assert max(predict) < len(own) and not train & set(predict)


def test_extra_training_pairs_sharpen_the_flags_of_a_few_pairs():
    own, flipped = inject_flips(make_pairs(40, seed=33), 0.2, seed=3)
    upstream = make_pairs(300, seed=34)
    opts = {"options": {"config": SMALL}, "folds": 4, "seeds": 1}
    alone, _ = run_flag(own, **opts)
    helped, report = run_flag(own, extra=upstream, **opts)
    score = [auroc([r["p_mislabelled"] for r in rows], flipped) for rows in (alone, helped)]
    assert score[1] > score[0] and score[1] > 0.95
    assert report["extra_training"] == {"pairs": 300, "shared_prompt": 0}
    assert [r["index"] for r in helped] == [p.index for p in own]


def test_extra_pairs_sharing_a_prompt_with_a_flagged_pair_are_left_out():
    own = make_pairs(30, seed=35)
    upstream = make_pairs(50, seed=36) + own[:5]
    _, report = run_flag(own, extra=upstream, options={"config": SMALL}, folds=3, seeds=1)
    assert report["extra_training"] == {"pairs": 50, "shared_prompt": 5}


def test_strata_refused_with_extra_pairs():
    own = make_pairs(30, seed=37)
    with pytest.raises(ValueError, match="extra training"):
        run_flag(own, extra=make_pairs(10, seed=38), strata=3)
