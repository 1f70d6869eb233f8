"""Feature sensitivity: leave-one-out accuracy changes (DT-PBO Table 10 layout)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import _charts as charts
from dashboard import _progress as waits
from dashboard import _services as svc
from dashboard import _ui as ui
from pbo_core.registry import get

st.title("Feature sensitivity")
st.caption(
    "Refit each model without each feature in turn and measure pairwise accuracy on "
    "held-out comparisons. A large drop means the model's predictions depend on that "
    "feature. Any model of the accuracy experiments can be ablated, several side by side "
    "(default: the paper's DT, the linear-leaf tree and the most accurate baseline on the "
    "same split). Per-respondent studies pair each respondent's change on the same held-out "
    "tasks and give it a 95% bootstrap CI over respondents: grey bars are changes inside "
    "the noise (the CI contains 0, the dashed 'no change' line). Pooled models are fitted "
    "on the respondents averaged. Chance accuracy is 50%."
)

#: Respondents averaged by default (``svc.SENSITIVITY_RESPONDENTS``; the precomputed
#: first visit uses the same number).
DEFAULT_RESPONDENTS = svc.SENSITIVITY_RESPONDENTS


def _detectable(table: pd.DataFrame) -> str | None:
    """The minimum detectable change of a block (80 % power, two-sided 5 %): 2.8 standard
    errors, the standard error read from the median 95 % CI half-width (/1.96)."""
    lo, hi = table["delta test CI low (pp)"], table["delta test CI high (pp)"]
    half = ((hi - lo) / 2).dropna()
    if half.empty:
        return None
    mdc = (1.96 + 0.84) * float(half.median()) / 1.96
    return f"{mdc:.0f}"


key, study = ui.require_study("Feature sensitivity", key="fs_study")

per_resp = svc.is_per_respondent(study)
has_split = study.extras.get("split") is not None and not per_resp
has_tasks = study.data.task is not None

c1, c2, c3 = st.columns(3)
use_split = False
if has_split:
    use_split = c1.toggle(
        "Use the study's own train/test split",
        value=True,
        key="fs_use_split",
        help="E.g. the PMR inboxes: inbox A trains, inbox B tests.",
    )
kind = "study" if use_split else ("pooled" if has_split else "auto")
frac = c1.slider(
    "Held-out fraction of " + ("choice tasks" if has_tasks else "comparisons"),
    0.1,
    0.5,
    0.2,
    step=0.05,
    key="fs_frac",
    disabled=use_split,
)
seed = int(c2.number_input("Seed", min_value=0, value=0, step=1, key="fs_seed"))
n_resp = 1
if per_resp:
    total = len(study.respondents())
    n_resp = c3.slider(
        "Respondents averaged (first N)",
        1,
        total,
        min(DEFAULT_RESPONDENTS, total),
        key=f"fs_n::{key}",
        help="Each respondent gets their own tree and hold-out; results are cached. The "
        f"default ({DEFAULT_RESPONDENTS}) is enough to detect a change of about 8-10 "
        "percentage points on Train (the minimum detectable change is shown under each "
        "chart); 10 respondents detect only changes above ~20 points.",
    )

with st.spinner("Preparing the tree kernels (once per start)..."):
    svc.warm_up()
scoring = svc.baseline_job(study, frac, seed, n_resp, kind)
if scoring.state != "done":  # the default trees' refits need no baseline: start them now
    svc.sensitivity_blocks(
        study,
        frac,
        seed,
        n_resp,
        kind,
        svc.default_sensitivity_methods(study, frac, seed, n_resp, kind),
    )
best = waits.result(scoring, key="fs_baselines")
if scoring.state != "done":
    st.stop()
default = svc.default_sensitivity_methods(study, frac, seed, n_resp, kind, best)
# the registry's names, as every page shows them (key: the table's "method" column)
labels = {n: get(n).label for n in svc.sensitivity_methods(study)}
if best is not None:
    labels[best] = f"{labels[best]} (best baseline here)"
methods = st.multiselect(
    "Models to ablate (side by side)",
    list(labels),
    default=default,
    format_func=lambda n: labels[n],
    key=f"fs_methods::{key}",
    help="Models of the registry (python -m pbo_core.experiments conjoint-accuracy "
    "--help). The best baseline is the one with the highest test accuracy with all "
    "features on this split.",
)
if not methods:
    st.info("Choose at least one model.")
    st.stop()
parts = [
    waits.result(job, key=f"fs_blocks::{m}")
    for m, job in zip(
        methods, svc.sensitivity_blocks(study, frac, seed, n_resp, kind, methods), strict=True
    )
]
if any(p is None for p in parts):
    st.stop()
done = [p for p in parts if not p.empty]
blocks = pd.concat(done, ignore_index=True) if done else pd.DataFrame()

if blocks.empty:
    st.warning(
        "No respondent has enough comparisons for a hold-out split (at least two choice "
        "tasks are needed). Choose other settings."
    )
    st.stop()

names = {f.name: f.display for f in study.schema.features}
blocks = blocks.assign(
    **{"feature removed": blocks["feature removed"].map(lambda n: names.get(n, n))}
)
shown = [m for m in methods if m in set(blocks["method"])]
base = blocks[blocks["feature removed"] == "None (baseline)"].set_index("method")
st.markdown("#### Test accuracy with every feature")
cols = st.columns(len(shown) + 1)
for c, m in zip(cols, shown, strict=False):
    c.metric(
        get(m).label,
        f"{base.loc[m, 'test acc (%)']:.1f}%",
        help=f"Train {base.loc[m, 'train acc (%)']:.1f}%. Pairwise accuracy on the held-out "
        "comparisons; 50% is chance."
        + (" The most accurate baseline on this split." if m == best else ""),
    )
cols[-1].metric("Respondents", int(blocks["respondents"].iloc[0]))

st.markdown("#### Test-accuracy change per removed feature")
for m in shown:  # one full-width chart per model, one below the other
    table = blocks[blocks["method"] == m].reset_index(drop=True)
    with st.container():
        st.markdown(f"**{ui.md(labels.get(m, m))}**")
        st.altair_chart(charts.sensitivity_bars(table), width="stretch")
        noisy = table[table["within noise"].eq(True)]["feature removed"].tolist()
        mdc = _detectable(table)
        if mdc is not None:
            n_units = int(table["respondents"].iloc[0])
            st.caption(
                f"Minimum detectable change ≈ {mdc} percentage points (80% power, 5% level, "
                + (
                    f"from the intervals over {n_units} respondents); "
                    if n_units > 1
                    else "from the intervals over the held-out comparisons); "
                )
                + "smaller true changes usually look like noise here"
                + (". Averaging 4x the respondents halves it." if n_units > 1 else ".")
            )
        if noisy:
            st.caption(
                "Inside the noise (95% CI contains no change): "
                + ", ".join(map(ui.md, noisy))
                + "."
            )
        elif table["delta test CI low (pp)"].isna().all():
            st.caption(
                "One train/test split: no CI over respondents, so small changes may be noise."
            )
st.markdown("#### Leave-one-out table (one block per model)")
shown_table = blocks.drop(columns=["respondents"]).fillna(
    {"delta train (pp)": 0.0, "delta test (pp)": 0.0}
)
shown_table.insert(0, "model", shown_table["method"].map(lambda m: labels.get(m, m)))
st.dataframe(
    shown_table,
    hide_index=True,
    width="stretch",
    column_config={
        c: st.column_config.NumberColumn(format="%.1f")
        for c in (
            "train acc (%)",
            "delta train (pp)",
            "test acc (%)",
            "delta test (pp)",
            "delta test CI low (pp)",
            "delta test CI high (pp)",
        )
    },
)
st.download_button(
    "Download CSV",
    ui.safe_csv(blocks),
    file_name=f"sensitivity-{key}.csv",
    mime="text/csv",
    key="fs_download",
    on_click="ignore",
)
