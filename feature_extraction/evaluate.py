"""Scoring an extracted feature table against known ground-truth features.

The PMR demo inbox (:func:`data_loaders.pmr.load_pmr_demo`) knows the true Table 9
features of every message by construction, so an extraction run (``python -m
feature_extraction extract --study pmr-demo``) can be scored feature by feature:
:func:`score_against_truth` reports coverage, exact-match accuracy and, by feature type,
set metrics (multi-hot), absolute error (numeric) or code distance (ordinal).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pandas as pd

from feature_extraction.extract import load_table
from feature_extraction.spec import Spec, table9_spec
from pbo_core.data import split_multi_hot

__all__ = ["score_against_truth"]


def score_against_truth(
    extracted: pd.DataFrame | str | os.PathLike[str],
    truth: pd.DataFrame | str | os.PathLike[str],
    spec: Spec | None = None,
) -> pd.DataFrame:
    """Per-feature agreement of an extracted table with the ground truth.

    Parameters
    ----------
    extracted, truth
        Tables (or paths) with ``message_id`` and the spec's columns. Rows of
        ``extracted`` whose ``status`` is not ``ok`` count as missing.
    spec
        Feature spec (default: Table 9).

    Returns
    -------
    DataFrame
        One row per feature (index = feature name) with ``type``, ``n_truth``, ``n``
        (messages with an extraction), ``coverage`` (``n / n_truth``), ``accuracy``
        (exact match; for multi-hot the whole set), ``hamming_accuracy`` (multi-hot: per
        value), ``precision``/``recall``/``f1`` (multi-hot, micro-averaged over values),
        ``mae`` and ``within_one`` (ordinal: code distance). Metrics use the ``n``
        extracted messages.
    """
    spec = spec or table9_spec()
    if isinstance(extracted, pd.DataFrame):
        ext = extracted.copy()
    else:
        ext = load_table(extracted, spec)
    tru = load_table(truth, spec) if not isinstance(truth, pd.DataFrame) else truth.copy()
    for t in (ext, tru):
        t["message_id"] = t["message_id"].astype(str)
    if "status" in ext.columns:
        ext = ext[ext["status"].astype(str) == "ok"]
    merged = tru.merge(ext, on="message_id", how="inner", suffixes=("_true", "_ext"))
    rows = []
    for f in spec.features:
        row: dict[str, Any] = {"feature": f.name, "type": f.type, "n_truth": len(tru)}
        row["n"] = len(merged)
        row["coverage"] = len(merged) / len(tru) if len(tru) else float("nan")
        a, b = merged[f"{f.name}_true"].tolist(), merged[f"{f.name}_ext"].tolist()
        nan = float("nan")
        row.update(
            accuracy=nan,
            hamming_accuracy=nan,
            precision=nan,
            recall=nan,
            f1=nan,
            mae=nan,
            within_one=nan,
        )
        if not len(merged):
            rows.append(row)
            continue
        if f.type == "multi_hot":
            sa = [set(split_multi_hot(v)) for v in a]
            sb = [set(split_multi_hot(v)) for v in b]
            row["accuracy"] = float(np.mean([x == y for x, y in zip(sa, sb, strict=True)]))
            n_vals = len(f.values)
            ham = [1 - len(x ^ y) / n_vals for x, y in zip(sa, sb, strict=True)]
            row["hamming_accuracy"] = float(np.mean(ham))
            tp = sum(len(x & y) for x, y in zip(sa, sb, strict=True))
            fp = sum(len(y - x) for x, y in zip(sa, sb, strict=True))
            fn = sum(len(x - y) for x, y in zip(sa, sb, strict=True))
            row["precision"] = tp / (tp + fp) if tp + fp else nan
            row["recall"] = tp / (tp + fn) if tp + fn else nan
            p, r = row["precision"], row["recall"]
            row["f1"] = 2 * p * r / (p + r) if (tp and p + r) else (0.0 if tp + fp + fn else nan)
        elif f.type == "numeric":
            x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
            row["accuracy"] = float(np.mean(np.isclose(x, y)))
            row["mae"] = float(np.mean(np.abs(x - y)))
        else:
            row["accuracy"] = float(np.mean([str(x) == str(y) for x, y in zip(a, b, strict=True)]))
            if f.type == "ordinal":
                lv = list(f.values)
                d = np.array(
                    [
                        abs(lv.index(str(x)) - lv.index(str(y))) if str(y) in lv else len(lv)
                        for x, y in zip(a, b, strict=True)
                    ],
                    dtype=float,
                )
                row["mae"] = float(d.mean())
                row["within_one"] = float(np.mean(d <= 1))
        rows.append(row)
    return pd.DataFrame(rows).set_index("feature")
