"""The Case studies page's "Add a study" form: upload, layout and columns, attribute table,
respondent features, money attribute, import.

Uploads are read in memory and named by their base name only
(:func:`dashboard._uploads.upload_name`); bounding, reading, inferring, checking, saving
and loading are :mod:`data_loaders.user_studies` (the command line's
``python -m data_loaders import-study`` and ``--data`` paths), so the form offers exactly
what the command line does: every column may be "(none)", the layout, alternatives and
choice column are pre-filled from inference, the alternative may be an attribute,
opt-out values, a rank column, respondent features with labels and the money attribute.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import _services as svc
from dashboard import _ui as ui
from dashboard._uploads import upload_name
from data_loaders import fields, limits, readers
from data_loaders import user_studies as us
from data_loaders.layout import list_columns, readable
from data_loaders.recipes import Recipe, parse_recipe
from pbo_core.data import DataValidationError
from pbo_core.units import money_candidate

#: The form's "Alternative constants" choices, as ``--constants``.
CONSTANTS: dict[str, bool | None] = {"auto": None, "yes": True, "no": False}

__all__ = ["add_study_form", "apply_pending_choice", "own_studies_note", "remove_button"]

#: Session-state key of a study choice to apply before the page's study picker is drawn
#: (a widget's value can only be set before the widget exists in a run).
PENDING = "cs_pending_study"
PICKER = "cs_study"
#: Suffixes the uploader takes only to say what to do instead (an old Excel workbook:
#: :func:`data_loaders.readers.read_table` says to save it as .xlsx or CSV).
EXPLAINED_TYPES = ("xls",)
#: "No such column" in the column pickers.
NONE = "(none)"
#: Most characters typed into a text input holding a list (alternatives, codes,
#: conditions separated by ';'); each entry is bounded again
#: (:data:`data_loaders.fields.MAX_TEXT_CHARS`), whatever a browser sends.
LIST_CHARS = 10 * fields.MAX_TEXT_CHARS
#: The form's label of each column-map field it sets (for a refusal's sentence).
FIELD_LABELS = {
    "respondent": "Respondent column",
    "task": "Task column",
    "profile": "Profile column",
    "chosen": "Chosen column",
    "alternatives": "Alternatives (wide)",
    "rank": "Rank column",
    "opt_out": "Opt-out values",
    "missing": "Missing-value codes",
    "weight": "Weight column",
    "levels": "Text levels",
    "available_when": "Availability conditions",
    "fill_attributes": "Attributes of some alternatives",
    "availability": "Availability columns (wide)",
    "no_choice": "No-choice values",
    "respondent_features": "Respondent features",
}
#: The form's separator choices: label -> separator (``None``: detected).
SEPARATORS: dict[str, str | None] = {
    "detect": None,
    "comma ,": ",",
    "semicolon ;": ";",
    "tab": "\t",
    "pipe |": "|",
    "spaces": r"\s+",
}
#: The form's text encodings: label -> encoding (``None``: detected), as ``--encoding``.
TEXT_ENCODINGS: dict[str, str | None] = {
    "detect": None,
    **{e: e for e in readers.ENCODINGS},
}
#: Widgets whose choices depend on the uploaded file (reset when another file comes).
_FILE_KEYS = (
    "add_format",
    "add_col_resp",
    "add_col_task",
    "add_col_profile",
    "add_col_chosen::long",
    "add_col_chosen::wide",
    "add_col_rank",
    "add_alts",
    "add_opt_out",
    "add_alt_attr",
    "add_features",
    "add_money",
    "add_missing",
    "add_weight",
    "add_levels",
    "add_fill",
    "add_avail",
    "add_avail_when",
    "add_coding",
    "add_no_choice",
)
_FILE_TOKEN = "add_file_token"
#: Prefix of the copies of those widgets' values: a widget not drawn in a run (another
#: layout, or a problem shown first) loses its state, and is drawn again from its copy.
_KEEP = "add_keep::"


def _kept(key: str, default: object) -> object:
    return st.session_state.get(_KEEP + key, default)


def _keep(key: str, value: object) -> object:
    st.session_state[_KEEP + key] = value
    return value


def apply_pending_choice() -> None:
    """Select the study just imported (or, after a removal, the first study) in the
    Case studies picker and on every page; call before the picker is drawn."""
    if PENDING not in st.session_state:
        return
    wanted = st.session_state.pop(PENDING)
    keys = svc.usable_study_keys()
    value = wanted if wanted in keys else (keys[0] if keys else None)
    if value is not None:
        st.session_state[PICKER] = value
        st.session_state[svc.STUDY_KEY] = value


def _problem_table(problems: list[us.Problem]) -> pd.DataFrame:
    """The problems as a table whose cells are text (``st.table`` renders Markdown)."""
    return pd.DataFrame(
        [
            {
                "file": ui.err(p.file),
                "line": ui.md(p.line),
                "column": ui.md(p.column),
                "problem": ui.err(form_words(p.message)),
            }
            for p in problems
        ]
    )


def _show_problems(problems: list[us.Problem]) -> None:
    st.error(
        f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found; **nothing was "
        "imported**. Fix the file (or the attribute table, or the columns) and import again."
    )
    st.table(_problem_table(problems).set_index("file"))


@st.cache_data(max_entries=16, show_spinner=False)
def _read(
    content: bytes, name: str, sep: str | None = None, encoding: str | None = None
) -> tuple[list[str] | None, list[us.Problem], str]:
    """The upload's column names (``None``: it cannot be read, after the limits), its
    problems and how it was read (:meth:`data_loaders.readers.Table.describe`), once per
    file, separator and encoding; the table is read in a budgeted worker, never here
    (:func:`dashboard._services.upload_columns`)."""
    return svc.upload_columns(content, name, sep, encoding)


@st.cache_data(max_entries=16, show_spinner=False)
def _inspect(
    content: bytes,
    name: str,
    columns: str,
    sep: str | None = None,
    encoding: str | None = None,
) -> us.Inspection:
    """:func:`data_loaders.user_studies.inspect_upload` of an upload and a column map
    (JSON), once per pair (reruns redraw the form without inferring again), in a worker."""
    return svc.inspect_upload(content, name, columns, sep, encoding)


def _pick(col: object, label: str, options: list[str], default: str, key: str, **kw) -> str:
    """A column picker with "(none)"; ``""`` for none."""
    opts = [NONE, *options]
    if key in st.session_state and st.session_state[key] not in opts:
        del st.session_state[key]
    default = str(_kept(key, default or NONE))
    index = opts.index(default) if default in opts else 0
    value = col.selectbox(label, opts, index=index, key=key, **kw)  # type: ignore[attr-defined]
    _keep(key, value)
    return "" if value == NONE else str(value)


def _defaults(
    content: bytes, name: str, fmt: str | None, sep: str | None, encoding: str | None = None
) -> us.ColumnMap:
    """The column map inferred for a layout (``None``: the layout too); falls back to the
    command line's defaults where inference fails."""
    auto = us.ColumnMap(format=fmt or "auto").to_json()  # type: ignore[arg-type]
    ins = _inspect(content, name, auto, sep, encoding)
    if ins.columns is not None:
        return ins.columns
    return us.ColumnMap(format=fmt or "long")  # type: ignore[arg-type]


