"""The data browser: any HH-format data (the cache, the sample, a folder) in the same app.

``DataIndex.load(data)`` reads every preference file and the red-team attempts once, at
start, and keeps each pair's classes (the ones ``hh check`` counts), its human-turn count and
its response lengths, so a filtered page is a scan over small tuples, and every pair's text
casefolded in one buffer, so a text search is ``bytes.find`` over it (``_TextIndex``). ``router`` serves the
JSON API (``/api/v1/data/...``) and the pages (``/data...``); both need a login like the
rest of the app. Filters live in the query string, so every page state is a shareable URL.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from ..errors import Forbidden, HHError, Invalid, NotFound, ReportBusy
from ..records import MARKER_RE, PAIR_CLASSES, PreferencePair, RedTeamAttempt
from .web.api import Who
from .web.auth import optional_annotator
from .web.errors import status_of
from .web.security import SECURITY_HEADERS

__all__ = ["DataIndex", "PairQuery", "WordDiff", "diff_segments", "router", "word_diff"]

MAX_LIMIT = 200


@dataclass
class DataIndex:
    """Pairs and attempts of one data source, with what the filters need precomputed."""

    label: str
    pairs: list[PreferencePair] = field(default_factory=list)
    #: per pair: (subset, split, classes, human_turns, len(chosen_response) - len(rejected_response))
    meta: list[tuple] = field(default_factory=list)
    attempts: list[RedTeamAttempt] = field(default_factory=list)
    files: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    _by_key: dict = field(default_factory=dict, repr=False)
    _text: _TextIndex | None = field(default=None, repr=False)
    _found: dict = field(default_factory=dict, repr=False)
    #: the red-team reports drawn, by (query, plots)
    reports: dict = field(default_factory=dict, repr=False)
    #: at most REPORT_SLOTS reports computed at once (the rest: the cache, or 503)
    report_gate: ReportGate = field(default_factory=lambda: ReportGate(), repr=False)

    @classmethod
    def load(cls, data) -> DataIndex:
        from ..fastload import load_files
        from ..layout import resolve_source, select_files
        from ..reader import read_attempts

        start = time.perf_counter()
        src = resolve_source(data)
        files = select_files("all", data=src, download=False)
        index = cls(label=src.label)
        pair_files = [f for f in files if not f.red_team]
        loaded = load_files([(f.path, f.subset, f.split) for f in pair_files])
        for f, pairs in zip(pair_files, loaded, strict=True):
            counts: Counter = Counter()
            for p in pairs:
                classes = tuple(sorted(p.classes))
                counts.update(classes)
                index._by_key[(p.subset, p.split, p.index)] = len(index.pairs)
                index.pairs.append(p)
                index.meta.append(
                    (
                        p.subset,
                        p.split,
                        classes,
                        p.human_turns,
                        len(p.chosen) - len(p.rejected),
                    )
                )
            index.files.append(
                {"subset": f.subset, "split": f.split, "rows": len(pairs), "classes": dict(counts)}
            )
        for f in files:
            if f.red_team:
                index.attempts = list(read_attempts(f.path))
                index.files.append(
                    {
                        "subset": f.subset,
                        "split": f.split,
                        "rows": len(index.attempts),
                        "classes": {},
                    }
                )
        index._text = _TextIndex.build(index.pairs)
        index.seconds = time.perf_counter() - start
        return index

    def pair(self, subset: str, split: str, row: int) -> PreferencePair:
        at = self._by_key.get((subset, split, row))
        if at is None and subset == "file":  # one file that names no subset
            at = self._by_key.get((None, split, row))
        if at is None:
            raise NotFound(f"no pair {subset}/{split}/{row} in {self.label}")
        return self.pairs[at]

    def query(self, q: PairQuery, offset: int = 0, limit: int = 50) -> tuple[int, list]:
        """(total matches, the pairs in ``[offset, offset + limit)``), in file order."""
        rows = self._rows(q)
        return len(rows), [self.pairs[i] for i in rows[offset : offset + limit]]

    def _rows(self, q: PairQuery) -> list[int]:
        """Every row that ``q`` matches; the last few queries are kept (paging is free)."""
        found = self._found.get(q)
        if found is not None:
            return found
        needle = q.q.casefold() if q.q else None
        rows = range(len(self.pairs))
        if needle is not None and self._text is not None and self._text.can_search(needle):
            rows = self._text.search(needle, q.where)
            needle = None  # decided
        pairs, meta, found = self.pairs, self.meta, []
        for i in rows:
            subset, split, classes, turns, longer = meta[i]
            if q.subset and subset != q.subset:
                continue
            if q.split and split != q.split:
                continue
            if q.cls and q.cls not in classes:
                continue
            if q.turns is not None and turns != q.turns:
                continue
            if q.chosen == "longer" and longer <= 0:
                continue
            if q.chosen == "shorter" and longer >= 0:
                continue
            if needle is not None and not _holds(pairs[i], needle, q.where):
                continue
            found.append(i)
        _keep(self._found, q, found, 32)
        return found


#: red-team reports computed at the same time, per data source; more requests for reports not
#: in the cache are answered 503 with Retry-After, so they cannot take every thread of the pool
REPORT_SLOTS = 2
#: what a refused report request is told to wait, in seconds
REPORT_RETRY_AFTER = 5
#: reports (and report pages) kept per data source
REPORT_CACHE = 8


class ReportGate:
    """A cache in front of a costly computation, computing at most ``slots`` values at once.

    :meth:`get` answers from the cache when it can; otherwise it computes in the calling
    thread if a slot is free and nobody is computing the same key, else raises
    :class:`ReportBusy` at once (no thread waits for another's computation).
    """

    def __init__(self, slots: int = REPORT_SLOTS):
        self._slots = threading.BoundedSemaphore(slots)
        self._lock = threading.Lock()
        self._running: set = set()

    def get(self, cache: dict, key, compute):
        value = cache.get(key)
        if value is not None:
            return value
        with self._lock:
            value = cache.get(key)
            if value is not None:
                return value
            if key in self._running:
                raise ReportBusy(
                    "this report is being computed; try again in a few seconds", REPORT_RETRY_AFTER
                )
            if not self._slots.acquire(blocking=False):
                raise ReportBusy(
                    "the server is computing other reports; try again shortly", REPORT_RETRY_AFTER
                )
            self._running.add(key)
        try:
            value = compute()
            _keep(cache, key, value, REPORT_CACHE)
            return value
        finally:
            with self._lock:
                self._running.discard(key)
            self._slots.release()


def _keep(cache: dict, key, value, size: int) -> None:
    """Keep ``value`` under ``key``, dropping the oldest entries past ``size`` (requests run in
    threads: another may drop the same entry first, which is fine)."""
    while len(cache) >= size:
        try:
            cache.pop(next(iter(cache)), None)
        except (StopIteration, RuntimeError):  # emptied or changed meanwhile
            break
    cache[key] = value


def _holds(p: PreferencePair, needle: str, where: str) -> bool:
    """Whether the pair's text holds ``needle`` (casefolded) ``where``: the plain scan."""
    e = p.prompt_end
    if where == "prompt":
        texts = (p.chosen[:e],)
    elif where == "responses":
        texts = (p.chosen[e:], p.rejected[e:])
    else:
        texts = (p.chosen, p.rejected[e:])
    return any(needle in t.casefold() for t in texts)


class _TextIndex:
    """Every pair's text, casefolded, in one UTF-8 buffer: a search is ``bytes.find``.

    Pair ``i`` is ``prompt + chosen_response + NUL + rejected_response + NUL`` from
    ``starts[i]``; ``prompt_ends[i]`` is where its prompt ends. A hit maps to its pair by bisection, and the search goes on
    from the next pair, so a word in every pair costs one find per pair. The matches are
    the ones a scan of each pair's strings gives: the prompt and the chosen response are
    one string (as ``chosen`` is), the rejected response another.
    """

    SEP = "\0"

    def __init__(self, blob: bytearray, starts: array, prompt_ends: array):
        self.blob, self.starts, self.prompt_ends = blob, starts, prompt_ends

    @classmethod
    def build(cls, pairs) -> _TextIndex:
        # one growing buffer and two int arrays: a list of every piece joined at the end held
        # the text twice at its peak, and its freed pieces stayed in the worker's memory
        blob, starts, prompt_ends = bytearray(), array("q"), array("q")
        for p in pairs:
            e = p.prompt_end
            starts.append(len(blob))
            blob += p.chosen[:e].casefold().encode("utf-8", "surrogatepass")
            prompt_ends.append(len(blob))
            blob += p.chosen[e:].casefold().encode("utf-8", "surrogatepass")
            blob += b"\0"
            blob += p.rejected[e:].casefold().encode("utf-8", "surrogatepass")
            blob += b"\0"
        starts.append(len(blob))
        return cls(blob, starts, prompt_ends)

    def can_search(self, needle: str) -> bool:
        return self.SEP not in needle

    def search(self, needle: str, where: str = "any") -> list[int]:
        """The rows whose text holds ``needle`` (casefolded) ``where``: any, prompt, responses."""
        from bisect import bisect_right

        pat = needle.encode("utf-8", "surrogatepass")
        blob, starts, prompt_ends = self.blob, self.starts, self.prompt_ends
        find, n, rows = blob.find, len(pat), []
        pos = find(pat)
        while pos >= 0:
            i = bisect_right(starts, pos) - 1
            if where == "prompt" and pos + n > prompt_ends[i]:
                pos = find(pat, starts[i + 1])  # past the prompt: none later in this pair
                continue
            if where == "responses" and pos < prompt_ends[i]:
                pos = find(pat, prompt_ends[i])
                continue
            rows.append(i)
            pos = find(pat, starts[i + 1])
        return rows


@dataclass(frozen=True)
class PairQuery:
    """The pair-list filters; every one optional. ``where``: any, prompt or responses."""

    subset: str | None = None
    split: str | None = None
    cls: str | None = None
    turns: int | None = None
    chosen: str | None = None
    q: str | None = None
    where: str = "any"

    def __post_init__(self):
        if self.cls and self.cls not in PAIR_CLASSES:
            raise Invalid(f"unknown class {self.cls!r}; known: {', '.join(PAIR_CLASSES)}")
        if self.chosen not in (None, "longer", "shorter"):
            raise Invalid(f"chosen must be longer or shorter, got {self.chosen!r}")
        if self.where not in ("any", "prompt", "responses"):
            raise Invalid(f"where must be any, prompt or responses, got {self.where!r}")


def pair_json(p: PreferencePair) -> dict:
    return p.to_view()


_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")
MAX_DIFF_TOKENS = 20_000
#: the most steps (diagonals tried plus matching tokens followed) one word diff may take; a
#: pair needing more is shown with a coarse diff (the common start and end kept, the middle
#: marked), and the page says so. 600,000 steps are about 0.3 s of CPU.
MAX_DIFF_STEPS = 600_000


@dataclass(frozen=True, slots=True)
class WordDiff:
    """A word diff: each side as ``(changed, text)`` segments that join back to its text;
    ``exact`` is False for the coarse diff of a pair too costly to compare word by word."""

    chosen: list[tuple[bool, str]]
    rejected: list[tuple[bool, str]]
    exact: bool
    steps: int


def _segments(tokens: list[str], changed: list[bool]) -> list[tuple[bool, str]]:
    out: list[tuple[bool, str]] = []
    start = 0
    for i in range(1, len(tokens) + 1):
        if i == len(tokens) or changed[i] != changed[start]:
            out.append((changed[start], "".join(tokens[start:i])))
            start = i
    return out


def _myers(a: list, b: list, budget: int) -> tuple[list[bool] | None, list[bool] | None, int]:
    """Which tokens of ``a`` and ``b`` are outside a shortest edit script (Myers' O((N+M)D)
    greedy algorithm), and the steps taken; ``(None, None, steps)`` once over ``budget``."""
    n, m = len(a), len(b)
    off = n + m + 1
    v = [0] * (2 * off + 2)
    trace: list[list[int]] = []
    steps = 0
    for d in range(n + m + 1):
        trace.append(v[off - d - 1 : off + d + 2])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            start = x
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            steps += 1 + x - start  # the diagonal tried and the matching tokens followed
            v[off + k] = x
            if x >= n and y >= m:
                return (*_backtrack(trace, d, n, m), steps)
            if steps > budget:
                return None, None, steps
    raise AssertionError("unreachable: d = n + m always reaches the end")  # pragma: no cover


def _backtrack(trace: list[list[int]], final: int, n: int, m: int):
    a_changed, b_changed = [False] * n, [False] * m
    x, y = n, m
    for d in range(final, 0, -1):
        saved = trace[d]  # the furthest x per diagonal after d - 1 edits, from k = -d - 1

        def get(k: int, saved=saved, d=d) -> int:
            return saved[k + d + 1]

        k = x - y
        down = k == -d or (k != d and get(k - 1) < get(k + 1))
        prev_k = k + 1 if down else k - 1
        prev_x = get(prev_k)
        prev_y = prev_x - prev_k
        if down:
            b_changed[prev_y] = True
        else:
            a_changed[prev_x] = True
        x, y = prev_x, prev_y
    return a_changed, b_changed


def word_diff(chosen: str, rejected: str, *, max_steps: int = MAX_DIFF_STEPS) -> WordDiff:
    """The word-level differences of two responses, at a bounded cost.

    A shortest edit script over words, spaces and punctuation (Myers), after the common start
    and end are set aside; when that needs more than ``max_steps`` steps (long, repetitive or
    very different texts) or the texts exceed :data:`MAX_DIFF_TOKENS`, the coarse diff: the
    common start and end unchanged, everything between marked (``exact=False``).
    """
    a, b = _TOKEN.findall(chosen), _TOKEN.findall(rejected)
    if "".join(a) != chosen or "".join(b) != rejected:  # pragma: no cover - the regex covers all
        return WordDiff([(True, chosen)], [(True, rejected)], False, 0)
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    mid_a, mid_b = a[head : len(a) - tail], b[head : len(b) - tail]
    a_mid: list[bool] | None = None
    b_mid: list[bool] | None = None
    steps = head + tail
    if len(a) + len(b) <= MAX_DIFF_TOKENS:
        a_mid, b_mid, taken = _myers(mid_a, mid_b, max_steps)
        steps += taken
    exact = a_mid is not None and b_mid is not None
    if a_mid is None or b_mid is None:
        a_mid, b_mid = [True] * len(mid_a), [True] * len(mid_b)
    a_changed = [False] * head + a_mid + [False] * tail
    b_changed = [False] * head + b_mid + [False] * tail
    return WordDiff(_segments(a, a_changed), _segments(b, b_changed), exact, steps)


def diff_segments(chosen: str, rejected: str) -> tuple[list, list]:
    """Word-level differences: ``(chosen_segments, rejected_segments)``, each a list of
    ``(changed: bool, text)``; the texts of each list join back to the input exactly."""
    d = word_diff(chosen, rejected)
    return d.chosen, d.rejected


def collected_index(storage) -> DataIndex:
    """The app's own database as HH data: exactly what ``hh collect export`` would write, with
    the unfinished conversations and the weakest comparisons kept, so nothing is hidden."""
    import tempfile

    from .services.export import export_collection

    with tempfile.TemporaryDirectory(prefix="hh-collected-") as tmp:
        export_collection(storage, tmp, min_strength=1, include_unfinished=True)
        index = DataIndex.load(tmp)
    index.label = "collected"
    return index


_collected_lock = threading.Lock()


def _collected(app) -> DataIndex:
    """:func:`collected_index`, rebuilt only when the database's export stamp has changed (a
    page of the collected data read the whole database each time)."""
    storage = app.state.storage
    with _collected_lock:  # one rebuild at a time; the others then find it done
        stamp = storage.export_stamp()
        kept = getattr(app.state, "collected", None)
        if kept is None or kept[0] != stamp:
            kept = (stamp, collected_index(storage))
            app.state.collected = kept
        return kept[1]


def _index(request: Request, who) -> DataIndex:
    """The data the request asks for: ``?source=collected`` is the app's database (admins)."""
    if request.query_params.get("source") == "collected":
        if not who.is_admin:
            raise Forbidden("the collected data is for admins only")
        return _collected(request.app)
    index = getattr(request.app.state, "data_index", None)
    if index is None:
        raise NotFound("no data to browse: start the app with hh serve --data PATH|sample")
    return index


def _int(value: str | None, name: str, default: int | None = None, lo: int = 0, hi=None):
    if value is None or value == "":
        return default
    try:
        n = int(value)
    except ValueError:
        raise Invalid(f"{name} must be a whole number, got {value!r}") from None
    if n < lo or (hi is not None and n > hi):
        raise Invalid(f"{name} must be between {lo} and {hi or 'any'}, got {n}")
    return n


def _float(value: str | None, name: str):
    if value is None or value == "":
        return None
    try:
        return float(value)
    except ValueError:
        raise Invalid(f"{name} must be a number, got {value!r}") from None


def _pair_query(params) -> tuple[PairQuery, int, int]:
    q = PairQuery(
        subset=params.get("subset") or None,
        split=params.get("split") or None,
        cls=params.get("class") or None,
        turns=_int(params.get("turns"), "turns"),
        chosen=params.get("chosen") or None,
        q=params.get("q") or None,
        where=params.get("where") or "any",
    )
    return (
        q,
        _int(params.get("offset"), "offset", 0),
        _int(params.get("limit"), "limit", 50, 1, MAX_LIMIT),
    )


def _many(params, name: str) -> tuple[str, ...]:
    """A filter given once or repeated (``?tag=a&tag=b``: any of them), empty values dropped."""
    getlist = getattr(params, "getlist", None)
    values = getlist(name) if getlist else [params.get(name)]
    return tuple(v for v in values if v)


def _attempt_query(params):
    """The ``hh redteam query`` filters from a query string (the same :class:`AttemptQuery`)."""
    from ..redteam.query import AttemptQuery

    try:
        return AttemptQuery(
            model_type=_many(params, "model_type"),
            num_params=_many(params, "num_params"),
            min_rating=_float(params.get("min_rating"), "min_rating"),
            max_rating=_float(params.get("max_rating"), "max_rating"),
            min_score=_float(params.get("min_score"), "min_score"),
            max_score=_float(params.get("max_score"), "max_score"),
            tag=_many(params, "tag"),
            member=_many(params, "member"),
            text=params.get("q") or None,
            search_in=params.get("search_in") or "both",
        )
    except ValueError as exc:
        raise Invalid(str(exc)) from None


def _attempts(index: DataIndex, query, offset: int, limit: int) -> tuple[int, list]:
    total, out = 0, []
    for i, a in enumerate(index.attempts):
        if query.matches(a):
            if offset <= total < offset + limit:
                out.append((i, a))
            total += 1
    return total, out


router = APIRouter()


@router.get("/api/v1/data/subsets")
def api_subsets(request: Request, who: Who):
    return _index(request, who).files


@router.get("/api/v1/data/pairs")
def api_pairs(request: Request, who: Who):
    index = _index(request, who)
    q, offset, limit = _pair_query(request.query_params)
    total, pairs = index.query(q, offset, limit)
    return {"total": total, "pairs": [pair_json(p) for p in pairs]}


@router.get("/api/v1/data/pairs/{subset}/{split}/{row}")
def api_pair(subset: str, split: str, row: int, request: Request, who: Who):
    return pair_json(_index(request, who).pair(subset, split, row))


@router.get("/api/v1/data/attempts")
def api_attempts(request: Request, who: Who):
    index = _index(request, who)
    params = request.query_params
    query = _attempt_query(params)
    offset = _int(params.get("offset"), "offset", 0)
    limit = _int(params.get("limit"), "limit", 50, 1, MAX_LIMIT)
    total, found = _attempts(index, query, offset, limit)
    return {"total": total, "attempts": [a.to_dict(real_keys=True) for _, a in found]}


@router.get("/api/v1/data/attempts/report")
def api_attempts_report(request: Request, who: Who):
    """``hh redteam report``'s ``report.json`` for the attempts the filters keep: every number
    of the report page (404 when none is kept)."""
    index = _index(request, who)
    query = _attempt_query(request.query_params)
    return _report_numbers(index, query)


def _report_numbers(index: DataIndex, query, *, gated: bool = True) -> dict:
    """The report of the attempts ``query`` keeps, from the cache or computed (at most
    :data:`REPORT_SLOTS` at once; ``gated=False`` inside a computation that holds a slot)."""

    def compute() -> dict:
        from ..redteam.report import compute_report

        kept = [a for a in index.attempts if query.matches(a)]
        if not kept:
            raise NotFound("no attempt matches these filters: nothing to report")
        return compute_report(kept, source=f"{index.label} ({len(kept)} attempts)")

    key = (query, "json")
    if not gated:
        report = index.reports.get(key)
        if report is None:
            report = compute()
            _keep(index.reports, key, report, REPORT_CACHE)
        return report
    return index.report_gate.get(index.reports, key, compute)


# ---- pages ---------------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, response):
        self.response = response


def _open(request: Request) -> DataIndex:
    """The index for a page, or ``_Refused`` carrying the login or error page to show."""
    from .web.pages import _login_required, _render

    who = optional_annotator(request)
    if who is None:
        raise _Refused(_login_required(request))
    try:
        return _index(request, who)
    except HHError as exc:
        status = status_of(exc)
        raise _Refused(
            _render(request, "collect/error.html", status, message=str(exc), page="data")
        ) from None


_BIDI = {
    c: f"\\u{c:04x}"
    for c in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def visible(text) -> str:
    """Data text for a page: control characters as ``\\xNN`` (:func:`hhrlhf.text.printable`)
    and the bidirectional controls (an RTL override) as ``\\u202e``, so a reader sees them
    instead of having the text reordered; newlines and tabs kept. Escaping is the template's."""
    from ..text import printable

    return printable(str(text)).translate(_BIDI)


def _page(request: Request, index: DataIndex, name: str, status: int = 200, **context):
    from .web.pages import _render

    collected = request.query_params.get("source") == "collected"
    context.setdefault("params", dict(request.query_params))
    return _render(
        request,
        name,
        status,
        index=index,
        page="data",
        source_q="?source=collected" if collected else "",
        collected=collected,
        has_files=getattr(request.app.state, "data_index", None) is not None,
        visible=visible,
        **context,
    )


def _error(request: Request, exc: HHError):
    from .web.pages import _render

    status = status_of(exc)
    return _render(request, "collect/error.html", status, message=str(exc), page="data")


def _nav(base: str, params, offset: int, limit: int, total: int) -> dict:
    """Previous/next links keeping every filter of the query string (repeated ones too, empty
    ones dropped), so each page of each filter state is a URL to share."""
    kept = [(k, v) for k, v in params.multi_items() if k != "offset" and v != ""]
    nav = {}
    if offset > 0:
        nav["prev"] = base + "?" + urlencode([*kept, ("offset", max(0, offset - limit))])
    if offset + limit < total:
        nav["next"] = base + "?" + urlencode([*kept, ("offset", offset + limit)])
    return nav


@router.get("/data", response_class=HTMLResponse, include_in_schema=False)
async def data_page(request: Request):
    try:
        index = await run_in_threadpool(_open, request)
        q, offset, limit = _pair_query(request.query_params)
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        return _error(request, exc)
    started = time.perf_counter()
    total, pairs = await run_in_threadpool(index.query, q, offset, limit)
    took = time.perf_counter() - started
    return _page(
        request,
        index,
        "browse/pairs.html",
        total=total,
        pairs=pairs,
        offset=offset,
        limit=limit,
        nav=_nav("/data", request.query_params, offset, limit, total),
        took_ms=took * 1000,
        classes=PAIR_CLASSES,
        subsets=sorted({f["subset"] for f in index.files if f["subset"] != "red-team-attempts"}),
        # the splits there are, upstream's order first (a folder may hold only a test split)
        splits=sorted(
            {f["split"] for f in index.files if f["subset"] != "red-team-attempts"},
            key=lambda s: (s not in ("train", "test"), s != "train", s),
        ),
    )


@router.get(
    "/data/pairs/{subset}/{split}/{row}", response_class=HTMLResponse, include_in_schema=False
)
def pair_page(subset: str, split: str, row: int, request: Request):
    try:
        index = _open(request)
        p = index.pair(subset, split, row)
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        return _error(request, exc)
    diff = word_diff(p.chosen_response, p.rejected_response)
    collected = request.query_params.get("source") == "collected"
    return _page(
        request,
        index,
        "browse/pair.html",
        pair=p,
        turns=p.prompt_dialogue.turns,
        chosen_segments=diff.chosen,
        rejected_segments=diff.rejected,
        diff_exact=diff.exact,
        classes=[(c, PAIR_CLASSES[c]) for c in sorted(p.classes)],
        json_url=f"/api/v1/data/pairs/{quote(subset)}/{quote(split)}/{row}"
        + ("?source=collected" if collected else ""),
        markers={
            "chosen": bool(MARKER_RE.search(p.chosen_response)),
            "rejected": bool(MARKER_RE.search(p.rejected_response)),
        },
    )


@router.get("/data/attempts", response_class=HTMLResponse, include_in_schema=False)
def attempts_page(request: Request):
    try:
        index = _open(request)
        params = request.query_params
        query = _attempt_query(params)
        offset = _int(params.get("offset"), "offset", 0)
        limit = _int(params.get("limit"), "limit", 50, 1, MAX_LIMIT)
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        return _error(request, exc)
    total, found = _attempts(index, query, offset, limit)
    return _page(
        request,
        index,
        "browse/attempts.html",
        total=total,
        found=found,
        offset=offset,
        nav=_nav("/data/attempts", request.query_params, offset, limit, total),
    )


@router.get("/data/attempts/report", response_class=HTMLResponse, include_in_schema=False)
def attempts_report(request: Request):
    """``hh redteam report`` on the attempts the filters keep: every number and table
    (``?plots=1`` draws the figures too, which takes seconds)."""
    try:
        index = _open(request)
        params = request.query_params
        query = _attempt_query(params)
        plots = params.get("plots") == "1"
        numbers = [(k, v) for k, v in params.multi_items() if k != "plots"]
        json_href = "/api/v1/data/attempts/report" + (f"?{urlencode(numbers)}" if numbers else "")

        def compute() -> str:
            report = _report_numbers(index, query, gated=False)  # this holds a slot already
            return _report_html(index, query, report, plots, json_href)

        html = index.report_gate.get(index.reports, (query, plots), compute)
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        page = _error(request, exc)
        if isinstance(exc, ReportBusy):
            page.headers["retry-after"] = str(exc.retry_after)
        return page
    return HTMLResponse(html, headers={"content-security-policy": report_policy(html)})


def report_policy(html: str) -> str:
    """The app's Content-Security-Policy, loosened for the one self-contained report page
    just enough: its own ``<style>`` elements (by hash, nothing else inline) and its figures
    (``data:`` images). Scripts stay ``'self'`` only."""
    hashes = " ".join(
        "'sha256-" + base64.b64encode(hashlib.sha256(css.encode()).digest()).decode() + "'"
        for css in re.findall(r"<style>(.*?)</style>", html, re.S)
    )
    policy = SECURITY_HEADERS["content-security-policy"]
    policy = policy.replace("style-src 'self'", f"style-src 'self' {hashes}".rstrip())
    return policy + "; img-src 'self' data:"


def _report_html(index: DataIndex, query, report: dict, plots: bool, json_href: str) -> str:
    from ..redteam.report import draw_figures, render_html
    from ..redteam.stats import drop_out_of_range

    pngs = {}
    if plots:
        from ..redteam.plots import figure_png

        kept = [a for a in index.attempts if query.matches(a)]
        figures = draw_figures(report, drop_out_of_range(kept)[0])
        pngs = {name: figure_png(fig) for name, fig in figures.items()}
    return render_html(report, pngs, json_href=json_href)


@router.get("/data/attempts/{row}", response_class=HTMLResponse, include_in_schema=False)
def attempt_page(row: int, request: Request):
    try:
        index = _open(request)
        if not 0 <= row < len(index.attempts):
            raise NotFound(f"no attempt {row} in {index.label}")
    except _Refused as refused:
        return refused.response
    except HHError as exc:
        return _error(request, exc)
    a = index.attempts[row]
    return _page(request, index, "browse/attempt.html", attempt=a, row=row, turns=a.dialogue.turns)
