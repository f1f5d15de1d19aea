"""Red-team analysis: the red-team paper's findings, regenerated from the attempts.

- :mod:`~hhrlhf.redteam.stats`: pure statistics (cell counts, bootstrap means, success share,
  members, tags, turns), on :mod:`~hhrlhf.redteam.measures` (Spearman, histograms, Lorenz
  curve, Gini: measures of plain numbers).
- :mod:`~hhrlhf.redteam.themes`: attack themes, clusters of task descriptions.
- :mod:`~hhrlhf.redteam.query`: selecting attempts; records or a pandas DataFrame.
- :mod:`~hhrlhf.redteam.plots`: the figures (matplotlib Agg).
- :mod:`~hhrlhf.redteam.report`: ``report.json`` + a self-contained ``report.html``.

Heavy libraries (numpy, matplotlib, scikit-learn, pandas: the ``[report]`` extra) are imported
only when a function needs them.

>>> from hhrlhf.redteam import generate_report
>>> paths = generate_report("sample", "redteam-report")  # doctest: +SKIP
"""

from .query import AttemptQuery, attempts_frame, filter_attempts, query_attempts
from .report import compute_report, generate_report, render_html, write_report

__all__ = [
    "AttemptQuery",
    "filter_attempts",
    "query_attempts",
    "attempts_frame",
    "compute_report",
    "write_report",
    "generate_report",
    "render_html",
]
