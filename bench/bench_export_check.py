"""Benchmark ``hh export --format dpo`` and ``hh check`` (with near duplicates) at full scale.

Usage::

    python bench/make_corpus.py --out bench/corpus      # once (169,352 pairs + red team)
    python bench/bench_export_check.py [--corpus bench/corpus] [--out bench/out]

Each measurement runs in a fresh Python process, which reports its own wall time and peak
RSS (``ru_maxrss``), so one step's memory never counts against another. Targets (issue 3):
export of the 169,352 pairs in under 2x the load time, and the full audit with
near-duplicate detection in under 60 s with peak RSS under 1 GB. The same run times the
alternatives: the audit without near duplicates, and datasketch's MinHash on the same
prompts as the vectorised numpy MinHash the audit uses.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cli(args: list[str]) -> None:
    from hhrlhf.cli import cli

    try:
        cli.main(args=args, prog_name="hh", standalone_mode=False)
    except SystemExit as exc:  # --fail-on and friends
        if exc.code not in (0, None):
            raise


def step(name: str, corpus: str, out: str) -> dict:
    """One measurement, in this process."""
    start = time.perf_counter()
    extra: dict = {}
    if name == "load":
        import hhrlhf

        ds = hhrlhf.load_dataset(data=corpus)
        extra["pairs"] = sum(len(v) for v in ds.values())
    elif name.startswith("export-"):
        ext = name.split("-", 1)[1]
        _cli(["export", "--format", "dpo", "--out", f"{out}/all.dpo.{ext}", "--data", corpus])
        extra["bytes"] = os.path.getsize(f"{out}/all.dpo.{ext}")
    elif name == "check":
        _cli(
            [
                "check",
                "--json",
                "--fail-on",
                "none",
                "--report",
                f"{out}/flagged.jsonl",
                "--data",
                corpus,
            ]
        )
    elif name == "check-no-near-dups":
        _cli(["check", "--json", "--fail-on", "none", "--no-near-dups", "--data", corpus])
    elif name in ("minhash-numpy", "minhash-datasketch"):
        extra = _minhash(name, corpus)
        return {"name": name, **extra, "peak_rss_mb": round(_rss_mb(), 1)}
    else:
        raise SystemExit(f"unknown step {name}")
    return {
        "name": name,
        "seconds": round(time.perf_counter() - start, 2),
        "peak_rss_mb": round(_rss_mb(), 1),
        **extra,
    }


def _minhash(name: str, corpus: str, n: int = 20_000) -> dict:
    """Signatures of the first ``n`` train prompts of helpful-base, 128 permutations."""
    from hhrlhf.checks.leak import normalise_prompt
    from hhrlhf.dataset import iter_pairs

    prompts = []
    for p in iter_pairs("helpful-base", split="train", data=corpus):
        prompts.append(p.prompt)
        if len(prompts) == n:
            break
    start = time.perf_counter()
    if name == "minhash-numpy":
        from hhrlhf.checks import MinHasher

        MinHasher(128).signatures(prompts)
    else:
        from datasketch import MinHash

        for text in prompts:
            words = normalise_prompt(text).split()
            grams = {" ".join(words[i : i + 3]).encode() for i in range(max(1, len(words) - 2))}
            m = MinHash(num_perm=128)
            m.update_batch(list(grams))
    return {"prompts": len(prompts), "seconds": round(time.perf_counter() - start, 2)}


def run_step(name: str, corpus: Path, out: Path) -> dict:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--one", name, "--corpus", str(corpus), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stderr}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_seconds"] = round(time.perf_counter() - start, 2)
    print(json.dumps(result), file=sys.stderr)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=HERE / "corpus")
    ap.add_argument("--out", type=Path, default=HERE / "out")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=1, help="runs per step (best is reported)")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(step(args.one, str(args.corpus), str(args.out))))
        return 0
    if not (args.corpus / "helpful-base" / "train.jsonl.gz").exists():
        raise SystemExit(f"{args.corpus}: no corpus; run python bench/make_corpus.py first")
    args.out.mkdir(parents=True, exist_ok=True)
    steps = [
        "load",
        "export-jsonl",
        "export-jsonl.gz",
        "export-parquet",
        "check",
        "check-no-near-dups",
        "minhash-numpy",
        "minhash-datasketch",
    ]
    results = {}
    for name in steps:
        runs = [run_step(name, args.corpus, args.out) for _ in range(args.repeat)]
        results[name] = min(runs, key=lambda r: r["seconds"])
    load = results["load"]["seconds"]
    summary = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "pairs": results["load"]["pairs"],
        "results": results,
        "export_dpo_jsonl_vs_load": round(results["export-jsonl"]["seconds"] / load, 2),
        "export_dpo_jsonl_gz_vs_load": round(results["export-jsonl.gz"]["seconds"] / load, 2),
        "check_seconds": results["check"]["seconds"],
        "check_peak_rss_mb": results["check"]["peak_rss_mb"],
        "minhash_numpy_speedup_vs_datasketch": round(
            results["minhash-datasketch"]["seconds"] / results["minhash-numpy"]["seconds"], 1
        ),
    }
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
