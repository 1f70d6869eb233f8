"""Import layering of ``feature_extraction`` and ``data_loaders`` (function-level imports
count): ``feature_extraction`` never imports ``data_loaders`` except in its command-line
apps, and no two modules of the two packages import each other, directly or not."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("feature_extraction", "data_loaders")
APPS = {"feature_extraction.cli", "feature_extraction.__main__"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            if "data" in path.relative_to(ROOT / pkg).parts[:-1]:
                continue  # bundled data folders hold scripts, not modules
            out[_module_name(path)] = path
    return out


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules imported anywhere in the file (submodules resolved)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        for name in names:
            while name and name not in modules and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in modules:
                found.add(name)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imports(p, modules) - {m} for m, p in modules.items()}


def test_feature_extraction_does_not_import_data_loaders() -> None:
    graph = _graph()
    bad = sorted(
        (m, i)
        for m, deps in graph.items()
        if m.startswith("feature_extraction") and m not in APPS
        for i in deps
        if i.startswith("data_loaders")
    )
    assert not bad, f"feature_extraction imports data_loaders: {bad}"


def test_no_import_cycles() -> None:
    graph = _graph()
    # a package importing its own submodules (re-exports) is not a cycle: drop the
    # edges from a package __init__ into its own subtree before searching
    edges = {m: {i for i in deps if not i.startswith(f"{m}.")} for m, deps in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for i in sorted(edges[m]):
            if state.get(i) == 1:
                return [*stack[stack.index(i) :], i]
            if i not in state and (cycle := visit(i)):
                return cycle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (cycle := visit(m)):
            raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
