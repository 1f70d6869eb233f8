"""Presidential-candidate conjoint (Bansak, Hainmueller, Hopkins & Yamamoto; DT-PBO G.4).

Replication data: Harvard Dataverse doi:10.7910/DVN/JYC2TH (CC0 1.0), file
``data/cand_s2_MTurk.csv`` inside ``replication_materials.zip``. The data are not in this
repository. Point the loader at your copy::

    study = load_presidential("path/to/cand_s2_MTurk.csv")   # or DTPBO_PRESIDENTIAL_PATH

Format read (from the deposit's readme.txt)
-------------------------------------------
One row per respondent x profile: ``r_id`` (respondent), ``profile`` (a task letter and
a left/right digit, ``A1`` ... ``O2``: 15 tasks x 2 profiles), ``pref`` (1 for the
profile chosen in the forced choice), ``condition`` (number of filler attributes shown),
respondent columns ``r_*``, the four core attributes ``cage``, ``cparty``,
``chealthcare``, ``cmarriage`` and the filler attributes ``c<name>m``.

Level codes
-----------
Every attribute is a numeric code. ``data_loaders/data/presidential_levels.json`` maps
the codes to the level labels of DT-PBO Table 13 (code k = k-th level of the table) and
names the column of each attribute. The code order and most filler column names are
assumptions (the deposit does not document them; the file says so in its ``note``):
check them on your copy and edit the file or pass ``mapping=``/``columns=``. Text labels
are accepted too.

Filler attributes not shown
---------------------------
Code 0 (not shown to this respondent) and NA (not in the respondent's pool) both become
the level ``"not shown"``, the first level of every filler attribute. Within a respondent
the set of shown fillers is fixed, so both profiles of a comparison share "not shown" and
the attribute cannot explain that respondent's choices: per-respondent trees never split
on it, and pooled trees only separate respondents who saw the attribute from those who
did not. Core attributes must always be shown; a 0/NA there is an error. With
``check_condition=True`` the number of shown fillers of every row must equal
``condition``, which catches misnamed filler columns.

Comparisons
-----------
Each task gives one comparison (chosen profile beats the other): 15 per respondent.
(DT-PBO reports 27 training + 3 test comparisons per respondent; the deposit has 15
tasks, so that split cannot be reproduced from this file alone.) Tasks without a choice
(``pref`` missing or 0 for both profiles) are dropped and counted in
``study.extras["respondent_summary"]``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data_loaders._common import (
    MAX_NAMES,
    VENDORED_DIR,
    env_path_status,
    file_stamp,
    freeze,
    missing_columns_error,
    quoted,
    read_csv_lines,
    resolve_path,
    where,
)
from data_loaders.access import check_file
from data_loaders.conjoint import (
    Attribute,
    StudyMeta,
    build_from_long,
    normalize_value,
    parse_attribute,
    user_table,
)
from pbo_core.data import DataValidationError, Schema, Study
from pbo_core.plan import plan_with

ENV_VAR = "DTPBO_PRESIDENTIAL_PATH"
MAPPING_FILE = VENDORED_DIR / "presidential_levels.json"
HOW_TO = (
    "The presidential-candidate conjoint data are not distributed with DT-PBO Explorer. "
    "Download replication_materials.zip from Harvard Dataverse (doi:10.7910/DVN/JYC2TH, "
    "CC0), unzip it and call load_presidential('.../data/cand_s2_MTurk.csv') or set "
    "DTPBO_PRESIDENTIAL_PATH to that file."
)
LICENSE = "CC0 1.0 (Harvard Dataverse doi:10.7910/DVN/JYC2TH)"
CITATION = (
    "Bansak, K., Hainmueller, J., Hopkins, D. J. and Yamamoto, T. (2021). Beyond the "
    "breaking point? Survey satisficing in conjoint experiments. Political Science Research "
    "and Methods 9(1), 53-71. Data: doi:10.7910/DVN/JYC2TH"
)
_PROFILE = re.compile(r"^\s*([A-Za-z]+)\s*(\d+)\s*$")


# ---------------------------------------------------------------------------- mapping
def _levels_from_codes(codes: Mapping[str, Any]) -> list[str]:
    def order(k: str) -> tuple[int, float | str]:
        try:
            return (0, float(k))
        except ValueError:
            return (1, k)

    out: list[str] = []
    for k in sorted(codes, key=order):
        if str(codes[k]) not in out:
            out.append(str(codes[k]))
    return out


def _attribute(d: Mapping[str, Any], not_shown: str | None, *, where_: str) -> Attribute:
    known = {"name", "column", "label", "core", "kind", "codes", "unit", "description", "missing"}
    known |= {"min", "max"}
    unknown = set(d) - known
    if unknown:
        raise DataValidationError(f"{where_}: unknown keys {sorted(unknown)}")
    try:
        codes = {str(k): v for k, v in dict(d.get("codes") or {}).items()}
        kind = d.get("kind", "categorical")
        if kind == "numeric":
            return Attribute(
                d["name"],
                "numeric",
                label=d.get("label", ""),
                unit=d.get("unit", ""),
                description=d.get("description", ""),
                column=d.get("column"),
                codes=codes,
                missing=d.get("missing"),
                min=d.get("min"),
                max=d.get("max"),
            )
        levels = _levels_from_codes(codes)
        missing = d.get("missing")
        if not_shown is not None:
            levels = [not_shown, *levels]
            codes["0"] = not_shown
            missing = not_shown
        elif missing is not None and str(missing) not in levels:
            levels.append(str(missing))
        return Attribute(
            d["name"],
            kind,
            levels=tuple(levels),
            label=d.get("label", ""),
            unit=d.get("unit", ""),
            description=d.get("description", ""),
            column=d.get("column"),
            codes=codes,
            code_base=None,
            missing=missing,
        )
    except (KeyError, TypeError, DataValidationError) as exc:
        raise DataValidationError(f"{where_}: {exc}") from None


@dataclass(frozen=True)
class PresidentialMapping:
    """Columns and level codes of the presidential conjoint file.

    Attributes
    ----------
    respondent, profile, chosen, condition
        Column names of the respondent id, the profile code (``A1``), the forced-choice
        flag and the number of fillers shown (``None`` to skip the check).
    attributes
        The 20 profile attributes in the order of DT-PBO Table 13.
    fillers
        Names of the filler attributes (the others are core attributes).
    respondent_attributes
        Respondent-level features copied into ``study.users`` when their columns exist.
    not_shown
        Level label of a filler attribute that the respondent did not see.
    verified
        Whether the code order was checked against the deposit.
    note
        Free text shown in the study description.
    """

    respondent: str
    profile: str
    chosen: str
    condition: str | None
    attributes: tuple[Attribute, ...]
    fillers: frozenset[str]
    respondent_attributes: tuple[Attribute, ...] = ()
    not_shown: str = "not shown"
    verified: bool = False
    note: str = ""

    def with_columns(self, columns: Mapping[str, str]) -> PresidentialMapping:
        """A copy with other column names for roles or attributes (by attribute name)."""
        roles = {"respondent", "profile", "chosen", "condition"}
        names = {a.name for a in self.attributes}
        unknown = set(columns) - roles - names
        if unknown:
            raise KeyError(
                f"unknown attribute(s)/role(s) {sorted(unknown)}; attributes are "
                f"{sorted(names)}, roles {sorted(roles)}"
            )
        attrs = tuple(
            replace(a, column=columns[a.name]) if a.name in columns else a for a in self.attributes
        )
        role_kw = {k: v for k, v in columns.items() if k in roles}
        return replace(self, attributes=attrs, **role_kw)


def read_mapping(path: str | os.PathLike[str] = MAPPING_FILE) -> PresidentialMapping:
    """Read a level-code mapping file (format of ``data/presidential_levels.json``).

    Raises
    ------
    DataValidationError
        Naming the file and the offending attribute.
    """
    p = check_file(path, "mapping file")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataValidationError(f"{p}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
    try:
        not_shown = str(doc.get("not_shown", "not shown"))
        attrs, fillers = [], set()
        for i, d in enumerate(doc["attributes"]):
            core = bool(d.get("core", False))
            attrs.append(
                _attribute(d, None if core else not_shown, where_=f"{p}: attribute #{i + 1}")
            )
            if not core:
                fillers.add(d["name"])
        resp = [
            _attribute(d, None, where_=f"{p}: respondent attribute #{i + 1}")
            for i, d in enumerate(doc.get("respondent_attributes", []))
        ]
        return PresidentialMapping(
            respondent=doc.get("respondent", "r_id"),
            profile=doc.get("profile", "profile"),
            chosen=doc.get("chosen", "pref"),
            condition=doc.get("condition"),
            attributes=tuple(attrs),
            fillers=frozenset(fillers),
            respondent_attributes=tuple(resp),
            not_shown=not_shown,
            verified=bool(doc.get("verified", False)),
            note=str(doc.get("note", "")),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise DataValidationError(f"{p}: malformed mapping file: {exc!r}") from None


def presidential_status() -> tuple[bool, str]:
    """``(available, reason)``: whether ``$DTPBO_PRESIDENTIAL_PATH`` names a file."""
    return env_path_status(ENV_VAR, HOW_TO)


# ---------------------------------------------------------------------------- loading
def _split_profiles(frame: pd.DataFrame, column: str, name: str) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(frame[column], use_na_sentinel=False)
    task = np.empty(len(uniques), dtype=object)
    alt = np.empty(len(uniques), dtype=object)
    for k, u in enumerate(uniques):
        m = _PROFILE.match(str(u)) if isinstance(u, str) else None
        if m is None:
            label = frame.index[int(np.flatnonzero(codes == k)[0])]
            raise DataValidationError(
                f"{where(name, label, True)}: column {column!r}: {quoted(u)} is not a profile code "
                "like 'A1' (task letter + profile number)"
            )
        task[k], alt[k] = m.group(1).upper(), m.group(2)
    return task[codes], alt[codes]


def _shown(frame: pd.DataFrame, column: str) -> np.ndarray:
    codes, uniques = pd.factorize(frame[column], use_na_sentinel=False)
    shown = np.array(
        [not (pd.isna(u) or normalize_value(u) in ("0", "")) for u in uniques], dtype=bool
    )
    return shown[codes] if len(uniques) else np.zeros(len(frame), dtype=bool)


def _users(
    frame: pd.DataFrame, m: PresidentialMapping, name: str
) -> tuple[pd.DataFrame | None, Schema | None, list[str]]:
    present = [a for a in m.respondent_attributes if a.source_column in frame.columns]
    absent = [a.source_column for a in m.respondent_attributes if a not in present]
    if not present:
        return None, None, absent
    cols = [a.source_column for a in present]
    user_table(frame, m.respondent, cols, {}, name, True)  # values constant per respondent
    first = frame.loc[~frame[m.respondent].duplicated().to_numpy()]
    users = pd.DataFrame(index=pd.Index(first[m.respondent].to_numpy(), name="respondent"))
    feats = []
    for a in present:
        vals = parse_attribute(first[a.source_column], a, name, True, a.source_column)
        users[a.name] = vals
        feats.append(a.to_feature(vals) if a.kind == "numeric" else a.to_feature())
    return users, Schema(tuple(feats)), absent


def _load(
    path: Path, m: PresidentialMapping, *, check_condition: bool, read_csv_kwargs: Any
) -> Study:
    name = str(path)
    frame = read_csv_lines(path, **dict(read_csv_kwargs or {}))
    attr_cols = [a.source_column for a in m.attributes]
    needed = [m.respondent, m.profile, m.chosen, *attr_cols]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        candidates = [
            c
            for c in frame.columns
            if isinstance(c, str) and re.fullmatch(r"c\w+m", c) and c not in attr_cols
        ]
        hint = (
            "Check the column names in data_loaders/data/presidential_levels.json or pass "
            "load_presidential(path, columns={'<attribute>': '<column>'})"
        )
        if candidates and set(needed) & set(frame.columns):  # only for a conjoint-like header
            hint += f"; unmapped filler-like columns in the file: {candidates[:MAX_NAMES]}"
        raise missing_columns_error(name, missing, frame.columns, True, hint, needed=needed)
    task, alt = _split_profiles(frame, m.profile, name)
    fillers = [a for a in m.attributes if a.name in m.fillers]
    shown = np.column_stack([_shown(frame, a.source_column) for a in fillers]) if fillers else None
    if check_condition and m.condition and m.condition in frame.columns and shown is not None:
        cond = pd.to_numeric(frame[m.condition], errors="coerce").to_numpy()
        n_shown = shown.sum(axis=1)
        bad = ~np.isnan(cond) & (n_shown != cond)
        if bad.any():
            i = int(np.argmax(bad))
            seen = [a.name for a, s in zip(fillers, shown[i], strict=True) if s]
            raise DataValidationError(
                f"{where(name, frame.index[i], True)}: {int(n_shown[i])} filler attributes "
                f"are shown ({seen}) but column {m.condition!r} says {int(cond[i])}; check the "
                "filler column names in the mapping (or pass check_condition=False)"
            )
    work = frame.assign(_task=task, _alt=alt)
    verified = (
        ""
        if m.verified
        else (
            " The mapping of numeric level codes to labels follows the order of DT-PBO Table 13 "
            "and has not been verified against the deposit."
        )
    )
    study = build_from_long(
        work,
        list(m.attributes),
        name=name,
        from_file=True,
        respondent=m.respondent,
        task="_task",
        alternative="_alt",
        chosen=m.chosen,
        opt_out_alternatives=(),
        no_choice="drop",
        exclude=(),
        user_columns=(),
        user_schema=None,
        meta=StudyMeta(
            key="presidential",
            title="Presidential candidates (conjoint)",
            description=(
                "Forced choices between two hypothetical presidential candidates described by "
                "the 4 core attributes (age, party, positions on gay marriage and health care) "
                "and 0-16 randomly drawn filler attributes (Bansak et al., MTurk stage 2). "
                "Fillers a respondent did not see take the level 'not shown'." + verified
            ),
            source=f"user-supplied file {path} (cand_s2_MTurk.csv)",
            citation=CITATION,
            license=LICENSE,
        ),
    )
    users, user_schema, absent = _users(frame, m, name)
    if users is not None:
        study.users = users
        study.user_schema = user_schema
        study.data.users = users
    if shown is not None:
        first = ~frame[m.respondent].duplicated().to_numpy()
        study.extras["fillers_shown"] = {
            r: tuple(a.name for a, s in zip(fillers, row, strict=True) if s)
            for r, row in zip(frame[m.respondent].to_numpy()[first], shown[first], strict=True)
        }
    study.extras["mapping_verified"] = m.verified
    study.extras["mapping_note"] = m.note
    study.extras["missing_respondent_columns"] = absent
    # 10-20 tasks per respondent: three held out (the published design's hold-out)
    study.plan = dataclasses.replace(plan_with(study), test_tasks=3)
    return study


@lru_cache(maxsize=2)
def _load_default(stamp: tuple[str, int, int], mapping_stamp: tuple[str, int, int]) -> Study:
    study = _load(
        Path(stamp[0]), read_mapping(mapping_stamp[0]), check_condition=True, read_csv_kwargs=None
    )
    freeze(study.data.X, study.data.pairs, study.data.respondent, study.data.task)
    return study


def load_presidential(
    path: str | os.PathLike[str] | None = None,
    *,
    mapping: PresidentialMapping | str | os.PathLike[str] | None = None,
    columns: Mapping[str, str] | None = None,
    check_condition: bool = True,
    read_csv_kwargs: Mapping[str, Any] | None = None,
) -> Study:
    """Load the presidential-candidate conjoint (``cand_s2_MTurk.csv``).

    Parameters
    ----------
    path
        The CSV file; default ``$DTPBO_PRESIDENTIAL_PATH``.
    mapping
        A :class:`PresidentialMapping` or mapping JSON file; default
        ``data_loaders/data/presidential_levels.json``.
    columns
        Other column names for roles (``respondent``, ``profile``, ``chosen``,
        ``condition``) or attributes (``gender``, ``age``...).
    check_condition
        Require the number of shown fillers of each row to equal ``condition``.
    read_csv_kwargs
        Extra arguments for :func:`pandas.read_csv`.

    Raises
    ------
    DataNotAvailableError
        When no path is given and ``$DTPBO_PRESIDENTIAL_PATH`` is unset, or the file is
        missing.
    DataValidationError
        For malformed data (file and line named).
    """
    p = resolve_path(path, ENV_VAR, what="presidential conjoint data", how_to=HOW_TO)
    if mapping is None and columns is None and check_condition and read_csv_kwargs is None:
        return _load_default(file_stamp(p), file_stamp(MAPPING_FILE))
    if isinstance(mapping, PresidentialMapping):
        m = mapping
    else:
        m = read_mapping(mapping if mapping is not None else MAPPING_FILE)
    if columns:
        m = m.with_columns(columns)
    return _load(p, m, check_condition=check_condition, read_csv_kwargs=read_csv_kwargs)
