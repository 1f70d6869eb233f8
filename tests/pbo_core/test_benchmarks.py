"""Tests for pbo_core.benchmarks: formulas, optima, API contract and the ruggedness measure."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq, minimize, minimize_scalar

from pbo_core.benchmarks import (
    KAPPASHARP_FUNCTIONS,
    PAPER_FUNCTIONS,
    BenchmarkFunction,
    available_benchmarks,
    dtlz2_objectives,
    get_benchmark,
    ruggedness,
    utility_scale,
)

ALL_NAMES = available_benchmarks()

# Extra dimensions of the variable-dimension functions that get the full optimum check.
VARIABLE_DIM_CASES = [
    ("rosenbrock", 2),
    ("rosenbrock", 8),
    ("levy", 5),
    ("michalewicz", 2),
    ("michalewicz", 10),
    ("schwefel", 2),
    ("schwefel", 10),
    ("ackley", 2),
    ("dtlz2", 4),
    ("dtlz2", 12),
]
OPTIMUM_CASES = [(name, None) for name in ALL_NAMES] + VARIABLE_DIM_CASES


def _case_id(case: tuple[str, int | None]) -> str:
    name, dim = case
    return name if dim is None else f"{name}-{dim}d"


def _tol(value: float) -> float:
    return 1e-9 * max(1.0, abs(value))


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------


def test_paper_and_kappasharp_lists() -> None:
    assert PAPER_FUNCTIONS == (
        "rosenbrock",
        "hartmann6",
        "branin",
        "levy",
        "michalewicz",
        "schwefel",
        "holder",
        "dejong5",
    )
    assert KAPPASHARP_FUNCTIONS == (
        "levy10",
        "levy20",
        "ackley8",
        "hartmann6",
        "dtlz2_8",
        "dtlz2_16",
    )
    assert set(PAPER_FUNCTIONS) <= set(ALL_NAMES)
    assert set(KAPPASHARP_FUNCTIONS) <= set(ALL_NAMES)
    assert len(set(ALL_NAMES)) == len(ALL_NAMES)


def test_paper_dimensions_and_labels() -> None:
    dims = {name: get_benchmark(name).dim for name in PAPER_FUNCTIONS}
    assert dims == {
        "rosenbrock": 5,
        "hartmann6": 6,
        "branin": 2,
        "levy": 2,
        "michalewicz": 5,
        "schwefel": 5,
        "holder": 2,
        "dejong5": 2,
    }
    assert get_benchmark("branin").label == "Branin 2D"
    assert get_benchmark("dejong5").label == "De Jong N.5 2D"
    assert [get_benchmark(n).dim for n in KAPPASHARP_FUNCTIONS] == [10, 20, 8, 6, 8, 16]


def test_get_benchmark_is_case_insensitive() -> None:
    f = get_benchmark("BrAnIn")
    assert f.name == "branin"
    assert get_benchmark("  LEVY10 ").dim == 10


def test_unknown_name_lists_valid_names() -> None:
    with pytest.raises(KeyError) as info:
        get_benchmark("no_such_function")
    message = str(info.value)
    for name in ALL_NAMES:
        assert name in message


def test_dim_argument() -> None:
    assert get_benchmark("levy", dim=7).dim == 7
    assert get_benchmark("levy", dim=7).label == "Levy 7D"
    assert get_benchmark("rosenbrock", dim=3).bounds.shape == (3, 2)
    assert get_benchmark("branin", dim=2).dim == 2
    with pytest.raises(ValueError, match="fixed"):
        get_benchmark("branin", dim=3)
    with pytest.raises(ValueError, match="fixed"):
        get_benchmark("levy10", dim=20)
    with pytest.raises(ValueError):
        get_benchmark("rosenbrock", dim=1)
    with pytest.raises(ValueError):
        get_benchmark("dtlz2", dim=3)
    with pytest.raises(ValueError):
        get_benchmark("levy", dim=0)


def test_domains() -> None:
    def box(name: str, low: float, high: float, dim: int | None = None) -> None:
        f = get_benchmark(name, dim)
        np.testing.assert_array_equal(f.bounds[:, 0], low)
        np.testing.assert_array_equal(f.bounds[:, 1], high)

    box("rosenbrock", -5.0, 10.0)
    box("hartmann6", 0.0, 1.0)
    box("hartmann3", 0.0, 1.0)
    box("levy", -10.0, 10.0)
    box("levy20", -10.0, 10.0)
    box("michalewicz", 0.0, math.pi)
    box("schwefel", -500.0, 500.0)
    box("holder", -10.0, 10.0)
    box("dejong5", -65.536, 65.536)
    box("ackley", -32.768, 32.768)
    box("ackley8", -1.0, 1.0)  # KappaSharp App. G.1 domain
    box("dtlz2_16", 0.0, 1.0)
    np.testing.assert_array_equal(get_benchmark("branin").bounds, [[-5.0, 10.0], [0.0, 15.0]])


def test_frozen_and_read_only() -> None:
    f = get_benchmark("branin")
    with pytest.raises(AttributeError):
        f.dim = 3  # type: ignore[misc]
    with pytest.raises(ValueError):
        f.bounds[0, 0] = 0.0
    assert f.optimizer is not None
    with pytest.raises(ValueError):
        f.optimizer[0] = 0.0


def test_picklable() -> None:
    f = get_benchmark("michalewicz")
    g = pickle.loads(pickle.dumps(f))
    X = f.from_unit(np.random.default_rng(0).random((5, f.dim)))
    np.testing.assert_array_equal(f(X), g(X))
    assert g.optimum_value == f.optimum_value


def test_constructor_validates() -> None:
    with pytest.raises(ValueError, match="bounds"):
        BenchmarkFunction("x", "X", 2, np.zeros((3, 2)), 0.0, None, lambda X: X[:, 0])
    with pytest.raises(ValueError, match="optimizer"):
        BenchmarkFunction("x", "X", 1, [[0.0, 1.0]], 0.0, np.zeros(2), lambda X: X[:, 0])


# --------------------------------------------------------------------------------------------
# Optimum values
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", OPTIMUM_CASES, ids=_case_id)
def test_optimizer_attains_optimum(case: tuple[str, int | None]) -> None:
    f = get_benchmark(*case)
    assert f.optimizer is not None
    assert f.optimizer.shape == (f.dim,)
    assert np.all(f.optimizer >= f.bounds[:, 0])
    assert np.all(f.optimizer <= f.bounds[:, 1])
    value = f(f.optimizer)
    assert isinstance(value, float)
    assert value == pytest.approx(f.optimum_value, rel=1e-6, abs=1e-9)
    assert f.regret(f.optimizer) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("case", OPTIMUM_CASES, ids=_case_id)
def test_random_points_never_beat_optimum(case: tuple[str, int | None]) -> None:
    f = get_benchmark(*case)
    rng = np.random.default_rng(12345)
    y = f(f.from_unit(rng.random((200_000, f.dim))))
    assert y.shape == (200_000,)
    assert np.all(np.isfinite(y))
    assert y.max() <= f.optimum_value + 1e-9
    assert np.all(f.regret(f.from_unit(rng.random((1000, f.dim)))) >= 0.0)


def _polish_best_starts(
    f: BenchmarkFunction, n_random: int, n_starts: int, seed: int
) -> tuple[float, np.ndarray]:
    """Best value found by polishing the best random points with L-BFGS-B and Nelder-Mead."""
    rng = np.random.default_rng(seed)
    X = f.from_unit(rng.random((n_random, f.dim)))
    y = f(X)
    starts = X[np.argsort(y)[-n_starts:]]
    bounds = [tuple(b) for b in f.bounds]
    best_v, best_x = -np.inf, starts[-1]
    for x0 in starts:
        for method in ("L-BFGS-B", "Nelder-Mead"):
            res = minimize(lambda x: -f(x), x0, method=method, bounds=bounds)
            if -res.fun > best_v:
                best_v, best_x = float(-res.fun), res.x
    return best_v, best_x


# Functions whose optimum was computed numerically (not known in closed form).
NUMERIC_OPTIMA = [
    ("hartmann6", None),
    ("hartmann3", None),
    ("holder", None),
    ("dejong5", None),
    ("michalewicz", 2),
    ("michalewicz", None),
    ("schwefel", 2),
]


@pytest.mark.parametrize("case", NUMERIC_OPTIMA, ids=_case_id)
def test_numeric_optimum_not_beaten_by_polishing(case: tuple[str, int | None]) -> None:
    f = get_benchmark(*case)
    best, _ = _polish_best_starts(f, n_random=20_000, n_starts=8, seed=7)
    assert best <= f.optimum_value + _tol(f.optimum_value)
    # Polishing the recorded maximiser itself must not improve it either.
    res = minimize(
        lambda x: -f(x),
        f.optimizer,
        method="Nelder-Mead",
        bounds=[tuple(b) for b in f.bounds],
        options={"xatol": 1e-12, "fatol": 1e-15, "maxiter": 20_000},
    )
    assert -res.fun <= f.optimum_value + _tol(f.optimum_value)


@pytest.mark.parametrize("case", [("hartmann6", None), ("hartmann3", None), ("holder", None)])
def test_numeric_optimum_is_found_by_polishing(case: tuple[str, int | None]) -> None:
    """For the low-dimensional ones the random-start search also reaches the optimum."""
    f = get_benchmark(*case)
    best, _ = _polish_best_starts(f, n_random=20_000, n_starts=8, seed=3)
    assert best == pytest.approx(f.optimum_value, rel=1e-7)


def test_dejong_optimum_on_fine_grid() -> None:
    f = get_benchmark("dejong5")
    g = np.linspace(-65.536, 65.536, 801)
    G1, G2 = np.meshgrid(g, g)
    y = f(np.column_stack([G1.ravel(), G2.ravel()]))
    k = int(np.argmax(y))
    assert np.hypot(G1.ravel()[k] + 32.0, G2.ravel()[k] + 32.0) < 0.5
    res = minimize(
        lambda x: -f(x),
        [G1.ravel()[k], G2.ravel()[k]],
        method="Nelder-Mead",
        options={"xatol": 1e-12, "fatol": 1e-16},
    )
    assert -res.fun == pytest.approx(f.optimum_value, rel=1e-12)
    assert f.optimum_value == pytest.approx(-0.998003838, abs=1e-9)


def test_branin_optimum_is_analytic_and_has_three_maximisers() -> None:
    f = get_benchmark("branin")
    assert f.optimum_value == pytest.approx(-5.0 / (4.0 * math.pi), rel=1e-15)
    assert f.optimum_value == pytest.approx(-0.397887, abs=1e-6)
    X = np.array([[-math.pi, 12.275], [math.pi, 2.275], [3.0 * math.pi, 2.475]])
    np.testing.assert_allclose(f(X), f.optimum_value, rtol=1e-12)


def test_michalewicz_published_optima() -> None:
    # VLSE: 2D -1.8013, 5D -4.687658, 10D -9.66015 (minimisation form).
    assert get_benchmark("michalewicz", 2).optimum_value == pytest.approx(1.8013, abs=1e-4)
    assert get_benchmark("michalewicz", 5).optimum_value == pytest.approx(4.687658, abs=1e-6)
    assert get_benchmark("michalewicz", 10).optimum_value == pytest.approx(9.66015, abs=1e-5)
    np.testing.assert_allclose(get_benchmark("michalewicz", 2).optimizer, [2.20, 1.57], atol=5e-3)


def test_michalewicz_terms_match_dense_grid() -> None:
    """Each separable term's maximum agrees with an independent bounded search."""
    f = get_benchmark("michalewicz", 6)
    xs = np.linspace(0.0, math.pi, 400_001)
    total = 0.0
    for i in range(1, 7):
        vals = np.sin(xs) * np.sin(i * xs**2 / math.pi) ** 20
        k = int(np.argmax(vals))
        res = minimize_scalar(
            lambda x, i=i: -math.sin(x) * math.sin(i * x * x / math.pi) ** 20,
            bounds=(xs[k - 1], xs[k + 1]),
            method="bounded",
            options={"xatol": 1e-13},
        )
        total += -res.fun
    assert f.optimum_value == pytest.approx(total, rel=1e-12)


