"""The accuracy experiments as resumable grid cells over the evaluation core.

Sushi generalisation (DT-PBO Table 1), conjoint task hold-out (Table 12), the straddler
ablation (Table 2) and leave-one-out sensitivity on the command line score registry models
(:mod:`pbo_core.registry`) with :func:`pbo_core.evaluation.score_model` on one split
(:func:`pbo_core.splits.make_split`) per (study, seed). A cell names its split by keys
(:data:`SPLIT_KEYS`: the study or an own file, the split kind, seed, test tasks,
respondents, ...), so a grid (:func:`~pbo_core.experiments.runner.run_grid`) hashes it
for resume; the split itself is rebuilt once per process (:func:`cell_split`).

Studies are loaded by callables passed in (:class:`~pbo_core.experiments.studies.LoadStudy`
for a registry key, :class:`~pbo_core.experiments.studies.LoadStudyFile` for an analyst's
own file; the command line binds :mod:`data_loaders.cached`), never stored in a cell.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import pandas as pd

from pbo_core.data import Study
from pbo_core.evaluation import BASELINE_ROW, score_model
from pbo_core.experiments.runner import Cell
from pbo_core.experiments.studies import LoadStudy, LoadStudyFile
from pbo_core.registry import MODELS, get, names, not_applicable, study_kind
from pbo_core.splits import Split, make_split

__all__ = [
    "CHUNK",
    "SPLIT_KEYS",
    "accuracy_cell",
    "accuracy_cells",
    "cell_split",
    "note",
    "parse_methods",
]

#: Respondents per cell of a per-respondent model (the resumable unit).
CHUNK = 60

#: The keys of a cell that define its split.
SPLIT_KEYS = (
    "study",
    "data",
    "attributes",
    "columns",
    "data_dir",
    "split",
    "seed",
    "test_tasks",
    "respondents",
    "users",
    "holdout",
)


def load_cell_study(
    cell: Cell, load_study: LoadStudy, load_study_file: LoadStudyFile | None
) -> Study:
    """The study a cell names: a registry key, or an own file (``data`` + ``columns``)."""
    if cell.get("data"):
        if load_study_file is None:
            raise ValueError(f"{cell['data']}: a cell with own data needs load_study_file")
        return load_study_file(str(cell["data"]), cell.get("attributes"), str(cell["columns"]))
    return load_study(cell["study"], cell.get("data_dir"))


@lru_cache(maxsize=8)
def _split_cached(
    key: tuple[tuple[str, Any], ...],
    load_study: LoadStudy,
    load_study_file: LoadStudyFile | None,
) -> Split:
    cell = dict(key)
    study = load_cell_study(cell, load_study, load_study_file)
    kind = str(cell.get("split", "auto"))
    n = cell.get("users") if kind in ("pairs", "items") else cell.get("respondents")
    return make_split(
        study,
        kind,
        seed=int(cell.get("seed", 0)),
        test_tasks=cell.get("test_tasks"),
        respondents=n,
        holdout=int(cell.get("holdout", 2)),
    )


def cell_split(
    cell: Cell, *, load_study: LoadStudy, load_study_file: LoadStudyFile | None = None
) -> Split:
    """The split a cell describes (rebuilt once per process).

    ``split`` is a kind of :func:`pbo_core.splits.make_split` (default ``"auto"``);
    ``test_tasks`` applies to a ``tasks`` split, ``respondents`` (first N) to every split
    with respondents, ``users`` and ``holdout`` to Sushi's ``pairs`` / ``items``.
    """
    key = tuple((k, cell[k]) for k in SPLIT_KEYS if cell.get(k) is not None)
    return _split_cached(key, load_study, load_study_file)


def accuracy_cells(base: Cell, methods: Sequence[str], split: Split) -> list[dict[str, Any]]:
    """Grid of one experiment: one cell per pooled model, per chunk of respondents else."""
    cells: list[dict[str, Any]] = []
    n = len(split.units)
    for name in methods:
        if get(name).scope == "pooled":
            cells.append(dict(base, method=name))
        else:
            for lo in range(0, n, CHUNK):
                cells.append(dict(base, method=name, chunk=[lo, min(n, lo + CHUNK)]))
    return cells


def accuracy_cell(
    cell: Cell, *, load_study: LoadStudy, load_study_file: LoadStudyFile | None = None
) -> pd.DataFrame:
    """Rows (one per respondent) of one model on one split (see :func:`accuracy_cells`).

    A cell with ``drop_feature`` fits and scores the model without that feature's columns
    (leave-one-out sensitivity; the rows are then tagged ``feature removed``). Bind the
    loaders with :func:`functools.partial` for :func:`~pbo_core.experiments.runner.run_grid`.
    """
    split = cell_split(cell, load_study=load_study, load_study_file=load_study_file)
    ablation = "drop_feature" in cell or cell.get("experiment") == "sensitivity"
    rows = score_model(
        split,
        cell["method"],
        chunk=cell.get("chunk"),
        drop_feature=cell.get("drop_feature"),
        choices=not ablation,  # sensitivity reports accuracy changes only
    )
    if ablation:
        rows = rows.assign(**{"feature removed": cell.get("drop_feature") or BASELINE_ROW})
    return rows


def parse_methods(
    text: str | None, split: Split, experiment: str = "conjoint-accuracy"
) -> tuple[list[str], dict[str, str]]:
    """Models of a ``--methods`` value (comma separated; ``None`` = the defaults), and why
    each default that cannot be scored on ``split`` was left out.

    The defaults are the registry's ``accuracy`` models that apply to the study and the
    split (the straddler ablation leaves out the GP: it compares tree variants).

    Raises
    ------
    SystemExit
        Naming unknown models and named models that cannot be scored on this split.
    """
    study = split.study
    if text is None:
        skipped = {}
        out = []
        for n in names(role="accuracy", fits=True):
            if experiment == "straddler-ablation" and get(n).family == "gp":
                continue
            why = not_applicable(get(n), study, new_respondents=split.new_respondents)
            if why is None:
                out.append(n)
            elif "item set" not in why and "conjoint design" not in why:
                skipped[n] = why  # item models on a conjoint study are not news
        return out, skipped
    wanted = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in wanted if m not in MODELS or not MODELS[m].fits]
    if bad:
        raise SystemExit(f"unknown models {bad}; choose from {names(fits=True)}")
    if not wanted:
        raise SystemExit("--methods names no model")
    wrong = {
        m: why
        for m in wanted
        if (why := not_applicable(get(m), study, new_respondents=split.new_respondents))
    }
    if wrong:
        kind = study_kind(study)
        shown = "; ".join(f"{m}: {w}" for m, w in wrong.items())
        raise SystemExit(f"on this {kind} study and split ({split.kind}): {shown}")
    return list(dict.fromkeys(wanted)), {}


def note(message: str, quiet: bool) -> None:
    """A note on stderr (unless ``quiet``)."""
    if not quiet:
        print(message, file=sys.stderr)
