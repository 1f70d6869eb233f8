"""Case-study inputs: study loading (through :mod:`data_loaders`), respondent task splits.

This and the other case-study modules sit in the apps layer (above :mod:`data_loaders`);
nothing below :mod:`pbo_core.experiments` imports them."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Literal

import numpy as np

from data_loaders.registry import load_study
from data_loaders.user_studies import ColumnMap, load_choice_file
from pbo_core.data import PreferenceData, Study
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.gp import GPSurrogate

#: Default test tasks per respondent for conjoint studies.
TEST_TASKS = {"bela": 2, "presidential": 3, "train": 2, "electricity": 2}


@lru_cache(maxsize=8)
def load_study_cached(key: str, data_dir: str | None = None) -> Study:
    """A registry study (``data_dir``: its folder or file when not bundled), once per process."""
    opts: dict[str, Any] = {}
    if data_dir:
        opts["data_dir" if key.startswith("sushi") else "path"] = data_dir
    return load_study(key, **opts)


@lru_cache(maxsize=4)
def load_study_file(
    path: str,
    fmt: Literal["long", "wide"],
    attributes: str,
    respondent: str = "respondent",
    task: str = "task",
    profile: str = "profile",
    chosen: str | None = None,
    alternatives: Sequence[str] = ("1", "2"),
) -> Study:
    """An analyst's own choice data (long or wide CSV + JSON attribute table), once per process.

    Parameters
    ----------
    path
        CSV file (``.gz`` allowed).
    fmt
        ``"long"`` (one row per respondent x task x profile, :func:`load_conjoint_long`) or
        ``"wide"`` (one row per task, :func:`load_conjoint_wide`).
    attributes
        JSON attribute table (:func:`data_loaders.conjoint.read_attribute_table`).
    respondent, task, profile, chosen
        Column names; ``chosen`` defaults to ``"chosen"`` (long: the 1/0 flag) or
        ``"choice"`` (wide: the chosen alternative). ``profile`` is used by the long format.
    alternatives
        Wide format: the alternatives' column suffixes.

    Raises
    ------
    DataValidationError
        For malformed data, naming the file and line (from the readers).
    """
    columns = ColumnMap(fmt, respondent, task, profile, chosen, tuple(alternatives))
    return load_choice_file(path, attributes, columns)


def fit_model(kind: str, data: PreferenceData, **kw: Any) -> Any:
    """Fit ``DTSurrogate`` (``kind="dt"``) or ``GPSurrogate`` (``"gp"``) with ``kw``."""
    if kind == "dt":
        return DTSurrogate(**kw).fit(data)
    if kind == "gp":
        return GPSurrogate(**kw).fit(data)
    raise KeyError(kind)


def train_test(
    data: PreferenceData, test_mask: np.ndarray
) -> tuple[PreferenceData, PreferenceData]:
    """Train pairs (items they use) and test pairs (all items) of one respondent."""
    train = data.select_pairs(~test_mask, drop_unused_items=False)
    test = data.select_pairs(test_mask, drop_unused_items=False)
    return train, test


def respondent_split(
    study: Study, respondent: Any, n_test_tasks: int, seed: int
) -> tuple[PreferenceData, np.ndarray] | None:
    """One respondent's data and test mask: ``n_test_tasks`` of their tasks held out.

    The tasks are drawn with ``np.random.default_rng([seed, index])`` (``index``: the
    respondent's position in ``study.respondents()``); ``None`` when the respondent has
    no more tasks than that.
    """
    data = study.for_respondent(respondent)
    mask_r = study.data.respondent == respondent
    task = study.extras.get("pair_task")
    tasks = np.asarray(task)[mask_r] if task is not None else np.arange(data.n_pairs)
    uniq = np.unique(tasks)
    if len(uniq) <= n_test_tasks:
        return None
    idx = int(np.flatnonzero(study.respondents() == respondent)[0])
    rng = np.random.default_rng([seed, idx])
    test_tasks = rng.choice(uniq, size=n_test_tasks, replace=False)
    return data, np.isin(tasks, test_tasks)
