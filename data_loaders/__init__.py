"""Loaders that turn case-study files into :class:`pbo_core.data.Study` objects.

Start with the registry::

    from data_loaders.registry import list_studies, load_study

    for info in list_studies():          # key, title, kind, available, reason, license
        print(info.key, info.available, info.reason)
    study = load_study("train")

Modules
-------
``registry``
    Every study with its availability; ``load_study(key, **options)``.
``cached``
    ``load_study_cached`` (a registry key) and ``load_study_file`` (an analyst's own
    choice file), cached per process: what the case-study command lines bind.
``conjoint``
    Generic choice-based conjoint loader (package: attributes and attribute tables,
    exclusion rules, the long-format build, the long/wide readers) used by the presets
    below (load those by name with ``registry.load_preset``).
``stated_preference``
    The vendored real studies ``train`` and ``electricity`` (MIT, ``data/``).
``bela``, ``presidential``
    Published formats of the BELA DCE and the presidential-candidate conjoint; the data
    are not included (point the loaders at your copy or set ``DTPBO_BELA_PATH`` /
    ``DTPBO_PRESIDENTIAL_PATH``).
``sushi``
    Kamishima's SUSHI sets A and B from a local copy (``DTPBO_SUSHI_DIR``), with an
    opt-in download of the official archive.
``pmr``
    Patient-message triage: PMR-Synth-Inboxes and the bundled synthetic demo inbox
    (features from :mod:`feature_extraction`).
``user_studies``, ``layout``, ``limits``, ``cli``
    An analyst's own choice files of any shape: the shape inferred (``layout``), bounded
    before parsing (``limits``), checked and saved into the per-user data folder
    (``user_studies``; the Add-a-study form and ``python -m data_loaders import-study``,
    ``cli``).

Every loader names the file and line of malformed input
(:class:`pbo_core.data.DataValidationError`) and says how to obtain data that are absent
(:class:`data_loaders._common.DataNotAvailableError`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from data_loaders._common import DataNotAvailableError
    from data_loaders.registry import (
        StudyInfo,
        StudyUnavailableError,
        list_studies,
        load_preset,
        load_study,
        study_info,
    )

__all__ = [
    "DataNotAvailableError",
    "StudyInfo",
    "StudyUnavailableError",
    "list_studies",
    "load_preset",
    "load_study",
    "study_info",
]

#: Where each public name lives; imported on first use, so ``python -m data_loaders`` and
#: ``import data_loaders.limits`` do not load every study loader (the registry pulls in
#: the PMR loaders and the LLM client).
_HOME = {"DataNotAvailableError": "data_loaders._common"} | {
    n: "data_loaders.registry" for n in __all__ if n != "DataNotAvailableError"
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'data_loaders' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name]), name)
    globals()[name] = value
    return value
