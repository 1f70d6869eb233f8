"""Tree explorer: a tree model of one respondent's comparisons (or the pooled data).

Models: the paper's DT (constant leaves, fitted on the respondent's own comparisons), the
linear-leaf tree ``dt-linear`` and the pooled DT (both fitted on the whole study and
shown with the respondent's posterior). The default is the one with the best held-out
accuracy on the study (``svc.tree_choice``, computed once in the background).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from dashboard import _charts as charts
from dashboard import _progress as waits
from dashboard import _services as svc
from dashboard import _ui as ui
from dashboard._estimates import estimates_section
from pbo_core import explain, metrics
from pbo_core.evaluation import evidence_caution
from pbo_core.explain.labels import has_slopes
from pbo_core.registry import get

st.title("Tree explorer")
st.caption(
    "A preference tree learned from the comparisons: the paper's DT (constant leaves), the "
    "linear-leaf tree (each leaf also holds slopes: how utility changes per unit of each "
    "attribute, in the units the study states, and the value of time they imply) or the "
    "pooled DT. Splits show the "
    "question, the number of comparisons it was chosen on and its consistency score (hover "
    "a box: it also says how many comparisons straddled the split and so reached neither "
    "child). Leaves are numbered in rank order (leaf 1 is the best) and show the posterior "
    "utility (mean ± sd, in units of the comparison noise) and their items by name with "
    "the comparisons each won and lost, coloured from red (low) to green (high)."
)


def _evidence_table(ev: pd.DataFrame, shown: str, unit: str = "respondents") -> pd.DataFrame:
    """Held-out evidence as shown (:func:`pbo_core.explain.labels.evidence_display`)."""
    return explain.labels.evidence_display(ev, shown, unit)


def _role_pick(
    col: Any, label: str, options: list, default: Any, none: str, key: str, help: str
) -> Any:
    """A picker of the attribute in one role (money, travel time); ``None`` = none."""
    return col.selectbox(
        label,
        options,
        index=options.index(default),
        format_func=lambda n: none if n is None else study.schema[n].display,
        key=key,
        help=help,
    )


c_study, c_resp = st.columns(2)
key, study = ui.require_study("The tree explorer", key="te_study", container=c_study)
resp = ui.respondent_picker(study, key="te_resp", container=c_resp)
if resp is None and svc.is_per_respondent(study):
    c_resp.caption(
        "Respondents made too few choice tasks each for a personal tree (median under "
        "3): one tree on every respondent's comparisons, checked on whole respondents it "
        "never saw (Held-out evidence)."
    )
elif resp is None:
    c_resp.caption("Pooled data: one tree on all comparisons.")
data = svc.respondent_data(study, resp)
if data.n_pairs == 0:
    st.warning("This respondent has no comparisons.")
    st.stop()
# many items are named in a worker: the tree is drawn meanwhile, its items by their ids
texts = svc.texts_job(study, resp)
named = texts is None or texts.state == "done"

with st.spinner("Preparing the tree kernels (once per start; first install compiles them)..."):
    svc.warm_up()

choices = svc.tree_models(study)
opening, choice = svc.default_model(study, choices)
linked = ui.linked_model(choices)
default = linked if linked is not None else opening
c_model, c_why = st.columns([1, 2])
method = c_model.selectbox(
    "Model",
    choices,
    index=choices.index(default),
    format_func=lambda k: get(k).label,
    key=f"te_model::{key}::{default}",
    help="Paper DT: constant leaves, fitted on the shown respondent's comparisons. "
    "Linear-leaf tree and pooled DT: one tree fitted on every respondent's comparisons "
    "(strengths by cross-validation over choice tasks), drawn with the shown "
    "respondent's own leaf values and slopes.",
)
ui.show_in_url(model=method)
if linked is not None:
    c_why.caption(f"{get(linked).label}: the model this link asks for.")
elif choice is None and not svc.background_choice():
    c_why.caption(
        "The paper DT is shown; the held-out comparison of the tree models (which picks the "
        "default) runs when the Held-out evidence tab opens."
    )
elif choice is None or opening != choice.best:
    with c_why:
        st.caption(
            "The paper DT is shown until the held-out comparison of the tree models on this "
            "study (and the winner's fit) is done; the page then switches to the most "
            "accurate tree."
        )
        job = svc.choice_job(study) if choice is None else svc.fit_job(study, choice.best)
        waits.result(job, key="te_choice")
else:
    c_why.caption(choice.reason())

c1, c2, c3 = st.columns(3)
prune = c2.slider(
    "Prune small leaves: min. comparisons to split a node",
    1,
    30,
    1,
    key="te_prune",
    disabled=method != "dt",
    help="Refits the paper DT with min_samples_split: nodes with fewer comparisons stay "
    "leaves (the pooled trees have their size chosen by cross-validation).",
)
model = svc.fit_model(study, resp, method, min_samples_split=prune)
if isinstance(model, svc.Job):  # a pooled tree still being fitted: its progress, then it
    st.info(f"The {get(method).label} is fitted on the whole study first (once; kept on disk).")
    waits.result(model, key="te_fit")
    st.stop()
tree_depth = int(model.tree_.max_depth)
if tree_depth >= 2:
    depth = c1.slider(
        "Max depth shown (deeper subtrees collapse)",
        1,
        tree_depth,
        min(tree_depth, 6),
        key=f"te_depth::{tree_depth}",
    )
else:
    depth = tree_depth
    c1.caption("The tree is a single leaf." if tree_depth == 0 else "The tree has a single split.")
features = study.schema.names
sensitive = c3.multiselect(
    "Flag splits on sensitive attributes",
    features,
    default=svc.default_sensitive(study),
    format_func=lambda n: study.schema[n].display,
    key=f"te_sensitive::{key}",
)

labels = svc.item_labels(data) if named else []
pick = st.selectbox(
    "Follow an item (its path is drawn in bold)",
    [-1, *range(data.n_items)] if named else [-1],
    format_func=lambda i: "(none)" if i < 0 else labels[i],
    key=f"te_item::{key}::{resp}",
    disabled=not named,
    help=None if named else f"Offered once the {data.n_items:,} items are named (below).",
)
highlight = data.X[pick] if pick >= 0 else None

money = time_attr = None
if has_slopes(model):  # trade-offs: the analyst says what money and travel time are
    money_options, money_default, money_why = svc.money_choice(study)
    time_options, time_default, time_why = svc.time_choice(study)
    c_money, c_time, c_money_why = st.columns([1, 1, 2])
    money = _role_pick(
        c_money,
        "Money attribute (divides every trade-off)",
        money_options,
        money_default,
        "(none: no trade-offs)",
        f"te_money::{key}",
        "Willingness to pay and the value of time are an attribute's slope divided by this "
        "attribute's slope. The study's own choice is pre-selected (set at import with "
        "--money-attribute or the Add-a-study form).",
    )
    time_attr = _role_pick(
        c_time,
        "Travel-time attribute (value of time)",
        time_options,
        time_default,
        "(none: no value of time)",
        f"te_time::{key}",
        "The value of time divides this attribute's slope by the money slope. Only an "
        "attribute the analysis plan or you name is a travel time: a duration in seconds "
        "may be an acceleration.",
    )
    c_money_why.caption(
        "Willingness to pay and value of time are in units of **"
        + ("—" if money is None else ui.md(study.schema[money].display))
        + "**"
        + (f" ({ui.md(money_why)})." if money == money_default and money is not None else ".")
        + (
            f" Travel time: **{ui.md(study.schema[time_attr].display)}**"
            + (f" ({ui.md(time_why)})." if time_attr == time_default else ".")
            if time_attr is not None
            else " No travel-time attribute is named, so no value of time is shown."
        )
        + " A ratio whose money slope is not clearly nonzero (95% CI includes 0) is shown "
        "as *not identified*, without a number."
    )

title = study.title + (f" — respondent {resp}" if resp is not None else "")
shown_depth = depth if 1 <= depth < tree_depth else None
view = svc.tree_view(
    model,
    data,
    highlight=highlight,
    sensitive=sensitive,
    title=title,
    money=money,
    time=time_attr,
    named=named,
)

tradeoffs = svc.tradeoff_table(model, money, time_attr) if money is not None else pd.DataFrame()
vot_all = (
    tradeoffs[(tradeoffs["leaf"] == "overall") & (tradeoffs["trade-off"] == "value of time")]
    if not tradeoffs.empty
    else tradeoffs
)
pooled_structure = get(method).scope == "pooled" and resp is not None
m1, m2, m3, m4, m5 = st.columns(5)
m1.metric("Leaves", model.n_leaves_)
m2.metric("Depth", tree_depth)
m3.metric(
    "Respondent's comparisons" if pooled_structure else "Comparisons",
    f"{data.n_pairs:,}",
    help="The comparisons of the data shown: the leaves' values and items are theirs."
    if pooled_structure
    else "The comparisons the tree was fitted on (the root box counts them, less any "
    "that straddled no split).",
)
m4.metric(
    "Training accuracy",
    f"{100 * metrics.accuracy(model, data):.1f}%",
    help="On the comparisons the tree was fitted on; see the Held-out evidence tab for "
    "accuracy on comparisons the tree did not see, with a 95% CI, next to the GP and the "
    "logit baseline.",
)
if len(vot_all):  # a line of its own: "not identified" and its reason need the width
    v = vot_all.iloc[0]
    identified = v["interval"] == "Fieller"
    m5.metric(
        "Value of time",
        v["value [95% CI]"].split(" ")[0] if identified else "—",
        help=f"Overall: time slope / {ui.md(v['money attribute'])} slope of the slopes averaged "
        "over the leaves (weighted by their items), 95% Fieller interval from the posterior.",
    )
    st.markdown(
        f"**Value of time** (overall, money attribute {ui.md(v['money attribute'])}): "
        + (
            f"**{v['value [95% CI]']}**."
            if identified
            else f"**not identified**: the {ui.md(v['money attribute'])} slope's 95% CI "
            "includes 0, so the data are consistent with any value of time (no finite "
            "interval, so no point estimate is shown)."
        )
    )
if pooled_structure:
    st.caption(
        f"**Pooled structure, personal leaves.** The splits were learned once from all "
        f"{study.data.n_pairs:,} comparisons of the study's {len(study.respondents()):,} "
        "respondents (the counts in the split boxes); the leaves show respondent "
        f"{resp}'s own posterior from their {explain.plural(data.n_pairs, 'comparison')} "
        "and their items (a leaf none of their items falls in says so)."
    )
scored = getattr(model, "cv_respondents_", None)
if scored and getattr(model, "cv_error_", None) is not None:
    everyone = len(model.respondents_)
    st.caption(
        f"Strengths chosen by {model.n_folds}-fold cross-validation over choice tasks: "
        f"shrinkage toward the pooled fit {model.shrinkage_:.3g}, slope prior ratio "
        f"{model.slope_ratio_:.3g}; "
        + (
            f"scored on the held-out tasks of a random {scored:,} of the {everyone:,} "
            "respondents (a cost bound: the splits and the final fit use every comparison)."
            if scored < everyone
            else f"scored on all {everyone:,} respondents' held-out tasks."
        )
    )

if pick >= 0:
    leaf = int(model.apply(data.X[[pick]])[0])
    s = explain.leaf_summaries(model)[leaf]
    own = (
        f" (this item: {float(model.predict(data.X[[pick]])[0]):+.2f}, from the leaf's slopes)"
        if not tradeoffs.empty
        else ""
    )
    st.info(
        f"**{ui.md(labels[pick])}** is in leaf {s.number}: utility {s.mean:+.2f} ± "
        f"{s.sd:.2f}{own}, rank {s.rank} of "
        f"{explain.plural(model.n_leaves_, 'leaf', 'leaves')}.  \n"
        + ("Because " + " AND ".join(map(ui.md, s.conditions)) if s.conditions else "(root leaf)")
    )

flagged = [
    n
    for n in sensitive
    if any(
        study.schema.columns[c].feature == study.schema.names.index(n)
        for c in model.tree_.feature[model.tree_.feature >= 0]
    )
]
if flagged:
    st.warning(
        "The tree splits on sensitive attribute(s): "
        + ", ".join(ui.md(study.schema[n].display) for n in flagged)
        + " (marked ⚠ in the tree)."
    )

tab_tree, tab_items, tab_leaves, tab_ev, tab_strad, tab_est = ui.lazy_tabs(
    ["Tree", "Items", "Leaves", "Held-out evidence", "Straddlers: discard vs keep", "Estimates"],
    key="te_view",
)
if tab_tree.open:
    with tab_tree:
        if not named:
            st.caption(
                f"The leaves list their items by id until the {data.n_items:,} items are "
                "named (progress below); the tree is the same."
            )
            waits.result(texts, key="te_texts")
        ui.tree_with_downloads(
            view,
            name=f"tree-{key}" + (f"-{resp}" if resp is not None else ""),
            key="te_tree",
            json_text=explain.to_json(model),
            max_depth=shown_depth,
        )
if tab_items.open and not named:
    with tab_items:
        waits.result(texts, key="te_texts_items")
elif tab_items.open:
    with tab_items:
        st.caption(
            "Predicted utility (leaf mean), competition rank (ties share a rank), the leaf "
            "(numbered as in the tree) and the comparisons each item won and lost."
        )
        st.dataframe(
            svc.items_table(model, data),
            hide_index=True,
            width="stretch",
            column_config={"utility": st.column_config.NumberColumn(format="%+.2f")},
        )
if tab_leaves.open and not named:
    with tab_leaves:
        waits.result(texts, key="te_texts_leaves")
elif tab_leaves.open:
    with tab_leaves:
        st.caption(
            "Every leaf with all its items by name; (won/lost) counts the respondent's "
            "comparisons each item won and lost."
            + (
                " Linear leaves: the utility is shown at the leaf's average item, and the "
                "slopes say how it changes per unit of each attribute (in units of the "
                "comparison noise)."
                if not tradeoffs.empty
                else ""
            )
        )
        st.dataframe(
            svc.leaf_table(model, data, money, time_attr),
            hide_index=True,
            width="stretch",
            column_config={
                "utility": st.column_config.NumberColumn(format="%+.2f"),
                "sd": st.column_config.NumberColumn(format="%.2f"),
                "item names (won/lost)": st.column_config.TextColumn(width="large"),
            },
        )
        if not tradeoffs.empty:
            st.markdown("#### Trade-offs: what one unit of each attribute is worth in money")
            st.caption(
                "Ratio of an attribute's slope to the price slope, per leaf and overall (the "
                "slopes averaged over leaves, weighted by their items). Value of time = time "
                "slope / price slope, in the units the study states (money for each hour of "
                "time saved only when the time is stated in minutes or hours; per unit of it "
                "when no unit is stated); "
                "the others: the money one more "
                "unit is worth (negative: it has to be compensated). 95% intervals by "
                "Fieller's method from the joint Gaussian posterior of the two slopes, "
                "rounded to the precision they support; 'not identified' when the money "
                "slope is not clearly nonzero (its 95% CI includes 0: no finite interval "
                "exists, so no number is shown), and no number either when the money slope is "
                "clearly positive (more money preferred: it prices nothing)."
            )
            st.dataframe(
                tradeoffs[["leaf", "trade-off", "value [95% CI]", "money attribute", "interval"]],
                hide_index=True,
                width="stretch",
            )
if tab_ev.open:
    with tab_ev:
        st.markdown("#### Which tree is most accurate on this study")
        if choice is None:
            choice = waits.result(svc.choice_job(study), key="te_ev_choice")
        if choice is None:
            st.stop()
        st.caption(
            "Every model predicts each comparison after being fitted without it ("
            + choice.split
            + f"; {choice.sample()}"
            + "), the same hold-out for every model: the analysis plan's, so these are the "
            f"figures of `python -m pbo_core.experiments conjoint-accuracy --study {key}` and "
            "of the report. The paper DT is fitted per respondent; the pooled models (their "
            "strengths chosen by inner cross-validation on the training tasks) predict with "
            "each respondent's own utilities when they saw the respondent. The conditional "
            "logit (MNL) is the econometrician's baseline; the pairwise logits are labelled "
            "variants. CI: 95% percentile bootstrap over respondents (over comparisons when "
            "there are none). " + ui.md(choice.plan)
        )
        ct = choice.table
        shown_label = get(method).label
        st.altair_chart(charts.evidence_chart(ct), width="stretch")
        unit = "respondents" if choice.n_respondents else "comparisons"
        st.dataframe(_evidence_table(ct, shown_label, unit), hide_index=True, width="stretch")
        if caution := evidence_caution(ct, unit):  # a sample too small for 5 points
            st.warning(ui.md(caution), icon=":material/warning:")
        losers = ct[(ct["family"] == "tree") & (ct["ci_high"] < ct["heldout"].max())]
        if len(losers):
            st.caption(
                "Below the best model's mean with their whole 95% CI: "
                + ", ".join(losers["method"])
                + "."
            )
        if resp is None:
            st.caption(
                f"The model shown ({shown_label}) is the row of that name above: the data "
                "shown are the whole study, the same folds."
            )
        else:
            st.markdown(f"#### The model shown ({shown_label}) on respondent {ui.md(resp)}'s data")
            got = waits.result(svc.evidence_job(study, resp, method), key="te_ev_resp")
            if got is None:
                st.stop()
            ev, how = got
            st.caption(
                f"Each comparison predicted by models fitted without it ({how}), the same "
                "folds for every model, beside the GP and the textbook logit. The CI is a 95% "
                "percentile bootstrap over the held-out comparisons; 50% is chance."
            )
            if ev.empty or ev["heldout"].isna().all():
                st.info(
                    "Too few choice tasks to hold any out"
                    + (": " + ui.err("; ".join(ev["error"][ev["error"] != ""])) if len(ev) else "")
                    + "."
                )
            else:
                st.altair_chart(charts.evidence_chart(ev), width="stretch")
                st.dataframe(
                    _evidence_table(ev, shown_label, "comparisons"),
                    hide_index=True,
                    width="stretch",
                )
                if caution := evidence_caution(ev, "comparisons"):
                    st.warning(ui.md(caution), icon=":material/warning:")
                first = ev.iloc[0]
                if first["n_heldout"] < 30:
                    st.caption(
                        f"Only {explain.plural(int(first['n_heldout']), 'held-out comparison')}"
                        ": the intervals are wide; differences inside them are noise."
                    )
if tab_strad.open:
    with tab_strad:
        st.caption(
            "A straddler is a comparison whose two items fall on different sides of a split. "
            "**Discard** (Eq. 8, default) leaves them out of the split search below; **keep** "
            "(App. C.2) sends them to the winner's side with the split column masked. Both "
            "trees are capped at the depth chosen here (paper Table 2 uses 4) and drawn at "
            "full width, one below the other. (Both are the paper's DT on the data shown.)"
        )
        cap = st.slider("Depth cap", 1, 8, 4, key="te_strad_cap")
        for mode in ("discard", "keep"):
            m = svc.fit_tree(study, resp, max_depth=cap, min_samples_split=prune, straddlers=mode)
            st.markdown(
                f"**{mode}** — {explain.plural(m.n_leaves_, 'leaf', 'leaves')}, depth "
                f"{m.tree_.max_depth}, training accuracy {100 * metrics.accuracy(m, data):.1f}%"
            )
            ui.interactive_tree(
                svc.tree_view(m, data, highlight=highlight, sensitive=sensitive, named=named),
                name=f"tree-{key}-{mode}",
                height=420,
            )
if tab_est.open:  # the conditional logit's table, as `estimates` prints it
    with tab_est:
        estimates_section(study, key)
