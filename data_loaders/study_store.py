"""Saved own studies: their folders, owners, quotas and expiry.

A study is one folder ``$DTPBO_DATA_HOME/studies/<key>/`` holding canonical files:

``choices.csv``
    The uploaded choice data as it was uploaded (long or wide layout; a gzip file is
    stored decompressed).
``attributes.json``
    Its attribute table (:func:`~data_loaders.conjoint.write_attribute_table`).
``respondents.csv``
    Optional respondent features (one row per respondent; column ``respondent``).
``recipe.json``
    The import's choices (:mod:`data_loaders.recipes`): ``import-study FILE --recipe``
    replays them.
``study.json``
    Title, the resolved column mapping (:class:`~data_loaders.layout.ColumnMap`: layout,
    columns, alternatives, opt-outs, respondent features with their labels, the money
    attribute), what was inferred, counts, upload names (base names only), import time,
    and who may see it: ``owner`` (the hash of the dashboard visitor who imported it;
    empty for the command line) and ``public`` (published to every visitor).

:func:`save_study` runs the import's stages on an upload (:mod:`data_loaders.pipeline`:
read, interpret, describe, build, then save) and writes the folder only when the study
builds; :func:`load_user_study` loads a saved study, which the registry lists beside the
bundled ones (key ``my-...``).

**Ownership** (what a shared server enforces, :meth:`UserStudy.visible_to`): a study is
listed, loaded, linked and removed only by its owner, unless the operator published it
(``python -m data_loaders publish-study KEY`` or ``import-study --public``). A visitor
holds at most :func:`max_studies_per_owner` studies, one network address at most
:func:`max_studies_per_address` studies and :func:`max_address_bytes` bytes (a crowd of
new browsers from one machine is one address), and visitors' studies together at most
:func:`max_owned_bytes` bytes (:func:`owner_refusal`, checked before the upload is
parsed). A visitor's study that nobody used for :func:`idle_days` days expires
(:func:`expires_at`, :func:`expire_visitor_studies`; the dashboard's use marks it,
:func:`touch_study`). Keys of visitors' studies carry a random part, so a key says nothing
about other visitors' titles.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

from data_loaders import fields
from data_loaders.conjoint import Attribute, StudyMeta, read_attribute_table
from data_loaders.layout import ColumnMap
from data_loaders.pipeline.problems import Problem, Refused
from data_loaders.pipeline.save import KEY_PREFIX, RECIPE_FILE, UserStudy, save, studies_dir
from data_loaders.plans import remove_plan
from data_loaders.study_files import check, load_choice_file, with_respondents
from pbo_core.data import DataValidationError, Study

__all__ = [
    "IDLE_DAYS_ENV",
    "KEY_PREFIX",
    "MAX_ADDRESS_BYTES_ENV",
    "MAX_ADDRESS_STUDIES_ENV",
    "MAX_OWNED_BYTES_ENV",
    "MAX_STUDIES_ENV",
    "RECIPE_FILE",
    "UserStudy",
    "expire_visitor_studies",
    "expires_at",
    "idle_days",
    "last_used",
    "list_user_studies",
    "load_user_study",
    "max_address_bytes",
    "max_owned_bytes",
    "max_studies_per_address",
    "max_studies_per_owner",
    "owner_refusal",
    "remove_user_study",
    "save_study",
    "set_public",
    "studies_dir",
    "touch_study",
    "user_study",
]

#: Environment variable: the most studies one visitor may hold (default 10).
MAX_STUDIES_ENV = "DTPBO_MAX_STUDIES_PER_VISITOR"
#: Environment variable: the most bytes all visitors' studies may hold together (default
#: 512 MiB; the operator's and published studies do not count).
MAX_OWNED_BYTES_ENV = "DTPBO_MAX_VISITOR_STUDY_BYTES"
#: Environment variable: the most studies visitors from one network address may hold
#: (default 20): new browsers (new cookies) from one machine share it.
MAX_ADDRESS_STUDIES_ENV = "DTPBO_MAX_STUDIES_PER_ADDRESS"
#: Environment variable: the most bytes visitors from one network address may hold
#: (default a quarter of ``$DTPBO_MAX_VISITOR_STUDY_BYTES``).
MAX_ADDRESS_BYTES_ENV = "DTPBO_MAX_ADDRESS_STUDY_BYTES"
#: Environment variable: days a visitor's study is kept without use (default 7; 0 keeps
#: them until removed).
IDLE_DAYS_ENV = "DTPBO_VISITOR_STUDY_DAYS"
#: Marker file whose time is a study's last use (:func:`touch_study`).
_USED = ".used"
#: A use is written at most this often per study (seconds).
_TOUCH_EVERY_S = 600.0


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    try:
        return max(int(raw), 0) if raw else default
    except ValueError:
        return default


def max_studies_per_owner() -> int:
    """The most studies one visitor may hold (``$DTPBO_MAX_STUDIES_PER_VISITOR``, 10)."""
    return _env_int(MAX_STUDIES_ENV, 10)


def max_owned_bytes() -> int:
    """The most bytes visitors' studies may hold together
    (``$DTPBO_MAX_VISITOR_STUDY_BYTES``, 512 MiB)."""
    return _env_int(MAX_OWNED_BYTES_ENV, 512 * 2**20)


def max_studies_per_address() -> int:
    """The most studies visitors from one network address may hold together
    (``$DTPBO_MAX_STUDIES_PER_ADDRESS``, 20)."""
    return _env_int(MAX_ADDRESS_STUDIES_ENV, 20)


def max_address_bytes() -> int:
    """The most bytes visitors from one network address may hold together
    (``$DTPBO_MAX_ADDRESS_STUDY_BYTES``, a quarter of :func:`max_owned_bytes`): no one
    address fills the server's space."""
    return _env_int(MAX_ADDRESS_BYTES_ENV, max_owned_bytes() // 4)


def idle_days() -> float:
    """Days a visitor's study is kept without use (``$DTPBO_VISITOR_STUDY_DAYS``, 7; 0:
    kept until removed)."""
    raw = os.environ.get(IDLE_DAYS_ENV, "").strip()
    try:
        days = float(raw) if raw else 7.0
    except ValueError:
        return 7.0
    return days if days > 0 and days == days else 0.0


def _mib(n: float) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n / 2**10:.0f} KiB"


