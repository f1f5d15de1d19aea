"""How pairs are drawn: by the backends' weights, a rerank backend one arm with its share; the
app draws with them; ``hh collect stats`` shows comparisons per backend pair."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
from click.testing import CliRunner

from hhrlhf.cli import cli
from hhrlhf.collect.config import BackendConfig
from hhrlhf.collect.services.pairing import choose_backends

#: chi-square critical values at p = 0.001 by degrees of freedom: a seeded draw under them
CHI2_999 = {1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 6: 22.46}


def _chi2(observed: Counter, expected: dict, n: int) -> float:
    return sum((observed[k] - p * n) ** 2 / (p * n) for k, p in expected.items())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_draw_follows_the_weights(seed):
    names = ["p1", "p2", "p3", "best"]
    weights = [1.0, 2.0, 3.0, 2.0]
    total = sum(weights)
    w = dict(zip(names, weights, strict=True))
    rng = random.Random(seed)
    n = 20_000
    pairs = Counter()
    order = Counter()
    for _ in range(n):
        a, b = choose_backends(names, "random", rng, weights=weights, rerank={"best"})
        pairs[tuple(sorted((a, b)))] += 1
        order[a < b] += 1
    # the rerank arm answers both slots with its share; a plain first draw is paired with
    # another plain backend drawn by weight among the others
    plain = {"p1": 1.0, "p2": 2.0, "p3": 3.0}
    expected = {("best", "best"): w["best"] / total}
    for x in plain:
        for y in plain:
            if x < y:
                rest_x = sum(plain.values()) - plain[x]
                rest_y = sum(plain.values()) - plain[y]
                expected[(x, y)] = (plain[x] / total) * (plain[y] / rest_x) + (plain[y] / total) * (
                    plain[x] / rest_y
                )
    assert abs(sum(expected.values()) - 1) < 1e-12
    assert set(pairs) == set(expected)
    assert _chi2(pairs, expected, n) < CHI2_999[len(expected) - 1]
    # A and B order: a fair coin over the plain pairs
    plain_n = n - pairs[("best", "best")]
    assert abs(order[True] - (order[False] - pairs[("best", "best")])) < 4 * plain_n**0.5


def test_two_drawable_backends_and_a_rerank_arm_all_get_turns():
    """The case that gave every turn to the rerank arm: now it has its weight's share."""
    rng = random.Random(5)
    names = ["m1", "m2", "best"]
    got = Counter(
        choose_backends(names, "random", rng, weights=[1, 1, 1], rerank={"best"})
        for _ in range(3000)
    )
    rerank_share = got[("best", "best")] / 3000
    assert 0.30 < rerank_share < 0.37  # 1/3
    assert got[("m1", "m2")] + got[("m2", "m1")] == 3000 - got[("best", "best")]


def test_fixed_pairing_and_a_single_backend():
    rng = random.Random(0)
    assert choose_backends(["x", "y"], "fixed", rng) == ("x", "y")
    assert choose_backends(["x"], "random", rng) == ("x", "x")
    assert choose_backends(["only", "best"], "random", random.Random(1), rerank={"best"}) in {
        ("only", "only"),
        ("best", "best"),
    }


def test_the_app_draws_by_weight_and_stats_show_each_pair(
    make_client, settings, alice, storage, db_url
):
    heavy = (
        BackendConfig("demo-a", "demo", model="sample", variant=0),
        BackendConfig("demo-b", "demo", model="sample", variant=1),
        BackendConfig("demo-c", "demo", model="sample", variant=0, weight=1000.0),
    )
    client = make_client(replace(settings, backends=heavy))
    _, h, _ = alice
    cid = client.post("/api/v1/conversations", json={"task_description": "t"}, headers=h).json()[
        "id"
    ]
    for i in range(20):
        turn = client.post(
            f"/api/v1/conversations/{cid}/turns",
            json={"text": f"How do I prune roses, question {i}?"},
            headers=h,
        ).json()
        r = client.post(
            f"/api/v1/turns/{turn['id']}/choice", json={"pick": "a", "strength": 3}, headers=h
        )
        assert r.status_code == 200, r.text
    with storage.read() as s:
        from sqlalchemy import select

        from hhrlhf.collect.db.models import Candidate

        backends = Counter(s.scalars(select(Candidate.backend)).all())
    # demo-c's weight puts it in (nearly) every turn; equal weights would leave it out of 1 in 3
    assert backends["demo-c"] == 20, backends
    r = CliRunner().invoke(cli, ["collect", "stats", "--db", db_url, "--resamples", "0"])
    assert r.exit_code == 0, r.output
    assert "comparisons per backend pair:" in r.output
    pairs = [line.strip() for line in r.output.splitlines() if " vs " in line]
    counted = sum(int(line.rsplit(": ", 1)[1]) for line in pairs)
    identical = sum(
        1
        for t in client.get(f"/api/v1/conversations/{cid}", headers=h).json()["turns"]
        if t["candidates"][0]["text"] == t["candidates"][1]["text"]
    )
    assert counted == 20 - identical
    assert all(line.startswith(("demo-a vs demo-c", "demo-b vs demo-c")) for line in pairs)
