"""Conjoint attributes: how the raw cells of one attribute are read.

:class:`Attribute` describes one attribute of the profiles (kind, levels in order,
labels, units, accepted codes and aliases, scaling, bounds, missing values) and parses
raw cells (:meth:`Attribute.parse`, :func:`parse_attribute` for a whole column, with
errors naming the file, line and column). Attribute tables are JSON files
(:func:`read_attribute_table`, :func:`write_attribute_table`);
:func:`resolve_attributes` accepts either form. :func:`normalize_value` is the canonical
text used to match labels and codes.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_type_hints

import numpy as np
import pandas as pd

from data_loaders._common import quoted, where
from data_loaders.access import check_file
from data_loaders.fields import check_json_texts, check_record, shown, shown_type
from data_loaders.limits import MAX_JSON_BYTES, file_bytes, load_json_bytes
from pbo_core.data import DataValidationError, Feature

__all__ = [
    "Attribute",
    "AttributeKind",
    "is_missing",
    "normalize_value",
    "parse_attribute",
    "read_attribute_table",
    "resolve_attributes",
    "write_attribute_table",
]

AttributeKind = Literal["numeric", "ordinal", "categorical", "binary"]

#: Largest magnitude a numeric attribute may take without declared ``min``/``max``.
MAX_MAGNITUDE = 1e12

_ATTRIBUTE_KINDS = ("numeric", "ordinal", "categorical", "binary")
#: A number and a unit after it (``"20 min"``, ``"60%"``). The unit's characters include
#: the blanks between (one class, no overlapping parts: linear in the cell's length).
_NUMBER_WITH_UNIT = re.compile(
    r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)[%A-Za-z/.\s]*$"
)


# ---------------------------------------------------------------------------- values
def is_missing(v: Any) -> bool:
    """Whether a raw cell is missing (``None``, ``pd.NA``, ``pd.NaT`` or a float NaN)."""
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
    min, max
        Numeric attributes: the valid range of a value after scaling (e.g. ``min=0`` for
        a price); a value outside is an error naming the file, line and column. Without
        them any finite value with ``|x| <= MAX_MAGNITUDE`` (1e12) is accepted. They do
        not change the schema bounds (those come from ``bounds``, ``values`` or the data).
    special
        Numeric codes with a meaning of their own (``((0.0, "no contract"),)``), passed
        to the schema feature so displays and rules print the meaning.
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
    min: float | None = None
    max: float | None = None
    special: tuple[tuple[float, str], ...] = ()

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
        for k in ("min", "max"):
            v = getattr(self, k)
            if v is None:
                continue
            if self.kind != "numeric":
                raise DataValidationError(f"attribute {self.name!r}: only numeric takes {k!r}")
            if _as_number(v) is None:
                raise DataValidationError(f"attribute {self.name!r}: {k}={v!r} is not a number")
            object.__setattr__(self, k, float(v))
        if self.min is not None and self.max is not None and self.min > self.max:
            raise DataValidationError(
                f"attribute {self.name!r}: min={self.min:g} is above max={self.max:g}"
            )

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
        if is_missing(raw) or (isinstance(raw, str) and not raw.strip()):
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
        return self._in_range(self._numeric_value(x))

    def _in_range(self, y: float) -> float:
        """``y`` (after scaling) if it is within ``min``/``max`` and ``MAX_MAGNITUDE``."""
        if not abs(y) <= MAX_MAGNITUDE:
            raise ValueError(
                f"gives {y:g}, beyond the plausible magnitude {MAX_MAGNITUDE:g} (declare "
                "the attribute's min/max if such values are real)"
            )
        unit = f" {self.unit}" if self.unit else ""
        if self.min is not None and y < self.min:
            raise ValueError(f"gives {y:g}{unit}, below the attribute's minimum {self.min:g}")
        if self.max is not None and y > self.max:
            raise ValueError(f"gives {y:g}{unit}, above the attribute's maximum {self.max:g}")
        return y

    def _numeric_value(self, x: float) -> float:
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
            special=self.special,
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
        for k in ("min", "max"):
            if getattr(self, k) is not None:
                d[k] = getattr(self, k)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "") -> Attribute:
        """Inverse of :meth:`to_dict`, for an attribute table's or a recipe's JSON: unknown
        keys are an error, ``name`` and ``kind`` are needed and every field is checked by
        its type before the attribute is made (:func:`data_loaders.fields.check_record`),
        so a hostile table gets one sentence naming the field (``where``: the file and
        the entry, for the message).

        Raises
        ------
        DataValidationError
            For an entry that is no attribute, naming the field.
        """
        if not isinstance(d, Mapping):
            raise DataValidationError(
                f"{where or 'attribute'}: an object (name, kind, ...), not {shown_type(d)}"
            )
        where = where or f"attribute {shown(d.get('name', ''))}"
        allowed = set(cls.__dataclass_fields__)
        unknown = set(d) - allowed
        if unknown:
            first = sorted(map(str, unknown))[0]
            raise DataValidationError(
                f"{where}: unknown keys [{shown(first)}{', ...' if len(unknown) > 1 else ''}]; "
                f"allowed: {sorted(allowed)}"
            )
        absent = [k for k in ("name", "kind") if k not in d]
        if absent:
            raise DataValidationError(f"{where}: an attribute needs {' and '.join(absent)}")
        check_record(d, _field_types(), where)
        kw = dict(d)
        for k in ("levels", "values"):
            if k in kw:
                kw[k] = tuple(kw[k])
        if kw.get("bounds") is not None:
            kw["bounds"] = tuple(kw["bounds"])
        return cls(**kw)


@cache
def _field_types() -> dict[str, Any]:
    """The types of :class:`Attribute`'s fields (what :meth:`Attribute.from_dict` checks)."""
    return get_type_hints(Attribute)


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
        Naming the file (and the JSON line for syntax errors); a table over the limits of
        :mod:`data_loaders.limits` (size, nesting depth) is refused before it is parsed.
    """
    p = check_file(path, "attribute table")
    doc = load_json_bytes(file_bytes(p, MAX_JSON_BYTES), str(p))
    items = doc.get("attributes") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise DataValidationError(f"{p}: expected a list of attributes")
    out = []
    check_json_texts(items, p.name)
    for i, d in enumerate(items):
        try:
            out.append(Attribute.from_dict(d, f"{p}: attribute #{i + 1}"))
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise DataValidationError(f"{p}: attribute #{i + 1}: {exc}") from None
    return out


def write_attribute_table(attributes: Sequence[Attribute], path: str | os.PathLike[str]) -> None:
    """Write attributes as a JSON attribute table (see :func:`read_attribute_table`)."""
    doc = {"attributes": [a.to_dict() for a in attributes]}
    Path(path).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def resolve_attributes(attributes: Sequence[Attribute] | str | os.PathLike[str]) -> list[Attribute]:
    """The attribute list of a loader call: given in code, or read from a JSON table.

    Parameters
    ----------
    attributes
        Attributes, or the path of a JSON attribute table (:func:`read_attribute_table`).

    Raises
    ------
    DataValidationError
        For duplicate names or an empty list (or a malformed table, naming the file).
    """
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


def parse_attribute(
    col: pd.Series, attr: Attribute, name: str, from_file: bool, column: str
) -> np.ndarray:
    """Parse a whole column with :meth:`Attribute.parse` (each distinct value once).

    Parameters
    ----------
    col
        Raw cells; the index holds file lines (or row labels) for error messages.
    attr
        The attribute the cells belong to.
    name, from_file
        File (or table) name, and whether the index holds file lines or row labels.
    column
        Source column name, for error messages.

    Returns
    -------
    numpy.ndarray
        Level labels (object array), or floats for numeric attributes.

    Raises
    ------
    DataValidationError
        Naming the file and line (or row), the column and the attribute.
    """
    codes, uniques = pd.factorize(col, use_na_sentinel=False)
    out = np.empty(len(uniques), dtype=object)
    for k, u in enumerate(uniques):
        try:
            out[k] = attr.parse(u)
        except ValueError as exc:
            label = col.index[int(np.flatnonzero(codes == k)[0])]
            raise DataValidationError(
                f"{where(name, label, from_file)}: column {column!r} (attribute "
                f"{attr.display_name}): {quoted(u)} {exc}"
            ) from None
    vals = out[codes]
    if attr.kind == "numeric":
        return vals.astype(float)
    return vals
