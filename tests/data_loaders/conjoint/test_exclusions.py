"""Per-respondent exclusion rules."""

import pandas as pd

from data_loaders.conjoint import DropRespondents, MaxOptOutShare, MinAnsweredTasks
from tests.data_loaders.conjoint.helpers import load, long_frame


def test_exclusion_rules() -> None:
    s = load(long_frame(), exclude=[MaxOptOutShare(0.4)])
    assert s.extras["excluded"] == {1: "opted out in more than 40% of tasks"}
    assert set(s.data.respondent) == {2}
    assert s.data.n_items == 2  # only respondent 2's profiles remain
    s = load(long_frame(), exclude=[MaxOptOutShare(0.5)])  # 0.5 is not > 0.5
    assert s.extras["excluded"] == {}
    s = load(long_frame(), exclude=[MinAnsweredTasks(2), DropRespondents((2,))])
    assert s.extras["excluded"] == {
        1: "fewer than 2 answered tasks",
        2: "fewer than 2 answered tasks",
    }
    assert s.data.n_pairs == 0

    def custom(summary: pd.DataFrame) -> pd.Series:
        return summary.index == 2

    s = load(long_frame(), exclude=[custom])
    assert s.extras["excluded"] == {2: "custom"}
