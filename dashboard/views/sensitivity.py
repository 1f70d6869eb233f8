"""Feature sensitivity: leave-one-out accuracy changes (DT-PBO Table 10 layout)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import _charts as charts
from dashboard import _progress as waits
from dashboard import _services as svc
from dashboard import _ui as ui
from pbo_core.evaluation import sample_text, sensitivity_caution
from pbo_core.registry import get

st.title("Feature sensitivity")
st.caption(
    "How much held-out accuracy each model loses without each feature: the longer the bar, "
    "the more its predictions depend on it; grey bars are inside the noise.",
    help="Refit each model without each feature in turn and measure pairwise accuracy on "
    "held-out comparisons. A large drop means the model's predictions depend on that "
    "feature. Any model of the accuracy experiments can be ablated, several side by side "
    "(default: the analysis plan's: the paper's DT, the linear-leaf tree, the best baseline "
    "on this split by the accuracy command's rule and the plan's baseline; the sidebar "
    "picks them). Per-respondent studies pair each respondent's change on the same "
    "held-out tasks and give it a 95% bootstrap CI over respondents: grey bars are changes "
    "inside the noise (the CI contains 0, the dashed 'no change' line); light grey ones "
    "contain 0 on a sample too small to detect a 5-point change (underpowered). Chance "
    "accuracy is 50%.",
)
side = st.sidebar
ui.sidebar_heading("Feature sensitivity")


def _detectable(table: pd.DataFrame) -> str | None:
    """The minimum detectable change of a block (:func:`pbo_core.evaluation`'s column)."""
    mdc = table["min detectable (pp)"].dropna()
    return None if mdc.empty else f"{float(mdc.median()):.0f}"


key, study = ui.require_study("Feature sensitivity", key="fs_study", container=side)

plan0 = svc.sensitivity_plan(study)
per_resp = svc.is_per_respondent(study)
has_split = study.extras.get("split") is not None and not per_resp
task_split = svc.sensitivity_split(study, plan0).kind == "tasks"

use_split = False
if has_split:
    use_split = side.toggle(
        "Use the study's own train/test split",
        value=True,
        key="fs_use_split",
        help="E.g. the PMR inboxes: inbox A trains, inbox B tests.",
    )
kind = "study" if use_split else ("pooled" if has_split else None)
test_tasks = None
if task_split:
    test_tasks = int(
        side.number_input(
            "Held-out choice tasks per respondent",
            min_value=1,
            max_value=20,
            value=int(plan0.test_tasks),
            step=1,
            key=f"fs_tasks::{key}",
            help="The analysis plan's hold-out (the accuracy command's and the report's).",
        )
    )
seed = int(side.number_input("Seed", min_value=0, value=plan0.seed, step=1, key="fs_seed"))
n_resp = None
if per_resp:
    total = len(study.respondents())
    planned = svc.sample_size(study, plan0)
    n_resp = side.slider(
        "Respondents averaged (first N)",
        1,
        total,
        planned,
        key=f"fs_n::{key}",
        help=f"The analysis plan's sample: {planned:,} respondents (its evaluation sample, "
        "so the all-features row is the accuracy figure of the Tree explorer, the "
        "accuracy command and the report). Fewer are faster but detect only larger changes "
        "(the minimum detectable change is shown under each chart).",
    )
    n_resp = None if n_resp == planned else int(n_resp)
plan = svc.sensitivity_plan(
    study, seed=seed, n_respondents=n_resp, kind=kind, test_tasks=test_tasks
)

with st.spinner("Preparing the tree kernels (once per start)..."):
    svc.warm_up()
best = None
if not plan.sensitivity_models:  # the best baseline on this split, by the accuracy rule
    best_job = svc.best_baseline_job(study, plan)
    if not best_job.done:
        waits.result(best_job, key="fs_best")
        st.stop()
    best = best_job.result if best_job.state == "done" else None
default = svc.default_sensitivity_methods(study, plan, best)
# the registry's names, as every page shows them (key: the table's "method" column)
labels = {n: get(n).label for n in svc.sensitivity_methods(study)}
if best in labels and best != plan.baseline:
    labels[best] = f"{labels[best]} (the best baseline on this split)"
if plan.baseline in labels:
    labels[plan.baseline] = f"{labels[plan.baseline]} (the plan's baseline)"
methods = side.multiselect(
    "Models to ablate (side by side)",
    list(labels),
    default=[m for m in default if m in labels],
    format_func=lambda n: labels[n],
    key=f"fs_methods::{key}",
    help="Models of the registry (python -m pbo_core.experiments conjoint-accuracy "
    "--help). The plan's baseline is the conditional logit an econometrician fits.",
)
side.caption(
    ui.md(plan.line())
    + (" (as the page's settings changed it)" if plan != plan0 else "")
    + f" Sample: {ui.md(sample_text(svc.sensitivity_split(study, plan)))}. The same "
    f"figures: `python -m pbo_core.experiments sensitivity --study {ui.md(key)}`."
)
if not methods:
    st.info("Choose at least one model (sidebar).")
    st.stop()


def _charts_of(m: str, table: pd.DataFrame) -> None:
    """One model's bars (full width) and what the noise allows to see."""
    base_row = table[table["feature removed"] == "None (baseline)"]
    acc = (
        f" — {base_row['test acc (%)'].iloc[0]:.1f}% held-out with every feature"
        if len(base_row)
        else ""
    )
    st.markdown(f"**{ui.md(labels.get(m, m))}**{acc}")
    st.altair_chart(charts.sensitivity_bars(table), width="stretch")
    noisy = table[table["within noise"].eq(True)]["feature removed"].tolist()
    mdc = _detectable(table)
    notes = []
    if mdc is not None:
        n_units = int(table["respondents"].iloc[0])
        notes.append(
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
        notes.append(
            "Inside the noise (95% CI contains no change): " + ", ".join(map(ui.md, noisy)) + "."
        )
    elif table["delta test CI low (pp)"].isna().all():
        notes.append("One train/test split: no CI over respondents, so small changes may be noise.")
    if notes:
        st.caption(" ".join(notes))
    caution = sensitivity_caution(table)
    if caution:
        st.warning(ui.md(caution), icon=":material/warning:")


names = {f.name: f.display for f in study.schema.features}
# each model's bars as soon as its refits are done (the others' progress in their place)
parts = []
for m, job in zip(methods, svc.sensitivity_blocks(study, plan, methods), strict=True):
    got = waits.result(job, key=f"fs_blocks::{m}")
    parts.append(got)
    if got is not None and not got.empty:
        shown_block = got.assign(
            **{"feature removed": got["feature removed"].map(lambda n: names.get(n, n))}
        )
        with st.container():
            _charts_of(m, shown_block.reset_index(drop=True))
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
        + (" The analysis plan's baseline." if m == plan.baseline else ""),
    )
cols[-1].metric("Respondents", int(blocks["respondents"].iloc[0]))

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
