"""Stage 5 of the import, **save**: a built study becomes a study folder.

:func:`save` writes ``$DTPBO_DATA_HOME/studies/<key>/`` in one rename (all files or
none): the choice file as comma-separated text (``choices.csv``), the attribute table,
the import's recipe, a respondent-features file and ``study.json``
(:class:`UserStudy`: the resolved column map, what was inferred, counts, who may see
it). :mod:`data_loaders.study_store` lists, loads, publishes and expires saved studies.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from data_loaders import readers
from data_loaders._common import data_home
from data_loaders.conjoint import write_attribute_table
from data_loaders.layout import ColumnMap
from data_loaders.pipeline.build import Built
from data_loaders.recipes import recipe_of

__all__ = ["KEY_PREFIX", "RECIPE_FILE", "UserStudy", "save", "studies_dir"]

#: The import's recipe in a study folder (:mod:`data_loaders.recipes`).
RECIPE_FILE = "recipe.json"
#: Registry keys of imported studies start with this.
KEY_PREFIX = "my-"


@dataclass(frozen=True)
class UserStudy:
    """``study.json`` of a saved study."""

    key: str
    title: str
    format: str
    columns: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    imported: str = ""
    description: str = ""
    notes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    owner: str = ""
    public: bool = False
    #: The network address the owner imported from, as a keyed hash (never the address):
    #: the per-address limits count it.
    address: str = ""

    def visible_to(self, owner: str) -> bool:
        """May the visitor ``owner`` see (list, load, link) this study on a shared server?
        Its owner may, and everyone when it is published; a study imported on the command
        line (no owner) and not published is seen by no visitor."""
        return bool(self.public) or (bool(owner) and owner == self.owner)

    def removable_by(self, owner: str) -> bool:
        """May the visitor ``owner`` remove it on a shared server? Only its owner, and only
        while it is not published (the operator withdraws a published study)."""
        return bool(owner) and owner == self.owner and not self.public

    @property
    def folder(self) -> Path:
        """Where its files are."""
        return studies_dir() / self.key

    @property
    def column_map(self) -> ColumnMap:
        """The resolved column mapping it was imported with."""
        return ColumnMap.from_dict(self.columns)


def studies_dir() -> Path:
    """``$DTPBO_DATA_HOME/studies``: one folder per imported study."""
    return data_home() / "studies"


def save(
    built: Built, title: str, *, owner: str = "", public: bool = False, address: str = ""
) -> UserStudy:
    """Write ``built``'s study as a new study folder titled ``title``; its ``study.json``.

    ``owner`` (a visitor's hash) and ``public`` say who may see it
    (:meth:`UserStudy.visible_to`); ``address`` is the owner's network address, hashed. A
    visitor's study (``owner`` given, not ``public``) gets a key with a random part
    (``my-<title>-<random>``): it tells nobody whether another visitor holds a study of
    that title. ``choices.csv`` keeps the file as comma-separated text
    (:attr:`data_loaders.readers.Table.text`: the file's own text when it was one).
    """
    read, study = built.description.layout.read, built.study
    # parsed again only for another separator (or encoding: saved as UTF-8)
    text = readers.csv_text(read.content, read.name, read.sep, encoding=read.encoding)
    cols: ColumnMap = study.extras["columns"]
    root = studies_dir()
    root.mkdir(parents=True, exist_ok=True)
    key = _new_key(root, title, bool(owner and not public))
    respondents = read.respondents
    files = {"choices": read.name} | ({"respondents": respondents[1]} if respondents else {})
    counts = study.counts()
    meta = UserStudy(
        key,
        title,
        cols.format,
        cols.as_dict(),
        files,
        time.strftime("%Y-%m-%d %H:%M:%S"),
        f"Imported from {read.name} ({counts['comparisons']} comparisons).",
        list(study.extras.get("import_notes", [])),
        counts,
        owner,
        bool(public),
        address,
    )
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=root))
    try:
        (staging / "choices.csv").write_bytes(text)
        write_attribute_table(list(study.extras["attribute_table"]), staging / "attributes.json")
        (staging / RECIPE_FILE).write_text(
            recipe_of(study, read.sep, read.encoding).to_json(), encoding="utf-8"
        )
        if respondents is not None:
            (staging / "respondents.csv").write_bytes(respondents[0])
        (staging / "study.json").write_text(json.dumps(asdict(meta), indent=2), encoding="utf-8")
        staging.rename(root / key)  # all files at once, or none
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return meta


def _new_key(root: Path, title: str, private: bool) -> str:
    """A key no study folder has: ``my-<title>`` (then ``-2``, ``-3``...), or for a
    visitor's own study ``my-<title>-<random>``."""
    base = KEY_PREFIX + _slug(title)
    key, n = base, 2
    if private:  # independent of every other visitor's studies
        key = f"{base}-{_random_part()}"
    while (root / key).exists():
        key, n = (f"{base}-{_random_part()}" if private else f"{base}-{n}"), n + 1
    return key


def _slug(title: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40].strip("-")
    return s or "study"


def _random_part() -> str:
    """Eight random lower-case letters and digits (41 bits)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(8))
