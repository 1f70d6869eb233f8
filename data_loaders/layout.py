"""The shape of an analyst's choice file: layout, columns, alternatives, attributes.

:class:`ColumnMap` says how a choice file is laid out (the command line's column flags,
the Add-a-study form's choices). Unset parts are inferred from the file by
:func:`resolve_columns`, which returns a fully resolved map and a note for everything it
inferred (the command line prints them, the form shows them):

* **Layout** (``format="auto"``): long when the profile (or a rank) column exists; wide
  when a column names the alternatives and attribute columns carry them as suffixes.
* **Respondent and task columns**: the defaults ``respondent`` and ``task`` may simply be
  absent (``""`` says "none" explicitly). Without a task column a long file's respondent
  rows are one task, and a wide file's rows are numbered per respondent; without a
  respondent column every task is a respondent of its own (wide: every row, the id
  being the file line).
* **Alternatives** of a wide file: the suffixes shared by several column stems
  (``price1..price6``, ``ic.gc``/``ic_gc``, Fishing's ``pbeach``/``ppier``/...), checked
  against the values of the choice column (``choice1..choice6`` -> ``1..6``, or
  ``gc/gr/ec/er/hp``); a stem present for only some alternatives is not an attribute and
  is named in a note.
* **The choice column** of a wide file when the default ``choice`` is absent: the one
  column whose values all name alternatives.

:func:`infer_attributes` proposes the attribute table (with the alternatives known, so
every alternative's cells count), :func:`feature_candidates` the respondent features
(columns constant within a respondent). The money attribute is proposed by the one money
rule, :func:`pbo_core.units.money_candidate`. Problems raise
:class:`~pbo_core.data.DataValidationError` naming the file and listing the columns it
has.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from data_loaders import fields
from data_loaders._common import describe_columns
from data_loaders.conjoint import Attribute, is_missing, normalize_value
from data_loaders.conjoint.build import CHOSEN_FALSE, CHOSEN_TRUE
from data_loaders.limits import MAX_ALTERNATIVES
from pbo_core.data import DataValidationError
from pbo_core.errors import WideLayoutError
from pbo_core.units import unit_in_name

__all__ = [
    "DEFAULT_RESPONDENT",
    "DEFAULT_TASK",
    "ColumnMap",
    "detect_missing",
    "feature_candidates",
    "frequent_levels",
    "infer_attributes",
    "labelled_alternatives",
    "list_columns",
    "missing_codes",
    "natural_key",
    "parse_zero_rule",
    "readable",
    "resolve_columns",
]

#: Default respondent and task columns: when absent, the file simply has none.
DEFAULT_RESPONDENT = "respondent"
DEFAULT_TASK = "task"
DEFAULT_PROFILE = "profile"
#: A long file without a chosen flag but with this column holds rankings.
DEFAULT_RANK = "rank"
#: Other names (lower case, in order of preference) a respondent column goes by: used
#: when the file has no ``respondent`` column and none was named.
RESPONDENT_NAMES = (
    "respondent_id",
    "respondentid",
    "resp_id",
    "respid",
    "individual",
    "individual_id",
    "person",
    "person_id",
    "personid",
    "pid",
    "participant",
    "participant_id",
    "subject",
    "subject_id",
    "household",
    "household_id",
    "hhid",
    "panelist",
    "panelist_id",
    "customer",
    "customer_id",
    "user",
    "user_id",
    "userid",
    "idcase",
    "caseid",
    "case_id",
    "id",
)
#: Other names (lower case, in order of preference) a long file's chosen flag goes by:
#: used when the file has no ``chosen`` column and its values are flags (yes/no, 1/0).
CHOSEN_NAMES = ("choice", "chosen_flag", "choice_flag", "selected", "choice_yn", "depvar", "y")
#: Separators between a wide column's stem and its alternative (``ic.gc``, ``ic_gc``).
SEPARATORS = (".", "_", "-")
#: Most levels an inferred categorical attribute takes.
MAX_LEVELS = 30
_MAX_NAME = 64
Format = Literal["long", "wide", "auto"]
#: Tuple fields of :class:`ColumnMap` (lists in JSON); the optional ones may be null.
_LIST_FIELDS = (
    "alternatives",
    "opt_out",
    "drop_attributes",
    "availability",
    "no_choice",
    "missing",
    "fill_attributes",
    "zero_when",
    "available_when",
    "categorical",
    "numeric",
    "ignore",
)
#: Tuple fields of :class:`ColumnMap` holding ``(name, value)`` pairs (lists of two in JSON).
_PAIR_FIELDS = ("respondent_features", "levels", "units")
_OPTIONAL_LISTS = ("availability", "missing")
#: Name parts (lower case) of availability columns: ``TRAIN_AV``, ``avail_car``.
AVAILABILITY_NAMES = ("av", "avail", "available", "availability", "avl")
#: Codes detected as missing values (:func:`detect_missing`).
MISSING_CODES = ("-1", "-2", "99")
#: Names (lower case) of a weight column.
WEIGHT_NAMES = ("weight", "weights", "wt", "wgt", "weighting")
#: Names (lower case) a wide file's chosen column goes by (besides ``choice``).
WIDE_CHOICE_NAMES = ("choice", "chosen", "choice_id", "chosen_alternative", "mode", "depvar")


@dataclass(frozen=True)
class ColumnMap:
    """Layout and column names of a choice file (the command line's column flags).

    ``""`` means "no such column"; ``None`` (and ``format="auto"``, empty
    ``alternatives``) means "infer it" (:func:`resolve_columns`).

    Attributes
    ----------
    format
        ``"long"``, ``"wide"`` or ``"auto"``.
    respondent, task, profile
        Column names (``profile``: the alternative of a long row).
    chosen
        The chosen flag (long, default ``chosen``) or chosen alternative (wide, default
        ``choice``); ``""`` with a rank column.
    alternatives
        Wide: the alternatives, as they appear in column names and choice values.
    separator
        Wide: between stem and alternative in column names (``""``, ``"."``, ``"_"``).
    rank
        Long: a rank column (1 = best) instead of a chosen flag.
    opt_out
        Values meaning "none of these": a long file's profile values, a wide file's
        choice values.
    alternative_attribute
        Add a categorical attribute ``alternative`` whose levels are the alternatives
        (alternative-specific constants): ``True``, ``False``, or ``None``: when the
        alternatives carry names (brands, modes: labelled alternatives, the
        econometrician's default), not when they are numbered or lettered profiles of a
        generic design (:func:`labelled_alternatives`).
    reference
        The alternative whose constant is 0 (``None``: the first).
    respondent_features
        ``(column, label)`` pairs: columns constant within a respondent, kept as the
        study's respondent features with these labels.
    money_attribute
        The numeric attribute that is money (``""``: none; ``None``: the one named price
        or cost, if any).
    time_attribute
        The numeric attribute that is a travel time (``""`` or ``None``: none; never
        inferred: a duration in seconds may be an acceleration). The analysis plan's
        value of time divides its slope by the money slope.
    drop_attributes
        Attributes left out of the study (e.g. one of three exactly collinear ones).
    position
        Wide: where the alternative sits in a column name, ``"suffix"`` (``price1``,
        ``time.car``, ``TimePT``) or ``"prefix"`` (``TRAIN_TT``); ``None``: inferred.
    availability
        Wide: one column per alternative (in the order of ``alternatives``; ``""``: always
        available) whose 1/0 values say whether the alternative was in the choice set
        (``TRAIN_AV``); ``None``: inferred from the names (``*_AV``, ``avail_*``).
    choice_coding
        Wide: how the chosen column names the alternative: ``"names"``, ``"1"`` (numbers
        1..J in the order of ``alternatives``) or ``"0"`` (0..J-1); ``None``: inferred.
    no_choice
        Wide: chosen-column values meaning "no or unknown choice" (SwissMetro's
        ``CHOICE`` 0): such rows are dropped and counted.
    missing
        Missing-value codes: ``"-1"`` (missing in every column) or ``"COLUMN=99"`` (in that
        column only: 99 may be a value elsewhere, a trip of 99 minutes). An attribute cell
        of an available alternative holding one drops its choice situation, a respondent
        feature's cell becomes empty (:func:`missing_codes`); ``None``: detected among -1,
        -2 and 99 (:data:`MISSING_CODES`), per column and only with evidence
        (:func:`detect_missing`).
    fill_attributes
        Wide: attribute stems given for some alternatives only, used as attributes with 0
        for the alternatives without the column (a cost for two of three modes).
    weight
        A weight column: recorded and reported, not an attribute (the models take no
        weights); ``None``: a column named ``weight`` (:data:`WEIGHT_NAMES`), else none.
    levels
        ``(attribute, rule)`` pairs for text attributes with many levels: ``keep`` (every
        level), ``drop`` (no attribute) or ``group:K`` (the K most frequent levels, the
        rest grouped as ``other``). A text column with more than :data:`MAX_LEVELS`
        levels and no rule is left out, with a note.
    zero_when
        Wide: rules ``"CO for TRAIN,SM when GA=1"`` setting an attribute's cells to 0 for
        those alternatives (all without ``for ...``) on the rows where a column has a value
        (Biogeme's ``TRAIN_CO * (GA == 0)``: no fare for travel-card holders);
        :func:`parse_zero_rule`.
    units
        ``(attribute, unit)`` pairs stating attributes' units (``--units TT=min,CO=CHF``);
        a unit is never assumed: an attribute without one is shown per unit.
    where
        A row selection (``"PURPOSE in (1, 3) and CHOICE != 0"``): only the file's rows
        meeting it are read (:func:`data_loaders.prepare.parse_where`).
    categorical, numeric
        Columns the analyst declares categorical codes or numbers (integer codes with
        few values are asked about, never guessed).
    ignore
        Columns that are not part of the study (a row index, an id that is no
        attribute).
    split
        A column whose values (train, validation, test) are the analyst's own split: the
        study's ``study`` split (a validation row trains).
    available_when
        Rules ``"car: license == 1"``: an alternative is in the choice set only on the
        rows where a column meets a condition (``==``, ``!=``, ``>``, ``>=``, ``<``,
        ``<=``; wide: with availability columns too, both must hold; long: the
        alternative is a value of the profile column and its rows where the condition is
        false are removed); read by :func:`data_loaders.prepare.availability_rule`.
    """

    format: Format = "long"
    respondent: str = DEFAULT_RESPONDENT
    task: str = DEFAULT_TASK
    profile: str = DEFAULT_PROFILE
    chosen: str | None = None
    alternatives: tuple[str, ...] = ()
    separator: str | None = None
    rank: str = ""
    opt_out: tuple[str, ...] = ()
    alternative_attribute: bool | None = None
    respondent_features: tuple[tuple[str, str], ...] = ()
    money_attribute: str | None = None
    time_attribute: str | None = None
    drop_attributes: tuple[str, ...] = ()
    position: str | None = None
    availability: tuple[str, ...] | None = None
    choice_coding: str | None = None
    no_choice: tuple[str, ...] = ()
    missing: tuple[str, ...] | None = None
    fill_attributes: tuple[str, ...] = ()
    weight: str | None = None
    levels: tuple[tuple[str, str], ...] = ()
    zero_when: tuple[str, ...] = ()
    available_when: tuple[str, ...] = ()
    units: tuple[tuple[str, str], ...] = ()
    reference: str | None = None
    where: str = ""
    categorical: tuple[str, ...] = ()
    numeric: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    split: str = ""

    def __post_init__(self) -> None:
        # every field bounded before anything reads it (a new field too)
        fields.check_column_fields(self.__dict__)

    @property
    def chosen_column(self) -> str:
        """The chosen flag (long, default ``chosen``) or chosen alternative (wide,
        ``choice``); ``""`` for a long file with ranks."""
        if self.chosen is not None:
            return self.chosen
        if self.format == "long" and self.rank:
            return ""
        return "chosen" if self.format != "wide" else "choice"

    @property
    def feature_names(self) -> list[str]:
        """The respondent-feature columns."""
        return [n for n, _ in self.respondent_features]

    @property
    def template(self) -> str:
        """A wide column's name from stem and alternative (``{stem}.{alt}``, or
        ``{alt}_{stem}`` when the alternative is a prefix)."""
        if self.position == "prefix":
            return "{alt}" + (self.separator or "") + "{stem}"
        return "{stem}" + (self.separator or "") + "{alt}"

    def column(self, stem: str, alt: str) -> str:
        """The wide column of attribute stem ``stem`` for alternative ``alt``."""
        return self.template.format(stem=stem, alt=alt)

    def source_columns(self, source: str) -> list[str]:
        """The file's columns of the attribute whose source column is ``source``: one per
        alternative in a wide file (:meth:`column`), else ``source`` itself."""
        if self.format == "wide":
            return [self.column(source, alt) for alt in self.alternatives]
        return [source]

    def reserved(self) -> list[str]:
        """Columns that are not attributes (those named, without empty names)."""
        cols = [
            self.respondent, self.task, self.chosen_column, self.rank, self.weight or "",
            self.split,
        ]  # fmt: skip
        cols += [self.profile] if self.format != "wide" else []
        cols += list(self.availability or ())
        return [c for c in cols if c] + self.feature_names + list(self.ignore)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (tuples as lists)."""
        d = asdict(self)
        d["alternatives"] = list(self.alternatives)
        d["opt_out"] = list(self.opt_out)
        d["drop_attributes"] = list(self.drop_attributes)
        for k in _LIST_FIELDS[3:]:
            v = getattr(self, k)
            d[k] = None if v is None else list(v)
        for k in _PAIR_FIELDS:
            d[k] = [list(p) for p in getattr(self, k)]
        return d

    def to_json(self) -> str:
        """The mapping as canonical JSON (hashable: a grid cell's ``columns``)."""
        return json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ColumnMap:
        """Inverse of :meth:`as_dict` (also reads the older ``study.json`` mappings)."""
        d = dict(d)
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"column map: unknown keys {sorted(unknown)}")
        for k in _LIST_FIELDS:
            if k in d and not (d[k] is None and k in _OPTIONAL_LISTS):
                d[k] = tuple(str(a) for a in d[k] or ())
        for k in ("levels", "units"):
            if k in d:
                d[k] = tuple((str(p[0]), str(p[1])) for p in d[k] or ())
        if "respondent_features" in d:
            d["respondent_features"] = tuple(
                (str(p[0]), str(p[1]) if len(p) > 1 else "") for p in d["respondent_features"]
            )
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> ColumnMap:
        """Inverse of :meth:`to_json`."""
        return cls.from_dict(dict(json.loads(text)))


#: Words that name a position or an option, not an alternative (``option1``, ``left``).
_GENERIC = re.compile(
    r"^(alt|alternative|option|opt|profile|prof|choice|card|concept|scenario|design|"
    r"product|package|plan|offer|candidate|job|left|right|top|bottom|first|second|third|"
    r"fourth|none)?[ _.\-]?([0-9]+|[a-z])?$",
    re.IGNORECASE,
)
#: Labelled alternatives number at most this many (more distinct values are profiles).
MAX_LABELLED = 30


def labelled_alternatives(names: Sequence[str]) -> tuple[bool, str]:
    """Do the alternatives carry names (brands, modes, suppliers: *labelled*, so each
    gets a constant) or are they the numbered or lettered profiles of a generic design
    (``1, 2``, ``A, B``, ``option1, option2``, ``left, right``)? ``(labelled, why not)``."""
    names = [str(n).strip() for n in names if str(n).strip()]
    if len(names) < 2:
        return False, "fewer than two"
    if len(names) > MAX_LABELLED:
        return False, f"{len(names)} distinct values (profiles, not named alternatives)"
    if all(_GENERIC.match(n) for n in names):
        return False, "numbered or lettered profiles"
    return True, ""


def readable(name: str) -> str:
    """A first label from a column name: ``hsg2`` -> ``Hsg2``, ``ic_gc`` -> ``Ic gc``."""
    text = re.sub(r"[_.]+", " ", str(name)).strip()
    return text[:1].upper() + text[1:] if text else str(name)


def list_columns(columns: Iterable[Any]) -> str:
    """``the file has columns: 'a', 'b', 'c'`` (an analyst's own file: listed in full
    when the names are plain, see :func:`data_loaders._common.describe_columns`)."""
    return describe_columns(columns, own=True)


def _missing(name: str, col: str, role: str, flag: str, have: Sequence[str]) -> DataValidationError:
    return DataValidationError(
        f"{name}, line 1 (header): missing column {col!r} ({role}, {flag}); {list_columns(have)}"
    )


# ----------------------------------------------------------------------------- wide columns
@dataclass(frozen=True)
class _Group:
    """Alternatives shared as suffixes (or prefixes) by several stems."""

    sep: str
    alts: tuple[str, ...]
    stems: tuple[str, ...]
    position: str = "suffix"

    @property
    def score(self) -> tuple[int, int, int]:
        return (len(self.alts) * len(self.stems), len(self.alts), int(bool(self.sep)))

    def column(self, stem: str, alt: str) -> str:
        return f"{alt}{self.sep}{stem}" if self.position == "prefix" else f"{stem}{self.sep}{alt}"


def _flip(names: Iterable[str]) -> list[str]:
    return [n[::-1] for n in names]


def _suffix_groups(names: Sequence[str], position: str = "suffix") -> list[_Group]:
    """Every (separator, alternatives, stems) with at least two stems and two alternatives
    such that ``stem + sep + alt`` (prefix: ``alt + sep + stem``) is a column for each
    pair; best first. Prefixes are found as the suffixes of the reversed names."""
    if position == "prefix":
        found = _suffix_groups(_flip(names))
        return [_Group(g.sep, tuple(_flip(g.alts)), tuple(_flip(g.stems)), "prefix") for g in found]
    order = {c: k for k, c in enumerate(names)}
    stem_alts: dict[tuple[str, str], set[str]] = defaultdict(set)
    alt_stems: dict[tuple[str, str], set[str]] = defaultdict(set)
    for c in names:
        if len(c) > _MAX_NAME:
            continue
        for k in range(1, len(c)):
            stem, alt = c[:k], c[k:]
            if alt[0] in SEPARATORS:
                continue
            sep = ""
            if stem[-1] in SEPARATORS:
                sep, stem = stem[-1], stem[:-1]
                if not stem:
                    continue
            stem_alts[(sep, stem)].add(alt)
            alt_stems[(sep, alt)].add(stem)
    seen: set[tuple[str, frozenset[str]]] = set()
    groups = []
    for (sep, _alt), stems in alt_stems.items():
        if len(stems) < 2:
            continue
        alts = set.intersection(*(stem_alts[(sep, s)] for s in stems))
        key = (sep, frozenset(alts))
        if key in seen or not 2 <= len(alts) <= MAX_ALTERNATIVES:
            continue
        seen.add(key)
        full = set.intersection(*(alt_stems[(sep, a)] for a in alts))
        first = min(full, key=lambda s: min(order[f"{s}{sep}{a}"] for a in alts))
        alt_order = sorted(alts, key=lambda a: order[f"{first}{sep}{a}"])
        stem_order = sorted(full, key=lambda s: min(order[f"{s}{sep}{a}"] for a in alts))
        groups.append(_Group(sep, tuple(alt_order), tuple(stem_order)))
    return sorted(groups, key=lambda g: g.score, reverse=True)


def _stems(
    names: Sequence[str], alts: Sequence[str], sep: str, position: str | None = "suffix"
) -> tuple[list[str], dict[str, list[str]]]:
    """Stems given for every alternative (in file order), and partial stems (given for at
    least two alternatives, not all; with the alternative as a prefix, for one too) with
    their columns."""
    if position == "prefix":
        full, partial = _stems(_flip(names), _flip(alts), sep, "suffix1")
        return _flip(full), {s[::-1]: _flip(cs) for s, cs in partial.items()}
    found: dict[str, list[str]] = {}
    for c in names:
        for a in alts:
            end = f"{sep}{a}"
            if c.endswith(end) and len(c) > len(end):
                found.setdefault(c[: -len(end)], []).append(c)
    least = 1 if position == "suffix1" and sep else 2
    full = [s for s, cs in found.items() if all(f"{s}{sep}{a}" in cs for a in alts)]
    partial = {s: cs for s, cs in found.items() if s not in full and len(set(cs)) >= least}
    return full, partial


def _separator(
    names: Sequence[str], alts: Sequence[str], positions: Sequence[str] = ("suffix",)
) -> tuple[str, list[str], str]:
    """The separator (and position) giving the most complete stems (ties: a real
    separator, then the suffix)."""
    best: tuple[str, list[str], str] = ("", [], "suffix")
    for position in positions:
        for sep in ("", *SEPARATORS):
            full, _ = _stems(names, alts, sep, position)
            if len(full) > len(best[1]) or (
                len(full) == len(best[1]) and full and sep and not best[0]
            ):
                best = (sep, full, position)
    return best


def _availability_columns(names: Sequence[str]) -> dict[tuple[str, str], dict[str, str]]:
    """Availability columns by (position, separator): alternative -> column
    (``TRAIN_AV`` -> prefix ``_``, ``TRAIN``; ``avail.car`` -> suffix ``.``, ``car``)."""
    out: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for c in names:
        low = c.lower()
        for word in AVAILABILITY_NAMES:
            for sep in SEPARATORS:
                if low.endswith(sep + word) and len(c) > len(word) + 1:
                    out[("prefix", sep)][c[: -len(word) - 1]] = c
                if low.startswith(word + sep) and len(c) > len(word) + 1:
                    out[("suffix", sep)][c[len(word) + 1 :]] = c
    return out


def _choice_keys(value: Any, choice: str) -> set[str]:
    """Keys a choice value may match an alternative by (``choice3`` -> ``3`` too)."""
    key = normalize_value(value)
    out = {key}
    prefix = normalize_value(choice)
    if key.startswith(prefix) and len(key) > len(prefix):
        out.add(key[len(prefix) :])
    return out


def _alternative_of(value: Any, choice: str) -> str:
    """The alternative a choice value names, as text (``choice3`` -> ``3``, ``1.0`` -> ``1``)."""
    text = value.strip() if isinstance(value, str) else normalize_value(value)
    if text.casefold().startswith(choice.casefold()) and len(text) > len(choice):
        return text[len(choice) :]
    return text


def _values(frame: pd.DataFrame, col: str, cap: int) -> list[Any] | None:
    """Distinct non-missing values of a column in order of appearance (``None`` past cap)."""
    vals = [v for v in pd.unique(frame[col]) if not is_missing(v)]
    return vals if len(vals) <= cap else None


def _uncovered(values: Sequence[Any], alts: Sequence[str], choice: str) -> list[Any]:
    keys = {normalize_value(a) for a in alts}
    return [v for v in values if not (_choice_keys(v, choice) & keys)]


def natural_key(s: str) -> tuple[int, float, str]:
    """Sort key putting numbers in numeric order before words (``2`` < ``10`` < ``gc``)."""
    try:
        return (0, float(s), s)
    except ValueError:
        return (1, 0.0, s)


def _natural(values: Iterable[Any]) -> list[str]:
    return sorted({str(v) for v in values}, key=natural_key)


def _shown(values: Sequence[Any], k: int = 8) -> str:
    more = f" and {len(values) - k} more" if len(values) > k else ""
    return ", ".join(str(v) for v in values[:k]) + more


@dataclass
class _Wide:
    chosen: str
    alts: tuple[str, ...]
    sep: str
    stems: list[str]
    notes: list[str] = field(default_factory=list)
    position: str = "suffix"
    availability: tuple[str, ...] = ()
    coding: str = "names"
    no_choice: tuple[str, ...] = ()
    fill: tuple[str, ...] = ()


def _bare(names: Sequence[str], alts: Sequence[str]) -> list[str]:
    """The alternatives no column name starts or ends with (constant-only alternatives)."""
    return [
        a
        for a in alts
        if not any(len(c) > len(a) and (c.endswith(a) or c.startswith(a)) for c in names)
    ]


def _integers(values: Sequence[Any]) -> list[int] | None:
    """The values as integers (``1``, ``1.0``, ``"2"``), or ``None`` if one is not."""
    out = []
    for v in values:
        try:
            x = float(normalize_value(v))
        except ValueError:
            return None
        if x != int(x):
            return None
        out.append(int(x))
    return out


#: Largest share of rows whose 0 reads as "no choice" beside choices numbered 1..J
#: (SwissMetro: 9 of 10,728); a more frequent 0 may be an alternative without columns.
MAX_NO_CHOICE_SHARE = 0.05


def _number_coding(
    values: Sequence[Any], n_alts: int, zero_share: float = 0.0
) -> tuple[str, tuple[str, ...]] | None:
    """How numbers name ``n_alts`` alternatives in their order: ``("1", ())`` for 1..J,
    ``("0", ())`` for 0..J-1, ``("1", ("0",))`` for 1..J with 0 as "no choice" (0 and J
    both present, 0 in at most :data:`MAX_NO_CHOICE_SHARE` of the rows: ``zero_share``);
    ``None`` when they cannot."""
    ints = _integers(values)
    if not ints:
        return None
    got = set(ints)
    if got <= set(range(1, n_alts + 1)):
        return "1", ()
    if got <= set(range(n_alts)):
        return "0", ()
    if got <= set(range(n_alts + 1)) and {0, n_alts} <= got and zero_share <= MAX_NO_CHOICE_SHARE:
        return "1", ("0",)
    return None


def _coding_text(coding: str, alts: Sequence[str], no_choice: Sequence[str]) -> str:
    base = int(coding)
    pairs = ", ".join(f"{k + base} = {a}" for k, a in enumerate(alts))
    extra = f"; {', '.join(no_choice)} = no choice (the row is dropped)" if no_choice else ""
    return f"numbers {pairs} (the alternatives in the order of the columns{extra})"


@dataclass
class _WideScan:
    """What the wide layout's inference reads: the file, the column map, the columns that
    may hold attributes (``names``: not named for another role, not availability flags)
    and the chosen column (``""``: to be found)."""

    frame: pd.DataFrame
    cols: ColumnMap
    name: str
    have: list[str]
    chosen: str
    opt: set[str]
    avail_found: dict[tuple[str, str], dict[str, str]]
    avail_cols: list[str]
    names: list[str]
    positions: tuple[str, ...]

    def choice_values(self, col: str) -> list[Any] | None:
        """A column's values that may name an alternative (``None``: too many)."""
        vals = _values(self.frame, col, MAX_ALTERNATIVES + len(self.opt) + 1)
        if vals is None:
            return None
        return [v for v in vals if not (_choice_keys(v, col) & self.opt)]

    def has_avail(self, g: _Group) -> bool:
        """Has every alternative of ``g`` an availability column (``TRAIN_AV``)?"""
        found = self.avail_found.get((g.position, g.sep), {})
        return all(a in found for a in g.alts)


def _scan(frame: pd.DataFrame, cols: ColumnMap, name: str, have: list[str]) -> _WideScan:
    """The chosen column as named (or ``choice``), the values naming no alternative
    (opt-outs, no-choice and missing-value codes), availability columns and the columns
    left for attributes."""
    reserved = {
        c for c in (cols.respondent, cols.task, cols.rank, cols.weight, *cols.feature_names) if c
    }
    reserved |= {c for c in cols.availability or () if c}
    chosen = cols.chosen if cols.chosen is not None else "choice"
    if chosen and chosen not in have:
        if cols.chosen is not None:
            raise _missing(name, chosen, "the chosen alternative", "--chosen-col", have)
        lower = {c.lower(): c for c in have if c not in reserved}
        chosen = lower.get("choice", "")
    # missing-value codes (declared, else -1 and -2) name no alternative either
    codes = global_missing_codes(cols) if cols.missing is not None else MISSING_CODES[:2]
    opt = {normalize_value(v) for v in (*cols.opt_out, *cols.no_choice, *codes)}
    avail_found = _availability_columns([c for c in have if c not in reserved and c != chosen])
    avail_cols: list[str] = []
    if cols.availability is None:  # availability columns are no attribute stems
        avail_cols = [c for c in have if c in {c for m in avail_found.values() for c in m.values()}]
        reserved |= set(avail_cols)
    names = [c for c in have if c not in reserved and c != chosen]
    positions = (cols.position,) if cols.position else ("suffix", "prefix")
    return _WideScan(
        frame, cols, name, have, chosen, opt, avail_found, avail_cols, names, positions
    )


def _given_groups(s: _WideScan) -> list[_Group]:
    """The attribute columns of the alternatives the analyst named."""
    alts = tuple(s.cols.alternatives)
    if len(alts) > MAX_ALTERNATIVES:
        raise DataValidationError(
            f"{s.name}: {len(alts)} alternatives are more than {MAX_ALTERNATIVES}, the limit "
            "(data_loaders.limits.MAX_ALTERNATIVES)"
        )
    if s.cols.separator is not None:
        sep, stems, pos = s.cols.separator, [], s.positions[0]
        for pos in s.positions:
            stems = _stems(s.names, alts, sep, pos)[0]
            if stems:
                break
    else:
        sep, stems, pos = _separator(s.names, alts, s.positions)
    bare = _bare(s.names, alts) if not stems else []
    if bare and len(bare) < len(alts):  # alternatives with no column: constant only
        sep, stems, pos = _separator(s.names, [a for a in alts if a not in bare], s.positions)
    return [_Group(sep, alts, tuple(stems), pos)] if stems else []


def _name_groups(s: _WideScan) -> list[_Group]:
    """The alternatives the column names share, best first (an alternative with an
    availability column first); numbered survey items are refused."""
    found = [
        g
        for p in s.positions
        for g0 in _suffix_groups([*s.names, *s.avail_cols], p)
        if (g := _without_availability(g0, s.names)) is not None
    ]
    groups = [g for g in found if not _numbered_items(g)]
    items = [g for g in found if _numbered_items(g)]
    if items and not groups:
        g = items[0]
        shown = ", ".join(g.column(st, a) for st in g.stems[:2] for a in g.alts[:3])
        raise DataValidationError(
            f"{s.name}: the only columns that could hold the alternatives' attributes are "
            f"numbered items ({shown}, ...): a number split in two ('{g.stems[0]}' + "
            f"'{g.alts[0]}'), such as survey questions (Likert scales), not an attribute "
            "per alternative; name the alternatives (--alternatives, e.g. "
            "--alternatives PT,Car,Slow for TimePT, TimeCar: an alternative without "
            "columns has its constant only) or give the long layout"
        )
    groups.sort(key=lambda g: (not s.has_avail(g), -len(g.alts) if s.has_avail(g) else 0))
    return groups


_Coding = tuple[str, tuple[str, ...]]


def _numbered_groups(
    s: _WideScan, groups: Sequence[_Group], vals: Sequence[Any], zero: float
) -> tuple[list[tuple[_Group, _Coding]], Callable[[tuple[_Group, _Coding]], tuple[bool, ...]]]:
    """The groups whose alternatives the chosen column numbers, best first, and the rank
    ordering them: an alternative with an availability column first, then an exact
    numbering (no value left over as "no choice"), then one whose every alternative is
    chosen (TRAIN_TT, CAR_TT with CHOICE 1, 2: the alternatives are TRAIN and CAR, not TT,
    CO, comfort), then the order of ``groups``."""
    numbered = [(g, _number_coding(vals, len(g.alts), zero)) for g in groups]
    found = [(g, c) for g, c in numbered if c is not None]
    n_vals = len({normalize_value(v) for v in vals})

    def rank(gc: tuple[_Group, _Coding]) -> tuple[bool, ...]:
        return (
            not s.has_avail(gc[0]),
            bool(gc[1][1]),
            len(gc[0].alts) != n_vals - len(gc[1][1]),
        )

    found.sort(key=lambda gc: (*rank(gc), _mismatch(s.frame, gc[0])))
    return found, rank


def _two_readings(
    s: _WideScan,
    numbered: Sequence[tuple[_Group, _Coding]],
    rank: Callable[[tuple[_Group, _Coding]], tuple[bool, ...]],
) -> None:
    """Refuse column names that read two ways equally well (alternatives and attributes
    swapped), unless one reading's columns are scaled far more alike."""
    if not (
        len(numbered) > 1
        and rank(numbered[0]) == rank(numbered[1])
        and _columns_of(numbered[0][0]) != _columns_of(numbered[1][0])
    ):
        return
    a, b = _mismatch(s.frame, numbered[0][0]), _mismatch(s.frame, numbered[1][0])
    if not a < 0.5 * b:  # the column names read both ways: ask
        g1, g2 = numbered[0][0], numbered[1][0]
        raise WideLayoutError(
            f"{s.name}: the columns read two ways: alternatives "
            f"{', '.join(g1.alts)} with attributes {', '.join(g1.stems[:4])}, or "
            f"alternatives {', '.join(g2.alts)} with attributes "
            f"{', '.join(g2.stems[:4])} ({g1.column(g1.stems[0], g1.alts[0])}); "
            "name the alternatives (--alternatives)"
        )


def _groups_by_choice(
    s: _WideScan, groups: list[_Group]
) -> tuple[list[_Group], str, _Coding | None]:
    """The alternatives of the column names checked against the chosen column's values
    (which may name them, number them, or be the only source of them): the groups left,
    how the alternatives were found and how the chosen column numbers them."""
    chosen = s.chosen
    vals = (s.choice_values(chosen) or []) if chosen else []
    if not vals:
        return groups, "from the column names", None
    zero = float((pd.to_numeric(s.frame[chosen], errors="coerce") == 0).mean())
    cover = [g for g in groups if not _uncovered(vals, g.alts, chosen)]
    numbered, rank = _numbered_groups(s, groups, vals, zero)
    if cover:
        return cover[:1], f"from the column names and the values of {chosen!r}", None
    if numbered and (s.has_avail(numbered[0][0]) or not _integers_name(groups)):
        _two_readings(s, numbered, rank)
        return [numbered[0][0]], f"from the column names; {chosen!r} numbers them", numbered[0][1]
    if (
        groups
        and (ints := _integers(vals)) is not None
        and set(ints) == set(range(len(groups[0].alts) + 1))
    ):
        g0 = groups[0]
        raise WideLayoutError(
            f"{s.name}: column {chosen!r} holds the numbers 0 to {len(g0.alts)} for the "
            f"{len(g0.alts)} alternatives {', '.join(g0.alts)} of the column names, and "
            f"0 in {zero:.0%} of the rows: if 0 means 'no choice', give --no-choice 0 "
            "(the row is dropped), if 'none of these', --opt-out 0; "
            "if it or another number is an alternative without attribute columns, "
            f"name all of them in order (--alternatives {','.join(g0.alts)},NAME "
            "--choice-coding 0 or 1)"
        )
    if groups and len(_uncovered(vals, groups[0].alts, chosen)) < len(vals):
        bad = _uncovered(vals, groups[0].alts, chosen)
        raise WideLayoutError(
            f"{s.name}: column {chosen!r}: the values {_shown(bad)} name no alternative "
            f"(the column names give {', '.join(groups[0].alts)}); if they mean 'none "
            "of these', give them as opt-out values (--opt-out)"
        )
    alts = tuple(_natural(_alternative_of(v, chosen) for v in vals))
    sep, stems, pos = _separator(s.names, alts, s.positions)
    found = [_Group(sep, alts, tuple(stems), pos)] if stems else []
    return found, f"from the values of {chosen!r}", None


def _chosen_and_group(
    s: _WideScan, groups: Sequence[_Group], notes: list[str]
) -> tuple[str, _Group]:
    """The chosen column (found among the columns when not named: the one whose values
    all name alternatives) and the alternatives' group."""
    if s.chosen:
        return s.chosen, groups[0]
    found: tuple[str, _Group] | None = None
    for g in groups:
        stem_cols = {g.column(st, a) for st in g.stems for a in g.alts}
        hits = []
        for c in s.names:
            vals = None if c in stem_cols else s.choice_values(c)
            if vals and not _uncovered(vals, g.alts, c):
                hits.append(c)
        if len(hits) > 1:
            raise WideLayoutError(
                f"{s.name}: several columns could name the chosen alternative "
                f"({', '.join(hits)}); say which (--chosen-col)"
            )
        if hits:
            found = (hits[0], g)
            break
    if found is None:
        raise DataValidationError(
            f"{s.name}, line 1 (header): no column 'choice' and no other column names the "
            f"chosen alternative (values among {', '.join(groups[0].alts)}); say which "
            f"(--chosen-col); {list_columns(s.have)}"
        )
    notes.append(f"choice column: {found[0]!r} (its values name the alternatives)")
    return found


def _choice_coding(
    s: _WideScan, chosen: str, g: _Group, coding: _Coding | None, notes: list[str]
) -> tuple[_Coding | None, tuple[str, ...]]:
    """How the chosen column names the alternatives (``None``: by name; else numbers from
    0 or 1) and its no-choice values; every value must name an alternative."""
    cols = s.cols
    vals = s.choice_values(chosen)
    if vals is None:
        raise DataValidationError(
            f"{s.name}: column {chosen!r} has more than {MAX_ALTERNATIVES} distinct values, so "
            "it cannot name the chosen alternative; say which column does (--chosen-col)"
        )
    no_choice = tuple(cols.no_choice)
    if cols.choice_coding in ("0", "1"):
        coding = (cols.choice_coding, no_choice)
    elif cols.choice_coding == "names":
        coding = None
    elif cols.choice_coding is None and coding is None and _uncovered(vals, g.alts, chosen):
        zero = float((pd.to_numeric(s.frame[chosen], errors="coerce") == 0).mean())
        coding = _number_coding(vals, len(g.alts), zero)
    if coding is not None and cols.choice_coding is None:
        no_choice = tuple(dict.fromkeys((*no_choice, *coding[1])))
        notes.append(f"chosen column {chosen!r}: {_coding_text(coding[0], g.alts, coding[1])}")
    if coding is not None:
        base = int(coding[0])
        keys = {str(k + base) for k in range(len(g.alts))} | {normalize_value(v) for v in no_choice}
        bad = [v for v in vals if normalize_value(v) not in keys]
    else:
        bad = _uncovered([v for v in vals if normalize_value(v) not in no_choice], g.alts, chosen)
    if bad:
        raise WideLayoutError(
            f"{s.name}: column {chosen!r}: the values {_shown(bad)} name no alternative "
            f"(expected {', '.join(g.alts)}"
            + (f", numbered from {coding[0]}" if coding is not None else "")
            + "); if they mean 'none of these', give them as opt-out values (--opt-out), if "
            "'no answer', as no-choice values (--no-choice)"
        )
    return coding, no_choice


def _stems_and_fill(
    s: _WideScan, chosen: str, g: _Group, notes: list[str]
) -> tuple[list[str], list[str]]:
    """The attribute stems given for every alternative, and those filled with 0 for the
    alternatives without the column (``--fill-attributes``; every stem of a constant-only
    alternative); what is not an attribute is said in ``notes``."""
    cols = s.cols
    names = [c for c in s.names if c != chosen]
    stems, partial = _stems(names, g.alts, g.sep, g.position)
    fill = [st for st in cols.fill_attributes if st not in stems]
    bare = _bare(names, g.alts)
    if bare:  # every attribute of the others is 0 for them: their constant is their utility
        fill += [st for st in g.stems if st not in fill and st not in stems]
        notes.append(
            f"alternative{'s' if len(bare) > 1 else ''} {', '.join(bare)}: no attribute "
            "columns, so the utility is the alternative's constant only (its attributes "
            "count as 0)"
        )
    unknown = [st for st in fill if st not in partial]
    if unknown:
        raise DataValidationError(
            f"{s.name}: --fill-attributes {', '.join(unknown)}: no such attribute given for "
            f"some alternatives (columns like {g.column(unknown[0], g.alts[0])}); "
            f"{list_columns(s.have)}"
        )
    rest = {st: cs for st, cs in partial.items() if st not in fill}
    for st in fill:
        absent = [a for a in g.alts if g.column(st, a) not in partial.get(st, [])]
        if set(absent) <= set(bare):
            continue  # said once above
        notes.append(
            f"attribute {st!r} given for {len(g.alts) - len(absent)} of {len(g.alts)} "
            f"alternatives: 0 for {', '.join(absent)} (no column {g.column(st, absent[0])})"
        )
    if rest:
        shown = sorted(c for cs in rest.values() for c in cs)
        notes.append(
            f"not attributes (given for some alternatives only): {_shown(shown, 12)} (to use "
            f"one with 0 for the other alternatives: --fill-attributes {next(iter(rest))})"
        )
    if cols.separator is None and g.sep:
        where_ = "before" if g.position == "prefix" else "after"
        notes.append(
            f"separator: {g.sep!r} between attribute and alternative in the column names "
            f"(the alternative {where_} it: {g.column(stems[0], g.alts[0])})"
        )
    elif cols.position is None and g.position == "prefix":
        notes.append(
            f"the alternative is the start of the column names ({g.column(stems[0], g.alts[0])})"
        )
    return stems, fill


def _wide_availability(s: _WideScan, g: _Group, notes: list[str]) -> tuple[str, ...]:
    """The availability column of each alternative (``""``: always available), as given
    or found by name (``TRAIN_AV``)."""
    cols = s.cols
    if cols.availability is not None:
        availability = tuple(cols.availability)
        if availability and len(availability) != len(g.alts):
            raise DataValidationError(
                f"{s.name}: --availability names {len(availability)} columns for "
                f"{len(g.alts)} alternatives ({', '.join(g.alts)})"
            )
        for c in availability:
            if c and c not in s.have:
                raise _missing(s.name, c, "an availability flag", "--availability", s.have)
        return availability
    found_av = s.avail_found.get((g.position, g.sep), {})
    if not any(a in found_av for a in g.alts):
        return ()
    availability = tuple(found_av.get(a, "") for a in g.alts)
    always = [a for a, c in zip(g.alts, availability, strict=True) if not c]
    notes.append(
        f"availability: {', '.join(c for c in availability if c)} (1 = in the choice "
        "set; rows of unavailable alternatives are no profiles)"
        + (f"; always available: {', '.join(always)}" if always else "")
    )
    return availability


def _resolve_wide(frame: pd.DataFrame, cols: ColumnMap, name: str, have: list[str]) -> _Wide:
    """Choice column, alternatives, separator, position, availability and choice coding
    of a wide file (inferred where unset)."""
    s = _scan(frame, cols, name, have)
    how, coding = "given", None
    if cols.alternatives:
        groups = _given_groups(s)
    else:
        groups, how, coding = _groups_by_choice(s, _name_groups(s))
    if not groups or not groups[0].stems:
        given = f" for the alternatives {', '.join(cols.alternatives)}" if cols.alternatives else ""
        raise DataValidationError(
            f"{name}: no attribute columns of the wide layout{given} (columns like price1, "
            "price2, ... or ic.gc, ic.gr, ... or TRAIN_TT, SM_TT, ... for every alternative); "
            f"give the alternatives (--alternatives a,b,c) or the long layout; "
            f"{list_columns(have)}"
        )
    notes: list[str] = []
    chosen, g = _chosen_and_group(s, groups, notes)
    if how != "given":
        notes.insert(0, f"alternatives: {', '.join(g.alts)} ({how})")
    coding, no_choice = _choice_coding(s, chosen, g, coding, notes)
    stems, fill = _stems_and_fill(s, chosen, g, notes)
    return _Wide(
        chosen,
        g.alts,
        g.sep,
        [*stems, *fill],
        notes,
        g.position,
        _wide_availability(s, g, notes),
        coding[0] if coding is not None else "names",
        no_choice,
        tuple(fill),
    )


def _columns_of(g: _Group) -> set[str]:
    """The columns a group reads."""
    return {g.column(s, a) for s in g.stems for a in g.alts}


def _mismatch(frame: pd.DataFrame, g: _Group) -> float:
    """How differently one attribute's columns are scaled across a group's alternatives
    (the mean over its attributes of ``(max - min) / max |median|`` of the columns'
    medians): small when the group reads the column names the right way round
    (``BUS_TT`` and ``RAIL_TT`` are both times), large when alternatives and attributes are
    swapped (``BUS_TT`` and ``BUS_CO``: a time and a cost)."""
    out = []
    for s in g.stems:
        meds = []
        for a in g.alts:
            c = g.column(s, a)
            if c in frame.columns:
                x = pd.to_numeric(frame[c], errors="coerce").dropna()
                if len(x):
                    meds.append(float(x.median()))
        if len(meds) >= 2:
            top = max(abs(m) for m in meds)
            out.append((max(meds) - min(meds)) / top if top > 0 else 0.0)
    return float(np.mean(out)) if out else 0.0


def _numbered_items(g: _Group) -> bool:
    """Are a group's columns numbered items rather than an attribute per alternative: a
    number split in two (``Mobil10`` .. ``Mobil14``: a stem ending in a digit, digit
    alternatives) or zero-padded item numbers (``Envir01`` .. ``Envir06``), with no
    separator (survey questions such as Likert scales)?"""
    if g.sep:
        return False
    if g.position == "prefix":  # Envir01, Mobil01: "Envir" is no alternative, "01" no attribute
        return all(s.isdigit() for s in g.stems)
    if not all(a.isdigit() for a in g.alts):
        return False
    padded = any(len(a) > 1 and a.startswith("0") for a in g.alts)
    return padded or all(s[-1:].isdigit() for s in g.stems)


def _without_availability(g: _Group, names: Sequence[str]) -> _Group | None:
    """The group without availability stems (``AV``), its alternatives in the order of
    its first attribute's columns; ``None`` when an alternative is an availability word
    or no attribute stem is left."""
    if any(a.lower() in AVAILABILITY_NAMES for a in g.alts):
        return None
    stems = tuple(s for s in g.stems if s.lower() not in AVAILABILITY_NAMES)
    if not stems:
        return None
    order = {c: k for k, c in enumerate(names)}
    first = min(stems, key=lambda s: min(order.get(g.column(s, a), 1 << 30) for a in g.alts))
    alts = tuple(sorted(g.alts, key=lambda a: order.get(g.column(first, a), 1 << 30)))
    return _Group(g.sep, alts, stems, g.position)


def _integers_name(groups: Sequence[_Group]) -> bool:
    """The best group's alternatives are numbers (``price1``..): their values name them."""
    return bool(groups) and _integers(groups[0].alts) is not None


# ----------------------------------------------------------------------------- resolution
def _by_name(have: Sequence[str], names: Sequence[str], taken: Iterable[str]) -> list[str]:
    """The file's columns whose lower-case name is in ``names`` (in that order), except
    ``taken``."""
    skip = set(taken)
    lower = {c.lower(): c for c in reversed(have) if c not in skip}
    return [lower[n] for n in names if n in lower]


def _is_flag(frame: pd.DataFrame, column: str) -> bool:
    """Are a column's values all flags (yes/no, 1/0, true/false), some chosen and some
    not (a long file's chosen flag)?"""
    vals = _values(frame, column, 4)
    if vals is None:
        return False
    keys = {normalize_value(v) for v in vals if not is_missing(v)}
    return bool(
        keys and keys <= CHOSEN_TRUE | CHOSEN_FALSE and keys & CHOSEN_TRUE and keys - CHOSEN_TRUE
    )


def _flag_column(frame: pd.DataFrame, have: Sequence[str], taken: Iterable[str]) -> str | None:
    """A long file's chosen flag under another name (:data:`CHOSEN_NAMES`)."""
    return next((c for c in _by_name(have, CHOSEN_NAMES, taken) if _is_flag(frame, c)), None)


#: Names (lower case) of a long file's column naming each row's alternative.
PROFILE_NAMES = (
    "alt", "alternative", "alternatives", "alt_id", "altid", "alt_name", "altname",
    "alt.id", "mode", "brand", "option", "product", "item",
)  # fmt: skip


def _profile_column(
    frame: pd.DataFrame, have: Sequence[str], keys: Sequence[str], taken: Iterable[str]
) -> tuple[str, str] | None:
    """A long file's alternative column under another name, and why: a column whose
    values name one row of each task (at most :data:`MAX_LABELLED` of them, never twice in
    a task) and that is named like one (:data:`PROFILE_NAMES`: ``mode``, ``alt``) or holds
    text listing the same alternatives in (nearly) every task (TravelMode's air, train,
    bus, car)."""
    keys = [k for k in keys if k]
    if not keys:
        return None
    skip = set(taken) | set(keys)
    named = {c.lower() for c in _by_name(have, PROFILE_NAMES, skip)}
    for c in [*_by_name(have, PROFILE_NAMES, skip), *(c for c in have if c not in skip)]:
        col = frame[c]
        if col.isna().any():
            continue
        vals = pd.unique(col)
        if not 2 <= len(vals) <= MAX_LABELLED:
            continue
        if frame.duplicated([*keys, c]).any():
            continue  # a value twice in one task: not an alternative
        if c.lower() in named:
            return c, "by its name; its values name one row of each task"
        if pd.api.types.is_numeric_dtype(col):
            continue
        per_task = frame.groupby(list(keys), sort=False)[c].nunique()
        if float((per_task == len(vals)).mean()) >= 0.9:
            return c, f"its values name one row of each task: {_shown(list(vals), 6)}"
    return None


def _respondent_column(
    frame: pd.DataFrame, have: Sequence[str], taken: Iterable[str], long: bool, notes: list[str]
) -> str:
    """A respondent column under another name (:data:`RESPONDENT_NAMES`; said in
    ``notes``), or ``""``; in the long layout only one whose values repeat (rows of one
    respondent), not a row number."""
    fits = []
    for c in _by_name(have, RESPONDENT_NAMES, taken):
        col = frame[c]
        if col.isna().any() or (long and not col.duplicated().any()):
            continue
        fits.append(c)
    if not fits:
        return ""
    c = fits[0]
    why = "by its name"
    repeat = [f for f in fits if frame[f].duplicated().any()]
    if len(repeat) > 1:  # households hold respondents: the finest grouping is the person
        n = {f: int(frame[f].nunique()) for f in repeat}
        c = max(repeat, key=lambda f: n[f])
        coarser = [f for f in repeat if f != c and _nested(frame, c, f)]
        if coarser:
            why += (
                f"; {_shown([f'{f!r} ({n[f]:,} values)' for f in coarser])} groups its "
                f"{n[c]:,} values, so it is coarser than a respondent"
            )
    notes.append(f"respondent column: {c!r} ({why}; --respondent-col to change, '' for none)")
    return c


def _nested(frame: pd.DataFrame, fine: str, coarse: str) -> bool:
    """Every value of ``fine`` sits in one value of ``coarse``."""
    return bool(frame.groupby(fine, sort=False)[coarse].nunique().max() <= 1)


def _indicator_sets(
    frame: pd.DataFrame, have: Sequence[str], stem: str | None
) -> list[tuple[str, _Group, list[str], np.ndarray]]:
    """0/1 columns, one per alternative of a wide file, with exactly one 1 on every row
    (``BestAlternative_1``, ``BestAlternative_2``, ...: Biogeme's and Apollo's way of giving
    the choice): ``(stem, group, columns, their 0/1 values (rows, alternatives))`` for each
    such stem (only ``stem`` when given)."""
    found: list[tuple[str, _Group, list[str], np.ndarray]] = []
    seen: set[tuple[str, ...]] = set()
    for pos in ("suffix", "prefix"):
        for g in _suffix_groups(have, pos):
            for s in g.stems:
                if stem is not None and s != stem:
                    continue
                cs = [g.column(s, a) for a in g.alts]
                if tuple(cs) in seen or len(g.stems) < 2:
                    continue
                seen.add(tuple(cs))
                block = frame[cs].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
                if len(block) and np.isin(block, (0.0, 1.0)).all() and (block.sum(1) == 1).all():
                    found.append((s, g, cs, block))
    return found


def choice_from_indicators(
    frame: pd.DataFrame, columns: ColumnMap, name: str = "the file"
) -> tuple[ColumnMap, list[str]]:
    """A wide file whose choice is given as 0/1 columns, one per alternative, with one 1 on
    every row (:func:`_indicator_sets`): replaces them in ``frame`` (in place) by one column
    named after their stem holding the chosen alternative, and names it as the chosen
    column. Applies when the chosen column is not in the file (``--chosen-col`` names the
    stem, or none is given and no column is called ``choice``) and the layout may be wide;
    otherwise ``columns`` and no note. Two such stems with no ``--chosen-col``: an error."""
    have = [str(c) for c in frame.columns]
    if (
        columns.format == "long"
        or columns.rank
        or (columns.profile and columns.profile in have)
        or (columns.chosen and columns.chosen in have)
        or (not columns.chosen and any(c.lower() == "choice" for c in have))
    ):
        return columns, []
    sets = _indicator_sets(frame, have, columns.chosen or None)
    if not sets:
        return columns, []
    if len(sets) > 1:
        raise WideLayoutError(
            f"{name}: several sets of 0/1 columns could give the chosen alternative "
            f"({', '.join(s for s, _, _, _ in sets)}); say which (--chosen-col)"
        )
    stem, g, cs, block = sets[0]
    chosen = np.asarray(g.alts, dtype=object)[block.argmax(axis=1)]
    at = frame.columns.get_loc(cs[0])
    frame.drop(columns=cs, inplace=True)
    frame.insert(at, stem, chosen)
    note = (
        f"chosen alternative: from the 0/1 columns {', '.join(cs)} (one 1 per row), "
        f"read as column {stem!r} naming the alternative"
    )
    return replace(columns, chosen=stem), [note]


def resolve_columns(
    frame: pd.DataFrame, columns: ColumnMap, name: str = "the file"
) -> tuple[ColumnMap, list[str]]:
    """The column map with every unset part inferred, and one note per inference.

    When the file's choice cannot be told otherwise (no chosen column, or ``--chosen-col``
    names none of its columns), a wide file's choice given as 0/1 columns, one per
    alternative, becomes one chosen column in ``frame``, in place
    (:func:`choice_from_indicators`; pass a shallow copy to keep a table as read). So a
    set of 0/1 attribute columns beside a column naming the choice stays attributes.

    Raises
    ------
    DataValidationError
        For a named column the file lacks, an ambiguity (several choice columns, choice
        values naming no alternative...) or a file whose layout cannot be told; the
        message names the file and lists its columns.
    """
    try:
        return _resolve_columns(frame, columns, name)
    except DataValidationError:
        cols, notes = choice_from_indicators(frame, columns, name)
        if not notes:
            raise
    resolved, more = _resolve_columns(frame, cols, name)
    return resolved, notes + more


def _named_columns(cols: ColumnMap, name: str, have: Sequence[str]) -> tuple[ColumnMap, bool]:
    """The map with the default respondent and task columns dropped when the file lacks
    them, and whether to look for the respondent under another name; a named column the
    file lacks is an error."""
    resp, task = cols.respondent, cols.task
    find_resp = False  # the default column is absent: look for it under another name
    if resp and resp not in have:
        if resp != DEFAULT_RESPONDENT:
            raise _missing(name, resp, "the respondent", "--respondent-col", have)
        resp, find_resp = "", True
    if task and task not in have:
        if task != DEFAULT_TASK:
            raise _missing(name, task, "the task", "--task-col", have)
        task = ""
    for f in cols.feature_names:
        if f not in have:
            raise _missing(name, f, "a respondent feature", "--respondent-features", have)
    if cols.rank and cols.rank not in have:
        raise _missing(name, cols.rank, "the rank", "--rank-col", have)
    return replace(cols, respondent=resp, task=task), find_resp


def _auto_format(
    frame: pd.DataFrame, cols: ColumnMap, name: str, have: list[str], notes: list[str]
) -> tuple[ColumnMap, _Wide | None]:
    """The layout of a file given as ``auto``: long with a rank, a profile column or a
    chosen flag; wide when a column names (or numbers) the alternatives of the column
    names; else long with a chosen flag found by name."""
    wide: _Wide | None = None
    if cols.rank:
        fmt, why = "long", f"a rank column, {cols.rank!r}"
    elif cols.profile and cols.profile in have:
        fmt, why = "long", f"a profile column, {cols.profile!r}"
    elif cols.chosen and cols.chosen in have and _is_flag(frame, cols.chosen):
        fmt, why = "long", f"the chosen column {cols.chosen!r} holds yes/no flags"
    else:
        try:
            wide = _resolve_wide(frame, replace(cols, format="wide"), name, have)
            verb = "numbers" if wide.coding in ("0", "1") else "names"
            fmt, why = "wide", f"column {wide.chosen!r} {verb} the alternatives; no profile column"
        except DataValidationError as exc:
            flag = cols.chosen or "chosen"
            if flag not in have and not cols.chosen:  # the flag under another name?
                taken = (cols.respondent, cols.task, *cols.feature_names)
                other = _flag_column(frame, have, taken)
                if other is not None:
                    flag = other
                    cols = replace(cols, chosen=other)
                    notes.append(f"chosen flag: {other!r} (its values are yes/no flags)")
            if isinstance(exc, WideLayoutError) and flag not in have:
                raise
            if flag not in have:
                raise DataValidationError(
                    f"{name}: cannot tell the layout: no profile column "
                    f"{cols.profile!r} (long) and {_reason(exc, name)}; give --format "
                    f"and the columns; {list_columns(have)}"
                ) from None
            fmt, why = "long", f"a chosen column, {flag!r}; no profile column"
    notes.append(f"layout: {fmt} ({why})")
    return replace(cols, format=fmt), wide


def _resolve_long(
    frame: pd.DataFrame,
    cols: ColumnMap,
    name: str,
    have: list[str],
    find_resp: bool,
    notes: list[str],
) -> ColumnMap:
    """A long file's profile, chosen (or rank) and respondent columns, inferred where
    unset."""
    resp, task = cols.respondent, cols.task
    profile = cols.profile
    if profile and profile not in have:
        if profile != DEFAULT_PROFILE:
            raise _missing(name, profile, "the alternative", "--profile-col", have)
        profile = ""
    chosen = "" if cols.rank else (cols.chosen or "chosen")
    if chosen and chosen not in have:
        if cols.chosen or DEFAULT_RANK not in have:
            raise _missing(
                name, chosen, "the chosen flag", "--chosen-col, or --rank-col for ranks", have
            )
        chosen = ""
        cols = replace(cols, rank=DEFAULT_RANK)
        notes.append(f"rank column: {DEFAULT_RANK!r} (1 = best; there is no chosen flag)")
    if find_resp:
        resp = _respondent_column(frame, have, (task, profile, chosen, cols.rank), True, notes)
        cols = replace(cols, respondent=resp)
    if not resp and not task:
        raise DataValidationError(
            f"{name}: no respondent column and no task column, so the tasks cannot be "
            f"told apart; name one (--respondent-col, --task-col); {list_columns(have)}"
        )
    if not profile:
        found = _profile_column(
            frame, have, (resp, task), (chosen, cols.rank, cols.weight or "",
                                        *cols.feature_names, *cols.ignore)
        )  # fmt: skip
        if found is not None:
            profile = found[0]
            notes.append(f"alternative column: {profile!r} ({found[1]}; --profile-col to change)")
        else:
            notes.append("profile column: none (the alternatives of a task are numbered by row)")
    cols = replace(cols, profile=profile, chosen=chosen, alternatives=(), separator=None)
    if not task:
        notes.append("task column: none (each respondent's rows are one task)")
    if not resp:
        notes.append("respondent column: none (every task is a respondent of its own)")
    return cols


def _resolve_wide_columns(
    frame: pd.DataFrame,
    cols: ColumnMap,
    name: str,
    have: list[str],
    wide: _Wide | None,
    find_resp: bool,
    notes: list[str],
) -> ColumnMap:
    """A wide file's chosen column, alternatives, separator, availability and coding
    (:func:`_resolve_wide`, unless the layout's inference already did), and its
    respondent column."""
    resp, task = cols.respondent, cols.task
    if cols.rank:
        raise DataValidationError(
            f"{name}: a rank column ({cols.rank!r}) needs the long layout (one row per alternative)"
        )
    wide = wide or _resolve_wide(frame, cols, name, have)
    cols = replace(
        cols,
        chosen=wide.chosen,
        alternatives=wide.alts,
        separator=wide.sep,
        profile="",
        position=wide.position,
        availability=wide.availability,
        choice_coding=wide.coding,
        no_choice=wide.no_choice,
        fill_attributes=wide.fill,
    )
    notes += wide.notes
    _check_zero_rules(cols, have, name, wide.stems)
    if find_resp:
        stems = {cols.column(st, a) for st in wide.stems for a in wide.alts}
        resp = _respondent_column(frame, have, (task, wide.chosen, *stems), False, notes)
        cols = replace(cols, respondent=resp)
    if not resp:
        notes.append(
            "respondent column: none (every row is a respondent of its own; id = file line)"
        )
    elif not task:
        notes.append("task column: none (a respondent's rows are tasks 1, 2, ...)")
    return cols


def _resolve_columns(
    frame: pd.DataFrame, columns: ColumnMap, name: str
) -> tuple[ColumnMap, list[str]]:
    have = [str(c) for c in frame.columns]
    notes: list[str] = []
    cols, find_resp = _named_columns(columns, name, have)
    if cols.format not in ("long", "wide", "auto"):
        raise ValueError(f"format must be 'long', 'wide' or 'auto', got {cols.format!r}")
    wide: _Wide | None = None
    if cols.format == "auto":
        cols, wide = _auto_format(frame, cols, name, have, notes)
    if cols.format == "long":
        cols = _resolve_long(frame, cols, name, have, find_resp, notes)
    else:
        cols = _resolve_wide_columns(frame, cols, name, have, wide, find_resp, notes)
    for attr, rule in cols.levels:
        if rule not in ("keep", "drop") and not rule.startswith("group:"):
            raise DataValidationError(
                f"{name}: levels rule {attr}={rule}: write {attr}=keep, {attr}=drop or "
                f"{attr}=group:K (--levels)"
            )
    cols = _resolve_weight(cols, have, name, notes)
    cols = _resolve_missing(frame, cols, notes)
    return cols, notes


def parse_zero_rule(rule: str) -> tuple[str, tuple[str, ...], str, str]:
    """``"CO for TRAIN,SM when GA=1"`` -> ``("CO", ("TRAIN", "SM"), "GA", "1")`` (no
    alternatives: all of them).

    Raises
    ------
    DataValidationError
        For another form, in words.
    """
    return fields.parse_zero_rule(rule)  # in one pass, bounded


def _check_zero_rules(
    cols: ColumnMap, have: Sequence[str], name: str, stems: Sequence[str]
) -> None:
    for rule in cols.zero_when:
        stem, alts, col, _ = parse_zero_rule(rule)
        if cols.format != "wide":
            raise DataValidationError(f"{name}: zero rule {rule!r}: only for the wide layout")
        if stem not in stems:
            raise DataValidationError(
                f"{name}: zero rule {rule!r}: {stem!r} is not an attribute (attributes: "
                f"{', '.join(stems)})"
            )
        unknown = [a for a in alts if a not in cols.alternatives]
        if unknown:
            raise DataValidationError(
                f"{name}: zero rule {rule!r}: {', '.join(unknown)} is no alternative "
                f"(alternatives: {', '.join(cols.alternatives)})"
            )
        if col not in have:
            raise _missing(name, col, "the condition of a zero rule", "--zero-when", have)


def _resolve_weight(cols: ColumnMap, have: Sequence[str], name: str, notes: list[str]) -> ColumnMap:
    """The weight column: given, or one named like :data:`WEIGHT_NAMES`, or none."""
    if cols.weight:
        if cols.weight not in have:
            raise _missing(name, cols.weight, "the weight", "--weight-col", have)
        return cols
    if cols.weight is None:
        found = _by_name(have, WEIGHT_NAMES, cols.reserved())
        if found:
            notes.append(
                f"weight column: {found[0]!r} (by its name; recorded and reported, not used by "
                "the models; --weight-col '' for none)"
            )
            return replace(cols, weight=found[0])
    return replace(cols, weight="")


def missing_codes(cols: ColumnMap, column: str) -> tuple[str, ...]:
    """The missing-value codes of ``column``: the codes given for every column and those
    given for it alone (``"COLUMN=CODE"``)."""
    out = []
    for entry in cols.missing or ():
        name, eq, code = entry.rpartition("=")
        if not eq:
            out.append(entry)
        elif name == column:
            out.append(code)
    return tuple(out)


def global_missing_codes(cols: ColumnMap) -> tuple[str, ...]:
    """The missing-value codes given for every column (not ``COLUMN=CODE`` ones)."""
    return tuple(e for e in cols.missing or () if "=" not in e)


def _code_columns(frame: pd.DataFrame, cols: ColumnMap) -> list[str]:
    """Columns whose cells may hold missing-value codes: every column but the respondent,
    task, profile, rank and weight columns."""
    skip = {cols.respondent, cols.task, cols.profile, cols.rank}
    return [str(c) for c in frame.columns if c not in skip]


def _missing_evidence(code: float, rest: np.ndarray, share: float) -> bool:
    """Is ``code`` a missing-value code in a column whose other values are ``rest`` (it
    holds ``share`` of the column's cells)? Only with evidence: -1 and -2 below a column
    of numbers of at least 0 that holds at least three values (not a 0/1 column, where -1
    is an effects code); 99 above a column of whole numbers from 0 to 20 (a coded answer)
    in at most half of the cells. A code inside a column's range is a value there (a trip
    of 99 minutes)."""
    if not len(rest):
        return False
    if code < 0:
        return bool((rest >= 0).all()) and len(np.unique(rest)) >= 3
    return (
        share <= 0.5
        and len(rest) >= 10
        and bool(((rest >= 0) & (rest <= 20) & (rest == np.round(rest))).all())
    )


def detect_missing(frame: pd.DataFrame, columns: Sequence[str]) -> dict[str, dict[str, int]]:
    """Missing-value codes found in ``columns``, each in the columns where the evidence
    says so (:func:`_missing_evidence`): code -> column -> cells."""
    out: dict[str, dict[str, int]] = defaultdict(dict)
    codes = tuple(float(c) for c in MISSING_CODES)
    for c in columns:
        col = frame[c]
        if not pd.api.types.is_numeric_dtype(col):
            continue
        x = col.to_numpy(dtype=float)
        x = x[~np.isnan(x)]
        rest = x[~np.isin(x, codes)]
        for code in codes:
            hit = x == code
            if hit.any() and _missing_evidence(code, rest, float(hit.mean())):
                out[normalize_value(code)][c] = int(hit.sum())
    return dict(out)


def _holding(frame: pd.DataFrame, columns: Sequence[str], code: str) -> list[str]:
    """The numeric columns holding ``code`` in at least one cell."""
    v = float(code)
    return [
        c
        for c in columns
        if pd.api.types.is_numeric_dtype(frame[c]) and bool((frame[c].to_numpy() == v).any())
    ]


def _resolve_missing(frame: pd.DataFrame, cols: ColumnMap, notes: list[str]) -> ColumnMap:
    """Missing-value codes detected with evidence, per column: a code missing in every
    column holding it is given for all (``-1``); one that is a value in some column is
    given only for the columns where it is missing (``Likert3=99``), and the note names
    where it is a value."""
    if cols.missing is not None:
        return cols
    columns = _code_columns(frame, cols)
    found = detect_missing(frame, columns)
    if not found:
        return replace(cols, missing=())
    entries: list[str] = []
    parts: list[str] = []
    for k in (k for k in MISSING_CODES if k in found):
        where = found[k]
        values = [c for c in _holding(frame, columns, k) if c not in where]
        shown = _shown([f"{c} ({n:,})" for c, n in where.items()], 6)
        if values:
            entries += [f"{c}={k}" for c in where]
            parts.append(f"{k} in {shown}, a value in {_shown(values, 4)}")
        else:
            entries.append(k)
            parts.append(f"{k} in {shown}")
    notes.append(
        f"missing-value codes: {'; '.join(parts)} (--missing to change, e.g. --missing "
        "-1,Q3=99 for a code in one column; --missing '' for none)"
    )
    return replace(cols, missing=tuple(entries))


def _reason(exc: Exception, name: str) -> str:
    msg = str(exc).split("; the file has", 1)[0].split("; give the", 1)[0]
    for lead in (f"{name}, line 1 (header): ", f"{name}: "):
        msg = msg.removeprefix(lead)
    return msg


# ----------------------------------------------------------------------------- attributes
def _task_keys(frame: pd.DataFrame, cols: ColumnMap) -> list[str]:
    keys = [c for c in (cols.respondent, cols.task) if c and c in frame.columns]
    return keys


def attribute_columns(frame: pd.DataFrame, cols: ColumnMap) -> dict[str, list[str]]:
    """Attribute name -> its source columns (long: itself; wide: ``stem`` + alternative),
    for a resolved map."""
    rest = [str(c) for c in frame.columns if c not in cols.reserved()]
    if cols.format == "long":
        return {c: [c] for c in rest}
    stems, partial = _stems(rest, cols.alternatives, cols.separator or "", cols.position)
    stems += [s for s in cols.fill_attributes if s in partial and s not in stems]
    return {s: [cols.column(s, a) for a in cols.alternatives] for s in stems}


def _long_rows(frame: pd.DataFrame, cols: ColumnMap) -> pd.DataFrame:
    """The rows of real alternatives (opt-out rows left out)."""
    if cols.format != "long" or not cols.opt_out or not cols.profile:
        return frame
    opt = {normalize_value(v) for v in cols.opt_out}
    keep = ~frame[cols.profile].map(lambda v: normalize_value(v) in opt).to_numpy(dtype=bool)
    return frame.loc[keep]


def infer_attributes(
    frame: pd.DataFrame, columns: ColumnMap, notes: list[str] | None = None
) -> list[Attribute]:
    """A first attribute table from the data (the map resolved, or resolvable, for it).

    Every alternative's cells count: numbers (at least 90 % of the cells) -> numeric, two
    text values -> binary, more text values -> categorical (levels sorted; make them
    ordinal in the editor). A numeric attribute's unit is the one its name states
    (:func:`pbo_core.units.unit_in_name`: ``time_min`` -> min, ``cost_chf`` -> CHF), listed
    in ``notes``. In the long layout a column constant within every task cannot tell
    alternatives apart and is no attribute (named in ``notes``).
    """
    cols = columns
    if cols.format == "auto" or (cols.format == "wide" and not cols.alternatives):
        cols, _ = resolve_columns(frame, cols)
    rows = _long_rows(frame, cols)
    keys = _task_keys(rows, cols) if cols.format == "long" else []
    rules = dict(cols.levels)
    constant: list[str] = []
    many: list[str] = []
    units: list[str] = []
    out = []
    for name, srcs in attribute_columns(frame, cols).items():
        srcs = [c for c in srcs if c in rows.columns]
        if keys and len(rows):
            n = rows.groupby(keys, sort=False)[srcs[0]].nunique(dropna=False)
            if int(n.max()) <= 1:
                constant.append(name)
                continue
        vals = pd.concat([rows[c] for c in srcs]).dropna()
        codes = {normalize_value(k) for c in srcs for k in missing_codes(cols, c)}
        if codes and len(vals):
            which, uniques = pd.factorize(vals)
            hit = np.array([normalize_value(u) in codes for u in uniques], dtype=bool)
            vals = vals[~hit[which]] if len(uniques) else vals
        distinct = pd.unique(vals)
        numeric = pd.to_numeric(vals, errors="coerce")
        label = readable(name)
        share = float(numeric.notna().mean()) if len(vals) else 0.0
        if name in cols.categorical:  # the analyst's answer: codes are levels
            levels = tuple(_natural(normalize_value(v) for v in distinct)) or ("?",)
            out.append(Attribute(name, "categorical", levels=levels, label=label))
            continue
        if name in cols.numeric and share >= 0.9:
            out.append(Attribute(name, "numeric", label=label, unit=unit_in_name(name)))
            continue
        if len(distinct) == 2 and share < 1.0:
            levels = tuple(sorted(str(v) for v in distinct))
            out.append(Attribute(name, "binary", levels=levels, label=label))
        elif share >= 0.9:  # a few stray words in a number column are errors, not levels
            unit = unit_in_name(name)  # "time_min" -> min; a unit only, never a role
            if unit:
                units.append(f"{name} {unit}")
            out.append(Attribute(name, "numeric", label=label, unit=unit))
        else:
            rule = rules.get(name, "keep" if len(distinct) <= MAX_LEVELS else "")
            if rule == "keep":
                levels = tuple(_natural(distinct)) or ("?",)
            elif rule.startswith("group:"):
                levels = (*_natural(frequent_levels(vals, _group_size(rule))), OTHER_LEVEL)
            else:
                if rule != "drop":
                    many.append(f"{name} ({len(distinct):,} levels)")
                continue
            out.append(Attribute(name, "categorical", levels=levels, label=label))
    if notes is not None:
        notes.append("attributes: " + (", ".join(_kind(a) for a in out) or "none"))
    if units and notes is not None:
        notes.append(
            f"units from the column names: {_shown(units, 12)}; change them in the attribute "
            "table (a unit names no role: the travel time is named in the analysis plan)"
        )
    if constant and notes is not None:
        notes.append(f"not attributes (constant within every task): {_shown(constant, 12)}")
    if many and notes is not None:
        first = many[0].split(" ", 1)[0]
        notes.append(
            f"not attributes (text with more than {MAX_LEVELS} levels): {_shown(many, 6)}; to "
            f"keep one: --levels {first}=keep (every level) or --levels {first}=group:20 (the "
            f"20 most frequent, the rest as {OTHER_LEVEL!r})"
        )
    return out


#: The level that ``group:K`` gives the rarer levels of a text attribute.
OTHER_LEVEL = "other"


def _group_size(rule: str) -> int:
    try:
        k = int(rule.split(":", 1)[1])
    except ValueError:
        raise DataValidationError(
            f"levels rule {rule!r}: write group:K with K a whole number (group:20)"
        ) from None
    if k < 1:
        raise DataValidationError(f"levels rule {rule!r}: K must be at least 1")
    return k


def frequent_levels(values: pd.Series, k: int) -> list[str]:
    """The ``k`` most frequent values (as text; ties: the first seen), over the whole file."""
    counts = values.map(lambda v: v.strip() if isinstance(v, str) else normalize_value(v))
    return [str(v) for v in counts.value_counts(sort=True).index[:k]]


def _kind(a: Attribute) -> str:
    if a.kind == "numeric":
        return f"{a.name} (numeric)"
    return f"{a.name} ({a.kind}: {len(a.levels)} levels)"


def feature_candidates(
    frame: pd.DataFrame, columns: ColumnMap, attributes: Sequence[Attribute] = ()
) -> list[str]:
    """Columns that may be respondent features (resolved map): not reserved, not an
    attribute's column, constant within every respondent, not an identifier (all values
    distinct text or integers) and with at most 50 text values."""
    cols = columns
    named = (cols.respondent, cols.task, cols.chosen_column, cols.rank, cols.profile)
    used = {c for c in (*named, cols.weight, *(cols.availability or ())) if c}
    if cols.format == "long":
        used |= {a.source_column for a in attributes}
    else:
        for a in attributes:
            used |= {cols.column(a.source_column, alt) for alt in cols.alternatives}
        _, partial = _stems(
            [str(c) for c in frame.columns if c not in cols.reserved()],
            cols.alternatives,
            cols.separator or "",
            cols.position,
        )
        used |= {c for cs in partial.values() for c in cs}
    out = []
    key = cols.respondent or (cols.task if cols.format == "long" else "")
    for c in frame.columns:
        if c in used:
            continue
        s = frame[c].dropna()
        if s.empty:
            continue
        if key and int(frame.groupby(key, sort=False)[c].nunique(dropna=False).max()) > 1:
            continue
        numeric = pd.api.types.is_numeric_dtype(s)
        integral = numeric and bool(np.all(np.mod(s.to_numpy(dtype=float), 1) == 0))
        per = (frame.drop_duplicates(key)[c] if key else s).dropna()
        if len(per) >= 10 and per.nunique() == len(per):
            span = float(per.max()) - float(per.min()) + 1 if integral else 0.0
            if not numeric or span == len(per):
                continue  # an identifier: distinct names or a numbering 1..n
        if not numeric and s.nunique() > 50:
            continue
        out.append(str(c))
    return out
