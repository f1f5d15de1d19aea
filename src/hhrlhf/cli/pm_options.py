"""Options shared by the ``hh pm`` commands that train models (``train``, ``flag``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..reward.backends import BACKENDS, get_backend

__all__ = ["backend_options", "backend_kwargs", "fold_options", "loss_options", "loss_kwargs"]

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = (
    click.option(
        "--backend",
        type=click.Choice(list(BACKENDS)),
        default="linear",
        show_default=True,
        help="linear: CPU, [reward] extra; transformers: [train] extra.",
    ),
    click.option(
        "--lambda",
        "harm_weight",
        type=float,
        default=1.0,
        show_default=True,
        help="Weight of harmless-base pairs: L = L_help + lambda * L_harm.",
    ),
    click.option(
        "--l2", type=float, default=5e-4, show_default=True, help="Ridge penalty (linear)."
    ),
    click.option("--max-iter", type=int, default=300, show_default=True, help="L-BFGS iterations."),
    click.option("--jobs", type=int, default=1, show_default=True, help="Featurisation processes."),
    click.option("--base-model", default=None, help="HF model id/path (transformers backend)."),
    click.option(
        "--epochs", type=float, default=1.0, show_default=True, help="transformers backend."
    ),
    click.option(
        "--max-steps", type=int, default=-1, help="transformers backend: stop after N steps."
    ),
)


def backend_options(f: F) -> F:
    """``--backend`` and every backend's training options, as ``hh pm train`` takes them
    (passed as ``backend, harm_weight, l2, max_iter, jobs, base_model, epochs, max_steps``)."""
    for option in reversed(_OPTIONS):
        f = option(f)
    return f


def backend_kwargs(backend: str, **given: Any) -> dict[str, Any]:
    """The options of ``given`` (the command's parameters) that ``backend`` takes, as
    :func:`hhrlhf.reward.backends.train_model` keywords; a usage error when one it needs is
    missing."""
    spec = get_backend(backend)
    if "base_model" in spec.required and not given.get("base_model"):
        raise click.UsageError(f"--backend {backend} needs --base-model ID")
    names = {"jobs": "n_jobs"}
    options = {names.get(k, k): v for k, v in given.items()}
    return {k: options[k] for k in spec.options if k in options}


_LOSS_OPTIONS = (
    click.option(
        "--label-smoothing",
        type=click.FloatRange(0, 0.5, max_open=True),
        default=0.0,
        show_default=True,
        metavar="A",
        help="Linear backend: trust each label with probability 1 - A "
        "((1 - A) softplus(-m) + A softplus(m)).",
    ),
    click.option(
        "--margin-from",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        metavar="FLAGS.jsonl",
        help="Linear backend: adaptive margin, -log sigmoid(r_c - r_r - m) with m each "
        "pair's margin from hh pm flag.",
    ),
)


def loss_options(f: F) -> F:
    """``--label-smoothing`` and ``--margin-from`` (passed as ``label_smoothing``,
    ``margin_from``)."""
    for option in reversed(_LOSS_OPTIONS):
        f = option(f)
    return f


def loss_kwargs(
    backend: str, label_smoothing: float, margin_from: Path | None, pairs: Any
) -> dict[str, Any]:
    """The training keywords of ``--label-smoothing`` and ``--margin-from`` for ``pairs``; a
    usage error on a backend that does not take them."""
    given = {
        "--label-smoothing": ("label_smoothing", bool(label_smoothing)),
        "--margin-from": ("margins", margin_from is not None),
    }
    spec = get_backend(backend)
    for name, (option, on) in given.items():
        if on and option not in spec.options:
            raise click.UsageError(f"{name} is for the linear backend, not {backend}")
    out: dict[str, Any] = {}
    if label_smoothing:
        out["label_smoothing"] = label_smoothing
    if margin_from is not None:
        from ..reward.flag import flag_margins, read_flags

        out["margins"] = flag_margins(read_flags(margin_from), pairs, margin_from)
    return out


def fold_options(unit: str) -> Callable[[F], F]:
    """``--folds`` and ``--seeds`` of the flagging commands (``hh pm flag``, ``hh collect
    flag``); ``unit`` names what is flagged in the help ("pair", "comparison")."""

    def decorate(f: F) -> F:
        f = click.option(
            "--seeds",
            type=click.IntRange(1, None),
            default=2,
            show_default=True,
            help=f"Fold draws; a {unit}'s margin is the mean over them.",
        )(f)
        return click.option("--folds", type=click.IntRange(2, None), default=5, show_default=True)(
            f
        )

    return decorate
