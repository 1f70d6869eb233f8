"""Tree explorer: the DT learned from one respondent's comparisons (or the pooled data)."""

from __future__ import annotations

import streamlit as st

from dashboard import _charts as charts
from dashboard import _services as svc
from dashboard import _ui as ui
from pbo_core import explain, metrics

st.title("Tree explorer")
st.caption(
    "The decision tree DT-PBO learns directly from the comparisons. Splits show the "
    "question, the number of comparisons it was chosen on and its consistency score (hover "
    "a box: it also says how many comparisons straddled the split and so reached neither "
    "child). Leaves are numbered in rank order (leaf 1 is the best) and show the posterior "
    "utility (mean ± sd, in units of the comparison noise) and their items by name with "
    "the comparisons each won and lost, coloured from red (low) to green (high)."
)

c_study, c_resp = st.columns(2)
key, study = ui.require_study("The tree explorer", key="te_study", container=c_study)
resp = ui.respondent_picker(study, key="te_resp", container=c_resp)
if resp is None:
    c_resp.caption("Pooled data: one tree on all comparisons.")
data = svc.respondent_data(study, resp)
if data.n_pairs == 0:
    st.warning("This respondent has no comparisons.")
    st.stop()

with st.spinner("Preparing the tree kernels (once per start; first install compiles them)..."):
    svc.warm_up()

c1, c2, c3 = st.columns(3)
prune = c2.slider(
    "Prune small leaves: min. comparisons to split a node",
    1,
    30,
    1,
    key="te_prune",
    help="Refits the tree with min_samples_split: nodes with fewer comparisons stay leaves.",
)
model = svc.fit_tree(study, resp, min_samples_split=prune)
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

labels = svc.item_labels(data)
pick = st.selectbox(
    "Follow an item (its path is drawn in bold)",
    [-1, *range(data.n_items)],
    format_func=lambda i: "(none)" if i < 0 else labels[i],
    key=f"te_item::{key}::{resp}",
)
highlight = data.X[pick] if pick >= 0 else None

title = study.title + (f" — respondent {resp}" if resp is not None else "")
shown_depth = depth if 1 <= depth < tree_depth else None
view = svc.tree_view(model, data, highlight=highlight, sensitive=sensitive, title=title)

m1, m2, m3, m4 = st.columns(4)
m1.metric("Leaves", model.n_leaves_)
m2.metric("Depth", tree_depth)
m3.metric("Comparisons", data.n_pairs)
m4.metric(
    "Training accuracy",
    f"{100 * metrics.accuracy(model, data):.1f}%",
    help="On the comparisons the tree was fitted on; see the Held-out evidence tab for "
    "accuracy on comparisons the tree did not see, with a 95% CI, next to the GP and the "
    "logit baseline.",
)

if pick >= 0:
    leaf = int(model.apply(data.X[[pick]])[0])
    s = explain.leaf_summaries(model)[leaf]
    st.info(
        f"**{labels[pick]}** is in leaf {s.number}: utility {s.mean:+.2f} ± {s.sd:.2f}, "
        f"rank {s.rank} of {explain.plural(model.n_leaves_, 'leaf', 'leaves')}.  \n"
        + ("Because " + " AND ".join(s.conditions) if s.conditions else "(root leaf)")
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
        + ", ".join(study.schema[n].display for n in flagged)
        + " (marked ⚠ in the tree)."
    )

tab_tree, tab_items, tab_leaves, tab_ev, tab_strad = ui.lazy_tabs(
    ["Tree", "Items", "Leaves", "Held-out evidence", "Straddlers: discard vs keep"],
    key="te_view",
)
if tab_tree.open:
    with tab_tree:
        ui.tree_with_downloads(
            view,
            name=f"tree-{key}" + (f"-{resp}" if resp is not None else ""),
            key="te_tree",
            json_text=explain.to_json(model),
            max_depth=shown_depth,
        )
if tab_items.open:
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
if tab_leaves.open:
    with tab_leaves:
        st.caption(
            "Every leaf with all its items by name; (won/lost) counts the respondent's "
            "comparisons each item won and lost."
        )
        st.dataframe(
            svc.leaf_table(model, data),
            hide_index=True,
            width="stretch",
            column_config={
                "utility": st.column_config.NumberColumn(format="%+.2f"),
                "sd": st.column_config.NumberColumn(format="%.2f"),
                "item names (won/lost)": st.column_config.TextColumn(width="large"),
            },
        )
if tab_ev.open:
    with tab_ev:
        st.caption(
            "Each comparison predicted by models fitted without it: 5-fold cross-validation "
            "over whole choice tasks when the study records them (otherwise over "
            "comparisons), the same folds for every method, on the data shown "
            f"({'respondent ' + str(resp) if resp is not None else 'pooled'}). The CI is a "
            "95% percentile bootstrap over the held-out comparisons; 50% is chance."
        )
        ev = svc.evidence(study, resp, min_samples_split=prune)
        if ev.empty:
            st.info("Too few choice tasks to hold any out.")
        else:
            st.altair_chart(charts.evidence_chart(ev), width="stretch")
            table = ev.assign(
                **{
                    "training": (100 * ev["train"]).round(1),
                    "held-out": (100 * ev["heldout"]).round(1),
                    "95% CI": [
                        f"{100 * lo:.1f} – {100 * hi:.1f}"
                        for lo, hi in zip(ev["ci_low"], ev["ci_high"], strict=True)
                    ],
                }
            )[["method", "training", "held-out", "95% CI", "n_heldout", "error"]]
            st.dataframe(table, hide_index=True, width="stretch")
            dt = ev.iloc[0]
            if dt["n_heldout"] < 30:
                st.caption(
                    f"Only {explain.plural(int(dt['n_heldout']), 'held-out comparison')}: "
                    "the intervals are wide; differences inside them are noise."
                )
if tab_strad.open:
    with tab_strad:
        st.caption(
            "A straddler is a comparison whose two items fall on different sides of a split. "
            "**Discard** (Eq. 8, default) leaves them out of the split search below; **keep** "
            "(App. C.2) sends them to the winner's side with the split column masked. Both "
            "trees are capped at the depth chosen here (paper Table 2 uses 4) and drawn at "
            "full width, one below the other."
        )
        cap = st.slider("Depth cap", 1, 8, 4, key="te_strad_cap")
        for mode in ("discard", "keep"):
            m = svc.fit_tree(study, resp, max_depth=cap, min_samples_split=prune, straddlers=mode)
            st.markdown(
                f"**{mode}** — {explain.plural(m.n_leaves_, 'leaf', 'leaves')}, depth "
                f"{m.tree_.max_depth}, training accuracy {100 * metrics.accuracy(m, data):.1f}%"
            )
            ui.interactive_tree(
                svc.tree_view(m, data, highlight=highlight, sensitive=sensitive),
                name=f"tree-{key}-{mode}",
                height=420,
            )
