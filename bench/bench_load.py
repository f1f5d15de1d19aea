"""Benchmark: load every preference pair, aligned, against the gzip+orjson floor and raw readers.

Usage::

    python bench/make_corpus.py --out bench/corpus --from REAL/harmless-base/test.jsonl.gz
    python bench/bench_load.py --corpus bench/corpus     # writes bench/RESULTS-load.md

(``make bench`` does both, resampling the real file when ``HH_RLHF_REAL`` names its folder.)

Every route runs in a fresh Python process, its imports included, as a user pays them; the
child times itself from its first line to the end of the load (the interpreter's own start,
the same for every route, is left out), and exits without freeing what it loaded. The routes
run in ``--rounds`` interleaved rounds (each round starts one route later, so drifts in the
machine's load spread over all of them); the results are medians with min and max, and each
route's wall time divided by the floor's *of the same round* (median of those ratios).

Routes over the eight preference files (169,352 pairs at full scale):

* ``floor``: ``gzip.open`` + ``orjson.loads`` per line, keeping the two strings of every pair;
* ``hhrlhf``: ``hhrlhf.load_dataset(data=corpus)``: every pair a ``PreferencePair`` with its
  turn-level prompt end computed at load;
* ``hhrlhf + strings``: the same, then a row dict of every pair's ``prompt``,
  ``chosen_response`` and ``rejected_response`` (Python strings), the collector on;
* ``load_arrow``: ``hhrlhf.load_arrow(data=corpus)``, ``{split: pyarrow.Table}`` with the
  aligned dpo columns (prompt, chosen, rejected) and subset, split, index;
* ``hhrlhf (1 thread)``, ``load_arrow (1 thread)``: the same with ``HH_RLHF_THREADS=1``
  (one file after the other; by default the files load in one thread per core);
* ``hhrlhf (pure Python)``: ``load_dataset`` with ``HH_RLHF_NATIVE=0`` (no C extension);
* ``hhrlhf (reference)``: ``load_dataset(fast=False)``, the streaming reader collected;
* raw readers, no alignment (only parsing the two strings): ``polars.read_ndjson`` per file,
  ``pyarrow.json.read_json`` per file, DuckDB's ``read_json`` over the files (into an Arrow
  table), ``datasets.load_dataset("json")`` into a fresh cache directory; and
  ``datasets + split map``: the same, then a batched ``map`` splitting prompt and responses.

Then, in this process: peak RSS of child processes, each step of a load alone (single-thread
CPU), and with ``HH_RLHF_REAL`` set a sanity line on the real ``harmless-base/test.jsonl.gz``.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Targets, as ratios to the floor's wall time (medians, fresh processes).
TARGET_LOAD = 0.4
TARGET_MATERIALISED = 0.6
TARGET_ARROW = 0.30
TARGET_RSS_MB = 150
TARGET_ARROW_RSS = 1.5  # times the decompressed text

#: Written under the results every time: the numbers of experiments whose code is gone.
TRIED_AND_REMOVED = [
    "## Tried and removed: a second process",
    "",
    "An opt-in two-process load (`load_files(..., parallel=True)` or `HH_RLHF_LOAD_WORKER=1`; "
    "the code is in commit d74ffe9) was measured in commit be2442b and then removed. A forked "
    "worker parsed about 58% of the input (by decompressed bytes) and shipped its strings "
    "(UTF-8) and int64 tables back through a memfd; the parent parsed the rest, then rebuilt "
    "the worker's strings and records. In that run (synthetic corpus, floor 0.716 s) "
    "it took 1.171 s, 1.63x the floor, against 0.699 s (0.98x) for the serial load. Making "
    "the str objects is most of what the JSON decoder does, and the parent still had to make "
    "them; on this shared 2-core machine the worker waited for a core. It was removed.",
    "",
    "## Tried and not kept: inflating ahead in a thread",
    "",
    "With the native parser, a thread inflating the next 1 MiB block while the current one "
    "was parsed (ISA-L releases the GIL while it inflates) measured 0.65x, 1.03x and 1.29x "
    "the floor against 0.48x, 0.56x and 0.57x for the serial load in the same runs "
    "(synthetic corpus, one core busy with other work); it was not kept.",
    "",
    "## One thread per core: the default",
    "",
    "The files load in parallel threads, one per core the process may use "
    "(`HH_RLHF_THREADS=N` sets the count). An earlier run (real-text corpus, load average "
    "6.3-7.7 on the 2 cores, other sessions' work) measured two threads slower than one "
    "(load_arrow 0.66x the floor against 0.39x, load_dataset 0.72x against 0.51x), and one "
    "file after the other was the default until three runs on 2026-11-26 (3-5 rounds each, "
    "same corpus) measured two threads faster in every case: idle, load_arrow 0.30x against "
    "0.40x and load_dataset 0.39x against 0.47x; with one core busy with a spinning process, "
    "0.37x against 0.43x and 0.49x against 0.51x; with both cores busy, 0.33x against 0.41x "
    "and 0.43x against 0.52x. The (1 thread) rows measure one file after the other in every "
    "run.",
]


def preference_files(root: Path) -> list[Path]:
    from hhrlhf.subsets import PREFERENCE_SUBSETS, SUBSETS

    files = [root / spec.path for name in PREFERENCE_SUBSETS for spec in SUBSETS[name].files]
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        sys.exit(f"error: missing corpus files: {missing[:3]}... (run bench/make_corpus.py first)")
    return files


# --------------------------------------------------------------------------- routes
# Each runs in a fresh process (``--child NAME``) and imports what it needs itself.


def _files(root: Path) -> list[Path]:
    # the layout without importing hhrlhf (the raw readers do not need it)
    subsets = ("harmless-base", "helpful-base", "helpful-online", "helpful-rejection-sampled")
    return [root / s / f"{split}.jsonl.gz" for s in subsets for split in ("train", "test")]


def route_floor(root: Path):
    import orjson

    keep = []
    loads = orjson.loads
    for path in _files(root):
        with gzip.open(path, "rb") as f:
            for line in f:
                obj = loads(line)
                keep.append((obj["chosen"], obj["rejected"]))
    return keep, len(keep)


def route_hhrlhf(root: Path, fast: bool = True):
    import hhrlhf

    ds = hhrlhf.load_dataset(data=root, fast=fast)
    return ds, sum(len(v) for v in ds.values())


def route_strings(root: Path):
    import hhrlhf

    ds = hhrlhf.load_dataset(data=root)
    rows = [
        {"prompt": p.prompt, "chosen": p.chosen_response, "rejected": p.rejected_response}
        for split in ds.values()
        for p in split
    ]
    return (ds, rows), len(rows)


def route_arrow(root: Path):
    import hhrlhf

    tables = hhrlhf.load_arrow(data=root)
    if "pandas" in sys.modules or "datasets" in sys.modules:
        sys.exit("error: load_arrow imported pandas or datasets")
    return tables, sum(t.num_rows for t in tables.values())


def route_polars(root: Path):
    import polars as pl

    frames = [pl.read_ndjson(path) for path in _files(root)]
    return frames, sum(f.height for f in frames)


def route_pyarrow_json(root: Path):
    import pyarrow.json as pj

    tables = [pj.read_json(path) for path in _files(root)]
    return tables, sum(t.num_rows for t in tables)


def route_duckdb(root: Path):
    import duckdb

    files = [str(p) for p in _files(root)]
    rel = duckdb.sql(
        "SELECT chosen, rejected FROM read_json($files, format = 'newline_delimited', "
        "columns = {chosen: 'VARCHAR', rejected: 'VARCHAR'})",
        params={"files": files},
    )
    table = rel.fetch_arrow_table()
    return table, table.num_rows


def route_datasets(root: Path, split_map: bool = False):
    import datasets

    datasets.disable_progress_bars()
    tmp = tempfile.mkdtemp(prefix="hh-bench-datasets-")
    files = [str(p) for p in _files(root)]
    ds = datasets.load_dataset("json", data_files=files, cache_dir=tmp)
    if split_map:
        ds = ds.map(_split_batch, batched=True, batch_size=1000)
    n = sum(len(v) for v in ds.values())
    shutil.rmtree(tmp, ignore_errors=True)
    return ds, n


def _split_batch(batch):
    from hhrlhf.transcript import prompt_length

    out: dict[str, list[str]] = {"prompt": [], "chosen": [], "rejected": []}
    for c, r in zip(batch["chosen"], batch["rejected"], strict=True):
        e = prompt_length(c, r)
        out["prompt"].append(c[:e])
        out["chosen"].append(c[e:])
        out["rejected"].append(r[e:])
    return out


#: name -> (function, extra environment, the module it needs or None)
ROUTES = {
    "floor": (route_floor, {}, "orjson"),
    "hhrlhf": (route_hhrlhf, {}, None),
    "hhrlhf + strings": (route_strings, {}, None),
    "load_arrow": (route_arrow, {}, "pyarrow"),
    "hhrlhf (1 thread)": (route_hhrlhf, {"HH_RLHF_THREADS": "1"}, None),
    "load_arrow (1 thread)": (route_arrow, {"HH_RLHF_THREADS": "1"}, "pyarrow"),
    "hhrlhf (pure Python)": (route_hhrlhf, {"HH_RLHF_NATIVE": "0"}, None),
    "hhrlhf (reference)": (lambda root: route_hhrlhf(root, fast=False), {}, None),
    "polars read_ndjson": (route_polars, {}, "polars"),
    "pyarrow.json.read_json": (route_pyarrow_json, {}, "pyarrow"),
    "duckdb read_json": (route_duckdb, {}, "duckdb"),
    "datasets": (route_datasets, {}, "datasets"),
    "datasets + split map": (lambda root: route_datasets(root, True), {}, "datasets"),
}
#: Rows whose target is a ratio to the floor.
TARGETS = {"hhrlhf": TARGET_LOAD, "hhrlhf + strings": TARGET_MATERIALISED}
TARGETS["load_arrow"] = TARGET_ARROW
RAW_READERS = ("polars read_ndjson", "pyarrow.json.read_json", "duckdb read_json", "datasets")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(name: str, root: Path, t0: float, c0: float) -> None:
    """Run one route in this (fresh) process; print its rows, wall and CPU as JSON."""
    gc.collect()
    fn = ROUTES[name][0]
    held, n = fn(root)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    print(json.dumps({"rows": n, "wall": wall, "cpu": cpu}), flush=True)
    del held
    os._exit(0)  # no teardown: a user's program goes on with the data


def run_child(name: str, root: Path) -> dict:
    env = {**os.environ, **ROUTES[name][1]}
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, "--corpus", str(root)],
        capture_output=True,
        text=True,
        env=env,
    )
    if out.returncode != 0:
        sys.exit(f"error: route {name!r} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def available(name: str) -> bool:
    module = ROUTES[name][2]
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


# --------------------------------------------------------------------------- in-process parts


def breakdown(files, repeats: int) -> dict[str, float]:
    """Single-thread CPU seconds of each step of a full load, measured step by step."""
    import orjson

    from hhrlhf import fastload
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
        steps[name] = min(_cpu_of(fn) for _ in range(repeats))
        return fn()

    step("gzip (zlib) decompression", lambda: blocks_of(lambda p: gzip.open(p, "rb")))
    data = step("isal decompression", lambda: blocks_of(open_data))
    lines = [line for line in b"".join(data).split(b"\n") if line]
    objs = step("orjson.loads per line", lambda: list(map(orjson.loads, lines)))
    cs = [o["chosen"] for o in objs]
    rs = [o["rejected"] for o in objs]
    step("prompt_length (alignment, Python)", lambda: list(map(prompt_length, cs, rs)))
    if fastload.parse._jsonl is not None:
        chunks, rest = [], b""
        for block in data:
            whole = rest + block
            cut = whole.rfind(b"\n") + 1
            chunks.append(whole[:cut])
            rest = whole[cut:]
        chunks.append(rest)
        chunks = [c for c in chunks if c]
        jl = fastload.parse._jsonl
        step(
            "native parse_block (decode, align, make strs)",
            lambda: [jl.parse_block(c, 0, prompt_length) for c in chunks],
        )
        step(
            "native parse_block_arrow (decode, align, Arrow buffers)",
            lambda: [jl.parse_block_arrow(c, 0, prompt_length, True) for c in chunks],
        )
    return steps


def _cpu_of(fn) -> float:
    gc.collect()
    c0 = time.process_time()
    result = fn()
    elapsed = time.process_time() - c0
    del result
    return elapsed


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
        "import hhrlhf, sys\n"
        "ts = hhrlhf.load_arrow(data=sys.argv[1])\n"
        "print(sum(t.num_rows for t in ts.values()))"
    ),
}


def peak_rss_mb(kind: str, root: Path) -> float:
    # VmHWM is the high-water mark of the child's own image
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
    return int(out.stderr.strip().splitlines()[-1]) / 1024


def real_sanity(real_file: Path, rounds: int) -> tuple[float, float, int]:
    """Medians (floor, hhrlhf) in ms on the real file, in this process, interleaved."""
    import orjson

    import hhrlhf

    floor, hh = [], []
    n = 0
    for _ in range(rounds):
        t = time.perf_counter()
        with gzip.open(real_file, "rb") as f:
            keep = [(o["chosen"], o["rejected"]) for o in map(orjson.loads, f)]
        floor.append(time.perf_counter() - t)
        t = time.perf_counter()
        pairs = hhrlhf.load_dataset(data=real_file, split="test")
        hh.append(time.perf_counter() - t)
        n = len(pairs)
        del keep, pairs
    return statistics.median(floor) * 1000, statistics.median(hh) * 1000, n


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
    for mod in ("orjson", "isal", "pyarrow", "polars", "duckdb", "datasets"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - a missing optional package is reported as such
            versions[mod] = "not installed"
    mem = "?"
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kib / (1 << 20):.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "mem": mem,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "versions": versions,
    }


def _text_size(path) -> int:
    n = 0
    with gzip.open(path, "rb") as f:
        while block := f.read(1 << 20):
            n += len(block)
    return n


# --------------------------------------------------------------------------- main


def main(argv=None) -> int:
    t0, c0 = time.perf_counter(), _cpu()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=HERE / "corpus")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS-load.md")
    parser.add_argument(
        "--only", action="append", choices=list(ROUTES), help="run only these routes (repeat)"
    )
    parser.add_argument("--no-extras", action="store_true", help="skip RSS, steps, real file")
    parser.add_argument("--child", choices=list(ROUTES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.corpus, t0, c0)

    root = args.corpus
    files = preference_files(root)
    corpus_note = root / "CORPUS.txt"
    text = "unknown (no CORPUS.txt)"
    if corpus_note.is_file():
        text = corpus_note.read_text(encoding="utf-8").splitlines()[0].removeprefix("text: ")
    info = machine()
    names = list(dict.fromkeys(args.only or ROUTES))
    if "floor" not in names:
        names.insert(0, "floor")
    skipped = [n for n in names if not available(n)]
    names = [n for n in names if n not in skipped]
    for n in skipped:
        print(f"{n}: {ROUTES[n][2]} is not installed, skipped", file=sys.stderr)
    load_before = os.getloadavg()
    runs: dict[str, list[dict]] = {n: [] for n in names}
    loads: list[float] = []
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        loads.append(os.getloadavg()[0])
        for name in order:
            res = run_child(name, root)
            runs[name].append(res)
            print(
                f"round {r + 1}: {name:24s} {res['rows']:>8,} rows  wall {res['wall']:6.3f} s  "
                f"cpu {res['cpu']:6.3f} s",
                file=sys.stderr,
            )
    counts = {name: {x["rows"] for x in rows} for name, rows in runs.items()}
    if len({n for c in counts.values() for n in c}) != 1:
        sys.exit(f"error: row counts differ: {counts}")
    load_after = os.getloadavg()

    rss: dict[str, float] = {}
    steps: dict[str, float] = {}
    real = None
    text_mb = 0.0
    if not args.no_extras:
        rss = {kind: peak_rss_mb(kind, root) for kind in CHILD}
        text_mb = sum(_text_size(f) for f in files) / (1 << 20)
        steps = breakdown(files, 3)
        real_dir = os.environ.get("HH_RLHF_REAL")
        real_file = Path(real_dir) / "harmless-base" / "test.jsonl.gz" if real_dir else None
        if real_file and real_file.is_file():
            real = real_sanity(real_file, 9)

    report = render(
        args, info, text, runs, loads, load_before, load_after, rss, text_mb, steps, real, files
    )
    print(report)
    args.out.write_text(report, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _med(rows: list[dict], key: str) -> float:
    return statistics.median(x[key] for x in rows)


def render(
    args, info, text, runs, loads, load_before, load_after, rss, text_mb, steps, real, files
) -> str:
    floor = runs["floor"]
    n = floor[0]["rows"]

    def ratio(name: str) -> float:
        """Median over rounds of the route's wall time / the floor's in the same round."""
        return statistics.median(
            x["wall"] / f["wall"] for x, f in zip(runs[name], floor, strict=True)
        )

    gz_mb = sum(f.stat().st_size for f in files) / 1e6
    lines = [
        "# Loading benchmark: hhrlhf against the gzip+orjson floor and raw JSON readers",
        "",
        "Command (from the repository root; `make bench` runs both):",
        "",
        "```",
        "python bench/make_corpus.py --out bench/corpus "
        "--from $HH_RLHF_REAL/harmless-base/test.jsonl.gz",
        f"python bench/bench_load.py --corpus {args.corpus}"
        + (f" --rounds {args.rounds}" if args.rounds != 5 else ""),
        "```",
        "",
        f"Machine: {info['nproc']} cores ({info['cpu']}), {info['mem']}, Python "
        f"{info['python']}, {info['platform']}; "
        + ", ".join(f"{k} {v}" for k, v in info["versions"].items())
        + ".",
        "Load average (1, 5, 15 min) before: "
        + " / ".join(f"{x:.2f}" for x in load_before)
        + "; after: "
        + " / ".join(f"{x:.2f}" for x in load_after)
        + "; 1-min load at the start of each round: "
        + ", ".join(f"{x:.1f}" for x in loads)
        + ". The machine was shared with other work: wall times are noisy, hence medians "
        "and ratios to the floor run in the same round.",
        "",
        f"Corpus: `{args.corpus}`, {n:,} pairs in the eight preference files "
        f"({gz_mb:.1f} MB gzipped); text: {text}.",
        "",
        f"Each route in a fresh process, its imports included; {args.rounds} interleaved "
        "rounds. Wall and CPU (user + system, all threads) in seconds: median [min - max]. "
        "Ratio: the median over rounds of wall / the floor's wall in the same round.",
        "",
        "| route | wall (s) | CPU (s) | wall / floor |",
        "|---|---|---|---:|",
    ]
    for name, rows in runs.items():
        walls = [x["wall"] for x in rows]
        cpus = [x["cpu"] for x in rows]
        lines.append(
            f"| {name} | {statistics.median(walls):.3f} [{min(walls):.3f} - {max(walls):.3f}] "
            f"| {statistics.median(cpus):.3f} [{min(cpus):.3f} - {max(cpus):.3f}] "
            f"| {ratio(name):.2f} |"
        )
    lines += [
        "",
        "- floor: `gzip.open` + `orjson.loads` per line, keeping the two strings of every pair.",
        "- hhrlhf: `hhrlhf.load_dataset(data=corpus)`, every pair a `PreferencePair` with its "
        "turn-level prompt end computed at load.",
        "- hhrlhf + strings: the same, then a row dict of every pair's `prompt`, "
        "`chosen_response`, `rejected_response` as Python strings (collector on).",
        "- load_arrow: `hhrlhf.load_arrow(data=corpus)`: `{split: pyarrow.Table}` with the "
        "aligned dpo columns; the child checks that neither pandas nor datasets was imported.",
        "- Without a mark, a load reads the files in one thread per core (two here); "
        "(1 thread): the same with `HH_RLHF_THREADS=1`, one file after the other.",
        "- hhrlhf (pure Python): `load_dataset` with `HH_RLHF_NATIVE=0` (no C extension); "
        "hhrlhf (reference): `fast=False`, the streaming reader collected.",
        "- Raw readers, no alignment (they only parse the two strings): `polars.read_ndjson` "
        "and `pyarrow.json.read_json` per file, DuckDB `read_json` over the eight files into "
        'an Arrow table, `datasets.load_dataset("json")` into a fresh cache directory; '
        "datasets + split map: then a batched `map` splitting prompt and responses with "
        "`hhrlhf.transcript.prompt_length`.",
        "",
    ]
    for name, target in TARGETS.items():
        if name in runs:
            got = ratio(name)
            lines.append(
                f"Target: {name} at most {target}x the floor: measured {got:.2f}x "
                f"({'met' if got <= target else 'NOT met'})."
            )
    if "load_arrow" in runs:
        arrow = _med(runs["load_arrow"], "wall")
        for raw in RAW_READERS:
            if raw in runs:
                other = _med(runs[raw], "wall")
                verdict = "faster" if arrow < other else "NOT faster"
                lines.append(
                    f"load_arrow (aligned) against {raw} (raw): median {arrow:.3f} s vs "
                    f"{other:.3f} s, {arrow / other:.2f}x ({verdict})."
                )
    if rss:
        lines += [
            "",
            "## Peak RSS (child processes, `VmHWM`)",
            "",
            "| what | peak RSS (MB) |",
            "|---|---:|",
        ]
        label = {
            "baseline": "interpreter + `import hhrlhf`, nothing read",
            "streaming": "streaming every pair (`hhrlhf.iter_pairs`)",
            "full load": "full `load_dataset` (all pairs held)",
            "load_arrow": "full `load_arrow` (every table held)",
        }
        lines += [f"| {label[k]} | {mb:.1f} |" for k, mb in rss.items()]
        lines += [
            "",
            f"Target: streaming peak RSS under {TARGET_RSS_MB} MB: measured "
            f"{rss['streaming']:.1f} MB ({'met' if rss['streaming'] < TARGET_RSS_MB else 'NOT met'}).",
            f"`load_arrow` peak RSS: {rss['load_arrow']:.1f} MB, "
            f"{rss['load_arrow'] / text_mb:.2f}x the decompressed text ({text_mb:.1f} MB; "
            f"target at most {TARGET_ARROW_RSS}x: "
            f"{'met' if rss['load_arrow'] <= TARGET_ARROW_RSS * text_mb else 'NOT met'}).",
        ]
    if steps:
        lines += [
            "",
            "## Where the time goes (single-thread CPU, each step alone, best of 3, in one process)",
            "",
            "| step | CPU (s) |",
            "|---|---:|",
            *(f"| {name} | {sec:.3f} |" for name, sec in steps.items()),
        ]
    if real:
        f_ms, h_ms, count = real
        lines += [
            "",
            "## Sanity line: the real harmless-base/test.jsonl.gz",
            "",
            f"{count:,} pairs, in one process, median of 9 interleaved: floor {f_ms:.1f} ms, "
            f"hhrlhf {h_ms:.1f} ms ({h_ms / f_ms:.2f}x the floor).",
        ]
    lines += ["", *TRIED_AND_REMOVED]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
