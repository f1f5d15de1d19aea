"""Best-of-k rejection sampling: rank k candidate responses to a prompt by PM score.

The paper's rejection-sampled tranche picked the best of (mostly) 16 samples against a PM.
Input rows are ``{"prompt": ..., "candidates": [...]}`` (``"responses"`` is accepted too), an
optional ``"id"``. The prompt is either a transcript ending with ``"\\n\\nAssistant:"`` or a
plain message, which becomes ``"\\n\\nHuman: <message>\\n\\nAssistant:"``. Candidates are
responses as they would follow the marker (a leading space is added when missing).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DataFormatError, HHError
from ..reader import read_objects

__all__ = ["as_prompt", "rerank", "rerank_file"]


def as_prompt(prompt: str) -> str:
    """A transcript prompt ending with ``"\\n\\nAssistant:"``; plain text becomes one human turn."""
    if prompt.startswith("\n\nHuman:"):
        return (
            prompt if prompt.rstrip(" ").endswith("\n\nAssistant:") else prompt + "\n\nAssistant:"
        )
    return f"\n\nHuman: {prompt.strip()}\n\nAssistant:"


def _as_response(text: str) -> str:
    return text if text.startswith((" ", "\n")) or not text else " " + text


def rerank(model, prompt: str, candidates, *, k: int | None = None) -> dict:
    """Rank ``candidates[:k]``: ranking (indices, best first), scores, best, best response, margin.

    ``margin`` is best score minus second best (None with one candidate). Equal scores keep the
    input order (stable sort), and ``tied_best`` says whether the top two are tied.
    """
    candidates = list(candidates)[: k or None]
    if not candidates:
        raise HHError("no candidates to rank")
    p = as_prompt(prompt).rstrip(" ")
    scores = [
        float(s) for s in model.score([p] * len(candidates), [_as_response(c) for c in candidates])
    ]
    ranking = sorted(range(len(candidates)), key=lambda i: -scores[i])
    best = ranking[0]
    margin = scores[best] - scores[ranking[1]] if len(ranking) > 1 else None
    return {
        "ranking": ranking,
        "scores": scores,
        "best": best,
        "best_response": candidates[best],
        "margin": margin,
        "tied_best": margin == 0.0,
    }


def rerank_file(model, path, *, k: int | None = None) -> list[dict]:
    """Rerank every row of a JSONL candidates file; errors name the file and line."""
    path = Path(path)
    out = []
    for lineno, row in read_objects(path):
        if not isinstance(row, dict):
            raise DataFormatError(path, lineno, "expected an object")
        prompt = row.get("prompt")
        cands = row.get("candidates", row.get("responses"))
        if not isinstance(prompt, str):
            raise DataFormatError(path, lineno, '"prompt" must be a string')
        if not isinstance(cands, list) or not cands or not all(isinstance(c, str) for c in cands):
            raise DataFormatError(path, lineno, '"candidates" must be a non-empty list of strings')
        if k is not None and len(cands) < k:
            raise DataFormatError(path, lineno, f"{len(cands)} candidates, fewer than --k {k}")
        result = rerank(model, prompt, cands, k=k)
        out.append({"id": row.get("id", lineno), "k": len(result["scores"]), **result})
    return out
