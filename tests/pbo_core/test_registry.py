"""The one model registry (pbo_core.registry): every entry honours the estimator contract."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pbo_core.data import Feature, PreferenceData, Schema, Study
from pbo_core.models.base import Estimator, clone
from pbo_core.models.gp import GPSurrogate
from pbo_core.models.gp.kappasharp import EQ1_NOISE_VAR
from pbo_core.registry import (
    MODELS,
    ROLES,
    ModelSpec,
    get,
    is_panel,
    make_model,
    make_strategy,
    names,
    not_applicable,
    register,
)

SCHEMA = Schema(
    (
        Feature("price", "numeric", bounds=(0, 10)),
        Feature("brand", "categorical", levels=("a", "b", "c")),
    )
)


def _study(n_resp: int = 4, tasks: int = 6) -> Study:
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 10, 24), rng.integers(0, 3, 24)]).astype(float)
    u = -X[:, 0] + 2.0 * (X[:, 1] == 1)
    pairs, resp, task = [], [], []
    for r in range(n_resp):
        for t in range(tasks):
            i, j = rng.choice(24, size=2, replace=False)
            pairs.append((i, j) if u[i] > u[j] else (j, i))
            resp.append(r)
            task.append(t)
    data = PreferenceData(
        X, np.array(pairs), schema=SCHEMA, respondent=np.array(resp), task=np.array(task)
    )
    return Study("toy", "Toy", SCHEMA, data)


FITTED = [n for n in names(fits=True)]


@pytest.mark.parametrize("name", FITTED)
def test_every_estimator_fits_predicts_and_clones(name: str) -> None:
    """The estimator contract, for every entry with an estimator (no hand-kept list)."""
    spec = get(name)
    study = _study()
    if not_applicable(spec, study) is not None:
        study = dataclasses.replace(study, extras={"true_order": np.zeros((4, 24), dtype=int)})
    model = spec.make()
    assert isinstance(model, Estimator)
    assert clone(model).get_params() == model.get_params()
    assert model.fit(study.data) is model  # fit returns self
    u = model.predict(study.data.X)
    assert u.shape == (study.data.n_items,) and np.isfinite(u).all()
    if spec.respondent_predict:
        v = model.predict(study.data.X, respondent=study.respondents()[0])
        assert v.shape == u.shape and np.isfinite(v).all()


@pytest.mark.parametrize("name", names(pbo=True))
def test_a_strategy_fits_the_model_of_its_entry(name: str) -> None:
    """One name = one model: the PBO rule's surrogate has the entry's (or model_of's)
    estimator parameters."""
    spec = get(name)
    if name.startswith("botorch"):
        pytest.skip("BoTorch's PairwiseGP is not one of our estimators")
    strategy = make_strategy(name)
    want = make_model(name)
    got = strategy.model
    assert type(got) is type(want)
    assert {k: v for k, v in got.get_params().items() if k != "slope_prior"} == {
        k: v for k, v in want.get_params().items() if k != "slope_prior"
    }, spec.name


def test_gp_entries_state_their_parameters_once() -> None:
    """A GP entry's parameters are its estimator's and its EUBO rule's alike; options given
    to either override them (the estimator keeps the entry's others)."""
    default = GPSurrogate().get_params()
    own = {
        n: {k: v for k, v in make_model(n).get_params().items() if v != default[k]}
        for n in names(family="gp", fits=True)
    }
    assert own == {
        "gp": {},
        "gp-ks-static": {"kappasharp": "static"},
        "gp-ks-adaptive": {"kappasharp": "adaptive"},
        "gp-ks-adaptive-eq1": {
            "kappasharp": "adaptive",
            "kappasharp_score_noise_var": EQ1_NOISE_VAR,
        },
        "gp-fixed20": {"kappasharp": "fixed20"},
        "gp-ks-jitter": {"kappasharp": "jitter"},
        "gp-ks-diagonal": {"kappasharp": "diagonal"},
        "gp-ks-metriconly": {"kappasharp": "metriconly"},
        "gp-ks-covonly": {"kappasharp": "covonly"},
    }
    for n, params in own.items():
        rule = make_strategy(n)
        assert rule.name == n and all(getattr(rule.model, k) == v for k, v in params.items())
    tuned = make_model("gp-ks-adaptive-eq1", kappasharp="static")
    assert tuned.kappasharp == "static" and tuned.kappasharp_score_noise_var == EQ1_NOISE_VAR
    assert make_strategy("gp-ks-static", tau=2.0).model.kappasharp_tau == 2.0


def test_entries_say_what_they_need_and_where_they_appear() -> None:
    assert get("dt").tree and get("dt").scope == "respondent"
    assert get("logit-shrink").respondent_predict and not get("logit-pooled").respondent_predict
    for role in ROLES:  # a role's entries, in registry order, as their specs say
        assert names(role=role) == [n for n, s in MODELS.items() if role in s.roles]
    assert all(get(n).tree and get(n).fits for n in names(role="explorer"))
    assert all(get(n).family == "baseline" for n in names(role="choice_baseline"))
    assert all(get(n).strategy is not None for n in names(role="elicitation"))
    assert get("mnl").feature_predict and get("mnl").planned
    assert get("dt-toponly").model_of == "dt" and not get("dt-toponly").fits
    assert get("dt-linear").takes_prior and not get("dt").takes_prior
    study = _study()
    assert "item set" in not_applicable(get("bt-offsets"), study)
    assert "never saw" in not_applicable(get("dt"), study, new_respondents=True)
    assert not_applicable(get("dt-linear"), study, new_respondents=True) is None
    assert "query rule" in not_applicable(get("dt-notop"), study)


def test_panel_models_need_a_panel() -> None:
    """The mixed and latent-class logits need respondents with several choice tasks; they
    predict every respondent (their own choices, or their features and the population)."""
    panel = _study()  # 4 respondents x 6 tasks
    once = _study(n_resp=12, tasks=1)
    assert is_panel(panel) and not is_panel(once)
    pooled = dataclasses.replace(panel, data=dataclasses.replace(panel.data, respondent=None))
    assert not is_panel(pooled)
    for name in ("mixed-logit", "latent-class"):
        spec = get(name)
        assert spec.family == "baseline" and spec.scope == "pooled" and spec.planned
        assert spec.respondent_predict and spec.feature_predict and "panel" in spec.needs
        assert not_applicable(spec, panel) is None
        assert not_applicable(spec, panel, new_respondents=True) is None
        assert "panel" in not_applicable(spec, once) and "panel" in not_applicable(spec, pooled)
        assert "choice_baseline" not in spec.roles  # registry/catalogue.py says why
    # the plan's respondent features explain the latent classes' membership
    lc = make_model("latent-class", case_specific=("age",))
    assert lc.membership == ("age",) and lc.case_specific == ()


def test_register_checks_the_entry() -> None:
    with pytest.raises(ValueError, match="family"):
        register(ModelSpec("x", "X", "", "forest", estimator=dict))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs or roles"):
        register(ModelSpec("x", "X", "", "tree", estimator=dict, roles=frozenset({"menu"})))
    with pytest.raises(ValueError, match="estimator or a strategy"):
        register(ModelSpec("x", "X", "", "tree"))
    assert "x" not in MODELS
    with pytest.raises(KeyError, match="known models"):
        get("nonsense")
    with pytest.raises(KeyError, match="not a PBO method"):
        make_strategy("logit-pooled")


def test_plan_parameters_an_estimator_does_not_take_are_not_passed(monkeypatch) -> None:
    """A planned model of the conditional logit's family (``plan_as="mnl"``) gets the plan's
    alternatives, reference and case-specific variables; the plan's penalty only if it takes
    one (a mixed logit without a ridge is not broken by ``penalty=cv``)."""
    from data_loaders.registry import load_study
    from pbo_core.plan import plan_of
    from pbo_core.registry import MODELS, ModelSpec, make_for

    class NoRidge:
        def __init__(self, *, alternative=None, reference=None, case_specific=(), user_schema=None):
            self.alternative, self.reference = alternative, reference

    spec = ModelSpec(
        "no-ridge", "No ridge", "test", "baseline", scope="pooled", estimator=NoRidge,
        planned=True, plan_as="mnl",
    )  # fmt: skip
    monkeypatch.setitem(MODELS, "no-ridge", spec)
    study = load_study("swissmetro")
    study = dataclasses.replace(study, plan=dataclasses.replace(plan_of(study), penalty="cv"))
    m = make_for("no-ridge", study)
    assert m.alternative == "mode"
    assert make_for("mnl", study).alpha == "cv"


def test_the_botorch_entries_are_there_with_their_extra_and_named_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``botorch-gp*`` register themselves when the optional bench extra is installed;
    without it, asking for one names the extra."""
    import importlib.util

    from pbo_core import registry

    installed = importlib.util.find_spec("botorch") is not None
    assert ("botorch-gp" in MODELS) == installed
    monkeypatch.delitem(MODELS, "botorch-gp", raising=False)
    monkeypatch.setitem(registry.UNAVAILABLE, "botorch-", registry.BOTORCH_EXTRA)
    with pytest.raises(KeyError, match=r"botorch-gp needs the optional bench extra"):
        get("botorch-gp")
    with pytest.raises(KeyError, match="unknown model 'no-such'"):
        get("no-such")
