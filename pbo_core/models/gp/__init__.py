"""GP-Laplace preference surrogate (Chu & Ghahramani 2005), the standard PBO baseline.

Model
-----
Latent utilities ``f`` of the distinct items have a zero-mean GP prior with a scaled RBF
kernel with one lengthscale per input column (ARD), on inputs scaled to the unit cube
(categorical features one-hot). Comparisons follow the probit likelihood of DT-PBO Eq. 2
with the noise fixed to 1 (the outputscale carries the signal-to-noise ratio, as in
BoTorch's ``PairwiseGP``)::

    P(w > l | f) = Phi((f_w - f_l) / sqrt(2))

Laplace approximation
---------------------
With the comparison incidence matrix ``C`` (row ``k``: +1 at the winner, -1 at the loser,
identical comparisons merged into counts ``c``), the likelihood Hessian is the weighted
graph Laplacian ``W = C^T diag(omega) C`` with ``omega_k = c_k h(z_k) / 2`` and
``h(z) = r(z) (z + r(z))``, ``r = phi / Phi`` (computed with ``log_ndtr``). Everything
is done without inverting ``K``, following Rasmussen & Williams (2006, Alg. 3.1/5.1)
generalised to the non-diagonal ``W``: with a factor ``L^T L = W`` the only matrix
factorised is the well-conditioned ``B = I + L K L^T`` (eigenvalues >= 1), and

* Newton for the MAP: ``alpha <- a - L^T B^-1 L K a`` with ``a = W f + grad log p``,
  ``f = K alpha``, with a backtracking line search on
  ``Psi = -log p(D|f) + alpha^T K alpha / 2``;
* posterior covariance ``(K^-1 + W)^-1 = K - K L^T B^-1 L K``;
* log evidence ``log p(D|f) - f^T alpha / 2 - log|B| / 2`` (Chu & Ghahramani Eq. 12).

``L`` lives in the item space: ``W`` is built from the comparisons in O(M + n^2) and
factorised by pivoted Cholesky (``L`` is ``rank W x n``, at most ``n x n``), so each Newton
step costs O(M + n^3) however many comparisons there are. It gives the same ``L^T B^-1 L =
W (I + K W)^-1`` and ``|B| = |I + K W|`` as the comparison-space ``diag(sqrt(omega)) C``
(``M x M`` ``B``, O(M^3)) used before; ``tests/pbo_core/models/gp_reference.py`` keeps that
version and the tests compare the two.

Hyperparameters
---------------
Lengthscales and outputscale maximise the Laplace evidence plus log priors like BoTorch's
``PairwiseGP`` defaults (lengthscale ``Gamma(2.4, 2.7)``; outputscale smoothed box on
``[0.01, 100]``, used as the optimiser's bounds), by L-BFGS-B in log space with the exact
gradient, including the implicit dependence of the MAP on the hyperparameters
(R&W Eq. 5.22-5.24 with ``dW/df`` of the probit). Each fit warm-starts from the previous
hyperparameters and MAP. ``priors="0.6"`` uses BoTorch 0.6.x's priors instead (lengthscale
``Gamma(1.2, 0.5)``, outputscale box ``[1, 4]``); the other BoTorch 0.6-era behaviours
(lengthscale prior on raw inputs, initial values after a failed fit, the probit clamp
``|z| <= 3``, unmerged duplicates) are options too (:data:`FIDELITY_VARIANTS`,
docs/fidelity.md).

Duplicate items (equal after encoding, to ``merge_atol``) are merged, so repeated queries
do not make ``K`` singular; ``K`` is factorised with escalating jitter when needed.

Modules: :mod:`~pbo_core.models.gp.laplace` (kernel, MAP, evidence),
:mod:`~pbo_core.models.gp.kappasharp` (Shao et al., "Adaptive KappaSharp") and
:mod:`~pbo_core.models.gp.surrogate` (:class:`GPSurrogate`).
"""

from pbo_core.models.gp.surrogate import (
    FIDELITY_VARIANTS,
    GPSurrogate,
    KappaSharpMode,
    variant_options,
)

__all__ = ["FIDELITY_VARIANTS", "GPSurrogate", "KappaSharpMode", "variant_options"]
