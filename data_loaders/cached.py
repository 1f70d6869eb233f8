"""Studies loaded once per process: the loaders the case-study command lines bind.

:func:`load_study_cached` (a registry key) and :func:`load_study_file` (an analyst's own
choice file) keep an LRU cache per process, so the cells of one grid -- every worker of
:func:`pbo_core.experiments.runner.run_grid` runs many -- parse a study once. The
case-study modules of :mod:`pbo_core.experiments` take them as arguments
(:class:`pbo_core.experiments.studies.LoadStudy`,
:class:`~pbo_core.experiments.studies.LoadStudyFile`); their command line
(:mod:`pbo_core.experiments.cli`) and the dashboard bind them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from data_loaders.plans import plan_stamp
from data_loaders.registry import load_study
from data_loaders.user_studies import ColumnMap, load_choice_file
from pbo_core.data import Study

__all__ = ["load_study_cached", "load_study_file"]


def load_study_cached(key: str, data_dir: str | None = None) -> Study:
    """A registry study (``data_dir``: its folder or file when not bundled), once per
    process and saved plan (:func:`data_loaders.plans.plan_stamp`: an edited plan is read
    on the next call)."""
    return _load_cached(key, data_dir, plan_stamp(key))


def _clear() -> None:
    _load_cached.cache_clear()


load_study_cached.cache_clear = _clear  # type: ignore[attr-defined]


@lru_cache(maxsize=8)
def _load_cached(key: str, data_dir: str | None, stamp: tuple[int, int]) -> Study:
    del stamp  # cache key only
    opts: dict[str, Any] = {}
    if data_dir:
        opts["data_dir" if key.startswith("sushi") else "path"] = data_dir
    return load_study(key, **opts)


@lru_cache(maxsize=4)
def load_study_file(path: str, attributes: str | None, columns: str) -> Study:
    """An analyst's own choice data (long or wide CSV), once per process.

    Parameters
    ----------
    path
        CSV file (``.gz`` allowed).
    attributes
        JSON attribute table (:func:`data_loaders.conjoint.read_attribute_table`), or
        ``None`` to infer it from the columns.
    columns
        The layout and column names, :meth:`data_loaders.user_studies.ColumnMap.to_json`.

    Raises
    ------
    DataValidationError
        For malformed data, naming the file and line (from the readers).
    """
    return load_choice_file(path, attributes, ColumnMap.from_json(columns))
