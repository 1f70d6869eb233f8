"""A loaded comparison table must stay inside the problem's domain."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from pbo_core.session import ElicitationSession


def _table(s: ElicitationSession) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    for _ in range(4):
        s.answer(int(rng.integers(2)))
    return pd.read_csv(io.StringIO(s.to_frame().to_csv(index=False)))


@pytest.mark.parametrize(
    ("value", "shown"), [(1e300, "1e+300"), (-5.5, "-5.5"), (np.inf, "inf"), (np.nan, "nan")]
)
def test_from_frame_rejects_points_outside_branin(value: float, shown: str) -> None:
    s = ElicitationSession.for_benchmark("branin", "dt", seed=1)
    df = _table(s)
    df.loc[2, "winner_x1"] = value
    with pytest.raises(ValueError) as e:
        ElicitationSession.from_frame(df, **s.config())
    msg = str(e.value)
    assert "row 3 (CSV line 4), column 'winner_x1'" in msg
    assert shown in msg and "[-5, 10]" in msg


def test_from_frame_accepts_the_bounds_themselves() -> None:
    s = ElicitationSession.for_benchmark("branin", "dt", seed=1)
    df = _table(s)
    df.loc[0, "loser_x1"] = 10.0
    df.loc[1, "winner_x2"] = 0.0
    t = ElicitationSession.from_frame(df, **s.config())
    assert t.n_answers == len(df)