def test_schwefel_optimum() -> None:
    # Stationarity of x sin(sqrt x): sin(r) + (r / 2) cos(r) = 0 with r = sqrt(x).
    r = brentq(lambda r: math.sin(r) + 0.5 * r * math.cos(r), 20.0, 21.0, xtol=1e-15)
    term_max = r * r * math.sin(r)
    for d in (1, 5):
        f = get_benchmark("schwefel", d)
        np.testing.assert_allclose(f.optimizer, r * r, rtol=1e-13)
        assert f.optimum_value == pytest.approx(-d * (418.9829 - term_max), rel=1e-6)
        assert f.optimum_value == pytest.approx(-d * 1.2727566e-5, rel=1e-6)


def test_dtlz2_optimum_is_zero_and_on_pareto_front() -> None:
    for name in ("dtlz2_8", "dtlz2_16", "dtlz2_20"):
        f = get_benchmark(name)
        F = dtlz2_objectives(f.optimizer[None, :])
        np.testing.assert_allclose(F, 0.5, atol=1e-14)
        assert f.optimum_value == 0.0


# --------------------------------------------------------------------------------------------
# Shapes and coordinate maps
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_NAMES)
def test_vectorised_and_scalar_calls(name: str) -> None:
    f = get_benchmark(name)
    rng = np.random.default_rng(0)
    X = f.from_unit(rng.random((7, f.dim)))
    y = f(X)
    assert isinstance(y, np.ndarray)
    assert y.shape == (7,)
    assert y.dtype == np.float64
    single = f(X[3])
    assert isinstance(single, float)
    assert single == pytest.approx(y[3], rel=1e-14, abs=1e-14)
    np.testing.assert_array_equal(f.fn(X), y)
    assert f(X.tolist()).shape == (7,)
    r = f.regret(X)
    assert r.shape == (7,)
    np.testing.assert_allclose(r, f.optimum_value - y)
    assert isinstance(f.regret(X[0]), float)


