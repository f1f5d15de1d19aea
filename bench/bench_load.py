"""Benchmark: load every preference pair, aligned, against the gzip+orjson floor and ``datasets``.

Usage::

    python bench/make_corpus.py --out bench/corpus      # once: the full-scale synthetic corpus
    python bench/bench_load.py --corpus bench/corpus    # writes bench/RESULTS-load.md

What is timed, in one run, interleaved (floor, hhrlhf, reference, datasets; again...), best
of ``--repeats``:

* ``floor``: ``gzip.open`` + ``orjson.loads`` per line over the eight preference files,
  keeping the two strings of every pair, no alignment;
* ``hhrlhf``: ``hhrlhf.load_dataset(data=corpus)``: every pair as a ``PreferencePair`` with its
  prompt end computed at load time (``prompt``/``chosen_response``/``rejected_response`` are
  slices at that offset), both splits, with the native block parser (``hhrlhf._jsonl``);
* ``hhrlhf (pure Python)``: the same with the native parser turned off, as on an install
  without a C compiler;
* ``hhrlhf (reference)``: the same with ``fast=False`` (the streaming reader collected);
* ``datasets``: ``datasets.load_dataset("json", data_files=..., cache_dir=<fresh temp dir>)``,
  a new cache directory for each run so that it parses the files instead of reading its cache
  (raw strings only, no alignment); ``datasets + split map``: the same, then a batched
  ``map`` splitting prompt and responses;
* ``hhrlhf + strings (GC on|off)``: ``load_dataset``, then a row dict of every pair's
  prompt, chosen and rejected response, with the cyclic garbage collector on (as users run)
  or off;
* ``load_arrow``: ``hhrlhf.load_arrow(data=corpus)``, the dpo columns as Arrow tables.

Then, alone: the user's loop right after a load with untracked records (as loaded) and with
the same records tracked again, and each step of a load.

Peak RSS is measured in child processes with ``resource.getrusage(RUSAGE_SELF).ru_maxrss``:
streaming every pair with ``hhrlhf.iter_pairs`` (touching each pair's prompt end), the
interpreter with ``hhrlhf`` imported and nothing read (the baseline), the full load and the
full ``load_arrow`` (its target is relative to the decompressed text size). With
``HH_RLHF_REAL`` set, the real ``harmless-base/test.jsonl.gz`` is timed the same way as a small
sanity line. Wall time is what the target is about; CPU time (all threads and child
processes) is shown beside it because the machine may be shared while the benchmark runs, and
so are this process's minor page faults.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

import hhrlhf
from hhrlhf.subsets import PREFERENCE_SUBSETS, SUBSETS

HERE = Path(__file__).resolve().parent
TARGET_RATIO = 0.75
TARGET_RSS_MB = 150
TARGET_MATERIALISED = 0.75
TARGET_ARROW = 0.35
TARGET_ARROW_RSS = 1.5  # times the decompressed text

#: Written under the results every time: the numbers of an experiment whose code is gone.
TRIED_AND_REMOVED = [
    "## Tried and removed: a second process",
    "",
    "An opt-in two-process load (`load_files(..., parallel=True)` or `HH_RLHF_LOAD_WORKER=1`; "
    "the code is in commit d74ffe9) was measured in commit be2442b and then removed. A forked "
    "worker parsed about 58% of the input (by decompressed bytes) and shipped its strings "
    "(UTF-8) and int64 tables back through a memfd; the parent parsed the rest, then rebuilt "
    "the worker's strings and records. In that run (same corpus and machine, floor 0.716 s) "
    "it took 1.171 s, 1.63x the floor, against 0.699 s (0.98x) for the serial load; CPU: "
    "parent 0.660 s, worker 0.507 s; 73,190 page faults against 14,840. Step by step, the "
    "parent's rebuild of every file's strings and records cost 0.347 s, 51% of the 0.676 s "
    "a serial parse costs (making the str objects is most of what the JSON decoder does, "
    "and the parent still had to make them), and the worker's side 0.841 s. Even on two "
    "idle cores the best split those costs allow ends at about 0.68x the floor; on this "
    "shared 2-core machine the worker waited for a core, and after the fork both processes "
    "paid copy-on-write faults on heap memory an earlier load had freed. It did not pay here, "
    "so it was removed rather than kept off by default.",
    "",
    "## Tried and not kept: inflating ahead in a thread",
    "",
    "With the native parser, a thread inflating the next 1 MiB block while the current one "
    "was parsed (ISA-L releases the GIL while it inflates) was measured in three interleaved "
    "runs on this machine while other work used one core: 0.65x, 1.03x and 1.29x the floor, "
    "against 0.48x, 0.56x and 0.57x for the serial load in the same runs. The serial load "
    "already spends only about a third of its time inflating, and on a shared 2-core machine "
    "the thread waits for a core; it was not kept.",
]


def preference_files(root: Path) -> list[Path]:
    files = [root / spec.path for name in PREFERENCE_SUBSETS for spec in SUBSETS[name].files]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        sys.exit(f"missing corpus files: {missing[:3]}... (run bench/make_corpus.py first)")
    return files


def run_floor(files) -> int:
    """gzip + orjson per line, keeping the two strings of every pair."""
    keep = []
    loads = orjson.loads
    for path in files:
        with gzip.open(path, "rb") as f:
            for line in f:
                obj = loads(line)
                keep.append((obj["chosen"], obj["rejected"]))
    run_floor.last = keep  # freed outside the timed region
    return len(keep)


def run_materialised(root, collect: bool = True) -> int:
    """``load_dataset``, then every pair's prompt, chosen and rejected response in a row
    dict, as a user's loop builds them (the collector on, as users run, or off)."""
    was = gc.isenabled()
    if collect:
        gc.enable()
    else:
        gc.disable()
    try:
        ds = hhrlhf.load_dataset(data=root)
        rows = [
            {"prompt": p.prompt, "chosen": p.chosen_response, "rejected": p.rejected_response}
            for split in ds.values()
            for p in split
        ]
    finally:
        if was:
            gc.enable()
    run_materialised.last = (ds, rows)
    return len(rows)


