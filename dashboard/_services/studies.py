"""Data locations, study availability and loading, respondents.

A path typed in the sidebar is a path *on the server*: it is checked against the allowed
data roots (:mod:`data_loaders.access`) before anything looks at it, and every study is
loaded inside :func:`data_loaders.access.confined`, so the loaders never open a file
outside the roots, a device, a FIFO or an oversized file. In shared-server mode
(``DTPBO_SHARED_SERVER=1``) no typed path is used at all.

Imported studies belong to the visitor who imported them (:func:`visitor`, the hash the
page stores as :data:`OWNER_KEY`): in shared-server mode another visitor's study is not
listed, not loaded, not reachable by a link and not removable, unless the operator
published it (:meth:`data_loaders.user_studies.UserStudy.visible_to`). A visitor's
imports are limited per visitor and per network address (:func:`client_address`), and a
visitor's study nobody used for ``$DTPBO_VISITOR_STUDY_DAYS`` days expires: its use on a
page marks it (:func:`get_study`), a sweep removes expired ones (:func:`sweep_studies`, at
the start of a shared server and periodically, :func:`start_study_sweeper`).
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import streamlit as st

from dashboard import _import_jobs, _memory, _server
from dashboard._services import jobs
from dashboard._text import err, md
from data_loaders import access, user_studies
from data_loaders._common import DataNotAvailableError
from data_loaders.plans import plan_stamp
from data_loaders.registry import (
    StudyInfo,
    StudyUnavailableError,
    data_locations,
    list_studies,
    load_study,
)
from pbo_core.data import DataValidationError, PreferenceData, Study
from pbo_core.splits import MIN_TASKS_FOR_TASK_SPLIT, tasks_per_respondent

_LOG = logging.getLogger(__name__)

#: Loader errors whose messages are written to quote names, not content (shown as is);
#: any other exception is shown by its type only (the details go to the server log).
_SAFE_ERRORS = (
    DataValidationError,
    DataNotAvailableError,
    StudyUnavailableError,
    access.PathRefusedError,
)

#: Data sets the user may have, with the environment variable that locates them and the
#: registry keys they serve: declared by the study registry's entries
#: (:attr:`data_loaders.registry.StudyInfo.location`), not here.
DATASETS: dict[str, dict[str, Any]] = data_locations()

#: Environment variables whose values change what the loaders find.
_ENV_KEYS = (
    *(d["env"] for d in DATASETS.values()),
    "DTPBO_DATA_HOME",
    access.DATA_ROOTS_ENV,
    access.SHARED_SERVER_ENV,
    access.MAX_BYTES_ENV,
)

#: Session-state keys shared by the pages.
STUDY_KEY = "sel_study"
PATHS_KEY = "data_paths"
#: Session-state key of this browser's owner id (set by ``dashboard._ui.visitor_owner``).
OWNER_KEY = "_visitor_owner"


def visitor() -> str:
    """This browser's owner id (a hash of its visitor token; ``""`` outside a page)."""
    try:
        return str(st.session_state.get(OWNER_KEY) or "")
    except Exception:  # no script run context (the launcher's preload)
        return ""


def client_address() -> str:
    """This visitor's network address as the keyed hash the per-address limits count
    (:func:`dashboard._server.address_id`): the websocket's peer (a loopback peer is one
    address), or, only when that peer is a proxy the server is told to trust
    (``$DTPBO_TRUSTED_PROXIES``, none by default), the address it appended to
    ``X-Forwarded-For`` (:func:`dashboard._server.client_ip`; docs/shared-server.md).
    Never ``""`` on a page: a visitor without an address counts as the loopback one."""
    try:
        peer = st.context.ip_address  # None for a loopback peer
        header = str(st.context.headers.get("X-Forwarded-For") or "")
    except Exception:  # no script run context: no page, no import
        return ""
    try:
        proxies = _server.trusted_proxies()
    except ValueError:  # refused at launch (dashboard._server.server_args)
        proxies = ()
    ip = _server.client_ip(peer, header, proxies)
    return _server.address_id(ip)


def dataset_of(study_key: str) -> str | None:
    """The user-supplied data set a study key belongs to (``None`` for bundled studies)."""
    for name, d in DATASETS.items():
        if study_key in d["studies"]:
            return name
    return None


