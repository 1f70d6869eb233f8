"""One PBO run on BoTorch 0.6.3's own stack, for ``botorch063_fidelity.py``.

Run by ``docs/scripts/botorch063_fidelity.py`` with the Python of the separate BoTorch 0.6.3
environment it builds (never the project's)::

    FIDELITY_ENV/bin/python docs/scripts/botorch063_worker.py JOB.json

``JOB.json`` holds the function, the method (``plain`` or ``static``), the seed, ``T``,
``sigma``, the repository root and the initial design (points, pairs and their utilities,
made by the project's :func:`pbo_core.loop.initial_design` with ``run_pbo``'s streams).
The worker prints one JSON line: the run's final best utility, its best utility per step,
and one record per hyperparameter fit (outcome, failed tries, NotPSD tries, lengthscales,
outputscale, and for ``static`` the KappaSharp record of that fit).

The loop is ``pbo_core.loop.run_pbo``'s with ``pbo_core.strategies.botorch``'s
``BotorchStrategy`` ported to BoTorch 0.6.3's API:

* the same random streams: ``SeedSequence(seed).spawn(3)`` (design, oracle, strategy); the
  oracle draws one uniform per comparison and prefers ``a`` when it is below
  ``Phi((u_a - u_b) / (sqrt 2 sigma))`` (KappaSharp Eq. 1-2); before every fit numpy's and
  torch's global generators are seeded with ``seed_t + 7919 n_pairs``, ``seed_t`` drawn
  from the strategy stream at the previous proposal (0 before the first);
* ``PairwiseGP(X, comparisons, input_transform=Normalize(d, bounds))`` with 0.6.3's own
  default kernel (lengthscale ``Gamma(1.2, 0.5)`` from its mode 0.4, outputscale
  ``SmoothedBox(1, 4)``), refitted from scratch at every step with 0.6.3's
  ``fit_gpytorch_model`` (up to 5 tries; a try fails on an ``OptimizationWarning`` or a
  ``NotPSDError``; after 5 failed tries 0.6.3 keeps the *last* try's state);
* ``AnalyticExpectedUtilityOfBestOption`` maximised by ``optimize_acqf`` (q = 2, 4
  restarts, 32 raw samples, KappaSharp App. G.2);
* Static KappaSharp (``static``): after each fit, Eq. 12's decisiveness of the latest
  comparison (noise term 2) is fed to the activation rule (Static: on from the 8th fit);
  when on, ``H = K^-1 + W`` at the MAP, ``R = eta*^2 / (eta* + (K^-1)_ii)`` with the
  smallest grid ``eta*`` such that ``kappa(H + R) <= kappa(H)^0.9`` (Eq. 9-10), the MAP
  re-solved by BoTorch's own ``fsolve`` objective plus ``R (f - m)``, and the model's
  ``utility`` and ``likelihood_hess`` replaced by the shifted MAP and the unaugmented
  ``W`` there (MAP-only covariance, Algorithm 1 line 10).

The KappaSharp helpers below are copies of ``pbo_core.models.gp.kappasharp``'s (that
package cannot be imported here: it needs the project's environment);
``tests/test_fidelity_scripts.py`` checks that they agree. The benchmark functions are the
project's own ``pbo_core/benchmarks.py``, loaded by file path (it needs numpy only).
Nothing here imports torch at module level, so the project's tests can import this file.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from scipy import linalg
from scipy.special import log_ndtr, ndtr

#: Calibration grid and exponent of Eq. 10, Eq. 12's noise term, Algorithm 1's first step.
ETA_GRID = np.logspace(-6, 8, 60)
ALPHA = 0.1
MODEL_NOISE_VAR = 2.0
MIN_STEP = 8
#: BoTorch 0.6.3's initial hyperparameters (Gamma(1.2, 0.5)'s mode; softplus(0)).
INITIAL_LENGTHSCALE = 0.4
INITIAL_OUTPUTSCALE = float(np.log(2.0))


def correction(prior_precision_diag: np.ndarray, eta: float) -> np.ndarray:
    """``r_i = eta^2 / (eta + a_i)`` (Eq. 9)."""
    a = np.asarray(prior_precision_diag, dtype=float)
    return eta * eta / (eta + a)


def condition_number(H: np.ndarray) -> float:
    """``lambda_max / lambda_min`` of a symmetric matrix (inf if not positive definite)."""
    ev = linalg.eigvalsh(H, check_finite=False)
    return float(ev[-1] / ev[0]) if ev[0] > 0 else float("inf")


def calibrate_eta(
    H: np.ndarray, prior_precision_diag: np.ndarray, alpha: float = ALPHA
) -> tuple[float | None, float, float]:
    """Smallest grid ``eta`` with ``kappa(H + R(eta)) <= kappa(H)^(1 - alpha)`` (Eq. 10)."""
    k0 = condition_number(H)
    target = k0 ** (1.0 - alpha)
    diag = np.diag_indices_from(H)
    for eta in ETA_GRID:
        Hr = H.copy()
        Hr[diag] += correction(prior_precision_diag, float(eta))
        k = condition_number(Hr)
        if k <= target:
            return float(eta), k0, k
    return None, k0, k0


def decisiveness(mean_diff: float, var_diff: float, noise_var: float = MODEL_NOISE_VAR) -> float:
    """``1 - H(p) / log 2`` with ``p = Phi(|mean_diff| / sqrt(var_diff + noise_var))`` (Eq. 12)."""
    zz = abs(mean_diff) / np.sqrt(max(var_diff, 0.0) + float(noise_var))
    p = float(ndtr(zz))
    ent = -(p * float(log_ndtr(zz)) + (1.0 - p) * float(log_ndtr(-zz)))
    return float(min(1.0, max(0.0, 1.0 - ent / np.log(2.0))))


def load_benchmarks(repo: Path) -> Any:
    """The project's ``pbo_core/benchmarks.py`` as a stand-alone module (numpy only)."""
    name = "_dtpbo_benchmarks"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(repo) / "pbo_core" / "benchmarks.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up while the file executes
    spec.loader.exec_module(mod)
    return mod


