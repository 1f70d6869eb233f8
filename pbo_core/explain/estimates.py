"""The econometrician's estimates table: one model fitted on every choice, as Biogeme prints it.

:func:`fit_estimates` fits the analysis plan's **estimates model** (``AnalysisPlan.estimates``,
the conditional logit ``mnl`` by default; any registry model with ``coef_table()`` and
``fit_statistics()`` with the conditional logit's column and key names,
:func:`pbo_core.registry.reports_estimates`) on every choice of a study and returns an
:class:`Estimates`: what ``python -m pbo_core.experiments estimates``, the report and the
Tree explorer show.

Per parameter ``k`` (estimate ``b_k``): the classical standard error (inverse Hessian),
the robust one (Biogeme's sandwich, one score per choice), the robust

.. math::

    t_k = b_k / \\mathrm{se}^{rob}_k, \\qquad p_k = 2\\,\\Phi(-|t_k|),              \\qquad (1)

and beside them the cluster-robust error by respondent with its own ``t`` and ``p``.
Then the fit: LL(0) (equal shares, ``-sum_s log |C_s|``), LL(beta), the likelihood-ratio
statistic ``-2 (LL(0) - LL(beta))``, rho² ``= 1 - LL(beta)/LL(0)``, rho-bar² ``= 1 -
(LL(beta) - K)/LL(0)``, AIC ``= 2K - 2 LL(beta)``, BIC ``= K log N - 2 LL(beta)``, the
numbers of choices ``N``, respondents and parameters ``K``, and whether a penalty was used
and why (:mod:`pbo_core.models.mnl`: maximum likelihood unless asked or not identified).
Then the **trade-offs** of the attribute slopes: the value of time and what one unit of
each other numeric attribute is worth in money, with Fieller intervals from the
cluster-robust covariance -- the trees' own :func:`pbo_core.explain.labels.tradeoffs`,
applied to the logit's one set of slopes -- and, for an attribute in the money
attribute's own unit (operating vs installation cost), the **money-to-money** ratio
``b_x / b_p`` and its reciprocal ``b_p / b_x``, the implied discount rate when ``x`` recurs
every period and the money attribute is paid once.

Exports live here, apart from the models (as scikit-learn's ``export_text``):
:func:`estimates_text` (the command's table), :func:`estimates_json` (its ``--json``),
:func:`estimates_csv`, :func:`estimates_latex` and :func:`estimates_html` (the same
numbers; the report embeds the HTML).
"""

from __future__ import annotations

import dataclasses
import html
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtr

from pbo_core.data import DataValidationError, Schema, Study
from pbo_core.explain import labels
from pbo_core.plan import AnalysisPlan, plan_of
from pbo_core.registry import MODELS, estimates_models, get, make_for, reports_estimates

__all__ = [
    "PARAMETER_COLUMNS",
    "Estimates",
    "estimates_csv",
    "estimates_html",
    "estimates_json",
    "estimates_latex",
    "estimates_table",
    "estimates_text",
    "estimation_text",
    "fit_estimates",
    "model_tradeoffs",
    "money_ratios",
    "parameter_table",
    "statistic_rows",
    "tradeoff_lines",
]

#: The columns of :attr:`Estimates.parameters`, in order.
PARAMETER_COLUMNS = (
    "parameter",
    "label",
    "kind",
    "estimate",
    "std_err",
    "robust_std_err",
    "robust_t",
    "robust_p",
    "cluster_std_err",
    "cluster_t",
    "cluster_p",
    "unit",
)

#: Headings of the parameter columns in the text, CSV, LaTeX and HTML exports (Biogeme's).
_HEAD = {
    "parameter": "Parameter",
    "estimate": "Value",
    "std_err": "Std err",
    "robust_std_err": "Rob. Std err",
    "robust_t": "Rob. t-test",
    "robust_p": "Rob. p-value",
    "cluster_std_err": "Clust. Std err",
    "cluster_t": "Clust. t-test",
    "cluster_p": "Clust. p-value",
    "unit": "Unit",
}


