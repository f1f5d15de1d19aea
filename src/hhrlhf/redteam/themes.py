"""Attack themes: clusters of the red-teamers' task descriptions (TF-IDF + k-means).

The paper grouped attacks by hand-assigned tags, which exist on only 742 of 38,961 records.
The task descriptions exist on all of them, so clustering them gives every attempt a theme.
``k`` is not a magic number: it is picked by the mean silhouette (cosine) over a small range,
computed on a seeded subsample so the choice stays fast on the full file, and every candidate's
score is returned so a reader can see how clear the choice was. The final model is then fitted
on all descriptions with the chosen ``k``.

Pure functions: same texts and seed, same clusters.
"""

from __future__ import annotations

import warnings
from collections import Counter, defaultdict
from collections.abc import Sequence

from ..errors import require
from ..records import RedTeamAttempt
from .stats import DEFAULT_THRESHOLD, finite, mean

__all__ = ["cluster_texts", "theme_inputs", "theme_summary", "theme_tag_crosstab"]

_FEATURE = "attack-theme clustering"


def cluster_texts(
    texts: Sequence[str],
    *,
    k_range: Sequence[int] = range(2, 11),
    seed: int = 0,
    max_features: int = 5000,
    selection_sample: int = 3000,
    top_terms: int = 8,
) -> dict:
    """Cluster ``texts`` (all non-blank) and say why ``k`` was chosen.

    Returns ``{"k", "k_at_edge", "criterion", "silhouette": {k: score}, "labels": [...],
    "top_terms": [[term, ...] per cluster], "selection_docs", "vocabulary"}``. Candidates of
    ``k`` that are not below the number of documents, or for which k-means finds fewer than
    ``k`` distinct clusters (too few distinct documents), are skipped. Ties in silhouette go to the
    smaller ``k``; ``k_at_edge`` is True when the largest candidate won (the silhouette was
    still rising, so more themes might separate better: widen ``k_range`` to look). Raises
    ``ValueError`` when there are fewer than three documents or no vocabulary.
    """
    # checked up front, so that a missing extra is named before any work starts
    for module in (
        "numpy",
        "sklearn.feature_extraction.text",
        "sklearn.cluster",
        "sklearn.metrics",
    ):
        require(module, "report", _FEATURE)
    threadpoolctl = require("threadpoolctl", "report", _FEATURE)
    # k-means on a few thousand short documents takes milliseconds, but OpenMP thread start-up
    # and spinning made each fit ~40x slower on a two-core machine: one thread is faster here.
    with threadpoolctl.threadpool_limits(1):
        return _cluster(texts, k_range, seed, max_features, selection_sample, top_terms)


def _cluster(texts, k_range, seed, max_features, selection_sample, top_terms) -> dict:
    import numpy as np
    from sklearn import cluster as cluster_mod
    from sklearn import metrics
    from sklearn.feature_extraction import text as text_mod

    n = len(texts)
    if n < 3:
        raise ValueError(f"need at least 3 task descriptions to cluster, got {n}")
    vec = text_mod.TfidfVectorizer(
        stop_words="english",
        sublinear_tf=True,
        max_features=max_features,
        min_df=2 if n >= 50 else 1,
        max_df=0.5 if n >= 50 else 1.0,
        token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z]+\b",
    )
    try:
        x = vec.fit_transform(texts)
    except ValueError as exc:  # empty vocabulary
        raise ValueError(f"task descriptions have no usable words: {exc}") from None
    terms = vec.get_feature_names_out()

    rng = np.random.default_rng(seed)
    sel = np.sort(rng.choice(n, size=min(n, selection_sample), replace=False))
    xs = x[sel]
    candidates = [k for k in k_range if 2 <= k < len(sel)]
    if not candidates:
        raise ValueError(f"no candidate k in {list(k_range)} fits {len(sel)} documents")
    scores: dict[int, float] = {}
    for k in candidates:
        km = cluster_mod.KMeans(n_clusters=k, n_init=3, random_state=seed)
        with warnings.catch_warnings():
            # fewer distinct documents than k: k-means warns and returns fewer clusters;
            # such a k is not a real candidate and is left out below
            warnings.simplefilter("ignore", category=UserWarning)
            labels = km.fit_predict(xs)
        if len(set(labels.tolist())) < k:
            continue
        scores[k] = float(metrics.silhouette_score(xs, labels, metric="cosine"))
    if not scores:
        raise ValueError("every candidate k collapsed into one cluster")
    best = max(scores, key=lambda k: (scores[k], -k))

    km = cluster_mod.KMeans(n_clusters=best, n_init=3, random_state=seed)
    labels = km.fit_predict(x)
    centers = km.cluster_centers_
    tops = [[str(terms[i]) for i in np.argsort(-c)[:top_terms] if c[i] > 0] for c in centers]
    return {
        "k": best,
        "k_at_edge": best == max(scores) and len(scores) > 1,
        "criterion": "highest mean silhouette (cosine) over the candidates, "
        f"on a seeded sample of {len(sel)} descriptions",
        "silhouette": {str(k): v for k, v in scores.items()},
        "labels": [int(v) for v in labels],
        "top_terms": tops,
        "selection_docs": int(len(sel)),
        "vocabulary": int(len(terms)),
    }


def theme_summary(
    attempts: Sequence[RedTeamAttempt],
    labels: Sequence[int],
    threshold: float = DEFAULT_THRESHOLD,
) -> list[dict]:
    """Per cluster: ``{"cluster", "size", "successful", "success_share", "mean_min_harmlessness",
    "dropped_scores"}``, in cluster order. ``attempts[i]`` has cluster ``labels[i]``."""
    if len(attempts) != len(labels):
        raise ValueError(f"{len(attempts)} attempts but {len(labels)} labels")
    groups: dict[int, list[RedTeamAttempt]] = defaultdict(list)
    for a, lab in zip(attempts, labels, strict=True):
        groups[lab].append(a)
    out = []
    for lab in sorted(groups):
        g = groups[lab]
        ok = sum(a.rating >= threshold for a in g)
        scores, dropped = finite(a.min_harmlessness_score_transcript for a in g)
        out.append(
            {
                "cluster": lab,
                "size": len(g),
                "successful": ok,
                "success_share": ok / len(g),
                "mean_min_harmlessness": mean(scores),
                "dropped_scores": dropped,
            }
        )
    return out


def theme_tag_crosstab(attempts: Sequence[RedTeamAttempt], labels: Sequence[int]) -> dict:
    """Cluster x tag counts over attempts with a non-empty tag list.

    Returns ``{"tagged", "tags": [...most frequent first], "table": {cluster: {tag: count}}}``;
    a tag repeated within one attempt counts once.
    """
    table: dict[int, Counter[str]] = defaultdict(Counter)
    totals: Counter[str] = Counter()
    tagged = 0
    for a, lab in zip(attempts, labels, strict=True):
        if not a.tags:
            continue
        tagged += 1
        for t in dict.fromkeys(a.tags):
            table[lab][t] += 1
            totals[t] += 1
    tags = [t for t, _ in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))]
    return {
        "tagged": tagged,
        "tags": tags,
        "table": {str(lab): {t: table[lab][t] for t in tags} for lab in sorted(table)},
    }


def _is_blank(text: str) -> bool:
    return not text or not text.strip()


def theme_inputs(attempts: Sequence[RedTeamAttempt]) -> tuple[list[RedTeamAttempt], int]:
    """The attempts with a non-blank task description, and how many were blank."""
    kept = [a for a in attempts if not _is_blank(a.task_description)]
    return kept, len(attempts) - len(kept)
