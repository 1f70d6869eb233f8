"""Cached orchestration of back-end calls for the dashboard pages, split by concern.

Nothing here models anything: every function loads data, calls :mod:`pbo_core`,
:mod:`data_loaders` or :mod:`feature_extraction`, and caches the result
(``st.cache_resource`` for objects that are shared read-only, such as studies and fitted
models; ``st.cache_data`` for tables and strings). Cache keys include the data locations
(sidebar paths and the ``DTPBO_*`` environment variables), so configuring a path or
changing the environment never serves stale data.

Modules: ``studies`` (data locations, availability, loading, respondents), ``trees``,
``analyses`` (sensitivity, hierarchy), ``results`` (+ ``defaults``: grids computed on
first need into the per-user data folder), ``elicitation`` and ``pmr``.
"""

from dashboard._services.analyses import hierarchy, sensitivity, user_groups
from dashboard._services.elicitation import (
    benchmark_grid,
    leaf_boxes,
    new_elicitation,
    option_table,
    session_items_table,
    session_points,
    two_d_benchmarks,
)
from dashboard._services.pmr import (
    cached_extractions,
    endpoint_reachable,
    pmr_study,
    study_titles,
    table_token,
    urgency_tree,
)
from dashboard._services.results import (
    DEFAULT_GRIDS,
    RESULT_KINDS,
    DefaultGrid,
    ensure_default,
    folders_of_kind,
    is_default_root,
    mean_se,
    read_results,
    result_folders,
    result_kind,
    results_home,
)
from dashboard._services.studies import (
    DATASETS,
    PATHS_KEY,
    STUDY_KEY,
    StudyStatus,
    chosen_respondent,
    data_paths,
    dataset_of,
    env_stamp,
    get_study,
    how_to_get,
    is_per_respondent,
    loader_options,
    respondent_data,
    respondent_key,
    study_status,
    study_statuses,
    study_token,
    usable_study_keys,
)
from dashboard._services.trees import (
    default_sensitive,
    dot_available,
    dot_to_svg,
    fit_tree,
    item_labels,
    items_table,
    leaf_table,
)

__all__ = [
    "DATASETS",
    "DEFAULT_GRIDS",
    "PATHS_KEY",
    "RESULT_KINDS",
    "STUDY_KEY",
    "DefaultGrid",
    "StudyStatus",
    "benchmark_grid",
    "cached_extractions",
    "chosen_respondent",
    "data_paths",
    "dataset_of",
    "default_sensitive",
    "dot_available",
    "dot_to_svg",
    "endpoint_reachable",
    "ensure_default",
    "env_stamp",
    "fit_tree",
    "folders_of_kind",
    "get_study",
    "hierarchy",
    "how_to_get",
    "is_default_root",
    "is_per_respondent",
    "item_labels",
    "items_table",
    "leaf_boxes",
    "leaf_table",
    "loader_options",
    "mean_se",
    "new_elicitation",
    "option_table",
    "pmr_study",
    "read_results",
    "respondent_data",
    "respondent_key",
    "result_folders",
    "result_kind",
    "results_home",
    "sensitivity",
    "session_items_table",
    "session_points",
    "study_status",
    "study_statuses",
    "study_titles",
    "study_token",
    "table_token",
    "two_d_benchmarks",
    "urgency_tree",
    "usable_study_keys",
    "user_groups",
]
