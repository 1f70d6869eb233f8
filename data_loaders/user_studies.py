"""An analyst's own studies: choice files imported into the per-user data folder.

A study is one folder ``$DTPBO_DATA_HOME/studies/<key>/`` holding canonical files:

``choices.csv``
    The uploaded choice data as it was uploaded (long or wide layout).
``attributes.json``
    Its attribute table (:func:`~data_loaders.conjoint.write_attribute_table`).
``respondents.csv``
    Optional respondent features (one row per respondent; column ``respondent``).
``study.json``
    Title, layout, column mapping, upload names (base names only) and import time.

:func:`load_choice_file` is the one loader of such data: the command line's
``conjoint-accuracy --data FILE --attributes TABLE.json`` calls it, and so does a saved
study, which the registry lists beside the bundled ones (key ``my-...``). :func:`check_upload`
collects *every* problem of an upload (each attribute cell that does not parse, named by
line and column; missing columns; respondent features) before the loader runs, so nothing
is imported half: :func:`save_study` writes the folder only when the loader succeeds.

Uploads are limited to :data:`MAX_UPLOAD_MB` MB each.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from data_loaders._common import data_home, read_csv_lines
from data_loaders.conjoint import (
    Attribute,
    StudyMeta,
    is_missing,
    load_conjoint_long,
    load_conjoint_wide,
    read_attribute_table,
    write_attribute_table,
)
from pbo_core.data import DataValidationError, Schema, Study

__all__ = [
    "KEY_PREFIX",
    "MAX_UPLOAD_MB",
    "ColumnMap",
    "Problem",
    "UserStudy",
    "attribute_rows",
    "attributes_from_json",
    "attributes_from_rows",
    "check_upload",
    "infer_attributes",
    "list_user_studies",
    "load_choice_file",
    "load_user_study",
    "remove_user_study",
    "save_study",
    "studies_dir",
]

#: Largest accepted upload (each file), in MB.
MAX_UPLOAD_MB = 20
#: Registry keys of imported studies start with this.
KEY_PREFIX = "my-"
#: Kinds offered in the attribute editor, and the directions.
KINDS = ("numeric", "ordinal", "categorical", "binary")
DIRECTIONS = ("", "higher is better", "lower is better")
_LEVEL_SEP = " | "
_MAX_LEVELS = 30


@dataclass(frozen=True)
class ColumnMap:
    """Layout and column names of a choice file (the CLI's ``--format`` and ``--*-col``)."""

    format: Literal["long", "wide"] = "long"
    respondent: str = "respondent"
    task: str = "task"
    profile: str = "profile"
    chosen: str | None = None
    alternatives: tuple[str, ...] = ("1", "2")

    @property
    def chosen_column(self) -> str:
        """The chosen flag (long, default ``chosen``) or chosen alternative (wide, ``choice``)."""
        return self.chosen or ("chosen" if self.format == "long" else "choice")

    def reserved(self) -> list[str]:
        """Columns that are not attributes."""
        cols = [self.respondent, self.task, self.chosen_column]
        return cols + ([self.profile] if self.format == "long" else [])

    def to_json(self) -> str:
        """The mapping as canonical JSON (hashable: a grid cell's ``columns``)."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ColumnMap:
        """Inverse of :meth:`to_json`."""
        d = dict(json.loads(text))
        if "alternatives" in d:
            d["alternatives"] = tuple(str(a) for a in d["alternatives"])
        return cls(**d)


def add_column_args(p: argparse.ArgumentParser) -> None:
    """The choice-file flags shared by every command that reads an analyst's own file
    (``import-study``, ``conjoint-accuracy --data``, ``report --data``)."""
    p.add_argument("--format", choices=("long", "wide"), default="long", help="layout of the file")
    p.add_argument(
        "--attributes",
        default=None,
        help="JSON attribute table (default: inferred from the columns, as the page does)",
    )
    p.add_argument("--respondent-col", default="respondent")
    p.add_argument("--task-col", default="task")
    p.add_argument("--profile-col", default="profile", help="alternative column (long)")
    p.add_argument(
        "--chosen-col",
        default=None,
        help="chosen flag (long, default 'chosen') or chosen alternative (wide, 'choice')",
    )
    p.add_argument(
        "--alternatives",
        default=None,
        help="wide: the alternatives' column suffixes, comma-separated (default 1,2)",
    )


def column_map(args: argparse.Namespace) -> ColumnMap:
    """The :class:`ColumnMap` of the flags of :func:`add_column_args`."""
    alts = tuple(a.strip() for a in (args.alternatives or "").split(",") if a.strip())
    return ColumnMap(
        args.format,
        args.respondent_col,
        args.task_col,
        args.profile_col,
        args.chosen_col,
        alts or ("1", "2"),
    )


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an upload: where (file, line, column) and what."""

    file: str
    message: str
    line: str = ""
    column: str = ""


def load_choice_file(
    path: str | Path,
    attributes: str | Path | Sequence[Attribute] | None,
    columns: ColumnMap = ColumnMap(),
    meta: StudyMeta | None = None,
) -> Study:
    """Long or wide choice data (CSV) with its attribute table, through the conjoint loaders.

    ``attributes=None`` infers the table from the columns (:func:`infer_attributes`, as the
    Add-a-study form does).

    Raises
    ------
    DataValidationError
        For malformed data, naming the file, line and column (from the readers).
    """
    if attributes is None:
        attributes = infer_attributes(read_csv_lines(Path(path)), columns)
    if columns.format == "long":
        return load_conjoint_long(
            path,
            attributes,
            respondent=columns.respondent,
            task=columns.task,
            alternative=columns.profile,
            chosen=columns.chosen_column,
            meta=meta,
        )
    if columns.format == "wide":
        return load_conjoint_wide(
            path,
            attributes,
            respondent=columns.respondent,
            task=columns.task,
            choice=columns.chosen_column,
            alternatives=tuple(columns.alternatives),
            meta=meta,
        )
    raise ValueError(f"format must be 'long' or 'wide', got {columns.format!r}")


# ----------------------------------------------------------------------------- inference
def _stems(frame: pd.DataFrame, columns: ColumnMap) -> dict[str, list[str]]:
    """Attribute name -> its source columns (long: itself; wide: ``stem1``, ``stem2``...)."""
    rest = [c for c in frame.columns if c not in columns.reserved()]
    if columns.format == "long":
        return {c: [c] for c in rest}
    out: dict[str, list[str]] = {}
    for alt in columns.alternatives:
        for c in rest:
            if c.endswith(alt) and len(c) > len(alt):
                out.setdefault(c[: -len(alt)], []).append(c)
    return {s: cs for s, cs in out.items() if len(cs) == len(columns.alternatives)}


def infer_attributes(frame: pd.DataFrame, columns: ColumnMap) -> list[Attribute]:
    """A first attribute table from the data: numbers (at least 90 % of the cells) ->
    numeric, two values -> binary, other text -> categorical (levels in sorted order;
    make them ordinal in the editor)."""
    out = []
    for name, cols in _stems(frame, columns).items():
        vals = pd.concat([frame[c] for c in cols]).dropna()
        distinct = pd.unique(vals)
        numeric = pd.to_numeric(vals, errors="coerce")
        label = name.replace("_", " ").strip().capitalize()
        share = float(numeric.notna().mean()) if len(vals) else 0.0
        if len(distinct) == 2 and share < 1.0:
            levels = tuple(sorted(str(v) for v in distinct))
            out.append(Attribute(name, "binary", levels=levels, label=label))
        elif share >= 0.9:  # a few stray words in a number column are errors, not levels
            out.append(Attribute(name, "numeric", label=label))
        else:
            levels = tuple(sorted({str(v) for v in distinct}))[:_MAX_LEVELS] or ("?",)
            out.append(Attribute(name, "categorical", levels=levels, label=label))
    return out


def attribute_rows(attributes: Sequence[Attribute]) -> pd.DataFrame:
    """The attribute table as editable rows: name, label, kind, unit, levels, direction."""
    rows = []
    for a in attributes:
        direction, desc = "", a.description
        for d in DIRECTIONS[1:]:
            if desc.endswith(f"({d})"):
                direction, desc = d, desc[: -len(d) - 2].rstrip()
        rows.append(
            {
                "name": a.name,
                "label": a.label,
                "kind": a.kind,
                "unit": a.unit,
                "levels (in order)": _LEVEL_SEP.join(a.levels),
                "direction": direction,
                "description": desc,
            }
        )
    return pd.DataFrame(rows)


def attributes_from_rows(rows: pd.DataFrame) -> tuple[list[Attribute], list[Problem]]:
    """Attributes from edited rows (:func:`attribute_rows`), and every row's problem."""
    out, problems = [], []
    for k, r in enumerate(rows.fillna("").to_dict(orient="records")):
        name = str(r.get("name", "")).strip()
        levels = tuple(
            s.strip() for s in str(r.get("levels (in order)", "")).split("|") if s.strip()
        )
        kind = str(r.get("kind", "")).strip()
        desc = str(r.get("description", "")).strip()
        direction = str(r.get("direction", "")).strip()
        if direction:
            desc = f"{desc} ({direction})".strip()
        try:
            out.append(
                Attribute(
                    name,
                    kind,  # type: ignore[arg-type]
                    levels=() if kind == "numeric" else levels,
                    label=str(r.get("label", "")).strip(),
                    unit=str(r.get("unit", "")).strip(),
                    description=desc,
                )
            )
        except DataValidationError as exc:
            problems.append(Problem("attribute table", str(exc), line=str(k + 1), column=name))
    return out, problems


def attributes_from_json(content: bytes, file: str) -> tuple[list[Attribute], list[Problem]]:
    """An uploaded JSON attribute table (the format of ``--attributes``) and its problems."""
    with _staging() as tmp:
        staged = Path(tmp) / "attributes.json"
        staged.write_bytes(content)
        try:
            return read_attribute_table(staged), []
        except (DataValidationError, UnicodeDecodeError) as exc:
            return [], [_problem(exc, file, str(staged))]


# ----------------------------------------------------------------------------- checking
_LOC = re.compile(r"line (\d+)")
_COL = re.compile(r"column '([^']+)'")


def _staging() -> tempfile.TemporaryDirectory[str]:
    """A throw-away folder for an upload's bytes, below the per-user data folder.

    Uploads are staged there (not in the system temp folder) so that the loaders, which
    the dashboard confines to the allowed data roots (:mod:`data_loaders.access`), may read
    them; the folder is removed when the check is done.
    """
    root = data_home() / "staging"
    root.mkdir(parents=True, exist_ok=True)
    return tempfile.TemporaryDirectory(dir=root)


def _problem(exc: Exception, file: str, staged: str) -> Problem:
    msg = str(exc).replace(staged, file)
    line = _LOC.search(msg)
    col = _COL.search(msg)
    return Problem(file, msg, line.group(1) if line else "", col.group(1) if col else "")


def _cell_problems(
    frame: pd.DataFrame, attributes: Sequence[Attribute], columns: ColumnMap, file: str
) -> list[Problem]:
    """Every attribute cell that does not parse (grouped by column and value)."""
    problems = []
    alts = columns.alternatives if columns.format == "wide" else ("",)
    for a in attributes:
        for alt in alts:
            col = a.source_column + alt
            if col not in frame.columns:
                continue
            codes, uniques = pd.factorize(frame[col], use_na_sentinel=False)
            for k, u in enumerate(uniques):
                try:
                    a.parse(u)
                except ValueError as exc:
                    lines = frame.index[np.flatnonzero(codes == k)].tolist()
                    shown = ", ".join(map(str, lines[:8]))
                    more = f" and {len(lines) - 8} more" if len(lines) > 8 else ""
                    problems.append(
                        Problem(
                            file,
                            f"attribute {a.display_name}: "
                            + ("the cell is empty" if is_missing(u) else f"{u!r} {exc}"),
                            line=shown + more,
                            column=col,
                        )
                    )
    return problems


def check_upload(
    content: bytes,
    file: str,
    attributes: Sequence[Attribute],
    columns: ColumnMap,
    respondents: tuple[bytes, str] | None = None,
) -> tuple[Study | None, list[Problem]]:
    """Check an upload with the loaders; the study, or ``None`` and every problem found.

    ``file`` (and the respondents' name) is the base name shown in messages. Cell
    problems are all collected first; the loader then checks the rest (choices per task,
    flags) and reports its first problem.
    """
    problems: list[Problem] = []
    limit = MAX_UPLOAD_MB * 2**20
    for data, name in [(content, file), *([respondents] if respondents else [])]:
        if len(data) > limit:
            problems.append(Problem(name, f"{len(data) / 2**20:.1f} MB is over {MAX_UPLOAD_MB} MB"))
    if problems:
        return None, problems
    with _staging() as tmp:
        staged = Path(tmp) / "choices.csv"
        staged.write_bytes(content)
        try:
            frame = read_csv_lines(staged)
        except DataValidationError as exc:
            return None, [_problem(exc, file, str(staged))]
        need = columns.reserved()
        missing = [c for c in need if c not in frame.columns]
        for c in missing:
            problems.append(Problem(file, f"missing column {c!r}", line="1 (header)", column=c))
        problems += _cell_problems(frame, attributes, columns, file)
        if problems:
            return None, problems
        try:
            study = load_choice_file(staged, list(attributes), columns)
        except (DataValidationError, ValueError) as exc:
            return None, [_problem(exc, file, str(staged))]
    if respondents is not None:
        study, more = _with_respondents(study, *respondents, columns.respondent)
        if more:
            return None, more
    return study, []


def _read_respondents(
    content: bytes, name: str, key: str
) -> tuple[pd.DataFrame | None, list[Problem]]:
    with _staging() as tmp:
        staged = Path(tmp) / "respondents.csv"
        staged.write_bytes(content)
        try:
            users = read_csv_lines(staged)
        except DataValidationError as exc:
            return None, [_problem(exc, name, str(staged))]
    if key not in users.columns:
        return None, [Problem(name, f"missing column {key!r}", line="1 (header)", column=key)]
    dup = users[key].duplicated()
    if dup.any():
        lines = ", ".join(map(str, users.index[dup.to_numpy()][:8]))
        return None, [Problem(name, "respondent listed twice", line=lines, column=key)]
    return users, []


def _with_respondents(
    study: Study, content: bytes, name: str, key: str
) -> tuple[Study, list[Problem]]:
    """The study with its respondent-features table (every study respondent must be listed)."""
    users, problems = _read_respondents(content, name, key)
    if users is None:
        return study, problems
    by_id = {str(v): i for i, v in zip(users.index, users[key], strict=True)}
    resp = study.respondents()
    absent = [r for r in resp if str(r) not in by_id]
    if absent:
        shown = ", ".join(map(str, absent[:8])) + (
            f" and {len(absent) - 8} more" if len(absent) > 8 else ""
        )
        return study, [Problem(name, f"respondents without a row: {shown}", column=key)]
    table = users.loc[[by_id[str(r)] for r in resp]].drop(columns=key)
    table.index = pd.Index(resp, name="respondent")
    try:
        schema = Schema.infer(table)
    except DataValidationError as exc:
        return study, [Problem(name, str(exc))]
    data = replace(study.data, users=table)
    return replace(study, data=data, users=table, user_schema=schema), []


# ----------------------------------------------------------------------------- storage
@dataclass(frozen=True)
class UserStudy:
    """``study.json`` of a saved study."""

    key: str
    title: str
    format: str
    columns: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    imported: str = ""
    description: str = ""

    @property
    def folder(self) -> Path:
        """Where its files are."""
        return studies_dir() / self.key


def studies_dir() -> Path:
    """``$DTPBO_DATA_HOME/studies``: one folder per imported study."""
    return data_home() / "studies"


def _slug(title: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40].strip("-")
    return s or "study"


def save_study(
    title: str,
    content: bytes,
    file: str,
    attributes: Sequence[Attribute],
    columns: ColumnMap,
    respondents: tuple[bytes, str] | None = None,
) -> tuple[UserStudy | None, list[Problem]]:
    """Check the upload and, only when it loads, save it as a new study folder."""
    title = title.strip() or Path(file).stem
    study, problems = check_upload(content, file, attributes, columns, respondents)
    if study is None:
        return None, problems
    root = studies_dir()
    root.mkdir(parents=True, exist_ok=True)
    base = KEY_PREFIX + _slug(title)
    key, n = base, 2
    while (root / key).exists():
        key, n = f"{base}-{n}", n + 1
    files = {"choices": file} | ({"respondents": respondents[1]} if respondents else {})
    meta = UserStudy(
        key,
        title,
        columns.format,
        {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(columns).items()},
        files,
        time.strftime("%Y-%m-%d %H:%M:%S"),
        f"Imported from {file} ({study.counts()['comparisons']} comparisons).",
    )
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=root))
    try:
        (staging / "choices.csv").write_bytes(content)
        write_attribute_table(list(attributes), staging / "attributes.json")
        if respondents is not None:
            (staging / "respondents.csv").write_bytes(respondents[0])
        (staging / "study.json").write_text(json.dumps(asdict(meta), indent=2), encoding="utf-8")
        staging.rename(root / key)  # all files at once, or none
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return meta, []


