"""No import cycles among the package's modules.

The graph is read from the source with ``ast``: every ``import``/``from ... import`` of an
``hhrlhf`` module anywhere in a file (inside functions too, since a function-level import
only hides a cycle until the function runs) is an edge. ``from package import name`` is an
edge to the submodule ``package.name`` when there is one (a ``.py`` file, a subpackage or
the C extension), else to the package itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hhrlhf

PACKAGE = Path(hhrlhf.__file__).parent


def modules(root: Path = PACKAGE) -> dict[str, tuple[Path | None, bool]]:
    """Module name -> (source file, is a package); native modules have no source here."""
    out: dict[str, tuple[Path | None, bool]] = {}
    for path in root.parent.joinpath(root.name).rglob("*"):
        rel = path.relative_to(root.parent)
        if path.suffix == ".py":
            parts = list(rel.with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
        elif path.suffix in (".so", ".pyd", ".c") and path.parent.joinpath("__init__.py").exists():
            name = ".".join([*rel.parent.parts, path.name.split(".")[0]])
            out.setdefault(name, (None, False))
    return out


def import_graph(mods: dict[str, tuple[Path | None, bool]]) -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in its source)."""
    graph: dict[str, set[str]] = {}
    top = PACKAGE.name
    for name, (path, is_pkg) in mods.items():
        deps: set[str] = set()
        if path is not None:
            here = name if is_pkg else name.rpartition(".")[0]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.Import):
                    deps.update(a.name for a in node.names)
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                        target = ".".join(base + ([node.module] if node.module else []))
                    else:
                        target = node.module or ""
                    for a in node.names:
                        sub = f"{target}.{a.name}"
                        deps.add(sub if sub in mods else target)
        graph[name] = {d for d in deps if d in mods and d != name and d.split(".")[0] == top}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def test_the_graph_sees_imports_inside_functions_and_relative_imports():
    graph = import_graph(modules())
    # cli/pm.py imports the reward modules inside its commands, relatively
    assert "hhrlhf.reward.backends" in graph["hhrlhf.cli.pm"]
    assert "hhrlhf.reward.plots" in graph["hhrlhf.cli.pm"]
    # `from .. import _jsonl` is the C extension, not the package
    assert "hhrlhf._jsonl" in graph["hhrlhf.fastload.parse"]
    assert "hhrlhf" not in graph["hhrlhf.fastload.parse"]


def test_cycles_are_found():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles():
    found = cycles(import_graph(modules()))
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_cli_modules_hold_no_numeric_or_plotting_code():
    """The CLI parses options and prints; numbers, arrays and plots live in the library."""
    heavy = {"matplotlib", "numpy", "scipy", "sklearn", "pandas", "pyarrow", "torch"}
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            for n in names:
                assert n.split(".")[0] not in heavy, f"{path.name} imports {n}"
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "require"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):  # require("numpy", ...) imports by name
                n = str(node.args[0].value)
                assert n.split(".")[0] not in heavy, f"{path.name} requires {n}"


def _imported_names(path: Path) -> set[str]:
    """The top-level names of the absolute imports anywhere in ``path``."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.add((node.module or "").split(".")[0])
    return out


#: File formats the library reads and writes; the CLI only calls it.
FILE_FORMATS = {"json", "orjson", "gzip", "isal", "csv", "pickle", "pyarrow"}


def test_cli_modules_hold_no_file_format_code():
    """Reading and writing JSON, JSONL, gzip or CSV files is the library's; the CLI prints.

    ``cli/options.py`` alone may import orjson, for ``emit_json``/``json_line``, which only
    turn a value into text for stdout."""
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        allowed = {"orjson"} if path.name == "options.py" else set()
        found = (_imported_names(path) & FILE_FORMATS) - allowed
        assert not found, f"{path.name} imports {sorted(found)}"


def test_the_file_format_check_sees_imports_inside_functions(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("import click\n\ndef f():\n    import json\n    from gzip import open\n")
    assert _imported_names(p) & FILE_FORMATS == {"json", "gzip"}


def test_the_download_stack_is_imported_only_for_a_download():
    """http.client, ssl and email are a third of `import hhrlhf`: neither the library nor the
    `hh` command line imports them until a file is fetched (hhrlhf.download.transfer)."""
    import subprocess
    import sys

    code = (
        "import sys, hhrlhf, hhrlhf.cli, hhrlhf.download\n"
        "print(sorted(m for m in ('http.client', 'ssl', 'email.parser', 'urllib.request')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