def shared_server() -> bool:
    """True in shared-server mode: no Data locations inputs, no typed path is used."""
    return access.shared_server()


def data_paths() -> dict[str, str]:
    """Paths typed in the sidebar (``{dataset: path}``, empty entries dropped; always
    empty in shared-server mode)."""
    if shared_server():
        return {}
    paths = st.session_state.get(PATHS_KEY) or {}
    return {k: str(v).strip() for k, v in paths.items() if v and str(v).strip()}


def env_stamp() -> tuple[tuple[str, str], ...]:
    """The data-location environment, as part of cache keys."""
    return tuple((k, os.environ.get(k, "")) for k in _ENV_KEYS)


def path_exists(path: str) -> bool:
    """True when a typed path names an existing file or folder."""
    try:
        return Path(path).expanduser().exists()
    except (OSError, ValueError):  # e.g. an embedded NUL byte
        return False


def path_refusal(dataset: str, path: str) -> str | None:
    """Why a typed path of ``dataset`` is refused (outside the roots, a device...), or
    ``None``; decided before the path is looked at further (no existence oracle)."""
    d = DATASETS[dataset]
    with access.confined():
        return access.refusal(path, folder=bool(d["folder"]), what=d["label"])


def typed_path_refusal(path: str, *, folder: bool, write: bool, what: str) -> str | None:
    """Why a path typed on a page may not be used, or ``None``: a path read must lie below
    the allowed data roots (:func:`data_loaders.access.refusal`, confined); a path written
    (results, caches) below the data folder (:func:`data_loaders.access.check_output`).
    A path read that does not exist is not refused (the page finds nothing there)."""
    if write:
        try:
            access.check_output(path, folder=folder, what=what)
        except access.PathRefusedError as exc:
            return str(exc)
        return None
    with access.confined():
        return access.refusal(path, folder=folder, what=what)


def _typed_problem(dataset: str, typed: str) -> str | None:
    """Why the typed path cannot be used (refused or absent), or ``None`` when it can."""
    refused = path_refusal(dataset, typed)
    if refused is not None:
        return f"refused: {refused}"
    if not path_exists(typed):
        return f"{typed} does not exist"
    return None


def sidebar_path(study_key: str) -> str | None:
    """The path typed in the sidebar for a study's data set (``None`` if empty)."""
    return data_paths().get(dataset_of(study_key) or "")


def path_source(dataset: str) -> tuple[str, str]:
    """Which location of a data set is used, and a sentence saying so.

    Precedence: a sidebar path **that exists** > the environment variable > nothing. A
    sidebar path that does not exist never hides a valid environment variable; the
    sentence says which one is used. Returns ``(source, message)`` with source
    ``"sidebar"``, ``"env"`` or ``"none"``.
    """
    d = DATASETS[dataset]
    env = d["env"]
    typed = data_paths().get(dataset)
    env_value = os.environ.get(env, "").strip()
    env_ok = bool(env_value) and path_exists(env_value)
    problem = _typed_problem(dataset, typed) if typed else None
    if typed and problem is None:
        extra = f" (over ${env} = {env_value})" if env_value else ""
        return "sidebar", f"Using the sidebar path{extra}."
    if typed and env_ok:
        return "env", f"{problem}: using ${env} = {env_value} instead."
    if typed:
        why = f"${env} = {env_value} does not exist either" if env_value else f"${env} is unset"
        return "none", f"{problem} ({why})."
    if env_ok:
        return "env", f"Using ${env} = {env_value}."
    if env_value:
        return "none", f"${env} = {env_value} does not exist."
    return "none", f"Not configured (${env} is unset)."


def loader_options(study_key: str, infos: dict[str, StudyInfo] | None = None) -> dict[str, str]:
    """Loader options (``data_dir=`` / ``path=``) from the sidebar path of a study.

    Empty when no sidebar path is typed or it does not exist (the loader then uses the
    environment variable; see :func:`path_source`).
    """
    path = sidebar_path(study_key)
    if not path or _typed_problem(dataset_of(study_key) or "", path) is not None:
        return {}
    info = (infos or {}).get(study_key) or _study_infos().get(study_key)
    option = info.location_option if info is not None else ""
    return {option: path} if option else {}