def _folder_bytes(folder: Path) -> int:
    total = 0
    try:
        files = list(folder.iterdir())
    except OSError:  # removed meanwhile (expired, or by its owner)
        return 0
    for f in files:
        try:
            total += f.stat().st_size
        except OSError:
            pass
    return total


def _visitors(meta: UserStudy) -> bool:
    """A visitor's own study (imported on a page, not published): limited and expiring."""
    return bool(meta.owner) and not meta.public


def last_used(meta: UserStudy) -> float:
    """When the study was last used (its marker's time, else its import's), epoch seconds."""
    for name in (_USED, "study.json"):
        try:
            return (meta.folder / name).stat().st_mtime
        except OSError:
            continue
    return time.time()


def touch_study(key: str, now: float | None = None) -> None:
    """Note a use of study ``key`` (its owner opened it): its expiry starts again. Writes
    at most once every few minutes; nothing for a key with no folder."""
    try:
        marker = _folder(key) / _USED
    except KeyError:
        return
    now = time.time() if now is None else now
    try:
        if now - marker.stat().st_mtime < _TOUCH_EVERY_S:
            return
    except OSError:
        pass
    try:
        marker.touch()
        os.utime(marker, (now, now))
    except OSError:  # no such study (any more), or a read-only data folder
        pass


def expires_at(meta: UserStudy) -> float | None:
    """When a visitor's study expires if nobody uses it (epoch seconds), or ``None``: the
    operator's and published studies, or expiry turned off (:func:`idle_days` 0)."""
    days = idle_days()
    if not days or not _visitors(meta):
        return None
    return last_used(meta) + days * 86400.0


def expire_visitor_studies(now: float | None = None) -> list[str]:
    """Remove every visitor's study unused for :func:`idle_days` days; their keys (the
    sweep a shared server runs at its start and periodically, and before each import)."""
    now = time.time() if now is None else now
    gone = []
    for meta in list_user_studies():
        end = expires_at(meta)
        if end is not None and end <= now:
            shutil.rmtree(meta.folder, ignore_errors=True)
            remove_plan(meta.key)  # its analysis plan goes with it
            gone.append(meta.key)
    _remove_stale_staging(now)
    return gone


def _remove_stale_staging(now: float, older_than: float = 3600.0) -> None:
    """Staging folders of imports that never finished (a worker stopped mid-save) are
    counted by no quota: removed an hour after they were made."""
    root = studies_dir()
    try:
        folders = [p for p in root.iterdir() if p.name.startswith(".import-") and p.is_dir()]
    except OSError:
        return
    for folder in folders:
        try:
            if now - folder.stat().st_mtime > older_than:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            pass


