"""PMR features: patient messages, LLM feature extraction, feature proposals, urgency tree.

The API key is read from a password field or the environment and only handed to the
LLM client; it is never shown, logged, cached or written to any downloaded file.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from dashboard import _services as svc
from dashboard import _ui as ui
from dashboard._uploads import upload_name
from pbo_core import explain, metrics
from pbo_core.explain.labels import humanize

st.title("PMR features")
st.caption(
    "The urgency tree ranks patient messages from features an LLM extracted; the LLM only "
    "extracts, it never ranks.",
    help="Patient message ranking: an LLM reads each message (with its EHR excerpt) and "
    "fills in a fixed feature spec; the interpretable tree, learned from inbox A's "
    "comparisons, ranks the messages by urgency and is checked on inbox B. The sidebar "
    "holds the inbox, the LLM endpoint and the tree's settings; the tabs the messages, the "
    "extraction and the feature proposals.",
)
ui.sidebar_heading("PMR features")
side = st.sidebar

keys = svc.usable_study_keys(lambda s: s.info.kind == "text")
if "pmr" not in keys:
    with side.expander("PMR-Synth-Inboxes is not configured"):
        st.markdown(svc.how_to_get("pmr"))
if not keys:
    ui.unavailable("pmr-demo", "This page")
    st.stop()
ui.linked_missing(keys)
key = ui.synced_selectbox(
    "Inbox",
    keys,
    svc.STUDY_KEY,
    key="pmr_study",
    format_func=svc.study_titles().get,
    container=side,
)
ui.show_in_url(study=key)
study, error = svc.get_study(key)
if study is None:
    ui.unavailable(key, "This page")
    st.stop()
spec = study.extras["spec"]


def _words(name: object) -> str:
    """A column or feature code as words ("message_actionability" -> "Message
    actionability"): the schema's label where the study has one."""
    text = str(name)
    if text in study.schema.names:
        return study.schema[text].display
    words = humanize(text)
    return words[:1].upper() + words[1:]


texts = svc.message_texts(study)
truth = study.extras.get("truth")
ext_key = f"pmr_extracted::{key}"
extracted: pd.DataFrame | None = st.session_state.get(ext_key)
props_key = f"pmr_proposals::{key}"

# --------------------------------------------------------------------------- endpoint
with side.expander("LLM endpoint (for extraction and feature proposals)"):
    try:
        env_cfg = svc.llm_config("", "", "")
        env_base, env_model = env_cfg.base_url or "", env_cfg.model
        env_key = bool(env_cfg.api_key)
    except ValueError as exc:
        st.error(f"LLM environment variables: {ui.err(exc)}")
        env_base, env_model, env_key = "", "", False
    c1 = c2 = st  # one below the other (the sidebar is narrow)
    shared = svc.shared_server()  # no server-side URLs or paths from visitors
    if shared:  # the endpoint is server configuration: no visitor's key goes elsewhere
        c1.caption("Endpoint: the server's, set by its administrator ($DTPBO_LLM_BASE_URL).")
        base_url = env_base
    else:
        base_url = c1.text_input(
            "Base URL (OpenAI-compatible, with /v1)",
            value=env_base,
            placeholder="http://127.0.0.1:8000/v1",
            key="pmr_base_url",
        )
    model_name = c2.text_input("Model", value=env_model, key="pmr_model")
    api_key = c1.text_input(
        "API key",
        type="password",
        help="Leave empty for local servers or to use $DTPBO_LLM_API_KEY / $OPENAI_API_KEY"
        + (" (set)" if env_key else " (not set)")
        + ". Used only for requests: never shown, logged, cached or saved.",
    )
    cache_path = str(  # written: below the data folder only (or the server's setting)
        ui.path_input(
            "Extraction cache",
            key="pmr_cache",
            default=svc.default_extraction_cache(),
            what="extraction cache",
            folder=False,
            write=True,
            container=c2,
        )
    )
    c3 = c4 = c5 = st
    limit = int(c3.number_input("Messages (first N)", 1, len(texts), len(texts), key="pmr_limit"))
    timeout = float(c4.number_input("Timeout per request (s)", 5, 600, 60, key="pmr_timeout"))
    retries = int(c5.number_input("Retries per request", 0, 8, 1, key="pmr_retries"))
    cfg = svc.llm_config(base_url, model_name, api_key, timeout=timeout, max_retries=retries)
    endpoint = "the server's" if shared else ui.md(cfg.base_url or "the OpenAI API")
    st.caption(
        f"Endpoint: {endpoint} · model: {ui.md(cfg.model or '(none)')} · "
        f"API key: {'set' if cfg.api_key else 'not set'}"
    )

tab_tree, tab_msg, tab_ext, tab_cmp, tab_prop = ui.lazy_tabs(
    ["Urgency tree", "Messages", "Extraction", "Extracted vs truth", "Feature proposals"],
    key="pmr_view",
)

# --------------------------------------------------------------------------- messages
if tab_msg.open:
    with tab_msg:
        items = study.data.items
        cols = [
            c
            for c in ("message_id", "inbox", "patient_id", "age", "gender", "message")
            if c in items
        ]
        st.dataframe(items[cols].rename(columns=_words), hide_index=True, width="stretch")
        ids = texts["message_id"].tolist()
        mid = st.selectbox("Read a message", ids, key=f"pmr_msg::{key}")
        left, right = st.columns([3, 2])
        left.code(texts.set_index("message_id").loc[mid, "text"], language=None, wrap_lines=True)
        features = svc.message_features(study, extracted, mid)
        with right:
            if features is not None:
                ui.full_table(
                    features.map(lambda v: "; ".join(v) if isinstance(v, list) else v),
                    width="stretch",
                )
            else:
                st.caption("No features for this message yet (see the Extraction tab).")

# --------------------------------------------------------------------------- extraction
if tab_ext.open:
    with tab_ext:
        todo_texts = texts.head(limit)
        if cfg.model:
            n_cached, n_all = svc.cached_extractions(todo_texts, spec, cfg, cache_path)
            st.caption(
                f"{n_cached} of {n_all} messages are in the cache for model "
                f"{ui.md(repr(cfg.model))} (spec {ui.md(repr(spec.name))}); "
                f"{n_all - n_cached} need the endpoint."
            )
        else:
            n_cached, n_all = 0, len(todo_texts)
        if st.button("Run extraction", key="pmr_run", type="primary"):
            if not cfg.model:
                st.error("Name the model (as the server knows it) first.")
            else:
                reachable, why = (True, "")
                if n_cached < n_all:
                    reachable, why = svc.endpoint_reachable(cfg.base_url)
                if not reachable:
                    st.error(
                        f"No LLM endpoint reachable: {ui.err(why)}. Start an OpenAI-compatible "
                        "server "
                        "(llama.cpp `llama-server`, vLLM, Ollama, ...) and give its base URL, or "
                        "upload an extracted table below."
                    )
                else:
                    bar = st.progress(
                        0.0, text=f"{n_cached} from the cache; asking the endpoint..."
                    )

                    def _progress(done: int, total: int, rec: object) -> None:
                        bar.progress(
                            done / max(total, 1), text=f"{done}/{total} messages extracted"
                        )

                    result = svc.run_extraction(todo_texts, spec, cfg, cache_path, _progress)
                    bar.progress(1.0, text="finished")
                    counts = result.counts()
                    table = result.table()
                    if counts["ok"] == 0:
                        fails = result.failures()
                        reason = fails["error"].iloc[0] if len(fails) else "unknown"
                        st.error(
                            f"No message was extracted ({counts['error']} errors, "
                            f"{counts['invalid']} invalid answers). First error: "
                            f"{ui.err(reason)}"
                        )
                    else:
                        st.session_state[ext_key] = table
                        extracted = table
                        st.success(
                            f"{counts['ok']} ok, {counts['invalid']} invalid, {counts['error']} "
                            f"errors ({counts['cached']} from the cache, {counts['requested']} "
                            "requested)."
                        )
                    if counts["ok"] < len(table):
                        st.dataframe(result.failures(), hide_index=True, width="stretch")
        up = st.file_uploader(
            "...or upload an extracted table (CSV / JSON / Parquet from "
            "`python -m feature_extraction extract --out`)",
            type=["csv", "json", "parquet"],
            key="pmr_upload",
        )
        if up is not None and st.session_state.get("pmr_uploaded") != up.file_id:
            # parsed in memory: the browser's file name is never joined to a path
            up_name = upload_name(up.name)
            try:
                extracted = svc.read_extracted_table(up.getvalue(), spec, up_name)
            except Exception as exc:
                st.error(f"Could not read {ui.md(up_name)}: {ui.err(exc)}")
            else:
                st.session_state[ext_key] = extracted
                st.session_state["pmr_uploaded"] = up.file_id
        if extracted is not None:
            st.markdown(f"#### Extracted table ({len(extracted)} messages)")
            st.dataframe(
                extracted.map(lambda v: "; ".join(v) if isinstance(v, list) else v).rename(
                    columns=_words
                ),
                hide_index=True,
                width="stretch",
            )
            st.download_button(
                "Download extracted table (CSV)",
                svc.extracted_csv(extracted),
                file_name=f"features-{key}.csv",
                mime="text/csv",
                key="pmr_ext_download",
                on_click="ignore",
            )

# --------------------------------------------------------------------------- comparison
if tab_cmp.open:
    with tab_cmp:
        if truth is None:
            st.info("This inbox has no ground-truth features; only the demo inbox does.")
        elif extracted is None:
            st.info(
                "No extracted table yet: run an extraction (it reuses the cache) or upload a "
                "table on the **Extraction** tab."
            )
        else:
            score = svc.score_extraction(study, extracted)
            show = score.reset_index()
            show["feature"] = show["feature"].map(_words)  # words, not snake_case codes
            st.dataframe(
                show[
                    [
                        "feature",
                        "type",
                        "n",
                        "coverage",
                        "accuracy",
                        "hamming_accuracy",
                        "f1",
                        "within_one",
                    ]
                ],
                hide_index=True,
                width="stretch",
            )
            st.altair_chart(
                alt.Chart(show)
                .mark_bar()
                .encode(
                    x=alt.X(
                        "accuracy:Q",
                        title="exact agreement with the truth",
                        scale=alt.Scale(domain=[0, 1]),
                    ),
                    y=alt.Y("feature:N", sort="-x", title=None),
                    color=alt.Color("type:N"),
                    tooltip=["feature", "type", alt.Tooltip("accuracy:Q", format=".2f"), "n"],
                )
                .properties(height=80 + 26 * len(show)),
                width="stretch",
            )

# --------------------------------------------------------------------------- proposals
if tab_prop.open:
    with tab_prop:
        st.caption(
            "Feature proposal (App. G.2): the LLM explains the comparisons the tree gets wrong "
            "and proposes one new feature, kept only if it improves validation accuracy. "
            "Review the proposals and accept or reject them."
        )
        up = st.file_uploader(
            "Proposal records (JSON from `python -m feature_extraction propose --out`)",
            type=["json"],
            key="pmr_prop_upload",
        )
        if up is not None and st.session_state.get("pmr_prop_file") != up.file_id:
            try:
                recs = svc.read_proposals(up.getvalue(), upload_name(up.name))
            except Exception as exc:
                st.error(f"Could not read {ui.md(upload_name(up.name))}: {ui.err(exc)}")
            else:
                st.session_state[props_key] = recs
                st.session_state["pmr_prop_file"] = up.file_id
        if st.button("Run one proposal round with the endpoint above", key="pmr_propose"):
            reachable, why = svc.endpoint_reachable(cfg.base_url)
            if not cfg.model or not reachable:
                st.error(f"No LLM endpoint reachable: {ui.err(why or 'name the model first')}.")
            else:
                features = svc.proposal_features(study, extracted)
                if features is None:
                    st.error("Extract the features first.")
                else:
                    with st.spinner("Asking the LLM..."):
                        recs = svc.propose_feature(study, features, cfg, cache_path)
                    st.session_state[props_key] = [*st.session_state.get(props_key, []), *recs]
        records = st.session_state.get(props_key, [])
        if not records:
            st.info("No proposals loaded.")
        for i, rec in enumerate(records):
            prop = rec.proposal or {}
            title = ui.md(f"Round {rec.round}: {prop.get('name', '(no proposal)')} — {rec.status}")
            with st.expander(title, expanded=i == len(records) - 1):
                if rec.error:
                    st.error(ui.err(rec.error))
                if prop:
                    name, kind = prop.get("name"), prop.get("type")
                    st.markdown(
                        f"**{ui.md(name)}** ({ui.md(kind)}): {ui.md(prop.get('description', ''))}"
                    )
                    if prop.get("values"):
                        st.markdown("Values: " + ", ".join(ui.md(v) for v in prop["values"]))
                    if prop.get("rationale"):
                        st.markdown(f"*Rationale:* {ui.md(prop['rationale'])}")
                if rec.gain is not None:
                    st.markdown(
                        f"Validation accuracy {rec.baseline_val_accuracy:.3f} → "
                        f"{rec.new_val_accuracy:.3f} (gain {rec.gain:+.3f}); automatic decision: "
                        f"**{ui.md(rec.decision)}**"
                    )
                if rec.reasons:
                    st.dataframe(pd.DataFrame(rec.reasons), hide_index=True, width="stretch")
                choice = st.radio(
                    "Analyst decision",
                    ["undecided", "accept", "reject"],
                    index=(
                        ["undecided", "accept", "reject"].index(rec.analyst_decision)
                        if rec.analyst_decision in ("accept", "reject")
                        else 0
                    ),
                    horizontal=True,
                    key=f"pmr_decision::{key}::{i}",
                )
                rec.analyst_decision = None if choice == "undecided" else choice
        if records:
            c1, c2 = st.columns(2)
            c1.download_button(
                "Download reviewed records (JSON)",
                svc.proposals_json(records),
                file_name="proposals-reviewed.json",
                mime="application/json",
                key="pmr_prop_dl",
                on_click="ignore",
            )
            try:
                new_spec = svc.accepted_spec(spec, records)
            except ValueError as exc:  # SpecError: an accepted proposal is not a valid entry
                c2.error(f"An accepted proposal is not a valid spec entry: {ui.err(exc)}")
            else:
                c2.download_button(
                    f"Download the spec with accepted features ({len(new_spec)} features)",
                    svc.spec_json(new_spec),
                    file_name="spec-accepted.json",
                    mime="application/json",
                    key="pmr_spec_dl",
                    on_click="ignore",
                )

# --------------------------------------------------------------------------- urgency tree
if tab_tree.open:
    with tab_tree:
        sources = ["ground truth"] if truth is not None else []
        if extracted is not None:
            sources.append("extracted")
        if not sources:
            st.info("Extract the features first (Extraction tab).")
        else:
            side.markdown("**Urgency tree**")
            src = side.radio("Features", sources, horizontal=True, key=f"pmr_src::{key}")
            prune = side.slider("Min. comparisons to split a node", 1, 60, 1, key="pmr_prune")
            table = extracted if src == "extracted" else None
            fstudy = svc.pmr_study(key, table)
            token = "truth" if table is None else svc.table_token(table)
            model = svc.urgency_tree(fstudy, token, prune)
            train, test = fstudy.extras["train"], fstudy.extras["test"]
            tree_depth = int(model.tree_.max_depth)
            shown = tree_depth
            if tree_depth >= 2:
                shown = side.slider(
                    "Max depth shown",
                    1,
                    tree_depth,
                    min(4, tree_depth),
                    key=f"pmr_depth::{tree_depth}",
                )
            ui.tree_with_downloads(
                svc.tree_view(model, train, title=f"urgency tree ({src} features)"),
                name=f"urgency-{key}",
                key="pmr_tree",
                json_text=explain.to_json(model),
                max_depth=shown if shown < tree_depth else None,
                height=560,
            )
            m1, m2, m3 = st.columns(3)
            m1.metric("Leaves", model.n_leaves_)
            m2.metric("Train accuracy (inbox A)", f"{100 * metrics.accuracy(model, train):.1f}%")
            m3.metric("Test accuracy (inbox B)", f"{100 * metrics.accuracy(model, test):.1f}%")
            ranked = svc.ranked_messages(model, fstudy, study)
            st.dataframe(ranked.rename(columns=_words), hide_index=True, width="stretch")
