"""Generic loader for choice-based conjoint (discrete choice) data.

Two layouts are read:

Long format (:func:`load_conjoint_long`)
    One row per respondent x task x alternative: a respondent column, a task column, an
    alternative (profile) column, a chosen flag and one column per attribute.
Wide format (:func:`load_conjoint_wide`)
    One row per respondent x task with the attributes of every alternative side by side
    (``price1``, ``price2``...) and one column naming the chosen alternative.

Attributes are described by :class:`Attribute` (kind, levels in order, labels, units,
accepted codes), given in code or read from a JSON attribute table
(:func:`read_attribute_table`).

From choices to pairs
---------------------
In a task with ``k`` real alternatives the chosen one beats each of the others, giving
``k - 1`` comparisons. Identical profiles are one item: items are deduplicated across the
whole study, so respondents who saw the same profile share its item row. (A comparison
between two identical profiles carries no information; it is skipped and counted in
``study.extras["n_identical_skipped"]``.)

Opt-outs and missing answers
----------------------------
Rows whose alternative is one of ``opt_out_alternatives`` are opt-out rows: choosing one
makes the task an opt-out task, which gives no comparison but counts for the exclusion
rules. A task where nothing is chosen is handled by ``no_choice``: ``"error"``
(default), ``"opt_out"`` (treat as an opt-out) or ``"drop"`` (ignore the task, e.g.
non-response). A missing chosen flag counts as "not chosen".

Exclusion rules
---------------
Rules are callables that receive the per-respondent summary table (index = respondent;
columns ``n_tasks``, ``n_answered``, ``n_opt_out``, ``n_dropped``, ``opt_out_share``)
and return a boolean Series (True = exclude). Built in: :class:`MaxOptOutShare`,
:class:`MinAnsweredTasks` and :class:`DropRespondents`. ``opt_out_share`` is
``n_opt_out / (n_answered + n_opt_out)`` (dropped tasks do not count). Excluded
respondents and the reason are in ``study.extras["excluded"]``.

Errors
------
Malformed input raises :class:`~pbo_core.data.DataValidationError` naming the file and
line (the header is line 1), or the row label for in-memory tables.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from data_loaders._common import missing_columns_error, py, read_csv_lines, where
from pbo_core.data import DataValidationError, Feature, PreferenceData, Schema, Study

AttributeKind = Literal["numeric", "ordinal", "categorical", "binary"]
NoChoice = Literal["error", "opt_out", "drop"]
ExclusionRule = Callable[[pd.DataFrame], pd.Series]

_ATTRIBUTE_KINDS = ("numeric", "ordinal", "categorical", "binary")
_OPT_OUT = "__opt_out__"
_NUMBER_WITH_UNIT = re.compile(
    r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*([%A-Za-z/.\s]*)$"
)


# ---------------------------------------------------------------------------- values
def _isna(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    return isinstance(v, (float, np.floating)) and math.isnan(v)


def normalize_value(v: Any) -> str:
    """Canonical text of a raw cell for matching labels and codes.

    Case-folded, trimmed, inner whitespace collapsed; integral numbers lose ``.0``
    (``1``, ``1.0`` and ``"1.0"`` all give ``"1"``); booleans give ``"true"``/``"false"``.
    """
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        x = float(v)
        return str(int(x)) if math.isfinite(x) and x == int(x) else repr(x)
    s = " ".join(str(v).split()).casefold()
    try:
        x = float(s)
    except ValueError:
        return s
    return str(int(x)) if math.isfinite(x) and x == int(x) else s


def _as_number(v: Any) -> float | None:
    """A number from a numeric cell or a string like ``"20"``, ``"20 min"``, ``"60%"``."""
    if isinstance(v, (bool, np.bool_)):
        return None
    if isinstance(v, (int, float, np.integer, np.floating)):
        x = float(v)
        return x if math.isfinite(x) else None
    m = _NUMBER_WITH_UNIT.match(str(v))
    if m is None:
        return None
    x = float(m.group(1))
    return x if math.isfinite(x) else None


# ---------------------------------------------------------------------------- attributes
@dataclass(frozen=True)
class Attribute:
    """One attribute of the conjoint profiles and how its raw values are read.

    Parameters
    ----------
    name
        Feature name in the study schema.
    kind
        ``"numeric"``, ``"ordinal"``, ``"categorical"`` or ``"binary"``.
    levels
        Level labels in order (ordinal/categorical; the two labels of a binary attribute,
        for code 0 and code 1; default ``("no", "yes")``).
    label, unit, description
        Display name, unit and explanation (shown in the attribute table).
    column
        Source column (long format) or column stem (wide format); default ``name``.
    values
        Numeric attributes: the allowed values, in order (optional; checked when given,
        and ``code_base`` codes index into them).
    codes
        Explicit raw value -> level label (or, for numeric attributes, -> value) mapping.
        Keys are matched after :func:`normalize_value`, so ``1``, ``"1"`` and ``1.0``
        are the same key. Takes precedence over everything else.
    aliases
        Extra accepted spellings of level labels (alias -> label), case-insensitive.
    code_base
        Integer codes accepted as level positions: ``0`` means codes ``0..L-1``, ``1``
        means ``1..L``; ``None`` accepts only labels and ``codes``.
    scale
        Numeric attributes: multiplier applied to the value read (``0.01`` turns cents
        into guilders).
    bounds
        Numeric attributes: ``(low, high)`` after scaling; default from ``values`` or
        from the data.
    missing
        Level label (or number) used for an empty cell; ``None`` makes an empty cell an
        error.
    """

    name: str
    kind: AttributeKind
    levels: tuple[str, ...] = ()
    label: str = ""
    unit: str = ""
    description: str = ""
    column: str | None = None
    values: tuple[float, ...] = ()
    codes: Mapping[Any, Any] = field(default_factory=dict, hash=False)
    aliases: Mapping[str, str] = field(default_factory=dict, hash=False)
    code_base: int | None = 0
    scale: float = 1.0
    bounds: tuple[float, float] | None = None
    missing: str | float | None = None

    def __post_init__(self) -> None:
        if self.kind not in _ATTRIBUTE_KINDS:
            raise DataValidationError(
                f"attribute {self.name!r}: kind {self.kind!r} is not one of {_ATTRIBUTE_KINDS}"
            )
        levels = tuple(str(v) for v in self.levels)
        if self.kind == "binary" and not levels:
            levels = ("no", "yes")
        if self.kind == "binary" and len(levels) != 2:
            raise DataValidationError(f"attribute {self.name!r}: binary needs exactly 2 levels")
        if self.kind in ("ordinal", "categorical") and not levels:
            raise DataValidationError(f"attribute {self.name!r}: kind {self.kind} needs levels")
        if self.kind == "numeric" and levels:
            raise DataValidationError(
                f"attribute {self.name!r}: numeric attributes take `values`, not `levels`"
            )
        norm = [normalize_value(lv) for lv in levels]
        if len(set(norm)) != len(norm):
            raise DataValidationError(f"attribute {self.name!r}: levels are not unique")
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "values", tuple(float(v) for v in self.values))
        codes: dict[str, Any] = {}
        for k, v in dict(self.codes).items():
            if self.kind == "numeric":
                if _as_number(v) is None:
                    raise DataValidationError(
                        f"attribute {self.name!r}: code {k!r} maps to {v!r}, not a number"
                    )
                codes[normalize_value(k)] = float(_as_number(v))  # type: ignore[arg-type]
            else:
                if str(v) not in levels:
                    raise DataValidationError(
                        f"attribute {self.name!r}: code {k!r} maps to {v!r}, not one of the "
                        f"levels {list(levels)}"
                    )
                codes[normalize_value(k)] = str(v)
        object.__setattr__(self, "codes", codes)
        aliases = {normalize_value(k): str(v) for k, v in dict(self.aliases).items()}
        bad = [v for v in aliases.values() if v not in levels]
        if bad:
            raise DataValidationError(
                f"attribute {self.name!r}: aliases point to unknown levels {bad}"
            )
        object.__setattr__(self, "aliases", aliases)
        if self.missing is not None:
            if self.kind == "numeric":
                object.__setattr__(self, "missing", float(self.missing))
            elif str(self.missing) not in levels:
                raise DataValidationError(
                    f"attribute {self.name!r}: missing={self.missing!r} is not a level"
                )
        if self.bounds is not None:
            lo, hi = (float(b) for b in self.bounds)
            object.__setattr__(self, "bounds", (lo, hi))

    # .................................................................. reading
    @property
    def display_name(self) -> str:
        """``'name'`` or ``'name', label`` for messages."""
        return repr(self.name) if not self.label else f"{self.name!r}, {self.label}"

    @property
    def source_column(self) -> str:
        """The column (long) or stem (wide) the attribute is read from."""
        return self.column or self.name

    def _lookup(self) -> dict[str, str]:
        table = {normalize_value(lv): lv for lv in self.levels}
        table.update(self.aliases)
        return table

    def parse(self, raw: Any) -> str | float:
        """The level label (numeric: the scaled value) of one raw cell.

        Raises
        ------
        ValueError
            With the reason (the caller adds file, line and column).
        """
        if _isna(raw) or (isinstance(raw, str) and not raw.strip()):
            if self.missing is None:
                raise ValueError("is empty")
            return self.missing
        key = normalize_value(raw)
        if self.kind == "numeric":
            return self._parse_numeric(raw, key)
        if key in self.codes:
            return self.codes[key]
        lookup = self._lookup()
        if key in lookup:
            return lookup[key]
        if self.kind == "binary" and isinstance(raw, (bool, np.bool_)):
            return self.levels[int(raw)]
        x = _as_number(raw) if not isinstance(raw, str) or _isnumeric_text(raw) else None
        n = len(self.levels)
        if self.code_base is not None and x is not None and x == int(x):
            code = int(x) - self.code_base
            if 0 <= code < n:
                return self.levels[code]
        codes_txt = ""
        if self.code_base is not None:
            codes_txt = f" (or codes {self.code_base}..{self.code_base + n - 1})"
        if self.codes:
            codes_txt += f" (or codes {sorted(self.codes)})"
        raise ValueError(f"is not one of the levels {list(self.levels)}{codes_txt}")

    def _parse_numeric(self, raw: Any, key: str) -> float:
        if key in self.codes:
            return float(self.codes[key]) * self.scale
        x = _as_number(raw)
        if x is None:
            raise ValueError("is not a number")
        if self.values:
            hit = [v for v in self.values if math.isclose(v, x, rel_tol=1e-9, abs_tol=1e-12)]
            if hit:
                x = hit[0]
            elif self.code_base is not None and x == int(x):
                code = int(x) - self.code_base
                if not 0 <= code < len(self.values):
                    raise ValueError(self._values_msg())
                x = self.values[code]
            else:
                raise ValueError(self._values_msg())
        return x * self.scale

    def _values_msg(self) -> str:
        vals = [f"{v:g}" for v in self.values]
        codes = ""
        if self.code_base is not None:
            codes = f" (or codes {self.code_base}..{self.code_base + len(self.values) - 1})"
        return f"is not one of the values {vals}{codes}"

    # .................................................................. schema
    def to_feature(self, observed: Iterable[float] = ()) -> Feature:
        """The schema feature; numeric bounds from ``bounds``, ``values`` or ``observed``."""
        if self.kind != "numeric":
            return Feature(
                self.name,
                self.kind,
                levels=self.levels,
                label=self.label,
                unit=self.unit,
                description=self.description,
            )
        bounds = self.bounds
        if bounds is None:
            pool = [v * self.scale for v in self.values] or list(observed)
            if self.missing is not None:
                pool.append(float(self.missing))
            bounds = (float(min(pool)), float(max(pool))) if pool else (0.0, 1.0)
        return Feature(
            self.name,
            "numeric",
            bounds=bounds,
            label=self.label,
            unit=self.unit,
            description=self.description,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation (the format of attribute-table files)."""
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.levels and not (self.kind == "binary" and self.levels == ("no", "yes")):
            d["levels"] = list(self.levels)
        for k in ("label", "unit", "description", "column"):
            if getattr(self, k):
                d[k] = getattr(self, k)
        if self.values:
            d["values"] = list(self.values)
        if self.codes:
            d["codes"] = dict(self.codes)
        if self.aliases:
            d["aliases"] = dict(self.aliases)
        if self.code_base != 0:
            d["code_base"] = self.code_base
        if self.scale != 1.0:
            d["scale"] = self.scale
        if self.bounds is not None:
            d["bounds"] = list(self.bounds)
        if self.missing is not None:
            d["missing"] = self.missing
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Attribute:
        """Inverse of :meth:`to_dict`; unknown keys are an error."""
        allowed = set(cls.__dataclass_fields__)
        unknown = set(d) - allowed
        if unknown:
            raise DataValidationError(
                f"attribute {d.get('name')!r}: unknown keys {sorted(unknown)}; "
                f"allowed: {sorted(allowed)}"
            )
        kw = dict(d)
        for k in ("levels", "values"):
            if k in kw:
                kw[k] = tuple(kw[k])
        if kw.get("bounds") is not None:
            kw["bounds"] = tuple(kw["bounds"])
        return cls(**kw)


