"""The parsed choice-file flags as a column map (the argparse helper of an own study).

:func:`data_loaders.flags.add_column_args` adds the flags to a parser with the standard
library only; :func:`column_map` turns the parsed flags into a
:class:`~data_loaders.layout.ColumnMap` (``import-study``, ``conjoint-accuracy --data``,
``report --data``).
"""

from __future__ import annotations

import argparse

from data_loaders.flags import parse_features, split_list
from data_loaders.layout import ColumnMap

__all__ = ["column_map"]


def column_map(args: argparse.Namespace) -> ColumnMap:
    """The :class:`ColumnMap` of the flags of :func:`add_column_args`."""
    return ColumnMap(
        getattr(args, "format", None) or "auto",
        getattr(args, "respondent_col", "respondent"),
        getattr(args, "task_col", "task"),
        getattr(args, "profile_col", "profile"),
        getattr(args, "chosen_col", None),
        split_list(getattr(args, "alternatives", None)),
        rank=getattr(args, "rank_col", "") or "",
        opt_out=split_list(getattr(args, "opt_out", "")),
        alternative_attribute=_constants(args),
        reference=getattr(args, "reference", None) or None,
        units=tuple(
            (n.strip(), u.strip())
            for n, _, u in (x.partition("=") for x in split_list(getattr(args, "units", "")))
        ),
        where=(getattr(args, "where", "") or "").strip(),
        categorical=split_list(getattr(args, "categorical", "")),
        numeric=split_list(getattr(args, "numeric", "")),
        ignore=split_list(getattr(args, "ignore", "")),
        split=(getattr(args, "split_col", "") or "").strip(),
        respondent_features=parse_features(getattr(args, "respondent_features", "")),
        money_attribute=getattr(args, "money_attribute", None),
        time_attribute=getattr(args, "time_attribute", None) or None,
        drop_attributes=split_list(getattr(args, "drop_attributes", "")),
        availability=_availability_flag(getattr(args, "availability", None)),
        choice_coding=getattr(args, "choice_coding", None),
        no_choice=split_list(getattr(args, "no_choice", "")),
        missing=_optional_list(getattr(args, "missing", None)),
        fill_attributes=split_list(getattr(args, "fill_attributes", "")),
        weight=getattr(args, "weight_col", None),
        zero_when=tuple(getattr(args, "zero_when", None) or ()),
        available_when=tuple(getattr(args, "available_when", None) or ()),
        levels=tuple(
            (n.strip(), r.strip())
            for n, _, r in (x.partition("=") for x in split_list(getattr(args, "levels", "")))
        ),
    )


def _constants(args: argparse.Namespace) -> bool | None:
    """``--constants`` (``auto``: ``None``, decided from the alternatives' names) or the
    older ``--alternative-attribute`` (yes)."""
    if getattr(args, "alternative_attribute", False):
        return True
    return {"yes": True, "no": False}.get(getattr(args, "constants", "auto") or "auto")


def _optional_list(text: str | None) -> tuple[str, ...] | None:
    """``None`` (not given: inferred) or the comma-separated values (``''``: none)."""
    return None if text is None else split_list(text)


def _availability_flag(text: str | None) -> tuple[str, ...] | None:
    """``--availability``: ``None`` (inferred), ``none`` (no columns) or one column per
    alternative (an empty entry: always available)."""
    if text is None:
        return None
    if text.strip().lower() in ("", "none"):
        return ()
    return tuple(c.strip() for c in text.split(","))
