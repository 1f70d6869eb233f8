"""The project's exception types, in one module that imports nothing but the standard
library (no NumPy, no pandas).

Every layer raises them (a file's reader, a model's ``fit``, a job of the dashboard) and
the apps catch them to show one sentence instead of a traceback; a light module (the
file limits, the command line before it loads pandas, the dashboard's job runner) names
them without loading the data model. Each is still importable from the module that
raises it (``pbo_core.data.DataValidationError``, ``data_loaders.limits.LimitError``...).
Two stay with the types they carry: ``data_loaders.questions.OpenQuestionsError`` (the
questions a file leaves open) and ``feature_extraction.client.LLMRequestError`` (the
HTTP calls made); the dashboard's job errors live with its job service.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "AnswerValidationError",
    "DataNotAvailableError",
    "DataValidationError",
    "GPSizeWarning",
    "GPTooLargeError",
    "GridError",
    "InvalidParameterError",
    "LimitError",
    "NotApplicableError",
    "PathRefusedError",
    "ReplayTimeout",
    "SpecError",
    "StudyUnavailableError",
    "WideLayoutError",
]


# ----------------------------------------------------------------------------- data
class DataValidationError(ValueError):
    """Raised when items, pairs or a schema are malformed; the message names the place."""


class LimitError(DataValidationError):
    """An input over one of the limits (:mod:`data_loaders.limits`); the message names the
    file and the limit."""


class WideLayoutError(DataValidationError):
    """The file is wide (attribute columns per alternative were found) but its choices are
    not clear: values naming no alternative, several candidate choice columns."""


class PathRefusedError(PermissionError):
    """A data path the loaders will not open; the message names the path and the rule."""


class DataNotAvailableError(FileNotFoundError):
    """The data of a study are not on this machine; the message says how to get them."""


class StudyUnavailableError(LookupError):
    """The study is known but its data are not available here; the message says why."""


# ----------------------------------------------------------------------------- models
class InvalidParameterError(ValueError, TypeError):
    """An estimator's parameter is outside what it declares (checked in ``fit``).

    The message is one sentence naming the estimator, the parameter, the allowed values
    and the value given. A ``ValueError`` and a ``TypeError``, as scikit-learn's.
    """


class GPSizeWarning(UserWarning):
    """The GP is fitted on many comparisons or items; the fit may be slow."""


class GPTooLargeError(ValueError):
    """The GP would be fitted on more comparisons or items than its limit allows."""


class NotApplicableError(ValueError):
    """A model cannot be scored on this split; the message says why."""


# ----------------------------------------------------------------------------- runs
class GridError(RuntimeError):
    """Some cells of a grid failed; every other cell was computed (and stored)."""

    def __init__(self, failures: list[tuple[Mapping[str, Any], str]]) -> None:
        self.failures = failures
        lines = [f"{len(failures)} cell(s) failed:"]
        lines += [f"  {dict(c)}: {msg}" for c, msg in failures[:10]]
        if len(failures) > 10:
            lines.append(f"  ... and {len(failures) - 10} more")
        super().__init__("\n".join(lines))


class ReplayTimeout(TimeoutError):
    """:meth:`pbo_core.session.ElicitationSession.replay` reached its deadline after
    ``done`` of ``total`` rows."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"replayed {done} of {total} rows before the deadline")
        self.done, self.total = done, total


# ----------------------------------------------------------------------------- features
class SpecError(ValueError):
    """Raised for a malformed feature spec or spec file; the message names the place."""


class AnswerValidationError(ValueError):
    """An LLM answer that does not match the spec.

    Attributes
    ----------
    errors
        One human-readable problem per entry (fed back to the model on a retry).
    """

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))