@dataclass(frozen=True)
class Estimates:
    """One model's estimates on every choice of a study (see the module doc).

    Attributes
    ----------
    model, label
        The registry name and label of the model.
    study, title
        The study's key and title.
    parameters
        One row per parameter, columns :data:`PARAMETER_COLUMNS`.
    statistics
        ``loglik_null`` (LL(0)), ``loglik`` (LL(beta)), ``lr_statistic``, ``rho2``,
        ``rho2_bar``, ``aic``, ``bic``, ``n_choices``, ``n_respondents``,
        ``n_parameters``, ``penalty`` (``0``: none), ``penalty_reason``, ``converged``.
    tradeoffs
        :func:`pbo_core.explain.labels.tradeoff_table` of the slopes (overall), empty
        without a money attribute; plus ``money_ratios`` (:func:`money_ratios`).
    value_of_time
        The plan's value of time as the accuracy command's JSON carries it (``text``,
        ``estimate``, ``ci95``, ``unit``, ``money``, ``time``), or ``None``.
    plan
        The analysis plan (:meth:`~pbo_core.plan.AnalysisPlan.to_dict`).
    """

    model: str
    label: str
    study: str
    title: str
    parameters: pd.DataFrame
    statistics: dict[str, Any]
    tradeoffs: pd.DataFrame = field(default_factory=pd.DataFrame)
    money_ratios: list[dict[str, Any]] = field(default_factory=list)
    value_of_time: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None

    @property
    def estimation(self) -> str:
        """How the model was estimated, in one sentence (:func:`estimation_text`)."""
        return estimation_text(self.statistics)


# ----------------------------------------------------------------------------- building
def estimation_text(stats: dict[str, Any]) -> str:
    """``"Maximum likelihood (no penalty)."`` or ``"Penalised: ridge strength 0.1 (reason).
    Standard errors are those of the penalised fit (approximate)."`` from fit statistics
    (``penalty``, ``penalty_reason``; ``alpha`` for a model that names it so)."""
    pen = stats.get("penalty", stats.get("alpha", 0.0))
    try:
        pen = float(pen or 0.0)
    except (TypeError, ValueError):
        pen = 0.0
    text = "Maximum likelihood (no penalty)."
    if pen > 0:
        why = str(stats.get("penalty_reason") or "asked")
        text = (
            f"Penalised: ridge strength {pen:g} ({why}). Standard errors are those of the "
            "penalised fit (approximate)."
        )
    if stats.get("converged") is False:
        text += " The fit did not converge: the estimates are not reliable."
    return text


