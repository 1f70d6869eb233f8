"""The Case studies page's "Analysis plan" panel: the whole plan of a study, edited and saved.

A study's analysis plan (:class:`pbo_core.plan.AnalysisPlan`) decides every figure: the
split and its seed, the evaluation and sensitivity samples, the accuracy reference
(baseline), the estimates model and its penalty, the sensitivity models, the money and
time roles with their units, the alternatives and their reference, the case-specific
variables. The panel shows it and edits it through the command's own
code (:mod:`data_loaders.plans`: :func:`~data_loaders.plans.edit_plan` reads and checks an
edit, :func:`~data_loaders.plans.save_plan` saves it), so an edit saved here is the file
``python -m data_loaders plan --study KEY --set ...`` saves, and the panel shows that
command. Reset removes the saved edits (the loader's or the import's plan again).

On a shared server (``DTPBO_SHARED_SERVER``) only the visitor who imported a study may
edit its plan, until it is published; a bundled or published study's plan is read-only
there for everybody (every visitor reads it; the operator edits it with the command).
Every text the panel echoes (the pending command, errors, the saved edit) goes through
the one escaping helper (:func:`dashboard._ui.md`): a unit typed into the plan is shown
as text, never as Markdown (no link, no image).
"""

from __future__ import annotations

import shlex

import pandas as pd
import streamlit as st

from dashboard import _services as svc
from dashboard import _ui as ui
from data_loaders import fields
from data_loaders import user_studies as us
from data_loaders.plans import (
    MAX_COUNT,
    MAX_SEED,
    PLAN_KEYS,
    edit_plan,
    plan_changes,
    plan_path,
    plan_stamp,
    plan_text,
    remove_plan,
    save_plan,
)
from pbo_core.data import DataValidationError, Study
from pbo_core.plan import plan_of
from pbo_core.registry import MODELS, estimates_models, names, not_applicable
from pbo_core.splits import SPLIT_KINDS

__all__ = ["plan_panel", "plan_refusal", "save_edit", "widget_key"]

#: Session-state key of the sentence shown after a save or a reset.
_DONE = "plan_done"
#: "No attribute in this role" in the pickers.
_NONE = "(none)"


def plan_refusal(key: str) -> str | None:
    """Why this visitor may not edit study ``key``'s plan here, or ``None`` when they may
    (a personal server: always; a shared server: the owner of an imported study)."""
    if not svc.shared_server():
        return None
    if not key.startswith(us.KEY_PREFIX):
        return (
            "this is a bundled study on a shared server, so its plan is read-only here "
            "(every visitor reads the same one); the server's operator changes it with "
            f"`python -m data_loaders plan --study {key} --set NAME=VALUE`"
        )
    meta = us.user_study(key)
    if meta is not None and meta.public:
        return (
            "this study is published to every visitor of this server, so its plan is "
            "read-only here (every visitor reads the same one, its importer too); the "
            f"server's operator changes it with `python -m data_loaders plan --study {key} "
            "--set NAME=VALUE`"
        )
    if meta is None or not meta.owner or meta.owner != svc.visitor():
        return "only the visitor who imported this study may edit its plan"
    return None


def widget_key(name: str, key: str) -> str:
    """Session-state key of the plan editor's widget ``name`` for study ``key``: it names
    the saved plan's version, so a save, a reset or the command's edit redraws the
    widgets from the plan they now show."""
    mtime, size = plan_stamp(key)
    return f"plan_{name}::{key}::{mtime}-{size}"  # a unit's: name = "money_unit::ATTR"


def save_edit(study: Study, key: str, wanted: dict[str, str]) -> dict[str, str]:
    """Apply the panel's values ``wanted`` (``{name: text}``, the command's words) to
    ``study``'s plan and save it (:func:`data_loaders.plans.edit_plan`,
    :func:`~data_loaders.plans.save_plan`); the changes saved (``{}``: nothing changed,
    nothing saved). A :class:`~pbo_core.data.DataValidationError` names what does not fit;
    a ``PermissionError`` when this visitor may not edit it."""
    refused = plan_refusal(key)
    if refused:
        raise PermissionError(refused)
    changes = plan_changes(plan_of(study), wanted)
    if changes:
        save_plan(key, edit_plan(study, changes))
    return changes


def command(key: str, changes: dict[str, str]) -> str:
    """The command line that makes the same edit."""
    edits = " ".join(shlex.quote(f"{k}={v}") for k, v in changes.items())
    return f"python -m data_loaders plan --study {shlex.quote(key)} --set {edits}"


def _table(study: Study) -> pd.DataFrame:
    """The plan as a table: each choice, its value, what it means."""
    text = plan_text(plan_of(study))
    return pd.DataFrame(
        [{"choice": k, "value": text[k] or "—", "meaning": v} for k, v in PLAN_KEYS.items()]
    )


def _applicable(study: Study, family: str | None = None) -> list[str]:
    return [n for n in names(fits=True, family=family) if not_applicable(MODELS[n], study) is None]


def _label(name: str) -> str:
    return f"{MODELS[name].label} ({name})" if name in MODELS else name


