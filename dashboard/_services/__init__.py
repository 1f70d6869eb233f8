"""Cached orchestration of back-end calls for the dashboard pages, split by concern.

Nothing here models anything: every function loads data, calls :mod:`pbo_core`,
:mod:`data_loaders` or :mod:`feature_extraction`, and caches the result
(``st.cache_resource`` for objects that are shared read-only, such as studies and fitted
models; ``st.cache_data`` for tables and strings). Cache keys include the data locations
(sidebar paths and the ``DTPBO_*`` environment variables), so configuring a path or
changing the environment never serves stale data.

Modules: ``studies`` (data locations, availability, loading, respondents), ``trees``,
``analyses`` (sensitivity, hierarchy), ``results``, ``elicitation`` and ``pmr``.
"""

from dashboard._services.analyses import evidence, hierarchy, sensitivity, user_groups
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
    RESULT_KINDS,
    folders_of_kind,
    mean_se,
    read_results,
    result_folders,
    result_kind,
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
    fit_tree,
    item_labels,
    item_names,
    items_table,
    leaf_numbers,
    leaf_table,
    svg_to_png,
    tree_view,
    warm_up,
)

__all__ = [
    "DATASETS",
    "PATHS_KEY",
    "RESULT_KINDS",
    "STUDY_KEY",
    "StudyStatus",
    "benchmark_grid",
    "cached_extractions",
    "chosen_respondent",
    "data_paths",
    "dataset_of",
    "default_sensitive",
    "endpoint_reachable",
    "env_stamp",
    "evidence",
    "fit_tree",
    "folders_of_kind",
    "get_study",
    "hierarchy",
    "how_to_get",
    "is_per_respondent",
    "item_labels",
    "item_names",
    "items_table",
    "leaf_boxes",
    "leaf_numbers",
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
    "sensitivity",
    "session_items_table",
    "session_points",
    "study_status",
    "study_statuses",
    "study_titles",
    "study_token",
    "svg_to_png",
    "table_token",
    "tree_view",
    "two_d_benchmarks",
    "urgency_tree",
    "usable_study_keys",
    "user_groups",
    "warm_up",
]