class _FitLog(logging.Handler):
    """BoTorch 0.6.3 reports failed tries on the root logger at DEBUG."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if msg.startswith("Fitting failed"):
            self.messages.append(msg)


def fit_model(X: np.ndarray, pairs: np.ndarray, bounds: Any, seed: int) -> tuple[Any, dict]:
    """Build PairwiseGP (0.6.3 defaults) and fit it; the fit's record."""
    import torch
    from botorch.fit import fit_gpytorch_model
    from botorch.models.pairwise_gp import PairwiseGP, PairwiseLaplaceMarginalLogLikelihood
    from botorch.models.transforms.input import Normalize

    np.random.seed(seed)  # noqa: NPY002 (PairwiseGP draws its fsolve start from it)
    torch.manual_seed(seed)  # fit_gpytorch_model's retries sample the priors from it
    Xt = torch.tensor(X, dtype=torch.float64)
    comp = torch.tensor(pairs, dtype=torch.long)
    d = Xt.shape[-1]
    rec: dict[str, Any] = {"n_pairs": len(pairs), "n_items": len(X)}
    t0 = time.perf_counter()
    model = PairwiseGP(Xt, comp, input_transform=Normalize(d=d, bounds=bounds))
    mll = PairwiseLaplaceMarginalLogLikelihood(model)
    handler = _FitLog()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            try:
                fit_gpytorch_model(mll)
                error = None
            except Exception as exc:  # anything 0.6.3 does not catch itself
                error = f"{type(exc).__name__}: {str(exc)[:300]}"
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    model.eval()
    all_failed = any("Fitting failed on all retries" in str(w.message) for w in ws)
    opt_msgs = [
        str(w.message)
        for w in ws
        if w.category.__name__ == "OptimizationWarning"
        and "Fitting failed on all retries" not in str(w.message)
    ]
    rec["outcome"] = "error" if error else ("failed" if all_failed else "ok")
    rec["failed_tries"] = len(handler.messages)
    rec["notpsd_tries"] = sum("NotPSDError" in m for m in handler.messages)
    if error:
        rec["error"] = error
    if opt_msgs:
        rec["last_optimization_warning"] = " ".join(opt_msgs[-1].split())[:300]
    with torch.no_grad():
        ls = model.covar_module.base_kernel.lengthscale.detach().reshape(-1).tolist()
        os_ = float(model.covar_module.outputscale.detach())
    rec["lengthscales"] = [float(f"{v:.6g}") for v in ls]
    rec["outputscale"] = float(f"{os_:.6g}")
    rec["at_initial"] = bool(
        np.allclose(ls, INITIAL_LENGTHSCALE, rtol=1e-6)
        and np.isclose(os_, INITIAL_OUTPUTSCALE, rtol=1e-6)
    )
    rec["fit_s"] = round(time.perf_counter() - t0, 3)
    return model, rec