def plan_panel(study: Study, key: str) -> None:
    """The "Analysis plan" expander of the Case studies page for ``study`` (key ``key``)."""
    plan = plan_of(study)
    with st.expander(
        "Analysis plan: the choices behind every figure of this study", icon=":material/tune:"
    ):
        if _DONE in st.session_state:
            st.success(ui.md(st.session_state.pop(_DONE)))
        saved = plan_path(key).exists()
        st.caption(
            ui.md(plan.line())
            + (
                " Saved edits: yes (Reset goes back to the default)."
                if saved
                else " Saved edits: none (the study's default plan)."
            )
        )
        if plan.notes:
            st.markdown("\n".join(f"- {ui.md(n)}" for n in plan.notes))
        refused = plan_refusal(key)
        if refused:
            st.info(f"Read-only: {ui.md(refused)}.")
            st.markdown(ui.md_table(_table(study)))
            return
        wanted = _editor(study, key)
        changes = plan_changes(plan, wanted)
        if changes:  # typed values: text, never Markdown (a backtick ends no code span)
            st.caption("Same as the command: " + ui.md(command(key, changes)))
        c_save, c_reset = st.columns(2)
        if c_save.button(
            "Save plan",
            key=f"plan_save::{key}",
            type="primary",
            disabled=not changes,
            icon=":material/save:",
        ):
            try:
                done = save_edit(study, key, wanted)
            except (DataValidationError, PermissionError) as exc:
                st.error(ui.md(_sentence(str(exc), study.key)))
            else:
                _forget_reports(key)
                st.session_state[_DONE] = (
                    "Saved: every page now shows this study's figures under the new plan ("
                    + ", ".join(f"{k} = {v or '—'}" for k, v in done.items())
                    + ")."
                )
                st.rerun()
        if c_reset.button(
            "Reset to the default",
            key=f"plan_reset::{key}",
            disabled=not saved,
            icon=":material/restart_alt:",
            help="Remove the saved edits: the plan of the study's loader or import again "
            f"(`python -m data_loaders plan --study {key} --reset`).",
        ):
            remove_plan(key)
            _forget_reports(key)
            st.session_state[_DONE] = "Reset: the study's default plan is back."
            st.rerun()


def _sentence(message: str, study_key: str) -> str:
    """An edit's error without the study key the command prefixes (the page names it)."""
    prefix = f"{study_key}: "
    text = message[len(prefix) :] if message.startswith(prefix) else message
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _forget_reports(key: str) -> None:
    """Reports built under the old plan are not offered for download any more."""
    for k in [k for k in st.session_state if str(k).startswith(f"cs_report::{key}::")]:
        del st.session_state[k]


