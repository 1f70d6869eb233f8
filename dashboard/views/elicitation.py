"""Live elicitation: the analyst answers "A or B?" and the tree updates after each answer.

Sessions are stored in SQLite in the per-user data folder (``dashboard/_services/sessions``):
each action is written, with the session id and its sequence number, in one transaction
when the click arrives (before the model is refitted), so a browser refresh or an app
restart resumes them and loses at most an answer still in flight. The URL carries the
session id (``?session=...``): a reload, a bookmark or a shared link resumes exactly that
session, and a visitor without one starts a new session; the session list shows only this
browser's sessions (:func:`dashboard._ui.visitor_owner`). A click that arrives for a
question already answered (a double click) is not counted twice, and a write that fails is
shown and not applied. Everything an answer changes is drawn inside one
``st.fragment``: an answer reruns only that fragment (not the sidebar, the controls or the
other pages' work), and the tree's DOT and the tables are cached per session state.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import _charts as charts
from dashboard import _services as svc
from dashboard import _session_files as sf
from dashboard import _ui as ui
from dashboard._services import elicitation as el
from dashboard._services import sessions as store
from dashboard._uploads import upload_name
from pbo_core import explain
from pbo_core.benchmarks import get_benchmark
from pbo_core.registry import names
from pbo_core.session import ElicitationSession

MAX_ITEMS = 200
MODES = {"items": "Items of a study", "benchmark": "2-D benchmark function"}
#: A session resumed within this many seconds of its last write by an earlier server
#: process gets a note that an answer given while the server stopped may be missing.
RESTART_NOTE_S = 3600.0

st.title("Live elicitation")
st.caption(
    "You are the decision maker: answer which of two options you prefer; the tree and its "
    "favourite update after each answer.",
    help="The app asks which of two options you prefer, chosen by qEUBO on the current "
    "surrogate. After each answer the tree and its leaf posteriors are refitted; the "
    "favourite is the compared option with the highest predicted utility. **No "
    "preference** enters the model as one comparison each way (it pulls the two options' "
    "utilities together); **Skip** records nothing and asks another question. Sessions are "
    "saved after every answer and survive a refresh or a restart; the address bar holds "
    "this session's link (bookmark it, or share it to let someone continue it). The "
    "sidebar sets the options, the query rule, the seed and the participant's name.",
)
ui.sidebar_heading("Live elicitation")


def _set_controls(rec: store.SessionRecord) -> None:
    """Point the page's controls at a stored session (before the widgets are drawn)."""
    st.session_state["el_mode"] = rec.kind
    st.session_state["el_study" if rec.kind == "items" else "el_fn"] = rec.source
    if rec.kind == "items":
        st.session_state[svc.STUDY_KEY] = rec.source
    if rec.method in names(role="elicitation"):
        st.session_state["el_method"] = rec.method
    st.session_state["el_seed"] = rec.seed
    st.session_state["el_participant"] = rec.participant


def _participant() -> str:
    """The participant name typed on the page (optional, stored with the session)."""
    return str(st.session_state.get("el_participant") or "").strip()[:80]


def _rename() -> None:
    sid = active.get(config)
    if sid is not None:
        store.set_participant(sid, _participant())


owner = ui.visitor_owner()
active: dict[Any, str] = st.session_state.setdefault("el_active", {})  # config -> session id
cache: dict[str, ElicitationSession] = st.session_state.setdefault("el_sessions", {})  # by id
n_base: dict[str, int] = st.session_state.setdefault("el_n_base", {})  # loaded rows, by id

resumed = st.session_state.pop("el_resume_next", None)  # a session file loaded below
rec_next = store.load_session(resumed) if resumed is not None else None
if rec_next is not None:  # its controls are set here, before their widgets are drawn
    _set_controls(rec_next)
    active[rec_next.config] = rec_next.id

