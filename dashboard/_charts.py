"""Altair chart builders (pure functions of tables; every dashboard chart is Altair)."""

from __future__ import annotations

import textwrap
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from pbo_core.evaluation import DETECTABLE_CHANGE_PP, sensitivity_effect

alt.data_transformers.disable_max_rows()


def band_chart(
    summary: pd.DataFrame,
    *,
    x: str,
    color: str,
    x_title: str,
    y_title: str,
    log_y: bool = False,
    title: str = "",
    height: int = 320,
) -> alt.LayerChart:
    """Mean line with a mean +- s.e. band per ``color`` group.

    ``summary`` has columns ``x``, ``color``, ``mean``, ``lo``, ``hi`` (see
    :func:`dashboard._services.mean_se`).
    """
    data = summary.copy()
    if log_y:
        floor = (
            float(data.loc[data["mean"] > 0, "mean"].min()) if (data["mean"] > 0).any() else 1e-9
        )
        for c in ("mean", "lo", "hi"):
            data[c] = data[c].clip(lower=floor / 10)
    scale = alt.Scale(type="log") if log_y else alt.Scale(zero=False)
    # one colour scale for bands, lines and points; the legend draws stroke swatches at
    # full opacity (merged from the layers, it showed the faint band colour before)
    legend = alt.Legend(symbolType="stroke", symbolStrokeWidth=3, symbolOpacity=1, labelLimit=320)
    colour = alt.Color(
        f"{color}:N", title=color, scale=alt.Scale(scheme="tableau10"), legend=legend
    )
    base = alt.Chart(data).encode(x=alt.X(f"{x}:Q", title=x_title), color=colour)
    band = base.mark_area(opacity=0.2).encode(
        y=alt.Y("lo:Q", title=axis_title(y_title), scale=scale), y2="hi:Q"
    )
    line = base.mark_line().encode(
        y=alt.Y("mean:Q", title=axis_title(y_title), scale=scale),
        tooltip=[
            alt.Tooltip(f"{color}:N"),
            alt.Tooltip(f"{x}:Q"),
            alt.Tooltip("mean:Q", format=".4g"),
            alt.Tooltip("lo:Q", title="mean - s.e.", format=".4g"),
            alt.Tooltip("hi:Q", title="mean + s.e.", format=".4g"),
            alt.Tooltip("n:Q", title="runs"),
        ],
    )
    layers = [band, line]
    if len(data) <= 60:  # few points: mark them, in the lines' colours
        layers.append(base.mark_point(filled=True, size=30).encode(y=alt.Y("mean:Q", scale=scale)))
    return alt.layer(*layers).properties(title=title, height=height, autosize=FIT_WIDTH)


#: Fit the page's width and keep the chart's own height: Streamlit's default autosize
#: ("fit") squeezes axes, their titles and the legend into ``height`` as well, which left
#: a few pixels for the marks of short charts (4 bars in ~30 px).
FIT_WIDTH = alt.AutoSizeParams(type="fit-x", contains="padding")


def axis_title(text: str, width: int = 32) -> str | list[str]:
    """An axis title broken into lines of at most ``width`` characters, so a long title
    is not cut at the chart's edge (Vega-Lite draws a list as lines)."""
    lines = textwrap.wrap(text, width, break_long_words=False)
    return lines[0] if len(lines) == 1 else lines


