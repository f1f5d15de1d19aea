"""Red-team record checks: keys, types, and values outside what the file should hold."""

from __future__ import annotations

import math
from typing import Any

from ..records import (
    MODEL_TYPES,
    NUM_PARAMS,
    RED_TEAM_KEYS,
    TASK_SCORE_KEY_CARD,
    TASK_SCORE_KEY_REAL,
    parse_num_params,
)
from .base import Check, CheckClass

__all__ = ["RedTeamFields", "RED_TEAM_KEYS_ACCEPTED"]

_CARD_SCORE_KEY = TASK_SCORE_KEY_CARD
#: The nine keys spelled the same in the file and on the card.
_REQUIRED = tuple(k for k in RED_TEAM_KEYS if k != TASK_SCORE_KEY_CARD)
RED_TEAM_KEYS_ACCEPTED = frozenset((*_REQUIRED, TASK_SCORE_KEY_REAL, _CARD_SCORE_KEY))


def _is_number(v: Any) -> bool:
    return type(v) in (int, float)


class RedTeamFields(Check):
    name = "red_team_fields"
    looks_at = "red_team"
    classes = (
        CheckClass("missing_key", "error", "a red-team record lacks one of its ten keys"),
        CheckClass("extra_key", "warning", "a red-team record has a key beyond the ten"),
        CheckClass("wrong_type", "error", "a red-team field has the wrong JSON type"),
        CheckClass("rating_out_of_range", "error", "rating is not a whole number from 0 to 4"),
        CheckClass(
            "unknown_model_type",
            "warning",
            f"model_type is not one of {MODEL_TYPES} (collected data may name its own)",
        ),
        CheckClass(
            "other_num_params",
            "info",
            f"num_params is a size beyond the paper's {tuple(NUM_PARAMS)} (8B, 70B, 350M)",
        ),
        CheckClass(
            "unknown_num_params", "error", "num_params is not a size (a number, then B, M or K)"
        ),
        CheckClass("score_not_finite", "error", "a harmlessness score is NaN or infinite"),
        CheckClass(
            "score_null",
            "info",
            "a harmlessness score is null (collected data exported without a scorer)",
        ),
    )

    def check(self, obj):
        if type(obj) is not dict:
            return [("wrong_type", f"expected a JSON object, got {type(obj).__name__}")]
        out = []
        score_key = TASK_SCORE_KEY_REAL if TASK_SCORE_KEY_REAL in obj else _CARD_SCORE_KEY
        missing = [k for k in (*_REQUIRED, score_key) if k not in obj]
        if missing:
            out.append(("missing_key", "missing " + ", ".join(map(repr, missing))))
        extra = sorted(set(obj) - RED_TEAM_KEYS_ACCEPTED)
        if TASK_SCORE_KEY_REAL in obj and _CARD_SCORE_KEY in obj:
            extra.append(_CARD_SCORE_KEY)
        if extra:
            out.append(("extra_key", "unexpected " + ", ".join(map(repr, extra))))
        wrong = []
        for key in ("transcript", "num_params", "model_type", "task_description"):
            if key in obj and type(obj[key]) is not str:
                wrong.append(key)
        for key in ("min_harmlessness_score_transcript", score_key, "rating"):
            if key in obj and not _is_number(obj[key]):
                if obj[key] is None and key != "rating":
                    continue  # score_null below
                wrong.append(key)
        if "is_upworker" in obj and type(obj["is_upworker"]) is not bool:
            wrong.append("is_upworker")
        if "red_team_member_id" in obj and type(obj["red_team_member_id"]) not in (int, str):
            wrong.append("red_team_member_id")
        tags = obj.get("tags")
        if tags is not None and (type(tags) is not list or any(type(t) is not str for t in tags)):
            wrong.append("tags")
        if wrong:
            out.append(("wrong_type", "wrong type: " + ", ".join(map(repr, wrong))))
        rating = obj.get("rating")
        if _is_number(rating) and not (
            math.isfinite(rating) and rating == int(rating) and 0 <= rating <= 4
        ):
            out.append(("rating_out_of_range", f"rating is {rating!r}"))
        if type(obj.get("model_type")) is str and obj["model_type"] not in MODEL_TYPES:
            out.append(("unknown_model_type", f"model_type is {obj['model_type']!r}"))
        size = obj.get("num_params")
        if type(size) is str and size not in NUM_PARAMS:
            if parse_num_params(size) is not None and parse_num_params(size) > 0:
                out.append(("other_num_params", f"num_params is {size!r}"))
            else:
                out.append(("unknown_num_params", f"num_params is {size!r}"))
        bad = [
            k
            for k in ("min_harmlessness_score_transcript", score_key)
            if _is_number(obj.get(k)) and not math.isfinite(obj[k])
        ]
        if bad:
            out.append(("score_not_finite", ", ".join(f"{k} is {obj[k]!r}" for k in bad)))
        null = [
            k
            for k in ("min_harmlessness_score_transcript", score_key)
            if k in obj and obj[k] is None
        ]
        if null:
            out.append(("score_null", ", ".join(f"{k} is null" for k in null)))
        return out
