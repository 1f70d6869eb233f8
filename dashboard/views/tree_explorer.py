"""Tree explorer: the study's preference tree first, a respondent's personal tree one click
away.

The page opens on the study-level model: the most accurate of the pooled tree models of the
registry's ``explorer`` role on the study's held-out comparison (``svc.default_model``;
the linear-leaf tree or the pooled DT, fitted once on every respondent's comparisons and
drawn with the population's leaves and slopes); until that comparison is done, the paper
DT on every comparison. The view switch in the sidebar shows one respondent instead: the
paper DT of their own comparisons, or their own leaves on a pooled tree's splits. Pickers
and settings live in the sidebar; the first screen holds the title, one caption, the
held-out evidence line and the tree. ``?present=1`` (the sidebar's "Presentation view")
shows the tree, its caption and the evidence line without any control.
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

#: The two views: the study-level model, or one respondent.
WHOLE, ONE = "Whole study", "One respondent"
#: How the boxes read: at most four lines (details on click, hover and in the Leaves
#: tab), or every line.
DETAIL = {"compact": "Compact (at most 4 lines)", "full": "Every line and item"}

#: What the tree shows, for the caption's help (the one place the reading guide lives).
HOW_TO_READ = (
    "A preference tree learned from the comparisons. Splits ask a question about the "
    "items, with the number of comparisons it was chosen on and its consistency score "
    "(hover a box: it also says how many comparisons straddled the split and so reached "
    "neither child). Leaves are numbered in rank order (leaf 1 is the best) and show the "
    "posterior utility (mean ± sd, in units of the comparison noise), the number of items "
    "and, for linear leaves, the value of time and the one or two slopes that set the leaf "
    "apart (utility per unit of each attribute, in the units the study states, ± the "
    "half-width of the 95% interval). Grey "
    "italics: the 95% interval includes 0. Click a leaf for all its lines and items "
    "(also in the Leaves tab); Settings in the sidebar show every line in the boxes.\n\n"
    "Models: the paper's DT (constant leaves; the whole study's comparisons, or one "
    "respondent's), the linear-leaf tree and the pooled DT (one tree fitted on every "
    "respondent's comparisons, strengths by cross-validation over choice tasks; the "
    "whole study shows the population's leaves and slopes, one respondent their own)."
)

present = ui.presenting()
if not present:
    st.title("Tree explorer")
    ui.sidebar_heading("Tree explorer")
side = st.sidebar


def _evidence_table(ev: pd.DataFrame, shown: str, unit: str = "respondents") -> pd.DataFrame:
    """Held-out evidence as shown (:func:`pbo_core.explain.labels.evidence_display`)."""
    return explain.labels.evidence_display(ev, shown, unit)


def _role_pick(
    col: Any, label: str, options: list, default: Any, none: str, key: str, help: str
) -> Any:
    """A picker of the attribute in one role (money, travel time); ``None`` = none."""
    if present:  # the choice made before the presentation view, else the study's own
        kept = st.session_state.get(key, default)
        return kept if kept in options else default
    return col.selectbox(
        label,
        options,
        index=options.index(default),
        format_func=lambda n: none if n is None else study.schema[n].display,
        key=key,
        help=help,
        persist_state="session",
    )


def _setting(key: str, default: Any) -> Any:
    """A setting's value in the presentation view, where its widget is not drawn: the
    value chosen before (widgets keep it for the session), else its default."""
    return st.session_state.get(key, default)


key, study = ui.require_study("The tree explorer", key="te_study", container=side)
personal_ok = svc.is_per_respondent(study) and svc.has_personal_data(study)

# ---------------------------------------------------------------- whole study or one respondent
if present:  # the link says: a respondent named in it is shown, else the whole study
    wanted = st.query_params.get("respondent")
    resp = (
        next((r for r in study.respondents() if str(r) == str(wanted)), None)
        if wanted and personal_ok
        else None
    )
else:
    scope_key = f"te_scope::{key}"
    if st.session_state.get(f"_link_respondent::{study.key}") is not None:
        st.session_state[scope_key] = ONE  # a link to one respondent's tree
    elif st.session_state.get(scope_key) not in (WHOLE, ONE):
        st.session_state[scope_key] = WHOLE
    if personal_ok:
        scope = side.segmented_control(
            "View",
            [WHOLE, ONE],
            key=scope_key,
            required=True,
            help="Whole study: one tree of every respondent's comparisons, with the "
            "population's utilities and slopes (the study's answer). One respondent: that "
            "respondent's personal tree (the paper DT of their own comparisons) or their "
            "own leaves on a pooled tree's splits.",
        )
    else:
        scope = WHOLE
        side.caption(
            "Respondents made too few choice tasks each for a personal tree (median under "
            "3): one tree on every respondent's comparisons."
            if svc.is_per_respondent(study)
            else "Pooled data: one tree on all comparisons."
        )
    if scope == ONE:
        resp = ui.respondent_picker(study, key="te_resp", container=side)
    else:
        resp = None
        ui.show_in_url(respondent=None)

data = svc.respondent_data(study, resp)
if data.n_pairs == 0:
    st.warning("This respondent has no comparisons.")
    st.stop()
# many items are named in a worker: the tree is drawn meanwhile, its items by their ids
texts = svc.texts_job(study, resp)
named = texts is None or texts.state == "done"

with st.spinner("Preparing the tree kernels (once per start; first install compiles them)..."):
    svc.warm_up()

# ---------------------------------------------------------------- the model
choices = svc.tree_models(study)
opening, choice = svc.default_model(study, choices)
linked = ui.linked_model(choices)
default = linked if linked is not None else opening
if present:
    asked = st.query_params.get("model")
    method = asked if asked in choices else default
else:
    method = side.selectbox(
        "Model",
        choices,
        index=choices.index(default),
        format_func=lambda k: get(k).label,
        key=f"te_model::{key}::{default}",
        help="Opens on the study-level model: the most accurate of the pooled trees on "
        "this study's held-out comparison (fitted once on every respondent's comparisons; "
        "the linear-leaf tree's leaves hold slopes with their intervals). Paper DT: "
        "constant leaves, fitted on the comparisons shown (the whole study's or one "
        "respondent's).",
    )
    if linked is not None:
        side.caption(f"{get(linked).label}: the model this link asks for.")
    elif choice is None and not svc.background_choice():
        side.caption(
            "The held-out comparison of the tree models (which picks the default) runs "
            "when the Held-out evidence tab opens."
        )
    else:
        pooled = [m for m in choices if get(m).scope == "pooled"]
        target = None if choice is None else choice.best_among(pooled)
        if choice is None or (target is not None and opening != target):
            side.caption(
                "Comparing the tree models on this study (held-out) and fitting the "
                "winner; the page then opens on the most accurate study-level tree."
            )
            job = svc.choice_job(study) if choice is None else svc.fit_job(study, target)
            with side:
                waits.result(job, key="te_choice")
        elif method == opening and choice.scored(opening):
            side.caption(choice.reason(opening))
ui.show_in_url(model=method)

prune = int(_setting("te_prune", 1))
settings = None if present else side.expander("Settings", icon=":material/tune:")
if settings is not None:
    prune = settings.slider(
        "Prune small leaves: min. comparisons to split a node",
        1,
        30,
        1,
        key="te_prune",
        disabled=method != "dt",
        help="Refits the paper DT with min_samples_split: nodes with fewer comparisons stay "
        "leaves (the pooled trees have their size chosen by cross-validation).",
        persist_state="session",
    )
model = svc.fit_model(study, resp, method, min_samples_split=prune)
if isinstance(model, svc.Job):  # a pooled tree still being fitted: its progress, then it
    st.info(f"The {get(method).label} is fitted on the whole study first (once; kept on disk).")
    waits.result(model, key="te_fit", cancel=not present)
    st.stop()

# ---------------------------------------------------------------- settings (sidebar)
tree_depth = int(model.tree_.max_depth)
depth_key = f"te_depth::{tree_depth}"
depth = tree_depth if tree_depth < 2 else int(_setting(depth_key, min(tree_depth, 6)))
features = study.schema.names
sens_key = f"te_sensitive::{key}"
sensitive = list(_setting(sens_key, svc.default_sensitive(study)))
labels = svc.item_labels(data) if named else []
pick = -1
detail = _setting("te_detail", "compact")
if settings is not None:
    with settings:
        if tree_depth >= 2:
            depth = st.slider(
                "Max depth shown (deeper subtrees collapse)",
                1,
                tree_depth,
                min(tree_depth, 6),
                key=depth_key,
                persist_state="session",
            )
        else:
            st.caption(
                "The tree is a single leaf." if tree_depth == 0 else "The tree has a single split."
            )
        detail = st.segmented_control(
            "Leaf boxes",
            list(DETAIL),
            format_func=DETAIL.get,
            key="te_detail",
            required=True,
            default="compact",
            help="Compact: a leaf's rank and utility, its item count and the one or two "
            "slopes or trade-offs that set it apart (click a leaf for the rest; the Leaves "
            "tab lists everything). The downloads (SVG, PNG, DOT) show the boxes as drawn.",
            persist_state="session",
        )
        sensitive = st.multiselect(
            "Flag splits on sensitive attributes",
            features,
            default=svc.default_sensitive(study),
            format_func=lambda n: study.schema[n].display,
            key=sens_key,
            persist_state="session",
        )
        pick = st.selectbox(
            "Follow an item (its path is drawn in bold)",
            [-1, *range(data.n_items)] if named else [-1],
            format_func=lambda i: "(none)" if i < 0 else labels[i],
            key=f"te_item::{key}::{resp}",
            disabled=not named,
            help=None if named else f"Offered once the {data.n_items:,} items are named.",
        )
highlight = data.X[pick] if pick >= 0 else None

money = time_attr = None
if has_slopes(model):  # trade-offs: the analyst says what money and travel time are
    money_options, money_default, money_why = svc.money_choice(study)
    time_options, time_default, time_why = svc.time_choice(study)
    where = settings if settings is not None else side
    money = _role_pick(
        where,
        "Money attribute (divides every trade-off)",
        money_options,
        money_default,
        "(none: no trade-offs)",
        f"te_money::{key}",
        "Willingness to pay and the value of time are an attribute's slope divided by this "
        "attribute's slope. The study's own choice is pre-selected "
        f"({money_why if money_default is not None else 'none named'}; set at import with "
        "--money-attribute or the Add-a-study form). A ratio whose money slope is not "
        "clearly nonzero (95% CI includes 0) is shown as not identified, without a number.",
    )
    time_attr = _role_pick(
        where,
        "Travel-time attribute (value of time)",
        time_options,
        time_default,
        "(none: no value of time)",
        f"te_time::{key}",
        "The value of time divides this attribute's slope by the money slope. Only an "
        "attribute the analysis plan or you name is a travel time: a duration in seconds "
        f"may be an acceleration ({time_why}).",
    )
if settings is not None:
    ui.presentation_switch(key="te_present", where=side)

# ---------------------------------------------------------------- the picture and its lines
shown_depth = depth if 1 <= depth < tree_depth else None
view = svc.tree_view(
    model,
    data,
    highlight=highlight,
    sensitive=sensitive,
    title=svc.scope_title(study, resp, method),
    money=money,
    time=time_attr,
    named=named,
    detail=detail if detail in DETAIL else "compact",
)
n_resp = len(study.respondents()) if svc.is_per_respondent(study) else 0
label = get(method).label
pooled_structure = get(method).scope == "pooled" and resp is not None
if resp is None:
    what = f"{label} on all {study.data.n_pairs:,} comparisons" + (
        f" ({n_resp:,} respondents)" if n_resp else ""
    )
elif pooled_structure:
    what = (
        f"respondent {resp}'s leaves ({explain.plural(data.n_pairs, 'comparison')}) on the "
        f"splits the {label} learned from every respondent"
    )
else:
    what = f"respondent {resp}'s personal tree: {label} on their {data.n_pairs:,} comparisons"
caption = (
    f"**{ui.md(study.title)}** · {ui.md(what)}; leaf 1 is the best, grey italics: the 95% CI "
    "includes 0."
)
plan = svc.study_plan(study)
if choice is not None:
    evidence = choice.evidence_line(method, plan.baseline)
    if resp is None and get(method).scope == "respondent" and n_resp:
        evidence = evidence.replace(  # the figure is of per-respondent fits, say so
            f"{label} ", f"{label} (fitted per respondent) ", 1
        )
elif svc.background_choice():
    evidence = "Held-out accuracy: the tree models are being compared on this study" + (
        "." if present else " (progress in the sidebar)."
    )
else:
    evidence = "Held-out accuracy: in the Held-out evidence tab (computed when it opens)."
tree_name = f"tree-{key}" + (f"-{resp}" if resp is not None else "")

if present:  # the screen to project: the caption, the tree, the evidence line
    st.markdown(caption)
    ui.tree_with_downloads(view, name=tree_name, key="te_tree", max_depth=shown_depth, present=True)
    st.caption(ui.md(evidence))
    ui.leave_presentation("tree_explorer.py")
    st.stop()

st.caption(caption, help=HOW_TO_READ)
st.caption(ui.md(evidence))

tradeoffs = svc.tradeoff_table(model, money, time_attr) if money is not None else pd.DataFrame()
flagged = [
    n
    for n in sensitive
    if any(
        study.schema.columns[c].feature == study.schema.names.index(n)
        for c in model.tree_.feature[model.tree_.feature >= 0]
    )
]

tab_tree, tab_items, tab_leaves, tab_ev, tab_strad, tab_est = ui.lazy_tabs(
    ["Tree", "Items", "Leaves", "Held-out evidence", "Straddlers: discard vs keep", "Estimates"],
    key="te_view",
)
if tab_tree.open:
    with tab_tree:
        ui.tree_with_downloads(
            view,
            name=tree_name,
            key="te_tree",
            json_text=explain.to_json(model),
            max_depth=shown_depth,
        )
        if not named:
            st.caption(
                f"The leaves list their items by id until the {data.n_items:,} items are "
                "named (progress below); the tree is the same."
            )
            waits.result(texts, key="te_texts")
        if pick >= 0:
            leaf = int(model.apply(data.X[[pick]])[0])
            s = explain.leaf_summaries(model)[leaf]
            own = (
                f" (this item: {float(model.predict(data.X[[pick]])[0]):+.2f}, from the "
                "leaf's slopes)"
                if not tradeoffs.empty
                else ""
            )
            st.info(
                f"**{ui.md(labels[pick])}** is in leaf {s.number}: utility {s.mean:+.2f} ± "
                f"{s.sd:.2f}{own}, rank {s.rank} of "
                f"{explain.plural(model.n_leaves_, 'leaf', 'leaves')}.  \n"
                + (
                    "Because " + " AND ".join(map(ui.md, s.conditions))
                    if s.conditions
                    else "(root leaf)"
                )
            )
        if flagged:
            st.warning(
                "The tree splits on sensitive attribute(s): "
                + ", ".join(ui.md(study.schema[n].display) for n in flagged)
                + " (marked ⚠ in the tree)."
            )
        m1, m2, m3, m4 = st.columns(4)
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
            help="On the comparisons the tree was fitted on; the held-out accuracy (with a "
            "95% CI, beside the baselines) is the line above the tree and the Held-out "
            "evidence tab.",
        )
        if pooled_structure:
            st.caption(
                f"**Pooled structure, personal leaves.** The splits were learned once from "
                f"all {study.data.n_pairs:,} comparisons of the study's "
                f"{len(study.respondents()):,} respondents (the counts in the split boxes); "
                f"the leaves show respondent {ui.md(resp)}'s own posterior from their "
                f"{explain.plural(data.n_pairs, 'comparison')} and their items (a leaf none "
                "of their items falls in says so)."
            )
        scored = getattr(model, "cv_respondents_", None)
        if scored and getattr(model, "cv_error_", None) is not None:
            everyone = len(model.respondents_)
            st.caption(
                f"Strengths chosen by {model.n_folds}-fold cross-validation over choice "
                f"tasks: shrinkage toward the pooled fit {model.shrinkage_:.3g}, slope prior "
                f"ratio {model.slope_ratio_:.3g}; "
                + (
                    f"scored on the held-out tasks of a random {scored:,} of the "
                    f"{everyone:,} respondents (a cost bound: the splits and the final fit "
                    "use every comparison)."
                    if scored < everyone
                    else f"scored on all {everyone:,} respondents' held-out tasks."
                )
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
            "logit (MNL) is the econometrician's baseline (its coefficients: the Estimates "
            "tab); the pairwise logits are labelled variants. CI: 95% percentile bootstrap "
            "over respondents (over comparisons when there are none). " + ui.md(choice.plan)
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