def sensitivity_bars(table: pd.DataFrame) -> alt.Chart:
    """Bars of the test-accuracy change when each feature is removed (Table 10), with
    95 % CIs over respondents where known, a "no change" rule at 0, and grey bars for
    changes inside the noise (CI contains 0)."""
    body = table[table["feature removed"] != "None (baseline)"].copy()
    has_ci = "delta test CI low (pp)" in body and body["delta test CI low (pp)"].notna().any()
    body["effect"] = sensitivity_effect(body)
    colours = {
        "accuracy drops": "#c0392b",
        "accuracy rises": "#2e86c1",
        "within noise (CI contains 0)": "#bdc3c7",
        f"underpowered (cannot detect {DETECTABLE_CHANGE_PP:g} pp)": "#d5d8dc",
        "no drop (no CI: one split)": "#7f8c8d",
    }
    present = set(body["effect"])  # the legend names only what the chart shows
    domain = [k for k in colours if k in present] or list(colours)
    order = body.sort_values("delta test (pp)")["feature removed"].tolist()
    # the feature names are the axis (the page's heading says "per removed feature"): no
    # rotated title to cut off; one band of ROW_PX per feature, labels never overlap
    y = alt.Y(
        "feature removed:N",
        sort=order,
        title=None,
        axis=alt.Axis(labelLimit=320, labelOverlap=False, labelFontSize=12),
        scale=alt.Scale(paddingInner=0.25),
    )
    ends = [body["delta test (pp)"], pd.Series([0.0])]
    if has_ci:
        ends += [body["delta test CI low (pp)"], body["delta test CI high (pp)"]]
    vals = pd.concat(ends).dropna()
    lo, hi = float(vals.min()), float(vals.max())
    pad = max(1.0, 0.05 * (hi - lo))
    x_scale = alt.Scale(domain=[np.floor(lo - pad), np.ceil(hi + pad)], nice=False)
    tooltip = [
        "feature removed:N",
        alt.Tooltip("test acc (%):Q", format=".1f"),
        alt.Tooltip("delta test (pp):Q", format="+.1f"),
        alt.Tooltip("train acc (%):Q", format=".1f"),
        alt.Tooltip("delta train (pp):Q", format="+.1f"),
        "effect:N",
    ]
    if has_ci:
        tooltip += [
            alt.Tooltip("delta test CI low (pp):Q", format="+.1f", title="95% CI low"),
            alt.Tooltip("delta test CI high (pp):Q", format="+.1f", title="95% CI high"),
        ]
    bars = (
        alt.Chart(body)
        .mark_bar()
        .encode(
            x=alt.X(
                "delta test (pp):Q",
                title="change in test accuracy when the feature is removed (percentage points)",
                scale=x_scale,
            ),
            y=y,
            color=alt.Color(
                "effect:N",
                scale=alt.Scale(domain=domain, range=[colours[k] for k in domain]),
                legend=alt.Legend(orient="bottom", title=None),
            ),
            tooltip=tooltip,
        )
    )
    zero = (
        alt.Chart(pd.DataFrame({"x": [0.0], "what": ["no change"]}))
        .mark_rule(color="#333", strokeDash=[4, 3])
        .encode(x="x:Q", tooltip=["what:N"])
    )
    layers = [bars, zero]
    if has_ci:
        layers.append(
            alt.Chart(body)
            .mark_errorbar(color="#222", thickness=1.5)
            .encode(
                x=alt.X("delta test CI low (pp):Q", title="", scale=x_scale),
                x2="delta test CI high (pp):Q",
                y=y,
            )
        )
    return alt.layer(*layers).properties(
        height=SENSITIVITY_ROW_PX * max(len(body), 1) + 20, autosize=FIT_WIDTH
    )


#: Height of one feature's bar band in the sensitivity chart (px).
SENSITIVITY_ROW_PX = 36


def evidence_chart(ev: pd.DataFrame) -> alt.Chart:
    """Held-out accuracy (95 % CI) per method next to training accuracy; chance at 50 %."""
    d = ev[ev["heldout"].notna()].copy()
    long = pd.concat(
        [
            d.assign(kind="held-out (95% CI)", value=100 * d["heldout"]),
            d.assign(kind="training", value=100 * d["train"]),
        ],
        ignore_index=True,
    )
    long["lo"] = np.where(long["kind"] == "training", np.nan, 100 * long["ci_low"])
    long["hi"] = np.where(long["kind"] == "training", np.nan, 100 * long["ci_high"])
    y = alt.Y(
        "method:N",
        title=None,
        sort=list(d["method"]),
        axis=alt.Axis(labelLimit=260, labelOverlap=False),
    )
    low = float(np.nanmin(long[["value", "lo"]].to_numpy())) if len(long) else 50.0
    x_scale = alt.Scale(domain=[max(0.0, min(45.0, 5 * np.floor(low / 5) - 5)), 100])
    points = (
        alt.Chart(long)
        .mark_point(filled=True, size=90)
        .encode(
            x=alt.X("value:Q", title="pairwise accuracy (%)", scale=x_scale),
            y=y,
            color=alt.Color(
                "kind:N",
                scale=alt.Scale(
                    domain=["held-out (95% CI)", "training"], range=["#1f4e79", "#aab7c4"]
                ),
                legend=alt.Legend(orient="bottom", title=None),
            ),
            shape=alt.Shape("kind:N", legend=None),
            tooltip=[
                "method:N",
                "kind:N",
                alt.Tooltip("value:Q", format=".1f", title="accuracy (%)"),
                alt.Tooltip("lo:Q", format=".1f", title="CI low"),
                alt.Tooltip("hi:Q", format=".1f", title="CI high"),
            ],
        )
    )
    bars = (
        alt.Chart(long[long["kind"] != "training"])
        .mark_rule(color="#1f4e79", strokeWidth=2)
        .encode(x=alt.X("lo:Q", scale=x_scale), x2="hi:Q", y=y)
    )
    chance = (
        alt.Chart(pd.DataFrame({"x": [50.0], "what": ["chance (coin flip)"]}))
        .mark_rule(color="#c0392b", strokeDash=[4, 3])
        .encode(x="x:Q", tooltip=["what:N"])
    )
    return alt.layer(bars, points, chance).properties(
        height=40 * max(len(d), 1) + 20, autosize=FIT_WIDTH
    )