def _read_meta(folder: Path) -> UserStudy | None:
    try:
        d = json.loads((folder / "study.json").read_text(encoding="utf-8"))
        return UserStudy(**d)
    except (OSError, ValueError, TypeError):
        return None


def list_user_studies() -> list[UserStudy]:
    """Saved studies, oldest first (folders without a readable ``study.json`` are skipped)."""
    root = studies_dir()
    if not root.is_dir():
        return []
    metas = [
        _read_meta(p)
        for p in sorted(root.iterdir())
        if p.is_dir() and p.name.startswith(KEY_PREFIX)
    ]
    return sorted(
        (m for m in metas if m is not None and m.key == m.folder.name), key=lambda m: m.imported
    )


def _folder(key: str) -> Path:
    if not key.startswith(KEY_PREFIX) or not re.fullmatch(r"[a-z0-9-]+", key):
        raise KeyError(f"not an imported study key: {key!r}")
    return studies_dir() / key


def load_user_study(key: str) -> Study:
    """A saved study, loaded by :func:`load_choice_file` from its canonical files."""
    folder = _folder(key)
    meta = _read_meta(folder)
    if meta is None:
        raise KeyError(f"no imported study {key!r} in {studies_dir()}")
    cols = dict(meta.columns)
    cols["alternatives"] = tuple(cols.get("alternatives", ("1", "2")))
    columns = ColumnMap(**cols)
    study = load_choice_file(
        folder / "choices.csv",
        read_attribute_table(folder / "attributes.json"),
        columns,
        StudyMeta(
            key=key,
            title=meta.title,
            description=meta.description,
            source=meta.files.get("choices", ""),
            license="your own data",
        ),
    )
    if (folder / "respondents.csv").is_file():
        content = (folder / "respondents.csv").read_bytes()
        study, problems = _with_respondents(study, content, "respondents.csv", columns.respondent)
        if problems:
            raise DataValidationError("; ".join(p.message for p in problems))
    return study


def remove_user_study(key: str) -> None:
    """Delete a saved study's folder."""
    shutil.rmtree(_folder(key), ignore_errors=False)
