"""The fits behind ``hh pm flag``: a preference model trained on some pairs, scoring others.

A *fitter* answers one question, ``margins(train, predict)``: train a PM on the pairs at the
indices ``train`` (nothing else: the featuriser's IDF weights and standardisation are fitted
on those pairs' responses too, as ``hh pm train`` does) and return its margin
``r(chosen) - r(rejected)`` on the pairs at the indices ``predict``.

- :class:`LinearFitter`: the project's linear PM (:mod:`.model`), with every pair's raw
  features computed once. Each fit solves the same L2-penalised Bradley-Terry problem as
  :func:`.model.train_pm`, ``min_w (1/n) sum_i c_i softplus(-d_i . w) + l2/2 |w|^2`` over the
  difference features ``d_i = x(chosen) - x(rejected)``, in one of two ways:

  - ``dual``: by the representer theorem the optimum is ``w = D^T a`` for the training rows
    ``D``, so the problem is one in ``a`` through the kernel ``K = D D^T`` (n x n, dense):
    ``min_a (1/n) sum_i c_i softplus(-(K a)_i) + l2/2 a^T K a``. :func:`dual_fit` solves it
    by Newton's method with a backtracking line search (each step one n x n linear solve);
    it reaches the same optimum as the primal L-BFGS fit, to its tolerance (a test compares
    the margins), in a few seconds for 2,000 pairs instead of the primal's tens;
  - ``primal``: L-BFGS on ``w`` itself (:func:`.model.fit_weights`), the path of
    ``hh pm train``; its cost grows linearly with the pairs, the dual's with their cube and
    its kernel's memory with their square, so ``auto`` (the default) takes the dual up to
    :data:`DUAL_MAX_PAIRS` training pairs and the primal above.

- :class:`BackendFitter`: any backend of :data:`.backends.BACKENDS` through
  :func:`.backends.train_model` (a model directory written to a temporary folder), for judges
  other than the linear PM.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import require
from .loss import sigmoid
from .model import fit_weights, pair_weights

__all__ = [
    "DUAL_MAX_PAIRS",
    "SOLVERS",
    "dual_fit",
    "LinearFitter",
    "BackendFitter",
    "ExtraTraining",
]

#: ``auto`` fits through the kernel up to this many training pairs (a 3,000 x 3,750 kernel is
#: 90 MB and a Newton step about a second on one core; measured in bench/RESULTS-pm.md).
DUAL_MAX_PAIRS = 3000
SOLVERS = ("auto", "dual", "primal")


def dual_fit(
    kernel: Any,
    weights: Any,
    l2: float,
    *,
    max_iter: int = 100,
    tol: float = 1e-12,
    desc: str = "fitting",
) -> Any:
    """The dual coefficients ``a`` of the L2-penalised Bradley-Terry fit whose training kernel
    is ``kernel`` (``K = D D^T`` of the training difference rows); the training margins are
    ``K a`` and any other pair's margin is ``(d . D^T) a``.

    Newton's method on ``F(a) = (1/n) sum c_i softplus(-m_i) + l2/2 a.m``, ``m = K a``: the
    gradient is ``K (g + l2 a)`` with ``g = -c sigmoid(-m) / n``, the Hessian
    ``K (S K + l2 I)`` with ``S = diag(c sigmoid(m) sigmoid(-m) / n)``, so the step solves
    ``(S K + l2 I) step = -(g + l2 a)``; it stops when the Newton decrement is below ``tol``.
    """
    np = require("numpy", "reward", "the preference model")
    from ..progress import progress

    k = np.asarray(kernel, dtype=float)
    c = np.asarray(weights, dtype=float)
    n = k.shape[0]
    a = np.zeros(n)
    m = np.zeros(n)

    def objective(m: Any, a: Any) -> float:
        return float((np.logaddexp(0.0, -m) * c).sum() / n + 0.5 * l2 * (a @ m))

    f = objective(m, a)
    with progress(total=max_iter, desc=desc, unit="Newton steps") as bar:
        for _ in range(max_iter):
            g = -c * sigmoid(-m) / n + l2 * a
            s = c * sigmoid(m) * sigmoid(-m) / n
            system = s[:, None] * k
            system[np.diag_indices(n)] += l2
            step = np.linalg.solve(system, -g)
            decrement = -float((k @ g) @ step)
            bar.update(1)
            if decrement < tol:
                break
            t, k_step = 1.0, k @ step
            while True:  # backtracking (Armijo); a Newton step on this convex loss is accepted
                trial = objective(m + t * k_step, a + t * step)
                if trial <= f - 1e-4 * t * decrement or t < 1e-10:
                    break
                t /= 2
            a, m, f = a + t * step, m + t * k_step, trial
        bar.finish()
    return a


class LinearFitter:
    """Fits of the linear PM on subsets of ``pairs``, the raw features computed once."""

    def __init__(
        self,
        pairs: Sequence[Any],
        *,
        config: Any = None,
        l2: float = 5e-4,
        harm_weight: float = 1.0,
        max_iter: int = 300,
        n_jobs: int = 1,
        solver: str = "auto",
    ) -> None:
        from .features import Featurizer

        if solver not in SOLVERS:
            raise ValueError(f"unknown solver {solver!r}; known: {', '.join(SOLVERS)}")
        self.config, self.l2, self.max_iter, self.solver = config, l2, max_iter, solver
        prompts = [p.prompt for p in pairs for _ in (0, 1)]
        responses = [r for p in pairs for r in (p.chosen_response, p.rejected_response)]
        self.raw = Featurizer(config).raw_features(prompts, responses, n_jobs=n_jobs)
        self.weights = pair_weights([p.subset for p in pairs], harm_weight)
        self.n = len(pairs)
        #: The solver each fit used, in order (``dual`` or ``primal``).
        self.used: list[str] = []

    def _diffs(self, train: Any, rows: Any) -> Any:
        """Difference rows of the pairs ``rows``, the featuriser fitted on ``train``'s."""
        np = require("numpy", "reward", "the preference model")
        from .features import Featurizer

        fitted_on = np.stack([2 * train, 2 * train + 1], axis=1).ravel()
        f = Featurizer(self.config)
        f.fit(None, None, raw={k: v[fitted_on] for k, v in self.raw.items()})
        both = np.stack([2 * rows, 2 * rows + 1], axis=1).ravel()
        x = f.transform(None, None, raw={k: v[both] for k, v in self.raw.items()})
        return (x[0::2] - x[1::2]).tocsr()

    def margins(self, train: Any, predict: Any, *, desc: str = "fitting") -> Any:
        """Margins on ``predict`` of a PM fitted on ``train`` (index arrays)."""
        np = require("numpy", "reward", "the preference model")

        train, predict = np.asarray(train, dtype=np.int64), np.asarray(predict, dtype=np.int64)
        rows = np.concatenate([train, predict])
        d = self._diffs(train, rows)
        d_train, d_predict = d[: len(train)], d[len(train) :]
        solver = self.solver
        if solver == "auto":
            solver = "dual" if len(train) <= DUAL_MAX_PAIRS else "primal"
        self.used.append(solver)
        if solver == "dual":
            k = np.asarray((d @ d_train.T).todense())
            a = dual_fit(k[: len(train)], self.weights[train], self.l2, desc=desc)
            return k[len(train) :] @ a
        result = fit_weights(
            d_train, self.weights[train], l2=self.l2, max_iter=self.max_iter, desc=desc
        )
        return np.asarray(d_predict @ result.x).ravel()


