"""Build the optional native block parser; all other metadata is in pyproject.toml.

``optional=True``: where no C compiler is at hand the install still succeeds, and
:mod:`hhrlhf.fastload` loads with its pure-Python path (same results, slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "hhrlhf._jsonl",
            ["src/hhrlhf/_jsonl.c"],
            optional=True,
            extra_compile_args=["-O3"] if not __import__("sys").platform.startswith("win") else [],
        )
    ]
)
