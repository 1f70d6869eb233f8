"""One path rule: every page input that names a server path goes through
``data_loaders.access`` (read below the allowed roots, written below the data folder).

The test finds every such input twice: statically (every ``text_input`` call in the
dashboard's code is a registered path input or a known non-path input) and on the pages
(every text input drawn is in ``dashboard._ui.PATH_INPUTS`` or known); then it types the
escapes into each path input and checks that nothing outside is read or written.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.dashboard._shown import shown

DASHBOARD = Path(__file__).resolve().parents[2] / "dashboard"
CANARY = "PATH-CANARY-7f3e"

#: Text inputs that name no server path (key or key prefix -> what they hold).
NOT_PATHS = {
    "el_participant": "participant name",
    "add_alts": "alternatives of a wide file",
    "add_opt_out": "opt-out values",
    "add_feature_label::": "a respondent feature's label",
    "add_title::": "a study title",
    "add_missing": "missing-value codes",
    "add_levels": "what to do with text of many levels",
    "add_fill": "attribute stems of some alternatives",
    "add_avail": "availability column names",
    "add_avail_when": "availability conditions (car: license == 1)",
    "add_units": "attributes' units (TT=min)",
    "add_where": "a row selection (PURPOSE in (1, 3))",
    "add_reference": "the reference alternative",
    "plan_": "the analysis plan's sample sizes and units (Case studies)",
    "add_no_choice": "no-choice values of the chosen column",
    "pmr_model": "an LLM model name",
    "pmr_base_url": "an LLM endpoint address (personal server only; shared: the server's)",
    "API key": "a visitor's API key (by label: it has no key)",
}
#: Path inputs by key prefix (path_input or the sidebar's data locations).
PATHS = ("cv_root", "cv_r_out::", "pmr_cache", "path_")
#: Functions whose ``text_input`` has a computed key and registers it as a path input.
REGISTERING = {("_ui.py", "path_input"), ("app.py", "_data_locations")}
#: Wrappers that draw one text input per call: (file, function, position of the key).
WRAPPERS = {("_study_import.py", "_text_choice", 3)}


def _literal_prefix(v: ast.AST) -> str | None:
    if isinstance(v, ast.Constant):
        return str(v.value)
    if isinstance(v, ast.JoinedStr) and v.values and isinstance(v.values[0], ast.Constant):
        return str(v.values[0].value)
    return None


def _key_of(call: ast.Call, names: dict[str, ast.AST]) -> str | None:
    """The key of a text_input call (its literal prefix; a variable: the string it was
    assigned), else its label when constant."""
    for kw in call.keywords:
        if kw.arg == "key":
            v = names.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
            if isinstance(v, ast.Constant):
                return str(v.value)
            if isinstance(v, ast.JoinedStr) and v.values and isinstance(v.values[0], ast.Constant):
                return str(v.values[0].value)
            return None
    if call.args and isinstance(call.args[0], ast.Constant):
        return str(call.args[0].value)
    return None


def test_every_text_input_in_the_code_is_classified() -> None:
    unknown = []
    for f in DASHBOARD.rglob("*.py"):
        tree = ast.parse(f.read_text())
        names = {
            t.id: n.value
            for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and _literal_prefix(n.value) is not None
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        owners = {}
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef):
                for n in ast.walk(fn):
                    owners.setdefault(id(n), fn.name)
        for call in ast.walk(tree):
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "text_input"
            ):
                continue
            if (f.name, owners.get(id(call))) in REGISTERING:
                continue
            if any((f.name, owners.get(id(call))) == (w[0], w[1]) for w in WRAPPERS):
                continue  # its callers are checked below
            key = _key_of(call, names)
            if key is None or not any(key.startswith(k) for k in NOT_PATHS):
                unknown.append(f"{f.relative_to(DASHBOARD)}:{call.lineno} key={key!r}")
        for call in ast.walk(tree):
            for file, name, pos in WRAPPERS:
                if not (
                    f.name == file
                    and isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Name)
                    and call.func.id == name
                ):
                    continue
                arg = call.args[pos] if len(call.args) > pos else None
                key = str(arg.value) if isinstance(arg, ast.Constant) else None
                if key is None or not any(key.startswith(k) for k in NOT_PATHS):
                    unknown.append(f"{f.relative_to(DASHBOARD)}:{call.lineno} key={key!r}")
    assert unknown == [], "classify these inputs (a path goes through ui.path_input)"


def _text_inputs(at: Any) -> list[str]:
    return [str(t.key) if t.key else t.label for t in at.text_input]


@pytest.mark.parametrize(
    ("page", "state"),
    [
        ("case_studies", {}),
        ("convergence", {"cv_view": "Run a small benchmark"}),
        ("elicitation", {}),
        ("pmr", {"pmr_view": "Extraction"}),
    ],
)
def test_every_text_input_on_the_pages_is_registered_or_known(app, page, state) -> None:
    from dashboard import _ui as ui

    at = app(page, **state)
    for key in _text_inputs(at):
        if any(key.startswith(k) for k in NOT_PATHS):
            continue
        assert key in ui.PATH_INPUTS, key
        assert key.startswith(PATHS), key


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the test's only data root, holding a results file with a canary."""
    folder = tmp_path_factory.mktemp("outside")
    rows = [
        {"function": "branin", "method": CANARY, "seed": 0, "step": s, "regret": 1.0 / (s + 1)}
        for s in range(5)
    ]
    for r in rows:
        r.update(cum_time_s=0.1 * r["step"], noise=0.0, init="lhs")
    (folder / "res").mkdir()
    pd.DataFrame(rows).to_parquet(folder / "res" / "cell-0000.parquet")
    return folder