if "el_booted" not in st.session_state:  # a new browser session: resume the URL's session
    st.session_state["el_booted"] = True
    wanted = st.query_params.get("session")
    rec0 = store.load_session(wanted) if wanted else None
    if rec0 is not None and rec0.kind == "items" and not svc.visible(rec0.source):
        rec0 = None  # on another visitor's private study: as if no session had this id
    if rec0 is not None and len(rec0.base) + len(rec0.actions) > sf.MAX_ANSWERS:
        st.warning(  # opening it would replay (refit) every answer: never
            f"This link's session holds more than {sf.MAX_ANSWERS} answers, the most a "
            "session may hold here: a new session was started."
        )
        rec0 = None
    elif rec0 is not None:
        _set_controls(rec0)
        st.session_state["el_boot"] = rec0.id
        if store.server_stopped(rec0.server):  # not: another process still serving
            if time.time() - rec0.updated < RESTART_NOTE_S:
                st.session_state["el_restart_note"] = (rec0.n_answers, rec0.updated)
            store.mark_served(rec0.id)
    elif wanted:
        st.warning("No saved session has this link's id here: a new session was started.")

note = st.session_state.pop("el_restart_note", None)
if note is not None:
    n0, when = note
    at_time = time.strftime("%H:%M:%S", time.localtime(when))
    st.warning(
        f"The server was restarted after this session's last saved answer ({n0} answer"
        f"{'' if n0 == 1 else 's'} saved, the last at {at_time}). "
        "An answer given while it was stopping was not saved: the question below is the "
        "next unanswered one."
    )

# --------------------------------------------------------------------------- controls
side = st.sidebar
mode = side.radio("Options", list(MODES), format_func=MODES.get, horizontal=True, key="el_mode")
c1 = c2 = c3 = side
max_items: int | None = None
if mode == "items":
    keys = svc.usable_study_keys()
    ui.linked_missing(keys)
    source = ui.synced_selectbox(
        "Study",
        keys,
        svc.STUDY_KEY,
        key="el_study",
        format_func=svc.study_titles().get,
        focus=False,  # answers need the cores more than the study's other pages do
        container=side,
    )
    ui.show_in_url(study=source)
    study, error = svc.get_study(source)
    if study is None:
        ui.unavailable(source, "Live elicitation on this study")
        st.stop()
    n_items = svc.n_distinct_items(study)
    if n_items > MAX_ITEMS:
        max_items = MAX_ITEMS
        c1.caption(
            f"{n_items:,} distinct items: a seeded random sample of {MAX_ITEMS} is used "
            "(change the seed for another sample)."
        )
else:
    fns = svc.two_d_benchmarks()
    if st.session_state.get("el_fn") not in fns:
        st.session_state["el_fn"] = "branin" if "branin" in fns else fns[0]
    source = c1.selectbox("Function", fns, key="el_fn")
linked_rule = ui.linked_model(names(role="elicitation"))
if linked_rule is not None and st.session_state.pop("_link_model", None):
    st.session_state["el_method"] = linked_rule
method = c2.selectbox(
    "Query rule", names(role="elicitation"), format_func=svc.rule_label, key="el_method"
)
seed = int(c3.number_input("Seed", min_value=0, value=0, step=1, key="el_seed"))
side.text_input(
    "Participant name (optional)",
    key="el_participant",
    max_chars=80,
    on_change=_rename,
    help="Stored with this session and shown in its exports (CSV and JSON).",
)
config = (mode, source, method, seed, max_items)
words = svc.wording(mode, source)

if config not in active:  # the link's session if it has these settings, else a new one
    boot = st.session_state.pop("el_boot", None)
    rec = store.load_session(boot) if boot else None
    if rec is not None and rec.config == config:
        active[config] = rec.id
        if rec.n_answers:
            st.toast(f"Resumed the saved session with {rec.n_answers} answers.")
    else:  # stored with its first answer (no row for a visit without answers)
        active[config] = store.new_session_id()


def _open(sid: str) -> ElicitationSession:
    """The live session ``sid`` (replayed from the store the first time, bounded and
    checked: :func:`dashboard._session_files.replay`)."""
    if sid not in cache:
        rec = store.load_session(sid)
        fresh = svc.new_elicitation(*config)
        if rec is not None:
            fresh = sf.replay(fresh, rec.base, rec.actions, "the saved session")
        cache[sid] = fresh
        n_base[sid] = 0 if rec is None else len(rec.base)
    return cache[sid]