@st.cache_data(ttl=5, show_spinner=False)
def _list_studies(env: tuple[tuple[str, str], ...]) -> list[StudyInfo]:
    # ``env`` is only part of the cache key (a name starting with "_" would not be)
    return list_studies()


@st.cache_data(ttl=5, show_spinner=False)
def _user_metas(env: tuple[tuple[str, str], ...]) -> dict[str, user_studies.UserStudy]:
    return {m.key: m for m in user_studies.list_user_studies()}


def visible(key: str) -> bool:
    """May this visitor see study ``key``? Always, except another visitor's imported
    study on a shared server (not published)."""
    if not key.startswith(user_studies.KEY_PREFIX) or not shared_server():
        return True
    meta = _user_metas(env_stamp()).get(key)
    return meta is not None and meta.visible_to(visitor())


def removable(key: str) -> bool:
    """May this visitor remove study ``key``? An imported study: on a personal server
    always, on a shared one only its owner's unpublished study."""
    if not key.startswith(user_studies.KEY_PREFIX):
        return False
    if not shared_server():
        return True
    meta = _user_metas(env_stamp()).get(key)
    return meta is not None and meta.removable_by(visitor())


def _study_infos() -> dict[str, StudyInfo]:
    return {s.key: s for s in _list_studies(env_stamp()) if visible(s.key)}


@dataclass(frozen=True)
class StudyStatus:
    """A registry entry plus what the sidebar adds (a configured path)."""

    info: StudyInfo
    usable: bool
    note: str
    options: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        """Registry key."""
        return self.info.key

    @property
    def title(self) -> str:
        """Display title."""
        return self.info.title


def study_statuses() -> list[StudyStatus]:
    """Every registry study: usable here (bundled, environment or sidebar path) or not."""
    infos = _study_infos()
    out = []
    for info in infos.values():
        opts = loader_options(info.key, infos)
        typed = sidebar_path(info.key)
        if opts:
            usable, note = True, f"configured in the sidebar: {next(iter(opts.values()))}"
        elif typed:  # a sidebar path that cannot be used: the environment may still serve
            ds = dataset_of(info.key) or ""
            env = DATASETS[ds]["env"]
            problem = _typed_problem(ds, typed) or f"{typed} cannot be used"
            usable = info.available
            note = (
                f"the sidebar path: {problem}; using ${env} instead ({info.reason})"
                if usable
                else f"the sidebar path: {problem}. {info.reason}"
            )
        else:
            usable, note = info.available, info.reason
        out.append(StudyStatus(info, usable, note, tuple(sorted(opts.items()))))
    return out


def study_status(key: str) -> StudyStatus:
    """Status of one study; a key that names no study this visitor may see (unknown,
    or another visitor's) gets the same unavailable status, so a link cannot tell them
    apart."""
    for s in study_statuses():
        if s.key == key:
            return s
    info = StudyInfo(key, str(key), "conjoint", False, "no such study here", "", "")
    return StudyStatus(info, False, "no such study here", ())


def how_to_get(key: str) -> str:
    """Markdown: why a study is unavailable and how to make it available (the reason,
    which may quote a path or a loader's message, as text)."""
    s = study_status(key)
    ds = dataset_of(key)
    lines = [err(s.note)]
    if ds is not None:
        env = DATASETS[ds]["env"]
        if shared_server():
            lines.append(
                f"This is a shared server: ask its administrator to set `{env}` (paths "
                "cannot be typed on the page)."
            )
        else:
            lines.append(
                f"Then type its location under **Data locations** in the sidebar, or set "
                f"`{env}` before starting the app (`{env}=... make run`); it must lie "
                f"below an allowed data root ({md(access.roots_summary())})."
            )
    return "\n\n".join(lines)