@pytest.mark.parametrize("name", ["branin", "hartmann6", "levy20"])
def test_bad_shape_raises_naming_dimension(name: str) -> None:
    f = get_benchmark(name)
    bad_inputs = [
        np.zeros(f.dim + 1),
        np.zeros((4, f.dim - 1)),
        np.zeros((2, 3, f.dim)),
        np.float64(1.0),
    ]
    for bad in bad_inputs:
        with pytest.raises(ValueError, match=f"last dimension {f.dim}"):
            f(bad)
    with pytest.raises(ValueError, match=f"last dimension {f.dim}"):
        f.from_unit(np.zeros((2, f.dim + 1)))
    with pytest.raises(ValueError, match=f"last dimension {f.dim}"):
        f.regret(np.zeros(f.dim + 2))


@settings(max_examples=50, deadline=None)
@given(
    name=st.sampled_from(ALL_NAMES),
    u=st.lists(st.floats(0.0, 1.0), min_size=20, max_size=20),
)
def test_unit_maps_roundtrip(name: str, u: list[float]) -> None:
    f = get_benchmark(name)
    U = np.asarray(u[: f.dim])  # every registered default dim is <= 20
    X = f.from_unit(U)
    assert np.all(X >= f.bounds[:, 0] - 1e-12)
    assert np.all(X <= f.bounds[:, 1] + 1e-12)
    np.testing.assert_allclose(f.to_unit(X), U, atol=1e-12)


