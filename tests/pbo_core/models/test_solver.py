"""The one Newton solver and every model that goes through it: convergence, flags, warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import optimize
from scipy.special import expit, log_ndtr

from pbo_core.data import PreferenceData, Schema
from pbo_core.models.dt import DTSurrogate
from pbo_core.models.glm import GLMConvergenceWarning, item_map, newton_batch, spd_inv_batch
from pbo_core.models.gp.kappasharp import metric_only_map
from pbo_core.models.gp.laplace import laplace_map, rbf_kernel
from pbo_core.models.leaves import laplace_fit
from pbo_core.models.solver import (
    ConvergenceWarning,
    NewtonStep,
    newton_minimize,
    newton_minimize_batch,
    newton_probit_items,
    newton_probit_pairs,
)


# ----------------------------------------------------------------------------- problems
def logreg(seed: int, n: int = 80, p: int = 5, lam: float = 0.5):
    """Ridge logistic regression: ``J``, gradient and Hessian (strictly convex)."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, p))
    y = np.sign(A @ rng.normal(size=p) + rng.normal(size=n))

    def J(x: np.ndarray) -> float:
        return float(np.logaddexp(0.0, -y * (A @ x)).sum() + 0.5 * lam * x @ x)

    def grad(x: np.ndarray) -> np.ndarray:
        return -(A.T @ (y * expit(-y * (A @ x)))) + lam * x

    def hess(x: np.ndarray) -> np.ndarray:
        z = A @ x
        return (A.T * (expit(z) * expit(-z))) @ A + lam * np.eye(p)

    return J, grad, hess


def newton_of(grad, hess):
    def newton(x: np.ndarray, _: object) -> NewtonStep:
        g = grad(x)
        s = np.linalg.solve(hess(x), g)
        return NewtonStep(s, float(g @ s), size=float(np.max(np.abs(s))), info=hess(x))

    return newton


def scipy_min(J, grad, hess, p: int) -> np.ndarray:
    res = optimize.minimize(
        J, np.zeros(p), jac=grad, hess=hess, method="trust-exact", options={"gtol": 1e-12}
    )
    assert res.success
    return res.x


