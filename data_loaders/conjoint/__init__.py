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
line (the header is line 1), or the row label for in-memory tables, and the column (in
the wide format the file's own column, ``price2``). Numeric attributes declare their valid
range with ``min``/``max`` (attribute tables: keys ``"min"``, ``"max"``); without them
values beyond ``|x| > 1e12`` are refused.

Modules
-------
``attributes``
    :class:`Attribute`, attribute tables (JSON), cell parsing, :func:`normalize_value`.
``exclusions``
    Exclusion rules (:class:`MaxOptOutShare`, :class:`MinAnsweredTasks`,
    :class:`DropRespondents`).
``build``
    :func:`build_from_long`: long-format rows -> :class:`~pbo_core.data.Study`
    (shared by every reader and the presets), :class:`StudyMeta`.
``formats``
    The long and wide readers (:func:`load_conjoint_long`, :func:`load_conjoint_wide`,
    :func:`wide_to_long`).

The presets built on this package (``train``, ``electricity``, ``bela``,
``presidential``) live in their own modules; load them by name with
:func:`data_loaders.registry.load_preset`.
"""

from data_loaders.conjoint.attributes import (
    Attribute,
    AttributeKind,
    is_missing,
    normalize_value,
    parse_attribute,
    read_attribute_table,
    resolve_attributes,
    write_attribute_table,
)
from data_loaders.conjoint.build import NoChoice, StudyMeta, build_from_long, user_table
from data_loaders.conjoint.exclusions import (
    DropRespondents,
    ExclusionRule,
    MaxOptOutShare,
    MinAnsweredTasks,
    rule_reason,
)
from data_loaders.conjoint.formats import (
    load_conjoint_long,
    load_conjoint_wide,
    read_table,
    wide_to_long,
)

__all__ = [
    "Attribute",
    "AttributeKind",
    "DropRespondents",
    "ExclusionRule",
    "MaxOptOutShare",
    "MinAnsweredTasks",
    "NoChoice",
    "StudyMeta",
    "build_from_long",
    "is_missing",
    "load_conjoint_long",
    "load_conjoint_wide",
    "normalize_value",
    "parse_attribute",
    "read_attribute_table",
    "read_table",
    "resolve_attributes",
    "rule_reason",
    "user_table",
    "wide_to_long",
    "write_attribute_table",
]
