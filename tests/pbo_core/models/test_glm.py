"""The penalised comparison GLM module: links, batched Newton, padding, CV strengths."""

from __future__ import annotations

import os
import threading
import warnings

import numpy as np
import pytest
from scipy.special import log_ndtr

from pbo_core.models import glm
from pbo_core.models.glm import (
    GLMConvergenceWarning,
    alpha_grid,
    item_map,
    link_terms,
    newton_batch,
    newton_chunked,
    pad_respondents,
    pad_rows,
    resolve_strength,
    respondent_rows,
)
from pbo_core.models.probit import mills_ratio, probit_curvature


def _problems(seed: int = 0, B: int = 4, n: int = 30, p: int = 3):
    rng = np.random.default_rng(seed)
    beta = rng.normal(size=(B, p))
    D = rng.normal(size=(B, n, p))
    z = np.einsum("bnp,bp->bn", D, beta) + rng.normal(size=(B, n))
    D = np.where((z > 0)[:, :, None], D, -D)  # rows oriented winner - loser
    return D, np.ones((B, n)), np.full((B, p), 0.5), np.zeros((B, p))


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_link_derivatives_match_finite_differences(link: str) -> None:
    z = np.linspace(-30, 30, 121)
    nll, g, h = link_terms(z, link)
    eps = 1e-6
    up, down = link_terms(z + eps, link)[0], link_terms(z - eps, link)[0]
    np.testing.assert_allclose(g, (up - down) / (2 * eps), rtol=1e-5, atol=1e-7)
    gu, gd = link_terms(z + eps, link)[1], link_terms(z - eps, link)[1]
    np.testing.assert_allclose(h, (gu - gd) / (2 * eps), rtol=1e-4, atol=1e-7)
    assert np.all(np.isfinite(nll)) and np.all((h >= 0) & (h <= 1))


def test_probit_terms_are_the_probit_module_s() -> None:
    z = np.linspace(-40, 40, 81)
    nll, g, h = link_terms(z, "probit")
    np.testing.assert_array_equal(nll, -log_ndtr(z))
    np.testing.assert_array_equal(-g, mills_ratio(z))
    np.testing.assert_array_equal(h, probit_curvature(z))
    with pytest.raises(ValueError, match="link"):
        link_terms(z, "cauchit")


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_newton_batch_reaches_the_stationary_point(link: str) -> None:
    D, w, prec, mean = _problems()
    with warnings.catch_warnings():
        warnings.simplefilter("error", GLMConvergenceWarning)
        beta, H, ok = newton_batch(D, w, prec, mean, link, return_converged=True)
    assert ok.all()
    z = np.einsum("bnp,bp->bn", D, beta)
    _, g1, h1 = link_terms(z, link)
    grad = np.einsum("bnp,bn->bp", D, w * g1) + prec * (beta - mean)
    np.testing.assert_allclose(grad, 0.0, atol=1e-8)
    H_ref = np.einsum("bnp,bn,bnq->bpq", D, w * h1, D) + prec[:, :, None] * np.eye(D.shape[2])
    np.testing.assert_allclose(H, H_ref, rtol=1e-10)


def test_unconverged_problems_are_flagged_and_warned() -> None:
    D, w, prec, mean = _problems(B=3)
    D[1] = np.abs(D[1])  # problem 1 separable: with no prior its MLE is at infinity
    prec[1] = 0.0
    with pytest.warns(GLMConvergenceWarning, match="1 of 3"):
        _, _, ok = newton_batch(D, w, prec, mean, "logit", max_iter=20, return_converged=True)
    assert ok.tolist() == [True, False, True]


