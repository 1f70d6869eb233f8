"""Import recipes and the import preview.

A **recipe** is the small JSON file of an import's choices: the resolved
:class:`~data_loaders.layout.ColumnMap` (layout, columns, alternatives, separator in the
names, availability, choice coding, missing-value codes, attributes filled or dropped,
levels rules, roles), the attribute table and the file's separator and text encoding
(``null``: detected)::

    {"recipe": 1, "sep": "\\t", "encoding": "cp1252",
     "columns": {"fill_attributes": ["HE", "SEATS"]}, "attributes": [...]}

:func:`recipe_of` writes it for a checked study (saved beside the study as
``recipe.json``, downloadable from the Add-a-study form); :func:`read_recipe` reads one
(``python -m data_loaders import-study FILE --recipe R``). A recipe may be partial: the
keys it leaves out are inferred as without it, so a hand-written recipe of one line
(``{"columns": {"fill_attributes": ["HE"]}}``) is enough for Biogeme's SwissMetro file;
a saved one states everything and replays the import exactly.

:func:`preview_lines` says what an import understood, the same lines for
``import-study --dry-run`` and the form's preview.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import fields as fields_of
from pathlib import Path
from typing import Any, get_type_hints

import numpy as np

from data_loaders import fields, limits, readers
from data_loaders.conjoint import Attribute
from data_loaders.layout import ColumnMap
from data_loaders.prepare import parse_availability_rule
from pbo_core.data import DataValidationError, Study

__all__ = ["RECIPE_VERSION", "Recipe", "parse_recipe", "preview_lines", "read_recipe", "recipe_of"]

#: The version written in every recipe (``"recipe": 1``).
RECIPE_VERSION = 1
_KEYS = ("recipe", "sep", "encoding", "columns", "attributes")


@dataclass(frozen=True)
class Recipe:
    """An import's choices: the column map, the attribute table (``None``: inferred), the
    separator and the encoding of a text file (``None``: detected; ``import-study --sep
    --encoding``, the form's Separator and Text encoding)."""

    columns: ColumnMap
    attributes: tuple[Attribute, ...] | None = None
    sep: str | None = None
    encoding: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        d: dict[str, Any] = {"recipe": RECIPE_VERSION, "sep": self.sep}
        d["encoding"] = self.encoding
        d["columns"] = self.columns.as_dict()
        d["attributes"] = (
            None if self.attributes is None else [a.to_dict() for a in self.attributes]
        )
        return d

    def to_json(self) -> str:
        """The recipe as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2) + "\n"


def recipe_of(study: Study, sep: str | None = None, encoding: str | None = None) -> Recipe:
    """The recipe that imports the file of a checked ``study`` again to the same study
    (``sep``, ``encoding``: as the file was read, ``None`` when detected)."""
    cols: ColumnMap = study.extras["columns"]
    attrs = tuple(study.extras["attribute_table"])
    return Recipe(cols, attrs, sep, encoding)


#: Values a column-map field takes besides ``null`` where its type says only "a text".
_ALLOWED = {"position": ("suffix", "prefix"), "choice_coding": ("names", "0", "1")}
#: Pair fields whose second text may be left out (``[column]``: no label).
_SHORT_PAIRS = ("respondent_features",)


def _check_columns(raw: dict[str, Any], name: str) -> None:
    """The recipe's column choices by their types in
    :class:`~data_loaders.layout.ColumnMap`, the allowed values and the rules' grammars."""
    fields.check_record(
        raw, get_type_hints(ColumnMap), f"{name}: field 'columns", _ALLOWED, _SHORT_PAIRS
    )
    fields.check_column_fields(raw, source=name)  # counts of entries
    for k, rule in enumerate(raw.get("available_when") or (), start=1):
        where = f"{name}: field 'columns.available_when', entry {k}"
        fields.parse_availability_rule(str(rule), where)
    for k, rule in enumerate(raw.get("zero_when") or (), start=1):
        fields.parse_zero_rule(str(rule), f"{name}: field 'columns.zero_when', entry {k}")


def _attribute(a: Any, where: str) -> Attribute:
    """One attribute of a recipe (:meth:`~data_loaders.conjoint.Attribute.from_dict`
    checks its fields by their types)."""
    try:
        return Attribute.from_dict(a, where)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise DataValidationError(_plain(exc)) from None


def _plain(exc: Exception) -> str:
    """An error's message on one line, at most 200 characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:199] + "…"


def parse_recipe(content: bytes, name: str) -> Recipe:
    """A recipe from JSON bytes, bounded before it is read: its size and nesting
    (:func:`data_loaders.limits.check_json_bytes`), every text and list
    (:func:`data_loaders.fields.check_json_texts`), then one schema: the separator as
    ``--sep`` reads it, the encoding from :data:`data_loaders.readers.ENCODINGS`, each
    column choice by its type in :class:`~data_loaders.layout.ColumnMap` and its
    grammar (availability conditions, zero rules), the attributes as an attribute table.

    Raises
    ------
    DataValidationError
        For text that is no recipe, in one sentence naming the file and the field.
    """
    try:
        limits.check_json_bytes(content, name)
        d = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8 text"
        raise DataValidationError(f"{name}: not a JSON recipe ({why})") from None
    if not isinstance(d, dict):
        raise DataValidationError(f"{name}: a recipe is a JSON object with {', '.join(_KEYS)}")
    unknown = sorted(set(d) - set(_KEYS))
    if unknown:
        raise DataValidationError(
            f"{name}: unknown field {fields.shown(unknown[0])} (a recipe has {', '.join(_KEYS)})"
        )
    fields.check_json_texts(d, name)
    version = d.get("recipe", RECIPE_VERSION)
    if version != RECIPE_VERSION or isinstance(version, bool):
        raise DataValidationError(f"{name}: field 'recipe': the version is 1")
    sep = d.get("sep")
    if sep is not None:
        try:
            if not isinstance(sep, str):
                raise ValueError("a text such as ',' or '\\t'")
            sep = readers.parse_sep(sep)
        except ValueError as exc:
            raise DataValidationError(f"{name}: field 'sep': {exc}") from None
    encoding = d.get("encoding")
    if encoding is not None:
        if not isinstance(encoding, str):
            raise DataValidationError(f"{name}: field 'encoding': a text such as 'cp1252' or null")
        try:
            encoding = readers.encoding_name(encoding)
        except ValueError as exc:
            raise DataValidationError(f"{name}: field 'encoding': {exc}") from None
    raw = d.get("columns") or {}
    if not isinstance(raw, dict):
        raise DataValidationError(f"{name}: field 'columns': a JSON object of column choices")
    known = {f.name for f in fields_of(ColumnMap)}
    bad = sorted(set(raw) - known)
    if bad:
        raise DataValidationError(
            f"{name}: field {fields.shown('columns.' + bad[0], 80)} is not a column choice "
            f"(choices: {', '.join(sorted(known))})"
        )
    _check_columns(raw, name)
    raw = {"format": "auto", **raw}
    try:
        cols = ColumnMap.from_dict(raw)
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
        raise DataValidationError(f"{name}: field 'columns': {_plain(exc)}") from None
    attrs = None
    if d.get("attributes") is not None:
        if not isinstance(d["attributes"], list):
            raise DataValidationError(f"{name}: field 'attributes': a list of attributes")
        out = [
            _attribute(a, f"{name}: field 'attributes', entry {k}")
            for k, a in enumerate(d["attributes"], start=1)
        ]
        attrs = tuple(out)
    return Recipe(cols, attrs, sep, encoding)


def read_recipe(path: str | Path) -> Recipe:
    """The recipe in a file (at most :data:`data_loaders.limits.MAX_JSON_BYTES`)."""
    p = Path(path)
    blob = limits.file_bytes(p, limits.MAX_JSON_BYTES, str(p))
    return parse_recipe(blob, p.name)


def _n(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _lines_text(lines: list[int]) -> str:
    """`` (lines 3, 17, 40 and 12 more)``: the file lines of a reason's drops."""
    if not lines:
        return ""
    more = f" and {len(lines) - 10:,} more" if len(lines) > 10 else ""
    return f" (line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:10]))}{more})"


def _codes_text(entries: tuple[str, ...]) -> str:
    """``-2 (every column); -1 in DestAct, NbChild and 86 more``: the missing-value codes,
    those given for every column first, then each code with its columns."""
    every = [e for e in entries if "=" not in e]
    per: dict[str, list[str]] = {}
    for e in entries:
        if "=" in e:
            col, _, code = e.rpartition("=")
            per.setdefault(code, []).append(col)
    parts = [f"{c} (every column)" for c in every]
    for code, cs in per.items():
        more = f" and {len(cs) - 6} more" if len(cs) > 6 else ""
        parts.append(f"{code} in {', '.join(cs[:6])}{more}")
    return "; ".join(parts)


def preview_lines(study: Study) -> list[str]:
    """What an import understood, one line each: layout, alternatives and their
    attributes, availability, respondents, choice situations, respondent features, rows
    dropped by reason and the counts (``import-study --dry-run`` and the form's preview)."""
    cols: ColumnMap = study.extras["columns"]
    attrs: list[Attribute] = [
        a for a in study.extras["attribute_table"] if a.name not in cols.drop_attributes
    ]
    notes: list[str] = list(study.extras.get("import_notes", []))
    out = []
    if notes and ": " in notes[0] and "separat" in notes[0]:
        out.append(f"file: {notes[0]}")
    sel = study.extras.get("selected")
    if sel:
        out.append(f"rows: {sel['rows']:,} of {sel['of']:,} meet the selection {sel['where']!r}")
    out += _wide_lines(study, cols, attrs) if cols.format == "wide" else _long_lines(cols, attrs)
    out += _situation_lines(study)
    out += _meaning_lines(study, cols, attrs)
    out += _dropped_lines(study, cols)
    c = study.counts()
    out.append(
        f"study: {_n(c['respondents'], 'respondent')}, {_n(c['items'], 'item')}, "
        f"{_n(c['comparisons'], 'comparison')}"
    )
    return out


def _wide_lines(study: Study, cols: ColumnMap, attrs: list[Attribute]) -> list[str]:
    """A wide file's layout, and each alternative's attribute columns and availability."""
    out = [
        f"layout: wide, one row per choice situation; chosen column {cols.chosen_column!r}"
        + (
            f" numbered from {cols.choice_coding}"
            if cols.choice_coding in ("0", "1")
            else " naming the alternative"
        )
    ]
    file_columns = set(study.extras.get("file_columns", ()))
    for k, alt in enumerate(cols.alternatives):
        parts = []
        for a in attrs:
            c = cols.column(a.source_column, alt)
            filled = a.source_column in cols.fill_attributes and c not in file_columns
            parts.append(f"{a.name} ({c})" if not filled else f"{a.name} ({c}, else 0)")
        av = (cols.availability or ())[k] if cols.availability else ""
        when = [f"{av} = 1"] if av else []
        for rule in cols.available_when:
            r_alt, col, op, value = parse_availability_rule(rule)
            if r_alt == alt:
                when.append(f"{col} {op} {value}")
        out.append(
            f"alternative {alt}: "
            + (", ".join(parts) or "no attributes")
            + (f"; available when {' and '.join(when)}" if when else "; always available")
        )
    return out


def _long_lines(cols: ColumnMap, attrs: list[Attribute]) -> list[str]:
    """A long file's layout, its attributes and the alternatives' availability."""
    out = [
        "layout: long, one row per alternative; "
        + (f"alternative column {cols.profile!r}" if cols.profile else "alternatives by row")
        + (f"; rank column {cols.rank!r}" if cols.rank else f"; chosen flag {cols.chosen!r}"),
        "attributes: " + (", ".join(a.name for a in attrs) or "none"),
    ]
    when: dict[str, list[str]] = {}
    for rule in cols.available_when:  # its rows where the condition is false removed
        r_alt, col, op, value = parse_availability_rule(rule)
        when.setdefault(r_alt, []).append(f"{col} {op} {value}")
    for r_alt, conditions in when.items():
        out.append(f"alternative {r_alt}: available when {' and '.join(conditions)}")
    return out


def _situation_lines(study: Study) -> list[str]:
    """How many choice situations give comparisons, and their sizes."""
    data = study.data
    if not len(data.pairs):
        return []
    key = np.unique(
        np.column_stack(
            [
                np.unique(data.respondent.astype(str), return_inverse=True)[1],
                np.unique(data.task.astype(str), return_inverse=True)[1],
            ]
        ),
        axis=0,
        return_counts=True,
    )[1]
    sizes = key + 1
    lo, hi = int(sizes.min()), int(sizes.max())
    return [
        f"choice situations: {len(sizes):,} with comparisons; alternatives per choice "
        f"situation: {lo if lo == hi else f'{lo} to {hi}'}"
    ]


def _meaning_lines(study: Study, cols: ColumnMap, attrs: list[Attribute]) -> list[str]:
    """The units, the alternatives' constants, the money and time roles, the respondents
    and their features."""
    units = [f"{a.name} {a.unit}" for a in attrs if a.kind == "numeric" and a.unit]
    out = [
        "units: "
        + (
            ", ".join(units)
            or "none stated (--units TT=min,CO=CHF, or the attribute table; a ratio is "
            "then per unit, never per hour)"
        )
        + ("" if not units else " (a unit names no role: the plan names the travel time)")
    ]
    plan = study.plan
    if plan is not None and plan.alternative and plan.alternative in study.schema.names:
        levels = study.schema[plan.alternative].levels
        ref = plan.reference or levels[0]
        out.append(
            f"alternative constants: yes, one for each of {', '.join(levels)} but the "
            f"reference {ref} (constant 0)"
        )
    else:
        out.append("alternative constants: none (unlabelled alternatives)")
    if plan is not None:
        roles = [
            f"{label} {r.attribute}" + (f" ({r.unit})" if r.unit else " (no unit stated)")
            for label, r in (("money", plan.money), ("time", plan.time))
            if r is not None
        ]
        out.append("roles: " + (", ".join(roles) or "none named (no value of time, no WTP)"))
    resp = cols.respondent or "(none: every choice situation is a respondent of its own)"
    out.append(f"respondents: {len(study.respondents()):,} (column {resp})")
    feats = [f"{n} ({lb})" if lb else n for n, lb in cols.respondent_features]
    out.append("respondent features: " + (", ".join(feats) or "none"))
    return out


def _dropped_lines(study: Study, cols: ColumnMap) -> list[str]:
    """What was dropped, skipped and not used, the missing-value codes and the weights."""
    dropped = study.extras.get("dropped") or {}
    lines = study.extras.get("dropped_lines") or {}
    out = [
        "dropped: "
        + "; ".join(
            f"{_n(n, 'choice situation')} {why}" + _lines_text(lines.get(why, []))
            for why, n in dropped.items()
        )
        if dropped
        else "dropped: nothing"
    ]
    same = int(study.extras.get("n_identical_skipped", 0) or 0)
    if same:
        plan = study.plan
        out.append(
            f"skipped: {_n(same, 'comparison')} between alternatives with identical "
            "attributes (nothing tells them apart"
            + ("" if plan is not None and plan.alternative else "; labelled alternatives "
               "differ by their constants: --constants yes")
            + ")"
        )  # fmt: skip
    unused = [c.column for c in study.columns if c.role == "ignored"]
    if unused:
        more = f" and {len(unused) - 12} more" if len(unused) > 12 else ""
        out.append(f"columns not used: {', '.join(unused[:12])}{more}")
    if cols.missing:
        out.append("missing-value codes: " + _codes_text(cols.missing))
    if cols.weight:
        w = study.extras.get("weight", {})
        out.append(
            f"weight column: {cols.weight!r} (recorded, not used by the models"
            + (f"; {w['min']:g} to {w['max']:g}" if w else "")
            + ")"
        )
    return out