def test_unit_maps_corners() -> None:
    f = get_benchmark("branin")
    np.testing.assert_allclose(f.from_unit([[0.0, 0.0], [1.0, 1.0]]), [[-5.0, 0.0], [10.0, 15.0]])
    np.testing.assert_allclose(f.to_unit([2.5, 7.5]), [0.5, 0.5])


def test_regret_clipping() -> None:
    f = get_benchmark("schwefel")
    # The optimizer evaluates within float error of the optimum; never a negative regret.
    assert 0.0 <= f.regret(f.optimizer) < 1e-9
    # A value beating the recorded optimum by more than float error is NOT hidden.
    g = BenchmarkFunction("t", "T", 1, [[0.0, 1.0]], 0.5, None, lambda X: X[:, 0])
    assert g.regret([1.0]) == pytest.approx(-0.5)
    assert g.regret([0.5 + 1e-12]) == 0.0


# --------------------------------------------------------------------------------------------
# Golden values, checked against independent scalar implementations of the VLSE formulas
# --------------------------------------------------------------------------------------------


def _ref_rosenbrock(x: list[float]) -> float:
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (x[i] - 1) ** 2 for i in range(len(x) - 1))


def _ref_levy(x: list[float]) -> float:
    w = [1 + (xi - 1) / 4 for xi in x]
    s = math.sin(math.pi * w[0]) ** 2
    for wi in w[:-1]:
        s += (wi - 1) ** 2 * (1 + 10 * math.sin(math.pi * wi + 1) ** 2)
    return s + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)


