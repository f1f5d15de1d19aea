"""Export collected comparisons in the upstream HH-RLHF layout, with a manifest of what was left out.

One line per comparison: ``chosen``/``rejected`` are the transcript up to the turn (earlier
assistant turns being the responses the conversation continued with) plus the response, so
:attr:`hhrlhf.records.PreferencePair.prompt` is the turn's prefix exactly.

- helpful comparisons go to ``<subset>/{train,test}.jsonl.gz`` (default ``helpful-base``);
- red-team comparisons go to ``<red_team_subset>`` (default ``harmless-base``) with the roles
  swapped: the annotator picked the MORE harmful response, so ``chosen`` is the other one;
- an edit is one more line, the edited text chosen over the original picked response; edits are
  kept whatever the strength (the annotator rewrote the response: the edit is taken as better);
- only pick comparisons with ``strength >= min_strength`` (default 2: the weakest point,
  "slightly better / unsure", is left out, as upstream);
- train/test by a stable hash of the conversation's ``uid``, so no conversation straddles them;
- a split with no rows is a well-formed empty gzip file.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tempfile
from collections import Counter
from pathlib import Path

import orjson

from ..errors import HHError, OutputError
from ..subsets import SUBSETS

__all__ = ["export_collection", "split_of", "MANIFEST", "FORMAT"]

MANIFEST = "manifest.json"
FORMAT = "hhrlhf-collect-export/1"
SPLITS = ("train", "test")


def split_of(uid: str, test_fraction: float) -> str:
    """``"test"`` for a stable ``test_fraction`` share of conversations, else ``"train"``."""
    h = int.from_bytes(hashlib.sha256(uid.encode("utf-8")).digest()[:8], "big")
    return "test" if h / 2**64 < test_fraction else "train"


def _check_subset(name: str, option: str) -> None:
    subset = SUBSETS.get(name)
    if subset is None or "test" not in getattr(subset, "splits", ()):
        known = [n for n, s in SUBSETS.items() if "test" in getattr(s, "splits", ())]
        raise HHError(f"{option} {name!r}: expected a preference subset: {', '.join(known)}")


def _gzip_bytes(lines: list[bytes]) -> bytes:
    buf = io.BytesIO()
    # mtime=0 and no file name: the same rows give the same bytes
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
        for line in lines:
            gz.write(line)
    return buf.getvalue()


def _prepare_out(out_dir: Path, targets: list[str], force: bool) -> None:
    """Refuse to overwrite without ``force``; fail on an unwritable folder before any work."""
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(out_dir, "exists and is not a folder")
    if out_dir.is_dir() and not force:
        clash = [t for t in targets if (out_dir / t).exists()]
        if clash:
            raise OutputError(
                out_dir, f"already holds an export ({clash[0]}); pass --force to overwrite"
            )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out_dir, prefix=".hh-write-test-"):
            pass
    except OSError as exc:
        raise OutputError(out_dir, f"cannot write there: {exc.strerror or exc}") from exc


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def export_collection(
    storage,
    out_dir: str | os.PathLike,
    *,
    min_strength: int = 2,
    test_fraction: float = 0.05,
    subset: str = "helpful-base",
    red_team_subset: str = "harmless-base",
    include_unfinished: bool = False,
    force: bool = False,
) -> dict:
    """Write the export under ``out_dir``; returns the manifest (also written as ``manifest.json``)."""
    _check_subset(subset, "--subset")
    _check_subset(red_team_subset, "--red-team-subset")
    if subset == red_team_subset:
        raise HHError("helpful and red-team comparisons need different subsets")
    if not 0 <= test_fraction <= 1:
        raise HHError(f"--test-fraction {test_fraction}: must be between 0 and 1")
    if min_strength < 1:
        raise HHError(f"--min-strength {min_strength}: must be at least 1")
    out_dir = Path(out_dir)
    targets = [MANIFEST] + [
        f"{s}/{sp}.jsonl.gz" for s in (subset, red_team_subset) for sp in SPLITS
    ]
    _prepare_out(out_dir, targets, force)
    storage.check_current()

    rows: dict[tuple[str, str], list[bytes]] = {(subset, sp): [] for sp in SPLITS}
    left_out: Counter = Counter()
    kinds: Counter = Counter()
    conversations: Counter = Counter()
    for conv in storage.iter_conversations_for_export():
        finished = conv["status"] == "finished"
        conversations["finished" if finished else "unfinished"] += 1
        red = conv["mode"] == "red-team"
        target = red_team_subset if red else subset
        split = split_of(conv["uid"], test_fraction)
        for turn in conv["turns"]:
            prefix = turn["prefix"]
            for comp in turn["comparisons"]:
                if not finished and not include_unfinished:
                    left_out["unfinished"] += 1
                    continue
                involved = [comp["rejected_slot"]] + (
                    [comp["chosen_slot"]] if comp["kind"] == "pick" else []
                )
                if any(turn["candidates"][s]["cut"] for s in involved if s):
                    left_out["cut"] += 1
                    continue
                if comp["kind"] == "pick" and comp["strength"] < min_strength:
                    left_out["weak"] += 1
                    continue
                better, worse = comp["chosen_text"], comp["rejected_text"]
                if red and comp["kind"] == "pick":
                    better, worse = worse, better
                if better == worse:
                    left_out["identical"] += 1
                    continue
                line = orjson.dumps(
                    {"chosen": f"{prefix} {better}", "rejected": f"{prefix} {worse}"}
                )
                rows.setdefault((target, split), []).append(line + b"\n")
                kinds[comp["kind"]] += 1
    # a subset that got rows gets both splits (an empty one is a well-formed empty file)
    for name in {s for s, _ in rows}:
        for sp in SPLITS:
            rows.setdefault((name, sp), [])

    files = {}
    for (name, sp), lines in sorted(rows.items()):
        rel = f"{name}/{sp}.jsonl.gz"
        data = _gzip_bytes(lines)
        _write_atomic(out_dir / rel, data)
        files[rel] = {
            "rows": len(lines),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    manifest = {
        "format": FORMAT,
        "min_strength": min_strength,
        "test_fraction": test_fraction,
        "subsets": {
            name: {sp: files[f"{name}/{sp}.jsonl.gz"]["rows"] for sp in SPLITS}
            for name in sorted({s for s, _ in rows})
        },
        "rows": sum(f["rows"] for f in files.values()),
        "comparisons": {"pick": kinds["pick"], "edit": kinds["edit"]},
        "conversations": {
            "finished": conversations["finished"],
            "unfinished": conversations["unfinished"],
        },
        "left_out": {
            "weak": left_out["weak"],
            "unfinished": left_out["unfinished"],
            "cut": left_out["cut"],
            "identical": left_out["identical"],
        },
        "left_out_reasons": {
            "weak": f"pick strength below {min_strength} (the weakest point: slightly better / unsure)",
            "unfinished": "the conversation was not finished",
            "cut": "a response held a speaker marker and was cut",
            "identical": "both responses were the same text",
        },
        "files": files,
    }
    _write_atomic(out_dir / MANIFEST, orjson.dumps(manifest, option=orjson.OPT_INDENT_2) + b"\n")
    return manifest
