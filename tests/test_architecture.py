"""What the code says of itself holds: no issue-tracker numbers in code (a reader of a
clone cannot follow them; the commit log keeps the history), and project imports at the
top of a module, where ``lint-imports`` and a reader see them: at most
:data:`MAX_FUNCTION_IMPORTS` inside functions, each delaying an optional heavy
dependency and saying so (docs/architecture.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Every Python file of the repository: the packages, the tests, the docs' scripts.
SOURCES = sorted(
    p
    for folder in ("pbo_core", "data_loaders", "feature_extraction", "dashboard", "tests", "docs")
    for p in (ROOT / folder).rglob("*.py")
)
ISSUE = re.compile(r"\bissues? ?#?\d+\b", re.IGNORECASE)
PACKAGES = ("pbo_core", "data_loaders", "feature_extraction", "dashboard")
#: Project imports a function may make (an optional heavy dependency behind it).
MAX_FUNCTION_IMPORTS = 3


def function_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of the project imports inside functions of ``path``."""
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in child.names]
                    if isinstance(child, ast.Import)
                    else [child.module or ""]
                )
                found.extend((child.lineno, n) for n in names if n.split(".")[0] in PACKAGES)
            walk(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    walk(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_the_sources_were_found() -> None:
    assert len(SOURCES) > 300


def test_no_issue_numbers_in_code() -> None:
    found = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
        for p in SOURCES
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
        if ISSUE.search(line)
    ]
    assert not found, "issue numbers in code (say what the code does instead):\n" + "\n".join(found)


def test_project_imports_sit_at_the_top_of_modules() -> None:
    found = []
    for p in SOURCES:
        if p.relative_to(ROOT).parts[0] not in PACKAGES:
            continue
        lines = p.read_text(encoding="utf-8").splitlines()
        for line, module in function_imports(p):
            said = " ".join(lines[max(0, line - 3) : line])  # the import and the lines above
            found.append((f"{p.relative_to(ROOT)}:{line}: {module}", "optional" in said))
    listed = "\n".join(f for f, _ in found)
    assert len(found) <= MAX_FUNCTION_IMPORTS, f"project imports inside functions:\n{listed}"
    unsaid = [f for f, commented in found if not commented]
    assert not unsaid, "a delayed project import says which optional dependency it delays:\n" + (
        "\n".join(unsaid)
    )
