"""Slopes in units and trade-off ratios with Fieller intervals (pbo_core.explain.labels module)."""

from __future__ import annotations

import numpy as np
import pytest

from pbo_core import explain
from pbo_core.data import Feature, PreferenceData, Schema
from pbo_core.explain import labels
from pbo_core.models.linear_leaves import LinearLeafDTSurrogate
from pbo_core.plan import plan_with
from pbo_core.units import money_candidate, tradeoff_unit

V = np.array([[0.004**2, 0.3 * 0.004 * 0.02], [0.3 * 0.004 * 0.02, 0.02**2]])


def test_fieller_interval_covers_a_known_ratio_95_percent_of_the_time() -> None:
    """Repeated Gaussian estimates around a known (time, price) slope pair: the interval
    contains the true ratio 0.15 in 95 % of them (4000 draws: +-1.1 pp is 3 s.e.)."""
    truth = np.array([-0.03, -0.2])
    rng = np.random.default_rng(7)
    est = rng.multivariate_normal(truth, V, size=4000)
    hit = []
    for a, c in est:
        r = labels.fieller_ratio(a, c, V)
        assert r.bounded  # the price slope is 10 sd from 0
        hit.append(r.low <= 0.15 <= r.high)
    assert abs(np.mean(hit) - 0.95) < 0.011


def test_fieller_interval_matches_posterior_draws_when_the_price_slope_is_clear() -> None:
    mean = np.array([-0.03, -0.2])
    draws = np.random.default_rng(3).multivariate_normal(mean, V, size=200_000)
    ratio = draws[:, 0] / draws[:, 1]
    lo, hi = np.quantile(ratio, [0.025, 0.975])
    r = labels.fieller_ratio(*mean, V)
    assert r.estimate == pytest.approx(0.15)
    assert r.low == pytest.approx(lo, rel=0.03) and r.high == pytest.approx(hi, rel=0.03)


def test_fieller_interval_is_unbounded_when_the_price_slope_is_not_clearly_nonzero() -> None:
    r = labels.fieller_ratio(-0.03, -0.03, [[1e-4, 0.0], [0.0, 0.02**2]])
    assert not r.bounded and np.isnan(r.low) and np.isnan(r.high)
    assert r.estimate == pytest.approx(1.0)
    # not identified: the reason, never a point estimate
    text = labels.ratio_text(r, "guilders per hour", money="Price")
    assert text.startswith("not identified: the Price slope's 95% CI includes 0")
    assert "1.0" not in text and "1 " not in text
    assert labels.ratio_text(r, "guilders per hour", short=True) == (
        "not identified (money slope ≈ 0)"
    )
    scaled = labels.fieller_ratio(-0.03, -0.2, V).scaled(-60)
    assert scaled.low < scaled.estimate < scaled.high and scaled.estimate == pytest.approx(-9.0)
    with pytest.raises(ValueError, match="PSD"):
        labels.fieller_ratio(1.0, 1.0, [[1.0, 2.0], [2.0, 1.0]])


def test_unit_words_and_direction() -> None:
    assert labels.singular_unit("guilders") == "guilder"
    assert labels.singular_unit("years") == "year"
    assert labels.singular_unit("min") == "min" and labels.singular_unit("CHF") == "CHF"
    price = Feature("price", "numeric", bounds=(1, 125), label="Price", unit="guilders")
    time = Feature("time", "numeric", bounds=(55, 250), label="Travel time", unit="min")
    comfort = Feature("comfort", "ordinal", levels=("0", "1", "2"), label="Comfort class")
    assert labels.slope_label(price, "Price", -0.15) == "Price: -0.15 per guilder (more is worse)"
    # a time slope per minute reads per hour
    assert labels.slope_label(time, "T", -0.028) == "Travel time: -1.68 per hour (more is worse)"
    assert labels.slope_label(comfort, "C", 0.4).endswith("per level up (more is better)")
    assert money_candidate([time, price]) == ("price", "by its unit (guilders)")
    assert money_candidate([Feature("chf", "numeric", bounds=(0, 1), unit="CHF")])[0] == "chf"
    assert money_candidate([Feature("ticket_price", "numeric", bounds=(0, 1))])[0]
    assert money_candidate([Feature("p", "numeric", bounds=(0, 1), unit="¢/kWh")])[0] == "p"
    assert money_candidate([Feature("price", "ordinal", levels=("a", "b"))]) == ("", "")
    assert labels.hours_per_unit(time) == pytest.approx(1 / 60)
    # a unit is never assumed: a time with no unit is per unit, never per hour
    bare = Feature("TT", "numeric", bounds=(5, 300))
    assert labels.hours_per_unit(bare) is None
    assert labels.slope_label(bare, "TT", -0.0128) == "TT: -0.013 per unit (more is worse)"
    cost = Feature("CO", "numeric", bounds=(1, 90))
    assert tradeoff_unit(cost, bare, time=True) == (1.0, "units of CO per unit of TT")
    assert tradeoff_unit(price, time, time=True) == (60.0, "guilders per hour")
    assert tradeoff_unit(price, time) == (1.0, "guilders per min")  # not the travel time


