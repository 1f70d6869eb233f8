"""A study's shareable report: one self-contained HTML file that opens without a network.

:func:`study_report` computes what the dashboard shows for a study and one respondent
(or the pooled data) and :func:`build_report` writes it as HTML:

1. the study summary (provenance, counts, attribute table);
2. the tree(s) as inline SVG (:meth:`TreeView.to_svg`) and a table of every leaf with its
   lines (utility, slopes where the tree has them) and all its items by name;
3. held-out evidence (:func:`pbo_core.evaluation.plan_accuracy`, the analysis plan's split
   and sample, the figures ``conjoint-accuracy`` prints): training and held-out accuracy
   with 95 % bootstrap CIs of the trees and the baselines (the conditional logit first
   among them), as a table and a chart;
4. the estimates of the plan's estimates model (the conditional logit) on every choice,
   the table ``python -m pbo_core.experiments estimates`` prints
   (:func:`pbo_core.explain.estimates.estimates_html`);
5. leave-one-out feature sensitivity on the plan's sample (:func:`sensitivity_table`,
   the figures ``sensitivity`` prints), table and chart;
6. the command and the package versions that reproduce it.

Charts are Vega-Lite specifications rendered to inline SVG by vl-convert (its bundled
Vega, no browser and no network); each specification is kept beside its SVG in a
``<script type="application/vnd.vegalite+json">`` block so it can be re-opened in a Vega
editor. The dashboard's "Download report" and ``python -m pbo_core.experiments report``
call the same functions.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
import platform
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pbo_core.data import Study
from pbo_core.evaluation import (
    DETECTABLE_CHANGE_PP,
    evidence_caution,
    evidence_table,
    plan_accuracy,
    plan_evidence_models,
    plan_sensitivity,
    plan_split,
    sample_text,
    sensitivity_caution,
    sensitivity_effect,
)
from pbo_core.explain import labels
from pbo_core.explain.estimates import Estimates, estimates_html, fit_estimates
from pbo_core.explain.export import OUTLINE_LEAVES, TreeView, tree_view
from pbo_core.explain.naming import item_names
from pbo_core.models.dt import DTSurrogate
from pbo_core.plan import AnalysisPlan, plan_of
from pbo_core.registry import fit_for, get
from pbo_core.splits import auto_kind

__all__ = [
    "ReportParts",
    "build_report",
    "evidence_spec",
    "leaf_spec",
    "render_chart",
    "report_command",
    "report_settings",
    "sensitivity_spec",
    "study_report",
    "versions",
]

_BASELINE = "None (baseline)"


@dataclass
class ReportParts:
    """What a report shows, computed by :func:`study_report` or by the dashboard's caches.

    ``trees`` pairs a heading with a drawable view; ``evidence`` is a
    :func:`pbo_core.evaluation.evidence_table` and ``sensitivity`` a
    :func:`sensitivity_table` (either may be empty);
    ``settings`` and ``commands`` are printed in the reproduction section.
    """

    study: Study
    respondent: Any
    trees: list[tuple[str, TreeView]]
    evidence: pd.DataFrame
    sensitivity: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    #: The plan's estimates model fitted on every choice (``None``: it could not be).
    estimates: Estimates | None = None

    @property
    def baseline(self) -> tuple[pd.DataFrame, dict[str, Any]] | None:
        """The estimates as ``(parameter table, statistics with value_of_time)``, as
        :func:`pbo_core.explain.baseline.baseline_fit` gives them."""
        if self.estimates is None:
            return None
        stats = {**self.estimates.statistics, "value_of_time": self.estimates.value_of_time}
        return self.estimates.parameters, stats


def study_report(
    study: Study,
    respondent: Any = None,
    *,
    model: str = "dt",
    fitted: Any = None,
    min_samples_split: int = 1,
    commands: Sequence[str] = (),
    plan: AnalysisPlan | None = None,
) -> ReportParts:
    """Fit the tree ``model`` (a registry name; ``fitted``: its pooled fit made earlier) of
    ``respondent`` (``None``: the first respondent of a study whose respondents made enough
    choice tasks for personal models, the pooled data otherwise) and compute the evidence
    and sensitivity tables on the study's analysis plan (``plan``, default
    :func:`pbo_core.plan.plan_of`): the figures ``conjoint-accuracy`` and ``sensitivity``
    print and the pages show."""
    plan = plan or plan_of(study)
    personal = study.data.respondent is not None and auto_kind(study)[0] == "tasks"
    if personal and respondent is None:
        respondent = study.respondents()[0]
    if not personal:
        respondent = None
    data = study.data if respondent is None else study.for_respondent(respondent)
    if model == "dt":
        shown = DTSurrogate(min_samples_split=min_samples_split).fit(data)
    else:
        shown = fit_for(model, study, respondent, fitted=fitted)
    title = (
        study.title
        + f" — {get(model).label}"
        + (f", respondent {respondent}" if respondent is not None else "")
    )
    money = labels.money_attribute(study)[0]  # the analysis plan's roles
    time = labels.time_attribute(study)[0]
    view = tree_view(
        shown, data=data, item_names=item_names(data), title=title, money=money, time=time
    )
    split = plan_split(study, plan)
    models = plan_evidence_models(split, plan, shown=model)
    summary, errors, split = plan_accuracy(study, models, plan)
    ev = evidence_table(summary, errors)
    sens = sensitivity_table(study, plan)
    try:
        est = fit_estimates(study, plan=plan)
    except (ValueError, KeyError):  # no choices to fit: the section is left out
        est = None
    settings = report_settings(min_samples_split, plan)
    settings["evidence"] = (
        f"{split.reason}; {sample_text(split)}; seed {plan.seed}, 2000 bootstrap resamples"
    )
    return ReportParts(study, respondent, [(title, view)], ev, sens, settings, list(commands), est)


def sensitivity_table(study: Study, plan: AnalysisPlan | None = None) -> pd.DataFrame:
    """Leave-one-out blocks of the plan's sensitivity models
    (:func:`pbo_core.evaluation.plan_sensitivity`) as one table with a ``method`` column;
    the split's reason and sample in ``attrs["split"]``."""
    blocks, _, split = plan_sensitivity(study, plan=plan)
    table = pd.concat(blocks.values(), ignore_index=True) if blocks else pd.DataFrame()
    table.attrs["split"] = f"{split.reason}; {sample_text(split)}"
    return table


