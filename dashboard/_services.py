"""Cached orchestration of back-end calls for the dashboard pages.

Nothing here models anything: every function loads data, calls :mod:`pbo_core`,
:mod:`data_loaders` or :mod:`feature_extraction`, and caches the result
(``st.cache_resource`` for objects that are shared read-only, such as studies and fitted
models; ``st.cache_data`` for tables and strings). Cache keys include the data locations
(sidebar paths and the ``DTPBO_*`` environment variables), so configuring a path or
changing the environment never serves stale data.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pandas as pd
import streamlit as st

from dashboard._charts import surface_grid
from data_loaders import pmr
from data_loaders.registry import StudyInfo, list_studies, load_study
from feature_extraction import ExtractionCache
from feature_extraction.extract import Extractor, as_items
from pbo_core import explain
from pbo_core.benchmarks import available_benchmarks, get_benchmark
from pbo_core.data import PreferenceData, Study
from pbo_core.experiments import runner
from pbo_core.explain.sensitivity import leave_one_out_study
from pbo_core.hierarchy import UserItemHierarchy
from pbo_core.models.dt import DTSurrogate
from pbo_core.session import ElicitationSession, study_item_set

# ----------------------------------------------------------------------------- data paths
#: Data sets the user may have, with the environment variable that locates them and the
#: registry keys (with their loader option) they serve.
DATASETS: dict[str, dict[str, Any]] = {
    "sushi": {
        "label": "Sushi folder (sushi3-2016)",
        "env": "DTPBO_SUSHI_DIR",
        "studies": ("sushi-a", "sushi-b"),
    },
    "bela": {"label": "BELA CSV file", "env": "DTPBO_BELA_PATH", "studies": ("bela",)},
    "presidential": {
        "label": "Presidential CSV (cand_s2_MTurk.csv)",
        "env": "DTPBO_PRESIDENTIAL_PATH",
        "studies": ("presidential",),
    },
    "pmr": {"label": "PMR-Synth folder", "env": "DTPBO_PMR_DIR", "studies": ("pmr",)},
}

#: Environment variables whose values change what the loaders find.
_ENV_KEYS = (
    "DTPBO_SUSHI_DIR",
    "DTPBO_BELA_PATH",
    "DTPBO_PRESIDENTIAL_PATH",
    "DTPBO_PMR_DIR",
    "DTPBO_DATA_HOME",
)

#: Session-state keys shared by the pages.
STUDY_KEY = "sel_study"
PATHS_KEY = "data_paths"


def dataset_of(study_key: str) -> str | None:
    """The user-supplied data set a study key belongs to (``None`` for bundled studies)."""
    for name, d in DATASETS.items():
        if study_key in d["studies"]:
            return name
    return None


def data_paths() -> dict[str, str]:
    """Paths typed in the sidebar (``{dataset: path}``, empty entries dropped)."""
    paths = st.session_state.get(PATHS_KEY) or {}
    return {k: str(v).strip() for k, v in paths.items() if v and str(v).strip()}


def env_stamp() -> tuple[tuple[str, str], ...]:
    """The data-location environment, as part of cache keys."""
    return tuple((k, os.environ.get(k, "")) for k in _ENV_KEYS)


def loader_options(study_key: str, infos: dict[str, StudyInfo] | None = None) -> dict[str, str]:
    """Loader options (``data_dir=`` / ``path=``) from the sidebar path of a study."""
    ds = dataset_of(study_key)
    path = data_paths().get(ds or "")
    if not path:
        return {}
    info = (infos or {}).get(study_key) or _study_infos().get(study_key)
    option = info.location_option if info is not None else ""
    return {option: path} if option else {}


@st.cache_data(ttl=5, show_spinner=False)
def _list_studies(env: tuple[tuple[str, str], ...]) -> list[StudyInfo]:
    # ``env`` is only part of the cache key (a name starting with "_" would not be)
    return list_studies()


def _study_infos() -> dict[str, StudyInfo]:
    return {s.key: s for s in _list_studies(env_stamp())}


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
        if opts:
            path = next(iter(opts.values()))
            usable = Path(path).expanduser().exists()
            note = (
                f"configured in the sidebar: {path}"
                if usable
                else f"the sidebar path {path} does not exist. {info.reason}"
            )
        else:
            usable, note = info.available, info.reason
        out.append(StudyStatus(info, usable, note, tuple(sorted(opts.items()))))
    return out


def study_status(key: str) -> StudyStatus:
    """Status of one study."""
    for s in study_statuses():
        if s.key == key:
            return s
    raise KeyError(key)


def how_to_get(key: str) -> str:
    """Markdown: why a study is unavailable and how to make it available."""
    s = study_status(key)
    ds = dataset_of(key)
    lines = [s.note]
    if ds is not None:
        env = DATASETS[ds]["env"]
        lines.append(
            f"Then type its location under **Data locations** in the sidebar, or set "
            f"`{env}` before starting the app (`{env}=... make run`)."
        )
    return "\n\n".join(lines)


@st.cache_resource(show_spinner="Loading study...", max_entries=16)
def _load_study(key: str, options: tuple[tuple[str, str], ...], env: Any) -> Study:
    del env  # cache key only
    return load_study(key, **dict(options))


def get_study(key: str) -> tuple[Study | None, str | None]:
    """The loaded study, or ``(None, message)`` when it cannot be loaded here."""
    s = study_status(key)
    if not s.usable:
        return None, how_to_get(key)
    try:
        return _load_study(key, s.options, env_stamp()), None
    except Exception as exc:  # unavailable, malformed files...: show the loader's message
        return None, f"{type(exc).__name__}: {exc}"


def usable_study_keys(predicate: Callable[[StudyStatus], bool] | None = None) -> list[str]:
    """Keys of studies that can be loaded here."""
    return [s.key for s in study_statuses() if s.usable and (predicate is None or predicate(s))]


# ----------------------------------------------------------------------------- respondents
def is_per_respondent(study: Study) -> bool:
    """True when the study has several respondents (one tree per respondent)."""
    return study.data.respondent is not None and len(study.respondents()) > 1


def respondent_key(study_key: str) -> str:
    """Session-state key of the chosen respondent of a study."""
    return f"sel_respondent::{study_key}"


def chosen_respondent(study: Study) -> Any:
    """The respondent chosen for a study (``None`` for pooled, single-respondent studies)."""
    if not is_per_respondent(study):
        return None
    resp = list(study.respondents())
    cur = st.session_state.get(respondent_key(study.key))
    return cur if cur in resp else resp[0]


def respondent_data(study: Study, respondent: Any) -> PreferenceData:
    """Comparisons of one respondent, or the pooled data."""
    if respondent is None or study.data.respondent is None:
        return study.data
    return study.for_respondent(respondent)


# ----------------------------------------------------------------------------- trees
def _study_token(study: Study) -> tuple[str, tuple[tuple[str, str], ...], Any]:
    s = study_status(study.key)
    return (study.key, s.options, env_stamp())


@st.cache_resource(show_spinner="Fitting the tree...", max_entries=64)
def _fit_tree(
    token: Any,
    respondent: str,
    max_depth: int | None,
    min_samples_split: int,
    straddlers: str,
    _study: Study,
    _respondent: Any,
) -> DTSurrogate:
    data = respondent_data(_study, _respondent)
    return DTSurrogate(
        max_depth=max_depth, min_samples_split=min_samples_split, straddlers=straddlers
    ).fit(data)


def fit_tree(
    study: Study,
    respondent: Any,
    *,
    max_depth: int | None = None,
    min_samples_split: int = 1,
    straddlers: str = "discard",
) -> DTSurrogate:
    """The DT of a respondent (or the pooled data), cached per settings."""
    return _fit_tree(
        _study_token(study),
        repr(respondent),
        max_depth,
        int(min_samples_split),
        straddlers,
        study,
        respondent,
    )


def default_sensitive(study: Study) -> list[str]:
    """Features flagged as sensitive by default (gender, race, religion, ...).

    Matches whole words of the feature name (``"age"`` flags ``age`` but not
    ``gay_marriage`` or ``message_actionability``); longer keys match word prefixes
    (``"religio"`` flags ``religion`` and ``religious_activity``).
    """
    keys = explain.SENSITIVE_DEFAULT
    return [f.name for f in study.schema.features if explain.is_sensitive(f.name, keys)]


def item_labels(data: PreferenceData, max_len: int = 70) -> list[str]:
    """A short label per item: its id and its most telling text or attributes."""
    ids = data.ids()
    items = data.items
    schema = data.get_schema()
    if items is not None and "message" in items.columns:
        text = items["message"].astype(str).tolist()
    elif items is not None and "name_en" in items.columns:
        text = items["name_en"].astype(str).tolist()
    else:
        dec = schema.decode(data.X)
        text = [
            ", ".join(f"{schema[c].display}: {_fmt(v)}" for c, v in row.items())
            for _, row in dec.iterrows()
        ]
    out = []
    for i, t in zip(ids, text, strict=True):
        t = t if len(t) <= max_len else t[: max_len - 1] + "…"
        out.append(f"{i} — {t}")
    return out


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    if isinstance(v, list):
        return "{" + ", ".join(map(str, v)) + "}" if v else "none"
    return str(v)


def items_table(model: Any, data: PreferenceData) -> pd.DataFrame:
    """Items with readable attributes, predicted utility, competition rank and leaf."""
    schema = data.get_schema()
    dec = schema.decode(data.X)
    for f in schema.features:
        if f.kind == "multi_hot":
            dec[f.name] = [", ".join(v) for v in dec[f.name]]
    dec = dec.rename(columns={f.name: f.display for f in schema.features})
    dec.insert(0, "item", data.ids())
    dec["utility"] = model.predict(data.X)
    dec["rank"] = model.rank(data.X)
    if hasattr(model, "tree_"):
        dec["leaf"] = model.apply(data.X)
    return dec.sort_values(["rank", "item"], kind="stable").reset_index(drop=True)


def leaf_table(model: DTSurrogate) -> pd.DataFrame:
    """One row per leaf: conditions, mean, sd, rank, items."""
    rows = [
        {
            "leaf": s.leaf,
            "rank": s.rank,
            "utility": s.mean,
            "sd": s.sd,
            "items": s.n_items,
            "conditions": " AND ".join(s.conditions) or "(all items)",
        }
        for s in explain.leaf_summaries(model)
    ]
    return pd.DataFrame(rows).sort_values(["rank", "leaf"]).reset_index(drop=True)


def dot_available() -> bool:
    """True when Graphviz's ``dot`` program is installed (needed for SVG downloads)."""
    return shutil.which("dot") is not None


