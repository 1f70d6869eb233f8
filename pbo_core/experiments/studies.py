"""Case-study inputs: study loading (through :mod:`data_loaders`), respondent task splits.

This and the other case-study modules sit in the apps layer (above :mod:`data_loaders`);
nothing below :mod:`pbo_core.experiments` imports them."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from data_loaders.registry import load_study
from pbo_core.data import PreferenceData, Study
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.gp import GPSurrogate

#: Default test tasks per respondent for conjoint studies.


TEST_TASKS = {"bela": 2, "presidential": 3, "train": 2, "electricity": 2}


@lru_cache(maxsize=8)
def load_study_cached(key: str, data_dir: str | None = None) -> Study:
    opts: dict[str, Any] = {}
    if data_dir:
        opts["data_dir" if key.startswith("sushi") else "path"] = data_dir
    return load_study(key, **opts)


def fit_model(kind: str, data: PreferenceData, **kw: Any) -> Any:
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


def respondent_split(study: Study, respondent: Any, n_test_tasks: int, seed: int):
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