def surface_grid(utility: Any, bounds: np.ndarray, n: int = 60) -> pd.DataFrame:
    """Cells of a 2-D grid over ``bounds`` with the utility at each cell centre."""
    (a0, a1), (b0, b1) = np.asarray(bounds, dtype=float)[:2]
    ex, ey = np.linspace(a0, a1, n + 1), np.linspace(b0, b1, n + 1)
    cx, cy = (ex[:-1] + ex[1:]) / 2, (ey[:-1] + ey[1:]) / 2
    gx, gy = np.meshgrid(cx, cy, indexing="ij")
    z = np.asarray(utility(np.column_stack([gx.ravel(), gy.ravel()])), dtype=float)
    ix, iy = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    # cells overlap their neighbours by half a cell so anti-aliasing leaves no seams
    ox, oy = 0.5 * (ex[1] - ex[0]), 0.5 * (ey[1] - ey[0])
    return pd.DataFrame(
        {
            "x1": ex[ix.ravel()],
            "x1_end": np.minimum(ex[ix.ravel() + 1] + ox, a1),
            "x2": ey[iy.ravel()],
            "x2_end": np.minimum(ey[iy.ravel() + 1] + oy, b1),
            "utility": z,
        }
    )


def partition_chart(
    grid: pd.DataFrame,
    boxes: pd.DataFrame | None,
    points: pd.DataFrame,
    *,
    value_title: str = "true utility",
    title: str = "",
    size: int = 420,
) -> alt.LayerChart:
    """Heatmap of a 2-D surface, leaf boxes of the tree and the asked points (Fig. 8).

    ``boxes``: columns ``x1, x1_end, x2, x2_end, leaf, utility, sd, rank``; ``points``:
    columns ``x1, x2, role`` (``asked`` / ``favourite`` / ``pending``).
    """
    heat = (
        alt.Chart(grid)
        .mark_rect()
        .encode(
            x=alt.X("x1:Q", title="x1", scale=alt.Scale(nice=False, zero=False)),
            x2="x1_end:Q",
            y=alt.Y("x2:Q", title="x2", scale=alt.Scale(nice=False, zero=False)),
            y2="x2_end:Q",
            color=alt.Color(
                "utility:Q",
                title=value_title,
                # symmetric log: steep benchmark surfaces keep contrast near the optimum
                scale=alt.Scale(scheme="viridis", type="symlog"),
            ),
        )
    )
    layers: list[Any] = [heat]
    if boxes is not None and len(boxes):
        layers.append(
            alt.Chart(boxes)
            .mark_rect(fillOpacity=0, stroke="white", strokeWidth=1.5)
            .encode(
                x="x1:Q",
                x2="x1_end:Q",
                y="x2:Q",
                y2="x2_end:Q",
                tooltip=[
                    "leaf:Q",
                    "rank:Q",
                    alt.Tooltip("utility:Q", title="leaf mean", format="+.2f"),
                    alt.Tooltip("sd:Q", format=".2f"),
                ],
            )
        )
    if len(points):
        layers.append(
            alt.Chart(points)
            .mark_point(filled=True, size=70, stroke="black", strokeWidth=0.7)
            .encode(
                x="x1:Q",
                y="x2:Q",
                shape=alt.Shape(
                    "role:N",
                    title="points",
                    scale=alt.Scale(
                        domain=["asked", "favourite", "question"],
                        range=["circle", "diamond", "triangle-up"],
                    ),
                ),
                color=alt.Color(
                    "role:N",
                    scale=alt.Scale(
                        domain=["asked", "favourite", "question"],
                        range=["#ffffff", "#e74c3c", "#f1c40f"],
                    ),
                    legend=alt.Legend(title="points"),
                ),
                tooltip=[
                    "role:N",
                    alt.Tooltip("x1:Q", format=".3g"),
                    alt.Tooltip("x2:Q", format=".3g"),
                ],
            )
        )
    return (
        alt.layer(*layers)
        .resolve_scale(color="independent")
        .properties(title=title, width=size, height=size)
    )