@st.cache_data(show_spinner=False, max_entries=128)
def dot_to_svg(dot: str) -> str | None:
    """SVG of a DOT graph, or ``None`` when Graphviz's ``dot`` program is missing."""
    import graphviz

    try:
        return graphviz.Source(dot).pipe(format="svg").decode("utf-8")
    except graphviz.ExecutableNotFound:
        return None


# ----------------------------------------------------------------------------- sensitivity
@st.cache_data(show_spinner=False, max_entries=64)
def _sensitivity(
    token: Any,
    test_fraction: float,
    seed: int,
    n_respondents: int,
    use_study_split: bool,
    _study: Study,
) -> pd.DataFrame:
    return leave_one_out_study(
        _study,
        test_fraction=test_fraction,
        seed=seed,
        n_respondents=n_respondents,
        use_study_split=use_study_split,
    )


def sensitivity(
    study: Study, test_fraction: float, seed: int, n_respondents: int, use_study_split: bool
) -> pd.DataFrame:
    """Leave-one-out table averaged over respondents (cached)."""
    return _sensitivity(
        _study_token(study),
        float(test_fraction),
        int(seed),
        int(n_respondents),
        bool(use_study_split),
        study,
    )


# ----------------------------------------------------------------------------- results
RESULT_KINDS = {
    "bench": {"function", "method", "seed", "step", "regret"},
    "sushi-pbo": {"user", "method", "question", "rho_regret", "top1_error"},
    "hierarchy": {"cohort", "variant", "question", "regret"},
    "accuracy": {"model", "train_acc", "test_acc"},
    "sensitivity": {"feature removed", "test acc (%)"},
}