def _new_file(token: tuple[str, int, int, str | None, str | None]) -> None:
    if st.session_state.get(_FILE_TOKEN) != token:
        for k in list(st.session_state):
            if k in _FILE_KEYS or str(k).startswith(_KEEP):
                del st.session_state[k]
        st.session_state[_FILE_TOKEN] = token


def _kept_sentence(subject: str) -> str:
    days = us.idle_days()
    if not days:
        return f"{subject} kept until you remove it"
    return (
        f"{subject} removed after {days:g} days that nobody uses it "
        f"(`${us.IDLE_DAYS_ENV}`); opening it on any page keeps it"
    )


def own_studies_note() -> None:
    """On a shared server, this visitor's own studies and when each expires unused."""
    mine = svc.own_studies()
    if not mine:
        return
    items = []
    for meta, end in mine:
        until = (
            f"until {time.strftime('%Y-%m-%d %H:%M', time.localtime(end))} unless used"
            if end is not None
            else "kept"
        )
        items.append(f"**{ui.md(meta.title)}** (`{meta.key}`, {until})")
    st.caption(f"Your studies on this server: {'; '.join(items)}. {_kept_sentence('Each is')}.")


def add_study_form() -> None:
    """Upload a choice file (+ respondent features), map its columns (pre-filled from
    inference), edit the inferred attribute table and import: one small function per
    section of the form, in the order it shows them."""
    refused = svc.owner_refusal()
    if refused:
        st.info(f"Importing is closed for you here: {ui.md(refused)}.")
        return
    _form_caption()
    up, users_up, attrs_up, recipe_up = _uploaders()
    if up is None:
        return
    name = upload_name(up.name, "choices.csv")
    content = up.getvalue()
    recipe = None
    if recipe_up is not None:
        try:
            recipe = parse_recipe(recipe_up.getvalue(), upload_name(recipe_up.name, "recipe.json"))
        except DataValidationError as exc:
            st.error(ui.err(str(exc)))
            return
    sep, encoding = _read_choices(recipe)
    have_or_none, problems, how = _read(content, name, sep, encoding)
    if have_or_none is None:
        _show_problems(problems)
        return
    _new_file((name, len(content), hash(content), sep, encoding))
    have = list(have_or_none)
    st.caption(f"Read {ui.md(how)}; {ui.md(list_columns(have))}.{_utf8_note(how, encoding)}")
    if recipe is not None:
        _replay(recipe, content, name, sep, users_up, encoding)
        return
    upload = _Upload(content, name, sep, encoding)
    picked = _column_choices(upload, have)
    if picked is None:
        return
    fmt, columns = picked
    ins = _inspect(content, name, columns.to_json(), sep, encoding)
    if ins.columns is None:
        _show_problems(ins.problems)
        return
    if ins.notes:
        st.caption("Inferred: " + ui.md("; ".join(ins.notes)) + ".")
    features = _feature_choices(ins, name)
    table = _attribute_table(ins, attrs_up, name, fmt)
    if table is None:
        return
    edited, edited_attrs = table
    roles = _role_choices(ins, edited_attrs, features)
    try:  # the labels typed, bounded
        fields.check_column_fields(roles, labels=FIELD_LABELS)
        columns = replace(columns, **roles)  # type: ignore[arg-type]
        recipe = Recipe(replace(ins.columns, **roles), tuple(edited_attrs), sep, encoding)  # type: ignore[arg-type]
    except DataValidationError as exc:
        st.error(ui.err(exc))
        return
    _show_preview(ins, features)
    _import_section(upload, recipe, ins, edited, columns, attrs_up, users_up)


