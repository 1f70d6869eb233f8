"""Folds and hold-outs (pbo_core.splits): tasks and groups stay whole."""

from __future__ import annotations

import numpy as np
import pytest

from pbo_core.data import PreferenceData
from pbo_core.splits import group_folds, holdout_groups, holdout_tasks, pair_tasks, task_folds


def test_task_folds_keep_tasks_whole_within_respondents():
    tasks = np.repeat(np.arange(20), 3)
    resp = np.repeat([0, 1], 30)
    f = task_folds(5, np.random.default_rng(0), tasks, resp)
    for t in range(20):
        assert len(set(f[tasks == t])) == 1
    for r in (0, 1):
        assert sorted(np.bincount(f[resp == r], minlength=5)) == [6] * 5


def test_task_folds_golden():
    """The fold assignment the models' inner CV has always used (results depend on it)."""
    tasks, resp = np.array([1, 1, 2, 3, 1, 2]), np.array([0] * 3 + [1] * 3)
    f = task_folds(3, np.random.default_rng(0), tasks, resp)
    assert f.tolist() == [0, 0, 1, 0, 1, 2]
    assert len(set(f[:2])) == 1  # respondent 0's task 1 whole


def test_group_folds_keep_groups_whole_and_balanced():
    groups = np.repeat(np.arange(10), [1, 2, 3, 1, 2, 3, 1, 2, 3, 1])
    f = group_folds(4, np.random.default_rng(1), groups)
    for g in range(10):
        assert len(set(f[groups == g])) == 1
    per_fold = np.bincount([f[groups == g][0] for g in range(10)], minlength=4)
    assert per_fold.max() - per_fold.min() <= 1


def test_holdout_tasks_by_count_and_fraction():
    tasks = np.repeat(np.arange(5), 2)
    m = holdout_tasks(tasks, np.random.default_rng(0), n_test=2)
    assert m is not None and len(set(tasks[m])) == 2 and not set(tasks[m]) & set(tasks[~m])
    assert holdout_tasks(tasks, np.random.default_rng(0), n_test=5) is None
    assert holdout_tasks(np.zeros(4), np.random.default_rng(0), fraction=0.5) is None
    m = holdout_tasks(tasks, np.random.default_rng(0), fraction=0.2)
    assert len(set(tasks[m])) == 1
    with pytest.raises(ValueError, match="fraction"):
        holdout_tasks(tasks, np.random.default_rng(0), fraction=1.0)


def test_holdout_groups_never_all():
    g = np.array(["a", "a", "b", "c"])
    held, mask = holdout_groups(g, np.random.default_rng(0), 0.99)
    assert len(held) == 2 and 0 < mask.sum() < len(g)
    with pytest.raises(ValueError, match="two groups"):
        holdout_groups(np.array([1, 1]), np.random.default_rng(0), 0.5)


def test_pair_tasks_and_task_keys():
    X = np.eye(3)
    pairs = np.array([[0, 1], [0, 2], [1, 2], [2, 0]])
    d = PreferenceData(X, pairs, respondent=np.array([1, 1, 2, 2]), task=np.array([7, 7, 7, 8]))
    assert pair_tasks(d).tolist() == [7, 7, 7, 8]
    assert d.task_keys().tolist() == [0, 0, 1, 2]  # task 7 of respondents 1 and 2 differ
    assert d.n_tasks() == 3
    sub = d.select_pairs(np.array([False, True, True, True]))
    assert sub.task.tolist() == [7, 7, 8] and sub.respondent.tolist() == [1, 2, 2]
    assert pair_tasks(PreferenceData(X, pairs)).tolist() == [0, 1, 2, 3]
