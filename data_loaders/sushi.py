"""Kamishima's SUSHI preference data (DT-PBO App. G.1, Tables 6 and 7).

The licence forbids redistribution, so the data are not in this repository. The loader
reads a folder you give (``data_dir=`` or ``$DTPBO_SUSHI_DIR``; the folder itself or its
``sushi3-2016/`` subfolder), or the copy :func:`download_sushi` fetched on your explicit
request into ``~/.cache/dtpbo/sushi`` (``$DTPBO_DATA_HOME/sushi``)::

    study = load_sushi("A", data_dir="path/to/sushi3-2016")

Studies
-------
Set A (``load_sushi("A")``)
    10 items, every user ranks all 10 (file ``sushi3a.5000.10.order``). Set-A ids are
    *not* master ids: set-A id -> master row of ``sushi3.idata`` is
    0->0, 1->1, 2->2, 3->3, 4->4, 5->6 (ikura, salmon roe), 6->7, 7->8, 8->26, 9->29.
    Items are the 10 set-A sushi in set-A id order.
Set B (``load_sushi("B")``)
    100 items; every user ranks 10 of them (``sushi3b.5000.10.order``) and scores the
    same 10 (``sushi3b.5000.10.score``). Items are all 100 sushi in master-id order
    (item index = master id), shared by every user; each user's comparisons involve only
    their 10 items.

Each ranking of 10 gives the 45 comparisons it implies (better beats worse). The true
order of every user (item indices, best first) is ``study.extras["true_order"]``
(row = respondent). Respondent ids are the row numbers 0..n-1 of ``sushi3.udata`` (the
file's own user id is the ``user_id`` column of ``study.users``).

Score coding
------------
Kamishima's 2016 archive codes scores 0 = most disliked ... 4 = most preferred. The 2013
archive (``sushi3.tgz``) has the reverse coding in its score file. ``score_coding="auto"``
(default) detects which one a file uses: the top-ranked set-B item of a user must score
higher than the bottom-ranked one in the 2016 coding. Scores are returned in the 2016
coding (``extras["scores"]``, NaN = not rated) and ``extras["score_coding"]`` names the
coding found in the file.

Features
--------
Items (Table 6): style (maki / other), major group (seafood / other), minor group (12
categories), oiliness (0-4, 0 = heavy/oily), how often users eat it (0-3, 3 = often),
normalized price (the raw idata value, about 1-4.5; Table 6 prints [0, 1], which matches
no column of the file). ``include_shop_frequency=True`` adds idata column 9 (how often
shops sell it, 0-1). Users (Table 7): gender, age group, time to fill in the
questionnaire, prefecture/region/east-west until age 15 and now, and whether the
prefecture changed.

Checks
------
Header item counts, fields per line, id ranges, full permutations (set A), distinct ids
(set B), value ranges of idata/udata/scores, equal row counts of udata/order/score, and
that every user scored exactly the 10 items they ranked. Errors name the file and line.
"""

from __future__ import annotations

import io
import os
import re
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import numpy as np
import pandas as pd

from data_loaders._common import DataNotAvailableError, data_home, file_stamp, freeze, quoted
from data_loaders.access import PathRefusedError, check_file, check_folder
from pbo_core.data import DataValidationError, Feature, PreferenceData, Schema, Study

ENV_VAR = "DTPBO_SUSHI_DIR"
#: Kamishima's page for the data set.
SUSHI_PAGE_URL = "https://www.kamishima.net/sushi/"
#: The official archive (``sushi3-2016.zip``; members under ``sushi3-2016/``).
SUSHI_ARCHIVE_URL = "https://www.kamishima.net/asset/sushi3-2016.zip"

FILES: dict[str, str] = {
    "idata": "sushi3.idata",
    "udata": "sushi3.udata",
    "order_a": "sushi3a.5000.10.order",
    "order_b": "sushi3b.5000.10.order",
    "score_b": "sushi3b.5000.10.score",
}
_NEEDED = {"A": ("idata", "udata", "order_a"), "B": ("idata", "udata", "order_b", "score_b")}

#: Master id (row of ``sushi3.idata``) of set-A items 0..9.
SET_A_MASTER_IDS: tuple[int, ...] = (0, 1, 2, 3, 4, 6, 7, 8, 26, 29)

