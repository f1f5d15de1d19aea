"""Loading whole preference files fast, with results identical to :func:`hhrlhf.reader.read_pairs`.

``load_dataset`` hands back every pair with its prompt and both responses computed, so a
full load does four things per pair: decompress, decode the JSON line, align, build the
record. The reference reader does them one line at a time, with a Python frame or two per
line. This module does them a block of lines at a time:

* decompressed bytes are read in 1 MiB blocks through the reference reader's own opener
  (ISA-L), so the block, its lines and their decoded objects stay in cache. Reading whole
  files instead, even with the inflating moved to a second thread, measured slower: the
  hundreds of megabytes of fresh memory cost more than the overlap saved, and the thread
  only helps when a core is idle;
* where the optional C extension ``hhrlhf._jsonl`` is built (``pip install`` compiles it
  when a C compiler is at hand), one call per block parses its lines, unescapes both strings
  with 16-byte vector scans, aligns the usual pair on the bytes and makes the str objects:
  about twice as fast as ``orjson.loads`` per line, which builds a dict per line that the
  loader throws away. It accepts only lines of exactly the two keys with string values;
  any other block goes to the Python path below, so the choice never changes a result;
* otherwise each block is cut into lines with one ``bytes.split``, and the lines are decoded,
  checked, aligned and built with ``map`` over C-level callables (no per-line frames);
* the alignment is :func:`hhrlhf.transcript.prompt_length`, whose fast path answers the
  usual pair with two ``memrchr`` calls and one prefix comparison (proof in its docstring);
* files are independent, so they load in parallel threads, one per core this process may
  use (ISA-L inflates and the C parser decodes without the GIL; ``HH_RLHF_THREADS=N`` sets
  the count, 1 one file after the other). Fallbacks to the reference reader run afterwards,
  in file order, so errors and lenient reports do not depend on the threads;
* records are filled through their slot descriptors, and the cyclic garbage collector is
  paused meanwhile: the records hold only strings and ints, so collection passes over
  hundreds of thousands of fresh objects would find nothing to free.

Three things are built on the same blocks: lists of records (:func:`load_files`, behind
``load_dataset``), Arrow tables (:func:`load_files_arrow`, behind ``load_arrow``: the C
parser writes each block's strings into one UTF-8 buffer per column with int32 offsets,
which Arrow wraps without a copy, so no ``str`` is made per row), and a stream of records
(:func:`iter_file`, behind ``iter_pairs``). A line longer than a block is joined once, so
cost stays proportional to size (a 50 MB line, 100,000 turns, millions of blank lines).
Records hold only strings and ints and are untracked by the cyclic garbage collector.

The fast path only ever *accepts* a file it fully understood: every line decoded to a JSON
object with string ``chosen`` and ``rejected`` (blank lines skipped, as the reference
does). Anything else (an invalid line, a missing or mistyped key, a truncated or corrupt
gzip stream, a JSON array, an empty file) discards that file's fast result, and the file
is read again by :func:`~hhrlhf.reader.read_pairs`, in the original file order, after the
fast pass. That raises the reference's precise :class:`~hhrlhf.errors.DataFormatError`,
or, when lenient, records every skipped row in the same order. So records, line numbers,
errors and lenient reports are exactly the reference's; ``tests/test_fastload.py`` checks
it on generated corpora with every quirk and on every malformed-file fixture.

The stages are modules: :mod:`~hhrlhf.fastload.parse` (blocks into records, the C parser,
:class:`Fallback`), :mod:`~hhrlhf.fastload.files` (a file in blocks, files in threads) and
:mod:`~hhrlhf.fastload.arrow` (Arrow tables); this one holds the record loads
(:func:`load_files`, :func:`iter_file`) and names the public API.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Sequence

from ..reader import Lenient, read_pairs
from ..records import PreferencePair
from . import parse
from .arrow import ARROW_COLUMNS, load_files_arrow, pairs_table
from .files import _FALLBACK_ERRORS, FileJob, _map_files, _read_blocks, threads, usable_cores
from .parse import BLOCK, NATIVE, Fallback, _chunks, _lines, parse_jsonl

__all__ = [
    "ARROW_COLUMNS",
    "BLOCK",
    "FileJob",
    "Fallback",
    "iter_file",
    "NATIVE",
    "load_files",
    "load_files_arrow",
    "pairs_table",
    "parse_jsonl",
    "threads",
    "usable_cores",
]


def iter_file(
    path: str | os.PathLike[str],
    *,
    subset: str | None = None,
    split: str | None = None,
    lenient: Lenient | None = None,
) -> Iterator[PreferencePair]:
    """Stream one file's pairs a block at a time: exactly what :func:`~hhrlhf.reader.read_pairs`
    yields, raises and reports, at the block parser's speed and in constant memory.

    Blocks are parsed (natively where built) and their pairs yielded as they come. At the
    first block the fast path does not accept (a bad line, a damaged stream, a JSON array,
    ...), the reference reader takes over: it reads the file again from the start and its
    pairs are yielded from that block's first line on. Every line before it was accepted,
    so it holds no error and no skipped row: the caller sees the reference's sequence of
    pairs, then its error or its lenient reports, line numbers included.
    """
    path = str(path)
    resume = 0  # the 0-based line from which the reference reader takes over
    try:
        found = False
        first = 1  # 1-based number of the next complete line
        for chunk in _chunks(_read_blocks(path)):
            if parse.NATIVE:
                out: list[PreferencePair] = []
                nxt = parse._parse_chunk_native(chunk, first, subset, split, out)
            else:
                lines = _lines(chunk)
                out = parse._parse_lines(lines, first, subset, split)
                nxt = first + len(lines)
            found = found or bool(out)
            yield from out
            first = nxt
            resume = first - 1
        if found:
            return
        raise Fallback  # empty, or blank lines only: the reference names the problem
    except _FALLBACK_ERRORS:
        pass
    for pair in read_pairs(path, subset=subset, split=split, lenient=lenient):
        if pair.index is None or pair.index >= resume:
            yield pair


def load_files(
    jobs: Sequence[FileJob],
    *,
    lenient: Lenient | None = None,
) -> list[list[PreferencePair]]:
    """Load preference files completely; one list of pairs per job, in order.

    Gives exactly what ``[list(read_pairs(path, subset=, split=, lenient=)) ...]`` gives
    over the jobs: the same records, the same first error, the same skipped rows in
    ``lenient`` (a :class:`~hhrlhf.reader.Lenient` policy; None: strict) in the same order. The cyclic garbage collector is paused while it runs and
    restored before it returns.
    """
    jobs = [(str(p), subset, split) for p, subset, split in jobs]

    def fast(job: tuple[str, str | None, str | None]) -> list[PreferencePair] | None:
        path, subset, split = job
        try:
            return parse._parse_stream(_read_blocks(path), subset, split, parse.NATIVE)
        except _FALLBACK_ERRORS:
            return None  # decided below by the reference reader

    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        results = _map_files(fast, jobs)
    finally:
        if gc_was_enabled:
            gc.enable()
    # The reference reader, in file order, for every file the fast path did not accept.
    return [
        list(read_pairs(path, subset=subset, split=split, lenient=lenient)) if got is None else got
        for got, (path, subset, split) in zip(results, jobs, strict=True)
    ]
