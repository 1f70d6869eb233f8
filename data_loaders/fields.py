"""The text fields of an import, bounded before they are read: one reading for the form,
the command line and a recipe.

An import's choices (:class:`~data_loaders.layout.ColumnMap`: column names, values,
codes, labels, availability conditions, zero rules, levels rules) come from a visitor:
typed into the Add-a-study form, given as flags of ``python -m data_loaders
import-study`` or read from a recipe. Each is bounded here before anything interprets
it, and the grammars are read by hand in one pass (no regular expression with
overlapping parts: an availability condition of 5,000 spaces took 107 s of one core
through the old one):

* every text at most :data:`MAX_TEXT_CHARS` characters; a list at most
  :data:`MAX_LIST_ITEMS` entries, a list of rules at most :data:`MAX_RULES`
  (:func:`check_column_fields`, which :class:`~data_loaders.layout.ColumnMap` runs on
  every map it makes, whatever its fields: a new field is bounded as soon as it exists);
* an availability condition ``ALTERNATIVE: COLUMN == VALUE``
  (:func:`parse_availability_rule`) and a zero rule ``ATTRIBUTE [for ALT,ALT] when
  COLUMN=VALUE`` (:func:`parse_zero_rule`), each read in time linear in its length;
* a JSON document's texts and lists (:func:`check_json_texts`: a recipe, an attribute
  table), walked without recursion.

A refusal is one sentence naming the field (``--available-when``, the recipe's
``columns.available_when``) and the limit, never the hostile text itself (a long value
is shown by its length). :func:`flags_refusal` and :func:`recipe_refusal` say it with
the standard library alone, so ``python -m data_loaders import-study`` answers a hostile
flag or recipe before it loads pandas or the data model (well under 0.5 s of CPU); the
raising checks raise :class:`~data_loaders.limits.LimitError` for a bound and
:class:`~pbo_core.data.DataValidationError` for a form.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import abc
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from data_loaders import limits, readers
from data_loaders.flags import parse_features, split_list
from pbo_core.errors import DataValidationError

__all__ = [
    "FIELD_FLAGS",
    "MAX_LIST_ITEMS",
    "MAX_RULES",
    "MAX_TEXT_CHARS",
    "OPERATORS",
    "check_column_fields",
    "check_json_texts",
    "check_record",
    "check_text",
    "flags_refusal",
    "parse_availability_rule",
    "parse_zero_rule",
    "recipe_file_refusal",
    "recipe_refusal",
    "shown",
    "shown_type",
]

#: Longest text of an import's choices (a column name, a value, a label, a unit, one
#: rule), in characters.
MAX_TEXT_CHARS = 500
#: Most entries of a list of names or values (alternatives, columns, codes, labels).
MAX_LIST_ITEMS = limits.MAX_COLUMNS
#: Most rules of one kind (availability conditions, zero rules): two per alternative.
MAX_RULES = 2 * limits.MAX_ALTERNATIVES
#: The operators of an availability condition, longest first (the order they are tried).
OPERATORS = ("==", "!=", ">=", "<=", "=", ">", "<")
#: Column-map fields holding rules (at most :data:`MAX_RULES` of them).
RULE_FIELDS = ("available_when", "zero_when")
#: Column-map fields and the flag of ``import-study`` that sets each (for messages).
FIELD_FLAGS = {
    "format": "--format",
    "respondent": "--respondent-col",
    "task": "--task-col",
    "profile": "--profile-col",
    "chosen": "--chosen-col",
    "alternatives": "--alternatives",
    "rank": "--rank-col",
    "opt_out": "--opt-out",
    "respondent_features": "--respondent-features",
    "money_attribute": "--money-attribute",
    "time_attribute": "--time-attribute",
    "drop_attributes": "--drop-attributes",
    "availability": "--availability",
    "choice_coding": "--choice-coding",
    "no_choice": "--no-choice",
    "missing": "--missing",
    "fill_attributes": "--fill-attributes",
    "weight": "--weight-col",
    "levels": "--levels",
    "zero_when": "--zero-when",
    "available_when": "--available-when",
}
#: Flags holding a comma-separated list.
_LIST_FLAGS = (
    "alternatives",
    "opt_out",
    "drop_attributes",
    "availability",
    "no_choice",
    "missing",
    "fill_attributes",
)
_AVAILABILITY_FORM = (
    "write ALTERNATIVE: COLUMN == VALUE (car: license == 1; operators == != > >= < <=)"
)
_ZERO_FORM = "write ATTRIBUTE [for ALT,ALT] when COLUMN=VALUE (CO for TRAIN,SM when GA=1)"


class _Refused(Exception):
    """A refusal inside the module: a bound (``limit``) or a text of another form."""

    def __init__(self, message: str, limit: bool = True) -> None:
        super().__init__(message)
        self.limit = limit


def _raise(exc: _Refused) -> Any:
    if exc.limit:
        raise limits.LimitError(str(exc)) from None
    raise DataValidationError(str(exc)) from None


def shown(value: object, width: int = 40) -> str:
    """A visitor's text for a message: quoted when short and printable, else its length
    (a message never repeats a hostile text)."""
    text = str(value)
    if len(text) <= width and text.isprintable():
        return repr(text)
    return f"a text of {len(text):,} characters"


def _what(kind: str, text: str, where: str) -> str:
    """``"--available-when: availability rule 'car: x'"``: where (a file, a flag, a
    recipe's field; may be empty), what and the text (:func:`shown`)."""
    return (f"{where}: " if where else "") + f"{kind} {shown(text)}"


def _check_text(value: str, where: str) -> None:
    if len(value) > MAX_TEXT_CHARS:
        raise _Refused(
            f"{where}: {shown(value)} is longer than {MAX_TEXT_CHARS:,} characters, the "
            "limit for one name, value or rule (data_loaders.fields.MAX_TEXT_CHARS)."
        )


def check_text(value: str, where: str) -> None:
    """Refuse a text longer than :data:`MAX_TEXT_CHARS` (``where`` names the field).

    Raises
    ------
    LimitError
        In one sentence naming ``where``.
    """
    try:
        _check_text(value, where)
    except _Refused as exc:
        _raise(exc)


def _check_many(values: Iterable[Any], where: str, cap: int) -> None:
    """A list of texts (or of pairs of texts) within the bounds."""
    n = 0
    for n, v in enumerate(values, start=1):
        if n > cap:
            raise _Refused(
                f"{where}: more than {cap:,} entries, the limit (data_loaders.fields."
                f"{'MAX_RULES' if cap == MAX_RULES else 'MAX_LIST_ITEMS'})."
            )
        if isinstance(v, str):
            _check_text(v, f"{where}, entry {n}")
        elif isinstance(v, (tuple, list)):
            if len(v) > 2:
                raise _Refused(f"{where}, entry {n}: a pair, not {len(v):,} values.", False)
            for part in v:
                if isinstance(part, str):
                    _check_text(part, f"{where}, entry {n}")


def _column_refusal(field: str, value: Any, where: str) -> None:
    """One column-map field within the bounds: a text, a list of texts or pairs."""
    if isinstance(value, str):
        _check_text(value, where)
    elif isinstance(value, (tuple, list)):
        _check_many(value, where, MAX_RULES if field in RULE_FIELDS else MAX_LIST_ITEMS)


def check_column_fields(
    values: Mapping[str, Any], source: str = "", labels: Mapping[str, str] | None = None
) -> None:
    """Refuse column-map fields over the bounds: every text at most
    :data:`MAX_TEXT_CHARS`, every list at most :data:`MAX_LIST_ITEMS` entries (rules:
    :data:`MAX_RULES`). Generic: any field of any name is bounded by its value's type.
    ``source`` names where the fields come from (a recipe: ``"recipe.json: field
    'columns.X'"``), ``labels`` the form's name of a field; else the flag names it
    (``--available-when``).

    Raises
    ------
    LimitError
        In one sentence naming the field and the limit.
    """
    try:
        for field, value in values.items():
            label = (labels or {}).get(field)
            _column_refusal(field, value, label or _field_name(field, source))
    except _Refused as exc:
        _raise(exc)


def _field_name(field: str, source: str = "") -> str:
    if source:
        return f"{source}: field 'columns.{field}'"
    flag = FIELD_FLAGS.get(field)
    return f"{flag} (columns.{field})" if flag else f"columns.{field}"


# ----------------------------------------------------------------------------- grammars
def _availability(rule: str, where: str) -> tuple[str, str, str, str]:
    text = str(rule)
    _check_text(text, (f"{where}: " if where else "") + "availability rule")
    bad = _Refused(f"{_what('availability rule', text, where)}: {_AVAILABILITY_FORM}", False)
    alt, colon, rest = text.partition(":")
    alt = alt.strip()
    if not colon or not alt:
        raise bad
    rest = rest.lstrip()
    end = 0
    while end < len(rest) and rest[end] not in "=!<>" and not rest[end].isspace():
        end += 1
    column, rest = rest[:end], rest[end:].lstrip()
    op = next((o for o in OPERATORS if rest.startswith(o)), "")
    value = rest[len(op) :].strip()
    if not column or not op or not value or "\n" in value:
        raise bad
    return alt, column, op, value.strip("'\"")


def parse_availability_rule(rule: str, name: str = "") -> tuple[str, str, str, str]:
    """``"car: license == 1"`` -> ``("car", "license", "==", "1")``: alternative, column,
    operator (:data:`OPERATORS`), value (quotes around it removed); read in one pass,
    at most :data:`MAX_TEXT_CHARS` characters.

    Raises
    ------
    LimitError, DataValidationError
        For a longer text, or another form, in one sentence (``name``: the file).
    """
    try:
        return _availability(rule, name)
    except _Refused as exc:
        return _raise(exc)


def _zero(rule: str, where: str) -> tuple[str, tuple[str, ...], str, str]:
    text = str(rule)
    _check_text(text, (f"{where}: " if where else "") + "zero rule")
    bad = _Refused(f"{_what('zero rule', text, where)}: {_ZERO_FORM}", False)
    words: list[tuple[int, int]] = []  # the first four words: (start, end)
    k, n = 0, len(text)
    while len(words) < 4:
        while k < n and text[k].isspace():
            k += 1
        if k == n:
            break
        start = k
        while k < n and not text[k].isspace():
            k += 1
        words.append((start, k))
    word = [text[a:b] for a, b in words]
    if len(word) >= 2 and word[1] == "when":
        stem, which, rest = word[0], "", text[words[1][1] :]
    elif len(word) >= 4 and word[1] == "for" and word[3] == "when":
        stem, which, rest = word[0], word[2], text[words[3][1] :]
    else:
        raise bad
    if not rest[:1].isspace():
        raise bad
    rest = rest.lstrip()
    end = 0
    while end < len(rest) and rest[end] != "=" and not rest[end].isspace():
        end += 1
    column, rest = rest[:end], rest[end:].lstrip()
    value = rest[1:].strip()
    if not column or not rest.startswith("=") or not value or any(c.isspace() for c in value):
        raise bad
    return stem, tuple(a for a in which.split(",") if a), column, value


def parse_zero_rule(rule: str, name: str = "") -> tuple[str, tuple[str, ...], str, str]:
    """``"CO for TRAIN,SM when GA=1"`` -> ``("CO", ("TRAIN", "SM"), "GA", "1")`` (no
    alternatives: all of them); read in one pass, at most :data:`MAX_TEXT_CHARS`.

    Raises
    ------
    LimitError, DataValidationError
        For a longer text, or another form, in one sentence.
    """
    try:
        return _zero(rule, name)
    except _Refused as exc:
        return _raise(exc)


# ----------------------------------------------------------------------------- JSON
def _json_refusal(doc: Any, name: str) -> None:
    """Every text (keys too) and list of a JSON document within the bounds, walked with a
    stack (no recursion)."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, path = stack.pop()
        where = f"{name}: field '{path}'" if path else name
        if isinstance(value, str):
            _check_text(value, where)
        elif isinstance(value, list):
            if len(value) > MAX_LIST_ITEMS:
                raise _Refused(
                    f"{where}: more than {MAX_LIST_ITEMS:,} entries, the limit "
                    "(data_loaders.fields.MAX_LIST_ITEMS)."
                )
            stack.extend((v, f"{path}[{k + 1}]") for k, v in enumerate(value))
        elif isinstance(value, dict):
            if len(value) > MAX_LIST_ITEMS:
                raise _Refused(
                    f"{where}: more than {MAX_LIST_ITEMS:,} keys, the limit "
                    "(data_loaders.fields.MAX_LIST_ITEMS)."
                )
            for k, v in value.items():
                _check_text(str(k), f"{where}, a key")
                label = k if len(k) <= 40 and k.isprintable() else "..."
                stack.append((v, f"{path}.{label}" if path else label))


def check_json_texts(doc: Any, name: str) -> None:
    """Refuse a JSON document (a recipe, an attribute table) holding a text longer than
    :data:`MAX_TEXT_CHARS` or a list or object of more than :data:`MAX_LIST_ITEMS`
    entries, naming the field (``recipe.json: field 'columns.available_when[1]'``).

    Raises
    ------
    LimitError
        In one sentence.
    """
    try:
        _json_refusal(doc, name)
    except _Refused as exc:
        _raise(exc)


# ----------------------------------------------------------------------------- JSON records
def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _conforms(v: Any, hint: Any, loose: bool = False, short: bool = False) -> bool:
    """Whether a JSON value fits a field's type (``loose``: a number stands for a text,
    as in a list of alternatives; ``short``: a pair may leave out its last text). A
    type this schema does not know passes (the constructor checks it)."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if origin in (Union, UnionType):
        return any(_conforms(v, a, loose, short) for a in args)
    if hint is type(None):
        return v is None
    if hint is str:
        return isinstance(v, str) or (loose and _number(v))
    if hint is bool:
        return isinstance(v, bool)
    if hint is int:
        return isinstance(v, int) and not isinstance(v, bool)
    if hint is float:
        return _number(v)
    if origin is Literal:
        return any(v == a and type(v) is type(a) for a in args)
    if origin is tuple:
        if not isinstance(v, (list, tuple)):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(x, args[0], True, short) for x in v)
        least = len(args) - 1 if short else len(args)
        return least <= len(v) <= len(args) and all(
            _conforms(x, a, True) for x, a in zip(v, args, strict=False)
        )
    if origin in (dict, Mapping, abc.Mapping):
        key, value = args or (Any, Any)
        return isinstance(v, dict) and all(
            _conforms(k, key, True) and _conforms(x, value, True) for k, x in v.items()
        )
    return True