def _kept_for() -> str:
    days = idle_days()
    return f"after {days:g} days without use" if days else "only when removed"


def owner_refusal(owner: str, incoming: int = 0, address: str = "") -> str | None:
    """Why visitor ``owner`` (from network ``address``, a keyed hash, or ``""``) may not
    import another study of ``incoming`` bytes (one sentence), or ``None``: at most
    :func:`max_studies_per_owner` studies each, :func:`max_studies_per_address` studies
    and :func:`max_address_bytes` bytes per address, and :func:`max_owned_bytes` for all
    visitors' studies together. Expired studies are removed first. Reads only the small
    ``study.json`` files and file sizes, before the upload is parsed."""
    if not owner:
        return None
    expire_visitor_studies()
    owned = [m for m in list_user_studies() if _visitors(m)]
    mine = sum(m.owner == owner for m in owned)
    if mine >= max_studies_per_owner():
        return (
            f"you already have {mine} studies here, the most one visitor may keep "
            f"(${MAX_STUDIES_ENV}); remove one of yours first"
        )
    sizes = {m.key: _folder_bytes(m.folder) for m in owned}
    if address:
        here = [m for m in owned if m.address == address]
        if len(here) >= max_studies_per_address():
            return (
                f"visitors from your network address already have {len(here)} studies here, "
                f"the most one address may keep (${MAX_ADDRESS_STUDIES_ENV}); remove one of "
                f"yours, or wait until unused ones expire ({_kept_for()})"
            )
        used_here = sum(sizes[m.key] for m in here)
        if used_here + incoming > max_address_bytes():
            return (
                f"visitors from your network address already use {_mib(used_here)} of the "
                f"{_mib(max_address_bytes())} one address may keep (${MAX_ADDRESS_BYTES_ENV})"
                f"{'' if not incoming else f' and this upload is {_mib(incoming)}'}; remove "
                f"one of yours, or wait until unused ones expire ({_kept_for()})"
            )
    used = sum(sizes.values())
    if used + incoming > max_owned_bytes():
        left = max(max_owned_bytes() - used, 0)
        return (
            f"the server's space for visitors' studies is full ({_mib(left)} of "
            f"{_mib(max_owned_bytes())} left, ${MAX_OWNED_BYTES_ENV}"
            f"{'' if not incoming else f'; this upload is {_mib(incoming)}'}): no visitor can "
            f"import until studies are removed or expire ({_kept_for()}); try again later or "
            "ask the server's administrator"
        )
    return None


def save_study(
    title: str,
    content: bytes,
    file: str,
    attributes: Sequence[Attribute] | None,
    columns: ColumnMap,
    respondents: tuple[bytes, str] | None = None,
    *,
    owner: str = "",
    public: bool = False,
    limit_owner: bool = False,
    sep: str | None = None,
    encoding: str | None = None,
    address: str = "",
) -> tuple[UserStudy | None, list[Problem]]:
    """Check the upload and, only when it loads, save it as a new study folder: the
    import's five stages (:mod:`data_loaders.pipeline`), the one entry of the command
    line and the dashboard's form.

    ``study.json`` keeps the resolved column map (what was inferred is fixed there, and in
    ``notes``), so the saved study loads the same way every time. ``owner`` (a visitor's
    hash) and ``public`` say who may see it (:meth:`UserStudy.visible_to`); with
    ``limit_owner`` the owner's limits (:func:`owner_refusal`, with the network
    ``address``'s) are checked first, before anything is parsed. ``content`` may be any
    accepted format (``sep``, ``encoding``: see :func:`check_upload`); the folder is
    written by :func:`data_loaders.pipeline.save.save`.
    """
    title = title.strip() or Path(file).stem
    refused = _refusal(title, file, content, respondents, owner if limit_owner else "", address)
    if refused is not None:
        return None, [refused]
    try:
        built = check(content, file, attributes, columns, respondents, sep, encoding)
    except Refused as exc:
        return None, exc.problems
    return save(built, title, owner=owner, public=public, address=address), []


