"""Every PBO method of the registry and the pieces strategies share (pbo_core.strategies)."""

from __future__ import annotations

import numpy as np
import pytest

from pbo_core.benchmarks import get_benchmark
from pbo_core.data import Feature, PreferenceData, Schema
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy, names
from pbo_core.strategies import LoopState, Strategy
from pbo_core.strategies.base import pick_item_pair, random_query
from pbo_core.strategies.dt import DTStrategy, RandomStrategy
from pbo_core.strategies.gp import GPStrategy


@pytest.mark.parametrize("name", [m for m in names(pbo=True) if not m.startswith("botorch")])
def test_every_method_is_a_fresh_strategy_with_what_the_loop_reads(name: str) -> None:
    a, b = make_strategy(name), make_strategy(name)
    assert a is not b
    assert isinstance(a, Strategy)
    assert a.name == name
    assert a.ties in ("latest-winner", "first")
    assert a.n_leaves == 0 or isinstance(a.n_leaves, int)


def test_unknown_method_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"known models: .*'dt'"):
        make_strategy("dt-nonsense")


def test_sushi_methods_are_registered_with_their_rules() -> None:
    assert set(names(role="sushi_pbo")) <= set(names(pbo=True))
    top = make_strategy("dt-toponly")
    assert isinstance(top, DTStrategy) and top.within == "top-leaf" and top.within_every == 1
    notop = make_strategy("dt-notop")
    assert notop.within == "none" and notop.ties == "latest-winner"
    assert make_strategy("dt-literal").ties == "first"  # the literal rule's plain argmax
    assert isinstance(make_strategy("dt-random"), RandomStrategy)
    assert isinstance(make_strategy("gp"), GPStrategy)


def test_pick_item_pair_prefers_unasked_pairs_and_never_pairs_an_item_with_itself() -> None:
    rng = np.random.default_rng(0)
    asked = {(0, 1), (0, 2)}
    for _ in range(50):
        i, j = pick_item_pair(np.arange(3), np.arange(3), asked, rng)
        assert i != j and (min(i, j), max(i, j)) == (1, 2)
    assert pick_item_pair(np.array([4]), np.array([4]), set(), rng) is None


def test_random_query_stays_in_the_box_and_rounds_integer_columns() -> None:
    f = get_benchmark("branin")
    prob = Problem.from_benchmark(f)
    X = f.from_unit(np.random.default_rng(1).random((4, 2)))
    data = PreferenceData(X, np.array([[0, 1], [2, 3]]), schema=prob.schema)
    state = LoopState(prob, data, 0, np.full(4, -1), 0, set())
    rng = np.random.default_rng(2)
    for _ in range(20):
        a, b = random_query(state, rng)
        for x in (a, b):
            assert np.all(x >= f.bounds[:, 0]) and np.all(x <= f.bounds[:, 1])
    levels = tuple(str(k) for k in range(5))
    schema = Schema(
        (Feature("n", "ordinal", levels=levels), Feature("x", "numeric", bounds=(0, 1)))
    )
    iprob = Problem(name="int", schema=schema, utility=lambda Z: Z.sum(1), optimum_value=5.0)
    empty = PreferenceData(np.zeros((0, 2)), np.zeros((0, 2), int), schema=schema)
    istate = LoopState(iprob, empty, 0, np.zeros(0, int), 0, set())
    for _ in range(10):
        a, b = random_query(istate, rng)
        assert a[0] == round(a[0]) and b[0] == round(b[0])


def test_lambda_struct_gain_holds_the_leaf_split_fixed() -> None:
    from pbo_core.acquisition.leaves import fixed_split_gain, structural_gain

    Xw, Xl = np.array([[0.8], [0.7]]), np.array([[0.2], [0.3]])  # s*: x >= t, t in (0.3, 0.7)
    meta = (np.array([False]), np.array([0]), np.array([1.0]))
    # both candidates right of s*: Z = 0 for either outcome, score 1 -> 2/3 each way
    assert fixed_split_gain(Xw, Xl, np.array([0.6]), np.array([0.65]), *meta) == pytest.approx(
        1 / 3
    )
    # re-optimising finds t = 0.625 (score 1) for one outcome: expected change only 1/6
    assert structural_gain(Xw, Xl, np.array([0.6]), np.array([0.65]), *meta) == pytest.approx(1 / 6)
    # a straddling candidate: |2 + 1| / 3 = 1 (no change) or |2 - 1| / 3 (change 2/3)
    assert fixed_split_gain(Xw, Xl, np.array([0.9]), np.array([0.1]), *meta) == pytest.approx(1 / 3)
    # no split in an empty leaf: the re-optimised gain (a new pair alone scores 1)
    empty = np.zeros((0, 1))
    assert fixed_split_gain(empty, empty, np.array([0.9]), np.array([0.1]), *meta) == 1.0
    assert make_strategy("dt-lambda").lambda_split == "fixed"
    assert make_strategy("dt-lambda-reopt").lambda_split == "reopt"


def test_method_options_reach_the_models() -> None:
    assert make_strategy("dt", ratio=1.0, max_depth=3).model.max_depth == 3
    gp = make_strategy("gp-ks-adaptive", tau=0.25, alpha=0.2, eubo="paper")
    assert (gp.model.kappasharp_tau, gp.model.kappasharp_alpha) == (0.25, 0.2)
    assert (gp.n_raw, gp.n_restarts) == (32, 4)
    with pytest.raises(TypeError):
        make_strategy("gp", ratio=1.0)