#: Environment variables: the imported studies the server keeps loaded at once, at most
#: this many (default 4) and this many MB in memory (default 256, measured by
#: :func:`dashboard._memory.footprint`); the least recently used one goes first, any after
#: :data:`OWN_STUDY_TTL_S` unused, and a study larger than the budget on its own is loaded
#: for each visit and not kept. A study within the import limits holds about 20-145 MB.
OWN_STUDY_CACHE_ENV = "DTPBO_OWN_STUDY_CACHE"
OWN_STUDY_CACHE_MB_ENV = "DTPBO_OWN_STUDY_CACHE_MB"
OWN_STUDY_CACHE_MB = 256
OWN_STUDY_TTL_S = 900.0


def _env_int(name: str, default: int) -> int:
    try:
        return max(int(os.environ.get(name, "") or default), 1)
    except ValueError:
        return default


_OWN_STUDIES: _memory.SizedCache[Study] = _memory.SizedCache(
    max_bytes=_env_int(OWN_STUDY_CACHE_MB_ENV, OWN_STUDY_CACHE_MB) * 2**20,
    max_entries=_env_int(OWN_STUDY_CACHE_ENV, 4),
    ttl=OWN_STUDY_TTL_S,
)


def _load_own_study(
    key: str, options: tuple[tuple[str, str], ...], env: Any, plan: tuple[int, int] = (0, 0)
) -> Study:
    """An imported study, loaded in a budgeted worker (:func:`dashboard._import_jobs.
    load_study`): the server holds the finished study only, and keeps at most
    ``$DTPBO_OWN_STUDY_CACHE`` of them in ``$DTPBO_OWN_STUDY_CACHE_MB``
    (:data:`_OWN_STUDIES`)."""

    def load() -> Study:
        with st.spinner("Loading study..."):
            return _in_worker(
                "study-load", "Loading the study", _import_jobs.load_study, key, options, key=key
            )

    return _OWN_STUDIES.get((key, options, env, plan), load)


@st.cache_resource(show_spinner="Loading study...", max_entries=16)
def _load_study(
    key: str, options: tuple[tuple[str, str], ...], env: Any, plan: tuple[int, int] = (0, 0)
) -> Study:
    del env, plan  # cache keys only (a saved analysis plan's stamp: an edit is read)
    with access.confined():  # typed and environment paths alike: only below the roots
        return load_study(key, **dict(options))


def get_study(key: str) -> tuple[Study | None, str | None]:
    """The loaded study, or ``(None, message)`` when it cannot be loaded here (the message
    is Markdown whose quoted data and paths are text, :mod:`dashboard._text`)."""
    s = study_status(key)
    if not s.usable:
        return None, how_to_get(key)
    if key.startswith(user_studies.KEY_PREFIX):
        user_studies.touch_study(key)  # its use keeps a visitor's study from expiring
    try:
        load = _load_own_study if key.startswith(user_studies.KEY_PREFIX) else _load_study
        return load(key, s.options, env_stamp(), plan_stamp(key)), None
    except _SAFE_ERRORS as exc:  # messages that quote names, not content
        return None, err(f"{type(exc).__name__}: {exc}")
    except jobs.JobStoppedError as exc:  # over the worker's budget, or the worker lost
        return None, err(str(exc))
    except Exception as exc:  # anything else may quote a file: its type only on the page
        _LOG.warning("loading study %r failed", key, exc_info=True)
        return None, err(f"{type(exc).__name__}: the data could not be loaded (see the server log)")


def warm_up_first_study() -> str | None:
    """Load the study the pages open on (the first usable one) into the study cache.

    For the launcher's preload (``python -m dashboard``), outside any browser session, so
    that the first visitor's page does not parse it. It fills the cache entry
    :func:`get_study` uses when no sidebar path is typed (a new visitor has none).
    Returns the study's key, or ``None`` when no study is usable.
    """
    # outside a session Streamlit logs "missing ScriptRunContext" for the cache's spinner
    log = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    quiet = _DropMessage("missing ScriptRunContext")
    log.addFilter(quiet)
    try:
        for info in list_studies():
            if info.available:
                _load_study(info.key, (), env_stamp(), plan_stamp(info.key))
                return info.key
    finally:
        log.removeFilter(quiet)
    return None


