"""CONTRIBUTING's "a new model" recipe: a model in a module of its own plus one registry
entry, and every default finds it -- the accuracy command, the Tree explorer's held-out
evidence and the sensitivity analysis -- with no other file touched."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest

from pbo_core import registry
from pbo_core.evaluation import plan_evidence_models, plan_sensitivity_models, plan_split

MODULE = '''
"""A toy baseline: utility = minus the first attribute (cheaper is better)."""

import numpy as np

from pbo_core.models.base import Estimator
from pbo_core.registry import ModelSpec, register


class FirstAttribute(Estimator):
    def __init__(self, sign: float = -1.0) -> None:
        self.sign = sign

    def fit(self, data):
        self.n_features_in_ = data.X.shape[1]
        return self

    def predict(self, X, respondent=None):
        return self.sign * np.asarray(X, dtype=float)[:, 0]


register(
    ModelSpec(
        "toy-first",
        "Toy: first attribute",
        "minus the first attribute (a CONTRIBUTING example)",
        "baseline",
        scope="pooled",
        estimator=lambda **kw: FirstAttribute(**kw),
        roles=frozenset({"accuracy", "choice_baseline", "sensitivity"}),
    )
)
'''


@pytest.fixture
def toy(tmp_path: Path):
    path = tmp_path / "toy_model.py"
    path.write_text(textwrap.dedent(MODULE), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("toy_model", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["toy_model"] = module
    spec.loader.exec_module(module)  # its one register(...) call
    yield "toy-first"
    registry.MODELS.pop("toy-first", None)
    sys.modules.pop("toy_model", None)


def test_a_toy_model_is_found_by_every_default(toy: str, capsys, monkeypatch, tmp_path) -> None:
    from data_loaders.cached import load_study_cached
    from pbo_core.experiments import cli
    from pbo_core.experiments.tree_choice import compare_trees

    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path / "home"))
    study = load_study_cached("train")
    # the accuracy command's default models score it beside the others
    assert cli.main(["conjoint-accuracy", "--study", "train", "--respondents", "8",
                     "--json", "-", "--quiet"]) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert toy in summary and 0.0 <= summary[toy]["test_acc_mean"] <= 1.0
    # the Tree explorer's held-out evidence lists it
    split = plan_split(study)
    assert toy in plan_evidence_models(split)
    choice = compare_trees(study, ["dt"], None, n_respondents=8)
    assert toy in set(choice.table["key"])
    # the sensitivity analysis ablates it by default
    assert toy in plan_sensitivity_models(split)


def test_a_new_baseline_is_a_reference_only_by_its_declared_role(toy: str) -> None:
    """The toy is a ``baseline`` scoring best here: it is compared against the best of the
    reference baselines, and becomes the reference only when its entry declares the role."""
    import dataclasses

    from pbo_core.evaluation import best_baseline_of

    summary = {
        "dt": {"family": "tree", "test_acc_mean": 0.80},
        "mnl": {"family": "baseline", "test_acc_mean": 0.70},
        "logit-pooled": {"family": "baseline", "test_acc_mean": 0.72},
        toy: {"family": "baseline", "test_acc_mean": 0.95},
    }
    assert best_baseline_of(summary) == "logit-pooled"
    spec = registry.MODELS[toy]
    registry.register(dataclasses.replace(spec, roles=spec.roles | {"reference"}))
    assert best_baseline_of(summary) == toy
    with pytest.raises(ValueError, match="only a baseline may be a paired-difference reference"):
        registry.register(dataclasses.replace(spec, family="tree", roles={"reference"}))