class BackendFitter:
    """Fits of any backend (:func:`.backends.train_model`) on subsets of ``pairs``; each model
    is written to a temporary folder, scores the pairs to predict, and is deleted."""

    def __init__(self, pairs: Sequence[Any], backend: str, **options: Any) -> None:
        self.pairs, self.backend, self.options = list(pairs), backend, options
        self.used: list[str] = []

    def margins(self, train: Any, predict: Any, *, desc: str = "fitting") -> Any:
        np = require("numpy", "reward", "the preference model")
        from .backends import train_model

        say: Callable[[str], None] = lambda msg: None  # noqa: E731 (the bars say enough)
        del desc  # each backend shows its own progress
        with tempfile.TemporaryDirectory(prefix="hh-flag-") as tmp:
            model = train_model(
                self.backend, [self.pairs[i] for i in train], tmp, progress=say, **self.options
            )
            chosen, rejected = model.score_pairs([self.pairs[i] for i in predict])
        self.used.append(self.backend)
        return np.asarray(chosen, dtype=float) - np.asarray(rejected, dtype=float)


class ExtraTraining:
    """A fitter whose every fit also trains on some pairs that are never scored.

    ``inner`` fits on a list of pairs whose first ``own`` are the ones flagged and the rest
    extra training data (``hh collect flag --data``: upstream pairs beside the collected
    ones); ``margins(train, predict)`` takes indices into the first ``own`` and trains on
    ``train`` and every extra pair."""

    def __init__(self, inner: Any, own: int, extra: int) -> None:
        np = require("numpy", "reward", "the preference model")
        self.inner = inner
        self.extra = np.arange(own, own + extra, dtype=np.int64)

    @property
    def used(self) -> list[str]:
        return list(getattr(self.inner, "used", []))

    def margins(self, train: Any, predict: Any, *, desc: str = "fitting") -> Any:
        np = require("numpy", "reward", "the preference model")
        train = np.concatenate([np.asarray(train, dtype=np.int64), self.extra])
        return self.inner.margins(train, predict, desc=desc)
