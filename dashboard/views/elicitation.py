"""Live elicitation: the analyst answers "A or B?" and the tree updates after each answer."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import _charts as charts
from dashboard import _services as svc
from dashboard import _ui as ui
from dashboard._uploads import upload_name
from pbo_core import explain
from pbo_core.benchmarks import get_benchmark
from pbo_core.session import ElicitationSession

RULES = {
    "dt": "DT-PBO (qEUBO over leaves + top-leaf rule)",
    "dt-literal": "DT-PBO, Algorithm 1 literally (qEUBO only)",
    "gp": "GP-Laplace with EUBO",
}
MAX_ITEMS = 200

st.title("Live elicitation")
st.caption(
    "You are the decision maker: the app asks which of two options you prefer, chosen by "
    "qEUBO on the current surrogate. After each answer the tree and its leaf posteriors "
    "are refitted; the favourite is the compared option with the highest predicted utility."
)

mode = st.radio(
    "Options",
    ["items", "benchmark"],
    format_func={"items": "Items of a study", "benchmark": "2-D benchmark function"}.get,
    horizontal=True,
    key="el_mode",
)
c1, c2, c3 = st.columns([2, 2, 1])
max_items: int | None = None
if mode == "items":
    keys = svc.usable_study_keys()
    default = keys.index("electricity") if "electricity" in keys else 0
    source = c1.selectbox(
        "Study",
        keys,
        index=default,
        key="el_study",
        format_func=svc.study_titles().get,
    )
    study, error = svc.get_study(source)
    if study is None:
        ui.unavailable(source, "Live elicitation on this study")
        st.stop()
    n_items = len(np.unique(np.asarray(study.data.ids()).astype(str)))
    if n_items > MAX_ITEMS:
        max_items = MAX_ITEMS
        c1.caption(
            f"{n_items:,} distinct items: a seeded random sample of {MAX_ITEMS} is used "
            "(change the seed for another sample)."
        )
else:
    fns = svc.two_d_benchmarks()
    source = c1.selectbox(
        "Function", fns, index=fns.index("branin") if "branin" in fns else 0, key="el_fn"
    )
method = c2.selectbox("Query rule", list(RULES), format_func=RULES.get, key="el_method")
seed = int(c3.number_input("Seed", min_value=0, value=0, step=1, key="el_seed"))

config = (mode, source, method, seed, max_items)
sessions: dict = st.session_state.setdefault("el_sessions", {})
if config not in sessions:
    sessions[config] = svc.new_elicitation(mode, source, method, seed, max_items)
sess: ElicitationSession = sessions[config]


def _answer(side: str) -> None:
    sessions[config].answer(side)


def _undo() -> None:
    if sessions[config].can_undo:
        sessions[config].undo()


def _auto(n: int) -> None:
    s = sessions[config]
    for _ in range(n):
        s.answer(s.oracle_winner())


def _restart() -> None:
    sessions[config] = svc.new_elicitation(mode, source, method, seed, max_items)


# --------------------------------------------------------------------------- the question
q = sess.next_query()
st.subheader(f"Question {sess.n_answers + 1}: which do you prefer?")
cols = st.columns(2)
for col, side, x, idx in ((cols[0], "A", q.a, q.index_a), (cols[1], "B", q.b, q.index_b)):
    with col.container(border=True):
        st.markdown(f"**{side}** · {sess.label(idx)}")
        if sess.items is not None and idx is not None and "message" in sess.items.columns:
            st.write(str(sess.items["message"].iloc[idx]))
        elif sess.items is not None and idx is not None and "name_en" in sess.items.columns:
            st.write(str(sess.items["name_en"].iloc[idx]))
        ui.full_table(svc.option_table(sess, x), hide_index=True, width="stretch")
        if mode == "benchmark":
            u = float(sess.problem.utility(x[None, :])[0])
            st.caption(f"True utility f(x) = {u:.4g} (shown so you can play the decision maker).")
        st.button(
            f"I prefer {side}",
            key=f"el_pick_{side}",
            on_click=_answer,
            args=(side,),
            type="primary",
            width="stretch",
        )

b1, b2, b3, b4 = st.columns(4)
b1.button("Undo last answer", key="el_undo", on_click=_undo, disabled=not sess.can_undo)
if sess.has_truth:
    b2.button("Let the true utility answer", key="el_oracle", on_click=_auto, args=(1,))
    b3.button("Answer 10 by the true utility", key="el_oracle10", on_click=_auto, args=(10,))
b4.button("Start over", key="el_restart", on_click=_restart)

# --------------------------------------------------------------------------- the model
model = sess.model
st.divider()
m = st.columns(4)
m[0].metric("Answers", sess.n_answers)
if sess.is_tree:
    m[1].metric("Leaves", model.n_leaves_)
m[2].metric("Favourite", sess.label(sess.recommendation))
if sess.has_truth:
    m[3].metric("Regret of the favourite", f"{sess.regret():.3g}")

fav = sess.X[sess.recommendation]
why = sess.explanation()
with st.container(border=True):
    st.markdown(f"**Current favourite: {sess.label(sess.recommendation)}**")
    if sess.is_tree:
        leaf = sess.leaf_of(fav)
        s = explain.leaf_summaries(model)[leaf]
        st.markdown(
            f"Leaf {s.leaf} (rank {s.rank} of {model.n_leaves_}, utility {s.mean:+.2f} ± "
            f"{s.sd:.2f}). **Why:** "
            + (" AND ".join(why) if why else "no split yet: every option is in one leaf.")
        )
    fav_table = svc.option_table(sess, fav)
    st.dataframe(
        pd.DataFrame([fav_table["value"].tolist()], columns=fav_table["attribute"].tolist()),
        hide_index=True,
        width="stretch",
    )

if mode == "benchmark":
    f = get_benchmark(source)
    grid = svc.benchmark_grid(source)
    boxes = svc.leaf_boxes(model) if sess.is_tree else None
    pts = svc.session_points(sess)
    left, right = st.columns(2)
    left.altair_chart(
        charts.partition_chart(
            grid, boxes, pts, title=f"{f.name}: true utility and the learned partition"
        ),
        width="content",
    )
    if boxes is not None:
        right.altair_chart(charts.leaf_utility_chart(boxes), width="content")

if sess.is_tree:
    tab_tree, tab_leaves, tab_items, tab_hist = ui.lazy_tabs(
        ["Tree", "Leaf posteriors", "Items", "Answers"], key="el_view"
    )
    if tab_tree.open:
        with tab_tree:
            dot = explain.to_dot(model, highlight=fav, title=f"after {sess.n_answers} answers")
            ui.tree_with_downloads(
                dot, name=f"elicitation-{source}", key="el_tree", json_text=explain.to_json(model)
            )
    if tab_leaves.open:
        with tab_leaves:
            st.dataframe(svc.leaf_table(model), hide_index=True, width="stretch")
else:
    tab_items, tab_hist = ui.lazy_tabs(["Items", "Answers"], key="el_view_gp")

if tab_items.open:
    with tab_items:
        if mode == "items":
            table = svc.session_items_table(sess)
            st.dataframe(table, hide_index=True, width="stretch")
            top = table.head(20).copy()
            top["label"] = top["item"].astype(str)
            st.altair_chart(charts.utility_bars(top, label="label"), width="stretch")
        else:
            st.caption(f"{len(sess.X)} points asked so far.")
            st.dataframe(
                pd.DataFrame(sess.X, columns=sess.schema.names).assign(
                    utility=sess.predict(), true=sess.problem.utility(sess.X)
                ),
                width="stretch",
            )

if tab_hist.open:
    with tab_hist:
        frame = sess.to_frame()
        st.dataframe(frame, hide_index=True, width="stretch")
        st.download_button(
            "Download answers (CSV)",
            frame.to_csv(index=False),
            file_name=f"elicitation-{source}-{method}.csv",
            mime="text/csv",
            key="el_download",
            on_click="ignore",
            disabled=frame.empty,
        )
        up = st.file_uploader(
            "Load answers (a CSV downloaded here: winner/loser ids and features)",
            type=["csv"],
            key="el_upload",
        )
        if up is not None and st.session_state.get("el_loaded") != (up.file_id, config):
            try:
                df = pd.read_csv(io.BytesIO(up.getvalue()))
                sessions[config] = ElicitationSession.from_frame(df, **sess.config())
            except Exception as exc:  # a wrong file is reported, not raised
                st.error(f"Could not load {upload_name(up.name)}: {exc}")
            else:
                st.session_state["el_loaded"] = (up.file_id, config)
                st.rerun()
