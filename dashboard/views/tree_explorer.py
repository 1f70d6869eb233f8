"""Tree explorer: the DT learned from one respondent's comparisons (or the pooled data)."""

from __future__ import annotations

import streamlit as st

from dashboard import _services as svc
from dashboard import _ui as ui
from pbo_core import explain, metrics

st.title("Tree explorer")
st.caption(
    "The decision tree DT-PBO learns directly from the comparisons. Internal nodes show the "
    "split, the number of comparisons it was chosen on and its consistency score; leaves "
    "show the posterior utility (mean ± sd, in units of the comparison noise), the rank "
    "and the number of items, coloured from red (low) to green (high)."
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
dot = explain.to_dot(
    model,
    highlight=highlight,
    max_depth=depth if 1 <= depth < tree_depth else None,
    sensitive=sensitive,
    title=title,
)

m1, m2, m3, m4 = st.columns(4)
m1.metric("Leaves", model.n_leaves_)
m2.metric("Depth", tree_depth)
m3.metric("Comparisons", data.n_pairs)
m4.metric("Training accuracy", f"{100 * metrics.accuracy(model, data):.1f}%")

if pick >= 0:
    leaf = int(model.apply(data.X[[pick]])[0])
    s = explain.leaf_summaries(model)[leaf]
    st.info(
        f"**{labels[pick]}** is in leaf {s.leaf}: utility {s.mean:+.2f} ± {s.sd:.2f}, "
        f"rank {s.rank} of {model.n_leaves_} leaves.  \n"
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

tab_tree, tab_items, tab_leaves, tab_strad = ui.lazy_tabs(
    ["Tree", "Items", "Leaves", "Straddlers: discard vs keep"], key="te_view"
)
if tab_tree.open:
    with tab_tree:
        ui.tree_with_downloads(
            dot,
            name=f"tree-{key}" + (f"-{resp}" if resp is not None else ""),
            key="te_tree",
            json_text=explain.to_json(model),
        )
if tab_items.open:
    with tab_items:
        st.caption("Predicted utility (leaf mean) and competition rank (ties share a rank).")
        st.dataframe(
            svc.items_table(model, data),
            hide_index=True,
            width="stretch",
            column_config={"utility": st.column_config.NumberColumn(format="%+.2f")},
        )
if tab_leaves.open:
    with tab_leaves:
        st.dataframe(
            svc.leaf_table(model),
            hide_index=True,
            width="stretch",
            column_config={
                "utility": st.column_config.NumberColumn(format="%+.2f"),
                "sd": st.column_config.NumberColumn(format="%.2f"),
            },
        )
if tab_strad.open:
    with tab_strad:
        st.caption(
            "A straddler is a comparison whose two items fall on different sides of a split. "
            "**Discard** (Eq. 8, default) leaves them out of the split search below; **keep** "
            "(App. C.2) sends them to the winner's side with the split column masked. Both "
            "trees are capped at the depth chosen here (paper Table 2 uses 4)."
        )
        cap = st.slider("Depth cap", 1, 8, 4, key="te_strad_cap")
        cols = st.columns(2)
        for col, mode in zip(cols, ("discard", "keep"), strict=True):
            m = svc.fit_tree(study, resp, max_depth=cap, min_samples_split=prune, straddlers=mode)
            with col:
                st.markdown(f"**{mode}**")
                st.caption(
                    f"{m.n_leaves_} leaves, depth {m.tree_.max_depth}, training accuracy "
                    f"{100 * metrics.accuracy(m, data):.1f}%"
                )
                st.graphviz_chart(
                    explain.to_dot(m, highlight=highlight, sensitive=sensitive), width="content"
                )