@dataclass(frozen=True)
class _Upload:
    """The uploaded choice file and how to read it (``None``: detected)."""

    content: bytes
    name: str
    sep: str | None
    encoding: str | None


def _form_caption() -> None:
    """What the layouts are, the limits, and where the study is kept."""
    where = (
        "The study is kept on this server for you only (other visitors do not see it), "
        "appears on every page like a bundled study and can be removed here; "
        + _kept_sentence("it is")
        + "."
        if svc.shared_server()
        else "The study is saved in your data folder (`$DTPBO_DATA_HOME/studies`), appears "
        "on every page like a bundled study, stays after a restart and can be removed "
        "here; the command line imports the same way (`python -m data_loaders "
        "import-study FILE --title ...`) and reads the study (`conjoint-accuracy --study "
        "KEY`)."
    )
    st.caption(
        "**Long** layout: one row per respondent × task × profile with a 1/0 chosen flag "
        "(or a rank, 1 = best) and one column per attribute. **Wide**: one row per task "
        "with each alternative's attributes side by side (`price1`, `price2`..., or "
        "`ic.gc`, `ic.gr`...) and a column naming the chosen alternative; any number of "
        "alternatives. Respondent and task columns are optional. At most "
        f"{us.MAX_UPLOAD_MB} MB, {limits.MAX_COLUMNS:,} columns and {limits.MAX_ROWS:,} "
        "lines per file. " + where
    )


def _uploaders() -> tuple[Any, Any, Any, Any]:
    """The choice file's uploader, then those of the optional respondent features,
    attribute table and recipe."""
    up = st.file_uploader(
        "Choice data",
        type=[*readers.uploader_types(), *EXPLAINED_TYPES],
        key="add_choices",
        max_upload_size=us.MAX_UPLOAD_MB,
        help=f"The formats the command line reads too ({readers.accepted_text()}); a "
        f".zip holds one table. {readers.format_notes()}",
    )
    c1, c2, c3 = st.columns(3)
    users_up = c1.file_uploader(
        "Respondent features (optional CSV: a respondent column and one per feature)",
        type=["csv"],
        key="add_users",
        max_upload_size=us.MAX_UPLOAD_MB,
    )
    attrs_up = c2.file_uploader(
        "Attribute table (optional JSON, as for --attributes)",
        type=["json"],
        key="add_attrs",
        max_upload_size=us.MAX_UPLOAD_MB,
    )
    recipe_up = c3.file_uploader(
        "Recipe (optional JSON, as for --recipe)",
        type=["json"],
        key="add_recipe_up",
        max_upload_size=us.MAX_UPLOAD_MB,
        help="The choices of an earlier import (a saved study's recipe.json, or the one "
        "downloaded below): the file is imported exactly with them, as `python -m "
        "data_loaders import-study FILE --recipe RECIPE` does.",
    )
    return up, users_up, attrs_up, recipe_up


