"""Results folders written by the benchmark and experiment commands."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import _work
from dashboard._services import defaults, jobs
from dashboard._services.defaults import GRIDS as DEFAULT_GRIDS
from dashboard._services.defaults import DefaultGrid, results_home
from pbo_core.experiments import runner

__all__ = ["DEFAULT_GRIDS", "DefaultGrid", "results_home"]

RESULT_KINDS = {
    "bench": {"function", "method", "seed", "step", "regret"},
    "rho-regret": {"study", "unit", "method", "question", "rho_regret"},
    "hierarchy-accuracy": {"cohort", "variant", "question", "test_acc"},
    "sushi-pbo": {"user", "method", "question", "rho_regret", "top1_error"},
    "hierarchy": {"cohort", "variant", "question", "regret"},
    "accuracy": {"model", "train_acc", "test_acc"},
    "sensitivity": {"feature removed", "test acc (%)"},
}


#: Set to 1 to never compute default grids (tests of other behaviour; read-only setups).
NO_DEFAULTS_ENV = "DTPBO_NO_DEFAULT_RESULTS"


def is_default_root(root: str | Path) -> bool:
    """True when ``root`` is the per-user results folder (defaults may be written there)."""
    if os.environ.get(NO_DEFAULTS_ENV, "") not in ("", "0"):
        return False
    try:
        return Path(root).expanduser().resolve() == results_home().resolve()
    except OSError:
        return False


def ensure_default(
    name: str, root: str | Path | None = None, progress: Callable[[int, int], None] | None = None
) -> Path:
    """Compute a default grid's missing cells (:mod:`dashboard._services.defaults`), here."""
    return defaults.ensure(name, root, progress=progress)


def default_grid_job(name: str, root: str | Path | None = None, priority: int = 0) -> jobs.Job:
    """A job computing a default grid's missing cells into its folder (the Parquet files
    are the result on disk; the job returns the folder)."""
    grid = defaults.GRIDS[name]
    out = grid.folder(root)
    return jobs.service().submit(
        jobs.job_key("grid", name, str(out.resolve())),
        f"Computing the default results: {grid.what}",
        _work.grid,
        grid.cells(),
        grid.fn,
        str(out),
        "runs",
        estimate=10.0,
        priority=priority,
        cached=False,
    )


def result_folders(root: str | Path) -> list[Path]:
    """Folders under ``root`` (and ``root`` itself) holding per-cell Parquet results."""
    base = Path(root).expanduser()
    if not base.is_dir():
        return []
    found = {p.parent for p in base.rglob("cell-*.parquet")}
    return sorted(found)


def _folder_stamp(folder: Path) -> tuple[tuple[str, int], ...]:
    return tuple((p.name, p.stat().st_mtime_ns) for p in sorted(folder.glob("cell-*.parquet")))


@st.cache_data(show_spinner="Reading results...", max_entries=32)
def _read_results(folder: str, stamp: Any) -> pd.DataFrame:
    return runner.read_results(folder)


def read_results(folder: str | Path) -> pd.DataFrame:
    """All finished cells of a results folder (cached until a file changes)."""
    f = Path(folder)
    return _read_results(str(f.resolve()), _folder_stamp(f))


def result_kind(df: pd.DataFrame) -> str:
    """What produced a results table (``bench``, ``sushi-pbo``, ``hierarchy``, ...)."""
    cols = set(df.columns)
    for kind, need in RESULT_KINDS.items():
        if need <= cols:
            return kind
    return "unknown"


def folders_of_kind(root: str | Path, kind: str) -> list[Path]:
    """Result folders under ``root`` whose tables are of one kind."""
    out = []
    for f in result_folders(root):
        df = read_results(f)
        if len(df) and result_kind(df) == kind:
            out.append(f)
    return out


def mean_se(df: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    """Mean, standard error and mean +- s.e. band of ``value`` per group."""
    g = df.groupby(by, sort=True)[value]
    out = g.agg(mean="mean", se="sem", n="count").reset_index()
    out["se"] = out["se"].fillna(0.0)
    out["lo"] = out["mean"] - out["se"]
    out["hi"] = out["mean"] + out["se"]
    return out