def leaf_utility_chart(boxes: pd.DataFrame, *, size: int = 420) -> alt.Chart:
    """The learned partition filled by each leaf's posterior mean."""
    return (
        alt.Chart(boxes)
        .mark_rect(stroke="white", strokeWidth=1)
        .encode(
            x=alt.X("x1:Q", title="x1", scale=alt.Scale(nice=False, zero=False)),
            x2="x1_end:Q",
            y=alt.Y("x2:Q", title="x2", scale=alt.Scale(nice=False, zero=False)),
            y2="x2_end:Q",
            color=alt.Color("utility:Q", title="leaf mean", scale=alt.Scale(scheme="viridis")),
            tooltip=[
                "leaf:Q",
                "rank:Q",
                alt.Tooltip("utility:Q", format="+.2f"),
                alt.Tooltip("sd:Q", format=".2f"),
            ],
        )
        .properties(title="learned utility (leaf means)", width=size, height=size)
    )


def utility_bars(table: pd.DataFrame, *, label: str, value: str = "utility") -> alt.Chart:
    """Horizontal bars of predicted utilities (items ranked)."""
    order = table.sort_values(value, ascending=False)[label].tolist()
    return (
        alt.Chart(table)
        .mark_bar()
        .encode(
            x=alt.X(f"{value}:Q", title="predicted utility"),
            y=alt.Y(f"{label}:N", sort=order, title=None),
            color=alt.Color(f"{value}:Q", scale=alt.Scale(scheme="redyellowgreen"), legend=None),
            tooltip=[f"{label}:N", alt.Tooltip(f"{value}:Q", format="+.2f")],
        )
        .properties(height=24 * max(len(table), 1) + 10, autosize=FIT_WIDTH)
    )


def favourite_trace_chart(trace: pd.DataFrame, *, height: int = 260) -> alt.LayerChart:
    """The favourite after each answer: posterior mean +- sd, coloured by which item it is.

    ``trace`` has columns ``answer``, ``favourite`` (a name), ``mean``, ``lo``, ``hi``,
    ``changed`` (true where the favourite differs from the previous answer's). A change of
    colour (and a rule) marks a drift of the favourite.
    """
    base = alt.Chart(trace).encode(
        x=alt.X("answer:Q", title="answer", axis=alt.Axis(tickMinStep=1))
    )
    band = base.mark_area(opacity=0.15, color="#4c78a8").encode(
        y=alt.Y("lo:Q", title="favourite's utility (mean ± sd)"), y2="hi:Q"
    )
    line = base.mark_line(color="#4c78a8").encode(y="mean:Q")
    pts = base.mark_point(filled=True, size=70).encode(
        y="mean:Q",
        color=alt.Color(
            "favourite:N",
            title="favourite",
            scale=alt.Scale(scheme="tableau10"),
            # below the plot: long option names would leave the curve a third of the width
            legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=420),
        ),
        tooltip=[
            alt.Tooltip("answer:Q"),
            alt.Tooltip("favourite:N"),
            alt.Tooltip("mean:Q", format="+.2f"),
            alt.Tooltip("sd:Q", format=".2f"),
        ],
    )
    rules = (
        base.transform_filter("datum.changed")
        .mark_rule(strokeDash=[4, 3], color="#999")
        .encode(x="answer:Q", tooltip=[alt.Tooltip("answer:Q", title="favourite changed at")])
    )
    return (band + line + rules + pts).properties(
        title="Favourite after each answer", height=height, autosize=FIT_WIDTH
    )


# ----------------------------------------------------------------------------- templates
class _Named(alt.NamedData):
    """A named data source standing in for a table while a spec template is built."""

    def __len__(self) -> int:  # builders test ``len(table)`` to drop empty layers
        return 1


def spec_template(builder: Any, names: tuple[str, ...], **kwargs: Any) -> dict[str, Any]:
    """The Vega-Lite spec of ``builder(*tables, **kwargs)`` with named data sources.

    Building an Altair chart and turning it into a spec costs 50-300 ms; a page that
    redraws the same chart with new data after every answer builds the template once
    (cache it) and fills it with :func:`with_data`. Every encoding of the builder must
    name its type (``"x:Q"``), as data types cannot be inferred from a name.
    """
    chart = builder(*(_Named(name=n) for n in names), **kwargs)
    return chart.to_dict(validate=False)


def with_data(template: dict[str, Any], tables: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """A spec template (see :func:`spec_template`) with its named data sets filled in."""
    return {**template, "datasets": dict(tables)}