def _read_choices(recipe: Recipe | None) -> tuple[str | None, str | None]:
    """The separator and text encoding chosen (``None``: detected, or the recipe's)."""
    s1, s2 = st.columns(2)
    sep_label = s1.selectbox(
        "Separator",
        list(SEPARATORS),
        key="add_sep",
        help="Of a text file: detected from its first lines, or named here (as --sep on "
        f"the command line). {readers.format_notes()}",
    )
    enc_label = s2.selectbox(
        "Text encoding",
        list(TEXT_ENCODINGS),
        key="add_encoding",
        help="Of a text file: detected (UTF-8; UTF-16 with its byte-order mark; else "
        "Windows' cp1252, else latin-1), or named here (as --encoding on the command "
        f"line) when the detection reads some letters wrongly. {readers.format_notes()}",
    )
    sep = SEPARATORS.get(str(sep_label))
    if sep is None and recipe is not None:
        sep = recipe.sep  # the recipe's separator unless another one is named here
    encoding = TEXT_ENCODINGS.get(str(enc_label))
    if encoding is None and recipe is not None:
        encoding = recipe.encoding  # the recipe's encoding unless another one is named here
    return sep, encoding


def _column_choices(upload: _Upload, have: list[str]) -> tuple[str, us.ColumnMap] | None:
    """The layout and the columns, pre-set from inference, as a column map (every text
    bounded and every condition read here, before a worker reads any); ``None`` after
    showing why the choices are refused."""
    auto = _defaults(upload.content, upload.name, None, upload.sep, upload.encoding)
    fmt = st.radio(
        "Layout",
        ["long", "wide"],
        index=0 if auto.format != "wide" else 1,
        horizontal=True,
        key="add_format",
        help="Pre-set from the file: wide when a column names the alternatives and there "
        "is no profile column.",
    )
    guess = (
        auto
        if auto.format == fmt
        else _defaults(upload.content, upload.name, fmt, upload.sep, upload.encoding)
    )
    chosen_fields = {"format": fmt, **_key_columns(fmt, have, guess)}
    chosen_fields.update(_layout_choices(fmt, have, guess))
    try:
        fields.check_column_fields(chosen_fields, labels=FIELD_LABELS)
        for k, rule in enumerate(chosen_fields.get("available_when", ()), start=1):
            fields.parse_availability_rule(rule, f"Availability conditions, condition {k}")
        return str(fmt), us.ColumnMap(**chosen_fields)
    except DataValidationError as exc:
        st.error(ui.err(exc))
        return None


def _key_columns(fmt: str, have: list[str], guess: us.ColumnMap) -> dict[str, Any]:
    """The respondent, task, profile (long), chosen and rank (long) columns, the
    alternatives (wide), the opt-out values and the alternatives' constants; the
    :class:`~data_loaders.layout.ColumnMap` fields they set."""
    m = st.columns(4)
    respondent = _pick(
        m[0], "Respondent column", have, guess.respondent, "add_col_resp",
        help="(none): every task is a respondent of its own (wide: every row).",
    )  # fmt: skip
    task = _pick(
        m[1], "Task column", have, guess.task, "add_col_task",
        help="(none): long, each respondent's rows are one task; wide, a respondent's "
        "rows are numbered as tasks.",
    )  # fmt: skip
    if fmt == "long":
        profile, chosen, alts = *_long_columns(m, have, guess), ""
        r = st.columns(4)
        rank = _pick(
            r[0], "Rank column", have, guess.rank, "add_col_rank",
            help="Full rankings (1 = best): every pair of a task ordered by rank; equal "
            "ranks give no comparison.",
        )  # fmt: skip
    else:
        profile, rank = "", ""
        chosen, alts = _wide_columns(m, have, guess)
        r = st.columns(4)
    opt_out = r[1].text_input(
        "Opt-out values",
        str(_kept("add_opt_out", "")),
        key="add_opt_out",
        max_chars=LIST_CHARS,
        help="Values meaning 'none of these' (long: of the profile column; wide: of the "
        "chosen column), comma-separated. Such tasks give no comparisons.",
    )
    _keep("add_opt_out", opt_out)
    return {
        "respondent": respondent,
        "task": task,
        "profile": profile,
        "chosen": chosen if fmt == "wide" or not rank else "",
        "alternatives": tuple(a.strip() for a in alts.split(",") if a.strip()),
        "rank": rank,
        "opt_out": tuple(v.strip() for v in opt_out.split(",") if v.strip()),
        "alternative_attribute": CONSTANTS[_constants_choice(r[2])],
    }


def _long_columns(m: list[Any], have: list[str], guess: us.ColumnMap) -> tuple[str, str]:
    """A long file's profile and chosen columns."""
    profile = _pick(
        m[2], "Profile column", have, guess.profile, "add_col_profile",
        help="The alternative of a row; (none) numbers a task's rows.",
    )  # fmt: skip
    chosen = _pick(
        m[3], "Chosen column", have, guess.chosen_column, "add_col_chosen::long",
        help="1/0 flag of the chosen row; (none) with a rank column.",
    )  # fmt: skip
    return profile, chosen


