"""BoTorch's ``PairwiseGP`` + analytic EUBO as a reference method (optional extra).

Needs the ``bench`` extra (``pip install -e '.[bench]'``: torch CPU + botorch). Nothing
else in the project imports torch; this module is loaded only when the ``botorch-gp``
method is requested.
"""

from __future__ import annotations

import warnings

import numpy as np

from pbo_core.data import PreferenceData
from pbo_core.strategies.base import LoopState, QuerySide


def botorch_available() -> bool:
    """True when torch and botorch import."""
    try:
        import botorch  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


class BotorchStrategy:
    """PairwiseGP (Laplace, scaled RBF with BoTorch's default priors) and analytic EUBO.

    Inputs are normalised to the unit cube with BoTorch's ``Normalize`` transform using
    the schema bounds; hyperparameters are refitted at every step with
    ``fit_gpytorch_mll``; the next pair maximises ``AnalyticExpectedUtilityOfBestOption``
    with ``optimize_acqf`` (``num_restarts`` x ``raw_samples``). Finite item sets use the
    best pair of items.
    """

    ties = "latest-winner"

    def __init__(self, name: str = "botorch-gp", num_restarts: int = 8, raw_samples: int = 1024):
        if not botorch_available():
            raise ImportError(
                "method 'botorch-gp' needs torch and botorch: pip install -e '.[bench]' "
                "(torch==2.13.0 takes the CPU build on this machine)"
            )
        self.name = name
        self.num_restarts = num_restarts
        self.raw_samples = raw_samples
        self.n_leaves = 0
        self.model = None

    def fit(self, data: PreferenceData) -> None:
        """Fit PairwiseGP (hyperparameters by Laplace marginal likelihood)."""
        import torch
        from botorch.fit import fit_gpytorch_mll
        from botorch.models.pairwise_gp import PairwiseGP, PairwiseLaplaceMarginalLogLikelihood
        from botorch.models.transforms.input import Normalize

        b = data.get_schema().bounds
        self._bounds = torch.tensor(b.T, dtype=torch.float64)
        X = torch.tensor(data.X, dtype=torch.float64)
        comp = torch.tensor(data.pairs, dtype=torch.long)
        model = PairwiseGP(X, comp, input_transform=Normalize(d=X.shape[-1], bounds=self._bounds))
        mll = PairwiseLaplaceMarginalLogLikelihood(model.likelihood, model)
        with warnings.catch_warnings():
            # BoTorch reports every jitter it adds and every ABNORMAL L-BFGS exit; in a
            # benchmark loop those thousands of lines hide everything else
            warnings.simplefilter("ignore")
            try:
                fit_gpytorch_mll(mll)
            except Exception:  # a failed fit keeps the initial hyperparameters, as BoTorch does
                pass
        self.model = model

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Posterior mean utilities."""
        import torch

        with torch.no_grad():
            post = self.model.posterior(torch.tensor(X, dtype=torch.float64))
            return post.mean.squeeze(-1).numpy()

    def propose(self, state: LoopState, rng: np.random.Generator) -> tuple[QuerySide, QuerySide]:
        """Pair maximising analytic EUBO."""
        import torch
        from botorch.acquisition.preference import AnalyticExpectedUtilityOfBestOption
        from botorch.optim import optimize_acqf

        torch.manual_seed(int(rng.integers(2**31)))
        acq = AnalyticExpectedUtilityOfBestOption(pref_model=self.model)
        if state.problem.finite:
            X = torch.tensor(state.data.X, dtype=torch.float64)
            ia, ib = np.triu_indices(len(X), k=1)
            with torch.no_grad():
                vals = acq(torch.stack([X[ia], X[ib]], dim=1)).numpy()
            k = int(np.argmax(vals))
            return int(ia[k]), int(ib[k])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cand, _ = optimize_acqf(
                acq,
                bounds=self._bounds,
                q=2,
                num_restarts=self.num_restarts,
                raw_samples=self.raw_samples,
            )
        c = cand.detach().numpy()
        return c[0], c[1]