LICENSE = (
    "Research use only; redistribution prohibited without permission (T. Kamishima, "
    "README-en.txt). Not included in this repository."
)
CITATION = (
    'T. Kamishima, "Nantonac Collaborative Filtering: Recommendation Based on Order '
    'Responses", Proc. 9th ACM SIGKDD (KDD 2003), pp. 583-588.'
)
HOW_TO = (
    "The SUSHI data may not be redistributed, so DT-PBO Explorer does not include them. "
    f"Download sushi3-2016.zip from {SUSHI_PAGE_URL}, unzip it, and pass the folder "
    "(load_sushi('A', data_dir='.../sushi3-2016')) or set DTPBO_SUSHI_DIR to it. "
    "Alternatively, after reading the licence, call "
    "data_loaders.sushi.download_sushi(accept_license=True) to fetch the official archive "
    "into ~/.cache/dtpbo/sushi."
)

MINOR_GROUPS: tuple[str, ...] = (
    "aomono (blue-skinned fish)",
    "akami (red-meat fish)",
    "shiromi (white-meat fish)",
    "tare (basted, e.g. eel)",
    "clam or shell",
    "squid or octopus",
    "shrimp or crab",
    "roe",
    "other seafood",
    "egg",
    "meat other than fish",
    "vegetables",
)
AGE_GROUPS: tuple[str, ...] = ("15-19", "20-29", "30-39", "40-49", "50-59", "60+")
PREFECTURES: tuple[str, ...] = (
    "Hokkaido", "Aomori", "Iwate", "Akita", "Miyagi", "Yamagata", "Fukushima", "Niigata",
    "Ibaraki", "Tochigi", "Gunma", "Saitama", "Chiba", "Tokyo", "Kanagawa", "Yamanashi",
    "Shizuoka", "Nagano", "Aichi", "Gifu", "Toyama", "Ishikawa", "Fukui", "Shiga", "Mie",
    "Kyoto", "Osaka", "Nara", "Wakayama", "Hyogo", "Okayama", "Hiroshima", "Tottori",
    "Shimane", "Yamaguchi", "Ehime", "Kagawa", "Tokushima", "Kochi", "Fukuoka", "Nagasaki",
    "Saga", "Kumamoto", "Kagoshima", "Miyazaki", "Oita", "Okinawa", "foreign countries",
)  # fmt: skip
REGIONS: tuple[str, ...] = (
    "Hokkaido", "Tohoku", "Hokuriku", "Kanto + Shizuoka", "Nagano + Yamanashi", "Chukyo",
    "Kinki", "Chugoku", "Shikoku", "Kyushu", "Okinawa", "foreign",
)  # fmt: skip
EAST_WEST: tuple[str, str] = ("eastern Japan", "western Japan")

SushiSet = Literal["A", "B"]
ScoreCoding = Literal["auto", "2016", "2013"]


# ---------------------------------------------------------------------------- locating
def _candidates(base: Path) -> list[Path]:
    return [base, base / "sushi3-2016", base / "sushi3"]


def _missing(folder: Path, keys: tuple[str, ...]) -> list[str]:
    return [FILES[k] for k in keys if not (folder / FILES[k]).is_file()]


def find_sushi_dir(data_dir: str | os.PathLike[str] | None = None, sushi_set: str = "A") -> Path:
    """The folder holding the files of ``sushi_set``.

    Looks at ``data_dir`` (or ``$DTPBO_SUSHI_DIR``; the folder or its ``sushi3-2016/`` /
    ``sushi3/`` subfolder), else at the download folder ``$DTPBO_DATA_HOME/sushi``.

    Raises
    ------
    DataNotAvailableError
        Saying which files are missing where, and how to obtain them.
    """
    keys = _NEEDED[_check_set(sushi_set)]
    if data_dir is not None or os.environ.get(ENV_VAR):
        origin = "the given folder" if data_dir is not None else f"${ENV_VAR}"
        base = Path(data_dir if data_dir is not None else os.environ[ENV_VAR]).expanduser()
        try:
            check_folder(base, "SUSHI data folder")
        except FileNotFoundError:
            raise DataNotAvailableError(
                f"SUSHI data: {base} ({origin}) does not exist. {HOW_TO}"
            ) from None
        for c in _candidates(base):
            if c.is_dir() and not _missing(c, keys):
                return c
        raise DataNotAvailableError(
            f"SUSHI data: {base} ({origin}) lacks {_missing(base, keys)} (also looked in its "
            f"sushi3-2016/ and sushi3/ subfolders). {HOW_TO}"
        )
    home = data_home() / "sushi"
    for c in _candidates(home):
        if c.is_dir() and not _missing(c, keys):
            return c
    raise DataNotAvailableError(
        f"SUSHI data: no folder was given, ${ENV_VAR} is not set and {home} holds no copy. {HOW_TO}"
    )