def _refusal(
    title: str,
    file: str,
    content: bytes,
    respondents: tuple[bytes, str] | None,
    owner: str,
    address: str,
) -> Problem | None:
    """Why an import is refused before the upload is parsed: a title too long, or the
    limits of the visitor ``owner`` (``""``: none checked)."""
    if len(title) > fields.MAX_TEXT_CHARS:
        return Problem(
            file,
            f"the study's title has {len(title):,} characters, more than "
            f"{fields.MAX_TEXT_CHARS:,} (data_loaders.fields.MAX_TEXT_CHARS); give a "
            "shorter one",
        )
    if owner:
        size = len(content) + (len(respondents[0]) if respondents else 0)
        refused = owner_refusal(owner, size, address)
        if refused:
            return Problem(file, refused)
    return None


def _read_meta(folder: Path) -> UserStudy | None:
    try:
        d = json.loads((folder / "study.json").read_text(encoding="utf-8"))
        meta = UserStudy(**d)
        ColumnMap.from_dict(meta.columns)
        return meta
    except (OSError, ValueError, TypeError):
        return None


def list_user_studies() -> list[UserStudy]:
    """Saved studies, oldest first (folders without a readable ``study.json`` are skipped)."""
    root = studies_dir()
    if not root.is_dir():
        return []
    metas = [
        _read_meta(p)
        for p in sorted(root.iterdir())
        if p.is_dir() and p.name.startswith(KEY_PREFIX)
    ]
    return sorted(
        (m for m in metas if m is not None and m.key == m.folder.name), key=lambda m: m.imported
    )


def _folder(key: str) -> Path:
    if not key.startswith(KEY_PREFIX) or not re.fullmatch(r"[a-z0-9-]+", key):
        raise KeyError(f"not an imported study key: {key!r}")
    return studies_dir() / key


def user_study(key: str) -> UserStudy | None:
    """The ``study.json`` of a saved study (``None`` when there is none)."""
    try:
        folder = _folder(key)
    except KeyError:
        return None
    meta = _read_meta(folder)
    return meta if meta is not None and meta.key == key else None


def set_public(key: str, public: bool = True) -> UserStudy:
    """Publish a saved study to every visitor (or withdraw it: ``public=False``); the
    operator's command ``python -m data_loaders publish-study KEY``."""
    meta = user_study(key)
    if meta is None:
        raise KeyError(f"no imported study {key!r}")
    meta = replace(meta, public=bool(public))
    target = meta.folder / "study.json"
    tmp = target.with_name(".study.json.tmp")
    tmp.write_text(json.dumps(asdict(meta), indent=2), encoding="utf-8")
    tmp.replace(target)  # one rename: a reader sees the old or the new file
    return meta


def load_user_study(key: str) -> Study:
    """A saved study, loaded by :func:`load_choice_file` from its canonical files, with
    the analysis plan its import decided (money and time roles, alternatives) and the
    respondent features' labels."""
    folder = _folder(key)
    meta = _read_meta(folder)
    if meta is None:
        raise KeyError(f"no imported study {key!r} in {studies_dir()}")
    columns = _as_imported(meta)
    table = read_attribute_table(folder / "attributes.json")
    # a study saved before its table kept the left-out attributes: those are gone already
    names = {a.name for a in table}
    columns = replace(
        columns, drop_attributes=tuple(n for n in columns.drop_attributes if n in names)
    )
    study = load_choice_file(  # canonical comma-separated text, whatever was uploaded
        folder / "choices.csv",
        table,
        columns,
        StudyMeta(
            key=key,
            title=meta.title,
            description=meta.description,
            source=meta.files.get("choices", ""),
            license="your own data",
        ),
        sep=",",
        ask=False,  # its import answered the file's open questions
    )
    if (folder / "respondents.csv").is_file():
        content = (folder / "respondents.csv").read_bytes()
        study, problems = with_respondents(
            study, content, "respondents.csv", columns.respondent or "respondent"
        )
        if problems:
            raise DataValidationError("; ".join(p.message for p in problems))
    return study


def _as_imported(meta: UserStudy) -> ColumnMap:
    """The column map a study was imported with; one saved before missing-value codes,
    availability and weights were read gets none of them (it loads as it did)."""
    cols = meta.column_map
    old = {
        k: v
        for k, v in (("missing", ()), ("availability", ()), ("weight", ""))
        if k not in meta.columns
    }
    return replace(cols, **old) if old else cols  # type: ignore[arg-type]


def remove_user_study(key: str) -> None:
    """Delete a saved study's folder and its saved analysis plan."""
    shutil.rmtree(_folder(key), ignore_errors=False)
    remove_plan(key)
