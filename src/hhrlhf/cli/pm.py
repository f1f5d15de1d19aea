"""``hh pm``: train, evaluate, score and rerank preference models (over hhrlhf.reward)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..dataset import iter_attempts
from .options import (
    check_outputs,
    data_option,
    emit_json,
    file_subsets,
    force_option,
    json_line,
    json_option,
    lenient_option,
    note_rows_read,
    pass_skipped,
    print_table,
    seed_option,
    subset_option,
)
from .pm_options import backend_kwargs, backend_options, loss_kwargs, loss_options
from .pm_report import (
    print_cv,
    print_evaluation,
    print_scored,
    print_trained,
    warn_training_data,
    warn_truncation,
)

__all__ = ["commands", "pm", "demo_step"]


@click.group()
def pm():
    """Preference models: train (Bradley-Terry), evaluate honestly, score dialogues, rerank.

    \b
    Examples:
      hh pm train harmless-base --split train --data sample --out pm-model
      hh pm eval harmless-base --split test --data sample --model pm-model
      hh pm score --model pm-model --data sample
      hh pm rerank --model pm-model --in candidates.jsonl --k 4
    """


def _load(subsets, file_subset, split, data, preferred: str, lenient, skipped, holdout_hint=False):
    """``(files, pairs)``: the preference files to read (a note on stderr when the preferred
    split is not there) and their pairs."""
    from ..reward.data import load_pairs, select_pair_files

    subsets = file_subsets(subsets, file_subset, data)
    files, note = select_pair_files(subsets, split, data, preferred)
    if note:
        if holdout_hint:
            note += (
                " (nothing is held out: pass --holdout 0.2 to keep a fifth of the prompts "
                "out, or run hh pm cv for a cross-validated accuracy)"
            )
        click.echo(note, err=True)
    pairs = load_pairs(files, lenient=lenient, skipped=skipped)
    note_rows_read(len(pairs))
    return files, pairs


@pm.command()
@click.argument("subsets", nargs=-1)
@click.option(
    "--split",
    default=None,
    metavar="SPLIT",
    help="Split to train on (default: train where there is one, else the splits there).",
)
@click.option(
    "--out", "out", required=True, type=click.Path(path_type=Path), help="Model directory to write."
)
@backend_options
@loss_options
@click.option(
    "--max-length",
    type=click.IntRange(8, None),
    default=512,
    show_default=True,
    help="transformers backend: tokens per side; a longer prompt loses its beginning, never the "
    "response (a pair whose response alone is longer is dropped); stderr counts both.",
)
@click.option(
    "--holdout",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    metavar="FRACTION",
    help="Hold out about FRACTION of the prompts (a stable hash of each prompt: the same "
    "prompt lands on the same side on every run, and never on both) and report accuracy on them.",
)
@data_option
@subset_option
@lenient_option
@json_option
@force_option
@pass_skipped
def train(
    subsets,
    split,
    out,
    backend,
    harm_weight,
    l2,
    max_iter,
    jobs,
    base_model,
    epochs,
    max_steps,
    max_length,
    label_smoothing,
    margin_from,
    holdout,
    data,
    file_subset,
    lenient,
    as_json,
    force,
    skipped,
):
    """Train a preference model on SUBSETS (default: the four preference subsets).

    \b
    Example:
      hh pm train harmless-base helpful-base --split train --data sample --out pm-model --lambda 2
      hh pm train harmless-base --data sample --split test --holdout 0.2 --out pm-model
    """
    options = backend_kwargs(
        backend,
        harm_weight=harm_weight,
        l2=l2,
        max_iter=max_iter,
        jobs=jobs,
        base_model=base_model,
        epochs=epochs,
        max_steps=max_steps,
        max_length=max_length,
    )
    check_outputs(force, out=(out, "dir"))
    from ..reward.training import held_out_accuracy, hold_out, train_into, training_record

    files, pairs = _load(
        subsets, file_subset, split, data, "train", lenient, skipped, holdout_hint=holdout is None
    )
    held: list = []
    if holdout is not None:
        pairs, held = hold_out(pairs, holdout)
    options |= loss_kwargs(backend, label_smoothing, margin_from, pairs)
    info = training_record(files, data, pairs, held, holdout)
    click.echo(
        f"training on {len(pairs):,} pairs ({', '.join(info['subsets'])})"
        + (f"; {len(held):,} pairs held out by prompt (--holdout {holdout})" if held else ""),
        err=True,
    )
    model = train_into(backend, pairs, out, info, lambda m: click.echo(m, err=True), **options)
    held_out = held_out_accuracy(model, held) if held else None
    if as_json:
        emit_json(
            {"model": str(out), "backend": backend, **model.meta}
            | ({"held_out": held_out} if held_out else {})
        )
    else:
        print_trained(model.meta, out, backend, held_out, holdout)


@pm.command("eval")
@click.argument("subsets", nargs=-1)
@click.option(
    "--split",
    default=None,
    metavar="SPLIT",
    help="Split to evaluate on (default: test where there is one, else the splits there).",
)
@click.option("--model", "model_path", type=click.Path(path_type=Path), help="A saved model.")
@click.option(
    "--scores",
    "scores_path",
    type=click.Path(path_type=Path),
    help='JSONL of {"id": "subset/split/index", "chosen": s, "rejected": s}.',
)
@click.option("--hf-model", default=None, help="A Hugging Face reward model id ([train] extra).")
@seed_option("Bootstrap/random seed.")
@click.option("--bootstrap", "n_boot", type=int, default=1000, show_default=True)
@click.option("--bins", type=int, default=10, show_default=True, help="Calibration bins.")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(path_type=Path),
    help="Write a PNG (reliability + accuracy), needs matplotlib.",
)
@click.option("--jobs", type=int, default=1, show_default=True)
@click.option(
    "--holdout",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    metavar="FRACTION",
    help="Evaluate only the pairs `hh pm train --holdout FRACTION` held out of this data.",
)
@click.option(
    "--max-length",
    type=click.IntRange(8, None),
    default=512,
    show_default=True,
    help="Transformers models: tokens per text; a longer prompt loses its beginning, never "
    "the response.",
)
@data_option
@subset_option
@lenient_option
@json_option
@force_option
@pass_skipped
def eval_command(
    subsets,
    split,
    model_path,
    scores_path,
    hf_model,
    seed,
    n_boot,
    bins,
    plot_path,
    jobs,
    holdout,
    max_length,
    data,
    file_subset,
    lenient,
    as_json,
    force,
    skipped,
):
    """Evaluate a model, a scores file or an HF reward model, with baselines in the same run.

    \b
    Example:
      hh pm eval harmless-base --split test --data sample --model pm-model --json
    """
    check_outputs(force, plot=(plot_path, "file"))
    from ..reward.eval_run import check_training_data, evaluate_target, held_out_pairs, load_target

    given = [x for x in (model_path, scores_path, hf_model) if x]
    if len(given) != 1:
        raise click.UsageError("give exactly one of --model, --scores, --hf-model")
    files, pairs = _load(subsets, file_subset, split, data, "test", lenient, skipped)
    if holdout is not None:
        pairs = held_out_pairs(pairs, holdout)
        click.echo(f"evaluating the {len(pairs):,} pairs held out by --holdout {holdout}", err=True)
    t0 = time.perf_counter()
    target, name = load_target(model_path, scores_path, hf_model, pairs, max_length)
    check = check_training_data(target, model_path, pairs, files)
    warn_training_data(check, len(pairs), holdout)
    report = evaluate_target(
        target, name, pairs, check, seed=seed, n_boot=n_boot, bins=bins, n_jobs=jobs, started=t0
    )
    warn_truncation(report)
    if plot_path:
        from ..reward.plots import write_evaluation_plot

        write_evaluation_plot(report, plot_path, name)
        click.echo(f"wrote {plot_path}", err=True)
    if as_json:
        emit_json(report)
    else:
        print_evaluation(report, check.trained, len(pairs))


@pm.command()
@click.argument("subsets", nargs=-1)
@click.option(
    "--split",
    default=None,
    metavar="SPLIT",
    help="Split to cross-validate on (default: train where there is one, else the splits there).",
)
@click.option("--folds", type=click.IntRange(2, None), default=5, show_default=True)
@seed_option("Draws the folds (another seed, other folds).")
@click.option(
    "--lambda",
    "harm_weight",
    type=float,
    default=1.0,
    show_default=True,
    help="Weight of harmless-base pairs: L = L_help + lambda * L_harm.",
)
@click.option("--l2", type=float, default=5e-4, show_default=True, help="Ridge penalty.")
@click.option("--max-iter", type=int, default=300, show_default=True, help="L-BFGS iterations.")
@click.option("--jobs", type=int, default=1, show_default=True, help="Featurisation processes.")
@data_option
@subset_option
@lenient_option
@json_option
@pass_skipped
def cv(
    subsets,
    split,
    folds,
    seed,
    harm_weight,
    l2,
    max_iter,
    jobs,
    data,
    file_subset,
    lenient,
    as_json,
    skipped,
):
    """K-fold cross-validated accuracy of the linear PM, the baselines on the same folds.

    Folds are grouped by prompt (pairs sharing a prompt are in the same fold) and seeded: an
    honest accuracy where there is no separate test split. Each fold trains on the others
    and is scored on itself; ties count as not correct.

    \b
    Example:
      hh pm cv harmless-base --split test --folds 5 --data sample
    """
    from ..reward.cv import cross_validate

    files, pairs = _load(subsets, file_subset, split, data, "train", lenient, skipped)
    result = cross_validate(
        pairs,
        folds,
        seed,
        l2=l2,
        harm_weight=harm_weight,
        max_iter=max_iter,
        n_jobs=jobs,
        data=[f.rel for f in files],
        progress=lambda m: click.echo(m, err=True),
    )
    if as_json:
        emit_json(result)
    else:
        print_cv(result)


@pm.command()
@click.option("--model", "model_path", required=True, type=click.Path(path_type=Path))
@click.option(
    "--in",
    "in_path",
    type=click.Path(path_type=Path),
    help='JSONL of {"transcript": ...} dialogues (default: red-team attempts from --data).',
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(path_type=Path),
    help="Write one JSONL row per dialogue (turn scores, min score).",
)
@click.option("--limit", type=int, default=None, help="Score at most N dialogues.")
@click.option("--jobs", type=int, default=1, show_default=True)
@data_option
@lenient_option
@json_option
@force_option
@pass_skipped
def score(model_path, in_path, out_path, limit, jobs, data, lenient, as_json, force, skipped):
    """Score every assistant turn in context and the min over turns.

    For red-team data, also the correlation of our min score with the file's
    min_harmlessness_score_transcript.

    \b
    Example:
      hh pm score --model pm-model --data sample --out scores.jsonl
    """
    check_outputs(force, out=(out_path, "file"))
    from ..reward.backends import load_model
    from ..reward.score import (
        read_dialogues,
        score_attempts,
        score_dialogues,
        score_summary,
        write_score_rows,
    )

    model = load_model(model_path)
    if in_path:
        ids, dialogues = read_dialogues(in_path, limit=limit, lenient=lenient, skipped=skipped)
        note_rows_read(len(dialogues))
        rows = [
            {"id": i, **s}
            for i, s in zip(ids, score_dialogues(model, dialogues, n_jobs=jobs), strict=True)
        ]
        correlation = None
    else:
        attempts = []
        for a in iter_attempts(data=data, lenient=lenient, skipped=skipped):
            attempts.append(a)
            if limit and len(attempts) >= limit:
                break
        note_rows_read(len(attempts))
        result = score_attempts(model, attempts, n_jobs=jobs)
        rows, correlation = result["rows"], result["correlation"]
    summary = score_summary(rows, correlation, len(skipped))
    if out_path:
        write_score_rows(rows, out_path)
        click.echo(f"wrote {len(rows):,} rows to {out_path}", err=True)
    if as_json:
        emit_json(summary)
    else:
        print_scored(summary, len(skipped))


@pm.command()
@click.option("--model", "model_path", required=True, type=click.Path(path_type=Path))
@click.option(
    "--in",
    "in_path",
    required=True,
    type=click.Path(path_type=Path),
    help='JSONL of {"prompt": ..., "candidates": [...]} rows.',
)
@click.option("--k", type=int, default=None, help="Use the first K candidates of each row.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON object per row to stdout.")
def rerank(model_path, in_path, k, as_jsonl):
    """Best-of-k: rank each prompt's candidates by PM score; print the best and the margin.

    \b
    Example:
      hh pm rerank --model pm-model --in candidates.jsonl --k 4 --jsonl
    """
    from ..reward.backends import load_model
    from ..reward.rerank import rerank_file

    if k is not None and k < 1:
        raise click.UsageError("--k must be at least 1")
    results = rerank_file(load_model(model_path), in_path, k=k)
    if as_jsonl:
        for r in results:
            click.echo(json_line(r))
        return
    print_table(
        [
            {
                "id": r["id"],
                "k": r["k"],
                "best": r["best"],
                "ranking": " ".join(map(str, r["ranking"])),
                "margin": "-" if r["margin"] is None else f"{r['margin']:.3f}",
            }
            for r in results
        ]
    )


def demo_step(data: str, out: Path) -> None:
    """``hh demo``'s PM step (:func:`hhrlhf.demo.pm_demo`): print what it did."""
    from ..demo import pm_demo

    done = pm_demo(data, out)
    if done.skipped:
        click.echo(f"skipped: {done.skipped}")
        return
    report, model = done.report, done.model
    assert report is not None and model is not None  # pm_demo sets both unless skipped
    o = report["overall"]
    base = ", ".join(
        f"{k} {100 * v['overall']['accuracy']:.1f}%" for k, v in report["baselines"].items()
    )
    click.echo(
        f"pm: trained on {done.train_pairs:,} pairs in "
        f"{model.meta['metrics']['train_seconds']:.1f}s; test accuracy "
        f"{100 * o['accuracy']:.1f}% (95% CI {100 * o['ci95'][0]:.1f}-"
        f"{100 * o['ci95'][1]:.1f}, {o['ties']} ties) on {o['n']:,} pairs"
    )
    click.echo(f"pm: baselines: {base}; ECE {report['calibration']['ece']:.3f}")
    click.echo(f"pm: model and report in {done.out}")


commands = [pm]