def _current() -> tuple[str, ElicitationSession]:
    sid = active[config]
    try:
        return sid, _open(sid)
    except sf.SessionRefused as exc:  # too long or not replayable: never a traceback
        st.session_state["el_write_error"] = f"{ui.err(exc)}: a new session was started."
        sid = active[config] = store.new_session_id()  # a draft: stored with its first answer
        return sid, _open(sid)


def _summary(sid: str, sess: ElicitationSession) -> None:
    fav = sess.favourite
    name = svc.item_name(sess, fav, max_len=60) if fav is not None else ""
    try:
        store.set_summary(sid, sess.n_answers, name)
    except sqlite3.Error as exc:  # the answers are saved; only the list's summary is late
        st.warning(
            f"The session list's summary was not updated ({ui.err(exc)}); answers are saved."
        )


# --------------------------------------------------------------------------- callbacks
# An action is written to SQLite (one short transaction) before it is applied: a failed
# write is shown and the action not applied, so the page never shows an unsaved answer.
# The list's summary (favourite) is written after the next question is drawn.
def _record(sid: str, sess: ElicitationSession, action: str) -> bool:
    """Store ``action`` as the session's next one; ``False`` (and a message) on failure."""
    seq = len(sess.actions) - n_base.get(sid, 0)
    try:
        store.record_action(
            sid,
            seq,
            action,
            sess.n_answers + (action != "skip"),
            draft=store.Draft(config, owner, _participant()),
        )
    except (sqlite3.Error, store.AnswerConflict, KeyError) as exc:
        st.session_state["el_write_error"] = (
            f"Answer {sess.n_answers + 1} was **not saved** ({ui.err(type(exc).__name__)}: "
            f"{ui.err(exc)}). "
            "It was not counted; answer again (or reload the page)."
        )
        return False
    return True


def _full(sess: ElicitationSession) -> bool:
    """Has the session reached the most answers a session holds (then say so)?"""
    if len(sess.actions) < sf.MAX_ANSWERS:
        return False
    st.session_state["el_notice"] = (
        f"This session holds {sf.MAX_ANSWERS} answers, the most a session may hold here: "
        "download it, or start over for a new one."
    )
    return True


def _act(action: str, at: int | None = None) -> None:
    started = el.start_answer_clock()  # the server's own time of this answer, see live()
    sid, sess = _current()
    if at is not None and at != len(sess.actions):  # a second click on an answered question
        st.session_state["el_notice"] = "That click was for a question already answered."
        return
    if _full(sess):
        return
    if _record(sid, sess, action):
        started["stored"] = time.monotonic()  # phases of the answer clock (see live())
        sess.apply(action)
        started["refit"] = time.monotonic()
        st.session_state["el_dirty"] = sid
        st.session_state["el_clock"] = (started, sid, at, action)


def _undo() -> None:
    sid, sess = _current()
    seq = len(sess.actions) - 1 - n_base.get(sid, 0)
    if not sess.can_undo or seq < 0:
        if sess.can_undo:
            st.session_state["el_notice"] = "Answers loaded from a file cannot be undone here."
        return
    n_after = sess.n_answers - (sess.actions[-1] != "skip")
    try:
        undone = store.undo_action(sid, seq, n_after)
    except sqlite3.Error as exc:
        st.session_state["el_write_error"] = (
            f"Undo was **not saved** ({ui.err(exc)}); nothing changed."
        )
        return
    if not undone:  # the saved session moved on (another tab): do not diverge from it
        st.session_state["el_write_error"] = (
            "Undo does not match the saved session (changed in another tab?): reload the page."
        )
        return
    sess.undo()
    st.session_state["el_dirty"] = sid


def _auto(n: int) -> None:
    sid, sess = _current()
    for _ in range(n):
        if _full(sess):
            break
        action = "AB"[sess.oracle_winner()]
        if not _record(sid, sess, action):
            break
        sess.apply(action)
    st.session_state["el_dirty"] = sid


def _restart() -> None:
    active[config] = store.new_session_id()  # stored with its first answer


def _resume(sid: str) -> None:
    rec = store.load_session(sid)
    if rec is None:
        return
    _set_controls(rec)
    active[rec.config] = rec.id
    st.session_state["el_full_rerun"] = True  # the controls above the fragment change


