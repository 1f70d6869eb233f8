"""rho-regret curves on bundled data (DT-PBO App. G.1): triage and simulated respondents.

Two kinds of cells, both finite item sets run through :func:`pbo_core.loop.run_pbo` with
:meth:`Problem.from_items` and a PBO method of :mod:`pbo_core.registry`:

``pmr-demo`` (triage)
    "Which message is more urgent?": the items are the messages of one inbox of the demo
    (inbox A or B, 30 messages each); the oracle answers with the documented ground-truth
    urgency model (an :class:`InboxUrgency`, e.g. :func:`data_loaders.pmr.inbox_urgency`,
    noiseless unless ``noise_r`` is given). The
    rho-regret is the top-3 regret of App. G.1 against the true urgency ranking (ties of
    the truth broken by message order). One cell per (inbox, method, seed).
``train`` / ``electricity`` / ``swissmetro`` (simulated respondents)
    The standard simulation design of adaptive-conjoint research (e.g. Toubia, Hauser &
    Simester 2004): every simulated respondent's *true* utility is the per-respondent
    linear utility (logit, shrunk toward the pooled model,
    :class:`~pbo_core.models.linear.RespondentLinearSurrogate`) fitted on that real
    respondent's answers in the bundled study; the items are ``n_items`` alternatives of
    the study (drawn per respondent with a seeded Generator). The methods then elicit the
    favourite of this simulated respondent; the rho-regret is measured against the ranking
    by the fitted utility. This measures query efficiency against a realistic,
    heterogeneous population -- not against the real people, whose utilities are unknown.
    The truths are linear, which favours the linear methods (``dt-linear``,
    ``linear-eubo``); pmr-demo's truth is not linear.

    Population prior (``prior="pooled"``, default): the linear methods start each
    simulated respondent from the pooled fit of the study's *other* respondents -- those
    not simulated in the run (index ``>= units``), so none of a simulated respondent's
    own answers enters its prior: a single-leaf Bayesian linear probit of all of them,
    each respondent shrunk toward the pooled slopes with the strength chosen by task CV
    (:meth:`~pbo_core.models.linear_leaves.LinearLeafDTSurrogate.population_prior`).
    ``prior="none"`` uses the models' base prior (pmr-demo always does: it has no
    earlier respondents).
``sushi-a``
    The Sushi set A path (:func:`pbo_core.experiments.sushi.sushi_pbo_cell`).

Studies come from a :class:`~pbo_core.experiments.studies.LoadStudy` and the triage truth
from an :class:`InboxUrgency`, both passed in (the command line binds
:mod:`data_loaders`' functions; this module does not import them).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Protocol

import numpy as np
import pandas as pd

from pbo_core.data import Study
from pbo_core.experiments.runner import Cell
from pbo_core.experiments.studies import LoadStudy
from pbo_core.experiments.sushi import sushi_pbo_cell
from pbo_core.loop import run_pbo
from pbo_core.metrics import bootstrap_ci, rho_regret, top1_rank_error
from pbo_core.models.linear import RespondentLinearSurrogate
from pbo_core.models.linear_leaves import SlopePrior
from pbo_core.problem import Problem
from pbo_core.registry import get, make_strategy
from pbo_core.strategies.linear_leaves import pooled_slope_prior

#: Studies with simulated respondents.
SIMULATED_STUDIES = ("train", "electricity", "swissmetro")
#: Every study of the command.
RHO_STUDIES = ("pmr-demo", *SIMULATED_STUDIES, "sushi-a")
#: Default methods: DT variants, GP, random pairs.
#: Choices of the ``--prior`` option.
PRIORS = ("pooled", "none")


class InboxUrgency(Protocol):
    """The triage truth of one demo inbox, e.g. :func:`data_loaders.pmr.inbox_urgency`.

    ``inbox_urgency(study, inbox) -> (rows, urgency)``: the item indices of the messages
    of inbox ``inbox`` (``"A"`` or ``"B"``) in ``study.data`` and their ground-truth
    urgency (float array, same length; both empty when the inbox has no message).
    """

    def __call__(self, study: Study, inbox: str) -> tuple[np.ndarray, np.ndarray]: ...


def _strict_order(utility: np.ndarray) -> np.ndarray:
    """Item indices best first (ties broken by index)."""
    return np.lexsort((np.arange(len(utility)), -np.asarray(utility, dtype=float)))


@lru_cache(maxsize=4)
def respondent_models(
    key: str, data_dir: str | None = None, *, load_study: LoadStudy
) -> RespondentLinearSurrogate:
    """Per-respondent logit utilities of a bundled study (the simulated truths).

    ``load_study`` loads ``key`` (:class:`~pbo_core.experiments.studies.LoadStudy`).
    """
    study = load_study(key, data_dir)
    return RespondentLinearSurrogate("logit", shrink=True, alpha="cv").fit(study.data)


def pmr_problem(
    inbox: str, *, load_study: LoadStudy, inbox_urgency: InboxUrgency
) -> tuple[Problem, np.ndarray]:
    """The triage problem of one demo inbox and its true urgency order.

    Parameters
    ----------
    inbox
        ``"A"`` or ``"B"``.
    load_study
        Loads ``"pmr-demo"`` (:class:`~pbo_core.experiments.studies.LoadStudy`).
    inbox_urgency
        The inbox's messages and their true urgency (:class:`InboxUrgency`).
    """
    study = load_study("pmr-demo")
    sel, urgency = inbox_urgency(study, inbox)
    if len(sel) == 0:
        raise ValueError(f"no messages of inbox {inbox!r} in pmr-demo")
    urgency = np.asarray(urgency, dtype=float)
    problem = Problem.from_items(f"pmr-demo/{inbox}", study.data.X[sel], urgency, study.schema)
    return problem, _strict_order(urgency)


def simulated_problem(
    key: str,
    respondent_index: int,
    n_items: int,
    seed: int,
    data_dir: str | None = None,
    *,
    load_study: LoadStudy,
) -> tuple[Problem, np.ndarray]:
    """Items drawn from a study and one simulated respondent's true (fitted) utility.

    ``load_study`` loads ``key`` (:class:`~pbo_core.experiments.studies.LoadStudy`).
    """
    study = load_study(key, data_dir)
    model = respondent_models(key, data_dir, load_study=load_study)
    resp = model.respondents_[respondent_index]
    X_all = study.data.X
    # distinct rows only (Problem.from_items identifies items by their encoded row)
    _, first = np.unique(X_all, axis=0, return_index=True)
    rng = np.random.default_rng([seed, respondent_index, 7])
    pick = rng.choice(np.sort(first), size=min(n_items, len(first)), replace=False)
    X = X_all[pick]
    utility = model.predict(X, respondent=resp)
    problem = Problem.from_items(f"{key}/{resp}", X, utility, study.schema)
    return problem, _strict_order(utility)


@lru_cache(maxsize=4)
def population_prior(
    key: str, n_simulated: int, data_dir: str | None = None, *, load_study: LoadStudy
) -> SlopePrior:
    """Slope prior from the respondents of a study that are not simulated in the run.

    The first ``n_simulated`` respondents (in the order of :func:`respondent_models`)
    are left out; the rest are fitted together as a single-leaf Bayesian linear probit
    with every attribute, shrunk toward the pooled slopes (strength by task CV).
    ``load_study`` loads ``key`` (:class:`~pbo_core.experiments.studies.LoadStudy`).
    """
    study = load_study(key, data_dir)
    simulated = respondent_models(key, data_dir, load_study=load_study).respondents_[:n_simulated]
    resp = study.data.respondent
    if resp is None:
        raise ValueError(f"{key}: no respondent ids, so no earlier respondents for a prior")
    keep = ~np.isin(resp, simulated)
    if not keep.any():
        raise ValueError(f"{key}: every respondent is simulated; no others to fit a prior on")
    return pooled_slope_prior(study.data.select_pairs(keep))


def rho_regret_cell(
    cell: Cell, *, load_study: LoadStudy, inbox_urgency: InboxUrgency | None = None
) -> pd.DataFrame:
    """One (study, unit, method, seed) run: rho-regret and top-1 error per question.

    Parameters
    ----------
    cell
        A cell of :func:`rho_cells`.
    load_study
        Loads the cell's study (:class:`~pbo_core.experiments.studies.LoadStudy`).
    inbox_urgency
        The triage truth of ``pmr-demo`` cells (:class:`InboxUrgency`; required for them).

    Bind both with :func:`functools.partial` for
    :func:`~pbo_core.experiments.runner.run_grid` (the cell itself holds no callable).
    """
    study = cell["study"]
    if study == "sushi-a":
        rows = sushi_pbo_cell(
            dict(cell, user=int(cell["unit"]), iters=int(cell["iters"]), n_init=1),
            load_study=load_study,
        )
        rows["study"] = study
        rows["unit"] = str(cell["unit"])
        rows["seed"] = int(cell["seed"])
        return rows
    seed = int(cell["seed"])
    if study == "pmr-demo":
        if inbox_urgency is None:
            raise ValueError("pmr-demo cells need inbox_urgency (the triage truth)")
        problem, order = pmr_problem(
            str(cell["unit"]), load_study=load_study, inbox_urgency=inbox_urgency
        )
        run_seed = seed
    else:
        idx = int(cell["unit"])
        problem, order = simulated_problem(
            study, idx, int(cell["n_items"]), seed, cell.get("data_dir"), load_study=load_study
        )
        run_seed = seed * 100_003 + idx
    options: dict[str, Any] = {}
    if (
        get(cell["method"]).takes_prior
        and study in SIMULATED_STUDIES
        and cell.get("prior", "pooled") == "pooled"
    ):
        n_sim = int(cell.get("n_units", idx + 1))
        options["slope_prior"] = population_prior(
            study, n_sim, cell.get("data_dir"), load_study=load_study
        )
    res = run_pbo(
        problem,
        make_strategy(cell["method"], **options),
        n_init=1,
        n_iter=int(cell["iters"]),
        seed=run_seed,
        noise_r=float(cell.get("noise_r", 0.0)),
    )
    assert res.scores is not None
    return pd.DataFrame(
        {
            "study": study,
            "unit": str(cell["unit"]),
            "seed": seed,
            "method": cell["method"],
            "question": 1 + np.arange(len(res.scores)),
            "rho_regret": [rho_regret(order, s) for s in res.scores],
            "top1_error": [top1_rank_error(int(order[0]), s) for s in res.scores],
            "time_s": res.time.astype(float),
        }
    )


def rho_cells(
    study: str,
    methods: list[str],
    *,
    units: int,
    seeds: int,
    iters: int,
    n_items: int = 30,
    noise_r: float = 0.0,
    prior: str = "pooled",
    base: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The grid of the ``rho-regret`` command.

    ``units``: inboxes (pmr-demo, at most 2), simulated respondents (first N of the study)
    or Sushi users; ``seeds``: repetitions per unit (first question, ties, sampled items);
    ``prior``: population prior of the linear methods on simulated studies (see module
    docstring).
    """
    if prior not in PRIORS:
        raise ValueError(f"prior must be one of {PRIORS}, got {prior!r}")
    base = dict(base or {})
    if study == "pmr-demo":
        unit_ids: list[Any] = ["A", "B"][: max(1, min(units, 2))]
    else:
        unit_ids = list(range(units))
    extra: dict[str, Any] = {"n_items": n_items} if study in SIMULATED_STUDIES else {}
    if noise_r:
        extra["noise_r"] = noise_r
    # the linear methods' prior excludes every simulated respondent (keys only on their
    # cells, so the other methods' stored cells stay valid)
    with_prior = {"prior": prior, "n_units": len(unit_ids)} if study in SIMULATED_STUDIES else {}
    return [
        dict(
            base,
            study=study,
            unit=u,
            method=m,
            seed=s,
            iters=iters,
            **extra,
            **(with_prior if get(m).takes_prior else {}),
        )
        for u in unit_ids
        for s in range(seeds)
        for m in methods
    ]


