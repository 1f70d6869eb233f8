"""Case-study inputs: how studies are loaded (typed callables).

The case-study modules (:mod:`~pbo_core.experiments.sushi`,
:mod:`~pbo_core.experiments.accuracy`, :mod:`~pbo_core.experiments.cohorts`,
:mod:`~pbo_core.experiments.rho_regret`, :mod:`~pbo_core.experiments.report`, ...) do not
import :mod:`data_loaders` (a higher layer): their cells and functions take a
:class:`LoadStudy` (and, for an analyst's own file, a :class:`LoadStudyFile`). The
command line :mod:`pbo_core.experiments.cli` and the dashboard bind
:func:`data_loaders.cached.load_study_cached` and
:func:`data_loaders.cached.load_study_file` (cached per process); a grid passes its
cell function to :func:`~pbo_core.experiments.runner.run_grid` as a
:func:`functools.partial` of the module-level function, which pickles for joblib
workers. The loaders are never part of a cell (cells are hashed for resume).

Nothing below :mod:`pbo_core.experiments` imports these modules.
"""

from __future__ import annotations

from typing import Protocol

from pbo_core.data import Study


class LoadStudy(Protocol):
    """Loads a registry study by key, e.g. :func:`data_loaders.cached.load_study_cached`.

    ``load_study(key, data_dir=None) -> Study``: ``key`` is a registry key (``"train"``,
    ``"sushi-a"``, ``"swissmetro"``, ``"pmr-demo"``, ...); ``data_dir`` is the study's
    folder or file when it is not bundled. Implementations should cache per process
    (many cells load the same study) and must be picklable (module-level functions are)
    when a grid runs on joblib workers.
    """

    def __call__(self, key: str, data_dir: str | None = None) -> Study: ...


class LoadStudyFile(Protocol):
    """Loads an analyst's own choice file, e.g. :func:`data_loaders.cached.load_study_file`.

    ``load_study_file(path, attributes, columns) -> Study``: ``path`` a long or wide CSV,
    ``attributes`` its JSON attribute table (``None``: inferred from the columns) and
    ``columns`` the layout and column names as JSON text
    (:meth:`data_loaders.user_studies.ColumnMap.to_json`; text, so a grid cell holding it
    stays hashable). Cached per process and picklable, as :class:`LoadStudy`.
    """

    def __call__(self, path: str, attributes: str | None, columns: str) -> Study: ...