def report_settings(min_samples_split: int, plan: AnalysisPlan) -> dict[str, Any]:
    """The settings a report prints: the tree's and the analysis plan's."""
    return {
        "tree min_samples_split": min_samples_split,
        "tree straddlers": "discard",
        "analysis plan": plan.line(),
        **{f"plan: {n.split(':', 1)[0]}": n.split(": ", 1)[-1] for n in plan.notes},
    }


def report_command(key: str, respondent: Any = None, model: str = "dt") -> str:
    """The command line that writes the same report for a registry study."""
    cmd = f"python -m pbo_core.experiments report --study {key} --model {model}"
    if respondent is not None:
        cmd += f" --respondent {respondent}"
    return cmd + f" --out report-{key}.html"


# ----------------------------------------------------------------------------- charts
def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-safe rows (NaN -> null)."""
    out = []
    for row in df.to_dict(orient="records"):
        out.append(
            {
                k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                for k, v in row.items()
            }
        )
    return out


def evidence_spec(ev: pd.DataFrame) -> dict[str, Any]:
    """Vega-Lite: held-out accuracy (95 % CI) and training accuracy per method; chance 50 %."""
    d = ev[ev["heldout"].notna()]
    rows = []
    for r in d.itertuples():
        rows.append(
            {
                "method": r.method,
                "kind": "held-out (95% CI)",
                "value": 100 * r.heldout,
                "lo": 100 * r.ci_low,
                "hi": 100 * r.ci_high,
            }
        )
        rows.append({"method": r.method, "kind": "training", "value": 100 * r.train})
    values = [v for r in rows for v in (r["value"], r.get("lo")) if v is not None]
    low = min(values, default=50.0)
    domain = [max(0.0, min(45.0, 5 * np.floor(low / 5) - 5)), 100]
    x = {"type": "quantitative", "scale": {"domain": domain}}
    y = {"field": "method", "type": "nominal", "title": None, "sort": list(d["method"])}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": "Pairwise accuracy: held-out (95% CI) vs training",
        "width": 520,
        "height": 50 * max(len(d), 1) + 30,
        "data": {"values": _records(pd.DataFrame(rows))},
        "layer": [
            {
                "transform": [{"filter": "datum.lo != null"}],
                "mark": {"type": "rule", "color": "#1f4e79", "strokeWidth": 2},
                "encoding": {"x": {"field": "lo", **x}, "x2": {"field": "hi"}, "y": y},
            },
            {
                "mark": {"type": "point", "filled": True, "size": 90},
                "encoding": {
                    "x": {"field": "value", "title": "pairwise accuracy (%)", **x},
                    "y": y,
                    "color": {
                        "field": "kind",
                        "type": "nominal",
                        "scale": {
                            "domain": ["held-out (95% CI)", "training"],
                            "range": ["#1f4e79", "#aab7c4"],
                        },
                        "legend": {"orient": "bottom", "title": None},
                    },
                    "shape": {"field": "kind", "type": "nominal", "legend": None},
                },
            },
            {
                "data": {"values": [{"x": 50.0}]},
                "mark": {"type": "rule", "color": "#c0392b", "strokeDash": [4, 3]},
                "encoding": {"x": {"field": "x", "type": "quantitative"}},
            },
        ],
    }


def sensitivity_spec(table: pd.DataFrame) -> dict[str, Any]:
    """Vega-Lite: change in test accuracy when each feature is removed, 95 % CIs where
    known; grey bars are changes inside the noise (CI contains 0)."""
    body = table[table["feature removed"] != _BASELINE].copy()
    has_ci = "delta test CI low (pp)" in body and body["delta test CI low (pp)"].notna().any()
    body["effect"] = sensitivity_effect(body)
    keep = ["feature removed", "delta test (pp)", "effect"]
    if has_ci:
        keep += ["delta test CI low (pp)", "delta test CI high (pp)"]
    order = body.sort_values("delta test (pp)")["feature removed"].tolist()
    y = {"field": "feature removed", "type": "nominal", "sort": order, "axis": {"labelLimit": 320}}
    layers: list[dict[str, Any]] = [
        {
            "mark": "bar",
            "encoding": {
                "x": {
                    "field": "delta test (pp)",
                    "type": "quantitative",
                    "title": "change in test accuracy (percentage points)",
                },
                "y": y,
                "color": {
                    "field": "effect",
                    "type": "nominal",
                    "scale": {
                        "domain": [
                            "accuracy drops",
                            "accuracy rises",
                            "within noise (CI contains 0)",
                            f"underpowered (cannot detect {DETECTABLE_CHANGE_PP:g} pp)",
                            "no drop (no CI: one split)",
                        ],
                        "range": ["#c0392b", "#2e86c1", "#bdc3c7", "#d5d8dc", "#7f8c8d"],
                    },
                    "legend": {"orient": "bottom", "title": None},
                },
            },
        },
        {
            "data": {"values": [{"x": 0.0}]},
            "mark": {"type": "rule", "color": "#333", "strokeDash": [4, 3]},
            "encoding": {"x": {"field": "x", "type": "quantitative"}},
        },
    ]
    if has_ci:
        layers.append(
            {
                "transform": [{"filter": "datum['delta test CI low (pp)'] != null"}],
                "mark": {"type": "rule", "color": "#222", "strokeWidth": 1.5},
                "encoding": {
                    "x": {"field": "delta test CI low (pp)", "type": "quantitative"},
                    "x2": {"field": "delta test CI high (pp)"},
                    "y": y,
                },
            }
        )
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": "Leave-one-out: change in test accuracy without each feature",
        "width": 520,
        "height": 40 + 24 * max(len(body), 1),
        "data": {"values": _records(body[keep])},
        "layer": layers,
    }


def leaf_spec(view: TreeView) -> dict[str, Any]:
    """Vega-Lite: each leaf's posterior utility (mean +- sd), leaves in rank order."""
    rows = []
    for n in view.nodes:
        if n.kind != "leaf":
            continue
        m = _UTILITY.search(" ".join(n.lines))
        if m is None:
            continue
        mean, sd = float(m.group(1)), float(m.group(2))
        rows.append({"leaf": n.title, "mean": mean, "lo": mean - sd, "hi": mean + sd})
    order = [r["leaf"] for r in sorted(rows, key=lambda r: -r["mean"])]
    y = {"field": "leaf", "type": "nominal", "sort": order, "title": None}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": "Leaf utilities (posterior mean ± sd, noise units)",
        "width": 520,
        "height": 30 + 18 * max(len(rows), 1),
        "data": {"values": rows},
        "layer": [
            {
                "mark": {"type": "rule", "color": "#555"},
                "encoding": {
                    "x": {"field": "lo", "type": "quantitative", "title": "utility"},
                    "x2": {"field": "hi"},
                    "y": y,
                },
            },
            {
                "mark": {"type": "point", "filled": True, "size": 60, "color": "#1f4e79"},
                "encoding": {"x": {"field": "mean", "type": "quantitative"}, "y": y},
            },
        ],
    }