def _wide_columns(m: list[Any], have: list[str], guess: us.ColumnMap) -> tuple[str, str]:
    """A wide file's chosen column (or the stem of its 0/1 columns) and alternatives."""
    # a choice given as 0/1 columns per alternative is offered by their stem
    stem = guess.chosen_column if guess.chosen_column not in ("", *have) else ""
    chosen = _pick(
        m[2], "Chosen column", [*have, *([stem] if stem else [])], guess.chosen_column,
        "add_col_chosen::wide",
        help="The column naming the chosen alternative (1, choice1, gc...), or the stem "
        "of 0/1 columns, one per alternative, with one 1 per row (BestAlternative for "
        "BestAlternative_1, BestAlternative_2, ...).",
    )  # fmt: skip
    alts = m[3].text_input(
        "Alternatives (wide)",
        str(_kept("add_alts", ", ".join(guess.alternatives)))[:LIST_CHARS],
        key="add_alts",
        max_chars=LIST_CHARS,
        help="As in the column names (price1 -> 1, ic.gc -> gc), comma-separated; "
        "pre-filled from the file, empty = inferred.",
    )
    _keep("add_alts", alts)
    return chosen, alts


def _constants_choice(col: Any) -> str:
    """The "Alternative constants" choice (a key of :data:`CONSTANTS`)."""
    choices = list(CONSTANTS)
    kept_constants = str(_kept("add_alt_attr", "auto"))
    alt_attr = col.selectbox(
        "Alternative constants",
        choices,
        index=choices.index(kept_constants) if kept_constants in choices else 0,
        key="add_alt_attr",
        help="Alternative-specific constants (a categorical attribute 'alternative' whose "
        "levels are the alternatives, as --constants): auto adds them when the alternatives "
        "carry names (brands, modes: labelled), not for numbered or lettered profiles of a "
        "generic design; the preview says which.",
    )
    _keep("add_alt_attr", alt_attr)
    return str(alt_attr)


def _feature_choices(ins: us.Inspection, name: str) -> list[tuple[str, str]]:
    """The respondent features picked among the candidates, with their labels."""
    kept = [f for f in list(_kept("add_features", [])) if f in ins.candidates]  # type: ignore[call-overload]
    picked = st.multiselect(
        "Respondent features (columns constant within a respondent)",
        ins.candidates,
        default=kept,
        key="add_features",
        help="Kept as the study's respondent features (the hierarchy page splits "
        "respondents by them). Edit their labels below.",
    )
    _keep("add_features", picked)
    features: list[tuple[str, str]] = []
    if picked:
        cells = st.columns(min(len(picked), 4))
        for k, f in enumerate(picked):
            lkey = f"add_feature_label::{name}::{f}"
            label = cells[k % len(cells)].text_input(
                f"Label of {ui.md(f)}",
                str(_kept(lkey, readable(f)))[: fields.MAX_TEXT_CHARS],
                key=lkey,
                max_chars=fields.MAX_TEXT_CHARS,
            )
            _keep(lkey, label)
            features.append((f, label.strip() or readable(f)))
    return features


def _attribute_table(
    ins: us.Inspection, attrs_up: Any, name: str, fmt: str
) -> tuple[pd.DataFrame, list[Any]] | None:
    """The attribute table (uploaded, or inferred) in an editor: the edited rows and the
    attributes they give; ``None`` after showing an uploaded table's problems."""
    if attrs_up is not None:
        attrs, problems = us.attributes_from_json(
            attrs_up.getvalue(), upload_name(attrs_up.name, "attributes.json")
        )
        if problems:
            _show_problems(problems)
            return None
        source = "from the uploaded attribute table"
    else:
        attrs = ins.attributes
        source = "inferred from the columns: check the kinds, put ordinal levels in order"
    st.markdown(f"**Attributes** ({source}). Levels are separated by `|`, worst or lowest first.")
    sig = abs(hash(tuple((a.name, a.kind) for a in attrs))) % 10**8
    edited = st.data_editor(
        us.attribute_rows(attrs),
        hide_index=True,
        width="stretch",
        num_rows="dynamic",
        key=f"add_attr_table::{name}::{fmt}::{attrs_up is not None}::{sig}",
        column_config={
            "kind": st.column_config.SelectboxColumn(options=list(us.KINDS), required=True),
            "direction": st.column_config.SelectboxColumn(options=list(us.DIRECTIONS)),
            "levels (in order)": st.column_config.TextColumn(width="large"),
        },
    )
    edited_attrs, _ = us.attributes_from_rows(edited)
    return edited, edited_attrs


