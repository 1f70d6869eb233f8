"""Connected querying (``gp-connected``): one side of every query is the previous query point."""

import numpy as np

from pbo_core.benchmarks import get_benchmark
from pbo_core.explain.diagnostics import n_components
from pbo_core.loop import run_pbo
from pbo_core.problem import Problem
from pbo_core.registry import make_strategy

T = 6


def _run(name: str):
    prob = Problem.from_benchmark(get_benchmark("hartmann6"))
    return run_pbo(prob, make_strategy(name), n_init=4, n_iter=T, seed=3, init="pool_n6_k15")


def test_connected_queries_form_a_chain_from_the_last_design_item() -> None:
    res = _run("gp-connected")
    n0 = len(res.X) - T  # one new point per query
    q = [set(p) for p in res.pairs[-T:].tolist()]
    assert q == [{n0 - 1 + t, n0 + t} for t in range(T)]
    before = n_components(n0, res.pairs[:-T, 0], res.pairs[:-T, 1])
    after = n_components(len(res.X), res.pairs[:, 0], res.pairs[:, 1])
    assert after == before  # no query opened a new component


def test_plain_eubo_asks_two_new_points_and_adds_a_component_each_time() -> None:
    res = _run("gp")
    n0 = len(res.X) - 2 * T
    q = res.pairs[-T:]
    assert np.all(q >= n0)
    before = n_components(n0, res.pairs[:-T, 0], res.pairs[:-T, 1])
    after = n_components(len(res.X), res.pairs[:, 0], res.pairs[:, 1])
    assert after == before + T
