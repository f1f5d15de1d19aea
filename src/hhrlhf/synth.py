"""The old import path of :mod:`hhrlhf.testing.synth` (test and benchmark support).

``import hhrlhf.synth`` and ``from hhrlhf.synth import write_corpus`` keep working: this name
is the same module object as :mod:`hhrlhf.testing.synth`.
"""

import sys

from .testing import synth as _synth

sys.modules[__name__] = _synth