def _describe(hint: Any) -> str:
    """A field's type in words: ``a list of texts``, ``true or false``..."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType):
        return " or ".join(_describe(a) for a in args)
    words = {str: "a text", bool: "true or false", int: "a whole number", float: "a number"}
    if hint in words:
        return words[hint]
    if hint is type(None):
        return "null"
    if origin is Literal:
        return "one of " + ", ".join(map(str, args))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        inner = _describe(args[0])
        return "a list of " + (inner[2:] + "s" if inner.startswith("a ") else inner)
    if origin is tuple and len(args) == 2 and all(a is str for a in args):
        return "a pair of texts"
    if origin is tuple:
        return "[" + ", ".join(_describe(a) for a in args) + "]"
    if origin in (dict, Mapping, abc.Mapping):
        return "an object"
    return "a value"


def shown_type(v: Any) -> str:
    """A JSON value's kind in words: ``a text``, ``a number``, ``null``, ``a list``..."""
    return _json_type(v)


def _json_type(v: Any) -> str:
    if isinstance(v, str):
        return "a text"
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, (int, float)):
        return "a number"
    return "an object" if isinstance(v, dict) else "a list"


def _misfit(v: Any, hint: Any, short: bool = False) -> str:
    """What is wrong with a value that does not fit ``hint``, in words: the first list
    entry that does not, or a text that is not among the allowed ones."""
    inner = [a for a in get_args(hint) if a is not type(None)]
    base = inner[0] if get_origin(hint) in (Union, UnionType) and len(inner) == 1 else hint
    args = get_args(base)
    if isinstance(v, list) and get_origin(base) is tuple and len(args) == 2 and args[1] is ...:
        for k, x in enumerate(v, start=1):
            if not _conforms(x, args[0], True, short):
                what = _describe(args[0]) + (" (or [NAME] alone)" if short else "")
                return f"entry {k}: {what}, not {_json_type(x)}"
    if get_origin(base) is Literal and isinstance(v, str):
        return f"{shown(v)} is not one of {', '.join(map(str, get_args(base)))}"
    return f"{_describe(hint)}, not {_json_type(v)}"