def _retrack(pairs) -> None:
    """Make the collector track the pairs again, as records were before they were untracked
    (``PyObject_GC_Track`` through ctypes; for the comparison below only)."""
    import ctypes

    track = ctypes.pythonapi.PyObject_GC_Track
    track.argtypes = [ctypes.py_object]
    track.restype = None
    for p in pairs:
        if not gc.is_tracked(p):
            track(p)


def materialise_loop(root, repeats: int) -> dict[str, float]:
    """CPU seconds of the user's loop alone (row dicts of every pair's three strings), run
    right after a fresh load, so the records are as the loader left them: with the
    collector on, off, and on with the records tracked again (as before)."""
    out: dict[str, list[float]] = {"GC on": [], "GC off": [], "GC on, records tracked": []}
    for _ in range(repeats):
        for name in out:
            gc.collect()
            ds = hhrlhf.load_dataset(data=root)
            if name == "GC on, records tracked":
                for split in ds.values():
                    _retrack(split)
            if name == "GC off":
                gc.disable()
            c0 = time.process_time()
            rows = [
                {"prompt": p.prompt, "chosen": p.chosen_response, "rejected": p.rejected_response}
                for split in ds.values()
                for p in split
            ]
            out[name].append(time.process_time() - c0)
            gc.enable()
            del rows, ds
    return {name: min(v) for name, v in out.items()}


def run_arrow(root) -> int:
    tables = hhrlhf.load_arrow(data=root)
    run_arrow.last = tables
    return sum(t.num_rows for t in tables.values())


def _split_batch(batch):
    from hhrlhf.transcript import prompt_length

    out = {"prompt": [], "chosen": [], "rejected": []}
    for c, r in zip(batch["chosen"], batch["rejected"], strict=True):
        e = prompt_length(c, r)
        out["prompt"].append(c[:e])
        out["chosen"].append(c[e:])
        out["rejected"].append(r[e:])
    return out


def run_datasets_dpo(files) -> int:
    """``datasets.load_dataset("json")`` into a fresh cache, then a batched ``map`` that
    splits every pair into prompt, chosen and rejected response (the turn-level split)."""
    import datasets

    datasets.disable_progress_bars()
    tmp = tempfile.mkdtemp(prefix="hh-bench-datasets-")
    try:
        ds = datasets.load_dataset("json", data_files=[str(f) for f in files], cache_dir=tmp)
        ds = ds.map(_split_batch, batched=True, batch_size=1000)
        return sum(len(v) for v in ds.values())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_hhrlhf(root, fast=True, native=None) -> int:
    from hhrlhf import fastload

    saved = fastload.NATIVE
    if native is not None:
        fastload.NATIVE = native
    try:
        ds = hhrlhf.load_dataset(data=root, fast=fast)
    finally:
        fastload.NATIVE = saved
    n = sum(len(v) for v in ds.values())
    run_hhrlhf.last = ds  # freed outside the timed region
    return n


