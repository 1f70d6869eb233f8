"""User/item hierarchy: a tree over respondents whose leaves hold item trees (App. G.1)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import _charts as charts
from dashboard import _progress as waits
from dashboard import _services as svc
from dashboard import _ui as ui
from pbo_core import explain
from pbo_core.data import Study
from pbo_core.experiments.cohorts import current_arm_names

st.title("User/item hierarchy")
st.caption(
    "Respondents split into groups by their own features, each group with the item tree of "
    "its comparisons: who prefers what.",
    help="A **user tree** splits respondents by their own features (age, gender, region, "
    "...) into groups that agree on the direction of their comparisons (Eq. 15); each "
    "group gets an **item tree** trained on its comparisons. New users start from their "
    "group's tree. Below: **segments** split where the trade-offs differ (a "
    "parameter-instability test on each segment's logit), each with its slopes in units "
    "and its value of time, and the cold-start accuracy of new respondents beside the "
    "pooled and the covariate-interaction logit. The sidebar sets the study, the users and "
    "the trees' sizes.",
)
ui.sidebar_heading("User/item hierarchy")


def _with_users(s: svc.StudyStatus) -> bool:
    if s.info.kind != "ranking" and s.key not in ("sushi-a", "sushi-b"):
        study, _ = svc.get_study(s.key)
        return study is not None and study.users is not None
    return True


def _choice_tree(study: Study, key: str) -> None:
    """The choice-model tree (``mnl-tree``) on every respondent: its splits, its segments'
    slopes and value of time (a job; its progress while it runs)."""
    ct_job = svc.choice_tree_job(study)
    if ct_job.state != "done":
        st.caption(
            "The accuracy model of respondent segments: respondents split on their recorded "
            "features, a conditional logit per segment. Growing it takes a minute or two on "
            "a study of a thousand respondents; the result is kept for this study version."
        )
    ctree = waits.result(ct_job, key="hi_ctree")
    if ctree is None:
        return
    plan = svc.study_plan(study)
    names = study.schema.names
    money_attr = plan.money.attribute if plan.money and plan.money.attribute in names else None
    time_attr = plan.time.attribute if plan.time and plan.time.attribute in names else None
    view, segs = svc.choice_tree_parts(ct_job, money_attr, time_attr)
    ui.tree_with_downloads(view, name=f"choice-tree-{key}", key="hi_ctree_view")
    n_resp = int(ctree.n_respondents_leaf_.sum())
    terms = (
        "alternative constants, attribute slopes and the case-specific variables"
        if ctree.leaf_terms == "all"
        else "alternative constants and attribute slopes; the respondent features enter "
        "through the splits"
    )
    shrunk = (
        f"{ctree.n_leaves_} segments of {n_resp:,} respondents split on their recorded "
        f"features; each holds the plan's conditional logit (the baseline `mnl`: {terms}) "
        f"shrunk toward its parent segment's (strength {ctree.shrinkage_:g} situations). "
        if ctree.n_leaves_ > 1
        else f"One segment of {n_resp:,} respondents: the plan's conditional logit (the "
        f"baseline `mnl`: {terms}), which a split would have shrunk toward. "
    )
    st.caption(
        shrunk + "Splits, the strength and the pruning are chosen by the held-out "
        "log-likelihood of whole respondents (1.5-SE rule; `pbo_core.models.choice_tree`). "
        "Each box shows its respondents and choices, its value of time and the slopes that "
        "set it apart (grey italics: the 95 % interval includes 0; click a box for every "
        "slope, the table below lists them). Slopes: utility per unit ± the half-width of "
        "their 95 % interval (cluster-robust errors by respondent); value of time = time "
        "slope / money slope "
        + (
            f"(the plan's {ui.md(study.schema[money_attr].display)} and "
            f"{ui.md(study.schema[time_attr].display)}, in the units the study states: a time "
            "stated in minutes or hours is converted to hours), with Fieller's 95 % interval."
            if money_attr and time_attr
            else "needs the plan's money and travel-time attributes (Analysis plan)."
        )
    )
    if ctree.n_leaves_ == 1:
        st.info(
            "No split of the respondents earns its place: one segment, the baseline "
            "itself (no larger tree predicts held-out respondents' choices better "
            "by more than 1.5 standard errors)."
        )
    st.dataframe(
        segs,
        hide_index=True,
        width="stretch",
        column_config={"value of time [95% CI]": st.column_config.TextColumn(width="large")},
    )


# SwissMetro (bundled, respondent features) first: the page has content on first visit
keys = sorted(svc.usable_study_keys(_with_users), key=lambda k: k != "swissmetro")
key: str = "swissmetro"  # the cohort curves' study when no study has user groups here
study = None

if not keys:
    ui.unavailable("sushi-a", "The user/item hierarchy")
    st.caption("None of the bundled studies records respondent features.")
else:
    ui.linked_missing(keys)
    picked = st.session_state.get(svc.STUDY_KEY)
    if picked and picked not in keys:  # the study picked elsewhere has no user groups
        title = svc.study_titles().get(picked, str(picked))
        st.info(
            f"**{ui.md(title)}** records no respondent features, so it has no user groups: "
            "another study is shown. To build its hierarchy, import it again with its "
            "respondent features (`--respondent-features`, or tick them on the Add-a-study "
            "form)."
        )
    key = ui.synced_selectbox(
        "Study",
        keys,
        svc.STUDY_KEY,
        key="hi_study",
        format_func=svc.study_titles().get,
        container=st.sidebar,
    )
    ui.show_in_url(study=key)
    study, error = svc.get_study(key)
    if study is None or study.users is None:
        st.error(error or f"{ui.md(key)} has no respondent features.")
        st.stop()
    est = waits.result(svc.estimates_job(study), key="hi_study_vot")
    vot = est.value_of_time if est is not None else None
    if vot is not None:  # the study-level answer beside the segments', every page's number
        st.caption(
            "For the whole study (the plan's conditional logit on every choice, as on the "
            f"Tree explorer and in the report): {ui.md(vot['text'])}."
        )
    n_total = len(study.respondents())
    side = st.sidebar
    n_users = side.number_input(  # a study of fewer than 20 respondents: all of them
        "Users (first N)",
        min(20, n_total),
        n_total,
        min(500, n_total),
        step=50,
        key=f"hi_n::{key}",
    )
    depth = side.slider("User-tree depth", 1, 6, 3, key="hi_depth")
    min_leaf = side.slider("Min. users per group", 5, 200, 20, step=5, key="hi_min")
    item_depth = side.slider("Item-tree depth", 1, 6, 3, key="hi_idepth")

    h_job = svc.hierarchy_job(study, n_users, depth, min_leaf, item_depth)
    svc.segments_job(study, n_users, depth, min_leaf)  # started beside it
    cohort_root = st.session_state.get("cv_root_value", str(svc.results_home()))
    if svc.is_default_root(cohort_root) and svc.DEFAULT_GRIDS["hierarchy-swissmetro"].missing(
        cohort_root
    ):
        svc.default_grid_job("hierarchy-swissmetro", cohort_root)  # and the cohort curves
    h = waits.result(h_job, key="hi_fit")
    if h is None:
        st.stop()
    groups = svc.user_groups(h)

    tab_all, tab_group, tab_choice = ui.lazy_tabs(
        ["Whole hierarchy", "One user group", "Choice-model tree"], key="hi_view"
    )
    if tab_all.open:
        with tab_all:
            ui.tree_with_downloads(
                svc.hierarchy_view(h_job),
                name=f"hierarchy-{key}",
                key="hi_all",
                height=560,
            )
            st.caption(
                "User splits and user groups in blue; below each group hangs its item tree "
                "(collapse a group's box to hide it, or use 'Collapse below depth 2')."
            )
            m1, m2 = st.columns(2)
            m1.metric("User groups", len(groups))
            m2.metric("Users", int(groups["users"].sum()))
            st.dataframe(groups, hide_index=True, width="stretch")
    if tab_group.open:
        with tab_group:
            sizes = dict(zip(groups["group"], groups["users"], strict=True))
            g = st.selectbox(
                "User group",
                groups["group"].tolist(),
                format_func=lambda k: f"group {k}: {sizes[k]} users",
                key=f"hi_group::{key}",
            )
            row = groups[groups["group"] == g].iloc[0]
            st.info(f"**Who:** {ui.md(row['who'])}")
            model = h.item_tree(g)
            ui.tree_with_downloads(
                explain.tree_view(model, title=f"item tree of user group {g}"),
                name=f"hierarchy-{key}-group{g}",
                key="hi_group_tree",
                json_text=explain.to_json(model),
            )
            st.dataframe(svc.leaf_table(model), hide_index=True, width="stretch")

    if tab_choice.open:
        with tab_choice:
            _choice_tree(study, key)

    st.markdown("#### Segments with linear item models (slopes in units, value of time)")
    seg = waits.result(svc.segments_job(study, n_users, depth, min_leaf), key="hi_seg")
    if seg is not None:
        money_options, money_default, money_why = svc.money_choice(study)
        c_money, c_money_why = st.columns([1, 2])
        money = c_money.selectbox(
            "Money attribute (divides the value of time)",
            money_options,
            index=money_options.index(money_default),
            format_func=lambda n: (
                "(none: no value of time)" if n is None else study.schema[n].display
            ),
            key=f"hi_money::{key}",
            help="The value of time is the time slope divided by this attribute's slope. The "
            "study's own choice is pre-selected (set at import with --money-attribute or the "
            "Add-a-study form).",
        )
        if money is not None:
            c_money_why.caption(
                f"Value of time in units of **{ui.md(study.schema[money].display)}**"
                + (f" ({ui.md(money_why)})." if money == money_default else ".")
            )
        table = seg.segment_table(money) if money is not None else seg.segment_table("")
        st.caption(
            f"{len(table)} segment(s) of the first {n_users} respondents: a user tree split where "
            "the segment logits' coefficients are unstable (score test clustered by respondent, "
            "Bonferroni 5 %; `pbo_core.segments`, Eq. 5), each segment's logit shrunk toward "
            f"the pooled one (strength {seg.shrinkage_:.3g}, by CV over respondents). Slopes are "
            "utility per unit (logit scale), rounded to the precision of their 95 % interval; "
            "value of time = time slope / money slope in the units the study states (a time "
            "stated in minutes or hours is converted to hours) with Fieller's 95 % interval, "
            "*not identified* (no number) when the money slope's own 95 % interval includes 0, "
            "and not shown when the money slope is clearly positive."
        )
        # the value of time as text (a number with its interval, or "not identified" and why);
        # its numeric column stays in the table's CSV-like form for programs, not on the page
        shown = table.drop(columns=[c for c in table.columns if c.startswith("value of time (")])
        st.dataframe(
            shown,
            hide_index=True,
            width="stretch",
            column_config={"value of time [95% CI]": st.column_config.TextColumn(width="large")},
        )


st.markdown("#### Cohort curves: new users with and without the hierarchy")
if study is not None:  # what the full grid would cost, before anybody starts it
    st.caption(
        f"`python -m pbo_core.experiments hierarchy --study {ui.md(key)}`: "
        f"{ui.md(svc.hierarchy_grid_estimate(study))}."
    )
root = str(ui.results_root())  # the Convergence page's folder, checked
cohort_ready = ui.ensure_default_grids(root, ["hierarchy-swissmetro"], "SwissMetro cohort")
acc_folders = svc.folders_of_kind(root, "hierarchy-accuracy")
folders = svc.folders_of_kind(root, "hierarchy")
if acc_folders:
    st.caption(
        "SwissMetro: respondents arrive in a seeded order; each new respondent's 2 held-out "
        "tasks are predicted after 0, 1, ... of their own tasks by a **plain** DT on their "
        "answers, by the warm start from **all earlier respondents pooled**, by the "
        "warm start from their **user-tree group** (`hierarchy`: user tree on the modes, item "
        "trees on the group's profile comparisons), by the **segment logits** of the "
        "parameter-instability user tree (`hierarchy-mob`), and by the baselines, each "
        "updated from the respondent's answers: the **pooled logit** (`logit-pooled-update`) "
        "and the **covariate-interaction logit** (`logit-interaction`: mode constants and "
        "slopes interacted with purpose, GA, income, who pays, ...). Bigger cohorts: `python -m "
        "pbo_core.experiments hierarchy --study swissmetro --out DIR` (folder set on the "
        "Convergence page)."
    )
    folder = st.selectbox(
        "Result folder",
        acc_folders,
        key="hi_afolder",
        format_func=lambda f: ui.relative_folder(root, f),
    )
    # files written before an arm was renamed count under its current name
    rows = current_arm_names(svc.read_results(folder))
    # a grid's rows name their study; the default grid's older files are SwissMetro's
    of = rows["study"].astype(str) if "study" in rows else pd.Series("swissmetro", rows.index)
    others = sorted(set(of) - {str(key)})
    rows = rows[(of == str(key)) & (rows["cohort"] > 0)]
    if rows.empty:
        st.info(
            f"No cohort results of {ui.md(study.title if study is not None else key)} in "
            "this folder"
            + (f" (it holds {ui.md(', '.join(others))}'s)" if others else "")
            + f". Create them with `python -m pbo_core.experiments hierarchy --study "
            f"{ui.md(key)} --out results/hierarchy-{ui.md(key)}`."
        )
        st.stop()
    st.caption(f"{rows['user'].nunique()} new respondents in {rows['cohort'].nunique()} cohort(s).")
    st.markdown("**Held-out accuracy of new respondents per task answered (mean ± s.e.)**")
    st.altair_chart(
        charts.band_chart(
            svc.mean_se(rows, ["variant", "question"], "test_acc"),
            x="question",
            color="variant",
            x_title="own tasks answered",
            y_title="held-out pairwise accuracy",
        ),
        width="stretch",
    )
    st.markdown(
        "**Cold start beside the baselines** (mean [95 % CI] over the new respondents; the "
        "difference is paired, same respondents and held-out tasks)"
    )
    st.dataframe(svc.cold_start_table(rows), hide_index=True, width="stretch")
if not folders and not acc_folders and cohort_ready:
    st.info(
        f"No hierarchy results in {ui.shown_path(root, 'results folder')} (folder set on the "
        "Convergence page). Create "
        "them with `python -m pbo_core.experiments hierarchy --study swissmetro --out "
        "results/hierarchy-swissmetro` (or `--dataset A` for Sushi)."
    )
elif folders:
    folder = st.selectbox(
        "Result folder",
        folders,
        key="hi_folder",
        format_func=lambda f: ui.relative_folder(root, f),
    )
    rows = svc.read_results(folder)
    cohorts = sorted(rows["cohort"].unique().tolist())
    chosen = st.multiselect(
        "Cohorts", cohorts, default=cohorts[-1:] if len(cohorts) > 1 else cohorts, key="hi_coh"
    )
    metric = st.radio("Metric", ["regret", "rho_regret"], horizontal=True, key="hi_metric")
    sub = rows[rows["cohort"].isin(chosen)].copy()
    sub["curve"] = "cohort " + sub["cohort"].astype(str) + " · " + sub["variant"].astype(str)
    if sub.empty:
        st.info("Choose at least one cohort.")
    else:
        st.altair_chart(
            charts.band_chart(
                svc.mean_se(sub, ["curve", "question"], metric),
                x="question",
                color="curve",
                x_title="question",
                y_title=metric.replace("_", " "),
                title="plain DT vs warm start from the hierarchy",
            ),
            width="stretch",
        )