def check_record(
    raw: Mapping[str, Any],
    hints: Mapping[str, Any],
    where: str,
    allowed: Mapping[str, tuple[str, ...]] | None = None,
    short: tuple[str, ...] = (),
) -> None:
    """The fields of a JSON object (a recipe's ``columns``, an attribute) by their types
    in ``hints`` (a dataclass's, :func:`typing.get_type_hints`: a field added to the
    dataclass is checked as soon as it exists): texts, numbers, flags, the values of a
    ``Literal``, lists and pairs of them, objects; ``allowed``: the texts some fields
    take; ``short``: pair fields whose last text may be left out. Unknown keys are the
    caller's (they are skipped here).

    Raises
    ------
    DataValidationError
        One sentence naming the first field that does not fit (``where``: ``"r.json:
        field 'columns"`` gives ``r.json: field 'columns.format': 'evil' is not one of
        long, wide, auto``).
    """
    nested = where.endswith("'columns")
    for key, value in raw.items():
        if key not in hints:
            continue
        hint = hints[key]
        field = f"{where}.{key}'" if nested else f"{where}, field {shown(key)}"
        if not _conforms(value, hint, short=key in short):
            why = _misfit(value, hint, key in short)
            raise DataValidationError(f"{field}{', ' if why.startswith('entry') else ': '}{why}")
        ok = (allowed or {}).get(key, ())
        if ok and value is not None and value not in ok:
            raise DataValidationError(f"{field}: {shown(value)} is not one of {', '.join(ok)}")


