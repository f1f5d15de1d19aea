"""No god modules and no god functions in the library: every module of ``src/hhrlhf`` is at most
500 lines and every function (a method, a nested function) at most 80, from its ``def`` line to
its last line (decorators not counted). Database migrations are left out: a migration is one
long list of statements by nature, and is never edited once released.

The exceptions live in ONE place, :data:`EXCEPTIONS`, each with its reason; an excepted
function may still not pass the hard ceiling of 120 lines. An entry that no longer applies
(its module or function is gone or back under the limit) fails the test until it is removed,
so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hhrlhf

SRC = Path(hhrlhf.__file__).parent
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
#: No function may be longer than this, excepted or not.
CEILING = 120
#: Folders left out, relative to ``src/hhrlhf``.
SKIPPED = ("collect/db/migrations/",)

#: Modules over 500 lines (``path``) and functions over 80 (``path:qualified.name``) allowed
#: for a reason. Remove an entry once it is under the limit (the test says when).
EXCEPTIONS: dict[str, str] = {}


def _modules() -> dict[str, str]:
    """Each module's text, by its path relative to ``src/hhrlhf``."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if not name.startswith(SKIPPED):
            out[name] = path.read_text(encoding="utf-8")
    return out


def module_lengths(modules: dict[str, str]) -> dict[str, int]:
    return {name: len(text.splitlines()) for name, text in modules.items()}


def function_lengths(modules: dict[str, str]) -> dict[str, int]:
    """``{"path:qualified.name": lines}`` for every function and method, nested ones too."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, path: str, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualname = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    assert child.end_lineno is not None
                    key = f"{path}:{qualname}"
                    # a name defined twice (an overload, a conditional def): the longest counts
                    out[key] = max(out.get(key, 0), child.end_lineno - child.lineno + 1)
                visit(child, path, qualname + ".")
            else:
                visit(child, path, prefix)

    for name, text in modules.items():
        visit(ast.parse(text), name, "")
    return out


def over_the_limits(modules: dict[str, str]) -> dict[str, int]:
    """What is over its limit, with its length."""
    long_modules = {n: k for n, k in module_lengths(modules).items() if k > MAX_MODULE_LINES}
    long_functions = {n: k for n, k in function_lengths(modules).items() if k > MAX_FUNCTION_LINES}
    return {**long_modules, **long_functions}


def test_no_module_or_function_is_over_its_limit_unless_excepted():
    over = over_the_limits(_modules())
    unexcused = {name: n for name, n in over.items() if name not in EXCEPTIONS}
    assert not unexcused, (
        f"over {MAX_MODULE_LINES} lines (a module) or {MAX_FUNCTION_LINES} (a function): "
        f"{unexcused}; split it by concept, or add an entry with its reason to "
        "EXCEPTIONS in tests/test_sizes.py"
    )


def test_no_function_passes_the_ceiling():
    lengths = function_lengths(_modules())
    over = {name: n for name, n in lengths.items() if n > CEILING}
    assert not over, f"over the {CEILING}-line ceiling: {over}"


def test_every_exception_still_applies():
    modules = _modules()
    over = over_the_limits(modules)
    stale = sorted(set(EXCEPTIONS) - set(over))
    assert not stale, f"no longer over the limit (or gone): remove from EXCEPTIONS: {stale}"
    assert all(reason.strip() for reason in EXCEPTIONS.values())


def test_the_measure_counts_methods_and_nested_functions_and_skips_decorators():
    text = (
        "import functools\n"
        "\n"
        "@functools.cache\n"
        "def f():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
        "\n"
        "class C:\n"
        "    def m(self):\n"
        "        pass\n"
    )
    assert function_lengths({"x.py": text}) == {
        "x.py:f": 4,
        "x.py:f.inner": 2,
        "x.py:C.m": 2,
    }
    assert module_lengths({"x.py": text}) == {"x.py": 11}
    long = "def g():\n" + "    x = 1\n" * MAX_FUNCTION_LINES
    assert over_the_limits({"y.py": long}) == {"y.py:g": MAX_FUNCTION_LINES + 1}
    assert over_the_limits({"z.py": "x = 1\n" * (MAX_MODULE_LINES + 1)}) == {
        "z.py": MAX_MODULE_LINES + 1
    }