def _role_choices(
    ins: us.Inspection, edited_attrs: list[Any], features: list[tuple[str, str]]
) -> dict[str, Any]:
    """The money and travel-time attributes, and the respondent features with their
    labels; the :class:`~data_loaders.layout.ColumnMap` fields they set."""
    numeric = [a.name for a in edited_attrs if a.kind == "numeric"] or ins.numeric
    default_money = money_candidate(edited_attrs)[0] or ins.money
    money = _pick(
        st,
        "Money attribute",
        numeric,
        default_money,
        "add_money",
        help="The numeric attribute that is money (pages show willingness to pay in it).",
    )
    time_attr = _pick(
        st,
        "Travel-time attribute",
        [n for n in numeric if n != money],
        "",
        "add_time",
        help="The numeric attribute that is a travel time: pages show the value of time "
        "(its slope over the money slope) only for it. Never guessed: a duration in seconds "
        "may be an acceleration.",
    )
    return {
        "respondent_features": tuple(features),
        "money_attribute": money,
        "time_attribute": time_attr or None,
    }


def _import_section(
    upload: _Upload,
    recipe: Recipe,
    ins: us.Inspection,
    edited: pd.DataFrame,
    columns: us.ColumnMap,
    attrs_up: Any,
    users_up: Any,
) -> None:
    """The recipe's download, the study's title and the import button."""
    name = upload.name
    st.download_button(
        "Download the recipe (JSON)",
        recipe.to_json(),
        file_name=f"{Path(name).name.split('.')[0]}.recipe.json",
        mime="application/json",
        key="add_recipe",
        help="These choices as a file: `python -m data_loaders import-study FILE --recipe "
        "RECIPE --title T` imports the same file to the same study (the study keeps it "
        "too, as recipe.json).",
    )
    title = st.text_input(
        "Study title",
        Path(name).stem[: fields.MAX_TEXT_CHARS],
        key=f"add_title::{name}",
        max_chars=fields.MAX_TEXT_CHARS,
    )
    if st.button("Import study", type="primary", key="add_import"):
        attributes, problems = us.attributes_from_rows(edited)
        if problems:
            _show_problems(problems)
            return
        # the inferred table, unedited, is the command's inference: asked about as it is
        given = attrs_up is not None or list(attributes) != list(ins.attributes)
        _import(
            title,
            upload.content,
            name,
            attributes if given else None,
            columns,
            users_up,
            upload.sep,
            upload.encoding,
        )


def _utf8_note(how: str, encoding: str | None) -> str:
    """For a text read as UTF-8 by the detection, a sentence saying so (how the reader
    describes a file names only another encoding, or one given); else ``""``."""
    if encoding is None and "-separated text" in how and "encoding " not in how:
        return " Text encoding: UTF-8 (detected; the Text encoding choice names another)."
    return ""


def _replay(
    recipe: Recipe,
    content: bytes,
    name: str,
    sep: str | None,
    users_up: object,
    encoding: str | None = None,
) -> None:
    """Import an upload exactly with a recipe's choices (``import-study --recipe``): its
    preview, then the title and the import; no column choices to make."""
    st.info(
        "Replaying the recipe: its layout, columns, attributes and roles replace the "
        "choices of this form (remove the recipe to make them here)."
    )
    ins = _inspect(content, name, recipe.columns.to_json(), sep, encoding)
    if ins.columns is None:
        _show_problems(ins.problems)
        return
    _show_preview(ins, list(recipe.columns.respondent_features))
    title = st.text_input(
        "Study title",
        Path(name).stem[: fields.MAX_TEXT_CHARS],
        key=f"add_title::{name}",
        max_chars=fields.MAX_TEXT_CHARS,
    )
    if st.button("Import study", type="primary", key="add_import"):
        attributes = list(recipe.attributes) if recipe.attributes is not None else None
        _import(title, content, name, attributes, recipe.columns, users_up, sep, encoding)


def _import(
    title: str,
    content: bytes,
    name: str,
    attributes: list[Any] | None,
    columns: us.ColumnMap,
    users_up: Any,
    sep: str | None,
    encoding: str | None = None,
) -> None:
    """Check and save the upload (``attributes`` ``None``: inferred); its problems, or
    the new study selected on the next run."""
    users = (
        (users_up.getvalue(), upload_name(users_up.name, "respondents.csv"))
        if users_up is not None
        else None
    )
    with st.spinner("Checking every row with the loaders..."):
        meta, problems = svc.import_study(
            title,
            content,
            name,
            attributes,  # type: ignore[arg-type]
            columns,
            users,
            sep=sep,
            encoding=encoding,
        )
    if problems:
        _show_problems(problems)
        return
    assert meta is not None
    st.session_state[PENDING] = meta.key
    st.session_state["add_done"] = meta.title
    st.rerun()