def apply_static(model: Any, pairs: np.ndarray, X: np.ndarray, step: int) -> dict:
    """Static KappaSharp on a fitted 0.6.3 PairwiseGP (module docstring); its record."""
    import torch
    from scipy import optimize

    m = model
    w, lo = pairs[-1]
    with torch.no_grad():
        post = m.posterior(torch.tensor(X[[w, lo]], dtype=torch.float64))
        mu = post.mean.squeeze(-1).numpy()
        cov = post.mvn.covariance_matrix.numpy()  # 0.6.3: no covariance_matrix on the posterior
    score = decisiveness(mu[0] - mu[1], cov[0, 0] + cov[1, 1] - 2.0 * cov[0, 1])
    rec: dict[str, Any] = {"step": step, "score": round(score, 6), "active": False}
    if step < MIN_STEP:
        return rec
    with torch.no_grad():
        A = m.covar_inv.detach().numpy().astype(float)
        W = m.likelihood_hess.detach().numpy().astype(float)
        f0 = m.utility.detach().numpy().astype(float)
        H = 0.5 * (A + W + (A + W).T)
        a = np.diag(A)
        eta, k0, k1 = calibrate_eta(H, a)
        rec.update(eta=eta, kappa_before=k0, kappa_after=k1)
        if eta is None:
            return rec
        R = correction(a, eta)
        dp = m.transform_inputs(m.datapoints)
        mean0 = m._prior_mean(dp).detach().numpy().astype(float)
        args = (dp, m.D, m.DT, m.covar_chol, m.covar_inv, True)

        def grad(f: np.ndarray) -> np.ndarray:
            return m._grad_posterior_f(f, *args) + R * (f - mean0)

        def hess(f: np.ndarray) -> np.ndarray:
            return m._hess_posterior_f(f, *args) + np.diag(R)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            f, _info, ier, msg = optimize.fsolve(
                grad, f0, fprime=hess, xtol=1e-6, maxfev=100, full_output=True
            )
        if not np.all(np.isfinite(f)):
            rec["error"] = f"re-solve gave non-finite utilities ({msg})"
            return rec
        if ier != 1:
            rec["warning"] = str(msg)[:200]
        ft = torch.tensor(f, dtype=m.utility.dtype)
        m.utility = ft
        m.likelihood_hess = m._hess_likelihood_f_sum(ft, m.D, m.DT)
        m.pred_cov_fac_need_update = True
    rec["active"] = True
    rec["map_norm_ratio"] = float(np.linalg.norm(f) / max(np.linalg.norm(f0), 1e-300))
    return rec


def run(job: dict) -> dict:
    """One run of ``job`` (module docstring); the result row."""
    import botorch
    import gpytorch
    import torch
    from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption
    from botorch.optim import optimize_acqf

    torch.set_num_threads(1)
    t_start = time.perf_counter()
    bm = load_benchmarks(Path(job["repo"])).get_benchmark(job["function"])
    seed, T, method = int(job["seed"]), int(job["iters"]), job["method"]
    X0 = np.asarray(job["X0"], dtype=float)
    u0 = bm.fn(X0)
    if not np.allclose(u0, job["u0"], rtol=1e-12, atol=1e-12):
        raise RuntimeError("the worker's utility differs from the project's on the design")
    bounds = torch.tensor(np.asarray(bm.bounds, dtype=float).T, dtype=torch.float64)
    ss = np.random.SeedSequence(seed)
    _rng_init, rng_oracle, rng_strategy = (np.random.default_rng(s) for s in ss.spawn(3))
    sd = float(np.sqrt(2.0) * float(job["sigma"]))
    X = [row for row in X0]
    u = list(u0)
    pairs: list[tuple[int, int]] = []
    asked: set[int] = set()

    def add_pair(a: int, b: int) -> None:
        r = rng_oracle.random(np.shape(u[a]))
        w, lo = (a, b) if bool(r < ndtr((u[a] - u[b]) / sd)) else (b, a)
        pairs.append((w, lo))
        asked.update((a, b))

    for a, b in job["idx0"]:
        add_pair(int(a), int(b))
    best: list[float] = []
    fits: list[dict] = []
    strat_seed = 0
    n_fit = 0
    for t in range(T + 1):
        Xa, P = np.asarray(X), np.asarray(pairs)
        model, rec = fit_model(Xa, P, bounds, (strat_seed + 7919 * len(P)) % 2**31)
        rec["t"] = t
        n_fit += 1
        if method == "static":
            rec["ks"] = apply_static(model, P, Xa, n_fit)
        fits.append(rec)
        best.append(float(max(u[i] for i in asked)))
        if t == T:
            break
        strat_seed = int(rng_strategy.integers(2**31))
        torch.manual_seed(strat_seed)
        acq = AnalyticExpectedUtilityOfBestOption(pref_model=model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cand, _ = optimize_acqf(acq, bounds=bounds, q=2, num_restarts=4, raw_samples=32)
        c = cand.detach().numpy()
        sides = []
        for q in c:
            X.append(np.asarray(q, dtype=float))
            u.append(float(bm.fn(np.atleast_2d(q))[0]))
            sides.append(len(X) - 1)
        add_pair(sides[0], sides[1])
    return {
        "function": job["function"],
        "method": method,
        "seed": seed,
        "iters": T,
        "sigma": float(job["sigma"]),
        "init": job["init"],
        "final_best": best[-1],
        "best_value": best,
        "fits": fits,
        "seconds": round(time.perf_counter() - t_start, 1),
        "versions": {
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "gpytorch": gpytorch.__version__,
            "botorch": botorch.__version__,
            "numpy": np.__version__,
            "scipy": __import__("scipy").__version__,
        },
    }


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    print(json.dumps(run(job)), flush=True)


if __name__ == "__main__":
    main()