def _editor(study: Study, key: str) -> dict[str, str]:
    """The plan's widgets; their values as the command's words (``{name: text}``)."""
    plan = plan_of(study)
    now = plan_text(plan)
    k = lambda name: widget_key(name, key)  # noqa: E731
    version = "{}-{}".format(*plan_stamp(key))  # the text inputs' keys, as widget_key's
    out: dict[str, str] = {}

    st.markdown("**Held-out evaluation**")
    c1, c2, c3, c4 = st.columns(4)
    splits = ["auto", *SPLIT_KINDS]
    out["split"] = c1.selectbox(
        "Split",
        splits,
        index=splits.index(plan.split) if plan.split in splits else 0,
        key=k("split"),
        help=PLAN_KEYS["split"] + ". auto: the data's shape decides (tasks within "
        "respondents, whole respondents, or the pooled comparisons).",
    )
    out["seed"] = str(
        c2.number_input(
            "Seed",
            min_value=0,
            max_value=MAX_SEED,
            value=min(plan.seed, MAX_SEED),
            step=1,
            key=k("seed"),
            help=PLAN_KEYS["seed"],
        )
    )
    out["test_tasks"] = str(
        c3.number_input(
            "Held-out tasks per respondent",
            min_value=1,
            max_value=MAX_COUNT,
            value=min(plan.test_tasks, MAX_COUNT),
            step=1,
            key=k("test_tasks"),
            help=PLAN_KEYS["test_tasks"] + " (a task split).",
        )
    )

    st.markdown("**Models**")
    c1, c2, c3b = st.columns([1, 2, 1])
    baselines = _applicable(study, "baseline")
    if plan.baseline not in baselines:
        baselines.insert(0, plan.baseline)
    out["baseline"] = c1.selectbox(
        "Accuracy reference (baseline)",
        baselines,
        index=baselines.index(plan.baseline),
        format_func=_label,
        key=k("baseline"),
        help=PLAN_KEYS["baseline"] + ".",
    )
    offered = _applicable(study)
    offered += [m for m in plan.sensitivity_models if m not in offered]
    picked = c2.multiselect(
        "Sensitivity models (empty: the default ones)",
        offered,
        default=list(plan.sensitivity_models),
        format_func=_label,
        key=k("sensitivity_models"),
        help="The models of the leave-one-out feature sensitivity; empty: the registry's "
        "sensitivity models and the baseline.",
    )
    out["sensitivity_models"] = ",".join(picked) if picked else "default"
    for col, name, label in (
        (c4, "respondents", "Evaluation sample"),
        (c3b, "sensitivity_respondents", "Sensitivity sample"),
    ):
        out[name] = col.text_input(
            label,
            now[name],
            key=f"plan_{name}::{key}::{version}",
            help=PLAN_KEYS[name] + ".",
            max_chars=fields.MAX_TEXT_CHARS,
        )

    c1, c2, _ = st.columns([1, 1, 2])
    models = [n for n in estimates_models() if not_applicable(MODELS[n], study) is None]
    if plan.estimates not in models:
        models.insert(0, plan.estimates)
    out["estimates"] = c1.selectbox(
        "Estimates model (coefficients, fit statistics)",
        models,
        index=models.index(plan.estimates),
        format_func=_label,
        key=k("estimates"),
        help=PLAN_KEYS["estimates"] + ".",
    )
    out["penalty"] = c2.text_input(
        "Penalty (none = maximum likelihood)",
        now["penalty"],
        key=f"plan_penalty::{key}::{version}",
        help=PLAN_KEYS["penalty"] + ".",
    )

    st.markdown("**Attribute roles** (never guessed: none is a valid answer)")
    numeric = [f.name for f in study.schema.features if f.kind == "numeric"]
    for role, label, none_text in (
        ("money", "Money attribute", "(none: no trade-offs)"),
        ("time", "Travel-time attribute", "(none: no value of time)"),
    ):
        current = getattr(plan, role)
        options = [_NONE, *numeric]
        if current is not None and current.attribute not in options:
            options.append(current.attribute)
        c1, c2, c3 = st.columns([2, 1, 2])
        attr = c1.selectbox(
            label,
            options,
            index=options.index(current.attribute if current else _NONE),
            format_func=lambda n, none=none_text: none if n == _NONE else _display(study, n),
            key=k(role),
            help=PLAN_KEYS[role] + ".",
        )
        out[role] = "none" if attr == _NONE else attr
        if attr == _NONE:
            out[f"{role}_unit"] = ""
            c3.caption(f"How it was chosen: {ui.md(current.how)}." if current else "")
            continue
        unit = (
            current.unit
            if current is not None and current.attribute == attr
            else (study.schema[attr].unit if attr in study.schema.names else "")
        )
        out[f"{role}_unit"] = c2.text_input(
            "Unit",
            unit[: fields.MAX_TEXT_CHARS],
            key=f"plan_{role}_unit::{attr}::{key}::{version}",
            help=PLAN_KEYS[f"{role}_unit"] + ".",
            max_chars=fields.MAX_TEXT_CHARS,
        )
        if current is not None and current.attribute == attr:
            c3.caption(f"How it was chosen: {ui.md(current.how)}.")

    st.markdown("**Alternatives and the baseline's respondent features**")
    c1, c2, c3 = st.columns([1, 1, 2])
    labelled = [f.name for f in study.schema.features if f.kind in ("categorical", "binary")]
    alt_options = [_NONE, *labelled]
    if plan.alternative is not None and plan.alternative not in alt_options:
        alt_options.append(plan.alternative)
    alt = c1.selectbox(
        "Alternative attribute",
        alt_options,
        index=alt_options.index(plan.alternative or _NONE),
        format_func=lambda n: (
            "(none: unlabelled alternatives)" if n == _NONE else _display(study, n)
        ),
        key=k("alternative"),
        help=PLAN_KEYS["alternative"] + ": its levels get alternative-specific constants.",
    )
    out["alternative"] = "none" if alt == _NONE else alt
    levels = [_NONE]
    if alt in study.schema.names:
        levels += [str(v) for v in (study.schema[alt].levels or ("0", "1"))]
    ref = (plan.reference if alt == plan.alternative else None) or _NONE
    if ref not in levels:
        levels.append(ref)
    reference = c2.selectbox(
        "Reference (constant 0)",
        levels,
        index=levels.index(ref),
        format_func=lambda v: "(its first level)" if v == _NONE else str(v),
        key=k(f"reference::{alt}"),
        help=PLAN_KEYS["reference"] + ".",
    )
    out["reference"] = "none" if reference == _NONE else reference
    users = list(study.user_schema.names) if study.user_schema is not None else []
    users += [c for c in plan.case_specific if c not in users]
    if users:
        cs = c3.multiselect(
            "Case-specific variables",
            users,
            default=list(plan.case_specific),
            key=k("case_specific"),
            help="Respondent features entering every non-reference alternative's utility "
            "in the conditional logit (they need labelled alternatives).",
        )
        out["case_specific"] = ",".join(cs) if cs else "none"
    else:
        c3.caption("No respondent features recorded: no case-specific variables.")
        out["case_specific"] = now["case_specific"]
    return out


def _display(study: Study, name: str) -> str:
    if name not in study.schema.names:
        return name
    f = study.schema[name]
    return f.display + (f" ({f.unit})" if f.unit and f.unit not in f.display else "")