# ----------------------------------------------------------------------------- cheap paths
def _flag_values(args: argparse.Namespace) -> dict[str, Any]:
    """The column flags of ``import-study`` as the column-map fields they set: a text, or
    the texts of a list (split as :func:`data_loaders.column_flags.column_map` does)."""
    out: dict[str, Any] = {}
    for field, flag in FIELD_FLAGS.items():
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if not isinstance(value, (str, list)):
            continue
        if isinstance(value, list) or field in ("format", "choice_coding"):
            out[field] = value
        elif field == "respondent_features":
            out[field] = parse_features(value)
        elif field == "levels":
            out[field] = [tuple(x.partition("=")[::2]) for x in split_list(value)]
        elif field in _LIST_FLAGS:
            out[field] = [c.strip() for c in value.split(",")]
        else:
            out[field] = value
    return out


def flags_refusal(args: argparse.Namespace) -> str | None:
    """Why the column flags of ``import-study`` would be refused (a bound, an availability
    condition or zero rule of another form), in one sentence naming the flag; ``None``
    when they are within the bounds. Standard library only."""
    try:
        values = _flag_values(args)
        for field, value in values.items():
            _column_refusal(field, value, FIELD_FLAGS[field])
        for rule in values.get("available_when", ()):
            _availability(rule, "--available-when")
        for rule in values.get("zero_when", ()):
            _zero(rule, "--zero-when")
    except _Refused as exc:
        return str(exc)
    return None


