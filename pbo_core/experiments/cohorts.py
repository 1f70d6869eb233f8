"""User/item hierarchy cohorts with and without the hierarchy (Fig. 17).

Sushi: regret per question of new users elicited with a plain DT or warm-started from
the hierarchy of earlier users. SwissMetro (bundled): held-out accuracy of new
respondents after each of their own tasks; the user tree is grown on the three modes
(every respondent compares the same three items, so Eq. 15 finds groups)
and each group's item tree on the group's pooled profile comparisons (profiles are
rarely shared, but their attributes -- mode, time, cost, headway, seats -- are).

Every function that reads a study takes ``load_study``, a
:class:`~pbo_core.experiments.studies.LoadStudy` (the command line binds
:func:`data_loaders.cached.load_study_cached`; this module does not import
:mod:`data_loaders`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import ThreadpoolController

from pbo_core.data import Feature, PreferenceData, Schema, Study
from pbo_core.experiments.rho_regret import mean_ci
from pbo_core.experiments.runner import Cell
from pbo_core.experiments.studies import LoadStudy
from pbo_core.hierarchy import UserItemHierarchy
from pbo_core.loop import run_pbo
from pbo_core.metrics import pair_scores, rho_regret
from pbo_core.problem import Problem
from pbo_core.registry import COHORT_ARMS, arm_names, former_arm_names, get_arm, make_model
from pbo_core.segments import (
    CohortArrays,
    CovariateLogit,
    PersonalLogit,
    PooledLogit,
    SegmentLogitHierarchy,
    cohort_arrays,
)
from pbo_core.splits import holdout_tasks, pair_tasks
from pbo_core.strategies.dt import DTStrategy


@lru_cache(maxsize=1)
def _threadpools() -> ThreadpoolController:
    """BLAS controller, inspected once per process (a ``threadpool_limits`` per cell read
    the process's loaded libraries again: 6 ms a cell)."""
    return ThreadpoolController()


def _one_blas_thread() -> Any:
    """Context: BLAS on one thread (small solves, where threads only contend)."""
    return _threadpools().limit(limits=1, user_api="blas")


@lru_cache(maxsize=4)
def fitted_hierarchy(
    dataset: str, n_prev: int, data_dir: str | None, max_depth: int, *, load_study: LoadStudy
) -> Any:
    """User/item hierarchy on the first ``n_prev`` users of Sushi set ``dataset`` (cached)."""
    study = load_study(f"sushi-{dataset.lower()}", data_dir)
    return UserItemHierarchy(max_depth=max_depth, item_max_depth=max_depth).fit(
        study, users=np.arange(n_prev)
    )


#: The two curves of the Sushi cohorts (App. G.1, Fig. 17: elicitation without and with
#: the user/item hierarchy): ``plain``, a DT query rule on the user's own answers, and
#: ``hierarchy``, the same rule warm-started from the group item tree of the hierarchy of
#: the earlier users. The paper's comparison, run as PBO with a query rule, not arms of
#: :data:`~pbo_core.registry.COHORT_ARMS` (SwissMetro's held-out accuracy).
SUSHI_VARIANTS = ("plain", "hierarchy")


def hierarchy_cell(cell: Cell, *, load_study: LoadStudy) -> pd.DataFrame:
    """One user of a cohort, with or without the user/item hierarchy (App. G.1, Fig. 17).

    ``cell["variant"]`` is one of :data:`SUSHI_VARIANTS`. ``load_study`` loads the Sushi
    set (:class:`~pbo_core.experiments.studies.LoadStudy`; bind it with
    :func:`functools.partial` for :func:`~pbo_core.experiments.runner.run_grid`).
    """
    if cell["variant"] not in SUSHI_VARIANTS:
        raise ValueError(f"Sushi cohort variant {cell['variant']!r}: one of {list(SUSHI_VARIANTS)}")
    dataset = cell["dataset"]
    study = load_study(f"sushi-{dataset.lower()}", cell.get("data_dir"))
    user = int(cell["user"])
    depth = int(cell["max_depth"])
    order = np.asarray(study.extras["true_order"][user])  # item indices, best first
    items = order if dataset.upper() == "B" else np.arange(study.data.n_items)
    n = len(order)
    utility_all = np.zeros(study.data.n_items)
    utility_all[order] = np.arange(n, 0, -1, dtype=float)
    X = study.data.X[items]
    problem = Problem.from_items(f"sushi-{dataset}/{user}", X, utility_all[items], study.schema)
    n_prev = int(cell["cohort"]) * int(cell["refit_every"])
    if cell["variant"] == "hierarchy" and n_prev > 0:
        h = fitted_hierarchy(dataset, n_prev, cell.get("data_dir"), depth, load_study=load_study)
        resp = study.respondents()[user]
        leaf = int(h.assign(study.users.loc[[resp]])[0])
        strategy: Any = DTStrategy(
            within="auto", model=h.warm_start_surrogate(leaf, X), name="hierarchy"
        )
    else:
        leaf = -1
        strategy = DTStrategy(within="auto", max_depth=depth, name="plain")
    res = run_pbo(
        problem,
        strategy,
        n_init=1,
        n_iter=int(cell["iters"]),
        seed=int(cell["seed"]) * 100_003 + user,
    )
    assert res.scores is not None
    local_order = np.arange(n) if dataset.upper() == "B" else order  # B: items = order
    return pd.DataFrame(
        {
            "user": user,
            "cohort": int(cell["cohort"]),
            "variant": cell["variant"],
            "user_leaf": leaf,
            "question": 1 + np.arange(len(res.regret)),
            "regret": res.regret,
            "rho_regret": [rho_regret(local_order, s) for s in res.scores],
        }
    )


def summarize_hierarchy(rows: pd.DataFrame, early: int = 5) -> dict[str, Any]:
    """Mean regret per question for every cohort and variant, plus early-regret totals."""
    out: dict[str, Any] = {"cohorts": [], "early_questions": early}
    for (cohort, variant), g in rows.groupby(["cohort", "variant"], sort=True):
        per_q = g.groupby("question")
        out["cohorts"].append(
            {
                "cohort": int(cohort),
                "variant": variant,
                "users": int(g["user"].nunique()),
                "regret_mean": [float(v) for v in per_q["regret"].mean()],
                "regret_sd": [float(v) for v in per_q["regret"].std(ddof=1).fillna(0)],
                "rho_regret_mean": [float(v) for v in per_q["rho_regret"].mean()],
            }
        )
    later = rows[rows["cohort"] > 0]
    for variant, g in later.groupby("variant"):
        e = g[g["question"] <= early]
        out[f"{variant}_mean_regret_first_{early}_questions"] = float(e["regret"].mean())
        out[f"{variant}_mean_regret_all_questions"] = float(g["regret"].mean())
    return out


#: Sushi respondent features of the covariate Bradley-Terry model (few levels each).
SUSHI_COVARIATES = ("gender", "age", "region_15", "east_west_15", "region_now", "moved")


def sushi_bt_study(study: Study) -> Study:
    """Sushi set A as a Bradley-Terry study: the item itself is the only attribute."""
    n = study.data.n_items
    names = study.extras.get("item_names")
    levels = (
        tuple(str(x) for x in names) if names is not None else tuple(f"sushi {i}" for i in range(n))
    )
    schema = Schema((Feature("sushi", "categorical", levels=levels, label="Sushi"),))
    data = PreferenceData(
        np.arange(n, dtype=float)[:, None],
        study.data.pairs,
        schema=schema,
        respondent=study.data.respondent,
        task=study.data.task,
    )
    return Study(
        f"{study.key}-bt",
        study.title,
        schema,
        data,
        users=study.users,
        user_schema=study.user_schema,
    )


def sushi_cold_start(
    dataset: str,
    n_users: int,
    seed: int,
    data_dir: str | None,
    max_depth: int,
    *,
    load_study: LoadStudy,
) -> dict[str, Any]:
    """Sushi set A cold start: the first half of the users trains, the second half is new.

    Per new user (none of their own answers): pairwise accuracy of the predicted order on
    their 45 comparisons and the true rank of the predicted favourite (0 = their favourite),
    for the Bradley-Terry model (pooled logit on item indicators), the BT model with
    covariates (every item worth interacted with :data:`SUSHI_COVARIATES`, L2 by CV over
    training users), the BT tree (parameter-instability user tree with BT segments, as
    psychotree's ``bttree``) and the Eq. 15 hierarchy's group item tree, with paired
    differences. ``load_study`` loads the Sushi set
    (:class:`~pbo_core.experiments.studies.LoadStudy`).
    """
    if dataset.upper() != "A":
        return {"note": "set A only (set B: 100 items, 10 per user)"}
    study = load_study(f"sushi-{dataset.lower()}", data_dir)
    bt = sushi_bt_study(study)
    arr = cohort_arrays(bt, covariates=SUSHI_COVARIATES)
    n = min(int(n_users), arr.n_users)
    train, test = np.arange(n // 2), np.arange(n // 2, n)
    models: dict[str, Any] = {
        "bt-pooled": PooledLogit(seed=seed),
        "bt-covariates": CovariateLogit(seed=seed),
        "bt-tree": SegmentLogitHierarchy(seed=seed, max_depth=max_depth),
    }
    Z = arr.design.transform(bt.data.X)
    scores: dict[str, np.ndarray] = {}
    info: dict[str, Any] = {}
    for name, m in models.items():
        m.fit(arr, train)
        scores[name] = m.centres(arr, test) @ Z.T  # (users, items)
        info[name] = {
            k.rstrip("_"): float(getattr(m, k)) for k in ("alpha_", "shrinkage_") if hasattr(m, k)
        }
        if isinstance(m, SegmentLogitHierarchy):
            info[name]["segments"] = int(m.user_tree_.n_leaves)
            info[name]["who"] = m.segment_paths()
    h = UserItemHierarchy(max_depth=max_depth, item_max_depth=max_depth).fit(study, users=train)
    leaves = h.assign(study.users.loc[study.respondents()[test]])
    scores["hierarchy"] = np.stack([h.item_tree(g).predict(study.data.X) for g in leaves])
    info["hierarchy"] = {"user_groups": int(h.user_tree_.n_leaves)}
    rows = []
    for i, u in enumerate(test):
        m = arr.user == u
        pairs = study.data.pairs[m]
        order = np.asarray(study.extras["true_order"][u])
        rank = np.empty(len(order), dtype=int)
        rank[order] = np.arange(len(order))
        for name, sc in scores.items():
            rows.append(
                {
                    "user": int(u),
                    "variant": name,
                    "question": 0,
                    "test_acc": _pair_accuracy(sc[i], pairs),
                    "favourite_rank": int(rank[int(np.argmax(sc[i]))]),
                }
            )
    df = pd.DataFrame(rows)
    out: dict[str, Any] = {
        "train_users": len(train),
        "new_users": len(test),
        "metric": "pairwise accuracy of the cold-start order on all 45 comparisons (ties 1/2); "
        "favourite_rank: true rank (0 = favourite) of the predicted favourite",
        "models": info,
        "variants": {},
    }
    for name, g in df.groupby("variant", sort=False):
        a = mean_ci(g.groupby("question")["test_acc"])
        r = mean_ci(g.groupby("question")["favourite_rank"])
        out["variants"][str(name)] = {
            "test_acc_mean": a["mean"][0],
            "test_acc_ci95": a["ci95"][0],
            "favourite_rank_mean": r["mean"][0],
            "favourite_rank_ci95": r["ci95"][0],
        }
    wide = df.pivot_table(index=["user", "question"], columns="variant", values="test_acc")
    out["paired_difference"] = {
        f"{a}_minus_{b}": _paired(wide, a, b)
        for a in ("bt-tree", "hierarchy")
        for b in ("bt-pooled", "bt-covariates")
    }
    return out


# ----------------------------------------------------------------------------- SwissMetro
def cohort_study(key: str, data_dir: str | None = None, *, load_study: LoadStudy) -> Any:
    """The study of a cohort experiment (``"swissmetro"``, the bundled default with profiles
    as items, or any study with respondent features), through ``load_study``."""
    study = load_study(key, data_dir)
    if study.users is None or study.data.respondent is None:
        raise ValueError(
            f"{key}: the cohort experiment needs respondents with respondent features; "
            "import the study with --respondent-features"
        )
    return study


@lru_cache(maxsize=2)
def cohort_arrays_of(
    key: str, data_dir: str | None = None, *, load_study: LoadStudy
) -> CohortArrays:
    """Design differences, respondents and covariates of a cohort study (cached)."""
    return cohort_arrays(cohort_study(key, data_dir, load_study=load_study))


@lru_cache(maxsize=2)
def respondent_rows(
    key: str, data_dir: str | None = None, *, load_study: LoadStudy
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Respondent ids in order of first appearance (``study.respondents()``) and the
    comparison rows of each, in file order (cached): one pass over the comparisons for
    the whole grid instead of a scan per cell."""
    study = cohort_study(key, data_dir, load_study=load_study)
    resp = study.respondents()
    codes, _ = pd.factorize(pd.Series(study.data.respondent), sort=False)
    order = np.argsort(codes, kind="stable")
    rows = np.split(order, np.cumsum(np.bincount(codes, minlength=len(resp)))[:-1])
    return resp, rows


def respondent_permutation(n: int, seed: int) -> np.ndarray:
    """Seeded order in which respondents arrive (file order follows the survey groups)."""
    return np.random.default_rng([seed, 15]).permutation(n)


@lru_cache(maxsize=4)
def cohort_hierarchy(
    key: str,
    n_prev: int,
    seed: int,
    variant: str,
    max_depth: int,
    min_users: int,
    data_dir: str | None,
    *,
    load_study: LoadStudy,
) -> UserItemHierarchy:
    """Hierarchy on the first ``n_prev`` arriving respondents, the user tree of the
    ``warm_start`` arm ``variant`` (:class:`~pbo_core.registry.CohortArm`): grown to
    ``max_depth`` when the arm's ``grid_tree``, else one group."""
    profiles = cohort_study(key, data_dir, load_study=load_study)
    users = respondent_permutation(len(profiles.respondents()), seed)[:n_prev]
    depth = max_depth if get_arm(variant).grid_tree else 0
    return UserItemHierarchy(
        max_depth=depth, min_users_leaf=min_users, item_max_depth=max_depth
    ).fit(profiles, users=np.sort(users))  # user tree on modes (loader hint)


#: Earlier respondents up to which every cohort chooses its linear models' strengths by
#: cross-validation on all of them (:func:`cv_respondents`).
CV_ALL_UP_TO = 1000


def cv_respondents(n_prev: int) -> int:
    """Earlier respondents on whose cross-validation a cohort of ``n_prev`` chooses the
    strengths of its linear models (``alpha``, the interaction strength, the shrinkage
    ``lam`` and ``rho`` of Eq. 6).

    All of them up to :data:`CV_ALL_UP_TO`; beyond, the first ``CV_ALL_UP_TO * 2^j``
    arrivals, the largest such number not above ``n_prev`` (so always at least half of
    them). The strengths are chosen once per doubling and the cohort's models are then
    fitted with them on all ``n_prev``: the cross-validation's cost grows linearly with
    the study instead of with its square.
    """
    n_prev = int(n_prev)
    if n_prev <= CV_ALL_UP_TO:
        return n_prev
    m = CV_ALL_UP_TO
    while 2 * m <= n_prev:
        m *= 2
    return m


#: The centre model of a ``linear`` arm (:data:`pbo_core.registry.COHORT_CENTRES`).
CENTRES: dict[str, type[PooledLogit | CovariateLogit | SegmentLogitHierarchy]] = {
    "pooled": PooledLogit,
    "covariate": CovariateLogit,
    "segments": SegmentLogitHierarchy,
}


def _linear_centre(variant: str, seed: int, max_depth: int, min_users: int) -> Any:
    """The unfitted centre of the ``linear`` arm ``variant``: its registered parameters, the
    grid's user-tree settings when the arm's ``grid_tree``, and ``seed``."""
    arm = get_arm(variant)
    if arm.build != "linear" or arm.centre is None:
        raise ValueError(
            f"{variant!r} is not a linear arm; linear arms: {arm_names(build='linear')}"
        )
    grid = {"max_depth": max_depth, "min_users_leaf": min_users} if arm.grid_tree else {}
    return CENTRES[arm.centre](**arm.params, **grid, seed=seed)


@lru_cache(maxsize=16)
def cohort_segment_model(
    key: str,
    n_prev: int,
    seed: int,
    variant: str,
    max_depth: int,
    min_users: int,
    data_dir: str | None,
    *,
    load_study: LoadStudy,
) -> PersonalLogit:
    """Linear arm ``variant`` (``build="linear"`` in
    :data:`pbo_core.registry.COHORT_ARMS`) fitted to the first ``n_prev`` arriving
    respondents.

    Its centre (:data:`CENTRES`), e.g. ``logit-pooled-update`` (Eq. 2), ``logit-interaction``
    (Eq. 3), ``hierarchy-linear`` (the Eq. 15 user tree of ``hierarchy`` with segment
    logits, Eq. 4) and ``hierarchy-mob`` (the parameter-instability user tree, Eq. 5, with
    its defaults: depth 4, 30 respondents per segment, Bonferroni level 0.05); each with the
    Eq. 6 update from own answers. Every strength is chosen by CV on the first
    :func:`cv_respondents` arrivals (all ``n_prev`` up to :data:`CV_ALL_UP_TO`), never on
    later ones; the model is fitted with them on all ``n_prev``.
    """
    study = cohort_study(key, data_dir, load_study=load_study)
    arr = cohort_arrays_of(key, data_dir, load_study=load_study)
    users = np.sort(respondent_permutation(arr.n_users, seed)[:n_prev])
    m = cv_respondents(n_prev)
    if m == n_prev:
        model = PersonalLogit(_linear_centre(variant, seed, max_depth, min_users), seed=seed)
    else:  # the strengths of the first m (cached: every cohort up to 2 m reuses them)
        model = cohort_segment_model(
            key, m, seed, variant, max_depth, min_users, data_dir, load_study=load_study
        ).fixed()
    with _one_blas_thread():
        return model.fit(arr, users, study=study)


#: Arrivals between two refits of the cohort experiment, by default (``hierarchy
#: --refit-every``).
COHORT_SIZE = 200


def cohort_size(n_users: int, refit_every: int | None = None) -> int:
    """Arrivals per cohort of the ``hierarchy`` command's grid on ``n_users`` arrivals:
    ``refit_every`` when given, else :data:`COHORT_SIZE` capped at half of them (two
    cohorts at least: the second learns from the first). The command and the Hierarchy
    page's pre-run estimate both read it."""
    if refit_every:
        return int(refit_every)
    return min(COHORT_SIZE, max(1, n_users // 2))


def cohort_cell_grid(
    n_users: int,
    refit_every: int = 200,
    *,
    study: str = "swissmetro",
    base: dict[str, Any] | None = None,
    max_depth: int = 5,
    min_users: int = 20,
    test_tasks: int = 2,
    first_user: int = 0,
    variants: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:
    """Cells of the SwissMetro cohort experiment: arrivals ``first_user .. n_users - 1``.

    ``variants``: arms of :data:`pbo_core.registry.COHORT_ARMS` (default: every arm, in
    registry order). Arrival ``u`` is in cohort ``u // refit_every``; the arms fitted on
    own answers only (``plain``) for every arrival, the arms that learn from earlier
    respondents (warm starts, linear arms) from cohort 1 on (cohort 0 has none).
    """
    k = int(refit_every)
    arms = [get_arm(v) for v in (variants or COHORT_ARMS)]
    return [
        dict(
            base or {},
            study=study,
            user=u,
            cohort=u // k,
            refit_every=k,
            max_depth=max_depth,
            min_users=min_users,
            test_tasks=test_tasks,
            variant=arm.name,
        )
        for u in range(first_user, n_users)
        for arm in arms
        if not arm.earlier or u >= k
    ]


#: Cost model of the cohort grid, seconds of CPU on the 2-core machine the scaling
#: figures of docs/hierarchy.md were measured on (``tests/benchmarks/hierarchy_scale.py``,
#: fitted to its 1,000 to 20,000-respondent runs, within 3 % of each): per model fit of a
#: cell (one per number of own tasks answered), a fixed cost and a cost per comparison of
#: the earlier respondents (each cohort's models are fitted on them, and a warm start whose
#: answers change a split of the group's tree regrows that subtree):
#: ``t = sum_cells q (a + b n_prev m)`` (Eq. 1), ``q`` fits per cell, ``n_prev`` the cell's
#: earlier respondents, ``m`` comparisons per respondent. (A third term per comparison
#: cross-validated, :func:`cv_respondents`, was fitted at zero: it is part of ``a``.)
CELL_CPU_S, CELL_PAIR_CPU_S = 4.0e-4, 3.8e-9


def estimate_grid_seconds(
    cells: list[dict[str, Any]], pairs_per_respondent: float, tasks_per_respondent: float = 1.0
) -> float:
    """Pre-run estimate (Eq. 1 of :data:`CELL_CPU_S`) of the CPU seconds of the cohort
    grid ``cells`` (:func:`cohort_cell_grid`) on a study with ``pairs_per_respondent``
    comparisons and ``tasks_per_respondent`` choice tasks per respondent; printed before a
    long run. A guide, not a promise: the shape of the data (alternatives, how far the
    trees grow) and the machine's load move it."""
    if not cells:
        return 0.0
    prev = np.array([int(c["cohort"]) * int(c["refit_every"]) for c in cells], dtype=float)
    held = np.array([int(c.get("test_tasks", 2)) for c in cells], dtype=float)
    q = np.where(tasks_per_respondent > held, tasks_per_respondent - held + 1.0, 1.0)
    return float((q * (CELL_CPU_S + CELL_PAIR_CPU_S * pairs_per_respondent * prev)).sum())


def estimate_text(cells: list[dict[str, Any]], study: Study) -> str:
    """The sentence the ``hierarchy`` command prints before it starts: cells, respondents
    and the estimated CPU time (:func:`estimate_grid_seconds`)."""
    n_resp = max(1, len(study.respondents()))
    s = estimate_grid_seconds(cells, study.data.n_pairs / n_resp, study.data.n_tasks() / n_resp)
    when = (
        "under a second"
        if s < 1
        else f"{s:.0f} s"
        if s < 90
        else f"{s / 60:.0f} min"
        if s < 5400
        else f"{s / 3600:.1f} h"
    )
    arrivals = len({c["user"] for c in cells})
    return (
        f"hierarchy grid: {len(cells):,} cells ({arrivals:,} arriving respondents); "
        f"estimated {when} of CPU on a 2-core machine (docs/hierarchy.md); --jobs N spreads it"
    )


def _pair_accuracy(scores: np.ndarray, pairs: np.ndarray) -> float:
    return float(np.mean(pair_scores(scores, pairs)))


@dataclass(frozen=True)
class Arrival:
    """A new respondent of the cohort grid: their comparisons and held-out tasks.

    ``pos``: position in ``study.respondents()``; ``data``: their comparisons (their
    items only); ``tasks``: the task of every comparison; ``test_mask``: the held-out
    comparisons (``test_tasks`` tasks, seeded as :func:`~pbo_core.splits.respondent_holdout`
    draws them; every comparison when too few tasks to keep some); ``train_tasks``: the
    other tasks in file order, answered one after another.
    """

    pos: int
    resp: Any
    data: PreferenceData
    tasks: np.ndarray
    test_mask: np.ndarray
    train_tasks: tuple[Any, ...]

    def answered(self, k: int) -> np.ndarray:
        """Mask of the comparisons answered after the first ``k`` training tasks."""
        return np.isin(self.tasks, self.train_tasks[:k]) & ~self.test_mask


def _arrival_of(
    key: str, data_dir: str | None, seed: int, user: int, test_tasks: int, load_study: LoadStudy
) -> Arrival:
    profiles = cohort_study(key, data_dir, load_study=load_study)
    resp_ids, rows_of = respondent_rows(key, data_dir, load_study=load_study)
    pos = int(respondent_permutation(len(resp_ids), seed)[user])
    rows = rows_of[pos]
    data = profiles.data.select_pairs(rows, drop_unused_items=True)
    tasks = pair_tasks(profiles.data)[rows]
    held = holdout_tasks(tasks, np.random.default_rng([seed, pos]), n_test=test_tasks)
    # too few tasks to keep some: every task tests the cold start
    test_mask = np.ones(data.n_pairs, dtype=bool) if held is None else held
    train_tasks = tuple(dict.fromkeys(tasks[~test_mask]))
    return Arrival(pos, resp_ids[pos], data, tasks, test_mask, train_tasks)


@lru_cache(maxsize=16)
def arrival(
    key: str, data_dir: str | None, seed: int, user: int, test_tasks: int, *, load_study: LoadStudy
) -> Arrival:
    """The :class:`Arrival` of grid position ``user`` (cached: the variants of one arrival
    are consecutive cells and share it)."""
    return _arrival_of(key, data_dir, seed, user, test_tasks, load_study)


@lru_cache(maxsize=64)
def _text_column(value: str, n: int) -> Any:
    """A read-only column of ``n`` copies of ``value`` (shared by the cells that repeat it:
    building a string column is most of a small frame's cost)."""
    return pd.array([value] * n, dtype="str")


def _cell_frame(cell: Cell, resp: Any, leaf: int, acc: list[float], n_test: int) -> pd.DataFrame:
    """The rows of one cell: held-out accuracy after 0, 1, ... own tasks."""
    n = len(acc)
    return pd.DataFrame(
        {
            "user": np.full(n, int(cell["user"])),
            "respondent": _text_column(str(resp), n),
            "cohort": np.full(n, int(cell["cohort"])),
            "variant": _text_column(str(cell["variant"]), n),
            "user_leaf": np.full(n, leaf),
            "question": np.arange(n),
            "test_acc": np.asarray(acc, dtype=float),
            "n_test_pairs": np.full(n, n_test),
        },
        copy=False,
    )


def cohort_cell(cell: Cell, *, load_study: LoadStudy) -> pd.DataFrame:
    """A new SwissMetro respondent: held-out accuracy after each of their own tasks.

    The respondent's ``test_tasks`` held-out tasks (seeded) are predicted after 0, 1, ...
    of their other tasks (file order) by the cell's arm (``variant``, an entry of
    :data:`pbo_core.registry.COHORT_ARMS`, built as its ``build`` says): a registry model
    on their own answers (``plain``: the paper DT), the warm start from their user-tree
    group (``pooled``: everybody is one group; ``hierarchy``: user tree on modes, item
    trees on profiles), or a linear model of the earlier respondents updated by Eq. 6.
    ``load_study`` loads SwissMetro (:class:`~pbo_core.experiments.studies.LoadStudy`;
    bind it with :func:`functools.partial` for
    :func:`~pbo_core.experiments.runner.run_grid`).
    """
    key = str(cell.get("study", "swissmetro"))
    a = arrival(
        key,
        cell.get("data_dir"),
        int(cell["seed"]),
        int(cell["user"]),
        int(cell["test_tasks"]),
        load_study=load_study,
    )
    data = a.data
    test_pairs = data.pairs[a.test_mask]
    n_prev = int(cell["cohort"]) * int(cell["refit_every"])
    variant = str(cell["variant"])
    arm = get_arm(variant)
    depth = int(cell["max_depth"])
    leaf = -1
    # the cohort's models: (study, earlier respondents, seed, variant, depth, group size,
    # data folder), the key of every cached fit
    fit_key = (key, n_prev, int(cell["seed"]), variant, depth, int(cell["min_users"]))
    fit_key += (cell.get("data_dir"),)
    if arm.build == "linear":
        user = int(cell["user"])
        start = n_prev + (user - n_prev) // LINEAR_BATCH * LINEAR_BATCH
        end = min(n_prev + int(cell["refit_every"]), start + LINEAR_BATCH)
        leaf, B, Z = cohort_linear_coefficients(
            *fit_key, start, end, int(cell["test_tasks"]), load_study=load_study
        )[user]
        acc = [_pair_accuracy(Z @ b, test_pairs) for b in B]
        return _cell_frame(cell, a.resp, leaf, acc, len(test_pairs))
    if arm.build == "warm_start":
        h = cohort_hierarchy(*fit_key, load_study=load_study)
        U = cohort_arrays_of(key, cell.get("data_dir"), load_study=load_study).U
        leaf = int(h.user_tree_.apply(U[[a.pos]], h.user_schema_.is_categorical)[0])
        warm = h.warm_start_surrogate(leaf, data.X)
    own_params = {"max_depth": depth} if arm.grid_tree else {}
    acc = []
    for k in range(len(a.train_tasks) + 1):
        train = data.select_pairs(a.answered(k), drop_unused_items=False)
        if arm.build == "own":
            if train.n_pairs == 0:
                scores = np.zeros(data.n_items)
            else:
                own = make_model(str(arm.model), **own_params)
                scores = own.fit(train).predict(data.X)
        else:
            scores = warm.fit(train).predict(data.X)
        acc.append(_pair_accuracy(scores, test_pairs))
    return _cell_frame(cell, a.resp, leaf, acc, len(test_pairs))


#: Arrivals of one cohort whose linear fits (Eq. 6) run as one batch.
LINEAR_BATCH = 50


@lru_cache(maxsize=2)
def _linear_block(
    key: str,
    data_dir: str | None,
    seed: int,
    first_user: int,
    end_user: int,
    test_tasks: int,
    *,
    load_study: LoadStudy,
) -> tuple[range, list[np.ndarray], list[list[np.ndarray]], np.ndarray]:
    """Arrivals ``first_user .. end_user - 1``: their item designs ``Z``, the difference
    rows answered after 0, 1, ... own tasks, and their positions (shared by the linear
    variants)."""
    arr = cohort_arrays_of(key, data_dir, load_study=load_study)
    grid_users = range(first_user, min(end_user, arr.n_users))
    arrivals = [_arrival_of(key, data_dir, seed, u, test_tasks, load_study) for u in grid_users]
    Zs, owns = [], []
    for a in arrivals:
        Z = arr.design.transform(a.data.X)
        d = Z[a.data.pairs[:, 0]] - Z[a.data.pairs[:, 1]]
        Zs.append(Z)
        owns.append([d[a.answered(k)] for k in range(len(a.train_tasks) + 1)])
    return grid_users, Zs, owns, np.array([a.pos for a in arrivals], dtype=np.int64)


@lru_cache(maxsize=8)
def cohort_linear_coefficients(
    key: str,
    n_prev: int,
    seed: int,
    variant: str,
    max_depth: int,
    min_users: int,
    data_dir: str | None,
    first_user: int,
    end_user: int,
    test_tasks: int,
    *,
    load_study: LoadStudy,
) -> dict[int, tuple[int, np.ndarray, np.ndarray]]:
    """Eq. 6 for the arrivals ``first_user .. end_user - 1`` of the cohort of ``n_prev``
    earlier respondents under one linear variant, in one batch.

    Grid position ``user`` -> ``(segment, B, Z)``: ``B[k]`` the respondent's coefficients
    after ``k`` own tasks, ``Z`` the design of their items. The Newton fits of the batch
    run together (:meth:`~pbo_core.segments.PersonalLogit.coefficients_many`), each the
    fit a cell on its own would make.
    """
    model = cohort_segment_model(
        key, n_prev, seed, variant, max_depth, min_users, data_dir, load_study=load_study
    )
    arr = cohort_arrays_of(key, data_dir, load_study=load_study)
    grid_users, Zs, owns, pos = _linear_block(
        key, data_dir, seed, first_user, end_user, test_tasks, load_study=load_study
    )
    with _one_blas_thread():
        Bs = model.coefficients_many(arr, pos, owns)
    centre = model.centre_
    leaves = (
        centre.user_tree_.apply(arr.U[pos], arr.user_schema.is_categorical)
        if isinstance(centre, SegmentLogitHierarchy)
        else np.full(len(pos), -1)
    )
    return {u: (int(g), B, Z) for u, g, B, Z in zip(grid_users, leaves, Bs, Zs, strict=True)}


def _paired(wide: pd.DataFrame, a: str, b: str) -> dict[str, Any]:
    diff = (wide[a] - wide[b]).dropna().rename("d").reset_index()
    ci = mean_ci(diff.groupby("question")["d"])
    return {
        "tasks_answered": [int(q) for q in sorted(diff["question"].unique())],
        "mean": ci["mean"],
        "ci95": ci["ci95"],
        "median": [float(v) for v in diff.groupby("question")["d"].median()],
    }


def current_arm_names(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of cohort cells (:func:`cohort_cell`) with every arm under its current name.

    A cell written before its arm was renamed (:attr:`pbo_core.registry.CohortArm.formerly`:
    ``logit-pooled`` is ``logit-pooled-update`` now) has the former name in ``variant`` and
    is read as the arm. Where a folder also holds the same cell under the current name (a
    grid resumed after the rename computes it afresh), the former one is left out, so no
    respondent counts twice. ``rows`` itself when nothing is renamed.
    """
    renamed = former_arm_names()
    if "variant" not in rows.columns or not renamed:
        return rows
    variant = rows["variant"].astype(str)
    old = variant.isin(list(renamed)).to_numpy()
    if not old.any():
        return rows
    out = rows.copy()
    out.loc[old, "variant"] = variant[old].map(renamed)
    key = [c for c in ("study", "user", "respondent", "cohort", "question") if c in out.columns]
    key.append("variant")
    current = pd.MultiIndex.from_frame(out.loc[~old, key])
    again = pd.MultiIndex.from_frame(out.loc[old, key]).isin(current)
    return out.drop(index=out.index[old][again])


def summarize_cohorts(rows: pd.DataFrame) -> dict[str, Any]:
    """Mean held-out accuracy per number of own tasks, per variant (cohorts >= 1), 95 % CI.

    Rows of renamed arms count under their current names (:func:`current_arm_names`)."""
    rows = current_arm_names(rows)
    later = rows[rows["cohort"] > 0]
    out: dict[str, Any] = {
        "metric": "held-out pairwise accuracy (ties 1/2) of the respondent's test tasks",
        "respondents": int(later["user"].nunique()),
        "variants": {},
    }
    for variant, g in later.groupby("variant", sort=False):
        per_q = g.groupby("question")["test_acc"]
        ci = mean_ci(per_q)
        out["variants"][str(variant)] = {
            "respondents": int(g["user"].nunique()),
            "user_groups_last_cohort": int(
                g[g["cohort"] == g["cohort"].max()]["user_leaf"].nunique()
            ),
            "tasks_answered": [int(q) for q in per_q.groups],
            "test_acc_mean": ci["mean"],
            "test_acc_se": ci["se"],
            "test_acc_ci95": ci["ci95"],
        }
    # paired per respondent (same held-out tasks)
    wide = later.pivot_table(index=["user", "question"], columns="variant", values="test_acc")
    have = set(wide.columns)
    pairs = [("hierarchy", o) for o in ("pooled", "plain")]
    pairs += [(t, b) for t in arm_names(family="tree") for b in arm_names(family="baseline")]
    pairs += [("hierarchy-mob", "hierarchy-linear")]
    pairs += [("logit-interaction", "logit-pooled-update")]
    out["paired_difference"] = {
        f"{a}_minus_{b}": _paired(wide, a, b) for a, b in pairs if a in have and b in have
    }
    out["cold_start"] = _cold_start(out, wide)
    return out


def _cold_start(out: dict[str, Any], wide: pd.DataFrame) -> dict[str, Any]:
    """Best tree-family arm at 0 own tasks against every baseline arm: the cold-start test."""
    at0 = {
        v: x["test_acc_mean"][x["tasks_answered"].index(0)]
        for v, x in out["variants"].items()
        if 0 in x["tasks_answered"]
    }
    trees = [v for v in arm_names(family="tree") if v in at0]
    res: dict[str, Any] = {"accuracy_at_0_tasks": at0}
    if not trees:
        return res
    best = max(trees, key=lambda v: at0[v])
    res["best_tree_family"] = best
    for b in arm_names(family="baseline"):
        if b in wide.columns:
            p = _paired(wide, best, b)
            k = p["tasks_answered"].index(0)
            res[f"best_minus_{b}"] = {"mean": p["mean"][k], "ci95": p["ci95"][k]}
    if "best_minus_logit-interaction" in res:
        res["at_least_interaction_minus_0.01"] = bool(
            res["best_minus_logit-interaction"]["mean"] >= -0.01
        )
    if "best_minus_logit-pooled-update" in res:
        res["above_pooled_logit_ci"] = bool(res["best_minus_logit-pooled-update"]["ci95"][0] > 0)
    return res


def segment_report(
    key: str,
    n_prev: int,
    seed: int,
    max_depth: int,
    min_users: int,
    data_dir: str | None,
    *,
    load_study: LoadStudy,
    money: str | None = None,
) -> dict[str, Any]:
    """Segments of the ``hierarchy-mob`` model of ``n_prev`` respondents, and every linear
    variant's chosen strengths (for the JSON and the page). ``money``: the attribute the
    segments' value of time divides by (default: the study's,
    :meth:`~pbo_core.segments.SegmentLogitHierarchy.money_column`)."""
    out: dict[str, Any] = {"earlier_respondents": n_prev, "models": {}}
    for v in arm_names(build="linear"):
        m = cohort_segment_model(
            key, n_prev, seed, v, max_depth, min_users, data_dir, load_study=load_study
        )
        c = m.centre_
        info: dict[str, Any] = {
            "personal_strength_rho": m.rho_,
            "strengths_cv_respondents": cv_respondents(n_prev),
        }
        for attr in ("alpha_", "shrinkage_"):
            if hasattr(c, attr):
                info[attr.rstrip("_")] = float(getattr(c, attr))
        if isinstance(c, SegmentLogitHierarchy):
            info["segments"] = int(c.user_tree_.n_leaves)
            table = c.segment_table(money)
            info["segment_table"] = (
                table.astype(object).where(table.notna(), None).to_dict(orient="records")
            )  # "not identified": null in the JSON, and the reason in its text column
        out["models"][v] = info
    return out