def _delete(sid: str) -> None:
    store.delete_session(sid)
    cache.pop(sid, None)
    for cfg, s in list(active.items()):
        if s == sid:
            del active[cfg]
    st.session_state["el_full_rerun"] = True


# --------------------------------------------------------------------------- the live part
def _option(col: Any, side: str, sess: ElicitationSession, x: Any, idx: int | None) -> None:
    with col.container(border=True):
        items = sess.items
        if items is not None and idx is not None and "message" in items.columns:
            st.markdown(f"**{side}**")
            st.markdown(ui.md(items["message"].iloc[idx]))
        else:
            st.markdown(f"**{side}** · {ui.md(svc.item_name(sess, idx, x))}")
        ui.full_table(el.option_arrow(sess, x, idx), hide_index=True, width="stretch")
        if mode == "benchmark":
            u = float(sess.problem.utility(x[None, :])[0])
            st.caption(f"True utility f(x) = {u:.4g} (shown so you can play the decision maker).")
        st.button(
            words.pick.format(side=side),
            key=f"el_pick_{side}_{len(sess.actions)}",  # one widget per question: see live()
            on_click=_act,
            args=(side, len(sess.actions)),
            type="primary",
            width="stretch",
        )


def _favourite(sess: ElicitationSession, sid: str) -> None:
    fav = sess.favourite
    model = sess.model
    with st.container(border=True):
        if fav is None:
            st.markdown(f"**{words.favourite}: none yet.** Answer a question to get one.")
            return
        st.markdown(f"**{words.favourite}: {ui.md(svc.item_name(sess, fav))}**")
        point = sess.favourite_trace[-1]
        if sess.is_tree:
            leaf = sess.leaf_of(sess.X[fav])
            s = explain.leaf_summaries(model)[leaf]
            if model.n_leaves_ == 1:
                st.markdown("No split yet: every option is in one leaf, so no utility differs.")
            else:
                why = sess.explanation()
                # the leaf's number as the tree draws it (rank order, 1 = best), never the
                # model's internal leaf index
                same = abs(point.mean - s.mean) < 5e-3 and abs(point.sd - s.sd) < 5e-3
                at_centre = (
                    ""
                    if same
                    else f"; the tree shows the leaf at its centre, {s.mean:+.2f} ± {s.sd:.2f}"
                )
                st.markdown(
                    f"Leaf {s.number} of the tree (rank {s.rank} of {model.n_leaves_}; this "
                    f"option's utility {point.mean:+.2f} ± {point.sd:.2f}{at_centre}). "
                    "**Why:** " + " AND ".join(map(ui.md, why))
                )
        else:
            st.markdown(f"Predicted utility {point.mean:+.2f} ± {point.sd:.2f}.")
        st.dataframe(el.favourite_arrow(sess, fav), hide_index=True, width="stretch")


def _link(sid: str) -> str:
    """This session's address (the page's URL with ``?session=<id>``)."""
    try:
        url = str(st.context.url or "")
    except Exception:  # no browser behind this run
        url = ""
    return f"{url.split('?')[0]}?session={sid}"


def _sessions_tab(sid: str, sess: ElicitationSession) -> None:
    recs = store.list_sessions(owner=owner)
    st.caption(
        "Saved on the server after every answer. Listed: the sessions this browser "
        "started; another person's session opens only from its link."
    )
    if sess.actions:
        st.markdown("Link to this session (bookmark it, or share it to let someone continue it):")
        st.code(_link(sid), language=None)
    else:
        st.markdown("This session is saved with its first answer; its link works from then on.")
    if recs:
        ids = [r.id for r in recs]
        titles = {r.id: r.title() + ("  (this one)" if r.id == sid else "") for r in recs}
        pick = st.selectbox("Saved sessions", ids, format_func=titles.get, key="el_pick_session")
        b1, b2 = st.columns(2)
        b1.button("Resume this session", key="el_resume", on_click=_resume, args=(pick,))
        b2.button("Delete this session", key="el_delete", on_click=_delete, args=(pick,))
    rec = store.load_session(sid)
    if rec is not None:
        st.download_button(
            "Download this session (JSON, with the participant name)",
            store.export_json(sess, rec),
            file_name=f"elicitation-{source}-{sid}.json",
            mime="application/json",
            key="el_download_json",
            on_click="ignore",
        )
    up = st.file_uploader(
        "Resume a session from a JSON file downloaded here", type=["json"], key="el_upload_json"
    )
    if up is not None and st.session_state.get("el_loaded_json") != up.file_id:
        try:  # bounded and replayed before anything is stored (dashboard/_session_files.py)
            got = sf.check_json(up.getvalue(), **_config_rules())
            loaded = sf.replay(svc.new_elicitation(*got.config), got.base, got.actions)
            new = store.import_json(up.getvalue(), owner=owner)
        except ValueError as exc:
            st.error(f"Could not load that file: {ui.err(exc)}")
        else:
            st.session_state["el_loaded_json"] = up.file_id
            cache[new] = loaded
            n_base[new] = len(got.base)
            st.session_state["el_resume_next"] = new  # _resume() at the top of the rerun
            st.rerun()


