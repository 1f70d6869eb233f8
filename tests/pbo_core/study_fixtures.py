"""Small studies with known utilities shared by the session and sensitivity tests."""

from __future__ import annotations

import numpy as np

from pbo_core.data import Feature, PreferenceData, Schema, Study


def small_items() -> tuple[np.ndarray, Schema, np.ndarray]:
    """12 items over a numeric, an ordinal and a categorical feature; known utilities."""
    schema = Schema(
        (
            Feature("price", "numeric", bounds=(0.0, 10.0), unit="EUR"),
            Feature("size", "ordinal", levels=("S", "M", "L")),
            Feature("colour", "categorical", levels=("red", "green", "blue")),
        )
    )
    rng = np.random.default_rng(4)
    X = np.column_stack(
        [rng.uniform(0, 10, 12).round(1), rng.integers(0, 3, 12), rng.integers(0, 3, 12)]
    ).astype(float)
    u = -X[:, 0] + 2.0 * X[:, 1] + 3.0 * (X[:, 2] == 1)
    return X, schema, u


def toy_study(n_resp: int = 4) -> Study:
    X, schema, u = small_items()
    rng = np.random.default_rng(0)
    pairs, resp, task = [], [], []
    for r in range(n_resp):
        for t in range(6):
            i, j = rng.choice(12, size=2, replace=False)
            w, lo = (i, j) if u[i] > u[j] else (j, i)
            pairs.append((w, lo))
            resp.append(r)
            task.append(t)
    data = PreferenceData(
        X, np.array(pairs), schema=schema, respondent=np.array(resp), task=np.array(task)
    )
    return Study("toy", "Toy", schema, data)
