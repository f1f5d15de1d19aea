"""``review_order = "flagged"``: the comparisons ``hh collect flag`` doubts are reviewed first
(likely_mislabelled, then ambiguous, each by p_mislabelled descending), then the rest in the
usual order; on SQLite and PostgreSQL."""

from __future__ import annotations

from planted import planted
from sqlalchemy import select

from hhrlhf.collect.config import load_config
from hhrlhf.collect.db.models import Review
from hhrlhf.collect.services import annotators
from hhrlhf.collect.services.flags import store_flags
from hhrlhf.collect.services.review import next_task, submit_review


def _queue(storage, who, order):
    """The comparisons ``who`` is given, in order, each answered before the next."""
    out = []
    while (task := next_task(storage, who, 1.0, order=order)) is not None:
        with storage.read() as s:
            out.append(s.scalar(select(Review.comparison_id).where(Review.id == task.id)))
        submit_review(storage, who, task.id, "a", 2, 4)
    return out


def _flag(ids):
    def row(i, cls, p):
        return {"comparison_id": ids[i], "margin": 0.0, "margin_sd": 0.0, "p_mislabelled": p,
                "class": cls}  # fmt: skip

    return [
        row(5, "likely_mislabelled", 0.7),
        row(2, "likely_mislabelled", 0.9),
        row(1, "ambiguous", 0.45),
        row(6, "ambiguous", 0.55),
        row(3, "clear", 0.1),
        row(0, "clear", 0.39),
    ]


def test_flagged_comparisons_come_first(storage):
    _, ids, _ = planted(storage, n=8, flipped=())
    store_flags(storage, _flag(ids))
    bob, _ = annotators.add_annotator(storage, "bob")
    assert _queue(storage, bob, "flagged") == [ids[i] for i in (2, 5, 6, 1, 0, 3, 4, 7)]


def test_the_usual_order_ignores_the_flags(storage):
    _, ids, _ = planted(storage, n=8, flipped=())
    store_flags(storage, _flag(ids))
    carol, _ = annotators.add_annotator(storage, "carol")
    assert _queue(storage, carol, "fewest_reviews") == ids


def test_flagged_order_without_flags_is_the_usual_order(storage):
    _, ids, _ = planted(storage, n=5, flipped=())
    dave, _ = annotators.add_annotator(storage, "dave")
    assert _queue(storage, dave, "flagged") == ids


def test_review_order_defaults_to_todays_and_reads_from_the_config(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[[backend]]\nname = "x"\nkind = "demo"\n')
    assert load_config(cfg).review_order == "fewest_reviews"
    cfg.write_text('[collect]\nreview_order = "flagged"\n[[backend]]\nname = "x"\nkind = "demo"\n')
    assert load_config(cfg).review_order == "flagged"
