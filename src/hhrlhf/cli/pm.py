"""``hh pm``: train, evaluate, score and rerank preference models (over hhrlhf.reward)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..dataset import iter_attempts, resolve_source
from ..errors import HHError
from ..outputs import replace_dir
from ..reward.backends import BACKENDS, get_backend
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


def _training_data(files, data, pairs) -> dict:
    """Where the pairs came from (source, subsets, splits, rows, each file's sha256)."""
    from ..reward.saved import describe_training_data

    return describe_training_data(pairs, files=files, source=resolve_source(data).label)


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
@click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    default="linear",
    show_default=True,
    help="linear: CPU, [reward] extra; transformers: [train] extra.",
)
@click.option(
    "--lambda",
    "harm_weight",
    type=float,
    default=1.0,
    show_default=True,
    help="Weight of harmless-base pairs: L = L_help + lambda * L_harm.",
)
@click.option("--l2", type=float, default=5e-4, show_default=True, help="Ridge penalty (linear).")
@click.option("--max-iter", type=int, default=300, show_default=True, help="L-BFGS iterations.")
@click.option("--jobs", type=int, default=1, show_default=True, help="Featurisation processes.")
@click.option("--base-model", default=None, help="HF model id/path (transformers backend).")
@click.option("--epochs", type=float, default=1.0, show_default=True, help="transformers backend.")
@click.option("--max-steps", type=int, default=-1, help="transformers backend: stop after N steps.")
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
    spec = get_backend(backend)
    if "base_model" in spec.required and not base_model:
        raise click.UsageError(f"--backend {backend} needs --base-model ID")
    check_outputs(force, out=(out, "dir"))
    from ..reward.backends import train_model

    files, pairs = _load(
        subsets, file_subset, split, data, "train", lenient, skipped, holdout_hint=holdout is None
    )
    held: list = []
    if holdout is not None:
        from ..reward.holdout import split_holdout

        pairs, held = split_holdout(pairs, holdout)
        if not pairs or not held:
            raise HHError(
                f"--holdout {holdout} leaves {len(pairs)} pairs to train on and {len(held)} "
                "held out: choose another fraction, or select more data"
            )
    info = _training_data(files, data, pairs)
    if held:
        info["holdout"] = {"fraction": holdout, "held_out_pairs": len(held), "by": "prompt"}
    click.echo(
        f"training on {len(pairs):,} pairs ({', '.join(info['subsets'])})"
        + (f"; {len(held):,} pairs held out by prompt (--holdout {holdout})" if held else ""),
        err=True,
    )
    given = {
        "harm_weight": harm_weight,
        "l2": l2,
        "max_iter": max_iter,
        "n_jobs": jobs,
        "base_model": base_model,
        "epochs": epochs,
        "max_steps": max_steps,
        "max_length": max_length,
    }
    with replace_dir(out) as tmp:  # never a mix of the old model's files and the new
        model = train_model(
            backend,
            pairs,
            tmp,
            training_data=info,
            progress=lambda m: click.echo(m, err=True),
            **{k: given[k] for k in spec.options if k in given},
        )
    meta = model.meta
    held_out = _held_out_accuracy(model, held) if held else None
    if as_json:
        emit_json(
            {"model": str(out), "backend": backend, **meta}
            | ({"held_out": held_out} if held_out else {})
        )
    else:
        m = meta["metrics"]
        acc = m.get("train_accuracy")
        click.echo(
            f"saved {out} ({backend}); train loss {m['train_loss']:.4f}"
            + (f", train accuracy {acc:.3f}" if acc is not None else "")
            + f", {m['train_seconds']:.1f}s"
        )
        if held_out:
            click.echo(
                f"held-out accuracy {held_out['accuracy']:.3f} on {held_out['pairs']:,} pairs "
                f"({held_out['ties']} ties); evaluate them again with: hh pm eval --model {out} "
                f"--holdout {holdout} (and the same data)"
            )


def _held_out_accuracy(model, held) -> dict:
    """Accuracy (ties not correct) of ``model`` on the held-out pairs."""
    from ..reward.holdout import margin_accuracy

    return {"pairs": len(held), **margin_accuracy(*model.score_pairs(held))}


def _fmt_acc(s: dict) -> dict:
    lo, hi = s["ci95"]
    return {
        "n": s["n"],
        "accuracy": "-" if s["accuracy"] is None else f"{100 * s['accuracy']:.1f}%",
        "95% CI": "-" if lo is None else f"{100 * lo:.1f}-{100 * hi:.1f}",
        "ties": s["ties"],
    }