def run_hhrlhf_file(path, fast=True) -> int:
    pairs = hhrlhf.load_dataset(data=path, split="test", fast=fast)
    run_hhrlhf_file.last = pairs
    return len(pairs)


def run_datasets(files) -> int:
    import datasets

    datasets.disable_progress_bars()
    tmp = tempfile.mkdtemp(prefix="hh-bench-datasets-")
    try:
        ds = datasets.load_dataset("json", data_files=[str(f) for f in files], cache_dir=tmp)
        return sum(len(v) for v in ds.values())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def breakdown(files, repeats: int) -> dict[str, float]:
    """Single-thread CPU seconds of each step of a full load, measured step by step."""
    from hhrlhf import fastload
    from hhrlhf.fastload import _build
    from hhrlhf.reader import open_data
    from hhrlhf.transcript import prompt_length

    def blocks_of(opener):
        out = []
        for path in files:
            with opener(path) as f:
                while block := f.read(1 << 20):
                    out.append(block)
        return out

    steps: dict[str, float] = {}

    def step(name, fn):
        best_cpu = min(_cpu_of(fn) for _ in range(repeats))
        steps[name] = best_cpu
        return fn()

    step("gzip (zlib) decompression", lambda: blocks_of(lambda p: gzip.open(p, "rb")))
    data = step("isal decompression", lambda: blocks_of(open_data))
    lines = [line for line in b"".join(data).split(b"\n") if line]
    objs = step("orjson.loads per line", lambda: list(map(orjson.loads, lines)))
    if fastload._jsonl is not None:
        # complete lines in the same 1 MiB blocks the loader parses
        chunks, rest = [], b""
        for block in data:
            whole = rest + block
            cut = whole.rfind(b"\n") + 1
            chunks.append(whole[:cut])
            rest = whole[cut:]
        chunks.append(rest)
        parse = fastload._jsonl.parse_block
        step(
            "native parse_block (decode, align, make strs)",
            lambda: [parse(c, 0, prompt_length) for c in chunks],
        )
    cs = [o["chosen"] for o in objs]
    rs = [o["rejected"] for o in objs]
    ends = step("prompt_length (alignment)", lambda: list(map(prompt_length, cs, rs)))
    gc.disable()
    try:
        step(
            "records built (Python: slot setters)",
            lambda: _build(cs, rs, "s", "train", range(len(cs)), ends),
        )
        if fastload._native_build is not None:
            idx = list(range(len(cs)))
            step(
                "records built (native build)",
                lambda: fastload._native_build(
                    fastload.PreferencePair, fastload._SLOTS, (cs, rs, "s", "train", idx, ends)
                ),
            )
    finally:
        gc.enable()
    return steps


def _cpu_of(fn) -> float:
    gc.collect()
    c0 = time.process_time()
    result = fn()
    elapsed = time.process_time() - c0
    del result
    return elapsed


def cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn, *args, **kw):
    """(rows, wall, CPU of this process and its children, minor page faults of this process)."""
    gc.collect()
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    c0, t0 = cpu_now(), time.perf_counter()
    n = fn(*args, **kw)
    wall, cpu = time.perf_counter() - t0, cpu_now() - c0
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
    for f in (run_floor, run_hhrlhf, run_hhrlhf_file, run_materialised, run_arrow):
        f.last = None
    return n, wall, cpu, faults


CHILD = {
    "baseline": "import hhrlhf",
    "streaming": (
        "import hhrlhf, sys\n"
        "n = 0\n"
        "for p in hhrlhf.iter_pairs(data=sys.argv[1]):\n"
        "    n += p.prompt_end >= 0\n"
        "print(n)"
    ),
    "full load": (
        "import hhrlhf, sys\n"
        "ds = hhrlhf.load_dataset(data=sys.argv[1])\n"
        "print(sum(len(v) for v in ds.values()))"
    ),
    "load_arrow": (
        "import hhrlhf, pyarrow, sys\n"
        "ts = hhrlhf.load_arrow(data=sys.argv[1])\n"
        "print(sum(t.num_rows for t in ts.values()))"
    ),
}