def _everything(at: Any) -> str:
    out: list[str] = []

    def walk(node: Any) -> None:
        proto = getattr(node, "proto", None)
        if proto is not None:
            out.append(str(proto))
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return "\n".join(out)


def _escapes(tmp_path: Path, outside: Path) -> dict[str, Path | str]:
    (tmp_path / "link").symlink_to(outside)
    return {
        "outside": outside,
        "dotdot": tmp_path / ".." / outside.name,
        "symlink": tmp_path / "link",
        "proc": "/proc/self",
        "hidden": tmp_path / ".hidden",
    }


def test_the_results_folder_reads_only_below_the_roots(app, tmp_path, outside) -> None:
    for name, path in _escapes(tmp_path, outside).items():
        at = app("convergence")
        at.text_input(key="cv_root").input(str(path)).run()
        assert not at.exception, name
        warnings = "\n".join(shown(w.value) for w in at.warning)
        assert "Using the default instead" in warnings, name
        assert CANARY not in _everything(at), name  # the file was never read
        # nor by the hierarchy page, which reads the same folder
        at.switch_page("views/hierarchy.py").run()
        assert CANARY not in _everything(at), name


def test_a_run_writes_only_below_the_data_folder(app, tmp_path, outside) -> None:
    target = outside / "written"
    at = app("convergence", cv_view="Run a small benchmark")
    out_key = next(k for k in _text_inputs(at) if k.startswith("cv_r_out::"))
    at.text_input(key=out_key).input(str(target)).run()
    assert "not below the data folder" in "\n".join(shown(w.value) for w in at.warning)
    at.multiselect(key="cv_r_methods").set_value(["dt"]).run()
    at.slider(key="cv_r_seeds").set_value(1).run()
    at.slider(key="cv_r_iters").set_value(5).run()
    at.slider(key="cv_r_ninit").set_value(3).run()
    at.button(key="cv_r_run").click().run()
    assert not at.exception
    assert not target.exists()  # refused: the default (below the data folder) was used
    home = tmp_path / "data_home" / "results" / "dashboard-bench"
    assert len(list(home.glob("cell-*.parquet"))) == 1


def test_the_extraction_cache_is_written_only_below_the_data_folder(
    app, tmp_path, outside, monkeypatch
) -> None:
    from data_loaders.registry import load_study
    from feature_extraction import ExtractionCache, LLMConfig
    from feature_extraction.extract import Extractor

    # a cache outside the data folder that would answer every message
    study = load_study("pmr-demo")
    spec = study.extras["spec"]
    truth = study.extras["truth"].set_index("message_id")
    texts = study.extras["texts"]
    foreign = outside / "cache.sqlite"
    with ExtractionCache(foreign) as cache:
        ex = Extractor(spec, LLMConfig(model="m"), cache=cache)
        for mid, text in zip(texts["message_id"], texts["text"], strict=True):
            values = {n: truth.loc[mid, n] for n in spec.names}
            values = {k: list(v) if isinstance(v, list | tuple) else v for k, v in values.items()}
            cache.put(ex.key(mid, text), status="ok", values=values)
    monkeypatch.setenv("DTPBO_LLM_CACHE", str(tmp_path / "data_home" / "llm_cache.sqlite"))
    for path in (foreign, outside / "new.sqlite", tmp_path / "link" / "cache.sqlite"):
        if not (tmp_path / "link").exists():
            (tmp_path / "link").symlink_to(outside)
        at = app("pmr", pmr_view="Extraction")
        at.text_input(key="pmr_model").input("m").run()
        at.text_input(key="pmr_cache").input(str(path)).run()
        assert not at.exception
        warnings = "\n".join(shown(w.value) for w in at.warning)
        assert "not below the data folder" in warnings, path
        assert "0 of 60 messages are in the cache" in "\n".join(shown(c.value) for c in at.caption)
    assert not (outside / "new.sqlite").exists()
