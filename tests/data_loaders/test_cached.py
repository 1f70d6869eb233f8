"""``data_loaders.cached``: studies loaded once per process, as the CLIs bind them."""

from __future__ import annotations

import pickle

from data_loaders.cached import load_study_cached, load_study_file
from data_loaders.registry import load_study


def test_a_registry_study_is_loaded_once_per_process() -> None:
    first = load_study_cached("train")
    assert load_study_cached("train") is first
    assert first.key == "train" and first.data.n_pairs == load_study("train").data.n_pairs


def test_the_loaders_pickle_by_reference_for_joblib_workers() -> None:
    for fn in (load_study_cached, load_study_file):
        assert pickle.loads(pickle.dumps(fn)) is fn