def print_report(report: dict, name: str) -> None:
    """The evaluation report as plain tables (stdout)."""
    rows = [{"model": name, "group": "overall", **_fmt_acc(report["overall"])}]
    for section in ("subsets", "by_turns", "length_controlled"):
        prefix = {"by_turns": "turns ", "subsets": "", "length_controlled": ""}[section]
        for key, s in report[section].items():
            rows.append({"model": name, "group": f"{prefix}{key}", **_fmt_acc(s)})
    for base, rep in report.get("baselines", {}).items():
        rows.append({"model": base, "group": "overall", **_fmt_acc(rep["overall"])})
        for key, s in rep["length_controlled"].items():
            rows.append({"model": base, "group": key, **_fmt_acc(s)})
    print_table(rows)
    cal = report.get("calibration")
    if cal and cal["ece"] is not None:
        click.echo(f"\ncalibration of {name}: ECE {cal['ece']:.3f}")
        print_table(
            [
                {
                    "confidence bin": f"{b['low']:.2f}-{b['high']:.2f}",
                    "n": b["n"],
                    "mean confidence": "-" if b["confidence"] is None else f"{b['confidence']:.3f}",
                    "accuracy": "-" if b["accuracy"] is None else f"{b['accuracy']:.3f}",
                }
                for b in cal["bins"]
            ]
        )


def _training_overlap(target, files) -> list[str] | None:
    """:func:`~hhrlhf.reward.saved.training_overlap`, with a warning line on stderr when the
    evaluated files include one the model was trained on."""
    from ..reward.saved import training_overlap

    overlap = training_overlap(getattr(target, "meta", None), files)
    if overlap:
        click.echo(
            "warning: evaluating on training data: "
            + ", ".join(overlap)
            + " has the checksum of a file this model was trained on, so the accuracy is not "
            "a held-out estimate",
            err=True,
        )
    return overlap


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
    from ..reward.evaluate import evaluate_model, read_scores_file

    given = [x for x in (model_path, scores_path, hf_model) if x]
    if len(given) != 1:
        raise click.UsageError("give exactly one of --model, --scores, --hf-model")
    files, pairs = _load(subsets, file_subset, split, data, "test", lenient, skipped)
    if holdout is not None:
        from ..reward.holdout import split_holdout

        pairs = split_holdout(pairs, holdout)[1]
        if not pairs:
            raise HHError(f"--holdout {holdout} holds out no pair of this data")
        click.echo(f"evaluating the {len(pairs):,} pairs held out by --holdout {holdout}", err=True)
    t0 = time.perf_counter()
    if model_path:
        from ..reward.backends import load_model

        target, name = load_model(model_path), str(model_path)
    elif scores_path:
        target, name = read_scores_file(scores_path, pairs), str(scores_path)
    else:
        from ..reward.hf import HFRewardModel

        target, name = HFRewardModel(hf_model, max_length=max_length), hf_model
    if getattr(target, "backend", None) == "transformers":
        target.max_length = max_length
    trained = _trained_pairs(target, model_path, pairs, holdout)
    if trained is None:
        overlap = _training_overlap(target, files)
    else:  # the pairs say more than the files (a --holdout model shares its file)
        from ..reward.saved import training_overlap

        overlap = training_overlap(getattr(target, "meta", None), files)
    report = evaluate_model(target, pairs, seed=seed, n_boot=n_boot, bins=bins, n_jobs=jobs)
    report["model"] = name
    cut = getattr(target, "pair_truncation", None)
    if cut:
        report["truncation"] = cut
        click.echo(
            f"truncated {cut['truncated']:,} of {cut['pairs']:,} pairs to {cut['max_length']} "
            f"tokens (the prompt's beginning cut; {cut['response_cut']:,} with a response "
            "too long to keep whole: --max-length)",
            err=True,
        )
    if trained is not None:
        report["evaluated_on_training_data"] = trained > 0
        report["training_pairs_evaluated"] = trained
    else:
        report["evaluated_on_training_data"] = None if overlap is None else bool(overlap)
    report["training_data_files"] = overlap or []
    report["seconds"] = round(time.perf_counter() - t0, 3)
    if plot_path:
        from ..reward.plots import write_evaluation_plot

        write_evaluation_plot(report, plot_path, name)
        click.echo(f"wrote {plot_path}", err=True)
    if as_json:
        emit_json(report)
    else:
        if trained:
            click.echo(
                f"WARNING: {trained:,} of {len(pairs):,} pairs below were trained on: "
                "not a held-out estimate"
            )
        print_report(report, f"model (TRAINED ON {trained:,})" if trained else "model")


