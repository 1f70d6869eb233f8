"""Resumable grids of independent runs (joblib; optionally on a Dask cluster).

A grid is a list of *cells* (hashable dictionaries such as ``{"function": "branin",
"method": "dt", "seed": 3, ...}``). Each cell is computed by a picklable function that
returns a tidy :class:`pandas.DataFrame` (one row per step). With an output folder, every
finished cell is written atomically to its own Parquet file named after a hash of the
cell, so an interrupted grid resumes where it stopped: cells whose file exists are read
back instead of recomputed. :func:`read_results` loads a folder as one table.

Parallelism uses joblib's process backend by default; ``dask_scheduler="tcp://..."``
sends the cells to a Dask cluster through joblib's ``dask`` backend.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pandas as pd
from joblib import Parallel, delayed, parallel_config

from pbo_core.errors import GridError

Cell = Mapping[str, Any]

#: Finished cells' frames are concatenated in runs of this many (in cell order) while the
#: grid goes on: a small frame costs about 12 kB of pandas objects, its rows in one
#: table a few hundred bytes, so a grid of 100,000+ cells (the hierarchy at 20,000
#: respondents) does not hold each cell's frame until the end.
CHUNK_CELLS = 2048


class _Rows:
    """The grid's frames in cell order, concatenated in runs of :data:`CHUNK_CELLS` as
    soon as a run of consecutive cells is finished; :meth:`frame` is
    ``pd.concat(non-empty frames, ignore_index=True)``."""

    def __init__(self, n: int) -> None:
        self.frames: list[pd.DataFrame | None] = [None] * n
        self.chunks: list[pd.DataFrame] = []
        self.start = 0  # cells before it are in ``chunks``
        self.ready = 0  # cells before it are all finished

    def put(self, i: int, df: pd.DataFrame) -> None:
        self.frames[i] = df
        n = len(self.frames)
        while self.ready < n and self.frames[self.ready] is not None:
            self.ready += 1
        if self.ready - self.start >= CHUNK_CELLS:
            self._fold(self.ready)

    def _fold(self, end: int) -> None:
        parts = [f for f in self.frames[self.start : end] if f is not None and len(f)]
        if parts:
            self.chunks.append(pd.concat(parts, ignore_index=True))
        self.frames[self.start : end] = [None] * (end - self.start)
        self.start = end

    def frame(self) -> pd.DataFrame:
        parts = self.chunks + [f for f in self.frames[self.start :] if f is not None and len(f)]
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def cell_key(cell: Cell) -> str:
    """Stable short hash of a cell (its JSON with sorted keys)."""
    blob = json.dumps(dict(cell), sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def cell_path(out_dir: Path, cell: Cell) -> Path:
    """Parquet file of a cell inside ``out_dir``."""
    return out_dir / f"cell-{cell_key(cell)}.parquet"


def _write_atomic(df: pd.DataFrame, path: Path) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def _run_and_store(
    fn: Callable[..., pd.DataFrame],
    cell: Cell,
    out_dir: str | None,
    step_hook: Callable[[Cell, int, Any], None] | None = None,
) -> pd.DataFrame | str:
    try:
        if step_hook is None:
            df = fn(cell)
        else:
            df = fn(cell, callback=lambda step, partial: step_hook(cell, step, partial))
    except Exception as exc:  # reported with the cell by run_grid; other cells go on
        return f"{type(exc).__name__}: {exc}"
    if out_dir is not None:
        _write_atomic(df, cell_path(Path(out_dir), cell))
    return df


@contextmanager
def _backend(jobs: int, dask_scheduler: str | None) -> Iterator[None]:
    if dask_scheduler is None:
        with parallel_config(backend="loky", n_jobs=jobs):
            yield
        return
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError(
            "--dask-scheduler needs the 'distributed' package: pip install 'dt-pbo-explorer[dask]'"
        ) from exc
    with Client(dask_scheduler), parallel_config(backend="dask"):
        yield


def run_grid(
    cells: Sequence[Cell],
    fn: Callable[[Cell], pd.DataFrame],
    *,
    out_dir: str | Path | None = None,
    jobs: int = 1,
    dask_scheduler: str | None = None,
    fresh: bool = False,
    progress: Callable[[int, int], None] | None = None,
    step_hook: Callable[[Cell, int, Any], None] | None = None,
) -> pd.DataFrame:
    """Compute every cell (skipping finished ones) and return all rows.

    Parameters
    ----------
    cells
        The grid.
    fn
        Picklable function computing one cell's rows.
    out_dir
        Folder for per-cell Parquet files (created if missing). ``None`` keeps results in
        memory only.
    jobs
        Parallel workers (joblib ``n_jobs``; -1 = all cores).
    dask_scheduler
        Address of a Dask scheduler; when given, cells run on that cluster.
    fresh
        Recompute cells even when their file exists.
    progress
        Called as ``progress(done, total)`` as cells finish.
    step_hook
        Called as ``step_hook(cell, step, partial_result)`` after every step of a run;
        ``fn`` is then called as ``fn(cell, callback=...)`` (e.g.
        :func:`pbo_core.experiments.bench.run_cell`). Runs the cells in this process, so
        it needs ``jobs=1`` and no Dask scheduler.

    Returns
    -------
    DataFrame
        Rows of all cells, in cell order.

    Raises
    ------
    GridError
        After all other cells ran, when some cells raised (each failure is listed with its
        cell; finished cells are already stored, so a rerun computes only the failures).
    """
    if step_hook is not None and (jobs != 1 or dask_scheduler is not None):
        raise ValueError("step_hook needs jobs=1 and no Dask scheduler (runs in this process)")
    out = Path(out_dir) if out_dir is not None else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    rows = _Rows(len(cells))
    todo: list[int] = []
    for i, cell in enumerate(cells):
        path = cell_path(out, cell) if out is not None else None
        if path is not None and path.exists() and not fresh:
            rows.put(i, pd.read_parquet(path))
        else:
            todo.append(i)
    total = len(cells)
    done = total - len(todo)
    if progress is not None:
        progress(done, total)
    if todo:
        out_s = str(out) if out is not None else None
        failures: list[tuple[Cell, str]] = []
        with _backend(jobs, dask_scheduler) if step_hook is None else nullcontext():
            results: Iterator[pd.DataFrame | str] = (
                Parallel(return_as="generator")(
                    delayed(_run_and_store)(fn, cells[i], out_s) for i in todo
                )
                if step_hook is None
                else (_run_and_store(fn, cells[i], out_s, step_hook) for i in todo)
            )
            for i, df in zip(todo, results, strict=False):
                if isinstance(df, str):
                    failures.append((cells[i], df))
                else:
                    rows.put(i, df)
                done += 1
                if progress is not None:
                    progress(done, total)
        if failures:
            raise GridError(failures)
    return rows.frame()


def progress_printer(quiet: bool, unit: str = "cells") -> Callable[[int, int], None]:
    """Progress callback for :func:`run_grid` on stderr (a counter on a terminal)."""

    tty = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        if quiet:
            return
        if tty:
            print(f"\r{done}/{total} {unit}", end="" if done < total else "\n", file=sys.stderr)
        elif done == total or done % max(1, total // 10) == 0:
            print(f"{done}/{total} {unit}", file=sys.stderr)

    return progress


def write_json(obj: Any, target: str | None) -> None:
    """Write ``obj`` as JSON to a path, or to stdout when ``target`` is ``"-"``."""
    if target is None:
        return

    def clean(o: Any) -> Any:  # NaN/inf are not JSON: write null
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    text = json.dumps(clean(obj), indent=2, default=float, allow_nan=False)
    if target == "-":
        print(text)
    else:
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


def read_results(out_dir: str | Path) -> pd.DataFrame:
    """All finished cells of a results folder as one table (empty if none)."""
    files = sorted(Path(out_dir).glob("cell-*.parquet"))
    if not files:
        return pd.DataFrame()
    return pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
