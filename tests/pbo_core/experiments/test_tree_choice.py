"""The held-out comparison that picks the Tree explorer's default tree."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from data_loaders.registry import load_study
from pbo_core.data import PreferenceData
from pbo_core.experiments import tree_choice
from pbo_core.registry import get

TREES = ["dt", "dt-pooled"]
BASELINES = ("logit-shrink", "logit-pooled")


@pytest.fixture(scope="module")
def train():
    return load_study("train")


def test_compare_trees_scores_trees_and_baselines_and_picks_the_best_tree(train) -> None:
    choice = tree_choice.compare_trees(train, TREES, BASELINES, n_respondents=6)
    t = choice.table
    assert list(t["key"]) == ["dt", "dt-pooled", "logit-shrink", "logit-pooled"]
    assert list(t["method"]) == [get(k).label for k in t["key"]]
    assert choice.n_respondents == 6
    keep = train.respondents()[:6]
    assert choice.n_comparisons == int(np.isin(train.data.respondent, keep).sum())
    trees = t[t["key"].isin(TREES)]
    assert choice.best == trees.loc[trees["heldout"].idxmax(), "key"]
    assert ((t["ci_low"] <= t["heldout"]) & (t["heldout"] <= t["ci_high"])).all()
    best = t.set_index("key").loc[choice.best]
    reason = choice.reason()
    assert get(choice.best).label in reason and f"{100 * best['heldout']:.1f}%" in reason
    assert "6 respondents'" in reason and "5-fold cross-validation" in reason


def test_a_pooled_study_drops_baselines_of_respondents_own_utilities(train) -> None:
    d = train.data  # the same comparisons without respondents
    pooled = dataclasses.replace(
        train, data=PreferenceData(d.X, d.pairs[:400], schema=d.schema), extras={}
    )
    choice = tree_choice.compare_trees(pooled, TREES, BASELINES, n_respondents=6)
    assert "logit-shrink" not in set(choice.table["key"])
    assert get("logit-shrink").respondent_predict
    assert "logit-pooled" in set(choice.table["key"]) and choice.n_respondents == 0
    assert "pooled data" in choice.split


def test_choose_and_fit_returns_the_winners_fit_and_pickles(train) -> None:
    choice, model = tree_choice.choose_and_fit(train, TREES, BASELINES, n_respondents=6)
    if choice.best == "dt":
        assert model is None
    else:
        assert model.predict(train.data.X[:3]).shape == (3,)
    # what crosses to and from the dashboard's worker process
    again = pickle.loads(pickle.dumps((train, TREES, BASELINES, choice, model)))
    assert again[3].best == choice.best
    assert tree_choice.ready() is True


def test_serve_answers_calls_and_errors_until_the_other_end_closes() -> None:
    import threading
    from multiprocessing import Pipe

    ours, theirs = Pipe()
    t = threading.Thread(target=tree_choice.serve, args=(theirs, 0), daemon=True)
    t.start()
    ours.send((divmod, (7, 2)))
    assert ours.recv() == (True, (3, 1))
    ours.send((int, ("not a number",)))
    ok, exc = ours.recv()
    assert not ok and isinstance(exc, ValueError)
    ours.close()
    t.join(5)
    assert not t.is_alive()


_ORPHAN = """
import multiprocessing, os, sys, time
from pbo_core.experiments import tree_choice

if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    ours, theirs = ctx.Pipe()
    p = ctx.Process(target=tree_choice.serve, args=(theirs, 0))
    p.start()
    ours.send((os.getpid, ()))
    assert ours.recv() == (True, p.pid)  # the worker serves
    ours.send((time.sleep, (120,)))  # a long call in progress
    print(p.pid, flush=True)
    time.sleep(1.0)
    os._exit(0)  # the server ends without stopping its worker
"""


def test_a_worker_whose_server_is_gone_ends_within_a_second(tmp_path) -> None:
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    script = tmp_path / "orphan.py"
    script.write_text(_ORPHAN)
    env = dict(os.environ, PYTHONPATH=str(root))
    with (tmp_path / "out").open("w") as out:  # not a pipe: the worker would hold it open
        subprocess.run([sys.executable, str(script)], stdout=out, env=env, timeout=300)
    pid = int((tmp_path / "out").read_text().split()[0])
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail("the orphaned worker was still running 5 s after its server ended")