def mean_ci(
    values: pd.core.groupby.SeriesGroupBy, *, seed: int = 0, n_boot: int = 2000
) -> dict[str, list[Any]]:
    """Per group: mean, standard error and a 95 % percentile-bootstrap interval of the mean
    (lists). A percentile interval never leaves the range of the values, so an accuracy's
    stays in [0, 1] and a regret's above 0 (a t interval on 20 respondents did not)."""
    mean, se, n = values.mean(), values.sem().fillna(0.0), values.count()
    ci = [
        list(bootstrap_ci(g.to_numpy(float), n_boot=n_boot, rng=np.random.default_rng([seed, k])))
        for k, (_, g) in enumerate(values)
    ]
    return {
        "mean": [float(v) for v in mean],
        "se": [float(v) for v in se],
        "ci95": [[float(a), float(b)] for a, b in ci],
        "n": [int(v) for v in n],
    }


def summarize_rho_regret(rows: pd.DataFrame) -> dict[str, Any]:
    """Per method and question: mean rho-regret, s.e., a 95 % percentile-bootstrap interval
    (:func:`mean_ci`) and the median."""
    out: dict[str, Any] = {"methods": {}}
    for method, g in rows.groupby("method", sort=False):
        per_q = g.groupby("question")["rho_regret"]
        ci = mean_ci(per_q)
        n = per_q.count()
        final = g[g["question"] == g["question"].max()]
        out["methods"][str(method)] = {
            "runs": int(n.iloc[0]),
            "question": [int(q) for q in per_q.mean().index],
            "rho_regret_mean": ci["mean"],
            "rho_regret_se": ci["se"],
            "rho_regret_ci95": ci["ci95"],
            "rho_regret_median": [float(v) for v in per_q.median()],
            "final_top1_found": float((final["top1_error"] == 0).mean()),
            "time_s_per_run": float(g.groupby(["unit", "seed"])["time_s"].sum().mean()),
        }
    return out
