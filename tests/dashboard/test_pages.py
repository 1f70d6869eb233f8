"""AppTest tests of every dashboard page: it loads, its widgets change what is shown, and
missing data give the help text instead of a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dashboard.pages
from dashboard import _services as svc
from dashboard._services import jobs
from data_loaders.registry import load_study
from pbo_core.registry import get
from tests.dashboard._answers import answer_button
from tests.dashboard._shown import shown
from tests.fixtures.synthetic import write_sushi_tiny

PAGES = tuple(Path(script).stem for script, _, _ in dashboard.pages.PAGES)


# ----------------------------------------------------------------------------- helpers
def dots(at: Any) -> list[str]:
    """DOT sources of the Graphviz charts on the page."""
    return [g.proto.spec for g in at.get("graphviz_chart")]


def trees(at: Any) -> list[dict]:
    """The interactive trees on the page: their JSON (nodes) with the view options
    under ``"_opts"`` (parsed from the iframe the tree view ships)."""

    def block(doc: str, name: str) -> Any:
        a = doc.index(f'id="{name}">') + len(f'id="{name}">')
        return json.loads(doc[a : doc.index("</script>", a)].replace("<\\/", "</"))

    out = []
    for el in at.get("iframe"):
        doc = el.proto.srcdoc
        if 'id="tree-data"' in doc:
            tree = block(doc, "tree-data")
            tree["_opts"] = block(doc, "tree-opts")
            out.append(tree)
    return out


def tree_text(tree: dict) -> str:
    """Every text of a tree view: title, box lines, item lists, tooltips, edge labels."""
    parts = [tree["title"]]
    for n in tree["nodes"]:
        parts += [n["title"], *n["lines"], *n["summary"], *n["items"], n["tooltip"], n["edge"]]
        parts += n.get("details", [])  # every line of a box (on click; compact boxes show less)
    return "\n".join(parts)


def charts(at: Any) -> list[dict]:
    """Vega-Lite specs of the Altair charts on the page, with their data sets attached
    (Streamlit ships them as Arrow tables next to the spec) under ``"_rows"``."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    out = []
    for c in at.get("vega_lite_chart"):
        spec = json.loads(c.proto.spec)
        rows: list[dict] = []
        for ds in c.proto.datasets:
            rows += convert_arrow_bytes_to_pandas_df(ds.data.data).to_dict("records")
        spec["_rows"] = rows
        out.append(spec)
    return out


def chart_data(spec: dict) -> list[dict]:
    """All rows of the data sets of a chart (see :func:`charts`)."""
    return spec["_rows"]


def metrics(at: Any) -> dict[str, str]:
    """Metric label -> displayed value."""
    return {shown(m.label): shown(m.value) for m in at.metric}


