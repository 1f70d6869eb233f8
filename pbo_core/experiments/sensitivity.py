"""Leave-one-out feature sensitivity per respondent or on a pooled study's split (Table 10)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pbo_core.experiments.runner import Cell

#: Default test tasks per respondent for conjoint studies.
from pbo_core.experiments.studies import (
    load_study_cached,
    respondent_split,
    train_test,
)
from pbo_core.explain.sensitivity import leave_one_out


def sensitivity_cell(cell: Cell) -> pd.DataFrame:
    """Leave-one-out table for one respondent (or the pooled study)."""
    study = load_study_cached(cell["study"], cell.get("data_dir"))
    split = study.extras.get("split")
    if split is not None and cell["respondent_index"] < 0:
        split = np.asarray(split)
        train = study.data.select_pairs(split == "train")
        test = study.data.select_pairs(split == "test")
    else:
        resp = study.respondents()[int(cell["respondent_index"])]
        got = respondent_split(study, resp, int(cell["test_tasks"]), int(cell["seed"]))
        if got is None:
            return pd.DataFrame()
        train, test = train_test(*got)
    table = leave_one_out(train, test, study.schema)
    table.insert(0, "respondent_index", int(cell["respondent_index"]))
    return table