def _ref_michalewicz(x: list[float]) -> float:
    return -sum(math.sin(xi) * math.sin((i + 1) * xi**2 / math.pi) ** 20 for i, xi in enumerate(x))


def _ref_schwefel(x: list[float]) -> float:
    return 418.9829 * len(x) - sum(xi * math.sin(math.sqrt(abs(xi))) for xi in x)


def _ref_holder(x: list[float]) -> float:
    r = math.sqrt(x[0] ** 2 + x[1] ** 2)
    return -abs(math.sin(x[0]) * math.cos(x[1]) * math.exp(abs(1 - r / math.pi)))


def _ref_dejong5(x: list[float]) -> float:
    grid = [-32, -16, 0, 16, 32]
    s = 0.002
    for i in range(25):
        a1, a2 = grid[i % 5], grid[i // 5]
        s += 1 / (i + 1 + (x[0] - a1) ** 6 + (x[1] - a2) ** 6)
    return 1 / s


def _ref_ackley(x: list[float]) -> float:
    d = len(x)
    s1 = sum(xi**2 for xi in x) / d
    s2 = sum(math.cos(2 * math.pi * xi) for xi in x) / d
    return -20 * math.exp(-0.2 * math.sqrt(s1)) - math.exp(s2) + 20 + math.e


def _ref_branin(x: list[float]) -> float:
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (x[1] - b * x[0] ** 2 + c * x[0] - 6) ** 2 + 10 * (1 - t) * math.cos(x[0]) + 10


def _ref_hartmann(x: list[float], A: list[list[float]], P: list[list[float]]) -> float:
    alpha = [1.0, 1.2, 3.0, 3.2]
    return -sum(
        alpha[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j] * 1e-4) ** 2 for j in range(len(x))))
        for i in range(4)
    )


H3_A = [[3, 10, 30], [0.1, 10, 35], [3, 10, 30], [0.1, 10, 35]]
H3_P = [[3689, 1170, 2673], [4699, 4387, 7470], [1091, 8732, 5547], [381, 5743, 8828]]
H6_A = [
    [10, 3, 17, 3.5, 1.7, 8],
    [0.05, 10, 17, 0.1, 8, 14],
    [3, 3.5, 1.7, 10, 17, 8],
    [17, 8, 0.05, 10, 0.1, 14],
]
H6_P = [
    [1312, 1696, 5569, 124, 8283, 5886],
    [2329, 4135, 8307, 3736, 1004, 9991],
    [2348, 1451, 3522, 2883, 3047, 6650],
    [4047, 8828, 8732, 5743, 1091, 381],
]


def _ref_dtlz2_utility(x: list[float]) -> float:
    m = 4
    g = sum((xi - 0.5) ** 2 for xi in x[m - 1 :])
    theta = [xi * math.pi / 2 for xi in x[: m - 1]]
    F = [
        (1 + g) * math.cos(theta[0]) * math.cos(theta[1]) * math.cos(theta[2]),
        (1 + g) * math.cos(theta[0]) * math.cos(theta[1]) * math.sin(theta[2]),
        (1 + g) * math.cos(theta[0]) * math.sin(theta[1]),
        (1 + g) * math.sin(theta[0]),
    ]
    return sum(abs(fj - 0.5) for fj in F)


