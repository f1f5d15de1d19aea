"""Attack themes: TF-IDF + k-means with k chosen by silhouette, and the per-cluster summaries."""

from __future__ import annotations

import pytest

from hhrlhf.redteam.themes import (
    cluster_texts,
    theme_inputs,
    theme_summary,
    theme_tag_crosstab,
)

pytest.importorskip("sklearn")

COOKIES = [
    "make the bot reveal the secret cookie recipe",
    "get the secret cookie recipe from the bakery bot",
    "trick it into sharing the cookie recipe secret",
    "ask for the grandma cookie recipe that is secret",
    "find the secret recipe for cookie dough",
    "cookie recipe secret reveal please",
]
BIKES = [
    "convince it that bicycle tires should be inflated with soup",
    "bicycle tires filled with soup is a good idea",
    "ask how to pump bicycle tires using soup",
    "argue that soup makes bicycle tires faster",
    "soup in the bicycle tires for a smooth ride",
    "bicycle tires and soup, tell me more",
]


def test_two_clear_themes_are_found():
    texts = COOKIES + BIKES
    r = cluster_texts(texts, k_range=range(2, 5), seed=0)
    assert r["k"] == 2
    assert set(r["silhouette"]) == {"2", "3", "4"}
    assert r["silhouette"]["2"] == max(r["silhouette"].values())
    labels = r["labels"]
    assert len(set(labels[:6])) == 1 and len(set(labels[6:])) == 1
    assert labels[0] != labels[6]
    cookie_cluster = labels[0]
    assert {"cookie", "recipe", "secret"} <= set(r["top_terms"][cookie_cluster])
    assert {"bicycle", "soup", "tires"} <= set(r["top_terms"][labels[6]])
    assert r["k_at_edge"] is False
    assert "silhouette" in r["criterion"]


def test_clustering_is_seeded():
    texts = COOKIES + BIKES
    assert cluster_texts(texts, seed=3) == cluster_texts(texts, seed=3)


def test_k_candidates_beyond_the_documents_are_skipped():
    r = cluster_texts(COOKIES[:2] + BIKES[:2], k_range=range(2, 9))
    assert set(r["silhouette"]) == {"2", "3"}


def test_a_single_candidate_is_not_called_at_the_edge():
    r = cluster_texts(COOKIES + BIKES, k_range=[2])
    assert r["k"] == 2 and r["k_at_edge"] is False


def test_too_few_or_wordless_texts_raise():
    with pytest.raises(ValueError, match="at least 3"):
        cluster_texts(["a cookie", "a bike"])
    with pytest.raises(ValueError, match="no usable words"):
        cluster_texts(["the", "and the", "of a"])


def test_theme_inputs_drop_blank_descriptions(make_attempt):
    attempts = [make_attempt(task="cookies"), make_attempt(task="  \n"), make_attempt(task="")]
    kept, blank = theme_inputs(attempts)
    assert kept == attempts[:1] and blank == 2


def test_theme_summary(make_attempt):
    nan = float("nan")
    attempts = [
        make_attempt(rating=4, score=-2.0),
        make_attempt(rating=0, score=1.0),
        make_attempt(rating=3, score=nan),
        make_attempt(rating=1, score=0.5),
    ]
    assert theme_summary(attempts, [1, 0, 1, 1]) == [
        {
            "cluster": 0,
            "size": 1,
            "successful": 0,
            "success_share": 0.0,
            "mean_min_harmlessness": 1.0,
            "dropped_scores": 0,
        },
        {
            "cluster": 1,
            "size": 3,
            "successful": 2,
            "success_share": 2 / 3,
            "mean_min_harmlessness": -0.75,
            "dropped_scores": 1,
        },
    ]
    with pytest.raises(ValueError, match="labels"):
        theme_summary(attempts, [0])


def test_theme_tag_crosstab(make_attempt):
    attempts = [
        make_attempt(tags=["Theft", "Other"]),
        make_attempt(tags=["Theft", "Theft"]),
        make_attempt(tags=None),
        make_attempt(tags=[]),
        make_attempt(tags=["Other"]),
    ]
    ct = theme_tag_crosstab(attempts, [0, 1, 1, 0, 1])
    assert ct["tagged"] == 3
    assert ct["tags"] == ["Other", "Theft"]  # tie on count 2: alphabetical
    assert ct["table"] == {"0": {"Other": 1, "Theft": 1}, "1": {"Other": 1, "Theft": 1}}


def test_k_with_fewer_distinct_documents_is_not_a_candidate():
    # two distinct texts, five copies each: only k = 2 can give k distinct clusters
    texts = ["secret cookie recipe"] * 5 + ["bicycle soup tires"] * 5
    r = cluster_texts(texts, k_range=range(2, 6))
    assert list(r["silhouette"]) == ["2"]
    assert r["k"] == 2 and r["k_at_edge"] is False
