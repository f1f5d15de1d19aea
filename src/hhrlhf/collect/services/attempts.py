"""Finished red-team conversations as upstream red-team attempts (the ten fields, upstream
spelling), for the export's ``red-team-attempts/red_team_attempts.jsonl.gz``; see
:mod:`.export` for the rules."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ...records import RedTeamAttempt
from ..config import BackendConfig
from .export_check import check_line, stored_turns
from .transcripts import ExportConversation, ExportTurn

__all__ = ["RedTeamAttempt", "red_team_attempts", "load_scorer", "UNKNOWN_SIZE"]

#: ``num_params`` of an attempt whose model size was never recorded nor configured
UNKNOWN_SIZE = "unknown"


def _transcript(turns: Sequence[ExportTurn]) -> str | None:
    """The conversation as continued: up to the last turn with a response to continue with."""
    decided = [t for t in turns if t.continued is not None]
    if not decided:
        return None
    last = decided[-1]
    return f"{last.prefix} {last.continued}"


def _stored_model_info(turns: Sequence[ExportTurn]) -> tuple[str | None, str | None]:
    """``(model_type, num_params)`` recorded with the conversation's latest responses (one
    backend answers a whole red-team conversation); None where none was recorded."""
    for turn in reversed(turns):
        for cand in turn.candidates.values():
            if cand.model_type or cand.num_params:
                return cand.model_type, cand.num_params
    return None, None


def load_scorer(scorer: Any) -> Any:
    if scorer is None or hasattr(scorer, "score"):
        return scorer
    from ...reward.backends import load_model

    return load_model(scorer)


def red_team_attempts(
    conversations: Iterable[ExportConversation],
    *,
    backends: Mapping[str, BackendConfig] | None = None,
    scorer: Any = None,
) -> tuple[list[RedTeamAttempt], Counter[str], list[str]]:
    """``(attempts, left_out, unconfigured)`` from exported conversations (see the module doc).

    ``left_out`` counts red-team conversations that are not attempts ("unfinished", "no_turns");
    ``unconfigured`` names backends without ``model_type``/``num_params`` in ``backends``.
    """
    from ...reward.score import score_dialogues

    backends = backends or {}
    model = load_scorer(scorer)
    out: list[RedTeamAttempt] = []
    left_out: Counter[str] = Counter()
    unconfigured: set[str] = set()
    for conv in conversations:
        if conv.mode != "red-team":
            continue
        if conv.status != "finished" or conv.rating is None:
            left_out["unfinished"] += 1
            continue
        transcript = _transcript(conv.turns)
        if transcript is None:
            left_out["no_turns"] += 1
            continue
        decided = max(t.index for t in conv.turns if t.continued is not None)
        check_line(
            conv, decided, transcript, stored_turns(conv, decided + 1), "red-team transcript"
        )
        name = conv.backend or ""
        cfg = backends.get(name)
        # as recorded with the responses when they were generated, else as configured now
        stored = _stored_model_info(conv.turns)
        model_type = stored[0] or (cfg and cfg.model_type)
        num_params = stored[1] or (cfg and cfg.num_params)
        if not model_type or not num_params:
            unconfigured.add(name)
        annotator = conv.annotator
        out.append(
            RedTeamAttempt(
                transcript=transcript,
                min_harmlessness_score_transcript=None,
                num_params=num_params or UNKNOWN_SIZE,
                model_type=model_type or name,
                rating=float(conv.rating),
                task_description=conv.task_description,
                task_description_harmlessness_score=None,
                tags=None,
                red_team_member_id=annotator.member_id,
                is_upworker=annotator.attributes.get("is_upworker") is True,
            )
        )
    if model is not None and out:
        scored = score_dialogues(model, [a.transcript for a in out])
        tasks = model.score([""] * len(out), [a.task_description for a in out])
        out = [
            replace(
                a,
                min_harmlessness_score_transcript=s["min_score"],
                task_description_harmlessness_score=float(t),
            )
            for a, s, t in zip(out, scored, tasks, strict=True)
        ]
    return out, left_out, sorted(unconfigured)
