"""A study's fingerprint and the pooled fits made on it (a process's memo).

:func:`study_fingerprint` hashes a study's key and data, so the same data give the same
fingerprint wherever they were loaded from: the dashboard's job cache keys results by it.
:func:`fits_memo` keeps the pooled fold fits of the last studies compared, so a
respondent's held-out evidence reuses the study-level comparison's fits (same hold-out,
same training comparisons: :func:`pbo_core.evaluation.score_model`'s ``fits``).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import numpy as np

from pbo_core.data import Study
from pbo_core.plan import plan_of

__all__ = ["fits_memo", "study_fingerprint"]


def study_fingerprint(study: Study) -> str:
    """A hash of the study's key, data (comparisons, items, respondents, tasks, features)
    and analysis plan: the same data and plan give the same fingerprint wherever they were
    loaded from; an edited plan (another baseline, other respondent features) another."""
    d = study.data
    h = hashlib.sha1(str(study.key).encode())
    for a in (d.pairs, d.X, d.respondent, d.task):
        if a is not None:
            arr = np.asarray(a)
            h.update(str((arr.dtype, arr.shape)).encode())
            h.update(
                np.ascontiguousarray(arr).tobytes()
                if arr.dtype != object
                else repr(arr.tolist()).encode()
            )
    h.update(repr(d.get_schema()).encode())
    plan = plan_of(study).to_dict()
    plan.pop("notes", None)  # words, not choices
    h.update(repr(sorted(plan.items())).encode())
    return h.hexdigest()


#: Pooled fold fits of recent comparisons, per study fingerprint (a process's memo, so a
#: respondent's evidence reuses the study-level comparison's fits: same folds, same data).
_FITS: OrderedDict[str, dict[Any, Any]] = OrderedDict()
_FITS_STUDIES = 2


def fits_memo(study: Study) -> dict[Any, Any]:
    """The memo of pooled fits of ``study`` (the last :data:`_FITS_STUDIES` studies)."""
    key = study_fingerprint(study)
    memo = _FITS.pop(key, None)
    _FITS[key] = memo if memo is not None else {}
    while len(_FITS) > _FITS_STUDIES:
        _FITS.popitem(last=False)
    return _FITS[key]
