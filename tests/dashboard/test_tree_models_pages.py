"""AppTest of the tree models on the Tree explorer and the Feature sensitivity page:
the default is the most accurate tree, linear leaves read in the attributes' units with a
value of time, and the sensitivity page ablates several models side by side.

The registry's ``dt-linear`` is replaced by the same model with the prior strengths its
inner CV picks on Train (fixture ``quick_dt_linear``).
"""

from __future__ import annotations

import pytest

from dashboard._services import trees as tree_svc
from data_loaders.registry import load_study
from pbo_core.registry import get
from tests.dashboard.test_pages import charts, metrics, no_exception, texts, tree_text
from tests.dashboard.test_pages import trees as tree_views


@pytest.fixture
def quick_models(monkeypatch: pytest.MonkeyPatch, quick_dt_linear: None) -> None:
    monkeypatch.setattr(tree_svc, "CHOICE_RESPONDENTS", 7)  # also a part of the job key
    monkeypatch.setenv("DTPBO_NO_TREE_CHOICE", "0")  # the comparison on
    # jobs run inline (conftest), so the quick dt-linear above applies (the worker
    # processes themselves: tests/dashboard/test_jobs.py)


def _model_box(at):
    return next(s for s in at.selectbox if s.label == "Model")


def test_tree_explorer_defaults_to_the_best_tree_and_reads_in_units(app, quick_models) -> None:
    at = app("tree_explorer", sel_study="train")
    # inline jobs: the comparison and the winner's fit are done in the first run
    no_exception(at)
    assert "with the best held-out accuracy on this study" in texts(at)
    at.session_state["te_view"] = "Held-out evidence"
    at.run()
    ev = at.dataframe[0].value
    ev["method"] = ev["model"].str.replace("  ◀ shown above", "")
    assert {"Paper DT (constant leaves)", "Linear-leaf tree (dt-linear)"} <= set(ev["method"])
    # the baselines beside the trees
    assert {get("logit-shrink").label, get("logit-pooled").label} <= set(ev["method"])
    # the page opens on the study-level model: the most accurate pooled tree
    pooled = [n for n in tree_svc.names(role="explorer") if get(n).scope == "pooled"]
    trees_only = ev[ev["method"].isin([get(n).label for n in pooled])]
    best = trees_only.loc[trees_only["held-out (%)"].astype(float).idxmax(), "method"]
    assert get(_model_box(at).value).label == best
    # the row of the model shown is marked (one truth: the table names the tree drawn)
    assert ev.loc[ev["model"].str.endswith("◀ shown above"), "method"].tolist() == [best]
    for ci, mean in zip(ev["95% CI (%)"], ev["held-out (%)"], strict=True):
        if ci == "—":  # not scored: the reason instead of numbers, never "nan"
            continue
        lo, hi = (float(x) for x in ci.split(" – "))
        assert 0 <= lo <= float(mean) <= hi <= 100
    # the linear-leaf tree: slopes in guilders and hours, the value of time
    _model_box(at).set_value("dt-linear").run()
    at.session_state["te_view"] = "Tree"
    at.run()
    no_exception(at)
    (view,) = tree_views(at)
    words = tree_text(view)
    assert "per guilder [95% CI " in words and "per hour [95% CI " in words
    assert "Value of time (money: Price): " in words and "overall value of time" in view["title"]
    assert "respondent" not in view["title"].replace("respondents)", "")  # the whole study
    # said once, in the title: a value of time that is not identified is in no box
    assert all("not identified" not in t for n in view["nodes"] for t in n["lines"])

    # the study-level leaves hold the study's items; one respondent's leaves theirs
    def counts(v):
        return [
            0 if n["details"][1].startswith("no ") else int(n["details"][1].split()[0])
            for n in v["nodes"]
            if n["kind"] == "leaf"
        ]

    assert sum(counts(view)) == load_study("train").data.n_items
    at.session_state["te_scope::train"] = "One respondent"
    at.run()
    no_exception(at)
    (view,) = tree_views(at)
    resp = next(s for s in at.selectbox if s.label.startswith("Respondent")).value
    assert f"respondent {resp}'s leaves on the study's splits" in view["title"]
    assert sum(counts(view)) == load_study("train").for_respondent(resp).n_items
    at.session_state["te_view"] = "Leaves"
    at.run()
    leaves, trade = at.dataframe[0].value, at.dataframe[1].value
    assert leaves["slopes (utility per unit)"].str.contains("per guilder").all()
    col = "value of time (money: Price) [95% CI]"
    assert leaves[col].str.contains("guilders per hour|not identified").all()
    assert list(trade["leaf"])[len(leaves)] == "overall"
    assert set(trade["interval"]) <= {
        "Fieller",
        "not identified (the Price slope's CI includes 0)",
    }
    assert set(trade["money attribute"]) == {"Price"}
    # an unidentified value of time has no number anywhere: only the reason
    unidentified = trade[trade["interval"] != "Fieller"]
    assert unidentified["value [95% CI]"].str.startswith("not identified").all()
    # the page's money and travel-time attributes: the analysis plan's, then chosen
    money = next(s for s in at.selectbox if s.label.startswith("Money attribute"))
    assert money.value == "price" and "set by the study's loader" in money.proto.help
    travel = next(s for s in at.selectbox if s.label.startswith("Travel-time attribute"))
    assert travel.value == "time"
    travel.select_index(len(travel.options) - 1).run()  # none: no value of time
    no_exception(at)
    trade = at.dataframe[1].value
    assert "value of time" not in set(trade["trade-off"])
    at.session_state["te_view"] = "Tree"
    at.run()
    no_exception(at)
    assert "value of time" not in tree_views(at)[0]["title"]
    at.session_state["te_view"] = "Leaves"
    at.run()
    no_exception(at)
    travel = next(s for s in at.selectbox if s.label.startswith("Travel-time attribute"))
    travel.set_value("time").run()
    money = next(s for s in at.selectbox if s.label.startswith("Money attribute"))
    money.set_value("time").run()
    trade = at.dataframe[1].value
    assert set(trade["money attribute"]) == {"Travel time"}
    # minutes per guilder, per level, ...: every ratio divides by travel time now
    assert trade["value [95% CI]"].str.contains("min per|not identified").all()
    money = next(s for s in at.selectbox if s.label.startswith("Money attribute"))
    money.select_index(len(money.options) - 1).run()  # the last option: none
    no_exception(at)
    assert len(at.dataframe) == 1  # no trade-offs without a money attribute
    assert "Value of time (overall" not in texts(at)