REFERENCES = {
    "rosenbrock": _ref_rosenbrock,
    "hartmann6": lambda x: _ref_hartmann(x, H6_A, H6_P),
    "hartmann3": lambda x: _ref_hartmann(x, H3_A, H3_P),
    "branin": _ref_branin,
    "levy": _ref_levy,
    "levy10": _ref_levy,
    "levy20": _ref_levy,
    "michalewicz": _ref_michalewicz,
    "schwefel": _ref_schwefel,
    "holder": _ref_holder,
    "dejong5": _ref_dejong5,
    "ackley": _ref_ackley,
    "ackley8": _ref_ackley,
    "dtlz2": _ref_dtlz2_utility,
    "dtlz2_8": _ref_dtlz2_utility,
    "dtlz2_16": _ref_dtlz2_utility,
    "dtlz2_20": _ref_dtlz2_utility,
}


def test_every_benchmark_has_a_reference() -> None:
    assert set(REFERENCES) == set(ALL_NAMES)


@pytest.mark.parametrize("name", ALL_NAMES)
def test_matches_scalar_reference_is_negated_vlse(name: str) -> None:
    f = get_benchmark(name)
    rng = np.random.default_rng(99)
    X = f.from_unit(rng.random((25, f.dim)))
    expected = np.array([-REFERENCES[name](list(x)) for x in X])
    np.testing.assert_allclose(f(X), expected, rtol=1e-11, atol=1e-11)


def test_golden_values() -> None:
    cases: list[tuple[str, int | None, list[float], float]] = [
        # Branin: optimum and the origin, (0 - 6)^2 + 10 (1 - t) + 10 = 56 - 5 / (4 pi)
        ("branin", None, [math.pi, 2.275], -0.397887357729738),
        ("branin", None, [0.0, 0.0], -(56.0 - 5.0 / (4.0 * math.pi))),
        # Rosenbrock: zeros give d - 1; (1, 2) gives 100 (2 - 1)^2
        ("rosenbrock", 2, [0.0, 0.0], -1.0),
        ("rosenbrock", None, [0.0] * 5, -4.0),
        ("rosenbrock", 2, [1.0, 2.0], -100.0),
        ("rosenbrock", None, [1.0] * 5, 0.0),
        # Levy: zeros in 2D: w = 3/4, sin^2(3 pi/4) = 1/2, last term (1/16)(1 + 1) = 1/8
        (
            "levy",
            None,
            [0.0, 0.0],
            -(0.5 + (1 / 16) * (1 + 10 * math.sin(0.75 * math.pi + 1) ** 2) + 0.125),
        ),
        ("levy10", None, [1.0] * 10, 0.0),
        # Michalewicz: VLSE 2D minimiser (2.20, 1.57)
        ("michalewicz", 2, [2.20, 1.57], 1.8013),
        # ... and (pi/2, pi/2): sin(pi/4)^20 + sin(pi/2)^20 = 2^-10 + 1
        ("michalewicz", 2, [math.pi / 2, math.pi / 2], 1.0 + 2.0**-10),
        # Schwefel: zeros give 418.9829 d
        ("schwefel", None, [0.0] * 5, -418.9829 * 5),
        # Holder: zero at the origin, published minimiser
        ("holder", None, [0.0, 0.0], 0.0),
        ("holder", None, [8.05502, 9.66459], 19.2085),
        # Ackley: 0 at the origin; at (1, 1): cos(2 pi) = 1 so f = -20 e^-0.2 + 20
        ("ackley", 2, [0.0, 0.0], 0.0),
        ("ackley", 2, [1.0, 1.0], -(20.0 - 20.0 * math.exp(-0.2))),
        # Hartmann: published minimisers
        ("hartmann6", None, [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573], 3.32237),
        ("hartmann3", None, [0.114614, 0.555649, 0.852547], 3.86278),
        # DTLZ2, 8D: all 0.5 -> F = (2^-1.5, 2^-1.5, 1/2, 2^-0.5): L1 distance exactly 1/2;
        # all zeros -> g = 5/4, F = (9/4, 0, 0, 0): L1 distance 7/4 + 3/2
        ("dtlz2_8", None, [0.5] * 8, -0.5),
        ("dtlz2_8", None, [0.0] * 8, -3.25),
    ]
    for name, dim, x, expected in cases:
        f = get_benchmark(name, dim)
        # published maximisers are rounded to 3-6 digits
        rounded = (name, x[0]) in {
            ("michalewicz", 2.20),
            ("holder", 8.05502),
            ("hartmann6", 0.20169),
            ("hartmann3", 0.114614),
        }
        tol = 5e-4 if rounded else 1e-12
        assert f(x) == pytest.approx(expected, abs=tol), (name, x)