def _text_choice(col: object, label: str, default: str, key: str, **kw) -> str:
    """A text input whose value survives a layout switch (:func:`_kept`)."""
    kw.setdefault("max_chars", LIST_CHARS)
    shown = str(_kept(key, default))[: kw["max_chars"]]
    value = col.text_input(label, shown, key=key, **kw)  # type: ignore[attr-defined]
    _keep(key, value)
    return str(value).strip()


def _split(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


def _layout_choices(fmt: str, have: list[str], guess: us.ColumnMap) -> dict[str, object]:
    """The command line's layout flags (``--missing``, ``--weight-col``, ``--levels``,
    ``--available-when``; wide: ``--availability``, ``--fill-attributes``), pre-filled
    with what was inferred; the :class:`~data_loaders.layout.ColumnMap` fields they set."""
    c = st.columns(4)
    missing = _text_choice(
        c[0], "Missing-value codes", ", ".join(guess.missing or ()), "add_missing",
        help="Codes meaning 'no answer' (-1, 99), comma-separated: a choice situation "
        "with one in an attribute is dropped and counted (as --missing). Pre-filled with "
        "the codes found among -1, -2 and 99.",
    )  # fmt: skip
    weight = _pick(
        c[1], "Weight column", have, guess.weight or "", "add_weight",
        help="Recorded and reported, not used: the models take no weights (as --weight-col).",
    )  # fmt: skip
    levels = _text_choice(
        c[2], "Text levels", "", "add_levels",
        help="For a text attribute with more than 30 levels: name=keep, name=drop or "
        "name=group:K (the K most frequent, the rest as 'other'), comma-separated (as "
        "--levels).",
    )  # fmt: skip
    out: dict[str, object] = {
        "missing": _split(missing),
        "weight": weight,
        "levels": tuple(
            (n.strip(), r.strip()) for n, _, r in (x.partition("=") for x in _split(levels))
        ),
    }
    when = _text_choice(
        st, "Availability conditions", "", "add_avail_when",
        help="An alternative available only where a column meets a condition, e.g. "
        "'car: license == 1' (operators == != > >= < <=), several separated by ';' (as "
        "--available-when). Wide: with an availability column too, both must hold; long: "
        "the alternative is a value of the profile column, and its rows where the condition "
        "is false are left out.",
    )  # fmt: skip
    out["available_when"] = tuple(r.strip() for r in when.split(";") if r.strip())
    out.update(_meaning_choices(have))
    if fmt == "wide":
        fill = _text_choice(
            c[3], "Attributes of some alternatives", "", "add_fill",
            help="Attribute stems given for some alternatives only (a cost for two of three "
            "modes), used with 0 for the others, comma-separated (as --fill-attributes).",
        )  # fmt: skip
        avail = _text_choice(
            st, "Availability columns (wide)", ", ".join(guess.availability or ()), "add_avail",
            help="One 1/0 column per alternative, in the alternatives' order (an empty "
            "entry: always available); pre-filled from names such as TRAIN_AV; empty: none "
            "(as --availability).",
        )  # fmt: skip
        out["fill_attributes"] = _split(fill)
        out["availability"] = tuple(a.strip() for a in avail.split(",")) if avail else ()
        w = st.columns(2)
        inferred = CODINGS_INV.get(guess.choice_coding or "", "inferred")
        options = list(CODINGS)
        kept = str(_kept("add_coding", inferred))
        coding = w[0].selectbox(
            "Chosen column's values",
            options,
            index=options.index(kept) if kept in options else 0,
            key="add_coding",
            help="How the chosen column names the alternative: by name, or by number in the "
            "order of the alternatives above (as --choice-coding).",
        )
        _keep("add_coding", coding)
        no_choice = _text_choice(
            w[1], "No-choice values", ", ".join(guess.no_choice), "add_no_choice",
            help="Values of the chosen column meaning 'no or unknown choice' (SwissMetro's "
            "0): such rows are dropped and counted (as --no-choice).",
        )  # fmt: skip
        out["choice_coding"] = CODINGS[str(coding)]
        out["no_choice"] = _split(no_choice)
    return out


def _multi(col: object, label: str, have: list[str], key: str, help: str) -> tuple[str, ...]:
    """A multiselect of the file's columns whose value survives a layout switch."""
    kept = [c for c in list(_kept(key, [])) if c in have]  # type: ignore[call-overload]
    value = col.multiselect(label, have, default=kept, key=key, help=help)  # type: ignore[attr-defined]
    _keep(key, list(value))
    return tuple(value)


def _meaning_choices(have: list[str]) -> dict[str, object]:
    """What the columns mean where the file leaves it open (the import's questions):
    units, a row selection, the reference alternative, columns to ignore, category codes
    and numbers; the :class:`~data_loaders.layout.ColumnMap` fields they set (as
    ``--units``, ``--where``, ``--reference``, ``--ignore``, ``--categorical``,
    ``--numeric``)."""
    u = st.columns(4)
    units = _text_choice(
        u[0], "Units", "", "add_units",
        help="The attributes' units, NAME=UNIT comma-separated (TT=min, CO=CHF; as --units). "
        "A unit is never assumed: without one a trade-off is per unit of the attribute; a "
        "time in min, s or h is converted to hours.",
    )  # fmt: skip
    where = _text_choice(
        u[1], "Row selection", "", "add_where",
        help="Only the rows meeting a condition, e.g. PURPOSE in (1, 3) and CHOICE != 0 "
        "(as --where).",
    )  # fmt: skip
    reference = _text_choice(
        u[2], "Reference alternative", "", "add_reference",
        help="The alternative whose constant is 0 (as --reference); empty: the first.",
    )  # fmt: skip
    split = _pick(
        u[3], "Split column", have, "", "add_split",
        help="A column whose values train, validation, test are your own split (as "
        "--split-col; the plan's split column:NAME uses it, a validation row trains).",
    )  # fmt: skip
    q = st.columns(3)
    ignore = _multi(
        q[0], "Columns to ignore", have, "add_ignore",
        "Not part of the study: a row index, an id that is no attribute (as --ignore).",
    )  # fmt: skip
    categorical = _multi(
        q[1], "Category codes", have, "add_categorical",
        "Columns whose whole numbers are codes of categories (trip purpose 1 = commute, "
        "2 = shopping, ...; as --categorical).",
    )  # fmt: skip
    numeric = _multi(
        q[2], "Numbers", have, "add_numeric",
        "Columns whose whole numbers are amounts or scores, not codes (as --numeric).",
    )  # fmt: skip
    return {
        "units": tuple(
            (n.strip(), v.strip()) for n, _, v in (x.partition("=") for x in _split(units))
        ),
        "where": where,
        "reference": reference or None,
        "split": split,
        "ignore": ignore,
        "categorical": categorical,
        "numeric": numeric,
    }


#: Where the form answers the import's questions: a flag -> the form's field.
ANSWER_FIELDS = {
    "--ignore": "Columns to ignore",
    "--categorical": "Category codes",
    "--numeric": "Numbers",
    "--missing": "Missing-value codes",
    "--units": "Units",
    "--where": "Row selection",
    "--reference": "Reference alternative",
    "--split-col": "Split column",
    "--alternatives": "Alternatives (wide)",
    "--no-choice": "No-choice values",
    "--opt-out": "Opt-out values",
    "--constants": "Alternative constants",
}


def form_words(text: str) -> str:
    """A message naming command-line flags, with the form's field beside each
    (``--ignore rownames`` -> ``'Columns to ignore' (--ignore) rownames``)."""
    for flag, field in ANSWER_FIELDS.items():
        text = text.replace(f"{flag} ", f"'{field}' ({flag}) ")
    return text


#: The form's choices of a wide chosen column's values (``ColumnMap.choice_coding``).
CODINGS: dict[str, str | None] = {
    "inferred": None,
    "names": "names",
    "numbers from 0": "0",
    "numbers from 1": "1",
}
CODINGS_INV = {v: k for k, v in CODINGS.items() if v}


def _show_preview(ins: us.Inspection, features: list[tuple[str, str]]) -> None:
    """What the import understood (``import-study --dry-run``'s lines), before saving."""
    if not ins.preview:
        return
    feats = ", ".join(f"{n} ({lb})" if lb else n for n, lb in features) or "none"
    lines = [
        f"respondent features: {feats}"
        if line.startswith("respondent features:")
        else form_words(line)
        if line.startswith("question:")
        else line
        for line in ins.preview
    ]
    with st.expander("Preview: what the import understood (nothing is saved yet)", expanded=True):
        st.markdown("\n".join(f"- {ui.md(line)}" for line in lines))
        st.caption(
            "The same lines as `python -m data_loaders import-study FILE --dry-run`; change "
            "the choices above to correct them."
        )


def remove_button(key: str, title: str) -> None:
    """ "Remove this study" for an imported study this visitor may remove (on a shared
    server: their own, unpublished)."""
    if not svc.removable(key):
        return
    if st.button(f"Remove {ui.md(title)}", key=f"cs_remove::{key}", icon=":material/delete:"):
        svc.remove_study(key)
        st.session_state[PENDING] = None
        st.rerun()
