import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbo_core.metrics import (
    MeanSD,
    MeanSE,
    competition_rank,
    mean_sd,
    mean_se,
    pairwise_accuracy,
    rho_regret,
    rho_regret_max,
    rho_values,
    top1_rank_error,
)

TRUE = np.arange(10)  # item i is at true position i + 1


def scores_from_ranks(ranks: list[float]) -> np.ndarray:
    """Scores whose competition ranks are ``ranks`` (rank 1 = highest score)."""
    return -np.asarray(ranks, dtype=float)


# ---------------------------------------------------------------------------- values
def test_table8_values() -> None:
    expected = [1, 2 / 3, 1 / 3, 1 / 7, 2 / 7, 3 / 7, 4 / 7, 5 / 7, 6 / 7, 1]
    np.testing.assert_allclose(rho_values(10, 3), expected)


def test_generalised_values() -> None:
    # n = 5, k = 2: top (2-1+1)/2 = 1, (2-2+1)/2 = 1/2; rest (3-2)/3, (4-2)/3, (5-2)/3
    np.testing.assert_allclose(rho_values(5, 2), [1, 0.5, 1 / 3, 2 / 3, 1])
    # k = 1: only the best counts in the top; rest j-1 over n-1
    np.testing.assert_allclose(rho_values(4, 1), [1, 1 / 3, 2 / 3, 1])


def test_competition_rank() -> None:
    assert competition_rank([5, 3, 5, 1]).tolist() == [1, 3, 1, 4]
    assert competition_rank([2, 2, 2]).tolist() == [1, 1, 1]
    # within tol = ties
    assert competition_rank([1.0, 1.05, 0.0], tol=0.1).tolist() == [1, 1, 3]


# ---------------------------------------------------------------------------- anchors
def test_anchor_perfect_and_top_three_tied() -> None:
    assert rho_regret(TRUE, -TRUE.astype(float)) == 0.0
    # true top three in one leaf at the top (all rank 1), the rest strictly below
    s = scores_from_ranks([1, 1, 1, 4, 5, 6, 7, 8, 9, 10])
    assert rho_regret(TRUE, s) == 0.0


def test_anchor_all_tied() -> None:
    # every item has rank 1 -> positions 4..10 all enter: (1+2+...+7)/7 = 28/7 = 4
    assert rho_regret(TRUE, np.zeros(10)) == pytest.approx(4.0)


def test_anchor_maximum_reversed() -> None:
    # reversed ranking: positions 1-3 leave (1 + 2/3 + 1/3 = 2), positions 8, 9, 10 enter
    # (5/7 + 6/7 + 7/7 = 18/7) -> 2 + 18/7
    s = TRUE.astype(float)  # item 9 scores highest
    assert rho_regret(TRUE, s) == pytest.approx(2 + 18 / 7)
    assert rho_regret_max(10, 3) == pytest.approx(2 + 18 / 7)


# ---------------------------------------------------------------------------- hand cases
def test_swap_positions_three_and_four() -> None:
    # predicted order 1, 2, 4, 3, 5, ... : pos 3 leaves (1/3), pos 4 enters (1/7) = 10/21
    s = scores_from_ranks([1, 2, 4, 3, 5, 6, 7, 8, 9, 10])
    assert rho_regret(TRUE, s) == pytest.approx(1 / 3 + 1 / 7)


