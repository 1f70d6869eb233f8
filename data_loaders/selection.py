"""A row selection of a choice file: ``--where 'PURPOSE in (1, 3) and CHOICE != 0'``.

An analyst often studies part of a file (Biogeme's SwissMetro example ``01logit`` keeps
the commuters and business travellers, ``PURPOSE`` 1 or 3). :func:`parse_where` reads
such a condition into :class:`Condition` clauses joined by ``and``; :func:`where_mask`
says which rows of a table meet it. The grammar is small and read in one pass (no regular
expression, so no input can make it slow; at most :data:`MAX_WHERE` characters)::

    condition := clause ("and" clause)*
    clause    := COLUMN op VALUE | COLUMN ["not"] "in" "(" VALUE ("," VALUE)* ")"
    op        := "==" | "=" | "!=" | ">" | ">=" | "<" | "<="

A value is a number, a word, or text in quotes. A column holding numbers compares as
numbers; any other compares as text (``mode == car``). A cell that is empty never meets
a clause. Errors name the condition and what to write instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from data_loaders.conjoint import normalize_value
from pbo_core.data import DataValidationError

__all__ = ["MAX_WHERE", "Condition", "parse_where", "where_mask"]

#: Longest accepted condition (characters).
MAX_WHERE = 500
_OPS = ("==", "=", "!=", ">=", "<=", ">", "<")
_PUNCT = "(),"


@dataclass(frozen=True)
class Condition:
    """One clause: ``column op values`` (``op`` one of ``== != > >= < <= in notin``)."""

    column: str
    op: str
    values: tuple[str, ...]

    def text(self) -> str:
        """The clause as written back."""
        if self.op in ("in", "notin"):
            word = "in" if self.op == "in" else "not in"
            return f"{self.column} {word} ({', '.join(self.values)})"
        return f"{self.column} {self.op} {self.values[0]}"


def _tokens(text: str) -> list[str]:
    """Words, quoted texts (quotes kept), operators and ``( ) ,``, in one pass."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "\"'":
            j = text.find(c, i + 1)
            if j < 0:
                raise DataValidationError(f"--where {text!r}: a quote {c} is not closed")
            out.append(text[i : j + 1])
            i = j + 1
        elif c in _PUNCT:
            out.append(c)
            i += 1
        elif c in "=!<>":
            two = text[i : i + 2]
            op = two if two in _OPS else c
            if op == "!":
                raise DataValidationError(f"--where {text!r}: write != for 'not equal'")
            out.append(op)
            i += len(op)
        else:
            j = i
            while j < n and not (text[j].isspace() or text[j] in _PUNCT or text[j] in "=!<>\"'"):
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _value(tok: str, text: str) -> str:
    if tok in _PUNCT or tok in _OPS:
        raise DataValidationError(f"--where {text!r}: a value is missing before {tok!r}")
    if len(tok) >= 2 and tok[0] == tok[-1] and tok[0] in "\"'":
        return tok[1:-1]
    return tok


def parse_where(text: str) -> tuple[Condition, ...]:
    """The clauses of a condition (``""``: none).

    Raises
    ------
    DataValidationError
        For a condition that is too long or not of the grammar above, in words.
    """
    text = (text or "").strip()
    if not text:
        return ()
    if len(text) > MAX_WHERE:
        raise DataValidationError(
            f"--where: the condition has {len(text):,} characters, more than {MAX_WHERE}"
        )
    toks = _tokens(text)
    usage = "write e.g. PURPOSE in (1, 3) and CHOICE != 0"
    out: list[Condition] = []
    i = 0
    while True:
        if i + 2 >= len(toks):
            raise DataValidationError(f"--where {text!r}: incomplete; {usage}")
        col = _value(toks[i], text)
        word = toks[i + 1].lower()
        if word == "not" and i + 2 < len(toks) and toks[i + 2].lower() == "in":
            op, i = "notin", i + 3
        elif word == "in":
            op, i = "in", i + 2
        elif toks[i + 1] in _OPS:
            op = "==" if toks[i + 1] == "=" else toks[i + 1]
            out.append(Condition(col, op, (_value(toks[i + 2], text),)))
            i += 3
            op = ""
        else:
            raise DataValidationError(
                f"--where {text!r}: {toks[i + 1]!r} is not an operator (== != > >= < <= in, "
                f"not in); {usage}"
            )
        if op:
            if i >= len(toks) or toks[i] != "(":
                raise DataValidationError(f"--where {text!r}: 'in' takes a list: (1, 3)")
            values: list[str] = []
            i += 1
            while True:
                if i >= len(toks):
                    raise DataValidationError(f"--where {text!r}: a list is not closed with )")
                values.append(_value(toks[i], text))
                if i + 1 >= len(toks):
                    raise DataValidationError(f"--where {text!r}: a list is not closed with )")
                if toks[i + 1] not in (",", ")"):
                    raise DataValidationError(
                        f"--where {text!r}: separate the list's values with commas"
                    )
                i += 2
                if toks[i - 1] == ")":
                    break
            out.append(Condition(col, op, tuple(values)))
        if i == len(toks):
            return tuple(out)
        if toks[i].lower() != "and":
            raise DataValidationError(
                f"--where {text!r}: join clauses with 'and' (found {toks[i]!r}); {usage}"
            )
        i += 1
        if i >= len(toks):
            raise DataValidationError(f"--where {text!r}: a clause is missing after 'and'")


def where_mask(frame: pd.DataFrame, clauses: Sequence[Condition], name: str) -> np.ndarray:
    """Which rows of ``frame`` meet every clause.

    Raises
    ------
    DataValidationError
        For a column the file lacks (naming the file and the condition) or an order
        comparison with text.
    """
    keep = np.ones(len(frame), dtype=bool)
    for c in clauses:
        if c.column not in frame.columns:
            cols = ", ".join(map(str, list(frame.columns)[:20]))
            raise DataValidationError(
                f"{name}: --where {c.text()!r}: no column {c.column!r} (the file has: {cols})"
            )
        col = frame[c.column]
        empty = col.isna().to_numpy()
        numbers = pd.to_numeric(col, errors="coerce")
        as_numbers = bool(numbers.notna().sum() == (~empty).sum()) and (~empty).any()
        vals: list[float] | list[str]
        if as_numbers:
            try:
                vals = [float(v) for v in c.values]
            except ValueError:
                as_numbers = False
        if as_numbers:
            x = numbers.to_numpy(dtype=float)
            if c.op in ("in", "notin"):
                hit = np.isin(x, np.asarray(vals, dtype=float))
                ok = hit if c.op == "in" else ~hit
            else:
                v = float(vals[0])
                ok = {
                    "==": x == v,
                    "!=": x != v,
                    ">": x > v,
                    ">=": x >= v,
                    "<": x < v,
                    "<=": x <= v,
                }[c.op]
        else:
            if c.op in (">", ">=", "<", "<="):
                raise DataValidationError(
                    f"{name}: --where {c.text()!r}: {c.column!r} holds text, so only ==, !=, "
                    "in and not in compare it"
                )
            keys = col.map(normalize_value).to_numpy(dtype=object)
            want = {normalize_value(v) for v in c.values}
            hit = np.array([k in want for k in keys], dtype=bool)
            ok = hit if c.op in ("in", "==") else ~hit
        keep &= np.asarray(ok, dtype=bool) & ~empty
    return keep