def texts(at: Any) -> str:
    """Every message-like text on the page, joined."""
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success"):
        parts += [shown(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def no_exception(at: Any) -> None:
    """No exception on the page; else its message and the last frames of its trace."""
    assert not at.exception, [(e.value, list(e.stack_trace)[-4:]) for e in at.exception]


def sushi_dir(tmp_path: Path, n_users: int = 60) -> Path:
    folder = tmp_path / "sushi3-2016"
    write_sushi_tiny(folder, n_users=n_users, seed=3)
    return folder


# ----------------------------------------------------------------------------- all pages
@pytest.mark.parametrize("page", PAGES)
def test_every_page_loads_on_bundled_data(app, page: str) -> None:
    at = app(page)
    no_exception(at)
    assert at.title[0].value


@pytest.mark.slow
def test_warm_page_switches_run_cleanly(app) -> None:
    at = app()
    for page in PAGES:  # warm every cache
        at.switch_page(f"views/{page}.py").run()
    for page in PAGES:
        at.switch_page(f"views/{page}.py").run()
        no_exception(at)
        assert at.title[0].value
    # their wall time (target < 2 s each) is measured by tests/benchmarks/apptest_switches.py


# ----------------------------------------------------------------------------- case studies
def test_case_studies_lists_the_registry_and_counts_change(app) -> None:
    from data_loaders.registry import list_studies

    at = app("case_studies", sel_study="train")
    (overview,) = [m.value for m in at.markdown if m.value.startswith("| study |")]
    rows = overview.splitlines()[2:]  # below the header and its rule
    listed = {row.split(" | ")[0].removeprefix("| ").replace("\\", "") for row in rows}
    # licences in short (one line per study), the picked study's in full below
    train_row = next(r for r in rows if r.startswith("| train |"))
    assert train_row.endswith("| MIT |")
    details = next(m.value for m in at.markdown if "- **Licence:**" in m.value)
    assert re.search(r"- \*\*Licence:\*\* MIT \(.+\)\n", details.replace("\\", ""))
    assert listed == {s.key for s in list_studies()}
    assert metrics(at) == {"Respondents": "235", "Items": "1,785", "Comparisons": "2,929"}
    at.selectbox(key="cs_study").select("electricity").run()
    no_exception(at)
    assert metrics(at)["Items"] == "35"
    assert "Revelt" in texts(at)  # citation shown
    at.selectbox(key="cs_study").select("pmr-demo").run()
    assert metrics(at)["Respondents"] == "1"


def test_respondent_choice_is_shared_with_the_tree_explorer(app) -> None:
    at = app("case_studies", sel_study="electricity")
    at.selectbox(key="cs_resp::electricity").select(5).run()
    no_exception(at)
    assert "Respondent 5:" in texts(at)
    at.switch_page("views/tree_explorer.py").run()
    # the Tree explorer opens on the whole study; its respondent view shows the one picked
    title = trees(at)[0]["title"]
    assert "whole study" in title and "respondent" not in title.replace("respondents)", "")
    at.session_state["te_scope::electricity"] = "One respondent"
    at.run()
    no_exception(at)
    assert at.selectbox(key="te_resp::electricity").value == 5
    assert "respondent 5's personal tree" in trees(at)[0]["title"]


def test_missing_sushi_shows_how_to_get_it(app, tmp_path, monkeypatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("DTPBO_SUSHI_DIR", str(empty))
    at = app("case_studies", sel_study="sushi-a")
    no_exception(at)
    assert "not available" in texts(at)
    assert "kamishima.net/sushi" in texts(at)
    assert not at.metric  # no counts for a study that did not load


def test_sidebar_path_makes_sushi_available(app, tmp_path) -> None:
    folder = sushi_dir(tmp_path, n_users=30)
    at = app("case_studies", sel_study="sushi-a")
    assert "not available" in texts(at)
    at.text_input(key="path_sushi").input(str(folder)).run()
    no_exception(at)
    assert metrics(at)["Respondents"] == "30"
    assert "configured in the sidebar" in texts(at)


def test_wrong_sidebar_path_is_reported(app, tmp_path) -> None:
    at = app("case_studies", sel_study="bela")
    at.text_input(key="path_bela").input(str(tmp_path / "nope.csv")).run()
    no_exception(at)
    assert "does not exist" in texts(at)


# ----------------------------------------------------------------------------- tree explorer
def test_tree_explorer_controls_change_the_tree(app) -> None:
    at = app("tree_explorer", sel_study="electricity")
    (tree,) = trees(at)
    full = tree_text(tree)
    assert "comparisons" in full and "utility" in full
    assert tree["_opts"]["max_depth"] is None
    depth = next(s for s in at.slider if s.label.startswith("Max depth"))
    assert depth.value >= 2
    depth.set_value(1).run()
    no_exception(at)
    (shallow,) = trees(at)
    assert shallow["_opts"]["max_depth"] == 1  # deeper subtrees start collapsed
    root = shallow["nodes"][0]
    assert root["summary"][0].endswith("leaves (collapsed)")
    leaves_before = int(metrics(at)["Leaves"])
    at.slider(key="te_prune").set_value(12).run()
    assert int(metrics(at)["Leaves"]) < leaves_before  # pruned refit
    # follow an item: its path is marked and its leaf is explained
    assert not any(n["on_path"] for n in trees(at)[0]["nodes"])
    at.selectbox(key="te_item::electricity::None").select(0).run()
    on_path = [n for n in trees(at)[0]["nodes"] if n["on_path"]]
    assert on_path and on_path[-1]["kind"] == "leaf"
    assert "is in leaf" in texts(at)
    labels = [b.label for b in at.get("download_button")]
    assert {"Download SVG", "Download PNG", "Download DOT", "Download JSON"} <= set(labels)


def test_tree_explorer_draws_the_tree_while_many_items_are_named(app, monkeypatch) -> None:
    """Many items are named by a job: the first view waits for no naming, its tree lists
    the items by id meanwhile beside the naming's progress; following an item and the
    Items tab wait for the names."""
    title = "Naming the 60 items and formatting their attributes"

    def naming(study, respondent):
        return jobs.Job("names", title, print, (), state="running", fraction=0.4, step="labels")

    monkeypatch.setattr(svc, "texts_job", naming)
    at = app("tree_explorer", sel_study="pmr-demo")
    no_exception(at)
    (tree,) = trees(at)
    items = [i for n in tree["nodes"] if n["kind"] == "leaf" for i in n["items"]]
    ids = {str(i) for i in load_study("pmr-demo").data.ids()}
    assert len(items) == 60 and {i.split(" (")[0] for i in items} == ids  # by id
    assert any(title in b.proto.text for b in at.get("progress"))
    follow = next(s for s in at.selectbox if s.label.startswith("Follow an item"))
    assert follow.proto.disabled and follow.options == ["(none)"]
    at.session_state["te_view"] = "Items"
    at.run()
    no_exception(at)
    assert not at.dataframe and any(title in b.proto.text for b in at.get("progress"))


def test_tree_leaves_name_their_items_with_wins_and_losses(app) -> None:
    at = app("tree_explorer", sel_study="pmr-demo")
    (tree,) = trees(at)
    leaves = [n for n in tree["nodes"] if n["kind"] == "leaf"]
    assert sum(len(n["items"]) for n in leaves) == 60  # every message in some leaf
    big = max(leaves, key=lambda n: len(n["items"]))
    import re

    assert re.fullmatch(r"[AB]\d\d — .+ \(won \d+, lost \d+\)", big["items"][0])
    # a compact box: utility, item count and one example item (every item on click)
    assert len(big["lines"]) <= 3 and f"{len(big['items'])} items" in big["lines"]
    assert big["lines"][-1].startswith("e.g. " + big["items"][0][:3])
    at.session_state["te_detail"] = "full"  # every line and the first items
    at.run()
    full = max(
        (n for n in trees(at)[0]["nodes"] if n["kind"] == "leaf"), key=lambda n: len(n["items"])
    )
    if len(full["items"]) > 3:
        assert f"and {len(full['items']) - 3} more" in full["lines"]
    at.session_state["te_detail"] = "compact"
    # leaves are numbered in rank order: leaf 1 is the best
    best = max(leaves, key=lambda n: float(n["lines"][0].split()[1]))
    assert best["title"].startswith("Leaf 1")
    at.session_state["te_view"] = "Leaves"
    at.run()
    table = at.dataframe[0].value
    assert list(table["leaf"]) == sorted(table["leaf"]) and table["leaf"].iloc[0] == 1
    assert table["item names (won/lost)"].str.contains("A01 — ").sum() == 1


def test_tree_explorer_estimates_tab_is_the_command_table(app, capsys) -> None:
    """The Estimates tab shows the plan's estimates model as ``estimates`` prints it: the
    same values (4+ significant digits), statistics, penalty and trade-offs."""
    from pbo_core.experiments import cli

    at = app("tree_explorer", sel_study="train", te_view="Estimates")
    no_exception(at)
    table = at.dataframe[0].value
    assert {"Parameter", "Value", "Rob. Std err", "Rob. t-test", "Clust. Std err"} <= set(
        table.columns
    )
    capsys.readouterr()
    assert cli.main(["estimates", "--study", "train", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for row, ref in zip(table.to_dict(orient="records"), doc["parameters"], strict=True):
        assert row["Parameter"] == ref["parameter"]
        assert row["Value"] == pytest.approx(ref["estimate"], rel=1e-12)
        assert row["Rob. Std err"] == pytest.approx(ref["robust_std_err"], rel=1e-12)
    text = texts(at)
    assert f"{doc['statistics']['loglik']:.3f}" in text and "Rho-square" in text
    assert "none (maximum likelihood)" in text and "Plan: split" in text
    assert doc["value_of_time"]["text"] in text  # the trade-offs, as the JSON words them
    labels = [b.label for b in at.get("download_button")]
    assert {"Download CSV", "Download LaTeX", "Download HTML", "Download JSON"} <= set(labels)


def test_tree_explorer_estimates_refuses_a_model_without_statistics(app) -> None:
    import dataclasses

    from data_loaders.plans import save_plan
    from data_loaders.registry import load_study
    from pbo_core.plan import plan_of

    study = load_study("train")
    save_plan("train", dataclasses.replace(plan_of(study), estimates="logit-pooled"))
    at = app("tree_explorer", sel_study="train", te_view="Estimates")
    no_exception(at)
    assert "has no coefficient table with fit statistics" in texts(at)


def test_split_tooltips_explain_straddlers(app) -> None:
    at = app("tree_explorer", sel_study="pmr-demo")
    root = trees(at)[0]["nodes"][0]
    assert "straddled the split" in root["tooltip"] and "not passed down" in root["tooltip"]


def test_tree_explorer_held_out_evidence_with_baselines(app, monkeypatch, quick_dt_linear) -> None:
    from dashboard._services import trees as tree_svc

    monkeypatch.setattr(tree_svc, "CHOICE_RESPONDENTS", 5)  # the study-level table: small
    at = app(
        "tree_explorer",
        sel_study="electricity",
        te_view="Held-out evidence",
        **{"te_scope::electricity": "One respondent"},
    )
    no_exception(at)
    models = at.dataframe[0].value  # the tree models and baselines on the study
    names = set(models["model"].str.replace("  ◀ shown above", ""))
    assert {"Linear-leaf tree (dt-linear)", "Logit per respondent, shrunk"} <= names
    assert get("mnl").label in names  # the econometrician's baseline beside the trees
    assert "held-out respondents" in models.columns and "nan" not in models.to_string()
    table = at.dataframe[1].value  # the model shown on the respondent's own data
    shown = next(s for s in at.selectbox if s.label == "Model").value
    assert table["model"].iloc[0] == f"{get(shown).label}  ◀ shown above"
    assert get("mnl").label in set(table["model"])
    assert f"The model shown ({get(shown).label})" in texts(at)
    ci = table["95% CI (%)"].iloc[0]
    lo, hi = ci.split(" – ") if "–" in ci else (0, 0)
    assert float(lo) <= float(table["held-out (%)"].iloc[0]) <= float(hi)
    # the respondent's held-out comparisons (the plan's hold-out: 2 tasks of 3 each)
    assert (table["held-out comparisons"] == table["held-out comparisons"].iloc[0]).all()
    spec = charts(at)[0]
    assert {"held-out (95% CI)", "training"} <= {r.get("kind") for r in chart_data(spec)}
    at.session_state["te_view"] = "Tree"
    at.run()
    no_exception(at)
    # the comparison is done: the line above the tree gives the shown model's held-out
    # figure beside the baseline's
    line = next(
        c.value.replace("\\", "") for c in at.caption if "Held\\-out accuracy\\:" in c.value
    )
    assert f"{get('mnl').label} " in line and "% [" in line and "held-out comparisons" in line


#: Streamlit's input widgets, as AppTest names them (none in the presentation view).
INPUT_WIDGETS = (
    "selectbox",
    "multiselect",
    "slider",
    "select_slider",
    "text_input",
    "text_area",
    "number_input",
    "checkbox",
    "toggle",
    "radio",
    "button",
    "download_button",
    "button_group",
    "tabs",
    "file_uploader",
)


def test_the_tree_explorer_opens_on_the_study_and_presents_without_controls(app) -> None:
    """The first view is the whole study (no respondent named), its pickers and settings
    in the sidebar; ?present=1 draws the tree, its caption and the evidence line, and no
    input widget; the switch into it writes the parameter."""
    at = app("tree_explorer", sel_study="electricity")
    no_exception(at)
    (tree,) = trees(at)
    assert tree["title"].startswith("Electricity suppliers") and "whole study" in tree["title"]
    assert "respondent " not in tree["title"]
    assert tree["detail"] == "compact" and tree["_opts"]["bare"] is False
    sidebar_keys = {getattr(w, "key", None) for w in at.sidebar.selectbox}
    assert {"te_study", "te_model::electricity::dt"} <= sidebar_keys
    assert not [w for w in at.main.selectbox if str(w.key).startswith("te_")]  # no picker
    assert any(c.value.startswith("Held\\-out accuracy\\:") for c in at.main.caption)
    at.toggle(key="te_present").set_value(True).run()
    assert at.query_params.get("present") == "1"

    shown = app(query={"present": "1", "study": "electricity"})
    shown.query_params.pop("respondent", None)  # (the first page, Case studies, names one)
    shown.switch_page("views/tree_explorer.py").run()
    no_exception(shown)
    drawn = {kind: len(shown.get(kind)) for kind in INPUT_WIDGETS if shown.get(kind)}
    assert drawn == {}, drawn
    (tree,) = trees(shown)
    assert tree["_opts"]["bare"] is True and "whole study" in tree["title"]
    captions = [c.value for c in shown.caption]
    assert any(c.startswith("Held\\-out accuracy\\:") for c in captions)
    assert "leaf 1 is the best" in texts(shown)
    # a respondent named in the link: their personal tree, still without controls
    one = app("tree_explorer", query={"present": "1", "study": "electricity", "respondent": "5"})
    no_exception(one)
    assert "respondent 5's personal tree" in trees(one)[0]["title"]
    assert not [k for k in INPUT_WIDGETS if one.get(k)]


def test_tree_explorer_flags_sensitive_splits(app) -> None:
    at = app("tree_explorer", sel_study="electricity")
    assert "sensitive attribute" not in tree_text(trees(at)[0])
    root = trees(at)[0]["nodes"][0]["title"]  # the root node's question names its feature
    feature = next(
        f
        for f in ("price", "contract", "local", "known", "time_of_day", "seasonal")
        if at.multiselect[0].format_func(f).split()[0] in root
    )
    at.multiselect[0].set_value([feature]).run()
    no_exception(at)
    assert "sensitive attribute" in tree_text(trees(at)[0])
    assert "splits on sensitive attribute" in texts(at)


def test_tree_explorer_flags_presidential_attributes_by_default(app, tmp_path, monkeypatch) -> None:
    from tests.fixtures.synthetic import presidential_frame

    path = tmp_path / "cand_s2_MTurk.csv"
    mapping = _presidential_mapping()
    presidential_frame(mapping, 6, seed=1).to_csv(path, index=False)
    monkeypatch.setenv("DTPBO_PRESIDENTIAL_PATH", str(path))
    at = app("tree_explorer", sel_study="presidential")
    no_exception(at)
    flagged = at.multiselect(key="te_sensitive::presidential").value
    assert {"gender", "race", "religion"} <= set(flagged)
    assert "gay_marriage" not in flagged
    assert trees(at)


def _presidential_mapping() -> dict:
    from data_loaders import presidential

    text = (Path(presidential.__file__).parent / "data" / "presidential_levels.json").read_text()
    return json.loads(text)


def test_tree_explorer_straddler_variants_full_width(app) -> None:
    at = app("tree_explorer", sel_study="train", te_view="Straddlers: discard vs keep")
    assert len(trees(at)) == 2  # discard and keep variants (other tabs are not rendered)
    assert "discard" in texts(at) and "keep" in texts(at)


def test_tree_explorer_pooled_study_downloads(app) -> None:
    at = app("tree_explorer", sel_study="pmr-demo")
    assert "Pooled data" in texts(at)
    assert int(metrics(at)["Comparisons"]) == 870
    labels = [b.label for b in at.get("download_button")]
    assert "Download SVG" in labels and "Download PNG" in labels


def test_png_export_needs_no_system_tools() -> None:
    import xml.etree.ElementTree as ET

    from dashboard import _services as svc
    from data_loaders.registry import load_study
    from pbo_core.models.dt import DTSurrogate

    data = load_study("pmr-demo").data
    view = svc.tree_view(DTSurrogate(max_depth=3).fit(data), data, title="t")
    svg = view.to_svg()
    root = ET.fromstring(svg)
    assert root.tag.endswith("svg") and len(root.findall(".//{*}g")) == len(view.nodes)
    png = svc.svg_to_png.__wrapped__(svg)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width = int.from_bytes(png[16:20], "big")
    assert width >= 2 * float(root.get("width")) - 2  # scale 2


# ----------------------------------------------------------------------------- sensitivity
@pytest.mark.slow
def test_sensitivity_table_and_bars(app) -> None:
    at = app("sensitivity", sel_study="electricity")
    at.slider(key="fs_n::electricity").set_value(3).run()
    no_exception(at)
    blocks = at.dataframe[0].value
    assert blocks["method"].iloc[0] == "dt"  # the paper DT's block first
    table = blocks[blocks["method"] == "dt"].reset_index(drop=True)
    assert table["feature removed"].iloc[0] == "None (baseline)"
    assert len(table) == 7  # baseline + 6 features
    spec = charts(at)[0]
    bars, zero, ci = spec["layer"]
    assert bars["encoding"]["x"]["field"] == "delta test (pp)"
    assert zero["mark"]["type"] == "rule"  # the "no change" line at 0
    assert ci["mark"]["type"] == "errorbar"  # 95% CI over respondents
    rows = [r for r in chart_data(spec) if "feature removed" in r]
    assert {r["feature removed"] for r in rows} == set(table["feature removed"][1:])
    assert "Time-of-day rates" in set(table["feature removed"])  # labels, not names
    for r in rows:
        inside = r["delta test CI low (pp)"] <= 0 <= r["delta test CI high (pp)"]
        noise = ("within noise (CI contains 0)", "underpowered (cannot detect 5 pp)")
        assert (r["effect"] in noise) == inside  # underpowered: only an interval with 0
    before = table.copy()
    at.number_input(key="fs_tasks::electricity").set_value(4).run()  # the plan's 2 -> 4
    after = at.dataframe[0].value
    assert not after[after["method"] == "dt"].reset_index(drop=True).equals(before)
    assert metrics(at)["Respondents"] == "3"


@pytest.mark.slow
def test_sensitivity_pmr_uses_its_inbox_split(app, quick_dt_linear) -> None:
    at = app("sensitivity", sel_study="pmr-demo")
    no_exception(at)
    assert metrics(at)["Respondents"] == "1"
    assert at.toggle(key="fs_use_split").value is True


# ----------------------------------------------------------------------------- convergence
def _bench_results(folder: Path, methods=("dt", "dt-literal"), seeds=2) -> None:
    from pbo_core.experiments.bench import run_cell
    from pbo_core.experiments.runner import cell_path

    folder.mkdir(parents=True, exist_ok=True)
    for m in methods:
        for s in range(seeds):
            cell = {"function": "branin", "method": m, "seed": s, "iters": 6, "n_init": 3}
            run_cell({**cell, "noise": 0.0}).to_parquet(cell_path(folder, cell))


def test_convergence_reads_result_folders(app, tmp_path) -> None:
    _bench_results(tmp_path / "results" / "bench")
    at = app("convergence", cv_root_value="results")
    no_exception(at)
    specs = charts(at)
    assert len(specs) == 2  # regret, cumulative time
    methods = {r["method"] for r in chart_data(specs[0])}
    assert methods == {"dt", "dt-literal"}
    at.multiselect(key="cv_b_methods::branin").set_value(["dt"]).run()
    assert {r["method"] for r in chart_data(charts(at)[0])} == {"dt"}
    # mean +- s.e. band over the two seeds
    rows = chart_data(charts(at)[0])
    assert all(r["lo"] <= r["mean"] <= r["hi"] for r in rows)


def test_convergence_runs_a_small_benchmark(app, tmp_path) -> None:
    at = app("convergence", cv_root_value="data_home/results")  # written below the data folder
    assert "No benchmark results" in texts(at)
    at.session_state["cv_view"] = "Run a small benchmark"
    at.run()
    at.multiselect(key="cv_r_methods").set_value(["dt"]).run()
    at.slider(key="cv_r_seeds").set_value(1).run()
    at.slider(key="cv_r_iters").set_value(5).run()
    at.slider(key="cv_r_ninit").set_value(3).run()
    at.button(key="cv_r_run").click().run()
    no_exception(at)
    assert "1 run(s) written" in texts(at)
    out = tmp_path / "data_home" / "results" / "dashboard-bench"
    assert len(list(out.glob("cell-*.parquet"))) == 1
    ran = [j for j in jobs.service().jobs() if j.title.startswith("Running the benchmark")]
    assert [j.state for j in ran] == ["done"]  # a job of the job service, not the script
    assert charts(at)  # curves of the new run
    at.session_state["cv_view"] = "Benchmarks"
    at.run()
    assert "No benchmark results" not in texts(at)  # the Benchmarks tab finds it
    assert len(charts(at)) == 2


def test_convergence_without_sushi_explains(app) -> None:
    at = app("convergence", cv_view="Sushi")
    assert "No Sushi results" in texts(at)
    assert "kamishima.net/sushi" in texts(at)


def test_convergence_runs_sushi_pbo_when_configured(app, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DTPBO_SUSHI_DIR", str(sushi_dir(tmp_path, n_users=8)))
    at = app("convergence", cv_view="Sushi", cv_root_value="data_home/results")
    assert "Sushi is configured" in texts(at)
    at.number_input(key="cv_s_users").set_value(5).run()
    at.number_input(key="cv_s_iters").set_value(3).run()
    at.multiselect(key="cv_s_methods").set_value(["dt"]).run()
    at.button(key="cv_s_run").click().run()
    no_exception(at)
    out = tmp_path / "data_home" / "results" / "sushi-pbo"  # below the data folder only
    assert len(list(out.glob("cell-*.parquet"))) == 5
    assert [j.state for j in jobs.service().jobs() if j.title.startswith("Running sushi")] == [
        "done"
    ]
    assert charts(at)
    assert "Sushi set A" in texts(at)


def test_convergence_runs_wait_for_their_job_with_a_progress_bar(app, monkeypatch) -> None:
    """The page's script never runs a grid: it submits a job and draws its progress."""
    asked = []

    def running(kind, cells, fn, out_dir, title, **kw):
        asked.append((kind, len(cells), kw))
        return jobs.Job("k", title, fn, (), state="running", fraction=0.5, step="runs: 1 of 2")

    monkeypatch.setattr(svc, "grid_job", running)
    at = app("convergence", cv_root_value="data_home/results", cv_view="Run a small benchmark")
    at.multiselect(key="cv_r_methods").set_value(["dt"]).run()
    at.slider(key="cv_r_seeds").set_value(2).run()
    at.button(key="cv_r_run").click().run()
    no_exception(at)
    assert asked == [("bench-run", 2, {"again": True, "steps": 51})]  # 50 queries + design
    bars = at.get("progress")
    assert bars and "Running the benchmark" in bars[0].proto.text
    assert "run(s) written" not in texts(at)
    at.run()  # a rerun keeps waiting for the same job (not asked to start it again)
    assert asked[-1] == ("bench-run", 2, {"again": False, "steps": 51}) and at.get("progress")


def test_convergence_sushi_results(app, tmp_path) -> None:
    rows = []
    for user in range(4):
        for method in ("dt", "gp"):
            for q in range(1, 6):
                rows.append(
                    {
                        "user": user,
                        "method": method,
                        "question": q,
                        "rho_regret": 1.0 / q + 0.1 * user,
                        "top1_error": max(0, 3 - q),
                        "time_s": 0.01,
                    }
                )
    folder = tmp_path / "results" / "sushi-pbo"
    folder.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(folder / "cell-0000.parquet")
    at = app("convergence", cv_view="Sushi", cv_root_value="results")
    no_exception(at)
    assert charts(at) and "Sushi set A: rho regret per question" in texts(at)
    at.radio(key="cv_smetric").set_value("top1_error").run()
    assert "Sushi set A: top1 error per question" in texts(at)


def _small_default_grids(monkeypatch, keep: int) -> None:
    """Cut the default grids to their first ``keep`` cells (same code path, less time)."""
    import dataclasses

    from dashboard._services import defaults

    for name, grid in list(defaults.GRIDS.items()):
        cells = grid.cells()[:keep]
        monkeypatch.setitem(
            defaults.GRIDS, name, dataclasses.replace(grid, cells=lambda c=cells: c)
        )


def test_convergence_first_visit_computes_defaults_once(app, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("DTPBO_NO_DEFAULT_RESULTS")
    _small_default_grids(monkeypatch, keep=6)
    home = tmp_path / "data_home" / "results"
    at = app("convergence")
    no_exception(at)
    assert at.text_input(key="cv_root").value == str(home)  # per-user folder, not checkout
    assert len(charts(at)) == 2  # regret, cumulative time of the default grid
    assert "branin: regret" in texts(at)
    files = sorted((home / "defaults" / "bench").glob("cell-*.parquet"))
    assert len(files) == 6
    assert not (tmp_path / "results").exists()
    stamps = [f.stat().st_mtime_ns for f in files]
    at.session_state["cv_view"] = "rho-regret"
    at.run()
    no_exception(at)
    assert len(charts(at)) == 1 and "rho-regret (top 3) per question" in texts(at)
    assert {r["method"] for r in chart_data(charts(at)[0])} <= {"dt", "gp", "dt-random"}
    assert at.dataframe  # final rho-regret with CIs
    assert "simulated" in texts(at).lower() or "Simulated" in texts(at)
    # a fresh session reuses the stored cells
    at2 = app("convergence")
    assert len(charts(at2)) == 2
    assert [f.stat().st_mtime_ns for f in files] == stamps


# ----------------------------------------------------------------------------- hierarchy
@pytest.mark.slow
def test_hierarchy_first_visit_shows_swissmetro(app, tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("DTPBO_NO_DEFAULT_RESULTS")
    _small_default_grids(monkeypatch, keep=6)  # 1 new respondent x 6 variants
    at = app("hierarchy")
    no_exception(at)
    assert at.selectbox(key="hi_study").value == "swissmetro"
    (whole,) = trees(at)
    assert "Surveyed among" in tree_text(whole)  # the user tree splits respondents
    assert int(metrics(at)["User groups"]) > 1
    (curve,) = charts(at)
    variants = {r["variant"] for r in chart_data(curve)}
    assert variants == {
        "plain",
        "pooled",
        "hierarchy",
        "logit-pooled-update",
        "logit-interaction",
        "hierarchy-mob",
    }
    assert len(list((tmp_path / "data_home" / "results").rglob("cell-*.parquet"))) == 6
    # the segments' slopes in units and the cold start beside the baselines
    frames = {tuple(f.value.columns): f.value for f in at.dataframe}
    seg = next(v for k, v in frames.items() if "value of time [95% CI]" in k)
    assert "Travel time (per min)" in seg.columns and len(seg) >= 1
    assert set(seg["money attribute"]) == {"Cost"}
    text = seg["value of time [95% CI]"]
    ok = text.str.contains(r"CHF per hour \[95% CI ") | text.str.startswith(
        ("not identified", "not shown")
    )
    assert ok.all()
    cold = next(v for k, v in frames.items() if "0 own tasks" in k)
    assert {"logit-interaction", "hierarchy-mob"} <= set(cold["variant"])


def test_hierarchy_without_user_features_explains(app, monkeypatch) -> None:
    # hide the bundled study with respondent features (SwissMetro)
    from dashboard import _services as svc

    real = svc.usable_study_keys
    monkeypatch.setattr(
        svc, "usable_study_keys", lambda pred=None: [k for k in real(pred) if k != "swissmetro"]
    )
    at = app("hierarchy")
    no_exception(at)
    assert "not available" in texts(at)
    assert "DTPBO_SUSHI_DIR" in texts(at)
    assert not dots(at) and not trees(at)


def test_hierarchy_says_when_the_picked_study_has_no_user_features(app) -> None:
    at = app("hierarchy", sel_study="electricity")  # picked on another page: no features
    no_exception(at)
    assert "records no respondent features" in texts(at)
    assert trees(at)  # SwissMetro's hierarchy is shown instead
    at = app("hierarchy", sel_study="swissmetro")
    assert "records no respondent features" not in texts(at)


def test_hierarchy_on_sushi(app, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DTPBO_SUSHI_DIR", str(sushi_dir(tmp_path, n_users=80)))
    folder = tmp_path / "results" / "hierarchy"
    folder.mkdir(parents=True)
    pd.DataFrame(
        {
            "user": np.repeat(np.arange(4), 3),
            "cohort": [0] * 6 + [1] * 6,
            "variant": ["plain", "hierarchy"] * 6,
            "user_leaf": 0,
            "question": np.tile([1, 2, 3], 4),
            "regret": np.linspace(3, 0, 12),
            "rho_regret": np.linspace(1, 0, 12),
        }
    ).to_parquet(folder / "cell-0000.parquet")
    at = app("hierarchy", cv_root_value="results")
    at.selectbox(key="hi_study").select("sushi-a").run()
    no_exception(at)
    (whole,) = trees(at)
    assert {"split", "group", "leaf"} <= {n["kind"] for n in whole["nodes"]}
    assert "User group 0" in tree_text(whole)
    n_groups = int(metrics(at)["User groups"])
    at.slider(key="hi_min").set_value(5).run()
    assert int(metrics(at)["User groups"]) >= n_groups
    assert charts(at)  # cohort regret curves from the results folder
    at.session_state["hi_view"] = "One user group"
    at.run()
    last = at.selectbox(key="hi_group::sushi-a").options[-1]
    at.selectbox(key="hi_group::sushi-a").select(last).run()
    no_exception(at)
    (group,) = trees(at)
    assert "item tree of user group" in group["title"]
    assert "Who:" in texts(at)


# ----------------------------------------------------------------------------- elicitation
def test_elicitation_answers_update_the_tree(app) -> None:
    at = app("elicitation")
    assert metrics(at)["Answers"] == "0"
    first = tree_text(trees(at)[0])
    for side in "ABA":
        answer_button(at, side).click().run()
        no_exception(at)
    assert metrics(at)["Answers"] == "3"
    assert tree_text(trees(at)[0]) != first
    assert "after 3 answers" in tree_text(trees(at)[0])
    at.button(key="el_undo").click().run()
    assert metrics(at)["Answers"] == "2"
    at.session_state["el_view"] = "Answers"
    at.run()
    assert len(at.dataframe[-1].value) == 2  # answers table


def test_elicitation_loads_a_comparison_file(app) -> None:
    at = app("elicitation")
    for side in "AB":
        answer_button(at, side).click().run()
    sess = next(iter(at.session_state["el_sessions"].values()))
    csv = sess.to_frame().to_csv(index=False).encode()
    at.button(key="el_restart").click().run()
    assert metrics(at)["Answers"] == "0"
    at.session_state["el_view"] = "Answers"
    at.run()
    at.file_uploader(key="el_upload").upload("answers.csv", csv, "text/csv").run()
    no_exception(at)
    assert metrics(at)["Answers"] == "2"
    at.file_uploader(key="el_upload").set_value(("bad.csv", b"x,y\n1,2\n", "text/csv")).run()
    assert "Could not load bad.csv" in texts(at)


def test_elicitation_on_a_benchmark_shows_the_partition(app) -> None:
    at = app("elicitation")
    at.radio(key="el_mode").set_value("benchmark").run()
    no_exception(at)
    at.button(key="el_oracle10").click().run()
    no_exception(at)
    assert metrics(at)["Answers"] == "10"
    specs = [c for c in charts(at) if "partition" in str(c.get("title", ""))]
    specs += [c for c in charts(at) if "leaf means" in str(c.get("title", ""))]
    layered = specs[0]
    assert len(layered["layer"]) == 3  # true surface, leaf boxes, points
    roles = {r.get("role") for r in chart_data(layered) if "role" in r}
    assert roles == {"asked", "favourite", "question"}
    leaves = int(metrics(at)["Leaves"])
    assert len([r for r in chart_data(layered) if "leaf" in r]) == leaves  # leaf outlines
    assert len(chart_data(specs[1])) == leaves  # leaves filled by their posterior mean
    assert float(metrics(at)["Regret of the favourite"]) >= 0


def test_elicitation_with_gp_and_pmr_items(app) -> None:
    at = app("elicitation")
    at.selectbox(key="el_method").set_value("gp").run()
    no_exception(at)
    answer_button(at, "A").click().run()
    no_exception(at)
    assert "Leaves" not in metrics(at) and not dots(at)
    assert charts(at)  # predicted utilities of the items
    at.selectbox(key="el_method").set_value("dt").run()
    at.selectbox(key="el_study").set_value("pmr-demo").run()
    no_exception(at)
    at.button(key="el_oracle").click().run()  # the demo inbox has a true urgency
    assert metrics(at)["Answers"] == "1"


def test_elicitation_names_items_and_shows_no_favourite_before_an_answer(app) -> None:
    at = app("elicitation", sel_study="electricity")
    heads = [h.value for h in at.subheader]
    assert any("Which electricity offer would you choose?" in h for h in heads), heads
    shown = texts(at)
    assert "Fixed price" in shown and "none yet" in shown
    assert metrics(at)["Favourite"] == "—"
    assert "+0.00" not in shown
    assert not [c for c in charts(at) if "Favourite after each answer" in str(c.get("title"))]
    answer_button(at, "A").click().run()
    fav = metrics(at)["Favourite"]
    assert "Fixed price" in fav or "Contract" in fav  # a description, not an id
    assert not fav.isdigit()


def test_elicitation_pmr_asks_which_message_is_more_urgent(app) -> None:
    at = app("elicitation")
    at.selectbox(key="el_study").set_value("pmr-demo").run()
    no_exception(at)
    heads = [h.value for h in at.subheader]
    assert any("Which message is more urgent?" in h for h in heads), heads
    assert answer_button(at, "A").label == "A is more urgent"


def test_elicitation_no_preference_skip_and_undo(app) -> None:
    at = app("elicitation")
    answer_button(at, "A").click().run()
    answer_button(at, "tie").click().run()
    no_exception(at)
    assert metrics(at)["Answers"] == "2"
    sess = next(iter(at.session_state["el_sessions"].values()))
    assert sess.actions == ["A", "tie"] and len(sess.pairs) == 3
    before = sess.next_query()
    answer_button(at, "skip").click().run()
    assert metrics(at)["Answers"] == "2" and "1 skipped" in texts(at)
    after = sess.next_query()
    assert {after.index_a, after.index_b} != {before.index_a, before.index_b}
    at.button(key="el_undo").click().run()  # the skip
    assert sess.actions == ["A", "tie"] and sess.next_query().index_a == before.index_a
    at.button(key="el_undo").click().run()  # the tie
    assert metrics(at)["Answers"] == "1"


def test_elicitation_favourite_over_time_chart(app) -> None:
    at = app("elicitation")
    at.radio(key="el_mode").set_value("benchmark").run()
    at.button(key="el_oracle10").click().run()
    (trace,) = [c for c in charts(at) if "Favourite after each answer" in str(c.get("title"))]
    rows = [r for r in chart_data(trace) if "answer" in r and "mean" in r]
    answers = sorted({int(r["answer"]) for r in rows})
    assert answers == list(range(1, 11))
    assert all(r["lo"] <= r["mean"] <= r["hi"] for r in rows)
    sess = next(iter(at.session_state["el_sessions"].values()))
    n_changes = sum(
        a.row != b.row for a, b in zip(sess.favourite_trace, sess.favourite_trace[1:], strict=False)
    )
    assert sum(bool(r["changed"]) for r in rows if "changed" in r) >= n_changes


def test_elicitation_session_survives_a_new_app_run_and_resumes(app) -> None:
    at = app("elicitation")
    for action in ("A", "tie", "B"):
        answer_button(at, action).click().run()
    fav = metrics(at)["Favourite"]
    link = {"session": str(at.query_params["session"])}
    # another visitor (no link, no visitor cookie) starts afresh and sees none of it
    other = app("elicitation")
    assert metrics(other)["Answers"] == "0"
    # the same browser reloads (same visitor cookie, the link in the URL), or the app
    # restarted: same data folder, fresh state
    again = app("elicitation", query=link, dtpbo_visitor=at.session_state["dtpbo_visitor"])
    no_exception(again)
    assert metrics(again)["Answers"] == "3" and metrics(again)["Favourite"] == fav
    again.button(key="el_restart").click().run()
    assert metrics(again)["Answers"] == "0"
    again.session_state["el_view"] = "Sessions"
    again.run()
    from dashboard._services import sessions as store

    (old,) = [r.id for r in store.list_sessions() if r.n_answers == 3]
    assert any("3 answers" in o for o in again.selectbox(key="el_pick_session").options)
    again.selectbox(key="el_pick_session").set_value(old).run()
    again.button(key="el_resume").click().run()
    no_exception(again)
    assert metrics(again)["Answers"] == "3" and metrics(again)["Favourite"] == fav


def test_sidebar_paths_persist_and_a_bad_path_does_not_hide_the_env(
    app, tmp_path, monkeypatch
) -> None:
    folder = sushi_dir(tmp_path)
    monkeypatch.setenv("DTPBO_SUSHI_DIR", str(folder))
    at = app("case_studies", sel_study="sushi-a")
    at.text_input(key="path_sushi").input(str(tmp_path / "nope")).run()
    no_exception(at)
    side = "\n".join(shown(w.value) for w in at.sidebar.warning)
    assert "does not exist: using $DTPBO_SUSHI_DIR" in side
    assert int(metrics(at)["Respondents"]) > 0  # the environment's data still load
    assert "not available" not in texts(at)
    token = at.session_state["dtpbo_visitor"]
    again = app("case_studies", dtpbo_visitor=token)  # this browser's next session
    assert again.text_input(key="path_sushi").value == str(tmp_path / "nope")
    other = app("case_studies")  # another browser: its own (empty) settings
    assert other.text_input(key="path_sushi").value == ""


# ----------------------------------------------------------------------------- PMR
def test_pmr_page_messages_and_urgency_tree(app) -> None:
    at = app("pmr", pmr_view="Messages")
    no_exception(at)
    assert len(at.dataframe[0].value) == 60
    assert any("### Patient Message" in c.value for c in at.code)
    at = app("pmr")  # the page opens on its answer: the urgency tree
    no_exception(at)
    m = metrics(at)
    assert float(m["Test accuracy (inbox B)"].rstrip("%")) > 60
    assert any("urgency tree" in t["title"] for t in trees(at))


def test_pmr_extraction_without_endpoint_says_so(app) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends
    at = app("pmr", pmr_view="Extraction")
    at.text_input(key="pmr_base_url").input(f"http://127.0.0.1:{port}/v1").run()
    at.text_input(key="pmr_model").input("some-model").run()
    secret = "sk-test-DO-NOT-SHOW-123"
    next(t for t in at.text_input if t.label == "API key").input(secret).run()
    at.button(key="pmr_run").click().run()
    no_exception(at)
    assert "No LLM endpoint reachable" in texts(at)
    assert secret not in texts(at)
    assert all(secret not in str(v) for v in at.session_state.values())


def test_pmr_extraction_from_the_cache_scores_against_truth(app, tmp_path) -> None:
    from data_loaders.registry import load_study
    from feature_extraction import ExtractionCache, LLMConfig
    from feature_extraction.extract import Extractor

    study = load_study("pmr-demo")
    spec = study.extras["spec"]
    truth = study.extras["truth"].set_index("message_id")
    texts_ = study.extras["texts"]
    cfg = LLMConfig(model="cached-model")
    with ExtractionCache(tmp_path / "llm_cache.sqlite") as cache:
        ex = Extractor(spec, cfg, cache=cache)
        for mid, text in zip(texts_["message_id"], texts_["text"], strict=True):
            values = {n: truth.loc[mid, n] for n in spec.names}
            values = {k: list(v) if isinstance(v, list | tuple) else v for k, v in values.items()}
            cache.put(ex.key(mid, text), status="ok", values=values)
    at = app("pmr", pmr_view="Extraction")
    at.text_input(key="pmr_model").input("cached-model").run()
    assert "60 of 60 messages are in the cache" in texts(at)
    at.button(key="pmr_run").click().run()  # no endpoint needed: everything is cached
    no_exception(at)
    assert "60 ok" in texts(at) and "60 from the cache" in texts(at)
    at.session_state["pmr_view"] = "Extracted vs truth"
    at.run()
    score = next(d.value for d in at.dataframe if "accuracy" in d.value.columns)
    assert (score["accuracy"] == 1.0).all()
    # the urgency tree can now use the extracted table
    at.session_state["pmr_view"] = "Urgency tree"
    at.run()
    at.radio(key="pmr_src::pmr-demo").set_value("extracted").run()
    no_exception(at)
    assert any("extracted features" in t["title"] for t in trees(at))


def test_pmr_feature_proposals_review(app) -> None:
    from feature_extraction.propose import ProposalRecord

    recs = [
        ProposalRecord(
            round=0,
            status="kept",
            decision="keep",
            proposal={
                "name": "mentions_blood",
                "type": "ordinal",
                "values": ["no", "yes"],
                "description": "The message mentions bleeding.",
                "instruction": "Does the message mention bleeding?",
                "rationale": "Bleeding made messages urgent.",
            },
            baseline_val_accuracy=0.7,
            new_val_accuracy=0.75,
            gain=0.05,
        ),
        ProposalRecord(round=1, status="failed", error="endpoint went away"),
    ]
    blob = json.dumps([r.to_dict() for r in recs]).encode()
    at = app("pmr", pmr_view="Feature proposals")
    at.file_uploader(key="pmr_prop_upload").upload("props.json", blob, "application/json").run()
    no_exception(at)
    assert "mentions_blood" in texts(at)
    assert "endpoint went away" in texts(at)
    at.radio(key="pmr_decision::pmr-demo::0").set_value("accept").run()
    no_exception(at)
    labels = [b.label for b in at.get("download_button")]
    n = len(at.session_state["pmr_proposals::pmr-demo"])
    assert n == 2
    assert any("12 features" in label for label in labels)  # 11 + the accepted one
    # a malformed accepted proposal is reported, not raised
    bad = [{**recs[0].to_dict(), "proposal": {"name": "x", "type": "boolean"}}]
    at.file_uploader(key="pmr_prop_upload").set_value(
        ("bad.json", json.dumps(bad).encode(), "application/json")
    ).run()
    at.radio(key="pmr_decision::pmr-demo::0").set_value("accept").run()
    no_exception(at)
    assert "not a valid spec entry" in texts(at)


def test_pmr_synth_absent_says_how_to_get_it(app) -> None:
    at = app("pmr")
    assert "PMR-Synth-Inboxes is not configured" in [e.label for e in at.expander]
    assert "huggingface.co/datasets/PortalPal-AI/PMR-Synth-Inboxes" in texts(at)


def test_elicitation_with_the_linear_leaf_strategy(app) -> None:
    """dt-linear asks questions on a study (its respondents as prior) and shows its tree."""
    at = app("elicitation")
    at.selectbox(key="el_method").set_value("dt-linear").run()
    no_exception(at)
    for k, side in enumerate("ABA", start=1):
        answer_button(at, side).click().run()
        no_exception(at)
        assert metrics(at)["Answers"] == str(k)
    m = metrics(at)
    assert m["Favourite"] != "—" and int(m["Leaves"]) >= 1


def test_hierarchy_never_shows_another_studys_cohort_curves(app, tmp_path) -> None:
    """Cohort results of SwissMetro (the default grid's files name no study) are not drawn
    under an imported study with respondent features: one sentence says whose they are."""
    import shutil

    from data_loaders import cli as import_cli
    from tests.fixtures.shapes import SHAPES

    shape = SHAPES["one-choice-wide"]
    file = tmp_path / shape.file.name
    shutil.copy(shape.file, file)
    assert import_cli.main(["import-study", str(file), "--title", "Mine", *shape.args]) == 0
    folder = tmp_path / "data_home" / "results" / "hierarchy-swissmetro"
    folder.mkdir(parents=True)
    pd.DataFrame(
        {
            "user": [1, 1],
            "respondent": ["1", "1"],
            "cohort": [1, 1],
            "variant": ["plain", "pooled"],
            "user_leaf": [0, 0],
            "question": [0, 0],
            "test_acc": [0.5, 0.75],
            "n_test_pairs": [2, 2],
        }
    ).to_parquet(folder / "cell-0.parquet")
    at = app("hierarchy", sel_study="my-mine")
    no_exception(at)
    assert at.selectbox(key="hi_study").value == "my-mine"
    assert "No cohort results of Mine in this folder (it holds swissmetro's)" in texts(at)
    assert not [c for c in charts(at) if "variant" in str(c)]


def test_hierarchy_reads_cells_written_before_an_arm_was_renamed(app, tmp_path) -> None:
    """A folder written before the arm had its own name calls the cohort's pooled logit
    ``logit-pooled`` (the registry model's name): its curve and cold-start row are
    ``logit-pooled-update``'s."""
    folder = tmp_path / "data_home" / "results" / "hierarchy-old"
    folder.mkdir(parents=True)
    pd.DataFrame(
        {
            "user": [1] * 4,
            "respondent": ["1"] * 4,
            "cohort": [1] * 4,
            "variant": ["plain", "pooled", "logit-pooled", "logit-interaction"],
            "user_leaf": [0, 0, -1, -1],
            "question": [0] * 4,
            "test_acc": [0.5, 0.75, 0.75, 1.0],
            "n_test_pairs": [2] * 4,
        }
    ).to_parquet(folder / "cell-0.parquet")
    at = app("hierarchy")
    no_exception(at)
    (curve,) = [c for c in charts(at) if "variant" in str(c)]
    variants = {r["variant"] for r in chart_data(curve)}
    assert variants == {"plain", "pooled", "logit-pooled-update", "logit-interaction"}
    frames = {tuple(f.value.columns): f.value for f in at.dataframe}
    cold = next(v for k, v in frames.items() if "0 own tasks" in k).set_index("variant")
    assert cold.loc["logit-pooled-update", "family"] == "baseline"
    assert cold.loc["logit-pooled-update", "0 own tasks"].startswith("0.750 ")


def test_hierarchy_draws_the_choice_model_tree(app, monkeypatch) -> None:
    """The Choice-model tree tab: its respondent splits and segments in the one tree view
    (slopes ± their interval, the value of time of the plan's roles) and a segment table;
    the pre-run estimate of the hierarchy grid above the cohort curves."""
    from dashboard._services import analyses
    from pbo_core.registry import make_for

    def small(study, *, progress=None):  # 300 respondents, unpruned: a tree that splits
        data = study.data
        data = data.select_pairs(np.isin(data.respondent, study.respondents()[:300]))
        return make_for("mnl-tree", study, alpha=1.0, shrinkage=100.0, n_folds=0, max_leaves=3).fit(
            data
        )

    monkeypatch.setattr(analyses, "choice_tree_fit", small)
    at = app("hierarchy")
    no_exception(at)
    assert "hierarchy grid: " in texts(at) and "of CPU" in texts(at)  # before any run
    assert "Segment 1" not in texts(at)  # the tab is not open: nothing fitted
    at.session_state["hi_view"] = "Choice-model tree"
    at.run()
    no_exception(at)
    (tree,) = trees(at)
    kinds = [n["kind"] for n in tree["nodes"]]
    assert kinds.count("leaf") == 3 and kinds.count("split") == 2
    leaves = [n for n in tree["nodes"] if n["kind"] == "leaf"]
    assert {n["title"] for n in leaves} == {"Segment 1", "Segment 2", "Segment 3"}
    for n in leaves:
        lines = "\n".join(n["details"])  # every line: on click, in the tooltip
        assert "respondents" in lines and "Travel time" in lines and " ±" in lines
        assert "Value of time (money: Cost)" in lines
        assert len(n["lines"]) <= 3 and n["lines"][0] == n["details"][0]  # compact box
    assert all(n["title"].endswith("?") for n in tree["nodes"] if n["kind"] == "split")
    frames = {tuple(f.value.columns): f.value for f in at.dataframe}
    seg = next(v for k, v in frames.items() if "who" in k)
    assert len(seg) == 3 and seg["respondents"].sum() == 300
    assert "value of time [95% CI]" in seg.columns
    assert seg.filter(like="Travel time").iloc[:, 0].str.match(r"^-?[\d.e-]+ \([\d.e-]+\)$").all()
    assert "3 segments of 300 respondents" in texts(at)