def test_sensitivity_ablates_the_default_models_side_by_side(app, quick_models) -> None:
    at = app("sensitivity", sel_study="train")
    at.slider(key="fs_n::train").set_value(4).run()
    no_exception(at)
    chosen = at.multiselect(key="fs_methods::train").value
    # the trees, the best baseline on the split (the accuracy command's rule) and the plan's
    assert chosen[:2] == ["dt", "dt-linear"] and chosen[-1] == "mnl" and len(chosen) in (3, 4)
    assert all(get(m).family == "baseline" for m in chosen[2:])
    table = at.dataframe[0].value
    assert list(dict.fromkeys(table["method"])) == chosen  # one block per model
    for m in chosen:
        block = table[table["method"] == m]
        assert block["feature removed"].iloc[0] == "None (baseline)"
        assert len(block) == 5  # baseline + 4 attributes
    assert len(charts(at)) == len(chosen)
    # the registry's names, as on every page
    assert {get("dt").label, get("dt-linear").label} <= set(metrics(at))
    assert metrics(at)["Respondents"] == "4"
    at.multiselect(key="fs_methods::train").set_value(["logit-shrink"]).run()
    assert len(charts(at)) == 1 and set(at.dataframe[0].value["method"]) == {"logit-shrink"}


def test_tree_explorer_names_the_linear_leaf_trees_cv_sample(app, monkeypatch) -> None:
    """The linear-leaf tree's strengths come from a CV scored on a sample of respondents
    (the registry's cost bound): the page says which strengths and how many of whom."""
    import dataclasses

    from pbo_core.models.linear_leaves import LinearLeafDTSurrogate
    from pbo_core.registry import DT_LINEAR, MODELS

    small = {**DT_LINEAR, "cv_respondents": 8, "shrinkages": (0.0, 3.0), "slope_ratios": (1, 0.01)}
    spec = dataclasses.replace(
        MODELS["dt-linear"], estimator=lambda **kw: LinearLeafDTSurrogate(**{**small, **kw})
    )
    monkeypatch.setitem(MODELS, "dt-linear", spec)
    at = app("tree_explorer", sel_study="train")
    _model_box(at).set_value("dt-linear").run()
    no_exception(at)
    n = len(load_study("train").respondents())
    words = texts(at)
    assert "Strengths chosen by 5-fold cross-validation over choice tasks" in words
    assert f"scored on the held-out tasks of a random 8 of the {n:,} respondents" in words