_UTILITY = re.compile(r"utility ([+-]?[0-9.]+) ± ([0-9.]+)")


def render_chart(spec: Mapping[str, Any]) -> str:
    """Inline SVG of a Vega-Lite spec (vl-convert's bundled Vega; no network)."""
    import vl_convert

    # room for labels a browser's fonts draw wider than vl-convert's metrics
    spec = {"padding": {"left": 40, "right": 16, "top": 6, "bottom": 6}, **dict(spec)}
    spec["config"] = {"legend": {"direction": "vertical"}, **dict(spec.get("config", {}))}
    svg = str(vl_convert.vegalite_to_svg(spec))
    return svg[svg.index("<svg") :] if "<svg" in svg else svg


def versions() -> dict[str, str]:
    """Versions of Python, this package and the libraries that produced the numbers (no
    host details: the report is shared beyond the machine that built it)."""
    from importlib import metadata

    import scipy

    try:
        own = metadata.version("dt-pbo-explorer")
    except metadata.PackageNotFoundError:  # run from a checkout without installing
        own = "not installed (source checkout)"
    out = {
        "dt-pbo-explorer": own,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scipy": scipy.__version__,
    }  # no platform string: a report names no host details (kernel, distribution)
    try:
        import vl_convert

        out["vl-convert-python"] = vl_convert.__version__
        out["vega-lite (bundled)"] = str(vl_convert.get_vegalite_versions()[-1])
    except ImportError:  # charts then fail to render; the listing still works
        pass
    return out


