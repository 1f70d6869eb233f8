"""Simulated panels of choices for the mixed and latent-class logit tests.

Every respondent answers ``tasks`` choice tasks among ``J`` alternatives described by ``K``
standard normal attributes, choosing by the logit with their own coefficients ``B[g]``;
optionally the alternatives are labelled (an ``alternative`` attribute with constants
``asc``) and respondents carry one feature (``income``, a case-specific variable).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pbo_core.data import Feature, PreferenceData, Schema

#: The schema of the respondents' ``income`` (the case-specific variable's table).
INCOME_SCHEMA = Schema((Feature("income", "numeric", bounds=(-10.0, 10.0)),))


def panel_study(
    B: np.ndarray,
    *,
    tasks: int = 8,
    J: int = 3,
    seed: int = 0,
    asc: np.ndarray | None = None,
    income_effect: np.ndarray | None = None,
    scale: float = 1.0,
) -> PreferenceData:
    """Choices of ``len(B)`` respondents with coefficients ``B`` ``(G, K)``.

    ``asc`` ``(J,)``: labelled alternatives ``a0 .. a{J-1}`` with these constants (the
    first is the reference, 0); ``income_effect`` ``(J,)``: a respondent feature
    ``income`` (standard normal) entering alternative ``j``'s utility times that effect.
    ``scale`` multiplies the attribute values (extreme-input tests).
    """
    rng = np.random.default_rng(seed)
    G, K = B.shape
    n = G * tasks * J
    X = rng.standard_normal((n, K)) * scale
    V = np.einsum("gtjk,gk->gtj", X.reshape(G, tasks, J, K), B)
    income = rng.standard_normal(G)
    if asc is not None:
        V = V + np.asarray(asc)[None, None, :]
    if income_effect is not None:
        V = V + income[:, None, None] * np.asarray(income_effect)[None, None, :]
    U = V + rng.gumbel(size=V.shape)
    choice = U.argmax(axis=2)
    item = np.arange(n).reshape(G, tasks, J)
    pairs, resp, task = [], [], []
    for g in range(G):
        for t in range(tasks):
            c = choice[g, t]
            for j in range(J):
                if j != c:
                    pairs.append((item[g, t, c], item[g, t, j]))
                    resp.append(g)
                    task.append(t)
    lim = float(np.abs(X).max()) + 1.0
    feats = [Feature(f"x{k}", "numeric", bounds=(-lim, lim)) for k in range(K)]
    users = None
    if asc is not None or income_effect is not None:
        levels = tuple(f"a{j}" for j in range(J))
        feats.append(Feature("alternative", "categorical", levels=levels))
        X = np.column_stack([X, np.tile(np.arange(J), G * tasks).astype(float)])
    if income_effect is not None:
        users = pd.DataFrame({"income": income}, index=pd.Index(np.arange(G), name="respondent"))
    return PreferenceData(
        X,
        np.array(pairs),
        schema=Schema(tuple(feats)),
        respondent=np.array(resp),
        task=np.array(task),
        users=users,
        source="simulated panel",
    )