def test_newton_chunked_equals_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    D, w, prec, mean = _problems(B=7)
    whole = newton_batch(D, w, prec, mean, "probit")
    monkeypatch.setattr(glm, "BATCH_CELLS", D.shape[1] * D.shape[2] * 2)  # 2 per chunk
    assert len(glm.chunks(7, D.shape[1] * D.shape[2])) == 4
    parts = newton_chunked(D, w, prec, mean, "probit")
    np.testing.assert_allclose(parts[0], whole[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(parts[1], whole[1], rtol=1e-12, atol=1e-14)


def test_item_map_equals_the_dense_newton_and_warns_when_cut_short() -> None:
    rng = np.random.default_rng(3)
    m, n = 6, 80
    pairs = np.array([rng.choice(m, 2, replace=False) for _ in range(n)])
    u, H = item_map(pairs[:, 0], pairs[:, 1], np.ones(n), m, 0.3, "logit")
    D = np.zeros((1, n, m))
    D[0, np.arange(n), pairs[:, 0]] = 1.0
    D[0, np.arange(n), pairs[:, 1]] = -1.0
    ref, H_ref = newton_batch(D, np.ones((1, n)), np.full((1, m), 0.3), np.zeros((1, m)), "logit")
    np.testing.assert_allclose(u, ref[0], atol=1e-8)
    np.testing.assert_allclose(H, H_ref[0], atol=1e-8)
    with pytest.warns(GLMConvergenceWarning, match="item-utility"):
        item_map(pairs[:, 0], pairs[:, 1], np.ones(n), m, 1e-6, "logit", max_iter=1)


def test_resolve_strength() -> None:
    grid = alpha_grid([0.1, 10.0, 1.0])
    assert grid.tolist() == [10.0, 1.0, 0.1]  # strongest first
    never = lambda: pytest.fail("CV must not run")  # noqa: E731
    assert resolve_strength(2.5, grid, 5, never) == (2.5, None)
    assert resolve_strength(0, grid, 5, never) == (0.0, None)
    assert resolve_strength("cv", grid, 1, never) == (1.0, None)  # one fold: the middle
    alpha, loss = resolve_strength("cv", grid, 5, lambda: np.array([3.0, 1.0, 1.0]))
    assert alpha == 1.0 and loss.tolist() == [3.0, 1.0, 1.0]  # tie -> the stronger
    per_resp = np.array([[0.0, 2.0, 5.0], [9.0, 2.0, 0.0]])  # sums 9, 4, 5
    assert resolve_strength("cv", grid, 5, lambda: per_resp)[0] == 1.0
    with pytest.raises(ValueError, match="alpha must be a number or 'cv', got 'auto'"):
        resolve_strength("auto", grid, 5, never)
    with pytest.raises(ValueError, match=r"alpha must be >= 0, got -1\.0"):
        resolve_strength(-1, grid, 5, never)
    with pytest.raises(ValueError, match=r"tau must be > 0 for items, got 0\.0"):
        resolve_strength(0, grid, 5, never, name="tau", positive=True, what=" for items")
    with pytest.raises(ValueError, match="alphas"):
        alpha_grid([1.0, -1.0])


def test_padding_keeps_every_row_and_marks_the_rest() -> None:
    resp = np.array([7, 3, 7, 7, 3, 9])
    ids, rows = respondent_rows(resp)
    assert ids.tolist() == [7, 3, 9]  # order of first appearance
    assert [r.tolist() for r in rows] == [[0, 2, 3], [1, 4], [5]]
    d = np.arange(12.0).reshape(6, 2)
    D, mask, idx = pad_rows(d, rows)
    assert D.shape == (3, 3, 2) and mask.sum() == 6
    np.testing.assert_array_equal(D[mask], d[idx[mask]])
    assert (D[~mask] == 0).all() and (idx[~mask] == -1).all()
    P = pad_respondents(d, resp, np.array([0, 1, 2, 0, 1, 2]))
    assert P.folds.tolist() == [[0, 2, 0], [1, 1, -1], [2, -1, -1]]


def test_run_split_covers_every_problem_once_on_the_threads_allowed(monkeypatch):
    from pbo_core.models.glm import kernel_threads, run_split

    monkeypatch.setenv("DTPBO_THREADS", "3")
    assert kernel_threads() == min(3, len(os.sched_getaffinity(0)))
    seen = np.zeros(101, dtype=int)
    names = set()

    def kernel(sl):
        seen[sl] += 1
        names.add(threading.current_thread().name)

    run_split(kernel, 101, min_per_thread=8)
    assert (seen == 1).all()
    assert len(names) == kernel_threads()
    seen[:] = 0
    names.clear()
    run_split(kernel, 10, min_per_thread=8)  # too few problems: one slice, this thread
    assert (seen[:10] == 1).all() and not seen[10:].any()
    assert names == {threading.current_thread().name}
    monkeypatch.setenv("DTPBO_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert kernel_threads() == 1