def _trips(n_items: int = 120, n_pairs: int = 1500, seed: int = 0) -> PreferenceData:
    """Trips with a known utility -0.2 price - 0.02 time: value of time 0.1 guilder per
    minute = 6 guilders per hour."""
    rng = np.random.default_rng(seed)
    schema = Schema(
        (
            Feature("price", "numeric", bounds=(5, 40), label="Price", unit="guilders"),
            Feature("time", "numeric", bounds=(30, 180), label="Travel time", unit="min"),
        )
    )
    X = np.column_stack([rng.uniform(5, 40, n_items), rng.uniform(30, 180, n_items)])
    u = -0.2 * X[:, 0] - 0.02 * X[:, 1]
    i, j = rng.integers(0, n_items, (2, n_pairs))
    keep = i != j
    i, j = i[keep], j[keep]
    first_wins = u[i] - u[j] + np.sqrt(2) * rng.standard_normal(len(i)) > 0
    pairs = np.column_stack([np.where(first_wins, i, j), np.where(first_wins, j, i)])
    return PreferenceData(X, pairs, schema=schema)


@pytest.fixture(scope="module")
def trip_model() -> LinearLeafDTSurrogate:
    return LinearLeafDTSurrogate(linear_features="all", max_depth=1, slope_ratio=0.01).fit(_trips())


def test_slope_posterior_matches_utility_differences(trip_model) -> None:
    """The slope of a leaf is the utility difference of two of its items one unit apart;
    its variance is that difference's posterior variance."""
    m = trip_model
    mean, cov = m.slope_posterior()
    np.testing.assert_allclose(mean, m.leaf_slopes_.to_numpy())
    x = _trips().X[:1].copy()
    leaf = int(m.apply(x)[0])
    pair = np.vstack([x, x + np.array([[1e-3, 0.0]])])
    assert (m.apply(pair) == leaf).all()
    mu, c = m.posterior(pair)
    d = np.array([-1.0, 1.0]) / 1e-3
    assert d @ mu == pytest.approx(mean[leaf, 0], rel=1e-6)
    assert d @ c @ d == pytest.approx(cov[leaf, 0, 0], rel=1e-4)
    w = np.bincount(m.item_leaf_, minlength=m.n_leaves_)
    avg, avg_cov = m.slope_posterior(weights=w)
    np.testing.assert_allclose(avg, (w[:, None] * mean).sum(0) / w.sum())
    assert np.allclose(avg_cov, avg_cov.T) and np.linalg.eigvalsh(avg_cov).min() >= 0
    with pytest.raises(ValueError, match="weights"):
        m.slope_posterior(weights=np.zeros(m.n_leaves_))


def test_value_of_time_recovers_a_known_truth(trip_model) -> None:
    assert labels.value_of_time(trip_model) == {}  # no roles named: no value of time
    assert labels.value_of_time(trip_model, money="price") == {}  # no travel time named
    vot = labels.value_of_time(trip_model, money="price", time="time")
    overall = vot[None]
    assert overall.unit == "guilders per hour"
    assert overall.ratio.bounded
    assert overall.ratio.low < 6.0 < overall.ratio.high
    assert overall.ratio.high - overall.ratio.low < 4.0
    assert set(vot) == {*range(trip_model.n_leaves_), None}
    text = overall.text()
    assert text.startswith("Value of time (money: Price): ")
    assert "guilders per hour [95% CI " in text
    assert overall.money == "Price"


def test_tree_view_shows_linear_leaves_in_units(trip_model) -> None:
    view = explain.tree_view(trip_model, title="Trips", money="price", time="time")
    words = " | ".join(view.texts())
    # tooltips: each slope with its 95% interval and direction; boxes: ± half-width
    assert "per guilder [95% CI " in words and "per hour [95% CI " in words
    assert "(more is worse)" in words
    boxes = [t for n in view.nodes if n.kind == "leaf" for t in n.lines]
    assert any(t.startswith("Price: -") and " ±" in t and "per guilder" in t for t in boxes)
    assert "Value of time (money: Price):" in words and "utility at centre" in words
    assert view.title.startswith("Trips · overall value of time ")
    svg = view.to_svg()
    assert "per guilder" in svg and "overall value of time" in svg
    table = labels.tradeoff_table(labels.tradeoffs(trip_model, money="price", time="time"))
    assert list(table["leaf"])[-1] == "overall"
    assert set(table["trade-off"]) == {"value of time"}
    # without a named travel time the minutes are an attribute like any other
    untimed = labels.tradeoff_table(labels.tradeoffs(trip_model, money="price"))
    assert set(untimed["trade-off"]) == {"value of Travel time"}
    assert "overall value of time" not in explain.tree_view(trip_model, title="Trips").title
    assert labels.tradeoffs(trip_model) == []  # no money attribute named: nothing guessed


