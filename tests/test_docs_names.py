"""The docs name only code that exists.

Every Markdown page (README.md, CONTRIBUTING.md, docs/*.md) quotes code in backticks. Three
kinds of quote are checked outside fenced blocks (a fence shows commands and output, which
``tests/test_docs.py`` parses or runs):

* a **path** into the repository (``pbo_core/models/dt.py``, ``tests/benchmarks/``): the
  file or folder must exist;
* a **dotted name** from a project package (``pbo_core.registry.warm_up``,
  ``data_loaders.registry.load_study("electricity")``): the longest importable module
  prefix is imported and the rest must be its attributes (``hasattr``, one level at a
  time);
* a **short qualified name** whose first part is a project module's own name
  (``glm.GaussianLinearUtility``, ``studies.LoadStudy``): the attribute must exist in at
  least one module of that name.

A name that would need an optional extra (torch, botorch, ...) to import is skipped.
Scripts that Streamlit or ``python -m`` runs (``dashboard/app.py``, ``dashboard/views/``,
``__main__``) are never imported: their top-level names are read from the source.
Quotes that are no Python name are left alone: file names (``labels.py``), Streamlit
options in camelCase (``client.showErrorDetails``) and names of other libraries.
"""

from __future__ import annotations

import ast
import importlib
import re
import textwrap
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

PACKAGES = ("pbo_core", "data_loaders", "dashboard", "feature_extraction")
#: Top folders a quoted path may start with.
FOLDERS = (*PACKAGES, "tests", "docs")
#: Other libraries whose names a project module shares (``pbo_core/strategies/botorch.py``).
LIBRARIES = {"botorch", "torch", "gpytorch", "numpy", "scipy", "pandas", "streamlit", "sklearn"}
#: Suffixes that make ``a.b`` a file name, not an attribute.
FILE_SUFFIXES = {
    "py", "js", "css", "csv", "json", "jsonl", "png", "svg", "html", "toml", "txt", "md",
    "cfg", "ini", "yml", "yaml", "dot", "pdf", "gz", "zip", "db", "sqlite", "log", "dat",
}  # fmt: skip

