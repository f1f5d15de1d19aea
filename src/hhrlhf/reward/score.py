"""Scoring whole dialogues: every assistant turn in its context, and the minimum over turns.

The red-team file's ``min_harmlessness_score_transcript`` is defined this way: a PM scores each
assistant response given the conversation before it, and the transcript's score is the lowest
(lower = more harmful). :func:`score_dialogue` does the same with any model that has
``score(prompts, responses)``; :func:`score_attempts` adds, for red-team data, the correlation
of our minimum with the file's own.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..transcript import ASSISTANT, Dialogue, parse_transcript

__all__ = [
    "assistant_turns",
    "score_dialogue",
    "score_dialogues",
    "score_attempts",
    "correlation",
    "read_dialogues",
    "score_summary",
    "write_score_rows",
]


def assistant_turns(dialogue: Dialogue | str) -> list[tuple[str, str]]:
    """(prompt, response) for each assistant turn: the prompt is every turn before it, rendered
    exactly, ending with ``"\\n\\nAssistant:"``; the response is the turn's text."""
    if isinstance(dialogue, str):
        dialogue = parse_transcript(dialogue)
    out, prefix = [], dialogue.preamble
    for turn in dialogue.turns:
        if turn.role == ASSISTANT:
            out.append((prefix + "\n\nAssistant:", turn.text))
        prefix += turn.render()
    return out


def score_dialogues(model, dialogues, *, n_jobs: int = 1) -> list[dict]:
    """For each dialogue: ``{"turn_scores": [...], "min_score": float | None}`` (None when the
    dialogue has no assistant turn). All turns are scored in one batch."""
    spans: list[tuple[int, int]] = []
    prompts: list[str] = []
    responses: list[str] = []
    for d in dialogues:
        turns = assistant_turns(d)
        spans.append((len(prompts), len(prompts) + len(turns)))
        prompts += [t[0] for t in turns]
        responses += [t[1] for t in turns]
    # Any object with ``score(prompts, responses)`` will do; ``n_jobs`` is passed when asked for.
    kwargs = {"n_jobs": n_jobs} if n_jobs != 1 else {}
    scores = list(map(float, model.score(prompts, responses, **kwargs))) if responses else []
    return [
        {"turn_scores": scores[a:b], "min_score": min(scores[a:b]) if b > a else None}
        for a, b in spans
    ]


def score_dialogue(model, dialogue: Dialogue | str) -> dict:
    """Scores of one dialogue's assistant turns and their minimum."""
    return score_dialogues(model, [dialogue])[0]


def correlation(x, y) -> dict:
    """Pearson and Spearman correlation of two equal-length sequences (None when undefined)."""
    from ..errors import require

    np = require("numpy", "reward", "scoring")
    stats = require("scipy.stats", "reward", "scoring")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return {"n": int(len(x)), "pearson": None, "spearman": None}
    return {
        "n": int(len(x)),
        "pearson": float(stats.pearsonr(x, y)[0]),
        "spearman": float(stats.spearmanr(x, y)[0]),
    }


def score_attempts(model, attempts, *, n_jobs: int = 1) -> dict:
    """Score red-team attempts: per attempt our min score next to the file's, plus correlation."""
    attempts = list(attempts)
    scored = score_dialogues(model, [a.transcript for a in attempts], n_jobs=n_jobs)
    rows = [
        {
            "index": a.index,
            "turn_scores": s["turn_scores"],
            "min_score": s["min_score"],
            "file_min_score": a.min_harmlessness_score_transcript,
        }
        for a, s in zip(attempts, scored, strict=False)
    ]
    ours = [r["min_score"] if r["min_score"] is not None else float("nan") for r in rows]
    theirs = [
        r["file_min_score"] if r["file_min_score"] is not None else float("nan") for r in rows
    ]
    return {"rows": rows, "correlation": correlation(ours, theirs)}


def read_dialogues(
    path: str | os.PathLike,
    *,
    limit: int | None = None,
    lenient=False,
    skipped: list | None = None,
) -> tuple[list, list[str]]:
    """(ids, transcripts) of a JSONL file (or JSON array) of ``{"transcript": ...}`` objects,
    at most ``limit`` of them. ``id`` is the row's ``"id"`` or its position among the kept
    rows. A row without a ``"transcript"`` string is an error naming the file and line, or,
    with ``lenient`` (a flag, or a :class:`~hhrlhf.reader.Lenient` policy), skipped and
    recorded (in ``skipped`` with the flag)."""
    from ..errors import DataFormatError
    from ..reader import Lenient, detect_container, read_objects

    lenient = Lenient.of(lenient, skipped)

    unit = "line" if detect_container(path) == "jsonl" else "record"
    problem = 'expected an object with a "transcript" string'
    ids: list = []
    dialogues: list[str] = []
    for line, row in read_objects(path, lenient=lenient):
        text = row.get("transcript") if isinstance(row, dict) else None
        if not isinstance(text, str):
            if lenient is not None:
                lenient.skip(str(path), line, problem, unit)
                continue
            raise DataFormatError(path, line, problem)
        dialogues.append(text)
        ids.append(row.get("id", len(ids)))
        if limit and len(dialogues) >= limit:
            break
    return ids, dialogues


def score_summary(rows: list[dict], correlation: dict | None, skipped_rows: int = 0) -> dict:
    """Counts over scored rows (``min_score`` None: no assistant turn, so no score) and the
    mean of the min scores, with the correlation (red-team data) or None."""
    scored = [r["min_score"] for r in rows if r["min_score"] is not None]
    return {
        "dialogues": len(rows),
        "correlation": correlation,
        "scored": len(scored),
        "no_score": len(rows) - len(scored),
        "skipped_rows": skipped_rows,
        "mean_min_score": sum(scored) / len(scored) if scored else None,
    }


def write_score_rows(rows: list[dict], path: str | os.PathLike) -> Path:
    """Write one JSON object per row (JSONL) to ``path``."""
    import orjson

    from ..outputs import write_atomic

    path = Path(path)
    write_atomic(path, b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path