class _DropMessage(logging.Filter):
    """A logging filter that drops records containing ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def usable_study_keys(predicate: Callable[[StudyStatus], bool] | None = None) -> list[str]:
    """Keys of studies that can be loaded here."""
    return [s.key for s in study_statuses() if s.usable and (predicate is None or predicate(s))]


def is_per_respondent(study: Study) -> bool:
    """True when the study has several respondents (one tree per respondent)."""
    return study.data.respondent is not None and len(study.respondents()) > 1


@st.cache_data(show_spinner=False, max_entries=64)
def _median_tasks(token: Any, _study: Study) -> float:
    return float(np.median(tasks_per_respondent(_study)))


def has_personal_data(study: Study) -> bool:
    """Did the median respondent make enough choice tasks for a personal model to learn
    from some and be checked on others (:data:`pbo_core.splits.MIN_TASKS_FOR_TASK_SPLIT`)?
    When not, pages show the pooled model instead of a respondent picker."""
    if study.data.respondent is None:
        return False
    return _median_tasks(study_token(study), study) >= MIN_TASKS_FOR_TASK_SPLIT


def respondent_key(study_key: str) -> str:
    """Session-state key of the chosen respondent of a study."""
    return f"sel_respondent::{study_key}"


def chosen_respondent(study: Study) -> Any:
    """The respondent chosen for a study (``None`` for pooled, single-respondent studies
    and studies whose respondents made too few tasks for a personal model)."""
    if not is_per_respondent(study) or not has_personal_data(study):
        return None
    resp = list(study.respondents())
    cur = st.session_state.get(respondent_key(study.key))
    return cur if cur in resp else resp[0]


def respondent_data(study: Study, respondent: Any) -> PreferenceData:
    """Comparisons of one respondent, or the pooled data."""
    if respondent is None or study.data.respondent is None:
        return study.data
    return study.for_respondent(respondent)


def study_token(study: Study) -> tuple[str, tuple[tuple[str, str], ...], Any]:
    s = study_status(study.key)
    return (study.key, s.options, env_stamp())


def _in_worker(
    kind: str, title: str, fn: Callable[..., Any], *args: Any, key: Any, **kwargs: Any
) -> Any:
    """``fn(*args, **kwargs)`` in a worker of the job service (its memory and time budget), waited
    for here; the server process never holds what it allocates. The job's error is
    raised (:class:`dashboard._services.jobs.JobLimitError` names the budget)."""
    service, job_key = jobs.service(), jobs.job_key(kind, key)
    job = service.submit(job_key, title, fn, *args, cached=False, estimate=10.0, **kwargs)
    try:
        return job.wait(jobs.budget("DTPBO_JOB_SECONDS", jobs.SECONDS) + 60.0)
    finally:
        service.forget(job_key)  # the job table keeps neither the upload nor the study


def _job_problem(file: str, exc: Exception) -> user_studies.Problem:
    if isinstance(exc, jobs.JobStoppedError):
        return user_studies.Problem(file, str(exc))
    _LOG.warning("an import job failed", exc_info=exc)
    return user_studies.Problem(
        file, f"{type(exc).__name__}: the file could not be read here (see the server log)"
    )


def upload_columns(
    content: bytes, file: str, sep: str | None = None, encoding: str | None = None
) -> tuple[list[str] | None, list[user_studies.Problem], str]:
    """An upload's column names (``None``: it cannot be read), its problems and how it
    was read, from a budgeted worker (:mod:`dashboard._import_jobs`; ``sep`` and
    ``encoding``: a text file's, ``None`` detects them)."""
    try:
        return _in_worker(
            "upload-read",
            "Reading the file",
            _import_jobs.read_columns,
            content,
            file,
            sep,
            encoding=encoding,
            key=(_import_jobs.digest(content), file, sep, encoding),
        )
    except Exception as exc:
        return None, [_job_problem(file, exc)], ""


def inspect_upload(
    content: bytes,
    file: str,
    columns: str,
    sep: str | None = None,
    encoding: str | None = None,
) -> user_studies.Inspection:
    """What the form shows for an upload and a column map (JSON), from a budgeted worker
    (:func:`data_loaders.user_studies.inspect_upload`)."""
    try:
        return _in_worker(
            "upload-inspect",
            "Reading the file's columns",
            _import_jobs.inspect_upload,
            content,
            file,
            columns,
            sep,
            encoding=encoding,
            key=(_import_jobs.digest(content), file, columns, sep, encoding),
        )
    except Exception as exc:
        return user_studies.Inspection(None, problems=[_job_problem(file, exc)])


def import_study(
    title: str,
    content: bytes,
    file: str,
    attributes: list[Any],
    columns: user_studies.ColumnMap,
    respondents: tuple[bytes, str] | None = None,
    sep: str | None = None,
    encoding: str | None = None,
) -> tuple[user_studies.UserStudy | None, list[user_studies.Problem]]:
    """Check and save an uploaded study as this visitor's (nothing is saved when there is
    a problem; on a shared server the visitor's limits come first); the study lists
    refresh at once. ``content`` is the file in any accepted format
    (:mod:`data_loaders.readers`; ``sep``, ``encoding``: a text file's separator and
    encoding, ``None`` detects them).
    The check and the save run in a budgeted worker (:mod:`dashboard._import_jobs`)."""
    try:
        meta, problems = _in_worker(
            "upload-save",
            "Importing the study",
            _import_jobs.save_upload,
            title,
            content,
            file,
            attributes,
            columns,
            respondents,
            key=secrets.token_hex(8),  # every import is its own job
            owner=visitor(),
            limit_owner=shared_server(),
            sep=sep,
            encoding=encoding,
            address=client_address() if shared_server() else "",
        )
    except Exception as exc:
        return None, [_job_problem(file, exc)]
    if meta is not None:
        _list_studies.clear()
        _user_metas.clear()
    return meta, problems


def owner_refusal() -> str | None:
    """Why this visitor may not import another study here (shared server), or ``None``."""
    if not shared_server():
        return None
    return user_studies.owner_refusal(visitor(), 0, client_address())


def own_studies() -> list[tuple[user_studies.UserStudy, float | None]]:
    """This visitor's own studies on a shared server, with when each expires unused
    (epoch seconds; ``None``: kept), oldest first; none on a personal server."""
    if not shared_server() or not visitor():
        return []
    metas = _user_metas(env_stamp()).values()
    mine = [m for m in metas if m.removable_by(visitor())]
    return [(m, user_studies.expires_at(m)) for m in mine]


def sweep_studies() -> list[str]:
    """Remove visitors' studies unused for ``$DTPBO_VISITOR_STUDY_DAYS`` days (shared
    server only); the keys removed. The study lists and caches forget them."""
    if not shared_server():
        return []
    gone = user_studies.expire_visitor_studies()
    if gone:
        _LOG.info("expired %d visitors' studies unused for %g days", len(gone), _idle())
        _list_studies.clear()
        _user_metas.clear()
        _OWN_STUDIES.clear()
    return gone


def _idle() -> float:
    return user_studies.idle_days()


_SWEEPER: list[threading.Event] = []


def start_study_sweeper(every: float | None = None) -> bool:
    """On a shared server, sweep now and then every ``every`` seconds (default: a 24th of
    the idle time, at most an hour) in a daemon thread; once per process
    (:func:`stop_study_sweeper` ends it). Whether a sweeper runs."""
    if not shared_server() or _SWEEPER:
        return bool(_SWEEPER)
    period = every or min(3600.0, max(_idle() * 86400.0 / 24, 60.0))
    stop = threading.Event()

    def run() -> None:
        while not stop.is_set():
            try:
                sweep_studies()
            except Exception:  # never let the sweeper die
                _LOG.warning("sweeping expired studies failed", exc_info=True)
            stop.wait(period)

    _SWEEPER.append(stop)
    threading.Thread(target=run, name="dtpbo-study-sweep", daemon=True).start()
    return True


def stop_study_sweeper() -> None:
    """End the sweeper thread (tests)."""
    while _SWEEPER:
        _SWEEPER.pop().set()


def remove_study(key: str) -> None:
    """Delete an imported study this visitor may remove (:func:`removable`) and forget
    its cached copy.

    Raises
    ------
    PermissionError
        For a study this visitor may not remove.
    """
    if not removable(key):
        raise PermissionError(f"study {key!r} cannot be removed here")
    user_studies.remove_user_study(key)
    _list_studies.clear()
    _user_metas.clear()
    _load_study.clear()
    _OWN_STUDIES.clear()
