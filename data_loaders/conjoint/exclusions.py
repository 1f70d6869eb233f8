"""Per-respondent exclusion rules of conjoint studies.

A rule is a callable that receives the per-respondent summary table (index =
respondent; columns ``n_tasks``, ``n_answered``, ``n_opt_out``, ``n_dropped``,
``opt_out_share``) and returns a boolean Series (True = exclude). Built in:
:class:`MaxOptOutShare`, :class:`MinAnsweredTasks` and :class:`DropRespondents`;
:func:`rule_reason` is the reason recorded for the respondents a rule excludes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

__all__ = [
    "DropRespondents",
    "ExclusionRule",
    "MaxOptOutShare",
    "MinAnsweredTasks",
    "rule_reason",
]

ExclusionRule = Callable[[pd.DataFrame], pd.Series]


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


def rule_reason(rule: ExclusionRule) -> str:
    """Reason recorded for respondents excluded by ``rule``: its ``description``, else
    its ``__name__``, else its ``repr``."""
    return str(getattr(rule, "description", getattr(rule, "__name__", repr(rule))))
