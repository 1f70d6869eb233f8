"""An analyst's own studies: choice files imported into the per-user data folder.

One import path for the form and the command line, in three modules by job; this module
re-exports their public names, so ``from data_loaders import user_studies as us`` and
``from data_loaders.user_studies import save_study`` keep working:

* :mod:`data_loaders.study_files`: the import's stages (:mod:`data_loaders.pipeline`:
  read, interpret, describe, build, save) run for their callers (the one loader
  :func:`load_choice_file` that ``conjoint-accuracy --data FILE`` and a saved study go
  through; :func:`check_upload`, which collects *every* problem of an upload before the
  loader runs; the attribute editor's rows; the form's inspection);
* :mod:`data_loaders.study_store`: saved studies (``$DTPBO_DATA_HOME/studies/<key>/``:
  :func:`save_study`, :func:`load_user_study`, :func:`list_user_studies`,
  :func:`remove_user_study`), who may see them (:class:`UserStudy`, publishing) and a
  shared server's quotas and expiry (:func:`owner_refusal`, :func:`touch_study`,
  :func:`expire_visitor_studies`);
* :mod:`data_loaders.column_flags`: the command line's column flags
  (:func:`add_column_args`, :mod:`data_loaders.flags`) as a
  :class:`~data_loaders.layout.ColumnMap` (:func:`column_map`).
"""

from __future__ import annotations

from data_loaders.column_flags import column_map
from data_loaders.flags import add_column_args, parse_features
from data_loaders.layout import ColumnMap, infer_attributes
from data_loaders.study_files import (
    ALTERNATIVE_ATTRIBUTE,
    DIRECTIONS,
    KINDS,
    MAX_UPLOAD_MB,
    Inspection,
    Problem,
    attribute_rows,
    attributes_from_json,
    attributes_from_rows,
    build_study,
    check_upload,
    inspect_upload,
    load_choice_file,
    read_upload,
    read_upload_table,
)
from data_loaders.study_store import (
    IDLE_DAYS_ENV,
    KEY_PREFIX,
    MAX_ADDRESS_BYTES_ENV,
    MAX_ADDRESS_STUDIES_ENV,
    MAX_OWNED_BYTES_ENV,
    MAX_STUDIES_ENV,
    RECIPE_FILE,
    UserStudy,
    expire_visitor_studies,
    expires_at,
    idle_days,
    last_used,
    list_user_studies,
    load_user_study,
    max_address_bytes,
    max_owned_bytes,
    max_studies_per_address,
    max_studies_per_owner,
    owner_refusal,
    remove_user_study,
    save_study,
    set_public,
    studies_dir,
    touch_study,
    user_study,
)

__all__ = [
    "ALTERNATIVE_ATTRIBUTE",
    "DIRECTIONS",
    "IDLE_DAYS_ENV",
    "KEY_PREFIX",
    "KINDS",
    "MAX_ADDRESS_BYTES_ENV",
    "MAX_ADDRESS_STUDIES_ENV",
    "MAX_OWNED_BYTES_ENV",
    "MAX_STUDIES_ENV",
    "MAX_UPLOAD_MB",
    "RECIPE_FILE",
    "ColumnMap",
    "Inspection",
    "Problem",
    "UserStudy",
    "add_column_args",
    "attribute_rows",
    "attributes_from_json",
    "attributes_from_rows",
    "build_study",
    "check_upload",
    "column_map",
    "expire_visitor_studies",
    "expires_at",
    "idle_days",
    "infer_attributes",
    "inspect_upload",
    "last_used",
    "list_user_studies",
    "load_choice_file",
    "load_user_study",
    "max_address_bytes",
    "max_owned_bytes",
    "max_studies_per_address",
    "max_studies_per_owner",
    "owner_refusal",
    "parse_features",
    "read_upload",
    "read_upload_table",
    "remove_user_study",
    "save_study",
    "set_public",
    "studies_dir",
    "touch_study",
    "user_study",
]