def test_dejong_golden_value_at_first_foxhole() -> None:
    f = get_benchmark("dejong5")
    # At (-32, -32) the first term is 1 / 1; the others are computed explicitly.
    grid = [-32, -16, 0, 16, 32]
    s = 0.002 + sum(
        1 / (i + 1 + (-32 - grid[i % 5]) ** 6 + (-32 - grid[i // 5]) ** 6) for i in range(25)
    )
    assert f([-32.0, -32.0]) == pytest.approx(-1 / s, rel=1e-14)
    assert f([-32.0, -32.0]) == pytest.approx(-0.99800, abs=1e-4)


# --------------------------------------------------------------------------------------------
# utility_scale and ruggedness
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAPER_FUNCTIONS)
def test_utility_scale_deterministic_and_positive(name: str) -> None:
    f = get_benchmark(name)
    a = utility_scale(f, seed=3)
    assert a > 0.0
    assert a == utility_scale(f, seed=3)
    b = utility_scale(f, seed=4)
    assert b != a
    assert b == pytest.approx(a, rel=0.1)


def test_utility_scale_matches_definition() -> None:
    f = get_benchmark("branin")
    rng = np.random.default_rng(5)
    X = f.from_unit(rng.random((500, 2)))
    Xp = f.from_unit(rng.random((500, 2)))
    expected = np.median(np.abs(f(X) - f(Xp)))
    assert utility_scale(f, n_pairs=500, seed=5) == expected
    with pytest.raises(ValueError):
        utility_scale(f, n_pairs=0)


def test_ruggedness_reproduces_table3_ordering() -> None:
    """DT-PBO Table 3: De Jong > Holder > Michalewicz > Levy > Schwefel > Branin >
    Rosenbrock > Hartmann by mean ruggedness (paper dimensions, fixed seed)."""
    expected_order = [
        "dejong5",
        "holder",
        "michalewicz",
        "levy",
        "schwefel",
        "branin",
        "rosenbrock",
        "hartmann6",
    ]
    scores = {name: ruggedness(get_benchmark(name), seed=0) for name in PAPER_FUNCTIONS}
    order = sorted(scores, key=lambda n: scores[n][0], reverse=True)
    assert order == expected_order
    for mean, p95 in scores.values():
        assert 0.0 < mean < p95
    # The three groups named in App. F.2 are well separated.
    assert scores["branin"][0] < 0.25 * scores["schwefel"][0]
    assert scores["levy"][0] < scores["michalewicz"][0]


def test_ruggedness_deterministic_and_validates() -> None:
    f = get_benchmark("branin")
    a = ruggedness(f, n_points=2000, seed=1)
    assert a == ruggedness(f, n_points=2000, seed=1)
    assert a != ruggedness(f, n_points=2000, seed=2)
    with pytest.raises(ValueError):
        ruggedness(f, step_sizes=())
    with pytest.raises(ValueError):
        ruggedness(f, step_sizes=(0.6,))


def test_ruggedness_of_quadratic_is_exact() -> None:
    """For g(u) = |u|^2 the directional second difference is exactly 2 / std everywhere."""
    f = BenchmarkFunction(
        "quad", "Quadratic 3D", 3, [[0.0, 1.0]] * 3, 0.0, None, lambda X: -np.sum(X**2, axis=1)
    )
    rng = np.random.default_rng(0)
    std = np.std(f.fn(rng.random((20_000, 3))))
    mean, p95 = ruggedness(f, n_points=500, seed=0)
    assert mean == pytest.approx(2.0 / std, rel=1e-6)
    assert p95 == pytest.approx(2.0 / std, rel=1e-6)
