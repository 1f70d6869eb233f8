"""The Sushi PBO summary's three readings of "favourite found" (joint, alone, tie-break)."""

import pandas as pd
import pytest

from pbo_core.experiments.sushi import summarize_sushi_pbo


def test_shares_count_ties_three_ways() -> None:
    # question 9: user 0 alone first, user 1 first jointly with 3 others, user 2 not first
    rows = pd.DataFrame(
        {
            "user": [0, 1, 2],
            "method": ["dt"] * 3,
            "question": [9] * 3,
            "rho_regret": [0.0, 1.0, 2.0],
            "top1_error": [0, 0, 2],
            "top1_ties": [0, 3, 0],
            "time_s": [0.0] * 3,
        }
    )
    m = summarize_sushi_pbo(rows)["methods"]["dt"]
    assert m["share_found_by_question_9"] == pytest.approx(2 / 3)
    assert m["share_first_joint"] == [pytest.approx(2 / 3)]
    assert m["share_first_alone"] == [pytest.approx(1 / 3)]
    assert m["share_first_random_tiebreak"] == [pytest.approx((1 + 0.25) / 3)]
