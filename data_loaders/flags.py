"""The command-line flags of an analyst's own choice file (standard library only).

:func:`add_column_args` adds them to a parser (``python -m data_loaders import-study``,
``conjoint-accuracy --data``, ``report --data``);
:func:`data_loaders.column_flags.column_map` turns the parsed flags into a
:class:`~data_loaders.layout.ColumnMap`. Kept free of pandas and the data model, so the
import command can refuse an oversized file (:mod:`data_loaders.limits`) before it loads
them.
"""

from __future__ import annotations

import argparse

__all__ = ["add_column_args", "parse_features", "split_list"]


def add_column_args(p: argparse.ArgumentParser) -> None:
    """The choice-file flags shared by every command that reads an analyst's own file
    (``python -m data_loaders import-study``, ``conjoint-accuracy --data``,
    ``report --data``). Whatever is not given is inferred
    (:func:`data_loaders.layout.resolve_columns`)."""
    p.add_argument(
        "--format",
        choices=("long", "wide"),
        default=None,
        help="layout of the file (default: inferred; wide when a column names the "
        "alternatives and there is no profile column)",
    )
    p.add_argument(
        "--attributes",
        default=None,
        help="JSON attribute table (default: inferred from the columns, as the page does)",
    )
    p.add_argument(
        "--respondent-col",
        default="respondent",
        help="respondent column; '' = none (every task is a respondent of its own; also "
        "when the default is absent)",
    )
    p.add_argument(
        "--task-col",
        default="task",
        help="task column; '' = none (long: each respondent's rows are one task; also when "
        "the default is absent)",
    )
    p.add_argument("--profile-col", default="profile", help="alternative column (long)")
    p.add_argument(
        "--chosen-col",
        default=None,
        help="chosen flag (long, default 'chosen') or chosen alternative (wide, default "
        "'choice', else the one column naming alternatives)",
    )
    p.add_argument(
        "--rank-col",
        default="",
        help="long: a rank column (1 = best) instead of a chosen flag; every pair of a task "
        "is ordered by rank, equal ranks give no comparison",
    )
    p.add_argument(
        "--alternatives",
        default=None,
        help="wide: the alternatives as in the column names (price1 -> 1, ic.gc -> gc), "
        "comma-separated (default: inferred from the columns and the choice values)",
    )
    p.add_argument(
        "--opt-out",
        default="",
        help="values meaning 'none of these', comma-separated (long: of the profile "
        "column; wide: of the choice column); such tasks give no comparisons",
    )
    p.add_argument(
        "--constants",
        choices=("auto", "yes", "no"),
        default="auto",
        help="alternative-specific constants (an attribute 'alternative' with the alternatives "
        "as levels): auto (default) adds them when the alternatives carry names (brands, "
        "modes: labelled), not for numbered or lettered profiles of a generic design; the "
        "preview says which",
    )
    p.add_argument(
        "--alternative-attribute",
        action="store_true",
        help="the same as --constants yes",
    )
    p.add_argument(
        "--reference",
        default=None,
        help="the alternative whose constant is 0 (default: the first)",
    )
    p.add_argument(
        "--respondent-features",
        default="",
        help="columns constant within a respondent kept as respondent features: "
        "name or name=Label, comma-separated",
    )
    p.add_argument(
        "--money-attribute",
        default=None,
        help="the numeric attribute that is money (default: the one named price or cost, "
        "if any; '' = none)",
    )
    p.add_argument(
        "--drop-attributes",
        default="",
        help="attributes left out of the study, comma-separated (e.g. one of three exactly "
        "collinear ones: total time = in-vehicle + out-of-vehicle time)",
    )
    p.add_argument(
        "--units",
        default="",
        help="the attributes' units, comma-separated NAME=UNIT (TT=min,CO=CHF); a unit is never "
        "assumed: without one a trade-off is said per unit of the attribute, a time in min, "
        "s or h is converted to per hour",
    )
    p.add_argument(
        "--where",
        default="",
        help="read only the rows meeting a condition, e.g. 'PURPOSE in (1, 3)' or "
        "'CHOICE != 0 and AGE >= 2' (operators in, not in, == != > >= < <=; joined by and)",
    )
    p.add_argument(
        "--categorical",
        default="",
        help="columns holding category codes (1 = commute, 2 = shopping, ...), "
        "comma-separated: integer codes with few values are asked about, never guessed",
    )
    p.add_argument(
        "--numeric",
        default="",
        help="columns whose integer values are numbers (counts, scores), comma-separated",
    )
    p.add_argument(
        "--split-col",
        default="",
        help="a column whose values train, validation, test are your own split (the study's "
        "'study' split; a validation row trains)",
    )
    p.add_argument(
        "--ignore",
        default="",
        help="columns that are not part of the study (a row index, an id), comma-separated",
    )
    p.add_argument(
        "--time-attribute",
        default=None,
        help="the numeric attribute that is a travel time (the value of time divides its "
        "slope by the money slope); default none: a travel time is never guessed",
    )

    p.add_argument(
        "--availability",
        default=None,
        help="wide: availability columns (1 = the alternative is in the choice set), one per "
        "alternative in their order, comma-separated ('' for an always available one); "
        "default: inferred from names such as TRAIN_AV or avail_car; 'none' for none",
    )
    p.add_argument(
        "--choice-coding",
        choices=("names", "0", "1"),
        default=None,
        help="wide: how the chosen column names the alternative: by name, or by number from "
        "0 or from 1 in the order of the alternatives (default: inferred)",
    )
    p.add_argument(
        "--no-choice",
        default="",
        help="wide: chosen-column values meaning 'no or unknown choice' (SwissMetro's 0); such "
        "rows are dropped and counted",
    )
    p.add_argument(
        "--missing",
        default=None,
        help="missing-value codes, comma-separated (-1,99): a choice situation with one in an "
        "attribute of an available alternative is dropped and counted (default: detected "
        "among -1, -2 and 99; '' for none)",
    )
    p.add_argument(
        "--fill-attributes",
        default="",
        help="wide: attributes given for some alternatives only (a cost for two of three "
        "modes), used with 0 for the others, comma-separated stems (CO,HE)",
    )
    p.add_argument(
        "--weight-col",
        default=None,
        help="a weight column: recorded and reported, not used by the models (default: a "
        "column named weight, if any; '' for none)",
    )
    p.add_argument(
        "--levels",
        default="",
        help="text attributes with many levels: name=keep, name=drop or name=group:K (the K "
        "most frequent levels, the rest as 'other'), comma-separated",
    )

    p.add_argument(
        "--zero-when",
        action="append",
        default=[],
        metavar="RULE",
        help="wide: set an attribute to 0 on some rows, e.g. 'CO for TRAIN,SM when GA=1' "
        "(Biogeme's TRAIN_CO * (GA == 0): no fare for travel-card holders); repeatable",
    )
    p.add_argument(
        "--available-when",
        action="append",
        default=[],
        metavar="RULE",
        help="an alternative is available only on rows meeting a condition on a column, "
        "e.g. 'car: license == 1' (operators == != > >= < <=; wide: with an availability "
        "column too, both must hold; long: the alternative is a value of the profile column "
        "and its rows where the condition is false are removed); repeatable",
    )


def split_list(text: str | None) -> tuple[str, ...]:
    """``"a, b,,c"`` -> ``("a", "b", "c")``."""
    return tuple(a.strip() for a in (text or "").split(",") if a.strip())


def parse_features(text: str | None) -> tuple[tuple[str, str], ...]:
    """``"college=College degree,hsg2"`` -> ``(("college", "College degree"), ("hsg2", ""))``."""
    out = []
    for item in split_list(text):
        name, _, label = item.partition("=")
        out.append((name.strip(), label.strip()))
    return tuple(out)
