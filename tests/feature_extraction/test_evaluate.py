"""Scoring an extracted feature table against the demo inbox's ground truth."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from data_loaders.pmr import DEMO_DIR
from feature_extraction.evaluate import score_against_truth
from feature_extraction.spec import table9_spec

SPEC = table9_spec()


def test_score_against_truth() -> None:
    truth = pd.read_csv(DEMO_DIR / "truth.csv", keep_default_na=False, dtype=str)
    perfect = score_against_truth(truth, DEMO_DIR / "truth.csv")
    assert (perfect["accuracy"] == 1.0).all() and (perfect["coverage"] == 1.0).all()
    ext = truth.copy()
    ext["status"] = "ok"
    # three actionability labels changed: two one level up (cyclic), one far away
    levels = list(SPEC["message_actionability"].values)
    codes = [levels.index(v) for v in truth.loc[0:2, "message_actionability"]]
    new_codes = [(codes[0] + 1) % 5, (codes[1] + 1) % 5, 0 if codes[2] >= 2 else 4]
    ext.loc[0:2, "message_actionability"] = [levels[c] for c in new_codes]
    dist = [abs(a - b) for a, b in zip(codes, new_codes, strict=True)]
    # one red-flag set gains a wrong value; one message failed
    i = int(np.flatnonzero(truth["red_flag_syndrome"] == "")[0])
    ext.loc[i, "red_flag_syndrome"] = "syncope_or_near_syncope"
    ext.loc[59, "status"] = "error"
    s = score_against_truth(ext, truth)
    assert s.loc["message_actionability", "n"] == 59
    assert s.loc["message_actionability", "coverage"] == pytest.approx(59 / 60)
    changed = [0, 1, 2]
    assert s.loc["message_actionability", "accuracy"] == pytest.approx(1 - len(changed) / 59)
    assert s.loc["message_actionability", "mae"] == pytest.approx(sum(dist) / 59)
    assert s.loc["message_actionability", "within_one"] == pytest.approx(
        1 - sum(d > 1 for d in dist) / 59
    )
    assert max(dist) >= 2
    assert s.loc["red_flag_syndrome", "accuracy"] == pytest.approx(58 / 59)
    assert s.loc["red_flag_syndrome", "precision"] < 1.0
    assert s.loc["red_flag_syndrome", "recall"] == 1.0
    assert s.loc["red_flag_syndrome", "hamming_accuracy"] == pytest.approx(1 - 1 / 12 / 59)
