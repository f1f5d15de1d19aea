"""Bridges to engines that take hhrlhf past one machine.

* :mod:`hhrlhf.integrations.ray`: HH pairs and red-team attempts as Ray Data datasets, read
  by hhrlhf's own readers one file per task, then scored with a saved preference model,
  checked and exported in any format, with the same values as one process
  (``pip install 'hhrlhf[ray]'``).

Importing this package imports no engine; importing a module of it without its extra raises
:class:`~hhrlhf.errors.MissingExtraError` naming the ``pip install`` to run.
"""
