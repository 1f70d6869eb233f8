"""The BoTorch reference method: 0.6 priors, the KappaSharp hook and logged fit failures.

Skipped unless the ``bench`` extra (torch + botorch) is installed (CI installs it).
"""

import logging
import os

import numpy as np
import pytest

# CI sets DTPBO_REQUIRE_BENCH=1 (.ci/run installs the bench extra): there a missing
# torch/botorch is an error, not a skip
if os.environ.get("DTPBO_REQUIRE_BENCH") == "1":
    import botorch  # noqa: F401
    import torch
else:
    torch = pytest.importorskip("torch")
    pytest.importorskip("botorch")

from pbo_core.data import PreferenceData, Schema
from pbo_core.models.gp.kappasharp import condition_number, correction
from pbo_core.registry import make_strategy
from pbo_core.strategies.botorch import BotorchStrategy


def _data(seed: int = 0, n: int = 16, m: int = 14, d: int = 3) -> PreferenceData:
    """Mostly disjoint pairs (EUBO-like, many components) with a few repeats."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    u = np.sin(3 * X[:, 0]) + X[:, 1] - X[:, 2]
    pairs = [[2 * i, 2 * i + 1] for i in range(n // 2)]
    pairs += [list(rng.choice(n, 2, replace=False)) for _ in range(m - n // 2)]
    pairs = np.array([[a, b] if u[a] > u[b] else [b, a] for a, b in pairs])
    return PreferenceData(X, pairs, schema=Schema.numeric(np.tile([0.0, 1.0], (d, 1))))


def test_06_priors_are_botorch_06_defaults() -> None:
    s = BotorchStrategy(priors="0.6")
    s.fit(_data())
    kern = s.model.covar_module
    ls_prior = kern.base_kernel.lengthscale_prior
    assert float(ls_prior.concentration) == pytest.approx(1.2)
    assert float(ls_prior.rate) == pytest.approx(0.5)
    box = kern.outputscale_prior
    assert (float(box.a), float(box.b)) == (1.0, 4.0)
    cur = BotorchStrategy(priors="current")
    cur.fit(_data())
    cur_prior = cur.model.covar_module.base_kernel.lengthscale_prior
    assert float(cur_prior.concentration) == pytest.approx(2.4)
    with pytest.raises(ValueError, match="priors"):
        BotorchStrategy(priors="0.5")


def test_kappasharp_hook_re_solves_the_map_with_r_and_keeps_map_only_covariance() -> None:
    data = _data()
    plain = BotorchStrategy(priors="0.6")
    ks = BotorchStrategy(priors="0.6", kappasharp="static")
    ks._activation.min_step = 1  # active at the first fit
    plain.fit(data)
    ks.fit(data)
    rec = ks.kappasharp_history_[-1]
    assert rec["active"] and rec["eta"] is not None
    assert rec["kappa_after"] <= rec["kappa_before"] ** 0.9 * (1 + 1e-9)
    m = ks.model
    A = m.covar_inv.detach().numpy()
    # the same fit (seeded) gives the same prior precision as the plain model
    np.testing.assert_allclose(A, plain.model.covar_inv.detach().numpy(), rtol=1e-6, atol=1e-8)
    R = correction(np.diag(A), rec["eta"])
    f = m.utility.detach().numpy()
    f0 = plain.model.utility.detach().numpy()
    assert np.linalg.norm(f) < np.linalg.norm(f0)  # R shrinks the MAP
    with torch.no_grad():
        dp = m.transform_inputs(m.datapoints)
        g = m._grad_posterior_f(f, dp, m.D, m.covar_chol, m.covar_inv, True)
    np.testing.assert_allclose(g + R * f, 0.0, atol=1e-5)  # stationary for J_0 + f'Rf/2
    # MAP-only covariance: (K^-1 + W(f_R))^-1 without R
    W = m.likelihood.negative_log_hessian_sum(utility=torch.tensor(f), D=m.D).numpy()
    with torch.no_grad():
        cov = m.posterior(torch.tensor(data.X)).covariance_matrix.numpy()
    np.testing.assert_allclose(cov, np.linalg.inv(A + W), rtol=2e-3, atol=2e-4)
    assert condition_number(A + W + np.diag(R)) < condition_number(A + W)


def test_adaptive_stays_off_before_its_step_and_trace_reaches_the_bench() -> None:
    s = make_strategy("botorch-gp-ks-adaptive", priors="0.6")
    s.fit(_data())
    (rec,) = s.activation_trace()
    assert rec["step"] == 1 and not rec["active"] and 0.0 <= rec["decisiveness"] <= 1.0


def test_fit_failures_are_logged_with_the_reason(monkeypatch) -> None:
    import botorch.fit

    def boom(mll, **kw):
        raise RuntimeError("synthetic failure")

    class Collect(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.messages: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.messages.append(record.getMessage())

    monkeypatch.setattr(botorch.fit, "fit_gpytorch_mll", boom)
    log = logging.getLogger("pbo_core.strategies.botorch")
    seen = Collect()
    log.addHandler(seen)
    try:
        s = BotorchStrategy()
        s.fit(_data())
    finally:
        log.removeHandler(seen)
    assert s.fit_failures_ == [{"n_pairs": 14, "reason": "RuntimeError: synthetic failure"}]
    assert any("synthetic failure" in m and "14 comparisons" in m for m in seen.messages)
    assert np.all(np.isfinite(s.predict(_data().X)))


def test_bench_passes_botorch_priors_and_records_fit_failures(capsys) -> None:
    import json

    from pbo_core.experiments import bench

    args = ["--functions", "hartmann6", "--methods", "botorch-gp-ks-static,gp", "--init"]
    args += ["pool_n6_k15", "--seeds", "1", "--iters", "1", "--botorch-priors", "0.6"]
    assert bench.main([*args, "--json", "-", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["method"]: r for r in out["summary"]}
    assert rows["botorch-gp-ks-static"]["botorch_priors"] == "0.6"
    assert rows["gp"].get("botorch_priors") in (None, "none")  # not a gp option
    cell = {"function": "hartmann6", "method": "botorch-gp", "seed": 0, "iters": 1}
    df = bench.run_cell({**cell, "n_init": 3, "botorch_priors": "0.6"})
    assert (df["botorch_priors"] == "0.6").all() and "fit_failures" in df
    with pytest.raises(SystemExit, match="botorch methods"):
        bench.main(["--functions", "branin", "--methods", "gp", "--botorch-priors", "0.6"])
