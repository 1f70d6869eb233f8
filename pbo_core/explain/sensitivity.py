"""Leave-one-out feature sensitivity (DT-PBO Table 10 layout), for a split or a study.

:func:`leave_one_out` refits a model without each feature on one train/test split;
:func:`leave_one_out_study` does it per respondent (a random hold-out of each
respondent's choice tasks) or on a pooled study's own split, and averages the tables with
:func:`summarize_sensitivity`. Accuracies are :func:`pbo_core.metrics.accuracy` (ties
count one half).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import PreferenceData, Schema, Study
from pbo_core.metrics import accuracy, bootstrap_ci
from pbo_core.models.dt import DTSurrogate

__all__ = [
    "drop_features",
    "holdout_split",
    "leave_one_out",
    "leave_one_out_study",
    "summarize_sensitivity",
]


def drop_features(data: PreferenceData, schema: Schema, names: Sequence[str]) -> PreferenceData:
    """The same items and pairs without the named features' columns."""
    keep_schema = schema.without(names)
    drop = set(schema.column_indices(names).tolist())
    cols = [i for i in range(schema.n_columns) if i not in drop]
    return PreferenceData(
        X=data.X[:, cols],
        pairs=data.pairs,
        schema=keep_schema,
        items=data.items,
        item_ids=data.item_ids,
        respondent=data.respondent,
        users=data.users,
        source=data.source,
        task=data.task,
    )


def leave_one_out(
    train: PreferenceData,
    test: PreferenceData,
    schema: Schema,
    model_factory: Callable[[], Any] = DTSurrogate,
    features: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Refit without each feature; train/test accuracy and deltas (Table 10 layout).

    Returns a table with columns ``feature removed``, ``train acc (%)``,
    ``delta train (pp)``, ``test acc (%)``, ``delta test (pp)``: the baseline row first,
    then features sorted by test delta (largest drop first).
    """
    features = list(features) if features is not None else schema.names

    def score(tr: PreferenceData, te: PreferenceData) -> tuple[float, float]:
        m = model_factory().fit(tr)
        return 100 * accuracy(m, tr), 100 * accuracy(m, te)

    base_tr, base_te = score(train, test)
    rows = [
        {
            "feature removed": "None (baseline)",
            "train acc (%)": base_tr,
            "delta train (pp)": np.nan,
            "test acc (%)": base_te,
            "delta test (pp)": np.nan,
        }
    ]
    for f in features:
        tr, te = score(drop_features(train, schema, [f]), drop_features(test, schema, [f]))
        rows.append(
            {
                "feature removed": f,
                "train acc (%)": tr,
                "delta train (pp)": tr - base_tr,
                "test acc (%)": te,
                "delta test (pp)": te - base_te,
            }
        )
    df = pd.DataFrame(rows)
    body = df.iloc[1:].sort_values("delta test (pp)", kind="stable")
    return pd.concat([df.iloc[:1], body], ignore_index=True)


def summarize_sensitivity(rows: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Average per-respondent tables; Table 10 layout sorted by the test delta.

    With several respondents (tables stacked, each starting with its baseline row) the
    test delta gets a 95 % percentile-bootstrap CI over respondents (``delta test CI
    low (pp)``, ``... high (pp)``) and ``within noise`` says whether that CI contains 0
    (the change is indistinguishable from no change). One table: NaN CIs, ``within
    noise`` unknown (``None``).
    """
    cols = ["train acc (%)", "delta train (pp)", "test acc (%)", "delta test (pp)"]
    avg = rows.groupby("feature removed", sort=False)[cols].mean().reset_index()
    n_tables = int((rows["feature removed"] == "None (baseline)").sum())
    lo, hi, noise = [], [], []
    for k, name in enumerate(avg["feature removed"]):
        d = rows.loc[rows["feature removed"] == name, "delta test (pp)"].to_numpy(float)
        d = d[np.isfinite(d)]
        if name == "None (baseline)" or n_tables < 2 or len(d) < 2:
            lo.append(np.nan)
            hi.append(np.nan)
            noise.append(None)
            continue
        c_lo, c_hi = bootstrap_ci(d, rng=np.random.default_rng([seed, k]))
        lo.append(c_lo)
        hi.append(c_hi)
        noise.append(bool(c_lo <= 0.0 <= c_hi))
    avg["delta test CI low (pp)"] = lo
    avg["delta test CI high (pp)"] = hi
    avg["within noise"] = noise
    base = avg[avg["feature removed"] == "None (baseline)"]
    body = avg[avg["feature removed"] != "None (baseline)"].sort_values(
        "delta test (pp)", kind="stable"
    )
    return pd.concat([base, body], ignore_index=True)


def holdout_split(
    data: PreferenceData,
    test_fraction: float,
    rng: np.random.Generator,
    groups: np.ndarray | None = None,
) -> tuple[PreferenceData, PreferenceData] | None:
    """Hold out a fraction of the comparisons (or of their groups, e.g. choice tasks).

    Returns ``(train, test)`` over the same items, or ``None`` when fewer than two
    groups (pairs) exist. At least one group is held out and at least one kept.
    """
    if not 0.0 < float(test_fraction) < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    g = np.asarray(groups) if groups is not None else np.arange(data.n_pairs)
    if len(g) != data.n_pairs:
        raise ValueError(f"{len(g)} group labels for {data.n_pairs} pairs")
    uniq = np.unique(g)
    if len(uniq) < 2:
        return None
    n_test = min(len(uniq) - 1, max(1, round(test_fraction * len(uniq))))
    test_groups = rng.choice(uniq, size=n_test, replace=False)
    mask = np.isin(g, test_groups)
    return data.select_pairs(~mask), data.select_pairs(mask)


def leave_one_out_study(
    study: Study,
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
    n_respondents: int = 20,
    use_study_split: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Leave-one-out feature sensitivity (Table 10 layout) for a whole study.

    Per-respondent studies: each of the first ``n_respondents`` respondents gets a random
    hold-out of ``test_fraction`` of their choice tasks (of their pairs when the study has
    no task ids); :func:`leave_one_out` runs per respondent and the
    tables are averaged (:func:`summarize_sensitivity`). Pooled
    studies use their own train/test split when they have one and ``use_study_split``,
    else a random hold-out of pairs. Adds a column ``respondents`` (how many were used).
    """
    data = study.data
    split = study.extras.get("split")
    tables: list[pd.DataFrame] = []
    if data.respondent is None:
        if split is not None and use_study_split:
            s = np.asarray(split)
            parts: tuple[PreferenceData, PreferenceData] | None = (
                data.select_pairs(s == "train"),
                data.select_pairs(s == "test"),
            )
        else:
            parts = holdout_split(data, test_fraction, np.random.default_rng(seed))
        if parts is not None:
            tables.append(leave_one_out(parts[0], parts[1], study.schema))
        if progress is not None:
            progress(1, 1)
    else:
        tasks = study.data.task
        resp = study.respondents()[: max(1, int(n_respondents))]
        for k, r in enumerate(resp):
            mask = data.respondent == r
            d = data.select_pairs(mask, drop_unused_items=True)
            groups = np.asarray(tasks)[mask] if tasks is not None else None
            parts = holdout_split(d, test_fraction, np.random.default_rng([seed, k]), groups)
            if parts is not None and parts[1].n_pairs:
                tables.append(leave_one_out(parts[0], parts[1], study.schema))
            if progress is not None:
                progress(k + 1, len(resp))
    if not tables:
        return pd.DataFrame()
    out = summarize_sensitivity(pd.concat(tables, ignore_index=True))
    out["respondents"] = len(tables)
    return out
