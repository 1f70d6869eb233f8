"""The import's pipeline (data_loaders/pipeline/): five stages, each a function returning a
frozen dataclass that the next stage reads; run by hand they give the study the entry
points give; and no function on the upload's path is over 120 lines."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import typing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from data_loaders import pipeline
from data_loaders import user_studies as us
from data_loaders.pipeline import build, describe, interpret, read, save
from tests.benchmarks.upload_trace import module_of, trace_call

ROOT = Path(__file__).resolve().parents[3]
FORMATS = ROOT / "tests" / "fixtures" / "formats"
#: The modules an upload passes through (traced: the test below keeps this list true),
#: and the Add-a-study form's.
UPLOAD_PATH = (
    "dashboard/_study_import.py",
    "dashboard/_import_jobs.py",
    "data_loaders/pipeline/__init__.py",
    "data_loaders/pipeline/problems.py",
    "data_loaders/pipeline/read.py",
    "data_loaders/pipeline/interpret.py",
    "data_loaders/pipeline/describe.py",
    "data_loaders/pipeline/build.py",
    "data_loaders/pipeline/save.py",
    "data_loaders/study_files.py",
    "data_loaders/study_store.py",
    "data_loaders/user_studies.py",
    "data_loaders/readers.py",
    "data_loaders/limits.py",
    "data_loaders/access.py",
    "data_loaders/fields.py",
    "data_loaders/_common.py",
    "data_loaders/layout.py",
    "data_loaders/prepare.py",
    "data_loaders/selection.py",
    "data_loaders/questions.py",
    "data_loaders/recipes.py",
    "data_loaders/conjoint/attributes.py",
    "data_loaders/conjoint/build.py",
    "data_loaders/conjoint/formats.py",
    "pbo_core/errors.py",
    "pbo_core/data.py",
    "pbo_core/collinearity.py",
    "pbo_core/units.py",
    "pbo_core/plan.py",
    "pbo_core/text.py",
)
#: The longest a function on the path may be (lines, its docstring included).
MAX_LINES = 120


def _lengths(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out.append((node.end_lineno - start + 1, f"{path.name}:{start} {node.name}"))  # type: ignore[operator]
    return out


def test_no_function_on_the_upload_path_is_over_120_lines() -> None:
    long = [
        f"{where} ({n} lines)"
        for rel in UPLOAD_PATH
        for n, where in _lengths(ROOT / rel)
        if n > MAX_LINES
    ]
    assert not long, "functions over 120 lines on the upload's path:\n" + "\n".join(long)


@pytest.mark.parametrize("file", ["long.csv", "wide.csv"])
def test_the_upload_path_is_the_listed_modules(
    file: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every project module an import enters, at any depth, is in UPLOAD_PATH (so the
    length test above reads the whole path)."""
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path))
    content, columns = (FORMATS / file).read_bytes(), us.ColumnMap(format="auto")
    (meta, problems), trace = trace_call(
        lambda: us.save_study("T", content, file, None, columns), 99
    )
    assert meta is not None, problems
    listed = {module_of(str(ROOT / rel)) for rel in UPLOAD_PATH}
    assert set(trace.path) <= listed, sorted(set(trace.path) - listed)
    assert {"data_loaders.pipeline.read", "data_loaders.pipeline.save"} <= set(trace.path)


def test_each_stage_returns_what_the_next_one_reads() -> None:
    stages = pipeline.STAGES
    assert [s.__name__ for s in stages] == ["read", "interpret", "describe", "build", "save"]
    returns = []
    for k, stage in enumerate(stages):
        hints = typing.get_type_hints(stage)
        first = next(iter(inspect.signature(stage).parameters))
        if k:
            assert hints[first] is returns[-1], (stage.__name__, hints[first], returns[-1])
        out = hints["return"]
        assert dataclasses.is_dataclass(out) and out.__dataclass_params__.frozen, out
        assert stage.__module__ == f"data_loaders.pipeline.{stage.__name__}"
        returns.append(out)
    # each value up to the built study holds the one before it (the saved study's record
    # names its folder instead)
    for earlier, later in itertools.pairwise(returns[:-1]):
        held = {typing.get_type_hints(later)[f.name] for f in dataclasses.fields(later)}
        assert earlier in held, (earlier, later)


@pytest.mark.parametrize("file", ["long.csv", "wide.csv", "wide.dat"])
def test_the_stages_by_hand_give_the_checked_study(
    file: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DTPBO_DATA_HOME", str(tmp_path))
    content, columns = (FORMATS / file).read_bytes(), us.ColumnMap(format="auto")
    r = read.read(content, file)
    layout = interpret.interpret(r, columns)
    d = describe.describe(layout)
    built = build.build(d)
    assert built.again is None and built.description.layout.read is r
    checked, problems = us.check_upload(content, file, None, columns)
    assert checked is not None, problems
    for study in (built.study, checked):
        assert study.extras["columns"] == d.columns
    np.testing.assert_array_equal(built.study.data.pairs, checked.data.pairs)
    np.testing.assert_array_equal(built.study.data.X, checked.data.X)
    assert built.study.extras["import_notes"] == checked.extras["import_notes"]
    assert built.study.columns == checked.columns
    meta = save.save(built, "By hand")
    assert us.load_user_study(meta.key).counts() == checked.counts()


def test_a_stage_refuses_with_every_problem(tmp_path: Path) -> None:
    text = (FORMATS / "long.csv").read_text(encoding="utf-8").splitlines()
    text[3] = text[3].replace("24.5", "cheap")
    text[5] = text[5].replace("medium", "")
    r = read.read("\n".join(text).encode(), "bad.csv")
    with pytest.raises(pipeline.Refused) as caught:
        interpret.interpret(r, us.ColumnMap(format="auto"))
    lines = {p.line for p in caught.value.problems}
    assert {"4", "6"} <= lines, caught.value.problems
    with pytest.raises(pipeline.Refused) as caught:
        read.read(b"", "empty.csv")
    assert caught.value.problems[0].file == "empty.csv"


def test_an_attribute_that_never_differs_is_described_again_without_it() -> None:
    rng = np.random.default_rng(0)
    n = 30
    frame = pd.DataFrame(
        {
            "id": np.arange(n) // 3,
            "price_A": rng.integers(1, 9, n),
            "price_B": rng.integers(1, 9, n),
            "time_A": rng.integers(10, 60, n),
            "time_B": rng.integers(10, 60, n),
            "wifi_A": 1,
            "wifi_B": 1,
            "choice": rng.choice(["A", "B"], n),
            "day": rng.choice(["a", "b"], n),
        },
        index=pd.RangeIndex(2, n + 2),
    )
    cols = us.ColumnMap(format="auto", where="day == a", units=(("time", "min"),))
    layout = interpret.interpret(read.of_frame(frame, "w.csv"), cols, check=False, ask=False)
    first = build.build(describe.describe(layout))
    assert first.again is not None and "wifi" in first.again.columns.drop_attributes
    final = build.build(describe.describe(first.again))
    assert final.again is None
    notes = final.study.extras["import_notes"]
    assert any(n.startswith("left out: wifi") for n in notes)
    kept = int((frame["day"] == "a").sum())
    selected = [n for n in notes if n.startswith("rows selected")]
    assert selected == [f"rows selected: {kept} of {n} meet --where 'day == a'"]
    assert sum(n.startswith("units given") for n in notes) == 1
    assert final.study.extras["selected"] == {"where": "day == a", "rows": kept, "of": n}
    assert "wifi" not in final.study.schema.names
