"""Results folders written by the benchmark and experiment commands.

A results folder named on the page is a path on the server: it is read only below the
allowed data roots (:mod:`data_loaders.access`, every Parquet file checked before it is
opened, symlinks resolved), searched to a bounded number of entries
(:data:`MAX_WALK_ENTRIES`), and written (benchmark runs) only below the data folder
(:func:`output_folder`).
"""

from __future__ import annotations

import logging
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
from data_loaders import access

__all__ = ["DEFAULT_GRIDS", "DefaultGrid", "results_home"]

_LOG = logging.getLogger(__name__)

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


def grid_job(
    kind: str,
    cells: list[dict[str, Any]],
    fn: Callable[[dict[str, Any]], pd.DataFrame],
    out_dir: str | Path,
    title: str,
    *,
    again: bool = False,
    steps: int | None = None,
    estimate: float = 10.0,
) -> jobs.Job:
    """A job running the missing cells of a result grid a page asked for into ``out_dir``
    (one Parquet file each, finished cells skipped; the job returns the folder), with a
    progress bar.

    Parameters
    ----------
    kind
        What the grid is (``"bench-run"``, ``"sushi-pbo"``): with the cells and the folder,
        the job's key.
    cells, fn
        The grid and the function computing one cell (both pickle: the job runs in a
        worker process).
    out_dir
        Where the cells are written.
    title
        What the progress bar says.
    again
        A finished job of the same key is forgotten first (a new click of the page's
        button: the cells on disk are looked at again).
    steps
        The steps of one run, for a ``fn`` that reports them (a benchmark run: its
        queries plus the initial design): the bar moves within a run too
        (:func:`dashboard._work.grid`).
    estimate
        Expected seconds, for the time left before the first run ends.

    Returns
    -------
    Job
    """
    key = jobs.job_key(kind, cells, str(out_dir))
    service = jobs.service()
    done = service.get(key)
    if again and done is not None and done.done:
        service.forget(key)
    return service.submit(
        key,
        title,
        _work.grid,
        cells,
        fn,
        str(out_dir),
        "runs",
        estimate=estimate,
        cached=False,
        steps=steps,
    )


#: Most folder entries a search of a results folder looks at (a folder such as a whole
#: home folder is not walked to its end).
MAX_WALK_ENTRIES = 20_000
#: What the page calls a results folder in messages.
RESULTS_WHAT = "results folder"


def results_refusal(root: str | Path) -> str | None:
    """Why a typed results folder may not be read (outside the allowed roots, hidden, not
    a folder...), or ``None``; decided with ``stat`` only."""
    with access.confined():
        return access.refusal(root, folder=True, what=RESULTS_WHAT)


def output_refusal(folder: str | Path) -> str | None:
    """Why results may not be written to ``folder`` (it is not below the data folder),
    or ``None``."""
    try:
        access.check_output(folder, folder=True, what="output folder")
    except access.PathRefusedError as exc:
        return str(exc)
    return None


def output_folder(root: str | Path, name: str) -> Path:
    """Where a run from the page writes: ``root/name`` when ``root`` lies below the data
    folder, else the per-user results folder's ``name``."""
    out = Path(root).expanduser() / name
    return out if output_refusal(out) is None else results_home() / name


def _allowed(f: Path) -> bool:
    with access.confined():
        try:
            access.check_file(f, "results file")
        except OSError:
            return False
    return True


def _cell_files(folder: Path) -> list[Path]:
    return [f for f in sorted(folder.glob("cell-*.parquet")) if _allowed(f)]


def result_folders(root: str | Path) -> list[Path]:
    """Folders under ``root`` (and ``root`` itself) holding per-cell Parquet results
    (none when ``root`` is refused, :func:`results_refusal`); hidden folders and symlinked
    folders are not entered, and the search stops after :data:`MAX_WALK_ENTRIES`."""
    base = Path(root).expanduser()
    if results_refusal(base) is not None or not base.is_dir():
        return []
    found: set[Path] = set()
    seen = 0
    for here, dirs, files in os.walk(base, followlinks=False):
        seen += len(dirs) + len(files)
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if any(f.startswith("cell-") and f.endswith(".parquet") for f in files):
            if _cell_files(Path(here)):
                found.add(Path(here))
        if seen > MAX_WALK_ENTRIES:
            break
    return sorted(found)


def _folder_stamp(folder: Path) -> tuple[tuple[str, int], ...]:
    return tuple((p.name, p.stat().st_mtime_ns) for p in _cell_files(folder))


@st.cache_data(show_spinner="Reading results...", max_entries=32)
def _read_results(folder: str, stamp: Any) -> tuple[pd.DataFrame, tuple[str, ...]]:
    frames, skipped = [], []
    for f in _cell_files(Path(folder)):
        try:
            frames.append(pd.read_parquet(f))
        except Exception:  # a corrupt or truncated cell: skipped, named on the page
            _LOG.warning("results file %s cannot be read: skipped", f, exc_info=True)
            skipped.append(f.name)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return frame, tuple(skipped)


def _read(folder: str | Path) -> tuple[pd.DataFrame, tuple[str, ...]]:
    f = Path(folder)
    if results_refusal(f) is not None:
        return pd.DataFrame(), ()
    return _read_results(str(f.resolve()), _folder_stamp(f))


def read_results(folder: str | Path) -> pd.DataFrame:
    """All finished cells of a results folder (cached until a file changes); only files
    the allowed data roots admit are read, and a file that cannot be read (corrupt,
    truncated) is skipped (:func:`unreadable_results` names it)."""
    return _read(folder)[0]


def unreadable_results(folder: str | Path) -> list[str]:
    """The cell files of a results folder that could not be read (names only)."""
    return list(_read(folder)[1])


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