def test_numbers_are_rounded_to_the_precision_of_their_interval() -> None:
    assert labels.ci_decimals(8.3, 13.7) == 1 and labels.ci_decimals(6.0, 27.9) == 0
    assert labels.ci_decimals(-26984, 22902) == 0
    assert labels.ci_text(10.62, 8.31, 13.74) == ("10.6", "[8.3, 13.7]")
    assert labels.ci_text(-2041.0849, -26984, 22902) == ("-2,041", "[-26,984, 22,902]")
    assert labels.ci_text(0.00123, 0.0009, 0.0016) == ("0.00123", "[0.00090, 0.00160]")
    assert labels.ci_text(-0.001, -0.3, 0.3, signed=True)[0] == "0.00"  # never "-0.00"
    r = labels.fieller_ratio(-0.03, -0.2, V).scaled(60)
    assert labels.ratio_text(r, "guilders per hour") == "9.0 guilders per hour [95% CI 6.7, 11.8]"


def test_slopes_carry_their_interval_or_a_sign_mark() -> None:
    price = Feature("price", "numeric", bounds=(1, 125), label="Price", unit="guilders")
    time = Feature("time", "numeric", bounds=(55, 250), label="Travel time", unit="min")
    assert labels.slope_label(price, "Price", -0.32, sd=0.03) == (
        "Price: -0.320 per guilder [95% CI -0.379, -0.261] (more is worse)"
    )
    assert labels.slope_label(price, "Price", -0.32, sd=0.03, short=True) == (
        "Price: -0.320 ±0.059 per guilder"
    )
    # per minute -> per hour, interval included; it contains 0: the direction is unclear
    unsure = labels.slope_label(time, "T", -0.028, sd=0.02)
    assert unsure.startswith("Travel time: -1.7 per hour [95% CI -4.0, +0.7]")
    assert unsure.endswith("(direction unclear: the interval contains 0)")
    assert labels.slope_label(time, "T", -0.028, sd=0.02, short=True).endswith("(sign unsure)")


def test_the_money_attribute_is_explicit_and_named(trip_model) -> None:
    from pbo_core.data import Study

    data = _trips()
    study = Study("trips", "Trips", data.get_schema(), data)
    assert labels.money_attribute(study) == (
        "price",
        "proposed by its unit (guilders); confirm in the plan",
    )
    assert labels.time_attribute(study)[0] is None  # a travel time is never guessed
    study.plan = plan_with(study, money="price", how="chosen at import")
    assert labels.money_attribute(study) == ("price", "chosen at import")
    assert labels.money_candidates(study.schema) == ["price", "time"]
    study.plan = plan_with(study, time="time", how="chosen at import")  # money: none
    assert labels.money_attribute(study)[0] is None
    assert labels.time_attribute(study) == ("time", "chosen at import")
    # another money attribute: every ratio divides by it and names it
    by_time = labels.tradeoffs(trip_model, money="time")
    assert by_time and all(t.money == "Travel time" for t in by_time)
    assert {t.kind for t in by_time} == {"willingness to pay"}
    assert all(t.unit == "min per guilder" for t in by_time)
    assert labels.tradeoffs(trip_model, money="nothing") == []
    view = explain.tree_view(trip_model, money="price", time="time")
    assert "overall value of time (money: Price)" in view.title
    table = labels.tradeoff_table(labels.tradeoffs(trip_model, money="price", time="time"))
    assert set(table["money attribute"]) == {"Price"}
    assert table["value [95% CI]"].str.contains("guilders per hour").all()


def test_an_unidentified_ratio_has_no_number_in_any_table() -> None:
    r = labels.fieller_ratio(-0.03, -0.01, [[1e-4, 0.0], [0.0, 0.02**2]])
    assert not r.identified
    t = labels.TradeOff(None, "Travel time", "value of time", "CHF per hour", r, "Cost")
    row = labels.tradeoff_table([t]).iloc[0]
    assert np.isnan(row["estimate"]) and np.isnan(row["95% CI low"])
    assert row["value [95% CI]"].startswith("not identified: the Cost slope")
    assert t.text(short=True) == "Value of time (money: Cost): not identified (Cost slope ≈ 0)"


@pytest.mark.parametrize("slopes", ["leaf", "shared", "both"])
def test_slope_posterior_per_leaf_equals_the_dense_map(slopes: str) -> None:
    """The per-leaf posterior (indexed) equals the dense ``A_l theta, A_l S A_l^T`` of the
    weighted path with all weight on that leaf."""
    m = LinearLeafDTSurrogate(
        linear_features="all", max_depth=2, slope_ratio=0.01, slopes=slopes
    ).fit(_trips())
    mean, cov = m.slope_posterior()
    assert mean.shape == (m.n_leaves_, len(m.slope_columns_)) and m.n_leaves_ > 1
    for leaf in range(m.n_leaves_):
        one = np.eye(m.n_leaves_)[leaf]
        mu, c = m.slope_posterior(weights=one)
        np.testing.assert_allclose(mean[leaf], mu, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(cov[leaf], c, rtol=1e-12, atol=1e-15)
