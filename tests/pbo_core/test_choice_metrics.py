"""The field's metrics on choice situations: golden values, the scale fitted on
training data only, situations kept by every selection, and the evaluation core's
held-out NLL per choice equal to the conditional logit's own likelihood."""

from __future__ import annotations

import math

import numpy as np
import pytest

from data_loaders.registry import load_study
from pbo_core.evaluation import score_model, summarize
from pbo_core.metrics import fit_scale, ratio_ci, situation_log_probs, situation_top1
from pbo_core.models.mnl import ConditionalLogit, choice_sets
from pbo_core.registry import make_for
from pbo_core.splits import make_split


def test_golden_log_probabilities_and_top1() -> None:
    u = np.array([1.0, 0.0, 2.0, 2.0, -1.0])
    item = np.array([0, 1, 2, 3, 4])  # situations {0, 1} and {2, 3, 4}
    start = np.array([0, 2, 5])
    chosen = np.array([0, 4])
    lp = situation_log_probs(u, item, start, chosen)
    assert lp[0] == pytest.approx(1.0 - math.log(math.e + 1.0))
    assert lp[1] == pytest.approx(-1.0 - math.log(2 * math.e**2 + math.e**-1))
    assert situation_top1(u, item, start, np.array([0, 2])).tolist() == [1.0, 0.5]  # a tie
    assert situation_top1(u, item, start, chosen).tolist() == [1.0, 0.0]
    huge = situation_log_probs(np.array([1e6, -1e6]), np.array([0, 1]), np.array([0, 2]),
                               np.array([1]))  # fmt: skip
    assert np.isfinite(huge).all() and huge[0] == pytest.approx(-2e6)


def test_the_scale_recovers_a_known_logit_and_stays_finite() -> None:
    rng = np.random.default_rng(0)
    S, J = 4000, 3
    u = rng.normal(size=S * J)
    start = np.arange(0, S * J + 1, J)
    p = np.exp(2.5 * u.reshape(S, J))
    p /= p.sum(1, keepdims=True)
    pick = np.array([rng.choice(J, p=row) for row in p])
    chosen = start[:-1] + pick
    lam = fit_scale(u, np.arange(S * J), start, chosen)
    assert lam == pytest.approx(2.5, rel=0.08)
    # utilities that separate the choices get a large, bounded scale
    sep = np.where(np.isin(np.arange(S * J), chosen), 1.0, 0.0)
    assert 0 < fit_scale(sep, np.arange(S * J), start, chosen) <= 30.0 + 1e-9


def test_ratio_ci_of_sums_and_its_paired_difference() -> None:
    rng = np.random.default_rng(1)
    num, den = np.array([2.0, 4.0, 6.0]), np.array([1.0, 2.0, 3.0])
    est, (lo, hi) = ratio_ci(num, den, rng=rng, n_boot=200)
    assert est == pytest.approx(2.0) and lo == pytest.approx(2.0) and hi == pytest.approx(2.0)
    d, ci = ratio_ci(num, den, rng=rng, n_boot=200, num_b=num - den, den_b=den)
    assert d == pytest.approx(1.0) and ci[0] <= 1.0 <= ci[1]


def test_situations_are_recorded_and_kept_by_selections() -> None:
    study = load_study("electricity")
    data = study.data
    sits = data.situations
    assert sits is not None and sits.n_situations == data.n_tasks()
    assert (sits.sizes == 4).all()  # four offers, every one recorded
    r = study.respondents()[0]
    own = study.for_respondent(r)
    assert own.situations is not None
    assert own.situations.n_situations == own.n_tasks()
    assert (own.situations.respondent == r).all()
    sets = choice_sets(own)
    assert sets.n_situations == own.n_tasks() and (np.diff(sets.start) == 4).all()
    # a selection that splits a task keeps its pairs as the observations
    half = np.arange(own.n_pairs) % 2 == 0
    assert own.select_pairs(half).situations is None


def test_the_conditional_logit_scores_its_own_likelihood() -> None:
    """The evaluation core's held-out log-likelihood of mnl is the logit's own on the
    test situations (scale 1, no fitted scale), and rho-squared is 1 - LL / LL(0)."""
    study = load_study("train")
    split = make_split(study, "tasks", seed=0)
    rows = score_model(split, "mnl")
    s = summarize(rows, seed=0, n_boot=50)["mnl"]["choices"]
    assert s["scale"] == 1.0 and s["n_choices"] == int(split.test.sum())
    train = study.data.select_pairs(split.train_mask(0))
    test = study.data.select_pairs(split.test_mask(0))
    m = make_for("mnl", study).fit(train)  # the registry's mnl, as scored
    assert isinstance(m, ConditionalLogit)
    sets = choice_sets(test)
    ll = situation_log_probs(m.predict(test.X), sets.item, sets.start, sets.chosen).sum()
    assert -s["ll_total"] == pytest.approx(-ll, rel=1e-6)
    assert s["nll_per_choice"] == pytest.approx(-ll / sets.n_situations, rel=1e-6)
    ll0 = -np.log(np.diff(sets.start)).sum()
    assert s["rho2_equal_shares"] == pytest.approx(1 - ll / ll0, rel=1e-6)
    assert s["nll_per_choice_ci95"][0] < s["nll_per_choice"] < s["nll_per_choice_ci95"][1]


def test_rho_squared_against_constants_only_on_labelled_alternatives(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With labelled alternatives the second reference is the constants-only logit fitted
    on the training choices: rho2_constants = 1 - LL / LL(constants), below rho-squared
    against equal shares."""
    from pbo_core.evaluation import drop_features
    from tests.fixtures.shapes import SHAPES, import_shape

    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    key = import_shape("labelled-wide", tmp_path)
    study = load_study(key)
    assert study.plan.alternative == "alternative"
    split = make_split(study, "respondents", seed=0)
    rows = score_model(split, "mnl")
    c = summarize(rows, seed=0, n_boot=50)["mnl"]["choices"]
    data = study.data
    kept = drop_features(data, study.schema, [n for n in study.schema.names if n != "alternative"])
    const = ConditionalLogit(alternative="alternative", alpha=0).fit(
        kept.select_pairs(split.train_mask(0))
    )
    test = kept.select_pairs(split.test_mask(0))
    sets = choice_sets(test)
    llc = situation_log_probs(const.predict(test.X), sets.item, sets.start, sets.chosen).sum()
    assert c["rho2_constants"] == pytest.approx(1 - c["ll_total"] / llc, rel=1e-6)
    assert c["rho2_constants"] < c["rho2_equal_shares"]
    assert SHAPES["labelled-wide"].respondents == len(study.respondents())