def pairs_problem(seed: int, m: int = 12, n: int = 80, flips: int = 8):
    """Leaf comparisons along a hidden utility, some flipped."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=m) * 3
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m  # no self-pairs (PreferenceData refuses them)
    w, lo = np.where(u[a] > u[b], a, b), np.where(u[a] > u[b], b, a)
    w[:flips], lo[:flips] = lo[:flips].copy(), w[:flips].copy()
    return w, lo


def gp_problem(seed: int, n: int = 14, m: int = 30):
    rng = np.random.default_rng(seed)
    Z = rng.random((n, 2))
    u = Z @ np.array([3.0, -2.0])
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    w, lo = np.where(u[a] > u[b], a, b), np.where(u[a] > u[b], b, a)
    C = np.zeros((m, n))
    C[np.arange(m), w] = 1.0
    C[np.arange(m), lo] = -1.0
    return rbf_kernel(Z, Z, np.array([0.4, 0.4]), 2.0), C, np.ones(m)


def assert_sym_psd(S: np.ndarray) -> None:
    assert np.all(np.isfinite(S))
    np.testing.assert_array_equal(S, S.T)
    assert np.linalg.eigvalsh(S).min() >= -1e-10 * max(1.0, np.abs(S).max())


def warned_here(record: pytest.WarningsRecorder) -> None:
    """The warning names the caller of the model function (this file), not the solver."""
    assert record[0].filename == __file__


# ----------------------------------------------------------------------------- the solver
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_newton_minimize_reaches_scipy_s_minimiser(seed) -> None:
    J, grad, hess = logreg(seed)
    ref = scipy_min(J, grad, hess, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = newton_minimize(lambda x: (J(x), None), newton_of(grad, hess), np.zeros(5))
    assert res.converged  # by the decrement, or stalled at rounding level just above it
    np.testing.assert_allclose(res.x, ref, atol=1e-8)
    np.testing.assert_allclose(grad(res.x), 0.0, atol=1e-7)
    assert res.value == pytest.approx(J(res.x))
    np.testing.assert_array_equal(res.step.info, hess(res.x))  # the Hessian at the result
    assert 1 <= res.n_iter < 15  # quadratic convergence


@pytest.mark.parametrize(
    ("stop", "accept", "slack"),
    [("decrement", "nonincrease", 0.0), ("step", "nonincrease", 1e-13), ("taken", "armijo", 0.0)],
)
def test_every_stopping_rule_and_line_search_reach_the_same_minimiser(stop, accept, slack) -> None:
    J, grad, hess = logreg(3)
    ref = scipy_min(J, grad, hess, 5)
    res = newton_minimize(
        lambda x: (J(x), None),
        newton_of(grad, hess),
        np.full(5, 3.0),
        tol=1e-10,
        stop=stop,
        accept=accept,
        slack=slack,
    )
    assert res.converged
    np.testing.assert_allclose(res.x, ref, atol=1e-7)


def test_a_quadratic_takes_one_newton_step() -> None:
    Q = np.array([[3.0, 1.0], [1.0, 2.0]])
    b = np.array([1.0, -4.0])

    def value(x):
        return float(0.5 * x @ Q @ x - b @ x), None

    def newton(x, _):
        g = Q @ x - b
        s = np.linalg.solve(Q, g)
        return NewtonStep(s, float(g @ s))

    res = newton_minimize(value, newton, np.array([10.0, -7.0]))
    np.testing.assert_allclose(res.x, np.linalg.solve(Q, b), atol=1e-12)
    assert res.n_iter == 1 and res.converged


@pytest.mark.parametrize("stop", ["decrement", "step", "taken"])
def test_max_iter_too_small_is_flagged_and_warned(stop) -> None:
    J, grad, hess = logreg(0, lam=1e-3)
    with pytest.warns(ConvergenceWarning, match="1 of 1 toy fits did not converge in 2") as rec:
        res = newton_minimize(
            lambda x: (J(x), None),
            newton_of(grad, hess),
            np.full(5, 10.0),
            max_iter=2,
            stop=stop,
            what="toy",
            stacklevel=1,
        )
    warned_here(rec)
    assert not res.converged and res.n_iter == 2
    assert np.linalg.norm(grad(res.x)) > 1e-3


def test_no_representable_decrease_counts_as_converged() -> None:
    J, grad, hess = logreg(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = newton_minimize(lambda x: (J(x), None), newton_of(grad, hess), np.zeros(5), tol=0.0)
    assert res.stalled and res.converged
    np.testing.assert_allclose(grad(res.x), 0.0, atol=1e-6)


def test_a_nan_objective_is_not_converged() -> None:
    with pytest.warns(ConvergenceWarning):
        res = newton_minimize(
            lambda x: (float("nan"), None), lambda x, _: NewtonStep(x, float("nan")), np.ones(2)
        )
    assert res.stalled and not res.converged
    np.testing.assert_array_equal(res.x, np.ones(2))


def test_unknown_rules_are_refused() -> None:
    with pytest.raises(ValueError, match="stop"):
        newton_minimize(lambda x: (0.0, None), None, 0.0, stop="gradient")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="accept"):
        newton_minimize(lambda x: (0.0, None), None, 0.0, accept="wolfe")  # type: ignore[arg-type]


def test_batch_matches_scipy_and_flags_only_the_capped_problems() -> None:
    problems = [logreg(s, lam=lam) for s, lam in ((0, 0.5), (1, 1e-4), (2, 2.0))]

    def newton(idx, X):
        obj, steps, decs = [], [], []
        for i, x in zip(idx, X, strict=True):
            J, grad, hess = problems[i]
            g = grad(x)
            s = np.linalg.solve(hess(x), g)
            obj.append(J(x))
            steps.append(s)
            decs.append(g @ s)
        return np.array(obj), np.array(steps), np.array(decs)

    def objective(idx, X):
        return np.array([problems[i][0](x) for i, x in zip(idx, X, strict=True)])

    x0 = np.full((3, 5), 4.0)
    res = newton_minimize_batch(newton, objective, x0)
    assert res.converged.all()
    for i, (J, grad, hess) in enumerate(problems):
        np.testing.assert_allclose(res.x[i], scipy_min(J, grad, hess, 5), atol=1e-6)
    with pytest.warns(ConvergenceWarning, match="1 of 3 toy fits") as rec:
        capped = newton_minimize_batch(
            newton, objective, x0, max_iter=res.n_iter[[0, 2]].max(), what="toy", stacklevel=1
        )
    warned_here(rec)
    assert capped.converged.tolist() == [True, False, True]
    np.testing.assert_array_equal(capped.x[[0, 2]], res.x[[0, 2]])


def item_problems(seed: int = 0, B: int = 5, N: int = 7, p: int = 9, n: int = 12):
    """``B`` penalised probit GLMs in item space (Eq. 6 of the solver), the last
    comparisons of every problem but the first padded with weight 0."""
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(B, N, p))
    ab = np.stack([np.stack([rng.choice(N, 2, replace=False) for _ in range(n)]) for _ in range(B)])
    truth = rng.normal(size=(B, p))
    f = (F @ truth[:, :, None])[:, :, 0]
    fw = np.take_along_axis(f, ab[:, :, 0], axis=1)
    fl = np.take_along_axis(f, ab[:, :, 1], axis=1)
    flip = fw + rng.normal(size=fw.shape) < fl
    wi = np.where(flip, ab[:, :, 1], ab[:, :, 0]).astype(np.int64)
    li = np.where(flip, ab[:, :, 0], ab[:, :, 1]).astype(np.int64)
    w = rng.integers(1, 3, size=(B, n)).astype(float)
    w[1:, n - 3 :] = 0.0
    prec = rng.uniform(0.2, 2.0, size=(B, p))
    mean = rng.normal(scale=0.3, size=(B, p))
    return F, wi, li, w, prec, mean


def item_callbacks(F, wi, li, w, prec, mean):
    """The plain NumPy objective and Newton step (``p x p`` Hessian) of the problems."""

    def parts(idx, X):
        D = (
            np.take_along_axis(F[idx], wi[idx][:, :, None], axis=1)
            - np.take_along_axis(F[idx], li[idx][:, :, None], axis=1)
        ) / np.sqrt(2.0)
        z = (D @ X[:, :, None])[:, :, 0]
        dev = X - mean[idx]
        return D, z, dev

    def objective(idx, X):
        _, z, dev = parts(idx, X)
        return -(w[idx] * log_ndtr(z)).sum(axis=1) + 0.5 * (prec[idx] * dev * dev).sum(axis=1)

    def newton(idx, X):
        D, z, dev = parts(idx, X)
        r = np.exp(-0.5 * z * z - 0.5 * np.log(2.0 * np.pi) - log_ndtr(z))
        grad = -(np.swapaxes(D, 1, 2) @ (w[idx] * r)[:, :, None])[:, :, 0] + prec[idx] * dev
        H = np.swapaxes(D, 1, 2) @ (D * (w[idx] * r * (z + r))[:, :, None])
        H[:, np.arange(X.shape[1]), np.arange(X.shape[1])] += prec[idx]
        step = np.linalg.solve(H, grad[:, :, None])[:, :, 0]
        return objective(idx, X), step, (grad * step).sum(axis=1)

    return newton, objective


def test_compiled_item_batch_finds_the_map_of_the_python_batch() -> None:
    """Golden: the compiled item-space batch (:func:`newton_probit_items`, the linear-leaf
    tree's loop) and :func:`newton_minimize_batch` on plain NumPy callbacks give the same
    MAP and flags; a split over slices changes no bit."""
    F, wi, li, w, prec, mean = item_problems()
    newton, objective = item_callbacks(F, wi, li, w, prec, mean)
    x0 = np.zeros_like(mean)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        ref = newton_minimize_batch(newton, objective, x0)
        got = newton_probit_items(F, wi, li, w, prec, mean, x0)
    assert ref.converged.all() and got.converged.all()
    # the same steps; near the MAP J changes below its rounding (|J| eps), where the two
    # sums of J may stop one step apart: the MAPs agree to ~sqrt(eps)
    np.testing.assert_allclose(got.x, ref.x, rtol=0, atol=1e-7)
    assert (np.abs(got.n_iter - ref.n_iter) <= 1).all()
    assert (newton(np.arange(len(x0)), got.x)[2] < 1e-15).all()  # the decrement at the MAP

    def split(part, B):
        for a in range(0, B, 2):
            part(slice(a, min(a + 2, B)))

    np.testing.assert_array_equal(
        newton_probit_items(F, wi, li, w, prec, mean, x0, split=split).x, got.x
    )


def test_compiled_item_batch_flags_and_warns_the_capped_problems() -> None:
    F, wi, li, w, prec, mean = item_problems(seed=1)
    x0 = np.full_like(mean, 3.0)
    full = newton_probit_items(F, wi, li, w, prec, mean, x0)
    cap = int(full.n_iter.min())
    newton, objective = item_callbacks(F, wi, li, w, prec, mean)
    with pytest.warns(ConvergenceWarning, match="toy fits") as rec:
        got = newton_probit_items(
            F, wi, li, w, prec, mean, x0, max_iter=cap, what="toy", stacklevel=1
        )
    warned_here(rec)
    ref = newton_minimize_batch(newton, objective, x0, max_iter=cap, warn=False)
    np.testing.assert_array_equal(got.converged, ref.converged)
    assert not got.converged.all() and (got.n_iter <= cap).all()
    np.testing.assert_allclose(got.x, ref.x, rtol=0, atol=1e-7)


# ----------------------------------------------------------------------------- the models
def test_the_old_glm_warning_is_the_solver_s() -> None:
    assert GLMConvergenceWarning is ConvergenceWarning


def test_glm_batch_flags_and_warns_when_max_iter_is_too_small() -> None:
    rng = np.random.default_rng(0)
    D = rng.normal(size=(4, 40, 3)) * 4
    w, prec, mean = np.ones((4, 40)), np.full((4, 3), 1e-3), np.zeros((4, 3))
    for hessian in (True, False):
        with pytest.warns(ConvergenceWarning, match="4 of 4 penalised probit GLM") as rec:
            _, _, ok = newton_batch(
                D, w, prec, mean, "probit", max_iter=1, return_converged=True, hessian=hessian
            )
        warned_here(rec)
        assert not ok.any()
    beta, H, ok = newton_batch(D, w, prec, mean, "probit", return_converged=True)
    assert ok.all() and np.all(np.isfinite(beta))
    for S in spd_inv_batch(H):
        assert_sym_psd(S)


def test_item_map_warns_when_max_iter_is_too_small() -> None:
    w, lo = pairs_problem(0)
    with pytest.warns(ConvergenceWarning, match="logit item-utility") as rec:
        item_map(w, lo, np.ones(len(w)), 12, 1e-3, "logit", max_iter=1)
    warned_here(rec)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        u, H = item_map(w, lo, np.ones(len(w)), 12, 1e-3, "logit")
    assert np.all(np.isfinite(u))
    assert_sym_psd(spd_inv_batch(H[None])[0])


@pytest.mark.parametrize("compiled", [True, False])
def test_leaf_fit_flags_and_warns_on_both_paths(compiled) -> None:
    w, lo = pairs_problem(1)
    with pytest.warns(ConvergenceWarning, match="leaf-utility fits did not converge in 1") as rec:
        res = laplace_fit(w, lo, 12, ratio=1e-3, max_iter=1, compiled=compiled)
    warned_here(rec)
    assert not res.converged and res.n_iter == 1
    assert_sym_psd(res.cov)  # the covariance at the last iterate is still usable
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = laplace_fit(w, lo, 12, ratio=1e-3, compiled=compiled)
    assert res.converged and res.n_iter > 1
    assert_sym_psd(res.cov)
    assert_sym_psd(res.cov_c)


def test_compiled_and_python_leaf_paths_agree_on_the_flag_and_the_count() -> None:
    w, lo = pairs_problem(2)
    for max_iter in (0, 1, 2, 3, 100):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            a = laplace_fit(w, lo, 12, ratio=1e-3, max_iter=max_iter, compiled=True)
            b = laplace_fit(w, lo, 12, ratio=1e-3, max_iter=max_iter, compiled=False)
        assert (a.converged, a.n_iter) == (b.converged, b.n_iter)
        np.testing.assert_allclose(a.map, b.map, rtol=1e-12, atol=1e-12)


def test_compiled_kernel_reports_its_flag() -> None:
    w, lo = pairs_problem(3)
    args = (w.astype(np.int64), lo.astype(np.int64), np.ones(len(w)), np.full(12, 1e-3))
    with pytest.warns(ConvergenceWarning):
        capped = newton_probit_pairs(*args, np.zeros(12), np.zeros(12), max_iter=1)
    assert capped is not None and not capped.converged
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = newton_probit_pairs(*args, np.zeros(12), np.zeros(12))
    assert res is not None and res.converged
    np.testing.assert_allclose(res.grad, 0.0, atol=1e-6)
    assert_sym_psd(res.cov)


@pytest.mark.parametrize("compiled", [True, False])
def test_extreme_comparisons_give_no_nan(compiled) -> None:
    # a long chain repeated 10^6 times (MAP far out) and a contradiction between 0 and 1
    w = np.r_[np.arange(9), 0, 1]
    lo = np.r_[np.arange(1, 10), 1, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for ratio in (1e-8, 0.25):
            res = laplace_fit(
                np.repeat(w, 10**5), np.repeat(lo, 10**5), 10, ratio, compiled=compiled
            )
            for a in (res.map, res.cov, res.mean_c, res.cov_c):
                assert np.all(np.isfinite(a))
            assert_sym_psd(res.cov_c)
        D = np.random.default_rng(0).normal(size=(2, 20, 3)) * 1e3
        beta, H = newton_batch(
            D, np.ones((2, 20)), np.full((2, 3), 1e-8), np.zeros((2, 3)), "probit"
        )
        assert np.all(np.isfinite(beta)) and np.all(np.isfinite(H))
        K, C, _ = gp_problem(0)
        st = laplace_map(K, C, np.full(len(C), 1e6))
        assert np.all(np.isfinite(st.f)) and np.isfinite(st.log_evidence)


def test_gp_map_flags_and_warns_when_max_iter_is_too_small() -> None:
    K, C, counts = gp_problem(1)
    with pytest.warns(ConvergenceWarning, match="GP-probit MAP") as rec:
        st = laplace_map(K, C, counts, max_iter=1)
    warned_here(rec)
    assert not st.converged and st.n_iter == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        st = laplace_map(K, C, counts)
    assert st.converged
    np.testing.assert_allclose(st.alpha, st.grad_loglik, atol=1e-7)  # stationary


def test_metric_only_map_flags_and_warns_when_max_iter_is_too_small() -> None:
    K, C, counts = gp_problem(2)
    K_inv = np.linalg.inv(K + 1e-6 * np.eye(len(K)))
    R = np.full(len(K), 0.5)
    with pytest.warns(ConvergenceWarning, match="MetricOnly GP MAP") as rec:
        _, n_iter, ok = metric_only_map(K_inv, C, counts, R, max_iter=2)
    warned_here(rec)
    assert not ok and n_iter == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        f, n_iter, ok = metric_only_map(K_inv, C, counts, R)
    assert ok and n_iter > 2
    plain = laplace_map(K + 1e-6 * np.eye(len(K)), C, counts)
    # the same minimiser by another path (its stopping rule is on the last, damped step)
    np.testing.assert_allclose(f, plain.f, atol=1e-4)


def test_a_fitted_tree_exposes_the_flag() -> None:
    X = np.random.default_rng(0).uniform(size=(30, 2))
    a, b = np.arange(0, 30, 2), np.arange(1, 30, 2)
    pairs = np.where((X[a, 0] > X[b, 0])[:, None], np.c_[a, b], np.c_[b, a])
    data = PreferenceData(X=X, pairs=pairs, schema=Schema.numeric(np.tile([0.0, 1.0], (2, 1))))
    model = DTSurrogate().fit(data)
    assert model.laplace_.converged and model.laplace_.n_iter >= 1
