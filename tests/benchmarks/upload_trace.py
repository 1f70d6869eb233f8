"""The path of an uploaded file through the code: which project modules it passes, how
often it comes back to one it already left, and the longest functions it runs.

Run (from the checkout; the study is saved into a throw-away data folder)::

    python tests/benchmarks/upload_trace.py                    # the default files
    python tests/benchmarks/upload_trace.py FILE [FILE ...] --depth 2 --show

Each file is imported through the one function both entry points call,
``data_loaders.user_studies.save_study`` (``python -m data_loaders import-study`` calls
it directly; the dashboard's Add-a-study form calls it through the job body
``dashboard._import_jobs.save_upload``), once untraced (every module imported, caches
warm) and once traced with :func:`sys.setprofile`.

What is counted
---------------
* A **project function** is one defined in ``pbo_core``, ``feature_extraction``,
  ``data_loaders`` or ``dashboard``; other frames (pandas, the standard library) are
  transparent: a project function they call back counts as called by the project frame
  below them.
* A **module visit** is a stretch of the call stack in one project module: a call from a
  function of module A to a function of module B (B != A) opens a visit of B inside the
  visit of A, and its return closes it; calls within one module stay in the visit.
* The **top level of the pipeline** is the visits up to ``--depth`` levels below the
  entry's visit (``data_loaders.study_store``, depth 0; default ``--depth 2``: the
  modules the entry calls and the modules those call). A visit deeper than that counts as
  part of its ancestor at that depth (a helper's helpers are the helper's business).
* The **path** is the sequence of modules the import is in, one entry per change: the
  callee's module after a call into a new visit, the caller's after its return.
* A **return to a module already visited** is a step A -> B of the path where B appears
  earlier in the path (so the import had entered B and left it). A straight pipeline
  whose orchestrator calls each stage once returns to the orchestrator once per stage; a
  ping-pong between modules returns many more times.
* **Functions on the path** are all project functions that run during the import, at any
  depth; their length is the lines of their definition (decorators to last line).
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))
PACKAGES = ("pbo_core", "feature_extraction", "data_loaders", "dashboard")
#: The default files: a long fixture, a wide fixture with availability columns and the
#: bundled SwissMetro table (wide, 10,728 rows).
DEFAULT_FILES = (
    ROOT / "tests" / "fixtures" / "formats" / "long.csv",
    ROOT / "tests" / "fixtures" / "formats" / "wide.csv",
    ROOT / "data_loaders" / "data" / "swissmetro.csv.gz",
)
#: A function longer than this many lines is named (the upload path's bound).
MAX_LINES = 120


def module_of(filename: str) -> str | None:
    """The dotted project module of a source file, or ``None`` for another file."""
    try:
        rel = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if rel.parts[0] not in PACKAGES or rel.suffix != ".py":
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass
class Visit:
    """A stretch of the call stack in one module (see the module docstring)."""

    module: str
    depth: int
    frames: int = 1  # project frames of this visit on the stack
    #: A repeat of a call site already on the path (a loop's later rounds): not shown.
    quiet: bool = False
    #: ``(calling line, module)`` of the visits opened from this one.
    sites: set[tuple[tuple[str, int] | None, str]] = field(default_factory=set)


@dataclass
class Trace:
    """What one traced import went through."""

    path: list[str] = field(default_factory=list)
    #: Per step of ``path``: entered by a call (``True``) or by a return (``False``).
    called: list[bool] = field(default_factory=list)
    functions: set[tuple[str, int, str]] = field(default_factory=set)  # file, line, name


def _call_site(frame: FrameType) -> tuple[str, int] | None:
    """The project line that called ``frame`` (through any other frames), or ``None``."""
    f = frame.f_back
    while f is not None and module_of(f.f_code.co_filename) is None:
        f = f.f_back
    return None if f is None else (f.f_code.co_filename, f.f_lineno)


def trace_call(fn: Callable[[], Any], max_depth: int) -> tuple[Any, Trace]:
    """Run ``fn`` under :func:`sys.setprofile`; its result and the :class:`Trace`."""
    out = Trace()
    stack: list[Visit] = []
    owner: dict[int, Visit] = {}  # id of a project frame -> the visit it belongs to
    modules: dict[str, str | None] = {}

    def mod(frame: FrameType) -> str | None:
        f = frame.f_code.co_filename
        if f not in modules:
            modules[f] = module_of(f)
        return modules[f]

    def step(module: str, called: bool) -> None:
        if stack and stack[-1].quiet:
            return
        if not out.path or out.path[-1] != module:
            out.path.append(module)
            out.called.append(called)

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event not in ("call", "return"):
            return
        m = mod(frame)
        if m is None:
            return
        code = frame.f_code
        if event == "call":
            out.functions.add((code.co_filename, code.co_firstlineno, code.co_qualname))
            top = stack[-1] if stack else None
            if top is None:
                v = Visit(m, 0)
                stack.append(v)
                step(m, True)
            elif top.module == m or top.depth >= max_depth:
                v = top
                v.frames += 1
            else:
                site = (_call_site(frame), m)
                v = Visit(m, top.depth + 1, quiet=top.quiet or site in top.sites)
                top.sites.add(site)
                stack.append(v)
                step(m, True)
            owner[id(frame)] = v
        else:
            v = owner.pop(id(frame), None)
            if v is None:
                return
            v.frames -= 1
            if v.frames == 0 and stack and stack[-1] is v:
                stack.pop()
                if stack and not v.quiet:
                    step(stack[-1].module, False)

    sys.setprofile(profile)
    try:
        return fn(), out
    finally:
        sys.setprofile(None)


def returns(path: Sequence[str], called: Sequence[bool] | None = None) -> Counter[str]:
    """Per module, the steps of ``path`` that come back to it after it was left (with
    ``called``: only those that come back by a call, not by a return to the caller)."""
    seen: set[str] = set()
    back: Counter[str] = Counter()
    for k, m in enumerate(path):
        if m in seen and (called is None or called[k]):
            back[m] += 1
        seen.add(m)
    return back


def function_lengths(functions: set[tuple[str, int, str]]) -> list[tuple[int, str]]:
    """``(lines, 'module.qualname')`` of the functions run, longest first."""
    spans: dict[str, dict[int, int]] = {}
    out = []
    for filename, first, qualname in functions:
        if filename not in spans:
            tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
            spans[filename] = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    spans[filename][start] = node.end_lineno - start + 1  # type: ignore[operator]
        lines = spans[filename].get(first)
        if lines is None:  # a lambda, a comprehension, a class body
            continue
        out.append((lines, f"{module_of(filename)}.{qualname}"))
    return sorted(out, reverse=True)


def importer(path: Path) -> Callable[[], Any]:
    """The import of ``path`` through the shared entry, as a call with its arguments
    ready (a new study in the data folder each time it runs)."""
    from data_loaders.user_studies import ColumnMap, save_study  # after the data folder is set

    content, columns = path.read_bytes(), ColumnMap(format="auto")
    return lambda: save_study(path.stem, content, path.name, None, columns)


def report(path: Path, depth: int, show: bool, top: int) -> dict[str, Any]:
    """Trace one file's import and print what it went through; the figures."""
    run = importer(path)
    run()  # warm: modules imported, caches filled
    (meta, problems), t = trace_call(run, depth)
    if meta is None:
        raise SystemExit(f"{path.name}: not imported: {problems[0].one_line()}")
    back = returns(t.path)
    again = returns(t.path, t.called)
    lengths = function_lengths(t.functions)
    long = [(n, f) for n, f in lengths if n > MAX_LINES]
    print(f"{path.name} (depth {depth})")
    print(f"  modules visited: {len(set(t.path))}; steps: {len(t.path)}")
    print(
        f"  returns to a module already visited: {sum(back.values())} ("
        + ", ".join(f"{m} {k}" for m, k in back.most_common())
        + ")"
    )
    print(
        f"    of which by a call into a module left before: {sum(again.values())} ("
        + ", ".join(f"{m} {k}" for m, k in again.most_common())
        + "); the rest return to a caller"
    )
    print(f"  project functions run: {len(lengths)}; longest on the path:")
    for n, f in lengths[:top]:
        print(f"    {n:4d} lines  {f}")
    print(
        f"  over {MAX_LINES} lines: "
        + (", ".join(f"{f} ({n})" for n, f in long) if long else "none")
    )
    if show:
        print("  path: " + " -> ".join(t.path))
    return {
        "file": path.name,
        "modules": len(set(t.path)),
        "returns": sum(back.values()),
        "reentries": sum(again.values()),
        "longest": lengths[0] if lengths else None,
        "over": long,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path, default=list(DEFAULT_FILES))
    parser.add_argument("--depth", type=int, default=2, help="levels of module visits kept")
    parser.add_argument("--show", action="store_true", help="print the path itself")
    parser.add_argument("--top", type=int, default=6, help="longest functions shown")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as home:
        os.environ["DTPBO_DATA_HOME"] = home
        for f in args.files:
            report(f.resolve(), args.depth, args.show, args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