def _config_rules() -> dict[str, Any]:
    """What a loaded session's configuration may be: what this page offers this visitor."""

    def page_max_items(key: str) -> int | None:
        study, _ = svc.get_study(key)
        return MAX_ITEMS if study is not None and svc.n_distinct_items(study) > MAX_ITEMS else None

    return {
        "studies": svc.usable_study_keys(),
        "functions": svc.two_d_benchmarks(),
        "methods": names(role="elicitation"),
        "page_max_items": page_max_items,
    }


@ui.fragment
def live() -> None:
    """The question, the favourite, the charts and the tabs: what an answer changes."""
    if st.session_state.pop("el_full_rerun", False):
        st.rerun()
    sid, sess = _current()
    if sess.actions:  # stored: the address bar holds its link
        if st.query_params.get("session") != sid:
            st.query_params["session"] = sid
    elif "session" in st.query_params:  # a session with no answer has no link yet
        del st.query_params["session"]
    answered = st.session_state.pop("el_clock", None)  # this rerun answers a question
    token = svc.state_token(sid, sess)
    q = sess.next_query()
    if answered is not None:
        answered[0]["asked"] = time.monotonic()
    st.subheader(f"Question {sess.n_answers + 1}: {ui.md(words.question)}")
    cols = st.columns(2)
    _option(cols[0], "A", sess, q.a, q.index_a)
    _option(cols[1], "B", sess, q.b, q.index_b)

    b = st.columns(6)
    # A click answers this question only. The answer buttons' keys carry the question's
    # number: Streamlit binds a callback's args to the widget's latest render, so with one
    # key per side the second click of a double click (sent before the page redrew) would
    # carry the *next* question's number and be counted. A stale key has no callback.
    at = len(sess.actions)
    tie, skip = f"el_tie_{at}", f"el_skip_{at}"
    b[0].button("No preference", key=tie, on_click=_act, args=("tie", at), width="stretch")
    b[1].button("Skip this question", key=skip, on_click=_act, args=("skip", at))
    b[2].button("Undo", key="el_undo", on_click=_undo, disabled=not sess.can_undo)
    if sess.has_truth:
        b[3].button("Let the true utility answer", key="el_oracle", on_click=_auto, args=(1,))
        b[4].button("Answer 10 by the true utility", key="el_oracle10", on_click=_auto, args=(10,))
    b[5].button("Start over", key="el_restart", on_click=_restart)
    if answered is not None:
        answered[0]["drawn"] = time.monotonic()
    if st.session_state.pop("el_dirty", None) == sid:
        _summary(sid, sess)
        if answered is not None:
            answered[0]["summary"] = time.monotonic()
    error = st.session_state.pop("el_write_error", None)
    if error:
        st.error(error)
    notice = st.session_state.pop("el_notice", None)
    if notice:
        st.info(notice)

    model = sess.model
    st.divider()
    m = st.columns(4)
    m[0].metric("Answers", sess.n_answers)
    if sess.is_tree:
        m[1].metric("Leaves", model.n_leaves_)
    fav = sess.favourite
    m[2].metric("Favourite", "—" if fav is None else ui.md(svc.item_name(sess, fav, max_len=40)))
    if sess.has_truth:
        m[3].metric("Regret of the favourite", "—" if fav is None else f"{sess.regret():.3g}")
    if sess.n_skipped:
        m[0].caption(f"{sess.n_skipped} skipped")
    if answered is not None:
        answered[0]["shown"] = time.monotonic()  # the next question and count are sent

    left, right = st.columns([1, 1])
    with left:
        _favourite(sess, sid)
    trace = svc.favourite_trace(sess, svc.item_names(sid, sess))
    templates = svc.chart_templates()  # Altair specs built once, filled per answer
    if len(trace):
        right.vega_lite_chart(
            charts.with_data(templates["trace"], {"trace": trace}), width="stretch"
        )

    if mode == "benchmark":
        f = get_benchmark(source)
        grid = svc.benchmark_grid(source)
        boxes = svc.leaf_boxes(model) if sess.is_tree else svc.no_leaf_boxes()
        pts = svc.session_points(sess)
        l2, r2 = st.columns(2)
        part = charts.with_data(
            templates["partition"], {"grid": grid, "boxes": boxes, "points": pts}
        )
        part["title"] = f"{f.name}: true utility and the learned partition"
        l2.vega_lite_chart(part, width="content")
        if sess.is_tree:
            r2.vega_lite_chart(
                charts.with_data(templates["leaves"], {"boxes": boxes}), width="content"
            )

    tab_tree = tab_leaves = None
    if sess.is_tree:
        tab_tree, tab_leaves, tab_items, tab_hist, tab_sess = ui.lazy_tabs(
            ["Tree", "Leaf posteriors", "Items", "Answers", "Sessions"], key="el_view"
        )
    else:
        tab_items, tab_hist, tab_sess = ui.lazy_tabs(
            ["Items", "Answers", "Sessions"], key="el_view_gp"
        )
    if tab_tree is not None and tab_tree.open:
        with tab_tree:
            view, js = svc.session_tree(token, sess, f"after {sess.n_answers} answers")
            ui.tree_with_downloads(view, name=f"elicitation-{source}", key="el_tree", json_text=js)
    if tab_leaves is not None and tab_leaves.open:
        with tab_leaves:
            st.dataframe(svc.session_leaf_table(token, sess), hide_index=True, width="stretch")
    if tab_items.open:
        with tab_items:
            if mode == "items":
                table = svc.session_items(token, sess)
                st.dataframe(table, hide_index=True, width="stretch")
                top = table.head(20).copy()
                top["label"] = top["name"].astype(str)
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
            _answers_tab(sid, sess)
    if tab_sess.open:
        with tab_sess:
            _sessions_tab(sid, sess)
    if answered is not None:
        started, a_sid, at, action = answered
        el.finish_answer_clock(started, session=a_sid, seq=at, action=action)