def sushi_status(sushi_set: str = "A") -> tuple[bool, str]:
    """``(available, reason)`` for the registry (cheap: only checks that files exist)."""
    try:
        folder = find_sushi_dir(None, sushi_set)
    except DataNotAvailableError as exc:
        return False, str(exc)
    return True, f"found in {folder}"


def _check_set(sushi_set: str) -> SushiSet:
    s = str(sushi_set).upper()
    if s not in ("A", "B"):
        raise ValueError(f"sushi_set must be 'A' or 'B', got {sushi_set!r}")
    return s  # type: ignore[return-value]


# ---------------------------------------------------------------------------- download
def download_sushi(
    dest: str | os.PathLike[str] | None = None,
    *,
    accept_license: bool = False,
    url: str = SUSHI_ARCHIVE_URL,
    timeout: float = 60.0,
) -> Path:
    """Download Kamishima's official archive and unzip it (only on explicit request).

    The data may be used for research but not redistributed. Nothing is downloaded unless
    ``accept_license=True`` says you have read and accept the terms on
    https://www.kamishima.net/sushi/. Keep the files out of version control.

    Parameters
    ----------
    dest
        Folder to unzip into; default ``$DTPBO_DATA_HOME/sushi`` (``~/.cache/dtpbo/sushi``),
        where :func:`load_sushi` finds it without further configuration.
    accept_license
        Must be True.
    url
        The archive (default: the official ``sushi3-2016.zip``).
    timeout
        Seconds to wait for the server.

    Returns
    -------
    Path
        The folder holding the data files (``dest/sushi3-2016``).

    Raises
    ------
    PermissionError
        Without ``accept_license=True``.
    DataNotAvailableError
        When the download fails or the archive lacks the data files; the message says how
        to get the data by hand.
    """
    if not accept_license:
        raise PermissionError(
            "The SUSHI data may be used for research but not redistributed "
            f"(terms: {SUSHI_PAGE_URL}). Call download_sushi(accept_license=True) to confirm "
            "that you accept them."
        )
    target = Path(dest).expanduser() if dest is not None else data_home() / "sushi"
    manual = (
        f"Download sushi3-2016.zip by hand from {SUSHI_PAGE_URL}, unzip it and pass the "
        f"folder to load_sushi(data_dir=...) or set {ENV_VAR}."
    )
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            payload = response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataNotAvailableError(
            f"could not download the SUSHI archive from {url}: {reason}. {manual}"
        ) from exc
    try:
        archive = zipfile.ZipFile(io.BytesIO(payload))
    except zipfile.BadZipFile:
        raise DataNotAvailableError(
            f"the download from {url} is not a zip archive ({len(payload)} bytes). {manual}"
        ) from None
    wanted = set(FILES.values()) | {"README-en.txt", "README-ja.txt"}
    target.mkdir(parents=True, exist_ok=True)
    with archive:
        for info in archive.infolist():
            parts = PurePosixPath(info.filename).parts
            if info.is_dir() or not parts or parts[-1] not in wanted:
                continue
            if PurePosixPath(info.filename).is_absolute() or ".." in parts:
                raise DataNotAvailableError(f"unsafe path {info.filename!r} in {url}. {manual}")
            out = target.joinpath(*parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(archive.read(info))
    for c in _candidates(target):
        if c.is_dir() and not _missing(c, tuple(FILES)):
            return c
    raise DataNotAvailableError(
        f"the archive from {url} does not contain {sorted(FILES.values())}. {manual}"
    )


# ---------------------------------------------------------------------------- parsing
def _fail(path: Path, line: int, msg: str) -> DataValidationError:
    return DataValidationError(f"{path}, line {line}: {msg}")


def _body(path: Path) -> list[tuple[int, str]]:
    """Lines with numbers (1-based); trailing blank lines dropped, inner ones an error."""
    check_file(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is dropped
    except UnicodeDecodeError as exc:
        raise DataValidationError(f"{path}: not UTF-8 text ({exc.reason})") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    out = []
    for i, s in enumerate(lines, start=1):
        if not s.strip():
            raise _fail(path, i, "empty line")
        out.append((i, s))
    if not out:
        raise DataValidationError(f"{path}: the file is empty")
    return out


def _ints(path: Path, line: int, fields: list[str]) -> list[int]:
    # ASCII digits only: int() would also read other scripts' digits ("\u0663" -> 3)
    for k, f in enumerate(fields, start=1):
        if not re.fullmatch(r"[-+]?[0-9]+", f):
            raise _fail(path, line, f"field {k}: {quoted(f)} is not an integer")
    return [int(f) for f in fields]


def _read_order(path: Path, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Rankings (rows of item ids, best first) and their line numbers."""
    lines = _body(path)
    head_no, head = lines[0]
    h = _ints(path, head_no, head.split())
    if len(h) != 2 or h[0] != n_items:
        raise _fail(path, head_no, f"header should be '{n_items} 1', got {quoted(head)}")
    rows, numbers = [], []
    length = None
    for no, s in lines[1:]:
        v = _ints(path, no, s.split())
        if len(v) < 2 or v[0] != 0:
            raise _fail(path, no, "a ranking line starts with '0 <length>'")
        if len(v) - 2 != v[1]:
            raise _fail(path, no, f"declares {v[1]} items but lists {len(v) - 2}")
        if length is None:
            length = v[1]
        elif v[1] != length:
            raise _fail(path, no, f"ranking of length {v[1]}; earlier lines have {length}")
        ids = v[2:]
        out = [i for i in ids if not 0 <= i < n_items]
        if out:
            raise _fail(path, no, f"item id {out[0]} outside 0..{n_items - 1}")
        if len(set(ids)) != len(ids):
            raise _fail(path, no, "an item appears twice in the ranking")
        rows.append(ids)
        numbers.append(no)
    if not rows:
        raise DataValidationError(f"{path}: no rankings after the header")
    if n_items == 10 and length != 10:
        raise DataValidationError(f"{path}: set-A rankings must list all 10 items")
    return np.asarray(rows, dtype=np.int64), np.asarray(numbers)


@dataclass(frozen=True)
class _Range:
    name: str
    lo: float
    hi: float
    integer: bool = True


_IDATA = (
    _Range("style", 0, 1),
    _Range("major group", 0, 1),
    _Range("minor group", 0, 11),
    _Range("oiliness", 0, 4, False),
    _Range("eat frequency", 0, 3, False),
    _Range("normalized price", 0, np.inf, False),
    _Range("shop frequency", 0, 1, False),
)
_UDATA = (
    _Range("gender", 0, 1),
    _Range("age", 0, 5),
    _Range("time", 0, np.inf),
    _Range("prefecture until 15", 0, 47),
    _Range("region until 15", 0, 11),
    _Range("east/west until 15", 0, 1),
    _Range("current prefecture", 0, 47),
    _Range("current region", 0, 11),
    _Range("current east/west", 0, 1),
    _Range("prefecture changed", 0, 1),
)


def _check_range(path: Path, line: int, r: _Range, raw: str) -> float:
    try:
        x = float(raw)
    except ValueError:
        raise _fail(path, line, f"{r.name}: {quoted(raw)} is not a number") from None
    if not np.isfinite(x) or not r.lo <= x <= r.hi or (r.integer and x != int(x)):
        what = "an integer in" if r.integer else "a number in"
        raise _fail(path, line, f"{r.name}: {quoted(raw)} is not {what} [{r.lo:g}, {r.hi:g}]")
    return x


def _read_idata(path: Path) -> pd.DataFrame:
    rows = []
    for no, s in _body(path):
        f = s.rstrip("\r\n").split("\t")
        if len(f) != 9:
            raise _fail(path, no, f"expected 9 TAB-separated fields, got {len(f)}")
        ident = _ints(path, no, [f[0]])[0]
        if ident != no - 1:
            raise _fail(path, no, f"item id {ident} should equal the row number {no - 1}")
        vals = [_check_range(path, no, r, x) for r, x in zip(_IDATA, f[2:], strict=True)]
        rows.append([ident, f[1].strip(), *vals])
    if len(rows) != 100:
        raise DataValidationError(f"{path}: expected 100 items, found {len(rows)}")
    cols = ["master_id", "name", "style", "major", "minor", "oil", "eat", "price", "shop"]
    return pd.DataFrame(rows, columns=cols)


def _read_udata(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rows, numbers = [], []
    for no, s in _body(path):
        f = s.split()
        if len(f) != 11:
            raise _fail(path, no, f"expected 11 TAB-separated fields, got {len(f)}")
        uid = _ints(path, no, [f[0]])[0]
        vals = [_check_range(path, no, r, x) for r, x in zip(_UDATA, f[1:], strict=True)]
        rows.append([uid, *vals])
        numbers.append(no)
    return np.asarray(rows, dtype=np.int64), np.asarray(numbers)


def _read_scores(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rows, numbers = [], []
    for no, s in _body(path):
        v = _ints(path, no, s.split())
        if len(v) != 100:
            raise _fail(path, no, f"expected 100 scores, got {len(v)}")
        bad = [x for x in v if not -1 <= x <= 4]
        if bad:
            raise _fail(path, no, f"score {bad[0]} outside -1..4 (-1 = not rated)")
        rows.append(v)
        numbers.append(no)
    return np.asarray(rows, dtype=np.int64), np.asarray(numbers)


def _readme_names(folder: Path) -> list[str] | None:
    """English item names from README-en.txt (``"ebi (shrimp)"``), if present."""
    p = folder / "README-en.txt"
    try:
        check_file(p)
    except (PathRefusedError, FileNotFoundError):  # optional: the names come from idata
        return None
    text = p.read_text(encoding="utf-8", errors="replace")
    start = text.find("ID for the item set B")
    if start < 0:
        return None
    names: dict[int, str] = {}
    for s in text[start:].splitlines()[1:]:
        if s.startswith("###"):
            break
        m = re.match(r"^\s*(\d+):(.+?)\s*$", s)
        if m:
            names[int(m.group(1))] = m.group(2)
    return [names[i] for i in range(100)] if len(names) == 100 else None


def detect_score_coding(scores: np.ndarray, orders: np.ndarray) -> Literal["2016", "2013"]:
    """``"2016"`` if users' top-ranked items score higher than their bottom-ranked ones.

    Parameters
    ----------
    scores
        ``(n_users, 100)`` raw scores, -1 = not rated.
    orders
        ``(n_users, L)`` set-B rankings (master ids, best first).
    """
    rows = np.arange(len(orders))
    diff = scores[rows, orders[:, 0]] - scores[rows, orders[:, -1]]
    return "2013" if np.sign(diff).sum() < 0 else "2016"


# ---------------------------------------------------------------------------- schema
def item_schema(price_bounds: tuple[float, float], include_shop_frequency: bool = False) -> Schema:
    """Item features of DT-PBO Table 6 (plus, optionally, shop frequency)."""
    feats = [
        Feature(
            "style",
            "binary",
            levels=("maki", "other"),
            label="Style",
            description="Maki (rolled) or another style.",
        ),
        Feature(
            "major_group",
            "binary",
            levels=("seafood", "other"),
            label="Major group",
            description="Seafood or not.",
        ),
        Feature("minor_group", "categorical", levels=MINOR_GROUPS, label="Minor group"),
        Feature(
            "oiliness",
            "numeric",
            bounds=(0.0, 4.0),
            label="Oiliness",
            description="Mean rating of heaviness/oiliness, 0 = heavy/oily, 4 = light.",
        ),
        Feature(
            "eat_frequency",
            "numeric",
            bounds=(0.0, 3.0),
            label="Frequency eaten",
            description="Mean rating of how often users eat it, 3 = frequently.",
        ),
        Feature(
            "price",
            "numeric",
            bounds=price_bounds,
            label="Normalized price",
            description="Normalized price (maki and other styles normalized separately).",
        ),
    ]
    if include_shop_frequency:
        feats.append(
            Feature(
                "shop_frequency",
                "numeric",
                bounds=(0.0, 1.0),
                label="Sold in shops",
                description="How often shops sell it, 1 = most often.",
            )
        )
    return Schema(tuple(feats))


def user_schema(time_max: float = 1500.0) -> Schema:
    """User features of DT-PBO Table 7."""
    return Schema(
        (
            Feature("gender", "binary", levels=("male", "female"), label="Gender"),
            Feature("age", "categorical", levels=AGE_GROUPS, label="Age group"),
            Feature(
                "time",
                "numeric",
                bounds=(0.0, max(1500.0, float(time_max))),
                label="Time to answer",
                unit="s",
                description="Total time taken to fill in the questionnaire.",
            ),
            Feature("prefecture_15", "categorical", levels=PREFECTURES, label="Prefecture (<15)"),
            Feature("region_15", "categorical", levels=REGIONS, label="Region (<15)"),
            Feature("east_west_15", "binary", levels=EAST_WEST, label="E/W (<15)"),
            Feature("prefecture_now", "categorical", levels=PREFECTURES, label="Prefecture (curr)"),
            Feature("region_now", "categorical", levels=REGIONS, label="Region (curr)"),
            Feature("east_west_now", "binary", levels=EAST_WEST, label="E/W (curr)"),
            Feature("moved", "binary", levels=("no", "yes"), label="Prefecture chg"),
        )
    )


def _items_table(idata: pd.DataFrame, names_en: list[str] | None) -> pd.DataFrame:
    t = pd.DataFrame(
        {
            "name": idata["name"],
            "name_en": names_en if names_en is not None else idata["name"],
            "master_id": idata["master_id"].astype(int),
            "style": [("maki", "other")[int(v)] for v in idata["style"]],
            "major_group": [("seafood", "other")[int(v)] for v in idata["major"]],
            "minor_group": [MINOR_GROUPS[int(v)] for v in idata["minor"]],
            "oiliness": idata["oil"].astype(float),
            "eat_frequency": idata["eat"].astype(float),
            "price": idata["price"].astype(float),
            "shop_frequency": idata["shop"].astype(float),
        }
    )
    return t


def _users_table(udata: np.ndarray) -> pd.DataFrame:
    u = udata
    return pd.DataFrame(
        {
            "user_id": u[:, 0],
            "gender": [("male", "female")[v] for v in u[:, 1]],
            "age": [AGE_GROUPS[v] for v in u[:, 2]],
            "time": u[:, 3].astype(float),
            "prefecture_15": [PREFECTURES[v] for v in u[:, 4]],
            "region_15": [REGIONS[v] for v in u[:, 5]],
            "east_west_15": [EAST_WEST[v] for v in u[:, 6]],
            "prefecture_now": [PREFECTURES[v] for v in u[:, 7]],
            "region_now": [REGIONS[v] for v in u[:, 8]],
            "east_west_now": [EAST_WEST[v] for v in u[:, 9]],
            "moved": [("no", "yes")[v] for v in u[:, 10]],
        },
        index=pd.RangeIndex(len(u), name="respondent"),
    )


def _ranking_pairs(orders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (better, worse) pairs of every ranking, and the respondent of each pair."""
    n, length = orders.shape
    i, j = np.triu_indices(length, 1)
    pairs = np.stack([orders[:, i], orders[:, j]], axis=-1).reshape(-1, 2)
    return pairs, np.repeat(np.arange(n), len(i))


# ---------------------------------------------------------------------------- loading
def _load(
    folder: Path, sushi_set: SushiSet, score_coding: ScoreCoding, include_shop_frequency: bool
) -> Study:
    paths = {k: folder / FILES[k] for k in _NEEDED[sushi_set]}
    idata = _read_idata(paths["idata"])
    udata, _ = _read_udata(paths["udata"])
    n_items = 10 if sushi_set == "A" else 100
    key = "order_a" if sushi_set == "A" else "order_b"
    orders, order_lines = _read_order(paths[key], n_items)
    if len(udata) != len(orders):
        raise DataValidationError(
            f"{paths['udata']} has {len(udata)} users but {paths[key]} has {len(orders)} "
            f"rankings (lines 2-{order_lines[-1]}); the files must be aligned row by row"
        )
    extras: dict[str, Any] = {"set": sushi_set, "folder": str(folder)}
    if sushi_set == "B":
        raw, score_lines = _read_scores(paths["score_b"])
        if len(raw) != len(orders):
            raise DataValidationError(
                f"{paths['score_b']} has {len(raw)} rows but {paths[key]} has {len(orders)} "
                "rankings; the files must be aligned row by row"
            )
        rated = raw >= 0
        ranked = np.zeros_like(rated)
        ranked[np.arange(len(orders))[:, None], orders] = True
        bad = np.flatnonzero((rated != ranked).any(axis=1))
        if len(bad):
            r = int(bad[0])
            raise DataValidationError(
                f"{paths['score_b']}, line {score_lines[r]}: scored items "
                f"{np.flatnonzero(rated[r]).tolist()} differ from the ranked items "
                f"{sorted(orders[r].tolist())} of {paths[key]}, line {order_lines[r]}"
            )
        found = detect_score_coding(raw, orders)
        used = found if score_coding == "auto" else score_coding
        scores = np.where(rated, raw, np.nan).astype(float)
        if used == "2013":
            scores = 4.0 - scores
        extras.update(scores=scores, score_coding=used, score_coding_detected=found)
        item_rows = np.arange(100)
    else:
        item_rows = np.asarray(SET_A_MASTER_IDS)
    items_all = _items_table(idata, _readme_names(folder))
    items = items_all.iloc[item_rows].reset_index(drop=True)
    if sushi_set == "A":
        items.insert(0, "set_a_id", np.arange(10))
    price = (float(idata["price"].min()), float(idata["price"].max()))
    schema = item_schema(price, include_shop_frequency)
    X = schema.encode(items, source=f"{paths['idata']} items")
    pairs, respondent = _ranking_pairs(orders)
    users = _users_table(udata)
    uschema = user_schema(float(udata[:, 3].max()))
    data = PreferenceData(
        X=X,
        pairs=pairs,
        schema=schema,
        items=items,
        item_ids=items["master_id"].to_numpy(),
        respondent=respondent,
        users=users,
        source=f"sushi-{sushi_set.lower()}",
    )
    extras.update(
        true_order=orders,
        master_ids=items["master_id"].to_numpy(),
        files={k: str(p) for k, p in paths.items()},
    )
    freeze(X, data.pairs, data.respondent, orders, extras.get("scores"))
    if sushi_set == "A":
        title = "Sushi, set A (10 items, full rankings)"
        desc = (
            "Kamishima's sushi survey, set A: 5000 respondents each ranked the same 10 sushi. "
            "Each ranking gives 45 comparisons. Items are described by style, group, "
            "oiliness, how often people eat them and price; respondents by demographics."
        )
    else:
        title = "Sushi, set B (10 of 100 items per respondent)"
        desc = (
            "Kamishima's sushi survey, set B: each respondent ranked (and scored) 10 sushi "
            "drawn from 100. Each ranking gives 45 comparisons among that respondent's 10 "
            "items; the 100 items are shared by all respondents."
        )
    return Study(
        key=f"sushi-{sushi_set.lower()}",
        title=title,
        schema=schema,
        data=data,
        description=desc,
        source=f"{folder} (from {SUSHI_PAGE_URL})",
        citation=CITATION,
        license=LICENSE,
        users=users,
        user_schema=uschema,
        extras=extras,
        kind="items",
    )


@lru_cache(maxsize=4)
def _load_cached(
    folder: str,
    sushi_set: SushiSet,
    score_coding: ScoreCoding,
    include_shop_frequency: bool,
    stamps: tuple[tuple[str, int, int], ...],
) -> Study:
    return _load(Path(folder), sushi_set, score_coding, include_shop_frequency)


def load_sushi(
    sushi_set: str = "A",
    data_dir: str | os.PathLike[str] | None = None,
    *,
    score_coding: ScoreCoding = "auto",
    include_shop_frequency: bool = False,
) -> Study:
    """Load SUSHI set A or B from a local copy (parsed once per process and folder).

    Parameters
    ----------
    sushi_set
        ``"A"`` (10 items, full rankings) or ``"B"`` (10 of 100 items per user).
    data_dir
        Folder with the files (or its parent holding ``sushi3-2016/``); default
        ``$DTPBO_SUSHI_DIR``, then the :func:`download_sushi` folder.
    score_coding
        Coding of the set-B score file: ``"auto"`` (detect), ``"2016"`` (4 = most
        preferred) or ``"2013"`` (0 = most preferred). Scores are returned in the 2016
        coding.
    include_shop_frequency
        Add idata column 9 (how often shops sell the sushi) as a seventh item feature.

    Returns
    -------
    Study
        ``extras["true_order"]`` holds every user's ranking (item indices, best first).

    Raises
    ------
    DataNotAvailableError
        When the files are not found; the message says how to obtain them.
    DataValidationError
        When a file is malformed (file and line named) or the files do not align.
    """
    s = _check_set(sushi_set)
    if score_coding not in ("auto", "2016", "2013"):
        raise ValueError(f"score_coding must be 'auto', '2016' or '2013', got {score_coding!r}")
    folder = find_sushi_dir(data_dir, s)
    stamps = tuple(file_stamp(folder / FILES[k]) for k in _NEEDED[s])
    return _load_cached(str(folder.resolve()), s, score_coding, include_shop_frequency, stamps)