def _isnumeric_text(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def read_attribute_table(path: str | os.PathLike[str]) -> list[Attribute]:
    """Read attributes from a JSON file.

    The file holds a list of attribute objects (keys as in :class:`Attribute`), or an
    object with such a list under ``"attributes"``.

    Raises
    ------
    DataValidationError
        Naming the file (and the JSON line for syntax errors).
    """
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataValidationError(f"{p}, line {exc.lineno}: invalid JSON: {exc.msg}") from None
    items = doc.get("attributes") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise DataValidationError(f"{p}: expected a list of attributes")
    out = []
    for i, d in enumerate(items):
        try:
            out.append(Attribute.from_dict(d))
        except (DataValidationError, TypeError) as exc:
            raise DataValidationError(f"{p}: attribute #{i + 1}: {exc}") from None
    return out


def write_attribute_table(attributes: Sequence[Attribute], path: str | os.PathLike[str]) -> None:
    """Write attributes as a JSON attribute table (see :func:`read_attribute_table`)."""
    doc = {"attributes": [a.to_dict() for a in attributes]}
    Path(path).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _attributes(attributes: Sequence[Attribute] | str | os.PathLike[str]) -> list[Attribute]:
    if isinstance(attributes, (str, os.PathLike)):
        return read_attribute_table(attributes)
    attrs = list(attributes)
    names = [a.name for a in attrs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise DataValidationError(f"attributes: duplicate names {dup}")
    if not attrs:
        raise DataValidationError("attributes: at least one attribute is needed")
    return attrs


# ---------------------------------------------------------------------------- exclusions
@dataclass(frozen=True)
class MaxOptOutShare:
    """Exclude respondents who opted out in more than ``share`` of their tasks."""

    share: float

    @property
    def description(self) -> str:
        """Reason recorded for excluded respondents."""
        return f"opted out in more than {self.share:.0%} of tasks"

    def __call__(self, summary: pd.DataFrame) -> pd.Series:
        return summary["opt_out_share"] > self.share


@dataclass(frozen=True)
class MinAnsweredTasks:
    """Exclude respondents with fewer than ``n`` answered (non-opt-out) tasks."""

    n: int

    @property
    def description(self) -> str:
        """Reason recorded for excluded respondents."""
        return f"fewer than {self.n} answered tasks"

    def __call__(self, summary: pd.DataFrame) -> pd.Series:
        return summary["n_answered"] < self.n


@dataclass(frozen=True)
class DropRespondents:
    """Exclude the listed respondent ids."""

    ids: tuple[Any, ...]

    @property
    def description(self) -> str:
        """Reason recorded for excluded respondents."""
        return "listed for exclusion"

    def __call__(self, summary: pd.DataFrame) -> pd.Series:
        return pd.Series(summary.index.isin(list(self.ids)), index=summary.index)


def _rule_reason(rule: ExclusionRule) -> str:
    return str(getattr(rule, "description", getattr(rule, "__name__", repr(rule))))


# ---------------------------------------------------------------------------- core
@dataclass(frozen=True)
class StudyMeta:
    """Provenance attached to a loaded study."""

    key: str = "conjoint"
    title: str = "Conjoint study"
    description: str = ""
    source: str = ""
    citation: str = ""
    license: str = ""


_TRUE = {"1", "true", "t", "yes", "y", "chosen"}
_FALSE = {"0", "false", "f", "no", "n", ""}


def _parse_flags(col: pd.Series, name: str, from_file: bool, column: str) -> np.ndarray:
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    flags = np.zeros(len(uniques), dtype=bool)
    for k, u in enumerate(uniques):
        if _isna(u):
            continue
        key = normalize_value(u)
        if key in _TRUE:
            flags[k] = True
        elif key not in _FALSE:
            label = col.index[int(np.flatnonzero(codes == k)[0])]
            raise DataValidationError(
                f"{where(name, label, from_file)}: column {column!r}: {py(u)!r} is not a "
                "chosen flag (1/0, true/false, yes/no)"
            )
    return flags[codes]


def _parse_attribute(
    col: pd.Series, attr: Attribute, name: str, from_file: bool, column: str
) -> np.ndarray:
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    out = np.empty(len(uniques), dtype=object)
    for k, u in enumerate(uniques):
        try:
            out[k] = attr.parse(u)
        except ValueError as exc:
            label = col.index[int(np.flatnonzero(codes == k)[0])]
            raise DataValidationError(
                f"{where(name, label, from_file)}: column {column!r} (attribute "
                f"{attr.display_name}): {py(u)!r} {exc}"
            ) from None
    vals = out[codes]
    if attr.kind == "numeric":
        return vals.astype(float)
    return vals


def _lines(labels: np.ndarray, k: int = 5) -> str:
    shown = ", ".join(str(py(x)) for x in labels[:k])
    return shown + (", ..." if len(labels) > k else "")


def _build_from_long(
    frame: pd.DataFrame,
    attrs: list[Attribute],
    *,
    name: str,
    from_file: bool,
    respondent: str,
    task: str,
    alternative: str,
    chosen: str,
    opt_out_alternatives: Collection[Any],
    no_choice: NoChoice,
    exclude: Sequence[ExclusionRule],
    user_columns: Sequence[str],
    user_schema: Schema | None,
    meta: StudyMeta,
    attribute_columns: Mapping[str, str] | None = None,
    hint: str = "",
) -> Study:
    """The shared long-format pipeline (also used by the wide reader and the presets)."""
    if no_choice not in ("error", "opt_out", "drop"):
        raise ValueError(f"no_choice must be 'error', 'opt_out' or 'drop', got {no_choice!r}")
    acol = dict(attribute_columns or {a.name: a.source_column for a in attrs})
    needed = [respondent, task, alternative, chosen, *acol.values(), *user_columns]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise missing_columns_error(name, missing, frame.columns, from_file, hint)
    if len(frame) == 0:
        raise DataValidationError(f"{name}: no data rows")
    labels = frame.index.to_numpy()
    for c in (respondent, task, alternative):
        na = frame[c].isna().to_numpy()
        if na.any():
            raise DataValidationError(
                f"{where(name, labels[np.argmax(na)], from_file)}: column {c!r} is empty"
            )

    is_chosen = _parse_flags(frame[chosen], name, from_file, chosen)
    opt_keys = {normalize_value(v) for v in opt_out_alternatives}
    alt_codes, alt_uniques = pd.factorize(frame[alternative])
    alt_is_opt = np.array([normalize_value(u) in opt_keys for u in alt_uniques], dtype=bool)
    is_opt = alt_is_opt[alt_codes] if len(alt_uniques) else np.zeros(len(frame), dtype=bool)
    real = ~is_opt

    dup = frame.duplicated([respondent, task, alternative]).to_numpy()
    if dup.any():
        i = int(np.argmax(dup))
        r, t, a = (py(frame[c].iloc[i]) for c in (respondent, task, alternative))
        same = (
            (frame[respondent] == r) & (frame[task] == t) & (frame[alternative] == a)
        ).to_numpy()
        raise DataValidationError(
            f"{where(name, labels[i], from_file)}: respondent {r!r}, task {t!r}: alternative "
            f"{a!r} appears more than once (lines/rows {_lines(labels[same])})"
        )

    tkey = frame.groupby([respondent, task], sort=False).ngroup().to_numpy()
    n_tasks = int(tkey.max()) + 1
    n_real = np.bincount(tkey, weights=real, minlength=n_tasks)
    n_chosen = np.bincount(tkey, weights=is_chosen, minlength=n_tasks)
    n_chosen_real = np.bincount(tkey, weights=is_chosen & real, minlength=n_tasks)
    _, first_row = np.unique(tkey, return_index=True)
    resp_values = frame[respondent].to_numpy()
    task_values = frame[task].to_numpy()

    def task_error(t: int, msg: str) -> DataValidationError:
        rows = np.flatnonzero(tkey == t)
        i = int(rows[0])
        return DataValidationError(
            f"{where(name, labels[i], from_file)}: respondent {py(resp_values[i])!r}, task "
            f"{py(task_values[i])!r} (lines/rows {_lines(labels[rows])}): {msg}"
        )

    bad = np.flatnonzero(n_chosen > 1)
    if len(bad):
        raise task_error(int(bad[0]), f"{int(n_chosen[bad[0]])} alternatives are chosen")
    bad = np.flatnonzero(n_real < 2)
    if len(bad):
        raise task_error(int(bad[0]), "fewer than two profiles (besides the opt-out)")
    answered = n_chosen_real == 1
    opted_out = (n_chosen == 1) & ~answered
    none = n_chosen == 0
    if none.any() and no_choice == "error":
        raise task_error(
            int(np.argmax(none)),
            "no alternative is chosen (pass no_choice='opt_out' or 'drop' to accept this)",
        )
    if no_choice == "opt_out":
        opted_out |= none
    dropped = none & (no_choice == "drop")

    task_resp = resp_values[first_row]
    per_task = pd.DataFrame(
        {
            "respondent": task_resp,
            "n_tasks": 1,
            "n_answered": answered.astype(int),
            "n_opt_out": opted_out.astype(int),
            "n_dropped": dropped.astype(int),
        }
    )
    summary = per_task.groupby("respondent", sort=False).sum()
    responded = summary["n_answered"] + summary["n_opt_out"]
    summary["opt_out_share"] = (summary["n_opt_out"] / responded.where(responded > 0)).fillna(0)
    excluded: dict[Any, str] = {}
    for rule in exclude:
        mask = pd.Series(rule(summary), index=summary.index).fillna(False).astype(bool)
        for r in summary.index[mask.to_numpy()]:
            excluded.setdefault(r, _rule_reason(rule))
    summary["excluded"] = summary.index.isin(list(excluded))

    # parse the attributes of every real profile of a task that is not dropped
    parse_rows = real & ~dropped[tkey]
    sub = frame[parse_rows]
    parsed = {
        a.name: _parse_attribute(sub[acol[a.name]], a, name, from_file, acol[a.name]) for a in attrs
    }
    parsed_frame = pd.DataFrame(parsed)
    rows = np.flatnonzero(parse_rows)
    keep_resp = ~pd.Series(resp_values[rows]).isin(list(excluded)).to_numpy()
    keep = answered[tkey[rows]] & keep_resp
    rows, parsed_frame = rows[keep], parsed_frame.loc[keep].reset_index(drop=True)

    schema = Schema(
        tuple(
            a.to_feature(parsed_frame[a.name].to_numpy(dtype=float))
            if a.kind == "numeric"
            else a.to_feature()
            for a in attrs
        )
    )
    if len(rows):
        item_of_row = parsed_frame.groupby(list(parsed), sort=False, dropna=False).ngroup()
        item_of_row = item_of_row.to_numpy()
        first = np.unique(item_of_row, return_index=True)[1]
        items = parsed_frame.iloc[first].reset_index(drop=True)
    else:
        item_of_row = np.zeros(0, dtype=np.int64)
        items = parsed_frame.iloc[:0]
    for a in attrs:
        if a.kind == "numeric":
            items[a.name] = items[a.name].astype(float)

    win = is_chosen[rows]
    winner_item = np.full(n_tasks, -1, dtype=np.int64)
    winner_item[tkey[rows[win]]] = item_of_row[win]
    lose = ~win
    pairs = np.column_stack([winner_item[tkey[rows[lose]]], item_of_row[lose]])
    pair_rows = rows[lose]
    same = pairs[:, 0] == pairs[:, 1]
    n_identical = int(same.sum())
    pairs, pair_rows = pairs[~same], pair_rows[~same]

    users = None
    if user_columns:
        users = _user_table(frame, respondent, list(user_columns), excluded, name, from_file)
        if user_schema is None:
            user_schema = Schema.infer(users)
    X = _encode(schema, items)
    data = PreferenceData(
        X=X,
        pairs=pairs.astype(np.int64),
        schema=schema,
        items=items,
        item_ids=np.arange(len(items)),
        respondent=resp_values[pair_rows],
        users=users,
        source=meta.key,
    )
    extras: dict[str, Any] = {
        "pair_task": task_values[pair_rows],
        "pair_line": labels[pair_rows],
        "respondent_summary": summary,
        "excluded": excluded,
        "n_identical_skipped": n_identical,
        "attributes": attrs,
        "file": name,
    }
    return Study(
        key=meta.key,
        title=meta.title,
        schema=schema,
        data=data,
        description=meta.description,
        source=meta.source,
        citation=meta.citation,
        license=meta.license,
        users=users,
        user_schema=user_schema if users is not None else None,
        extras=extras,
    )


def _encode(schema: Schema, items: pd.DataFrame) -> np.ndarray:
    """Vectorised :meth:`Schema.encode` for parsed items (labels already validated).

    The generic encoder converts value by value, which takes seconds for 10^5 items; here
    each column maps its distinct labels once. Tests check both agree.
    """
    X = np.empty((len(items), schema.n_columns), dtype=float)
    for j, f in enumerate(schema.features):
        col = items[f.name]
        if f.kind == "numeric":
            X[:, j] = col.to_numpy(dtype=float)
            continue
        codes, uniques = pd.factorize(col)
        index = {lv: k for k, lv in enumerate(f.levels)}
        X[:, j] = np.array([index[str(u)] for u in uniques], dtype=float)[codes]
    return X


def _user_table(
    frame: pd.DataFrame,
    respondent: str,
    columns: list[str],
    excluded: Mapping[Any, str],
    name: str,
    from_file: bool,
) -> pd.DataFrame:
    """One row per respondent; the values must not change within a respondent."""
    sub = frame[[respondent, *columns]]
    distinct = sub.drop_duplicates()
    clash = distinct[respondent].duplicated().to_numpy()
    if clash.any():
        label = distinct.index[int(np.argmax(clash))]
        r = py(distinct[respondent].iloc[int(np.argmax(clash))])
        raise DataValidationError(
            f"{where(name, label, from_file)}: respondent {r!r}: respondent columns "
            f"{columns} differ from the respondent's earlier rows"
        )
    users = distinct.set_index(respondent)
    users = users.loc[~users.index.isin(list(excluded))]
    users.index.name = "respondent"
    return users


def _read(
    data: str | os.PathLike[str] | pd.DataFrame,
    table_name: str | None,
    read_csv_kwargs: Mapping[str, Any] | None,
) -> tuple[pd.DataFrame, str, bool]:
    if isinstance(data, pd.DataFrame):
        return data, table_name or "table", False
    p = Path(data)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file")
    return read_csv_lines(p, **dict(read_csv_kwargs or {})), str(p), True


# ---------------------------------------------------------------------------- public API
def load_conjoint_long(
    data: str | os.PathLike[str] | pd.DataFrame,
    attributes: Sequence[Attribute] | str | os.PathLike[str],
    *,
    respondent: str = "respondent",
    task: str = "task",
    alternative: str = "profile",
    chosen: str = "chosen",
    opt_out_alternatives: Collection[Any] = (),
    no_choice: NoChoice = "error",
    exclude: Sequence[ExclusionRule] = (),
    user_columns: Sequence[str] = (),
    user_schema: Schema | None = None,
    meta: StudyMeta | None = None,
    table_name: str | None = None,
    read_csv_kwargs: Mapping[str, Any] | None = None,
) -> Study:
    """Load long-format choice data (one row per respondent x task x alternative).

    Parameters
    ----------
    data
        CSV file (``.gz`` allowed) or a DataFrame.
    attributes
        The attributes, or the path of a JSON attribute table.
    respondent, task, alternative, chosen
        Column names. ``chosen`` holds 1/0, true/false or yes/no; empty = not chosen.
    opt_out_alternatives
        Values of ``alternative`` that mark an opt-out row (e.g. ``("C", "none")``).
    no_choice
        What a task without any chosen row means: ``"error"``, ``"opt_out"`` or
        ``"drop"``.
    exclude
        Per-respondent exclusion rules (see the module docstring).
    user_columns
        Respondent-level columns copied into ``study.users`` (must be constant within a
        respondent); ``user_schema`` describes them (inferred when ``None``).
    meta
        Key, title and provenance of the study.
    table_name
        Name used in error messages for a DataFrame (files use their path).
    read_csv_kwargs
        Extra arguments for :func:`pandas.read_csv` (e.g. ``sep=";"``).

    Returns
    -------
    Study
        Items = distinct profiles; pairs = chosen beats each other real alternative.
        ``extras`` holds ``pair_task`` (task of each pair), ``pair_line``,
        ``respondent_summary``, ``excluded`` and ``n_identical_skipped``.

    Raises
    ------
    DataValidationError
        For malformed data, naming the file and line (or the row of a DataFrame).
    """
    frame, name, from_file = _read(data, table_name, read_csv_kwargs)
    return _build_from_long(
        frame,
        _attributes(attributes),
        name=name,
        from_file=from_file,
        respondent=respondent,
        task=task,
        alternative=alternative,
        chosen=chosen,
        opt_out_alternatives=opt_out_alternatives,
        no_choice=no_choice,
        exclude=exclude,
        user_columns=user_columns,
        user_schema=user_schema,
        meta=meta or StudyMeta(),
    )


def wide_to_long(
    frame: pd.DataFrame,
    attributes: Sequence[Attribute],
    *,
    respondent: str,
    task: str | None,
    choice: str,
    alternatives: Sequence[str],
    choice_values: Mapping[Any, str] | None = None,
    opt_out_values: Collection[Any] = (),
    column_template: str = "{stem}{alt}",
    keep_columns: Sequence[str] = (),
    name: str = "table",
    from_file: bool = False,
) -> pd.DataFrame:
    """Reshape wide choice data to the long layout (columns ``respondent``, ``task``,
    ``alternative``, ``chosen`` and one per attribute, named by the attribute stem).

    A row whose choice is one of ``opt_out_values`` gets an extra opt-out row (alternative
    ``"__opt_out__"``) that is chosen. The index (file line) of every long row is that of
    its wide row.
    """
    alternatives = [str(a) for a in alternatives]
    cols = {
        (a.name, alt): column_template.format(stem=a.source_column, alt=alt)
        for a in attributes
        for alt in alternatives
    }
    needed = [respondent, choice, *([task] if task else []), *cols.values(), *keep_columns]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise missing_columns_error(name, missing, frame.columns, from_file)
    lookup: dict[str, str] = {}
    for alt in alternatives:
        lookup[normalize_value(alt)] = alt
        lookup[normalize_value(f"{choice}{alt}")] = alt
    for k, v in dict(choice_values or {}).items():
        if str(v) not in alternatives and str(v) != _OPT_OUT:
            raise ValueError(f"choice_values: {k!r} maps to {v!r}, not one of {alternatives}")
        lookup[normalize_value(k)] = str(v)
    for v in opt_out_values:
        lookup[normalize_value(v)] = _OPT_OUT
    codes, uniques = pd.factorize(frame[choice], use_na_sentinel=False)
    mapped = np.empty(len(uniques), dtype=object)
    for k, u in enumerate(uniques):
        if _isna(u):
            mapped[k] = None
            continue
        key = normalize_value(u)
        if key not in lookup:
            label = frame.index[int(np.flatnonzero(codes == k)[0])]
            raise DataValidationError(
                f"{where(name, label, from_file)}: column {choice!r}: {py(u)!r} does not name an "
                f"alternative (expected one of {alternatives}"
                + (f" or an opt-out value {list(opt_out_values)}" if opt_out_values else "")
                + ")"
            )
        mapped[k] = lookup[key]
    chosen_alt = mapped[codes]
    task_col = (
        frame[task].to_numpy()
        if task
        else frame.groupby(respondent, sort=False).cumcount().to_numpy() + 1
    )
    parts = []
    pos = np.arange(len(frame))
    for j, alt in enumerate([*alternatives, _OPT_OUT]):
        if alt == _OPT_OUT:
            sel = chosen_alt == _OPT_OUT
            if not sel.any():
                continue
        else:
            sel = np.ones(len(frame), dtype=bool)
        part = pd.DataFrame(
            {
                "respondent": frame[respondent].to_numpy()[sel],
                "task": task_col[sel],
                "alternative": alt,
                "chosen": (chosen_alt == alt)[sel],
                "_pos": pos[sel] * (len(alternatives) + 1) + j,
            },
            index=frame.index[sel],
        )
        for a in attributes:
            part[a.source_column] = (
                frame[cols[(a.name, alt)]].to_numpy()[sel] if alt != _OPT_OUT else np.nan
            )
        for c in keep_columns:
            part[c] = frame[c].to_numpy()[sel]
        parts.append(part)
    long = pd.concat(parts).sort_values("_pos", kind="stable").drop(columns="_pos")
    return long


def load_conjoint_wide(
    data: str | os.PathLike[str] | pd.DataFrame,
    attributes: Sequence[Attribute] | str | os.PathLike[str],
    *,
    respondent: str = "respondent",
    task: str | None = "task",
    choice: str = "choice",
    alternatives: Sequence[str] = ("1", "2"),
    choice_values: Mapping[Any, str] | None = None,
    opt_out_values: Collection[Any] = (),
    column_template: str = "{stem}{alt}",
    no_choice: NoChoice = "error",
    exclude: Sequence[ExclusionRule] = (),
    user_columns: Sequence[str] = (),
    user_schema: Schema | None = None,
    meta: StudyMeta | None = None,
    table_name: str | None = None,
    read_csv_kwargs: Mapping[str, Any] | None = None,
) -> Study:
    """Load wide-format choice data (one row per task, alternatives side by side).

    Parameters
    ----------
    data
        CSV file (``.gz`` allowed) or a DataFrame.
    attributes
        The attributes (``column`` is the stem), or a JSON attribute table.
    respondent, task, choice
        Column names. ``task=None`` numbers the rows of each respondent 1, 2, ...
    alternatives
        Suffixes of the alternatives; attribute columns are
        ``column_template.format(stem=..., alt=...)`` (``price1``, ``price2``...).
    choice_values
        Raw choice value -> alternative suffix. By default the suffix itself (``1``) and
        the choice column name plus the suffix (``choice1``) are understood.
    opt_out_values
        Choice values meaning "none of these" (opt-out tasks); an empty choice is a task
        without a choice, handled by ``no_choice``.
    no_choice, exclude, user_columns, user_schema, meta, table_name, read_csv_kwargs
        As in :func:`load_conjoint_long`.
    """
    frame, name, from_file = _read(data, table_name, read_csv_kwargs)
    attrs = _attributes(attributes)
    long = wide_to_long(
        frame,
        attrs,
        respondent=respondent,
        task=task,
        choice=choice,
        alternatives=alternatives,
        choice_values=choice_values,
        opt_out_values=opt_out_values,
        column_template=column_template,
        keep_columns=user_columns,
        name=name,
        from_file=from_file,
    )
    return _build_from_long(
        long,
        attrs,
        name=name,
        from_file=from_file,
        respondent="respondent",
        task="task",
        alternative="alternative",
        chosen="chosen",
        opt_out_alternatives=(_OPT_OUT,),
        no_choice=no_choice,
        exclude=exclude,
        user_columns=user_columns,
        user_schema=user_schema,
        meta=meta or StudyMeta(),
    )


#: Preset name -> ``"module:function"`` (imported lazily).
PRESETS: dict[str, str] = {
    "train": "data_loaders.stated_preference:load_train",
    "electricity": "data_loaders.stated_preference:load_electricity",
    "bela": "data_loaders.bela:load_bela",
    "presidential": "data_loaders.presidential:load_presidential",
}


def load_preset(name: str, **options: Any) -> Study:
    """Load one of the conjoint presets (``train``, ``electricity``, ``bela``,
    ``presidential``); ``options`` go to the preset's loader (e.g. ``path=...``)."""
    import importlib

    if name not in PRESETS:
        raise KeyError(f"unknown conjoint preset {name!r}; presets are {sorted(PRESETS)}")
    module, func = PRESETS[name].split(":")
    return getattr(importlib.import_module(module), func)(**options)
