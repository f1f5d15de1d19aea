"""Test and benchmark support, not part of the library's API.

:mod:`hhrlhf.testing.synth` writes synthetic, benign HH-RLHF-shaped files: the bundled sample
(``scripts/make_sample.py``), the test fixtures and the full-scale benchmark corpus
(``bench/make_corpus.py``). It ships in the package so that those work from an install.
"""