def result_folders(root: str | Path) -> list[Path]:
    """Folders under ``root`` (and ``root`` itself) holding per-cell Parquet results."""
    base = Path(root).expanduser()
    if not base.is_dir():
        return []
    found = {p.parent for p in base.rglob("cell-*.parquet")}
    return sorted(found)


def _folder_stamp(folder: Path) -> tuple[tuple[str, int], ...]:
    return tuple((p.name, p.stat().st_mtime_ns) for p in sorted(folder.glob("cell-*.parquet")))


@st.cache_data(show_spinner="Reading results...", max_entries=32)
def _read_results(folder: str, stamp: Any) -> pd.DataFrame:
    return runner.read_results(folder)


def read_results(folder: str | Path) -> pd.DataFrame:
    """All finished cells of a results folder (cached until a file changes)."""
    f = Path(folder)
    return _read_results(str(f.resolve()), _folder_stamp(f))


def result_kind(df: pd.DataFrame) -> str:
    """What produced a results table (``bench``, ``sushi-pbo``, ``hierarchy``, ...)."""
    cols = set(df.columns)
    for kind, need in RESULT_KINDS.items():
        if need <= cols:
            return kind
    return "unknown"


def folders_of_kind(root: str | Path, kind: str) -> list[Path]:
    """Result folders under ``root`` whose tables are of one kind."""
    out = []
    for f in result_folders(root):
        df = read_results(f)
        if len(df) and result_kind(df) == kind:
            out.append(f)
    return out


