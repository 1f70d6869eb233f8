"""The project's exception types, importable without NumPy or pandas.

Every layer raises these (a file's reader, a model's ``fit``, a page's job), and the
apps catch them to show one sentence instead of a traceback; keeping them in a module
with no heavy import lets a light module (file limits, the dashboard's job runner) name
them without loading the data model.
"""

from __future__ import annotations

__all__ = ["InvalidParameterError"]


class InvalidParameterError(ValueError, TypeError):
    """An estimator's parameter is outside what it declares (checked in ``fit``).

    The message is one sentence naming the estimator, the parameter, the allowed values
    and the value given. A ``ValueError`` and a ``TypeError``, as scikit-learn's.
    """
