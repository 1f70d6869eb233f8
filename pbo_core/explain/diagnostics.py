"""Comparison-graph diagnostics for any fitted surrogate (KappaSharp Sec. 4).

For a GP the graph's nodes are the (merged) items; for the DT they are the leaves (a
comparison inside one leaf carries no information and is no edge). Reported:

``n_components``
    Connected components of the comparison graph (isolated nodes count).
``hessian_rank``
    Numerical rank of the likelihood Hessian; KappaSharp Prop. 1 says it is
    ``n_nodes - n_components``.
``condition_number``
    ``kappa`` of the posterior Hessian (prior precision + likelihood Hessian).
``d_eff``
    Effective degrees of freedom ``sum mu_i / (1 + mu_i)``, ``mu`` the eigenvalues of
    ``K^(1/2) H_lik K^(1/2)`` (Prop. 3); for the DT ``K = I / ratio``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy import linalg
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from pbo_core.models.dt import DTSurrogate
from pbo_core.models.gp import GPSurrogate


@dataclass(frozen=True)
class GraphDiagnostics:
    """Diagnostics of one fitted surrogate (see module docstring)."""

    n_nodes: int
    n_edges: int
    n_components: int
    hessian_rank: int
    condition_number: float
    d_eff: float

    def to_dict(self) -> dict[str, float]:
        """Plain dictionary (for tables and JSON)."""
        return asdict(self)


def n_components(n_nodes: int, a: np.ndarray, b: np.ndarray) -> int:
    """Connected components of the undirected graph with edges ``(a[k], b[k])``."""
    if n_nodes == 0:
        return 0
    g = coo_matrix((np.ones(len(a)), (a, b)), shape=(n_nodes, n_nodes))
    return int(connected_components(g, directed=False)[0])


def numerical_rank(S: np.ndarray, rtol: float = 1e-9) -> int:
    """Rank of a symmetric PSD matrix from its eigenvalues."""
    if S.size == 0:
        return 0
    ev = linalg.eigvalsh(S, check_finite=False)
    return int(np.sum(ev > rtol * max(ev[-1], 1e-300)))


def effective_dof(prior_cov: np.ndarray, H_lik: np.ndarray) -> float:
    """``sum mu / (1 + mu)``, ``mu`` the eigenvalues of ``K^(1/2) H_lik K^(1/2)``."""
    if H_lik.size == 0:
        return 0.0
    Lk = np.linalg.cholesky(prior_cov + 1e-12 * np.eye(len(prior_cov)) * np.trace(prior_cov))
    mu = linalg.eigvalsh(Lk.T @ H_lik @ Lk, check_finite=False)
    mu = np.maximum(mu, 0.0)
    return float(np.sum(mu / (1.0 + mu)))


def diagnose(model: DTSurrogate | GPSurrogate) -> GraphDiagnostics:
    """Diagnostics of a fitted DT or GP surrogate."""
    if isinstance(model, DTSurrogate):
        res = model.laplace_
        m = model.n_leaves_
        H_lik = res.likelihood_hessian
        H = res.hessian
        a, b = np.nonzero(np.triu(np.abs(H_lik) > 0, k=1))
        prior_cov = np.eye(m) / model.ratio
        n_nodes = m
    elif isinstance(model, GPSurrogate):
        H_lik, H = model.hessians()
        C = model.C_
        a = np.argmax(C > 0, axis=1)
        b = np.argmax(C < 0, axis=1)
        prior_cov = model.K_
        n_nodes = len(model.Z_)
    else:  # pragma: no cover - defensive
        raise TypeError(f"no diagnostics for {type(model).__name__}")
    ncc = n_components(n_nodes, np.asarray(a), np.asarray(b))
    return GraphDiagnostics(
        n_nodes=n_nodes,
        n_edges=len(a),
        n_components=ncc,
        hessian_rank=numerical_rank(H_lik),
        condition_number=float(np.linalg.cond(H)) if H.size else float("nan"),
        d_eff=effective_dof(prior_cov, H_lik),
    )