def peak_rss_mb(kind: str, root: Path) -> tuple[float, str]:
    # VmHWM is the high-water mark of this process image; ru_maxrss would also count the
    # benchmark process's memory, which the child inherits at fork, before exec.
    code = CHILD[kind] + (
        "\nimport re, resource, sys\n"
        "try:\n"
        "    s = open('/proc/self/status').read()\n"
        "    kib = int(re.search(r'VmHWM:\\s+(\\d+) kB', s).group(1))\n"
        "except (OSError, AttributeError):\n"
        "    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(kib, file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True
    )
    kib = int(out.stderr.strip().splitlines()[-1])  # Linux reports KiB
    return kib / 1024, out.stdout.strip()


def machine() -> dict:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for mod in ("orjson", "isal", "datasets", "pyarrow"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - a missing optional package is reported as such
            versions[mod] = "not installed"
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
    }


def best(rows):
    """The run with the lowest wall time: (n, wall, cpu, page faults)."""
    return min(rows, key=lambda r: r[1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=HERE / "corpus")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS-load.md")
    parser.add_argument("--no-datasets", action="store_true", help="skip datasets.load_dataset")
    parser.add_argument("--no-reference", action="store_true", help="skip the fast=False load")
    args = parser.parse_args(argv)

    root = args.corpus
    files = preference_files(root)
    load_before = os.getloadavg()
    info = machine()
    print(
        f"machine: {info['nproc']} cores, {info['cpu']}, Python {info['python']}", file=sys.stderr
    )

    from hhrlhf import fastload

    runs: dict[str, list] = {
        "floor": [],
        "hhrlhf": [],
        "hhrlhf + strings (GC on)": [],
        "hhrlhf + strings (GC off)": [],
        "load_arrow": [],
    }
    if fastload.NATIVE:
        runs["hhrlhf (pure Python)"] = []
    else:
        print("the native parser is not built or is off: one hhrlhf row", file=sys.stderr)
    if not args.no_reference:
        runs["hhrlhf (reference)"] = []
    if not args.no_datasets:
        try:
            import datasets  # noqa: F401
        except ImportError:
            print("datasets not installed: skipped (pip install 'hhrlhf[hf]')", file=sys.stderr)
            args.no_datasets = True
        else:
            runs["datasets"] = []
            runs["datasets + split map"] = []
    for r in range(args.repeats):
        for name in runs:
            if name == "floor":
                res = timed(run_floor, files)
            elif name == "hhrlhf":
                res = timed(run_hhrlhf, root)
            elif name == "hhrlhf (pure Python)":
                res = timed(run_hhrlhf, root, native=False)
            elif name == "hhrlhf (reference)":
                res = timed(run_hhrlhf, root, fast=False)
            elif name == "hhrlhf + strings (GC on)":
                res = timed(run_materialised, root)
            elif name == "hhrlhf + strings (GC off)":
                res = timed(run_materialised, root, collect=False)
            elif name == "load_arrow":
                res = timed(run_arrow, root)
            elif name == "datasets + split map":
                res = timed(run_datasets_dpo, files)
            else:
                res = timed(run_datasets, files)
            runs[name].append(res)
            print(  # the wide names need a wider column
                f"run {r + 1}: {name:26s} {res[0]:>8,} rows  "
                f"wall {res[1]:6.3f} s  cpu {res[2]:6.3f} s",
                file=sys.stderr,
            )
    counts = {name: best(rows)[0] for name, rows in runs.items()}
    if len(set(counts.values())) != 1:
        sys.exit(f"row counts differ: {counts}")

    rss = {kind: peak_rss_mb(kind, root) for kind in CHILD}
    text_mb = sum(_text_size(f) for f in files) / (1 << 20)
    steps = breakdown(files, args.repeats)
    loop = materialise_loop(root, args.repeats)

    real = None
    real_dir = os.environ.get("HH_RLHF_REAL")
    real_file = Path(real_dir) / "harmless-base" / "test.jsonl.gz" if real_dir else None
    if real_file and real_file.is_file():
        real = {"floor": [], "hhrlhf": []}
        for _ in range(max(args.repeats, 5)):
            real["floor"].append(timed(run_floor, [real_file]))
            real["hhrlhf"].append(timed(run_hhrlhf_file, real_file))
    load_after = os.getloadavg()

    report = render(
        args, info, runs, rss, steps, real, real_file, load_before, load_after, text_mb, loop
    )
    print(report)
    args.out.write_text(report)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _text_size(path) -> int:
    """Decompressed bytes of a file."""
    n = 0
    with gzip.open(path, "rb") as f:
        while block := f.read(1 << 20):
            n += len(block)
    return n


def render(
    args, info, runs, rss, steps, real, real_file, load_before, load_after, text_mb, loop
) -> str:
    floor = best(runs["floor"])
    n = floor[0]
    lines = [
        "# Loading benchmark (hhrlhf.load_dataset and load_arrow vs the gzip+orjson floor and datasets)",
        "",
        "Command (from the repository root, after "
        "`python bench/make_corpus.py --out bench/corpus`):",
        "",
        "```",
        f"HH_RLHF_REAL=../shared/data/hh-rlhf python bench/bench_load.py --corpus {args.corpus}"
        + (f" --repeats {args.repeats}" if args.repeats != 3 else ""),
        "```",
        "",
        f"Machine: {info['nproc']} cores ({info['cpu']}), Python {info['python']}, "
        f"{info['platform']}; " + ", ".join(f"{k} {v}" for k, v in info["versions"].items()) + ".",
        "Load average (1, 5, 15 min) before the run: "
        + " / ".join(f"{x:.2f}" for x in load_before)
        + "; after: "
        + " / ".join(f"{x:.2f}" for x in load_after)
        + " "
        "(other work on the machine inflates wall times; the ratios compare runs interleaved "
        "in the same process).",
        "",
        f"Corpus: `{args.corpus}`, {n:,} pairs in the eight preference files "
        f"({sum(f.stat().st_size for f in preference_files(args.corpus)) / 1e6:.1f} MB gzipped). "
        f"Best of {args.repeats} runs each (lowest wall time); CPU = user + system time of the "
        "process, its threads and its child processes.",
        "",
        "| what | wall (s) | CPU (s) | page faults | wall / floor | CPU / floor's CPU |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, rows in runs.items():
        _, wall, cpu, faults = best(rows)
        lines.append(
            f"| {name} | {wall:.3f} | {cpu:.3f} | {faults:,} | {wall / floor[1]:.2f} "
            f"| {cpu / floor[2]:.2f} |"
        )
    hh = best(runs["hhrlhf"])
    ratio = hh[1] / floor[1]
    lines += [
        "",
        "- floor: `gzip.open` + `orjson.loads` per line, keeping the two strings of every "
        "pair; no alignment.",
        "- hhrlhf: `hhrlhf.load_dataset(data=corpus)`, every pair a `PreferencePair` with its "
        "turn-level prompt end computed at load (not deferred)"
        + (
            ", with the native block parser `hhrlhf._jsonl`."
            if "hhrlhf (pure Python)" in runs
            else "; the native block parser was not built or turned off in this run."
        ),
        "- hhrlhf (pure Python): the same with the native parser off (`HH_RLHF_NATIVE=0`), "
        "as on an install without a C compiler: orjson per line, `prompt_length`, records.",
        "- hhrlhf (reference): the same with `fast=False` (the streaming reader, collected).",
        '- datasets: `datasets.load_dataset("json", data_files=..., cache_dir=<new temp dir>)`, '
        "a fresh cache directory each run so it parses rather than reads its cache; raw strings, "
        "no alignment.",
        "- datasets + split map: the same, then `.map(batched=True)` splitting every pair into "
        "prompt, chosen and rejected response (with `hhrlhf.transcript.prompt_length`), as a "
        "DPO trainer's preprocessing does.",
        "- hhrlhf + strings (GC on): `load_dataset`, then a row dict of every pair's `prompt`, "
        "`chosen_response`, `rejected_response`, with the cyclic garbage collector on, as "
        "users run; (GC off): the same with `gc.disable()`. The records are untracked by the "
        "collector, so its passes triggered by the user's dicts do not walk them: the two rows "
        "should be close.",
        "- load_arrow: `hhrlhf.load_arrow(data=corpus)`: `{split: pyarrow.Table}` with the dpo "
        "columns prompt, chosen, rejected plus subset, split, index, straight from the native "
        "block parser into Arrow buffers (no Python str per row).",
        "",
        f"Target: hhrlhf at most {TARGET_RATIO}x the floor: measured {ratio:.2f}x "
        f"({'met' if ratio <= TARGET_RATIO else 'NOT met'}).",
    ]
    for name, target in (
        ("hhrlhf + strings (GC on)", TARGET_MATERIALISED),
        ("load_arrow", TARGET_ARROW),
    ):
        got = best(runs[name])[1] / floor[1]
        got_cpu = best(runs[name])[2] / floor[2]
        lines.append(
            f"Target: {name} at most {target}x the floor: measured {got:.2f}x "
            f"({'met' if got <= target else 'NOT met'}; by CPU time {got_cpu:.2f}x, "
            f"{'met' if got_cpu <= target else 'NOT met'})."
        )
    lines += [
        "",
        "## Peak RSS (child processes, `VmHWM`)",
        "",
        "| what | peak RSS (MB) |",
        "|---|---:|",
    ]
    for kind, (mb, _) in rss.items():
        label = {
            "baseline": "interpreter + `import hhrlhf`, nothing read",
            "streaming": "streaming every pair (`hhrlhf.iter_pairs`)",
            "full load": "full `load_dataset` (all pairs held)",
            "load_arrow": "full `load_arrow` (every table held)",
        }[kind]
        lines.append(f"| {label} | {mb:.1f} |")
    stream = rss["streaming"][0]
    lines += [
        "",
        f"Target: streaming peak RSS under {TARGET_RSS_MB} MB: measured {stream:.1f} MB "
        f"({'met' if stream < TARGET_RSS_MB else 'NOT met'}).",
        f"Target: `load_arrow` peak RSS at most {TARGET_ARROW_RSS}x the decompressed text "
        f"({text_mb:.1f} MB): measured {rss['load_arrow'][0]:.1f} MB, "
        f"{rss['load_arrow'][0] / text_mb:.2f}x "
        f"({'met' if rss['load_arrow'][0] <= TARGET_ARROW_RSS * text_mb else 'NOT met'}).",
    ]
    lines += [
        "",
        "## The user's loop after a load (CPU, the loop alone, best of the repeats)",
        "",
        "A row dict of every pair's `prompt`, `chosen_response`, `rejected_response`, run right "
        "after a fresh `load_dataset` (the loader pauses the collector, so its records are "
        "all young when the loop starts). Records tracked: the same records made tracked "
        "again with `PyObject_GC_Track`, as they were before they were untracked.",
        "",
        "| loop | CPU (s) |",
        "|---|---:|",
        *(f"| {name} | {sec:.3f} |" for name, sec in loop.items()),
        "",
        f"Tracked records cost the loop {loop['GC on, records tracked'] / loop['GC on']:.2f}x "
        "what untracked ones cost.",
    ]
    lines += [
        "",
        "## Where the time goes (single-thread CPU, each step alone, best of the repeats)",
        "",
        "| step | CPU (s) |",
        "|---|---:|",
    ]
    lines += [f"| {name} | {sec:.3f} |" for name, sec in steps.items()]
    lines += [
        "",
        "The floor is the zlib and orjson rows. The pure-Python load is the isal, orjson, "
        "alignment and records rows (plus splitting lines); orjson builds a dict per line "
        "only to have the loader take two values out of it, and is "
        f"{steps['orjson.loads per line'] / floor[2]:.0%} of the floor's CPU time by itself.",
    ]
    native_step = "native parse_block (decode, align, make strs)"
    if native_step in steps:
        lines += [
            "",
            "The native load is the isal, native parse_block and native records rows: one C call per "
            "block scans each line once, unescapes both strings into one buffer with 16-byte "
            "vector compares, aligns the usual pair on the bytes (the Python turn walk decides "
            "the rest) and makes the str objects, replacing the orjson and alignment rows "
            f"({steps['orjson.loads per line'] + steps['prompt_length (alignment)']:.3f} s) "
            f"with {steps[native_step]:.3f} s.",
        ]
    if real:
        f_best, h_best = best(real["floor"]), best(real["hhrlhf"])
        lines += [
            "",
            "## Sanity line: the real harmless-base/test.jsonl.gz",
            "",
            f"{f_best[0]:,} pairs; best of {len(real['floor'])}: floor {f_best[1] * 1000:.1f} ms, "
            f"hhrlhf {h_best[1] * 1000:.1f} ms ({h_best[1] / f_best[1]:.2f}x the floor).",
        ]
    else:
        lines += ["", "(Real-file sanity line skipped: HH_RLHF_REAL not set.)"]
    lines += ["", *TRIED_AND_REMOVED]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
