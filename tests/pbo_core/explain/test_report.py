"""The self-contained HTML report: contents (unit) and offline rendering in Chromium (e2e)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders.cached import load_study_cached
from pbo_core.experiments.cli import main
from pbo_core.explain.report import (
    ReportParts,
    build_report,
    evidence_spec,
    sensitivity_spec,
    study_report,
)
from tests.fixtures.streamlit_server import BROWSER_ARGS, CHROMIUM


@pytest.fixture(scope="module")
def train_parts() -> ReportParts:
    study = load_study_cached("train")
    return study_report(study, study.respondents()[2], commands=["python -m x report"])


def test_report_holds_tree_evidence_sensitivity_and_no_external_resource(train_parts) -> None:
    doc = build_report(train_parts)
    view = train_parts.trees[0][1]
    # the tree as inline SVG, one box per node, every leaf's items by name
    tree_svg = re.search(r'<div class="tree"[^>]*>(<svg.*?</svg>)</div>', doc, re.S)
    assert tree_svg is not None
    assert tree_svg.group(1).count('<g class="node"') == len(view.nodes)
    for n in view.nodes:
        for item in n.items:
            assert item.split(" (")[0] in doc
    # three charts as SVG, each with its Vega-Lite spec beside it
    assert doc.count('<div class="chart"') == 3
    assert doc.count('type="application/vnd.vegalite+json"') == 3
    # the evidence and sensitivity numbers are the computed ones
    ev = train_parts.evidence
    assert f"{100 * ev['heldout'].iloc[0]:.1f}" in doc
    base = train_parts.sensitivity.iloc[0]
    assert f"{base['test acc (%)']:.1f}" in doc
    # nothing is fetched: no src/href to another file, no stylesheet or script source
    assert not re.search(r'\s(src|href)="(?!#)', doc)
    assert "python -m x report" in doc and "numpy" in doc


def test_chart_specs_follow_the_tables() -> None:
    ev = pd.DataFrame(
        {
            "method": ["DT", "GP"],
            "train": [1.0, 0.8],
            "heldout": [0.7, np.nan],
            "ci_low": [0.6, np.nan],
            "ci_high": [0.8, np.nan],
        }
    )
    spec = evidence_spec(ev)
    vals = spec["data"]["values"]
    assert [v["method"] for v in vals] == ["DT", "DT"]  # a method without held-out is left out
    assert vals[0]["lo"] == pytest.approx(60.0) and vals[0]["hi"] == pytest.approx(80.0)
    table = pd.DataFrame(
        {
            "feature removed": ["None (baseline)", "a", "b"],
            "delta test (pp)": [np.nan, -5.0, 1.0],
            "delta test CI low (pp)": [np.nan, -8.0, -2.0],
            "delta test CI high (pp)": [np.nan, -1.0, 3.0],
            "within noise": [None, False, True],
        }
    )
    spec = sensitivity_spec(table)
    effects = {v["feature removed"]: v["effect"] for v in spec["data"]["values"]}
    assert effects == {"a": "accuracy drops", "b": "within noise (CI contains 0)"}


@pytest.mark.e2e
def test_cli_report_renders_offline_in_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing")
    out = tmp_path / "out" / "report.html"
    assert main(["report", "--study", "train", "--out", str(out)]) == 0
    requested: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 900}, offline=True)
            pg = ctx.new_page()

            def block(route) -> None:
                if not route.request.url.startswith("file://"):
                    requested.append(route.request.url)
                    route.abort()
                else:
                    route.continue_()

            pg.route("**/*", block)
            pg.goto(out.as_uri())
            boxes = pg.locator(".tree svg g.node rect")
            assert boxes.count() >= 3
            assert boxes.first.bounding_box()["width"] > 20
            charts = pg.locator(".chart > svg")
            assert charts.count() >= 2
            for k in range(charts.count()):
                box = charts.nth(k).bounding_box()
                assert box is not None and box["width"] > 200 and box["height"] > 80
                # marks drawn: Vega renders points, bars and rules as paths
                assert charts.nth(k).locator("path").count() > 5
            assert "Held-out evidence" in pg.inner_text("body")
            pg.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert requested == []
