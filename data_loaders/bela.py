"""BELA: breast-cancer screening discrete choice experiment in Belarus (DT-PBO App. G.3).

Mandrik, Yaumenenka, Herrero & Jonker (2019), PLoS ONE 14(11): e0224667 (CC BY 4.0).
The data are not in this repository. Point the loader at your copy::

    study = load_bela("path/to/bela.csv")          # or set DTPBO_BELA_PATH

Assumed file format (long format, one row per respondent x task x alternative)
------------------------------------------------------------------------------
The published layout is "respondent id, task, alternative, 10 attributes, chosen flag"
(DT-PBO Table 11); the column names and codes below are our assumption, and every one can
be changed with ``columns=`` / ``codes=`` / ``code_base=`` (or a whole attribute table
with ``attributes=``).

Roles (default column: accepted values)

* respondent (``id``): any id
* task (``task``): any id, 18 per respondent
* alternative (``alt``): ``A``, ``B``; opt-out rows ``C``, ``3``, ``opt-out``, ``optout``,
  ``opt out``, ``none`` or ``neither``
* chosen (``choice``): 1/0, true/false, yes/no

Attributes (default column = name: labels, or 0-based codes in this order)

* ``invitation``: ``postal letter`` / ``telephone call`` (also ``letter``, ``phone``...)
* ``appointment`` (arranged right away): ``no`` / ``yes``
* ``information`` (comprehensive information): ``no`` / ``yes``
* ``travel_time``: 20 / 40 / 60 / 90 minutes (``"20 min"`` is read too)
* ``waiting_time``: 20 / 40 / 60 minutes
* ``good_doctor``: ``no`` / ``yes``
* ``modality``: ``manual`` / ``mammography`` / ``both`` (also ``manual examination``,
  ``manually and by mammography``...)
* ``sensitivity``: 60 / 70 / 80 / 90 % (0.6-0.9 and ``"60%"`` are read too)
* ``combine`` (with other visits): ``no`` / ``yes``
* ``cost``: 0 / 20 / 40 BRB

Numeric attributes are stored as numbers (minutes, %, BRB), so trees split them by
thresholds ("sensitivity >= 85%"). Codes are 0-based level positions in the order above
(``code_base=1`` for 1-based codes; yes/no attributes then read 1 = no, 2 = yes, so pass
``codes={"appointment": {1: "yes", 2: "no"}}`` if your file codes yes first). Labels are
matched case-insensitively. Opt-out rows may leave the attributes empty. A task where
neither A nor B (nor an opt-out row) is chosen counts as an opt-out.

Processing (as in DT-PBO): opt-out choices give no comparison; respondents who opted out
in more than 80% of their tasks are excluded (``study.extras["excluded"]``); each A-vs-B
choice is one comparison.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from data_loaders._common import env_path_status, file_stamp, freeze, resolve_path
from data_loaders.conjoint import (
    Attribute,
    MaxOptOutShare,
    StudyMeta,
    build_from_long,
    read_table,
    resolve_attributes,
)
from pbo_core.data import Study

ENV_VAR = "DTPBO_BELA_PATH"
HOW_TO = (
    "The BELA data are not distributed with DT-PBO Explorer. Obtain them from the "
    "publisher of Mandrik et al. (2019), PLoS ONE 14(11): e0224667, "
    "doi:10.1371/journal.pone.0224667 (Supporting Information), save them as a long-format "
    "CSV (see data_loaders/bela.py for the expected columns) and call "
    "load_bela('path/to/file.csv') or set DTPBO_BELA_PATH."
)
LICENSE = "CC BY 4.0 (Mandrik et al. 2019)"
CITATION = (
    "Mandrik, O., Yaumenenka, A., Herrero, R. and Jonker, M. F. (2019). Population "
    "preferences for breast cancer screening policies: Discrete choice experiment in "
    "Belarus. PLoS ONE 14(11): e0224667. doi:10.1371/journal.pone.0224667"
)

#: Default column of each role (respondent/task/alternative/chosen).
DEFAULT_COLUMNS: dict[str, str] = {
    "respondent": "id",
    "task": "task",
    "alternative": "alt",
    "chosen": "choice",
}
DEFAULT_OPT_OUT: tuple[str, ...] = ("C", "3", "opt-out", "optout", "opt out", "none", "neither")

_YES_NO = ("no", "yes")

BELA_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        "invitation",
        "binary",
        levels=("postal letter", "telephone call"),
        label="Way of invitation",
        aliases={
            "letter": "postal letter",
            "postal": "postal letter",
            "post": "postal letter",
            "mail": "postal letter",
            "telephone": "telephone call",
            "phone": "telephone call",
            "phone call": "telephone call",
            "call": "telephone call",
        },
        description="How the woman is invited to screening.",
    ),
    Attribute(
        "appointment",
        "binary",
        levels=_YES_NO,
        label="Appointment arranged right away",
        description="The appointment can be arranged during the invitation.",
    ),
    Attribute(
        "information",
        "binary",
        levels=_YES_NO,
        label="Comprehensive information",
        description="Comprehensive information on breast cancer and screening at invitation.",
    ),
    Attribute(
        "travel_time",
        "numeric",
        values=(20, 40, 60, 90),
        label="Travel time",
        unit="min",
        description="Total travel time from home to the screening facility.",
    ),
    Attribute(
        "waiting_time",
        "numeric",
        values=(20, 40, 60),
        label="Waiting time",
        unit="min",
        description="Waiting time in the facility during the screening visit.",
    ),
    Attribute(
        "good_doctor",
        "binary",
        levels=_YES_NO,
        label="A good doctor",
        description="The physician is perceived as 'a good doctor'.",
    ),
    Attribute(
        "modality",
        "categorical",
        levels=("manual", "mammography", "both"),
        label="Screening modality",
        aliases={
            "manual examination": "manual",
            "manually": "manual",
            "clinical breast examination": "manual",
            "mammogram": "mammography",
            "manually and by mammography": "both",
            "manual and mammography": "both",
            "manual + mammography": "both",
            "manual examination and mammography": "both",
        },
        description="Manual examination, mammography, or both.",
    ),
    Attribute(
        "sensitivity",
        "numeric",
        values=(60, 70, 80, 90),
        codes={"0.6": 60, "0.7": 70, "0.8": 80, "0.9": 90},
        label="Test sensitivity",
        unit="%",
        description="Probability that the test detects cancer when it is present.",
    ),
    Attribute(
        "combine",
        "binary",
        levels=_YES_NO,
        label="Combine with other visits",
        description="Screening can be combined with other medical visits.",
    ),
    Attribute(
        "cost",
        "numeric",
        values=(0, 20, 40),
        label="Cost",
        unit="BRB",
        description="Out-of-pocket cost of the test (Belarusian roubles).",
    ),
)


def bela_status() -> tuple[bool, str]:
    """``(available, reason)``: whether ``$DTPBO_BELA_PATH`` names an existing file."""
    return env_path_status(ENV_VAR, HOW_TO)


def _configured(
    code_base: int, codes: Mapping[str, Mapping[Any, Any]] | None, columns: Mapping[str, str]
) -> list[Attribute]:
    attrs = []
    names = {a.name for a in BELA_ATTRIBUTES}
    unknown = set(codes or {}) - names
    unknown |= set(columns) - names - set(DEFAULT_COLUMNS)
    if unknown:
        raise KeyError(
            f"unknown BELA attribute(s) {sorted(unknown)}; attributes are {sorted(names)} "
            f"and roles {sorted(DEFAULT_COLUMNS)}"
        )
    for a in BELA_ATTRIBUTES:
        kw: dict[str, Any] = {"code_base": code_base}
        if a.name in columns:
            kw["column"] = columns[a.name]
        if codes and a.name in codes:
            kw["codes"] = {**dict(a.codes), **dict(codes[a.name])}
        attrs.append(replace(a, **kw))
    return attrs


def _load(
    path: Path,
    *,
    columns: Mapping[str, str] | None,
    codes: Mapping[str, Mapping[Any, Any]] | None,
    code_base: int,
    opt_out_alternatives: Collection[Any],
    max_opt_out_share: float | None,
    attributes: Sequence[Attribute] | str | os.PathLike[str] | None,
    user_columns: Sequence[str],
    read_csv_kwargs: Mapping[str, Any] | None,
) -> Study:
    cols = {**DEFAULT_COLUMNS, **dict(columns or {})}
    if attributes is not None:
        attrs = resolve_attributes(attributes)
    else:
        attrs = _configured(code_base, codes, columns or {})
    frame, name, from_file = read_table(path, None, read_csv_kwargs)
    exclude = [MaxOptOutShare(max_opt_out_share)] if max_opt_out_share is not None else []
    study = build_from_long(
        frame,
        attrs,
        name=name,
        from_file=from_file,
        respondent=cols["respondent"],
        task=cols["task"],
        alternative=cols["alternative"],
        chosen=cols["chosen"],
        opt_out_alternatives=opt_out_alternatives,
        no_choice="opt_out",
        exclude=exclude,
        user_columns=user_columns,
        user_schema=None,
        meta=StudyMeta(
            key="bela",
            title="BELA: breast cancer screening (Belarus DCE)",
            description=(
                "Discrete choice experiment on breast cancer screening in Belarus: 18 tasks "
                "per respondent, each between screening programmes A and B described by 10 "
                "attributes, plus an opt-out. Opt-out choices are ignored; respondents who "
                "opted out in more than 80% of their tasks are excluded (DT-PBO App. G.3)."
            ),
            source=f"user-supplied file {path}",
            citation=CITATION,
            license=LICENSE,
        ),
        hint=(
            "Map your column names with load_bela(path, columns={'respondent': ..., "
            "'task': ..., 'alternative': ..., 'chosen': ..., '<attribute>': ...})."
        ),
    )
    return study


@lru_cache(maxsize=4)
def _load_default(stamp: tuple[str, int, int]) -> Study:
    study = _load(
        Path(stamp[0]),
        columns=None,
        codes=None,
        code_base=0,
        opt_out_alternatives=DEFAULT_OPT_OUT,
        max_opt_out_share=0.8,
        attributes=None,
        user_columns=(),
        read_csv_kwargs=None,
    )
    freeze(study.data.X, study.data.pairs, study.data.respondent, study.data.task)
    return study


def load_bela(
    path: str | os.PathLike[str] | None = None,
    *,
    columns: Mapping[str, str] | None = None,
    codes: Mapping[str, Mapping[Any, Any]] | None = None,
    code_base: int = 0,
    opt_out_alternatives: Collection[Any] = DEFAULT_OPT_OUT,
    max_opt_out_share: float | None = 0.8,
    attributes: Sequence[Attribute] | str | os.PathLike[str] | None = None,
    user_columns: Sequence[str] = (),
    read_csv_kwargs: Mapping[str, Any] | None = None,
) -> Study:
    """Load the BELA discrete choice experiment from your copy of the data.

    Parameters
    ----------
    path
        Long-format CSV (``.gz`` allowed); default ``$DTPBO_BELA_PATH``.
    columns
        File column of a role (``respondent``, ``task``, ``alternative``, ``chosen``) or
        of an attribute (``travel_time``...), where it differs from the defaults in the
        module docstring.
    codes
        Extra raw-code -> level mappings per attribute, e.g.
        ``{"appointment": {1: "yes", 2: "no"}}``.
    code_base
        ``0`` (default) if integer codes are 0-based level positions, ``1`` if 1-based.
    opt_out_alternatives
        Alternative values that mark an opt-out row.
    max_opt_out_share
        Exclude respondents who opted out in more than this share of tasks (``None``
        keeps everyone).
    attributes
        Replace the whole attribute table (list or JSON file); ``columns``/``codes``/
        ``code_base`` then apply only to the roles.
    user_columns
        Respondent-level columns to copy into ``study.users``.
    read_csv_kwargs
        Extra arguments for :func:`pandas.read_csv` (e.g. ``{"sep": ";"}``).

    Raises
    ------
    DataNotAvailableError
        When no path is given, ``$DTPBO_BELA_PATH`` is unset, or the file is missing.
    DataValidationError
        For malformed data (file and line named).
    """
    p = resolve_path(path, ENV_VAR, what="BELA data", how_to=HOW_TO)
    default = (
        columns is None
        and codes is None
        and code_base == 0
        and tuple(opt_out_alternatives) == DEFAULT_OPT_OUT
        and max_opt_out_share == 0.8
        and attributes is None
        and not user_columns
        and read_csv_kwargs is None
    )
    if default:
        return _load_default(file_stamp(p))
    return _load(
        p,
        columns=columns,
        codes=codes,
        code_base=code_base,
        opt_out_alternatives=opt_out_alternatives,
        max_opt_out_share=max_opt_out_share,
        attributes=attributes,
        user_columns=user_columns,
        read_csv_kwargs=read_csv_kwargs,
    )
