"""Words for codes and numbers: the string helpers under every displayed label.

Pure string functions without a project import, so the data model
(:class:`~pbo_core.data.Feature` labels and values) and the readable rules
(:mod:`pbo_core.rules`) can both use them. The public home of readable text is
:mod:`pbo_core.explain.labels`, which re-exports :func:`humanize`.
"""

from __future__ import annotations

import math

__all__ = ["fmt_number", "humanize", "with_unit"]


def fmt_number(x: float) -> str:
    """Compact number for rules: 3 significant digits, no trailing zeros."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    digits = max(0, 2 - math.floor(math.log10(abs(x))))
    s = f"{x:.{digits}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def humanize(code: str) -> str:
    """A snake_case code in words: ``"same_day_triage_or_call"`` -> ``"same-day triage or
    call"``-like text (underscores become spaces); other strings are returned unchanged."""
    if "_" not in code:
        return code
    return " ".join(w for w in code.split("_") if w)


def with_unit(value: str, unit: str) -> str:
    """``value`` with its unit; a plural unit turns singular for exactly 1 ("1 year")."""
    if not unit:
        return value
    if unit in ("%", "°"):
        return f"{value}{unit}"
    if value in ("1", "-1") and unit.isalpha() and unit.endswith("s") and len(unit) > 3:
        unit = unit[:-1]
    return f"{value} {unit}"