def mean_se(df: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    """Mean, standard error and mean +- s.e. band of ``value`` per group."""
    g = df.groupby(by, sort=True)[value]
    out = g.agg(mean="mean", se="sem", n="count").reset_index()
    out["se"] = out["se"].fillna(0.0)
    out["lo"] = out["mean"] - out["se"]
    out["hi"] = out["mean"] + out["se"]
    return out


# ----------------------------------------------------------------------------- hierarchy
@st.cache_resource(show_spinner="Growing the user/item hierarchy...", max_entries=8)
def _hierarchy(
    token: Any,
    n_users: int,
    max_depth: int,
    min_users_leaf: int,
    item_max_depth: int,
    _study: Study,
) -> Any:
    n = min(int(n_users), len(_study.respondents()))
    return UserItemHierarchy(
        max_depth=max_depth, min_users_leaf=min_users_leaf, item_max_depth=item_max_depth
    ).fit(_study, users=np.arange(n))


def hierarchy(
    study: Study, n_users: int, max_depth: int, min_users_leaf: int, item_max_depth: int
) -> Any:
    """User/item hierarchy on the first ``n_users`` respondents (cached)."""
    return _hierarchy(
        _study_token(study),
        int(n_users),
        int(max_depth),
        int(min_users_leaf),
        int(item_max_depth),
        study,
    )


def user_groups(h: Any) -> pd.DataFrame:
    """One row per user group: its rule path, size and item tree summary."""
    t = h.user_tree_
    paths: dict[int, list[str]] = {0: []}
    rows = []
    for node in range(len(t.left)):
        if t.left[node] != -1:
            for child, right in ((t.right[node], True), (t.left[node], False)):
                paths[child] = [*paths[node], h.rule(node, right)]
            continue
        leaf = t.leaf_of_node[node]
        model = h.item_tree(leaf)
        best = min(explain.leaf_summaries(model), key=lambda s: (s.rank, s.leaf))
        rows.append(
            {
                "group": leaf,
                "users": t.n_users[node],
                "who": " AND ".join(paths[node]) or "(all users)",
                "item-tree leaves": model.n_leaves_,
                "favourite leaf": " AND ".join(best.conditions) or "(all items)",
            }
        )
    return pd.DataFrame(rows).sort_values("group").reset_index(drop=True)


# ----------------------------------------------------------------------------- PMR / LLM
def endpoint_reachable(base_url: str | None, timeout: float = 2.0) -> tuple[bool, str]:
    """Quick TCP check of an OpenAI-compatible endpoint (no request is sent)."""
    url = base_url or "https://api.openai.com/v1"
    p = urlparse(url)
    host = p.hostname
    if not host or p.scheme not in ("http", "https"):
        return False, f"{url!r} is not an http(s) URL (e.g. http://127.0.0.1:8000/v1)"
    port = p.port or (443 if p.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True, f"{host}:{port} accepts connections"
    except OSError as exc:
        return False, f"no endpoint reachable at {url} ({type(exc).__name__}: {exc})"


# ----------------------------------------------------------------------------- elicitation
def two_d_benchmarks() -> list[str]:
    """Bundled benchmark functions of two variables (for the partition picture)."""
    return [f for f in available_benchmarks() if get_benchmark(f).dim == 2]


def new_elicitation(kind: str, source: str, method: str, seed: int, max_items: int | None) -> Any:
    """A fresh :class:`~pbo_core.session.ElicitationSession` on a study or a benchmark."""
    if kind == "benchmark":
        return ElicitationSession.for_benchmark(source, method, seed=seed)
    study, error = get_study(source)
    if study is None:
        raise LookupError(error)
    return ElicitationSession.for_items(
        **study_item_set(study, max_items=max_items, seed=seed), strategy=method, seed=seed
    )


@st.cache_data(show_spinner=False, max_entries=16)
def benchmark_grid(function: str, n: int = 60) -> pd.DataFrame:
    """The true surface of a 2-D benchmark on an ``n x n`` grid (cached)."""
    f = get_benchmark(function)
    return surface_grid(lambda X: f.fn(X), f.bounds, n)


def leaf_boxes(model: DTSurrogate) -> pd.DataFrame:
    """Box of every leaf of a tree over two numeric columns, with its posterior."""
    tree = model.tree_
    lower, upper, _ = tree.boxes
    summ = {s.leaf: s for s in explain.leaf_summaries(model)}
    rows = []
    for leaf, node in enumerate(tree.leaf_nodes):
        s = summ[leaf]
        rows.append(
            {
                "x1": lower[node, 0],
                "x1_end": upper[node, 0],
                "x2": lower[node, 1],
                "x2_end": upper[node, 1],
                "leaf": leaf,
                "utility": s.mean,
                "sd": s.sd,
                "rank": s.rank,
            }
        )
    return pd.DataFrame(rows)


def session_points(sess: Any) -> pd.DataFrame:
    """Asked points, the favourite and the pending question of a 2-D session."""
    X = sess.X
    asked = np.unique(sess.pairs) if len(sess.pairs) else np.arange(0)
    rows = [{"x1": X[i, 0], "x2": X[i, 1], "role": "asked"} for i in asked]
    if len(X):
        r = sess.recommendation
        rows.append({"x1": X[r, 0], "x2": X[r, 1], "role": "favourite"})
    q = sess.next_query()
    for x in (q.a, q.b):
        rows.append({"x1": x[0], "x2": x[1], "role": "question"})
    return pd.DataFrame(rows, columns=["x1", "x2", "role"])


def session_items_table(sess: Any) -> pd.DataFrame:
    """Items of a finite session with predicted utility and rank."""
    data = PreferenceData(sess.X, sess.pairs, schema=sess.schema, item_ids=sess.ids())
    return items_table(sess.model, data)


def option_table(sess: Any, x: np.ndarray) -> pd.DataFrame:
    """Readable attributes of one option: label, value with unit."""
    schema = sess.schema
    dec = schema.decode(np.atleast_2d(x)).iloc[0]
    rows = []
    for f in schema.features:
        v = dec[f.name]
        text = _fmt(v)
        if f.unit and f.kind == "numeric":
            text = f"{text}{f.unit}" if f.unit in ("%", "°") else f"{text} {f.unit}"
        rows.append({"attribute": f.display, "value": text})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- PMR
def table_token(table: pd.DataFrame) -> str:
    """A content hash of a feature table (cache key)."""
    import hashlib

    text = table.astype(str).to_csv(index=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@st.cache_resource(show_spinner="Loading the extracted features...", max_entries=8)
def _pmr_with_features(
    key: str, options: tuple[tuple[str, str], ...], token: str, _table: pd.DataFrame
) -> Study:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if key == "pmr-demo":
            return pmr.load_pmr_demo(features=_table)
        return pmr.load_pmr_synth(features=_table, **dict(options))


def pmr_study(key: str, table: pd.DataFrame | None) -> Study:
    """A PMR study with ground-truth features (``table=None``) or an extracted table."""
    if table is None:
        study, error = get_study(key)
        if study is None:
            raise LookupError(error)
        return study
    ok = table[table["status"].astype(str) == "ok"] if "status" in table.columns else table
    return _pmr_with_features(key, study_status(key).options, table_token(ok), ok)


@st.cache_resource(show_spinner="Fitting the urgency tree...", max_entries=16)
def _urgency_tree(
    study_token: Any, token: str, min_samples_split: int, _study: Study
) -> DTSurrogate:
    return DTSurrogate(min_samples_split=min_samples_split).fit(_study.extras["train"])


def urgency_tree(study: Study, features_token: str, min_samples_split: int = 1) -> DTSurrogate:
    """The DT on the training inbox (inbox A) of a PMR study (cached)."""
    return _urgency_tree(_study_token(study), features_token, int(min_samples_split), study)


def cached_extractions(
    texts: pd.DataFrame, spec: Any, config: Any, cache_path: str
) -> tuple[int, int]:
    """``(cached ok, total)``: how many messages the cache answers for this model/spec."""
    path = Path(cache_path).expanduser()
    items = as_items(texts)
    if not path.is_file():
        return 0, len(items)
    with ExtractionCache(path) as cache:
        ex = Extractor(spec, config, cache=cache)
        got = cache.get_many([ex.key(m, t) for m, t in items])
    return sum(1 for c in got.values() if c.status == "ok"), len(items)


def study_titles() -> dict[str, str]:
    """Display title of every registry key."""
    return {s.key: s.title for s in study_statuses()}
