"""Human labels in every drawn tree: no snake_case, directions, plurals, special codes."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from data_loaders.registry import StudyUnavailableError, list_studies, load_study
from pbo_core.data import Feature, PreferenceData, Schema
from pbo_core.explain import labels, plural, to_dot, tree_view
from pbo_core.models.dt import DTSurrogate

SNAKE = re.compile(r"\b[a-z0-9]+(?:_[a-z0-9]+)+\b")


def _bundled() -> list[str]:
    keys = []
    for info in list_studies():
        try:
            load_study(info.key)
        except StudyUnavailableError:
            continue
        keys.append(info.key)
    return keys


def _first_data(study) -> PreferenceData:
    if study.data.respondent is None:
        return study.data
    # the respondent with the most comparisons: the deepest tree of the study
    resp, counts = np.unique(study.data.respondent, return_counts=True)
    return study.for_respondent(resp[int(np.argmax(counts))])


@pytest.mark.parametrize("key", _bundled())
def test_no_snake_case_in_any_tree_of_a_bundled_study(key: str) -> None:
    study = load_study(key)
    data = _first_data(study)
    model = DTSurrogate().fit(data)
    view = tree_view(model, data=data, title=study.title)
    texts = " ".join(view.texts())
    dot = to_dot(model, data=data)
    names = {f.name for f in study.schema.features if "_" in f.name}
    codes = {lv for f in study.schema.features for lv in f.levels if "_" in lv}
    for text in (texts, dot, view.to_svg()):
        found = set(SNAKE.findall(text)) & (names | codes)
        assert not found, f"{key}: raw names {sorted(found)[:5]}"
    # every feature label the study displays is free of underscores too
    assert all("_" not in f.display for f in study.schema.features)


def test_pmr_spec_levels_read_as_words() -> None:
    study = load_study("pmr-demo")
    view = tree_view(DTSurrogate().fit(study.data), data=study.data)
    text = " ".join(view.texts())
    assert "Message actionability" in text
    assert "same day triage or call" in text or "emergency or immediate evaluation" in text


def test_ordinal_rules_show_the_direction_of_the_scale() -> None:
    train = load_study("train")
    c = train.schema.names.index("comfort")
    right = labels.describe_threshold(train.schema, c, 0.5, right=True)
    left = labels.describe_threshold(train.schema, c, 0.5, right=False)
    assert right == "Comfort class: 1 (middle) .. 2 (least comfortable)"
    assert left == "Comfort class = 0 (most comfortable)"


def test_plurals_and_singular_units() -> None:
    assert plural(1, "comparison") == "1 comparison"
    assert plural(2, "comparison") == "2 comparisons"
    assert plural(1, "leaf", "leaves") == "1 leaf" and plural(3, "leaf", "leaves") == "3 leaves"
    s = Schema((Feature("contract", "numeric", bounds=(0, 5), unit="years"),))
    assert labels.describe_threshold(s, 0, 1.0, right=True) == "contract >= 1 year"
    assert labels.describe_threshold(s, 0, 2.0, right=True) == "contract >= 2 years"


def test_special_codes_are_spelled_out() -> None:
    elec = load_study("electricity")
    price = elec.schema["price"]
    assert price.format_value(0.0) == "variable rate"
    assert price.format_value(7.0) == "7 ¢/kWh"
    c = elec.schema.names.index("price")
    assert labels.describe_threshold(elec.schema, c, 3.5, right=False).endswith(
        "(or variable rate)"
    )
    assert "variable" not in labels.describe_threshold(elec.schema, c, 3.5, right=True)
    k = elec.schema.names.index("contract")
    assert labels.describe_threshold(elec.schema, k, 0.5, right=False).endswith("(or no contract)")
    # the special codes survive a JSON round trip of the schema
    assert Schema.from_dict(elec.schema.to_dict())["price"].special == ((0.0, "variable rate"),)


def test_categorical_splits_name_the_alternative() -> None:
    schema = Schema((Feature("style", "categorical", levels=("modern", "classic", "other")),))
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (30, 1)).astype(float)
    u = (X[:, 0] == 2).astype(float)
    pairs = np.array([[a, b] if u[a] > u[b] else [b, a] for a, b in rng.integers(0, 30, (80, 2))])
    pairs = pairs[(pairs[:, 0] != pairs[:, 1]) & (u[pairs[:, 0]] != u[pairs[:, 1]])]
    data = PreferenceData(X, pairs, schema=schema)
    view = tree_view(DTSurrogate(max_depth=1).fit(data), data=data)
    root = view.nodes[0]
    assert root.kind == "split" and "style" in root.title
    assert any(line.startswith("(no: style") for line in root.lines)


def test_svg_is_valid_and_every_box_is_drawn() -> None:
    study = load_study("pmr-demo")
    model = DTSurrogate().fit(study.data)
    view = tree_view(model, data=study.data, title="PMR demo")
    root = ET.fromstring(view.to_svg())
    boxes = root.findall(".//{http://www.w3.org/2000/svg}g")
    assert len(boxes) == len(view.nodes) == model.tree_.n_nodes
    shallow = ET.fromstring(view.to_svg(max_depth=2))
    assert len(shallow.findall(".//{http://www.w3.org/2000/svg}g")) < len(boxes)
    # the layout never overlaps two boxes of the same level
    lay = view.layout()
    by_top: dict[float, list[tuple[float, float]]] = {}
    for x, y, w, _h, _c in lay.values():
        by_top.setdefault(y, []).append((x - w / 2, x + w / 2))
    for spans in by_top.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-6 for a, b in itertools.pairwise(spans))


def test_a_path_merges_repeated_conditions_on_one_feature() -> None:
    from pbo_core.data import Feature, Schema
    from pbo_core.rules import describe_path

    s = Schema(
        (
            Feature("age", "numeric", bounds=(18, 80), label="Age"),
            Feature("lvl", "ordinal", levels=("low", "mid", "high", "top"), label="Level"),
            Feature("party", "categorical", levels=("D", "R", "I"), label="Party"),
            Feature("ga", "binary", levels=("no", "yes"), label="GA"),
        )
    )
    # the "Age < 36.5 AND Age < 28.5 AND Age < 23.5"
    assert describe_path(s, [(0, 36.5, (), False), (0, 28.5, (), False), (0, 23.5, (), False)]) == [
        "Age < 23.5"
    ]
    path = [
        (0, 20.5, (), True),
        (1, 0.5, (), True),
        (0, 36.5, (), False),
        (1, 2.5, (), False),
        (2, 0, {1, 2}, True),
        (2, 0, {2}, False),
        (3, 0.5, (), True),
    ]
    assert describe_path(s, path) == [
        "20.5 <= Age < 36.5",
        "Level: mid .. high",
        "Party = R",
        "GA = yes",
    ]