_FENCE = re.compile(r"^```[^\n]*\n.*?^```", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_IDENT = r"[A-Za-z_]\w*"
#: ``folder/file.py``, ``folder/{a,b}.py`` (one brace group), ``folder/file.py::name``.
_PATH = re.compile(rf"((?:{'|'.join(FOLDERS)})/[\w./{{,}}-]*)(?:::({_IDENT}))?")
_DOTTED = re.compile(rf"({_IDENT}(?:\.{_IDENT})+)(?:\(.*\))?")
#: A Python name as this project spells them (snake_case, UPPER_CASE, CapWords).
_PEP8 = re.compile(r"_*(?:[a-z0-9_]+|[A-Z0-9_]+|[A-Z][A-Za-z0-9]*)")


def references(markdown: str) -> Iterator[tuple[str, str]]:
    """``(kind, name)`` of every checked quote: kind ``path``, ``dotted`` or ``short``."""
    for m in _SPAN.finditer(_FENCE.sub("", markdown)):
        span = m.group(1).strip()
        if "..." in span or "*" in span:
            continue  # a pattern, not a name
        p = _PATH.fullmatch(span)
        if p is not None:
            for path in _braces(p.group(1)):
                yield ("path", path) if p.group(2) is None else ("path", f"{path}::{p.group(2)}")
            continue
        d = _DOTTED.fullmatch(span)
        if d is None:
            continue
        name = d.group(1)
        parts = name.split(".")
        if parts[0] in PACKAGES:
            yield "dotted", name
        elif (
            parts[0] in _module_index()
            and parts[0] not in LIBRARIES
            and parts[-1] not in FILE_SUFFIXES
            and all(_PEP8.fullmatch(p) for p in parts[1:])
        ):
            yield "short", name


def _braces(path: str) -> list[str]:
    """``a/{b,c}.py`` -> ``a/b.py``, ``a/c.py``."""
    m = re.search(r"\{([^{}]*)\}", path)
    if m is None:
        return [path]
    return [path[: m.start()] + part + path[m.end() :] for part in m.group(1).split(",")]


@cache
def _module_index() -> dict[str, tuple[str, ...]]:
    """A module's own name (``glm``) -> the dotted modules so named."""
    index: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            if parts[-1] == "__main__" or len(parts) < 2:
                continue
            index.setdefault(parts[-1], []).append(".".join(parts))
    return {k: tuple(v) for k, v in index.items()}


def _script(module: str) -> Path | None:
    """The source of a module that must not be imported (it runs a page or a command)."""
    parts = module.split(".")
    if (
        parts[-1] == "__main__"
        or module == "dashboard.app"
        or module.startswith("dashboard.views.")
    ):
        path = ROOT.joinpath(*parts).with_suffix(".py")
        return path if path.is_file() else None
    return None


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _is_module(parts: list[str]) -> bool:
    path = ROOT.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def resolve(name: str) -> str | None:
    """``None`` when the dotted ``name`` exists, else what is missing: the longest prefix
    that is a module of the repository is imported (a script's source is read instead),
    the rest must be its attributes."""
    parts = name.split(".")
    i = next((i for i in range(len(parts), 0, -1) if _is_module(parts[:i])), 0)
    if i == 0:
        return f"no module {parts[0]}"
    module, rest = ".".join(parts[:i]), parts[i:]
    script = _script(module)
    if script is not None:
        return (
            f"{module} has no {rest[0]}"
            if rest and rest[0] not in _top_level_names(script)
            else None
        )
    try:
        obj = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in PACKAGES:
            return None  # an optional extra (torch, botorch, ...) is not installed
        raise
    for j, attr in enumerate(rest, start=i):
        if not hasattr(obj, attr):
            return f"{'.'.join(parts[:j])} has no {attr}"
        obj = getattr(obj, attr)
    return None


def check(markdown: str) -> list[str]:
    """What ``markdown`` quotes that the repository does not have."""
    bad = []
    for kind, name in references(markdown):
        if kind == "path":
            path, _, attr = name.partition("::")
            if not (ROOT / path).exists():
                bad.append(f"{path}: no such file or folder")
            elif attr and path.endswith(".py") and attr not in _top_level_names(ROOT / path):
                bad.append(f"{name}: {path} defines no {attr}")
        elif kind == "dotted":
            problem = resolve(name)
            if problem:
                bad.append(f"{name}: {problem}")
        else:
            first, rest = name.split(".", 1)
            problems = [resolve(f"{m}.{rest}") for m in _module_index()[first]]
            if all(problems):
                bad.append(f"{name}: {'; '.join(p for p in problems if p)}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_names_exist(page: Path) -> None:
    bad = check(page.read_text(encoding="utf-8"))
    assert not bad, f"{page.relative_to(ROOT)} quotes names the code does not have:\n" + "\n".join(
        bad
    )


def test_scan_finds_names() -> None:
    kinds: dict[str, int] = {}
    for page in PAGES:
        for kind, _ in references(page.read_text(encoding="utf-8")):
            kinds[kind] = kinds.get(kind, 0) + 1
    assert kinds.get("path", 0) > 50 and kinds.get("dotted", 0) > 20 and kinds.get("short", 0) > 5


def test_check_flags_made_up_names() -> None:
    fake = textwrap.dedent(
        """
    # A page

    The registry lives in `pbo_core/registry/base.py` (`pbo_core.registry.MODELS`, built by
    `pbo_core.registry.register`); `data_loaders.registry.load_study("train")` loads a
    study and `glm.GaussianLinearUtility` predicts. Stale: `pbo_core/no_such_module.py`,
    `pbo_core.registry.ACCURACY_METHODS`, `pbo_core.no_such.thing`,
    `accuracy.split_rows(rows)`, `dashboard.views.tree_explorer.no_such_helper`,
    `pbo_core/experiments/{accuracy,no_such}.py` and `pbo_core/evaluation.py::no_such`.
    Found: `pbo_core/evaluation.py::compare`, `pbo_core/explain/{labels,export}.py`.
    Left alone: `labels.py`, `client.showErrorDetails`, `np.where`, `pbo_core/**/*.py`,
    `botorch.models.PairwiseGP`, and code in a fence:

    ```python
    from pbo_core.registry import AccuracyMethod
    ```
    """
    )
    assert sorted(check(fake)) == sorted(
        [
            "accuracy.split_rows: pbo_core.experiments.accuracy has no split_rows",
            "dashboard.views.tree_explorer.no_such_helper: dashboard.views.tree_explorer has no "
            "no_such_helper",
            "pbo_core.no_such.thing: pbo_core has no no_such",
            "pbo_core/evaluation.py::no_such: pbo_core/evaluation.py defines no no_such",
            "pbo_core/experiments/no_such.py: no such file or folder",
            "pbo_core.registry.ACCURACY_METHODS: pbo_core.registry has no ACCURACY_METHODS",
            "pbo_core/no_such_module.py: no such file or folder",
        ]
    )


def test_optional_extras_are_skipped() -> None:
    assert resolve("pbo_core.strategies.botorch.BotorchStrategy") is None
    missing = resolve("pbo_core.strategies.botorch.NoSuchStrategy")
    assert missing in (None, "pbo_core.strategies.botorch has no NoSuchStrategy")