def test_best_item_dropped_to_last() -> None:
    # predicted 2, 3, 4, ..., 10, 1 : pos 1 leaves (1), pos 4 enters (1/7) = 8/7
    s = scores_from_ranks([10, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert rho_regret(TRUE, s) == pytest.approx(1 + 1 / 7)


def test_tie_across_the_boundary_adds_entries() -> None:
    # positions 3 and 4 tied at rank 3 -> both in the top 3; nothing leaves, pos 4
    # enters: 1/7
    s = scores_from_ranks([1, 2, 3, 3, 5, 6, 7, 8, 9, 10])
    assert rho_regret(TRUE, s) == pytest.approx(1 / 7)


def test_tie_pushing_a_top_item_out() -> None:
    # positions 1, 2 and 4 tied at rank 1, position 3 at rank 4: pos 3 leaves (1/3),
    # pos 4 enters (1/7) = 10/21
    s = scores_from_ranks([1, 1, 4, 1, 5, 6, 7, 8, 9, 10])
    assert rho_regret(TRUE, s) == pytest.approx(10 / 21)


def test_large_tie_group_below_rank_three_stays_out() -> None:
    # position 1 rank 1, position 2 rank 2, positions 3..10 tied at rank 3: all of 4..10
    # enter (28/7 = 4), nothing leaves -> 4
    s = scores_from_ranks([1, 2] + [3] * 8)
    assert rho_regret(TRUE, s) == pytest.approx(4.0)
    # positions 3..10 tied at rank 4 is impossible with two items above; with three
    # distinct leaders the tie group starts at rank 4 and nobody enters
    s = scores_from_ranks([1, 2, 3] + [4] * 7)
    assert rho_regret(TRUE, s) == 0.0


def test_ties_can_exceed_the_strict_maximum() -> None:
    # the seven non-top items tied at rank 1 above the true top three (ranks 8-10):
    # all three leave (2) and all seven enter (4) -> 6 = sum of all values
    s = scores_from_ranks([8, 9, 10, 1, 1, 1, 1, 1, 1, 1])
    assert rho_regret(TRUE, s) == pytest.approx(6.0)
    assert rho_regret_max(10, 3, ties=True) == pytest.approx(6.0)


def test_true_order_is_a_permutation_of_item_ids() -> None:
    # items 0..4, true order 3, 1, 4, 0, 2; n = 5, k = 3: values 1, 2/3, 1/3, 1/2, 1
    # prediction ranks item 2 best, then 3, 1, 4, 0 -> true positions 5, 1, 2 in the top:
    # pos 3 (item 4) leaves (1/3), pos 5 (item 2) enters (1) -> 4/3
    order = [3, 1, 4, 0, 2]
    s = np.zeros(5)
    s[[2, 3, 1, 4, 0]] = [5, 4, 3, 2, 1]
    assert rho_regret(order, s) == pytest.approx(1 / 3 + 1)


def test_subset_of_items_ranked() -> None:
    # 100 items scored, a user ranked 10 of them: only those 10 are ranked
    rng = np.random.default_rng(0)
    items = rng.choice(100, size=10, replace=False)
    s = rng.normal(size=100)
    s[items] = np.arange(10)[::-1]  # perfect on the user's items
    s[np.setdiff1d(np.arange(100), items)] = 100.0  # others score higher: ignored
    assert rho_regret(items, s) == 0.0


def test_generalised_k_and_n() -> None:
    # n = 5, k = 2, values 1, 1/2 | 1/3, 2/3, 1; predicted order reversed: positions 1, 2
    # leave (3/2), positions 5, 4 enter (1 + 2/3) -> 19/6 = strict maximum
    order = np.arange(5)
    assert rho_regret(order, order.astype(float), k=2) == pytest.approx(19 / 6)
    assert rho_regret_max(5, 2) == pytest.approx(19 / 6)
    # n <= k: every item is always in both top sets
    assert rho_regret([0, 1], [0.0, 1.0], k=3) == 0.0


def test_strict_maximum_when_few_items_are_outside_the_top() -> None:
    # n = 4, k = 3: one item can enter, so one can leave: best leaves (1), worst enters (1)
    assert rho_regret_max(4, 3) == pytest.approx(2.0)
    assert rho_regret([0, 1, 2, 3], [0.0, 2.0, 1.5, 3.0]) == pytest.approx(2.0)


def test_rho_regret_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="repeats"):
        rho_regret([0, 0, 1], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="outside"):
        rho_regret([0, 5], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        rho_regret([0, 1], [np.nan, 1.0])


@given(
    n=st.integers(1, 12),
    k=st.integers(1, 5),
    data=st.data(),
)
def test_rho_regret_bounds(n: int, k: int, data: st.DataObject) -> None:
    perm = data.draw(st.permutations(list(range(n))))
    scores = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))  # many ties
    r = rho_regret(perm, np.asarray(scores, dtype=float), k=k)
    assert -1e-12 <= r <= rho_regret_max(n, k, ties=True) + 1e-9
    # perfect prediction: scores decreasing along the true order
    perfect = np.empty(n)
    perfect[np.asarray(perm)] = np.arange(n)[::-1]
    assert rho_regret(perm, perfect, k=k) == 0.0


@given(n=st.integers(1, 12), k=st.integers(1, 5), data=st.data())
def test_rho_regret_strict_bound(n: int, k: int, data: st.DataObject) -> None:
    perm = data.draw(st.permutations(list(range(n))))
    pred = data.draw(st.permutations(list(range(n))))  # distinct scores
    r = rho_regret(perm, np.asarray(pred, dtype=float), k=k)
    assert 0 <= r <= rho_regret_max(n, k) + 1e-9


def test_strict_maximum_is_attained_by_reversal() -> None:
    for n in range(2, 12):
        for k in range(1, 5):
            order = np.arange(n)
            assert rho_regret(order, order.astype(float), k=k) == pytest.approx(
                rho_regret_max(n, k)
            )


# ---------------------------------------------------------------------------- others
def test_top1_rank_error() -> None:
    s = [0.5, 2.0, 1.0, 2.0, 0.1]
    assert top1_rank_error(1, s) == 0  # tied with item 3, nobody strictly above
    assert top1_rank_error(2, s) == 2
    assert top1_rank_error(4, s) == 4
    assert top1_rank_error(4, s, candidates=[0, 4]) == 1
    with pytest.raises(ValueError):
        top1_rank_error(7, s)


def test_pairwise_accuracy_ties_count_half() -> None:
    s = [3.0, 1.0, 1.0]
    # (0, 1) correct = 1; (1, 0) wrong = 0; (1, 2) tie = 0.5 -> 1.5 / 3
    assert pairwise_accuracy(s, [(0, 1), (1, 0), (1, 2)]) == pytest.approx(0.5)
    assert pairwise_accuracy(np.zeros(4), [(0, 1), (2, 3)]) == 0.5
    assert math.isnan(pairwise_accuracy(s, np.zeros((0, 2), dtype=int)))
    with pytest.raises(ValueError):
        pairwise_accuracy(s, [(0, 3)])


def test_mean_sd_and_se() -> None:
    # values 1, 2, 3, 4: mean 2.5, sample variance (2.25+0.25+0.25+2.25)/3 = 5/3
    m = mean_sd([1, 2, 3, 4])
    assert isinstance(m, MeanSD)
    assert m == pytest.approx((2.5, math.sqrt(5 / 3), 4))
    e = mean_se([1, 2, 3, 4, np.nan])  # NaN left out
    assert isinstance(e, MeanSE)
    assert e.mean == 2.5 and e.n == 4
    assert e.se == pytest.approx(math.sqrt(5 / 3) / 2)
    one = mean_sd([7.0])
    assert one.mean == 7.0 and math.isnan(one.sd) and one.n == 1
    empty = mean_se([])
    assert math.isnan(empty.mean) and empty.n == 0
    mean, sd, n = mean_sd(np.array([[1.0, 3.0]]))  # unpacks like a tuple
    assert (mean, n) == (2.0, 2) and sd == pytest.approx(math.sqrt(2))