def recipe_refusal(content: bytes, name: str) -> str | None:
    """Why a recipe's bytes would be refused before its fields are read (size, nesting,
    JSON, a text or list over the bounds, an availability condition or zero rule of
    another form), in one sentence; ``None`` when :func:`data_loaders.recipes.parse_recipe`
    may read it. Standard library only (the command line asks before loading pandas)."""
    if len(content) > limits.MAX_JSON_BYTES:
        return (
            f"{name}: {len(content) / 2**20:.1f} MB is over {limits.MAX_JSON_BYTES // 2**20} "
            "MB, the limit for a recipe (data_loaders.limits.MAX_JSON_BYTES)."
        )
    if limits.json_depth_over(content):
        return (
            f"{name}: its brackets nest deeper than {limits.MAX_JSON_DEPTH} levels, the limit "
            "(data_loaders.limits.MAX_JSON_DEPTH)."
        )
    try:
        doc = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return f"{name}: not a JSON recipe (not UTF-8 JSON text); write it again or remove it."
    try:
        _json_refusal(doc, name)
        if isinstance(doc, dict) and isinstance(doc.get("sep"), str):
            try:
                readers.parse_sep(doc["sep"])
            except ValueError as exc:
                raise _Refused(f"{name}: field 'sep': {exc}", False) from None
        if isinstance(doc, dict) and isinstance(doc.get("encoding"), str):
            try:
                readers.encoding_name(doc["encoding"])
            except ValueError as exc:
                raise _Refused(f"{name}: field 'encoding': {exc}", False) from None
        cols = doc.get("columns") if isinstance(doc, dict) else None
        if isinstance(cols, dict):
            for key, rules, read in (
                ("available_when", cols.get("available_when"), _availability),
                ("zero_when", cols.get("zero_when"), _zero),
            ):
                if isinstance(rules, list):
                    if len(rules) > MAX_RULES:
                        raise _Refused(
                            f"{name}: field 'columns.{key}': more than {MAX_RULES} rules, the "
                            "limit (data_loaders.fields.MAX_RULES)."
                        )
                    for k, rule in enumerate(rules, start=1):
                        if isinstance(rule, str):
                            read(rule, f"{name}: field 'columns.{key}', entry {k}")
    except _Refused as exc:
        return str(exc)
    return None


def recipe_file_refusal(path: str | os.PathLike[str]) -> str | None:
    """:func:`recipe_refusal` of a recipe file (its size checked before it is read)."""
    p = Path(path)
    size = p.stat().st_size
    if size > limits.MAX_JSON_BYTES:
        return (
            f"{p.name}: {size / 2**20:.1f} MB is over {limits.MAX_JSON_BYTES // 2**20} MB, the "
            "limit for a recipe (data_loaders.limits.MAX_JSON_BYTES)."
        )
    return recipe_refusal(p.read_bytes(), p.name)
