"""The data browser's parts below the web layer: the index and its queries (:mod:`.index`),
the word diff (:mod:`.diff`) and the red-team report gate (:mod:`.reports`). Its routes and
pages are :mod:`hhrlhf.collect.web.browse`."""

from .diff import MAX_DIFF_STEPS, MAX_DIFF_TOKENS, WordDiff, diff_segments, word_diff
from .index import MAX_LIMIT, DataIndex, PairQuery, collected_index, pair_json
from .reports import REPORT_CACHE, REPORT_RETRY_AFTER, REPORT_SLOTS, ReportGate

__all__ = [
    "DataIndex",
    "PairQuery",
    "WordDiff",
    "ReportGate",
    "collected_index",
    "diff_segments",
    "pair_json",
    "word_diff",
    "MAX_DIFF_STEPS",
    "MAX_DIFF_TOKENS",
    "MAX_LIMIT",
    "REPORT_CACHE",
    "REPORT_RETRY_AFTER",
    "REPORT_SLOTS",
]