def _answers_tab(sid: str, sess: ElicitationSession) -> None:
    frame = sess.to_frame()
    who = _participant()
    if who:  # shown in the export; ignored when the file is loaded back
        frame.insert(0, "participant", who)
    st.dataframe(frame, hide_index=True, width="stretch")
    st.download_button(
        "Download answers (CSV)",
        ui.safe_csv(frame),
        file_name=f"elicitation-{source}-{method}-{sid}.csv",
        mime="text/csv",
        key="el_download",
        on_click="ignore",
        disabled=frame.empty,
    )
    up = st.file_uploader(
        "Load answers (a CSV downloaded here: winner/loser ids and features) as a new session",
        type=["csv"],
        key="el_upload",
    )
    if up is not None and st.session_state.get("el_loaded") != (up.file_id, config):
        try:  # bounded before pandas reads it, replayed before anything is stored
            df = sf.check_answers_csv(up.getvalue())
            loaded = sf.replay(ElicitationSession(**sess.config()), df, [])
        except ValueError as exc:  # a wrong file is reported, not raised
            st.error(f"Could not load {ui.md(upload_name(up.name))}: {ui.err(exc)}")
        else:
            new = store.create_session(
                config, loaded.to_frame(), owner=owner, participant=_participant()
            )
            cache[new] = loaded
            n_base[new] = len(loaded.actions)
            active[config] = new
            fav = loaded.favourite
            store.save_session(
                new, loaded, svc.item_name(loaded, fav, max_len=60) if fav is not None else ""
            )
            st.session_state["el_loaded"] = (up.file_id, config)
            st.rerun()


live()