def _tp(coef: np.ndarray, se: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``t`` and the two-sided normal ``p`` of Eq. 1 (NaN where the error is 0 or unknown)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(np.isfinite(se) & (se > 0), coef / se, np.nan)
    return t, 2.0 * ndtr(-np.abs(t))


def _column(table: pd.DataFrame, name: str) -> np.ndarray:
    if name in table:
        return pd.to_numeric(table[name], errors="coerce").to_numpy(float)
    return np.full(len(table), np.nan)


def parameter_table(model: Any) -> pd.DataFrame:
    """The parameter rows (:data:`PARAMETER_COLUMNS`) of a fitted model's ``coef_table()``
    (the conditional logit's columns: ``name``, ``feature``, ``kind``, ``coef``, ``se``,
    ``robust_se``, ``cluster_se``, ``unit``)."""
    t = model.coef_table()
    coef = _column(t, "coef")
    rob = _column(t, "robust_se")
    clu = _column(t, "cluster_se")
    rt, rp = _tp(coef, rob)
    ct, cp = _tp(coef, clu)
    n = len(t)

    def text(col: str, default: str = "") -> list[str]:
        return [str(v) for v in t[col]] if col in t else [default] * n

    return pd.DataFrame(
        {
            "parameter": text("name"),
            "label": text("feature") if "feature" in t else text("name"),
            "kind": text("kind", "parameter"),
            "estimate": coef,
            "std_err": _column(t, "se"),
            "robust_std_err": rob,
            "robust_t": rt,
            "robust_p": rp,
            "cluster_std_err": clu,
            "cluster_t": ct,
            "cluster_p": cp,
            "unit": text("unit"),
        },
        columns=list(PARAMETER_COLUMNS),
    )


def _statistics(model: Any) -> dict[str, Any]:
    """The fit statistics of the table (missing ones derived where they can be)."""
    s = dict(model.fit_statistics())
    ll, ll0 = s.get("loglik"), s.get("loglik_null")
    k = s.get("n_parameters", len(getattr(model, "coef_", [])))
    n = s.get("n_choices")
    out: dict[str, Any] = {
        "loglik_null": ll0,
        "loglik": ll,
        "lr_statistic": None if ll is None or ll0 is None else -2.0 * (ll0 - ll),
        "rho2": s.get("rho2"),
        "rho2_bar": s.get("rho2_bar"),
        "aic": s.get("aic", None if ll is None else 2.0 * k - 2.0 * ll),
        "bic": s.get("bic", None if ll is None or not n else k * math.log(n) - 2.0 * ll),
        "n_choices": n,
        "n_respondents": s.get("n_respondents"),
        "n_parameters": k,
        "penalty": float(s.get("penalty", s.get("alpha", 0.0)) or 0.0),
        "penalty_reason": str(s.get("penalty_reason", "") or ""),
        "converged": s.get("converged"),
    }
    out["estimation"] = estimation_text(out)
    for key, v in s.items():  # a model's own extras (e.g. draws of a mixed logit) kept
        out.setdefault(key, v)
    return {k: (float(v) if isinstance(v, np.floating) else v) for k, v in out.items()}


class _OneLeaf:
    """A model with one set of attribute slopes seen as a one-leaf linear-leaf model, so
    the trees' trade-offs (:func:`pbo_core.explain.labels.tradeoffs`) read it unchanged."""

    def __init__(self, names: Sequence[str], mean: np.ndarray, cov: np.ndarray, schema: Schema):
        self.slope_columns_ = list(names)
        self.schema_ = schema
        self._mean = np.asarray(mean, dtype=float)
        self._cov = np.asarray(cov, dtype=float)
        self.n_leaves_ = 1
        self.item_leaf_ = np.zeros(1, dtype=np.int64)

    def slope_posterior(
        self, respondent: Any = None, weights: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        if weights is not None:
            return self._mean, self._cov
        return self._mean[None], self._cov[None]


def _slopes(model: Any, schema: Schema) -> _OneLeaf | None:
    """The attribute slopes of a fitted model with their covariance (cluster-robust where
    the model has it), or ``None`` when it exposes no covariance."""
    t = model.coef_table()
    if "kind" not in t or "name" not in t:
        return None
    cov = next(
        (
            np.asarray(getattr(model, a))
            for a in ("cluster_cov_", "robust_cov_", "coef_cov_")
            if getattr(model, a, None) is not None
        ),
        None,
    )
    coef = np.asarray(getattr(model, "coef_", t["coef"]), dtype=float)
    if cov is None or cov.shape != (len(coef), len(coef)) or len(coef) != len(t):
        return None
    idx = [i for i, k in enumerate(t["kind"]) if k == "attribute" and t["name"][i] in schema.names]
    if not idx:
        return None
    names = [str(t["name"][i]) for i in idx]
    return _OneLeaf(names, coef[idx], cov[np.ix_(idx, idx)], schema)


def model_tradeoffs(
    model: Any, schema: Schema, money: str | None, time: str | None
) -> list[labels.TradeOff]:
    """The overall trade-offs of a fitted model with one coefficient per attribute (the
    conditional logit): :func:`pbo_core.explain.labels.tradeoffs`, the trees' own, on the
    model's slopes and their cluster-robust covariance. Empty without a money attribute."""
    leaf = _slopes(model, getattr(model, "schema_", None) or schema)
    if leaf is None or money is None:
        return []
    return [t for t in labels.tradeoffs(leaf, money=money, time=time) if t.leaf is None]


def money_ratios(model: Any, schema: Schema, money: str | None) -> list[dict[str, Any]]:
    """Money-to-money trade-offs: for every numeric attribute ``x`` in the money attribute
    ``p``'s own unit (operating vs installation cost), the ratio ``b_x / b_p`` (one unit of
    ``x`` is worth that many units of ``p`` at equal utility) and its reciprocal ``b_p /
    b_x`` (the implied discount rate when ``x`` recurs every period for ever and ``p`` is
    paid once), each with its Fieller 95 % interval (None when not identified: the
    denominator's slope is not clearly nonzero)."""
    schema = getattr(model, "schema_", None) or schema
    leaf = _slopes(model, schema)
    if leaf is None or money is None or money not in leaf.slope_columns_:
        return []
    unit = schema[money].unit.strip()
    if not unit:
        return []
    p = leaf.slope_columns_.index(money)
    out = []
    for j, name in enumerate(leaf.slope_columns_):
        f = schema[name]
        if j == p or f.kind != "numeric" or f.unit.strip() != unit:
            continue
        V = leaf._cov[np.ix_([j, p], [j, p])]
        ratio = labels.fieller_ratio(leaf._mean[j], leaf._mean[p], V)
        rate = labels.fieller_ratio(leaf._mean[p], leaf._mean[j], V[::-1, ::-1])
        why = labels.money_sign_reason(
            float(leaf._mean[p]), float(V[1, 1]), schema[money].display
        ) or labels.money_sign_reason(float(leaf._mean[j]), float(V[0, 0]), f.display)
        if why:  # a money slope of the wrong sign prices nothing
            ratio, rate = ratio.refused(why), rate.refused(why)

        def doc(r: labels.Ratio) -> dict[str, Any]:
            return {
                "estimate": float(r.estimate) if r.identified else None,
                "ci95": [float(r.low), float(r.high)] if r.identified else None,
                "identified": bool(r.identified),
                "reason": r.reason,
            }

        out.append(
            {
                "attribute": name,
                "money": money,
                "unit": unit,
                "ratio": doc(ratio),
                "implied_rate": doc(rate),
                "text": (
                    f"One {_singular(unit)} of {f.display} is worth "
                    f"{_ratio_words(ratio)} {unit} of {schema[money].display} at equal "
                    f"utility; implied discount rate (if {f.display} recurs every period and "
                    f"{schema[money].display} is paid once) {_ratio_words(rate)}"
                ),
            }
        )
    return out


def _singular(unit: str) -> str:
    """A unit in the singular (``"dollars"`` -> ``"dollar"``)."""
    return labels.singular_unit(unit) or unit


def _ratio_words(r: labels.Ratio) -> str:
    if r.reason:
        return f"not shown ({r.reason})"
    if not r.identified:
        return f"{labels.NOT_IDENTIFIED} (the denominator's 95% CI includes 0)"
    est, ci = labels.ci_text(r.estimate, r.low, r.high)
    return f"{est} [95% CI {ci[1:]}"


def _value_of_time(model: Any, money: str | None, time: str | None) -> dict[str, Any] | None:
    vot = labels.coefficient_value_of_time(model, money, time)
    if vot is None:
        return None
    return {
        "text": vot.text(),
        "estimate": vot.ratio.estimate if vot.ratio.identified else None,
        "ci95": [vot.ratio.low, vot.ratio.high] if vot.ratio.identified else None,
        "unit": vot.unit,
        "money": vot.money,
        "time": vot.attribute,
    }


def estimates_table(
    model: Any, *, name: str, study: Study, plan: AnalysisPlan | None = None
) -> Estimates:
    """The :class:`Estimates` of ``model`` (registry entry ``name``, fitted on ``study``)
    under ``plan`` (default the study's): parameters, statistics and trade-offs."""
    plan = plan or plan_of(study)
    money = plan.money.attribute if plan.money else None
    time = plan.time.attribute if plan.time else None
    offs = model_tradeoffs(model, study.schema, money, time)
    return Estimates(
        model=name,
        label=get(name).label if name in MODELS else name,
        study=study.key,
        title=study.title,
        parameters=parameter_table(model),
        statistics=_statistics(model),
        tradeoffs=labels.tradeoff_table(offs) if offs else pd.DataFrame(),
        money_ratios=money_ratios(model, study.schema, money),
        value_of_time=_value_of_time(model, money, time),
        plan=plan.to_dict(),
    )


def fit_estimates(
    study: Study,
    *,
    plan: AnalysisPlan | None = None,
    model: str | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> Estimates:
    """The estimates model of ``plan`` (default the study's; ``model`` overrides its
    ``estimates``) fitted on every choice of ``study`` with the plan's parameters (the
    conditional logit's alternatives, case-specific variables and penalty).

    Raises
    ------
    DataValidationError
        If the model has no estimates table (one sentence naming the ones that have).
    """
    plan = plan or plan_of(study)
    name = model or plan.estimates
    if name in MODELS and not reports_estimates(name):
        raise DataValidationError(
            f"{name} ({get(name).label}) has no coefficient table with fit statistics, so it "
            f"has no estimates; the models that have: {', '.join(estimates_models())}"
        )
    get(name)  # an unknown name: a KeyError naming the known ones
    if plan is not plan_of(study):
        study = dataclasses.replace(study, plan=plan)
    if progress is not None:
        progress(0.0, f"fitting {get(name).label} on {study.data.n_pairs:,} comparisons")
    fitted = make_for(name, study).fit(study.data)
    return estimates_table(fitted, name=name, study=study, plan=plan)


# ----------------------------------------------------------------------------- exports
def _num(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    return format(float(v), spec)


#: Number formats of the exports: 4+ significant digits (Biogeme prints 3-4 decimals).
_FMT = {
    "estimate": ".7g",
    "std_err": ".5g",
    "robust_std_err": ".5g",
    "robust_t": ".4g",
    "robust_p": ".4g",
    "cluster_std_err": ".5g",
    "cluster_t": ".4g",
    "cluster_p": ".4g",
}


def statistic_rows(est: Estimates) -> list[tuple[str, str]]:
    """The fit statistics as ``(label, text)`` rows, as every export prints them."""
    s = est.statistics
    resp = s.get("n_respondents")
    rows = [
        ("Number of estimated parameters", _num(s.get("n_parameters"), "d")),
        ("Number of choices (sample size)", _num(s.get("n_choices"), "d")),
        ("Respondents", _num(resp, "d") if resp else "not recorded"),
        ("Init log likelihood LL(0) (equal shares)", _num(s.get("loglik_null"), ".3f")),
        ("Final log likelihood LL(beta)", _num(s.get("loglik"), ".3f")),
        ("Likelihood ratio test -2 (LL(0) - LL(beta))", _num(s.get("lr_statistic"), ".3f")),
        ("Rho-square", _num(s.get("rho2"), ".4f")),
        ("Rho-square-bar", _num(s.get("rho2_bar"), ".4f")),
        ("Akaike Information Criterion", _num(s.get("aic"), ".3f")),
        ("Bayesian Information Criterion", _num(s.get("bic"), ".3f")),
        ("Penalty", _penalty_words(s)),
    ]
    return rows


def _penalty_words(s: dict[str, Any]) -> str:
    pen = float(s.get("penalty") or 0.0)
    if pen <= 0:
        return "none (maximum likelihood)"
    return f"ridge strength {pen:g}: {s.get('penalty_reason') or 'asked'}"


def tradeoff_lines(est: Estimates) -> list[str]:
    """The trade-offs in words, one line each: the value of time (the text the accuracy
    command's JSON carries), what one unit of each other attribute is worth in money, the
    money-to-money ratios."""
    out = [est.value_of_time["text"]] if est.value_of_time else []
    for r in est.tradeoffs.to_dict(orient="records") if not est.tradeoffs.empty else []:
        if r["trade-off"] == "value of time" and est.value_of_time:
            continue
        what = str(r["trade-off"])
        out.append(
            f"{what[:1].upper() + what[1:]} (money: {r['money attribute']}): {r['value [95% CI]']}"
        )
    for m in est.money_ratios:
        out.append(m["text"])
    return out


def estimates_text(est: Estimates) -> str:
    """The table as the command prints it (fixed width; Biogeme's headings)."""
    cols = ["parameter", *_FMT, "unit"]
    cells = [[_HEAD[c] for c in cols]]
    for r in est.parameters.to_dict(orient="records"):
        cells.append(
            [str(r["parameter"])] + [_num(r[c], _FMT[c]) for c in _FMT] + [str(r["unit"] or "")]
        )
    width = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    lines = [
        f"Estimates of {est.label} ({est.model}) on {est.title} ({est.study})",
        est.estimation,
        "Robust errors: the sandwich with one score per choice (Biogeme's); clustered: one "
        "cluster per respondent. p-values two-sided, normal.",
        "",
    ]
    for k, row in enumerate(cells):
        lines.append(
            "  ".join(
                (c.ljust(width[i]) if i in (0, len(cols) - 1) else c.rjust(width[i]))
                for i, c in enumerate(row)
            ).rstrip()
        )
        if k == 0:
            lines.append("-" * len(lines[-1]))
    lines.append("")
    stats = statistic_rows(est)
    w = max(len(a) for a, _ in stats)
    lines += [f"{a + ':':<{w + 1}}  {b}" for a, b in stats]
    offs = tradeoff_lines(est)
    if offs:
        lines += ["", "Trade-offs (95% Fieller intervals, cluster-robust covariance):"]
        lines += [f"  {t}" for t in offs]
    if est.plan:
        lines += ["", AnalysisPlan.from_dict(est.plan).line()]
    return "\n".join(lines)


def estimates_json(est: Estimates) -> dict[str, Any]:
    """The table as JSON (the command's ``--json``): ``model``, ``label``, ``study``,
    ``estimation``, ``parameters`` (records, :data:`PARAMETER_COLUMNS`), ``statistics``,
    ``tradeoffs``, ``money_ratios``, ``value_of_time`` and the ``plan``."""

    def clean(v: Any) -> Any:
        if isinstance(v, (np.floating, float)):
            return float(v) if math.isfinite(float(v)) else None
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.bool_):
            return bool(v)
        return v

    def records(df: pd.DataFrame) -> list[dict[str, Any]]:
        return [{k: clean(v) for k, v in r.items()} for r in df.to_dict(orient="records")]

    return {
        "model": est.model,
        "label": est.label,
        "study": est.study,
        "title": est.title,
        "estimation": est.estimation,
        "parameters": records(est.parameters),
        "statistics": {k: clean(v) for k, v in est.statistics.items()},
        "tradeoffs": records(est.tradeoffs) if not est.tradeoffs.empty else [],
        "money_ratios": est.money_ratios,
        "value_of_time": est.value_of_time,
        "plan": est.plan,
    }


def estimates_csv(est: Estimates, *, text_cell: Callable[[str], str] | None = None) -> str:
    """The same numbers as CSV: the parameter table (full precision), an empty line, then
    ``statistic,value`` rows (the statistics as printed). ``text_cell`` rewrites every text
    cell (a dashboard download neutralises spreadsheet formulas with it)."""
    params = est.parameters.copy()
    stats = pd.DataFrame(statistic_rows(est), columns=["statistic", "value"])
    if text_cell is not None:
        for frame in (params, stats):
            for col in frame.columns:
                if frame[col].dtype == object:
                    frame[col] = frame[col].map(lambda v: text_cell(str(v)))
    buf = io.StringIO()
    params.to_csv(buf, index=False, float_format="%.10g", lineterminator="\n")
    buf.write("\nstatistic,value\n")
    stats.to_csv(buf, index=False, header=False, lineterminator="\n")
    return buf.getvalue()


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _tex(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(c, c) for c in str(text))


def estimates_latex(est: Estimates) -> str:
    """The same numbers as a LaTeX fragment (booktabs): the parameter table and the fit
    statistics."""
    cols = ["parameter", *_FMT]
    out = [
        f"% Estimates of {_tex(est.label)} ({_tex(est.model)}) on {_tex(est.title)}",
        "\\begin{tabular}{l" + "r" * len(_FMT) + "}",
        "\\toprule",
        " & ".join(_tex(_HEAD[c]) for c in cols) + " \\\\",
        "\\midrule",
    ]
    for r in est.parameters.to_dict(orient="records"):
        out.append(
            " & ".join([_tex(r["parameter"])] + [_tex(_num(r[c], _FMT[c])) for c in _FMT]) + " \\\\"
        )
    out += ["\\bottomrule", "\\end{tabular}", "", "\\begin{tabular}{lr}", "\\toprule"]
    out += [f"{_tex(a)} & {_tex(b)} \\\\" for a, b in statistic_rows(est)]
    out += ["\\bottomrule", "\\end{tabular}", f"% {_tex(est.estimation)}"]
    return "\n".join(out) + "\n"


def estimates_html(est: Estimates, *, standalone: bool = False) -> str:
    """The same numbers as HTML tables (a fragment the report embeds; ``standalone``: a
    whole page)."""
    esc = html.escape
    cols = ["parameter", *_FMT, "unit"]
    head = "".join(f"<th>{esc(_HEAD[c])}</th>" for c in cols)
    body = []
    for r in est.parameters.to_dict(orient="records"):
        cells = [f"<td>{esc(str(r['parameter']))}</td>"]
        cells += [f'<td class="num">{esc(_num(r[c], _FMT[c]))}</td>' for c in _FMT]
        cells.append(f"<td>{esc(str(r['unit'] or ''))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    stats = "".join(
        f'<tr><th>{esc(a)}</th><td class="num">{esc(b)}</td></tr>' for a, b in statistic_rows(est)
    )
    offs = tradeoff_lines(est)
    parts = [
        f'<p class="muted">{esc(est.estimation)} Robust errors: the sandwich with one score '
        "per choice (Biogeme's); clustered: one cluster per respondent.</p>",
        f'<table data-table="estimates"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>",
        f'<table data-table="fit-statistics"><tbody>{stats}</tbody></table>',
    ]
    if offs:
        parts.append(
            "<p>Trade-offs (95% Fieller intervals, cluster-robust covariance):</p><ul>"
            + "".join(f"<li>{esc(t)}</li>" for t in offs)
            + "</ul>"
        )
    fragment = "\n".join(parts)
    if not standalone:
        return fragment
    title = f"Estimates of {est.label} on {est.title}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>table{{border-collapse:collapse}}"
        "th,td{border:1px solid #ccc;padding:3px 7px}td.num{text-align:right}</style>"
        f"</head><body><h1>{esc(title)}</h1>\n{fragment}\n</body></html>\n"
    )
