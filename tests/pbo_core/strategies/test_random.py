import numpy as np

from pbo_core.benchmarks import get_benchmark
from pbo_core.loop import run_pbo
from pbo_core.problem import Problem
from pbo_core.registry import get, make_strategy
from pbo_core.strategies import RandomSearchStrategy


def test_random_search_draws_new_points_and_recommends_by_copeland() -> None:
    assert get("random").family == "baseline"
    s = make_strategy("random")
    assert isinstance(s, RandomSearchStrategy)
    prob = Problem.from_benchmark(get_benchmark("dtlz2_8"))
    res = run_pbo(prob, s, n_init=6, n_iter=5, seed=1, init="pool_n6_k15", noise_sigma=0.1)
    assert len(res.X) == 6 + 2 * 5  # two new points per query
    b = prob.schema.bounds
    assert np.all((res.X >= b[:, 0]) & (res.X <= b[:, 1]))
    # the recommendation is a most-winning item (wins minus losses)
    score = np.zeros(len(res.X))
    np.add.at(score, res.pairs[:, 0], 1.0)
    np.add.at(score, res.pairs[:, 1], -1.0)
    assert score[res.recommendation[-1]] == score.max()
    # seeded through the loop's Generator: the same seed gives the same run
    again = run_pbo(
        prob,
        make_strategy("random"),
        n_init=6,
        n_iter=5,
        seed=1,
        init="pool_n6_k15",
        noise_sigma=0.1,
    )
    np.testing.assert_array_equal(res.X, again.X)