# ----------------------------------------------------------------------------- HTML
_CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:24px auto;max-width:1200px;color:#222;
line-height:1.4;padding:0 16px}
h1{font-size:24px;margin-bottom:4px}h2{font-size:19px;margin-top:32px;border-bottom:1px solid
#ccc;padding-bottom:4px}h3{font-size:15px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f4f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.tree{overflow:auto;border:1px solid #ddd;max-height:900px;background:#fff}
.chart{margin:8px 0 16px}.muted{color:#666;font-size:13px}
code,pre{background:#f5f5f5;padding:1px 4px;font-size:12.5px}pre{padding:8px;overflow:auto}
.metrics span{display:inline-block;margin-right:28px}.metrics b{font-size:20px}
"""


def _table(df: pd.DataFrame, fmt: Mapping[str, str] | None = None) -> str:
    fmt = dict(fmt or {})
    esc = html.escape
    head = "".join(f"<th>{esc(str(c))}</th>" for c in df.columns)
    body = []
    for row in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, row, strict=True):
            if isinstance(v, (float, np.floating)):
                txt = "" if not np.isfinite(v) else format(float(v), fmt.get(c, ".3g"))
                cells.append(f'<td class="num">{esc(txt)}</td>')
            elif isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                cells.append(f'<td class="num">{int(v)}</td>')
            else:
                cells.append(f"<td>{esc('' if v is None else str(v))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _chart(spec: dict[str, Any], name: str) -> str:
    spec_json = json.dumps(spec).replace("</", "<\\/")
    return (
        f'<div class="chart" data-chart="{html.escape(name)}">{render_chart(spec)}'
        f'<script type="application/vnd.vegalite+json" data-chart="{html.escape(name)}">'
        f"{spec_json}</script></div>"
    )


def _leaf_table(view: TreeView) -> pd.DataFrame:
    rows = []
    for n in view.nodes:
        if n.kind == "leaf":
            rows.append(
                {
                    "leaf": n.title,
                    "summary": "; ".join(n.lines),
                    "items": len(n.items),
                    "item names (observed wins/losses)": "; ".join(n.items),
                }
            )
    return pd.DataFrame(rows)


def build_report(parts: ReportParts) -> str:
    """The self-contained HTML document of a report (no external resources)."""
    esc = html.escape
    study = parts.study
    counts = study.counts()
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    who = f"respondent {parts.respondent}" if parts.respondent is not None else "the pooled data"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>DT-PBO report: {esc(study.title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{esc(study.title)}</h1>",
        f'<p class="muted">DT-PBO Explorer report on {esc(who)} (study key '
        f"<code>{esc(study.key)}</code>), written {now}. Self-contained: it needs no network "
        "and no other file.</p>",
        '<h2 id="summary">Study</h2>',
        f"<p>{esc(study.description)}</p>" if study.description else "",
        '<p class="metrics">'
        + "".join(
            f"<span>{esc(k.capitalize())}<br><b>{v:,}</b></span>"
            for k, v in counts.items()
            if k in ("respondents", "items", "comparisons")
        )
        + "</p>",
        "<ul>"
        + "".join(
            f"<li><b>{k}:</b> {esc(v or '—')}</li>"
            for k, v in (
                ("Source", study.source),
                ("Citation", study.citation),
                ("Licence", study.license),
            )
        )
        + "</ul>",
        "<h3>Attributes</h3>",
        _table(labels.attribute_table(study.schema)),
    ]
    out.append('<h2 id="tree">Tree</h2>')
    out.append(
        '<p class="muted">The decision tree DT-PBO learns from the comparisons of '
        f"{esc(who)}. Leaves are numbered in rank order (leaf 1 is the best) and show the "
        "posterior utility (mean ± sd, in units of the comparison noise), their item count "
        "and an example item (linear leaves: the value of time and the slopes that set the "
        "leaf apart; grey italics: the 95% CI includes 0). Hover a box for its full text; "
        "every leaf's items are in the table below.</p>"
    )
    for heading, view in parts.trees:
        n_leaves = sum(1 for n in view.nodes if n.kind == "leaf")
        out.append(f"<h3>{esc(heading)} ({n_leaves} leaves)</h3>")
        style = "outline" if n_leaves > OUTLINE_LEAVES else "tree"  # legible at any size
        out.append(f'<div class="tree" data-tree="{esc(heading)}">{view.to_svg(style=style)}</div>')
        out.append(_chart(leaf_spec(view), "leaf utilities"))
        out.append("<h3>Every leaf and its items</h3>")
        out.append(_table(_leaf_table(view)))
    out.append('<h2 id="evidence">Held-out evidence</h2>')
    ev = parts.evidence
    if ev is None or ev.empty:
        out.append("<p>Too few choice tasks to hold any out.</p>")
    else:
        how = str(parts.settings.get("evidence", "cross-validation"))
        out.append(
            '<p class="muted">Each comparison predicted by models fitted without it '
            f"({esc(how)}), the same folds for every model. The CI is a 95% percentile "
            "bootstrap over respondents (over the held-out comparisons of a single "
            "respondent or of data without respondents); 50% is chance (dashed red "
            "line).</p>"
        )
        out.append(_chart(evidence_spec(ev), "held-out evidence"))
        unit = "respondents" if parts.study.data.respondent is not None else "comparisons"
        caution = evidence_caution(ev, unit)
        if caution:
            out.append(f'<p class="caution"><b>{esc(caution)}</b></p>')
        out.append(_table(labels.evidence_display(ev, unit=unit)))
    if parts.estimates is not None:
        est = parts.estimates
        stats = est.statistics
        out.append(f'<h2 id="estimates">Estimates: {esc(est.label)}</h2>')
        who = f" of {stats['n_respondents']:,} respondents" if stats.get("n_respondents") else ""
        out.append(
            f'<p class="muted">The analysis plan\'s estimates model (<code>{esc(est.model)}'
            f"</code>) fitted on all {stats['n_choices']:,} choices{who}: the table "
            f"<code>python -m pbo_core.experiments estimates --study {esc(study.key)}</code> "
            "prints.</p>"
        )
        out.append(estimates_html(est))
    out.append('<h2 id="sensitivity">Feature sensitivity (leave one out)</h2>')
    sens = parts.sensitivity
    if sens is None or sens.empty:
        out.append("<p>No respondent has enough comparisons for a hold-out split.</p>")
    else:
        n_resp = int(sens["respondents"].iloc[0]) if "respondents" in sens else 1
        first = sens[sens["method"] == sens["method"].iloc[0]] if "method" in sens else sens
        out.append(
            '<p class="muted">Each model refitted without each feature in turn, pairwise '
            f"accuracy on held-out comparisons ({esc(str(sens.attrs.get('split', '')))}), "
            f"averaged over {n_resp} {'respondent' if n_resp == 1 else 'respondents'} "
            "(95% bootstrap CI over respondents where there are several; grey bars: the CI "
            "contains 0; light grey: it contains 0 and the sample could not detect "
            f"{DETECTABLE_CHANGE_PP:g} points). The chart shows the first model; the table "
            "every model.</p>"
        )
        caution = sensitivity_caution(first)
        if caution:
            out.append(f'<p class="caution"><b>{esc(caution)}</b></p>')
        out.append(_chart(sensitivity_spec(first), "leave-one-out"))
        cols = [c for c in sens.columns if c != "respondents"]
        out.append(_table(sens[cols], {c: "+.1f" if "delta" in c else ".1f" for c in cols}))
    out.append('<h2 id="reproduce">Reproduce</h2>')
    if parts.commands:
        out.append("<pre>" + esc("\n".join(parts.commands)) + "</pre>")
    if parts.settings:
        out.append(
            _table(
                pd.DataFrame(
                    {
                        "setting": list(parts.settings),
                        "value": [str(v) for v in parts.settings.values()],
                    }
                )
            )
        )
    v = versions()
    out.append(_table(pd.DataFrame({"package": list(v), "version": list(v.values())})))
    out.append("</body></html>")
    return "\n".join(x for x in out if x)