def _trained_pairs(target, model_path, pairs, holdout) -> int | None:
    """How many of ``pairs`` the saved model was trained on (its pair fingerprints), with a
    warning on stderr when any; None when the model keeps no fingerprints."""
    from ..reward.holdout import read_fingerprints, trained_on

    fingerprints = read_fingerprints(model_path) if model_path else None
    if fingerprints is None:
        return None
    n = len(trained_on(pairs, fingerprints))
    if n:
        record = (getattr(target, "meta", None) or {}).get("training_data")
        fraction = ((record or {}).get("holdout") or {}).get("fraction")
        hint = (
            f"; it was trained with --holdout {fraction}: pass --holdout {fraction} to evaluate "
            "the pairs it held out"
            if fraction and holdout is None
            else ""
        )
        click.echo(
            f"warning: evaluating on training data: {n:,} of {len(pairs):,} pairs were in this "
            f"model's training set, so the accuracy is not a held-out estimate{hint}",
            err=True,
        )
    return n


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
    from ..reward.evaluate import BASELINES
    from ..reward.holdout import cv_summary, kfold, margin_accuracy
    from ..reward.model import train_pm

    files, pairs = _load(subsets, file_subset, split, data, "train", lenient, skipped)
    splits = kfold(pairs, folds, seed)
    if any(not te or not tr for tr, te in splits):
        raise HHError(
            f"{len(pairs)} pairs ({len({p.prompt for p in pairs})} prompts) cannot fill "
            f"{folds} folds: use fewer --folds or more data"
        )
    names = ["model", *(b for b in BASELINES if b != "random")]
    rows = []
    for j, (tr, te) in enumerate(splits):
        train_pairs, test_pairs = [pairs[i] for i in tr], [pairs[i] for i in te]
        model = train_pm(
            train_pairs,
            l2=l2,
            harm_weight=harm_weight,
            max_iter=max_iter,
            n_jobs=jobs,
            desc=f"fold {j + 1}/{folds}",
        )
        row: dict = {"fold": j + 1, "train_pairs": len(tr), "test_pairs": len(te)}
        for name in names:
            c, r = (
                model.score_pairs(test_pairs, n_jobs=jobs)
                if name == "model"
                else BASELINES[name](test_pairs, seed)
            )
            row[name] = margin_accuracy(c, r)
        rows.append(row)
        click.echo(
            f"fold {j + 1}/{folds}: accuracy {row['model']['accuracy']:.3f} on {len(te):,} pairs",
            err=True,
        )
    summary = cv_summary(rows, names)
    result = {
        "pairs": len(pairs),
        "folds": folds,
        "seed": seed,
        "grouped_by": "prompt",
        "data": [f.rel for f in files],
        "hyperparameters": {"l2": l2, "harm_weight": harm_weight, "max_iter": max_iter},
        "per_fold": rows,
        "summary": summary,
    }
    if as_json:
        emit_json(result)
        return
    click.echo(f"{folds}-fold CV on {len(pairs):,} pairs (grouped by prompt, seed {seed})")
    print_table(
        [
            {
                "model": name,
                "mean accuracy": f"{100 * v['mean_accuracy']:.1f}%",
                "std": f"{100 * v['std']:.1f}",
                "per fold": " ".join(f"{100 * r[name]['accuracy']:.1f}" for r in rows),
                "ties": v["ties"],
            }
            for name, v in summary.items()
        ]
    )


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
        c = summary["correlation"]
        click.echo(
            f"scored {summary['scored']:,} of {summary['dialogues']:,} dialogues"
            + (
                f" ({summary['no_score']:,} without an assistant turn got no score)"
                if summary["no_score"]
                else ""
            )
            + (f", {len(skipped):,} bad row(s) skipped" if skipped else "")
            + "; mean min score "
            + ("-" if summary["mean_min_score"] is None else f"{summary['mean_min_score']:.3f}")
        )
        if c:
            pr = "-" if c["pearson"] is None else f"{c['pearson']:.3f}"
            sr = "-" if c["spearman"] is None else f"{c['spearman']:.3f}"
            click.echo(
                f"correlation with the file's min score (n={c['n']:,}): Pearson {pr}, Spearman {sr}"
            )


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
