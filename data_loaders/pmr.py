"""Patient Message Ranking (PMR): the PMR-Synth-Inboxes loader and the bundled demo inbox.

Two studies
-----------
``load_pmr_synth``
    PMR-Synth-Inboxes (Gatto et al. 2026), published on the Hugging Face Hub only and not
    shipped here. INBOX_A is the training inbox and INBOX_B the test inbox (DT-PBO
    Sec. 4.2). The items are the messages; their features come from an extracted table
    (``python -m feature_extraction extract --study pmr ...``); without one the study has
    an empty schema and only the texts.
``load_pmr_demo``
    A synthetic demo inbox bundled in ``data_loaders/data/pmr_demo`` (written by
    ``generate.py`` there): 60 portal messages of 20 fictional patients with short EHR
    excerpts, generated from templates with KNOWN Table 9 feature values, and pairwise
    urgency labels from a documented ground-truth urgency model
    (:data:`DEMO_URGENCY_WEIGHTS`, :func:`demo_true_urgency`) with seeded probit noise.
    Trees, rankings and ablations work on the ground-truth features with no LLM; with
    an LLM endpoint the extracted table can be loaded instead and scored against the
    truth (:func:`feature_extraction.evaluate.score_against_truth`).

Published format of PMR-Synth-Inboxes (``SOURCE.md``; to be verified on the real files)
-----------------------------------------------------------------------------------------
* Files ``data/INBOX_A-*.parquet`` and ``data/INBOX_B-*.parquet`` with columns ``text``
  (string), ``level`` (int64, urgency 1-6, higher = more urgent) and ``relevancy``
  (int64, said to be an EHR-relevancy label). 30 rows per inbox.

Assumptions (the real files are not available here)
---------------------------------------------------
* One row is one patient message: 30 patients per inbox, one message each. DT-PBO's
  "434 messages" per inbox then matches the number of pairwise comparisons (30 * 29 / 2
  = 435 pairs, less ties).
* ``text`` packs an EHR excerpt and the message, in this layout (as described by a
  third-party parser of the data)::

      ### EHR: ###Demographics###
      Age: 72
      Gender: Female

      ###Full Active Problem List###:
      Type 2 diabetes mellitus - Essential hypertension

      ###Recent Encounters (Max 10)###

      Diagnoses (Past Year): Urinary tract infection - Acute bronchitis
      Diagnoses (Older): Deep vein thrombosis (2019)

      ###Medications (Outpatient)###

      Active (Start Date Before Message, Not Yet Ended):
      -metformin 1000 mg tablet
      -lisinopril 20 mg tablet

      ### Patient Message: I have had a fever since ...

  :func:`parse_packed_text` splits it into the message and the EHR fields; missing
  sections give empty fields, and a text without the message marker and without EHR
  headers is taken to be the message alone. The LLM always sees the whole ``text``.
* Pairs: from the expert annotations (``PortalPal-AI/PMP-Synth-AllPairs-Annotated``)
  when a file is given or found next to the inboxes, else derived from ``level`` (the
  higher level wins; equal levels give no pair). The annotation file is assumed to name
  the two messages either by text (columns ``chosen``/``rejected``, as in the sibling
  PMR-Reddit pairs) or by id (``winner_id``/``loser_id`` with ids ``A-00`` .. ``B-29``).
  Errors naming the file, line (CSV, header = line 1; parquet: row from 1) and column:
  an empty or unreadable file, a winner equal to the loser, an empty cell, an id that
  names no message. Skipped with a warning listing the lines (``extras
  ["annotation_skipped"]``): texts that match no message of the two inboxes (the
  annotation set may cover other inboxes) and pairs across the two inboxes.
* Rows with an empty ``text`` are skipped with a warning naming the parquet file and
  row (counted from 1 in the file); the message ids number the remaining rows.
* Pairs within INBOX_A are the training pairs and pairs within INBOX_B the test pairs
  (``Study.extras["split"]``).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from data_loaders._common import (
    DataNotAvailableError,
    describe_columns,
    py,
    quoted,
    read_csv_lines,
)
from data_loaders.access import check_file, check_folder
from feature_extraction.extract import check_unique_message_ids, load_table
from feature_extraction.spec import Spec, table9_spec
from pbo_core.data import TRUE_UTILITY, DataValidationError, PreferenceData, Schema, Study

__all__ = [
    "DEMO_DIR",
    "DEMO_URGENCY_WEIGHTS",
    "PMR_DIR_ENV",
    "demo_true_urgency",
    "inbox_urgency",
    "load_pmr_demo",
    "load_pmr_synth",
    "pack_text",
    "parse_packed_text",
    "pmr_synth_status",
    "pmr_texts",
]

#: Environment variable naming the folder with the PMR-Synth-Inboxes download.
PMR_DIR_ENV = "DTPBO_PMR_DIR"

#: Folder of the bundled demo inbox.
DEMO_DIR = Path(str(resources.files("data_loaders") / "data" / "pmr_demo"))

PMR_LICENSE = (
    "CC BY-NC 4.0 (as cited by DT-PBO and the sibling annotation set; the dataset card "
    "metadata says MIT)"
)
PMR_CITATION = (
    "Gatto et al., Medical triage as pairwise ranking, arXiv 2601.13178 (2026); "
    "PortalPal-AI/PMR-Synth-Inboxes"
)
HOW_TO_GET = (
    "PMR-Synth-Inboxes is published on the Hugging Face Hub only "
    "(huggingface.co/datasets/PortalPal-AI/PMR-Synth-Inboxes, licence CC BY-NC 4.0). "
    "Download data/INBOX_A-*.parquet and data/INBOX_B-*.parquet (optionally the pairwise "
    "annotations of PortalPal-AI/PMP-Synth-AllPairs-Annotated) into a folder and pass it as "
    f"path=... or set ${PMR_DIR_ENV}. Without the data, use the bundled demo inbox "
    "(load_pmr_demo / study 'pmr-demo')."
)

# ---------------------------------------------------------------------- packed text
MESSAGE_MARKER = "### Patient Message:"
_EHR_MARKER = "### EHR:"
_EHR_RE = re.compile(r"^\s*###\s*EHR:\s*")
_SECTION_RE = re.compile(r"###\s*([^#\n]+?)\s*###:?")
_LIST_SEP = re.compile(r"\s+-\s+")


def pack_text(
    message: str,
    *,
    age: int | str = "",
    gender: str = "",
    problems: Sequence[str] = (),
    diagnoses_past_year: Sequence[str] = (),
    diagnoses_older: Sequence[str] = (),
    medications: Sequence[str] = (),
) -> str:
    """Pack an EHR excerpt and a message into the PMR-Synth ``text`` layout.

    The inverse of :func:`parse_packed_text` (used by the demo inbox generator).
    """
    meds = "\n".join(f"-{m}" for m in medications)
    return (
        f"{_EHR_MARKER} ###Demographics###\n"
        f"Age: {age}\n"
        f"Gender: {gender}\n\n"
        "###Full Active Problem List###:\n"
        f"{' - '.join(problems)}\n\n"
        "###Recent Encounters (Max 10)###\n\n"
        f"Diagnoses (Past Year): {' - '.join(diagnoses_past_year)}\n"
        f"Diagnoses (Older): {' - '.join(diagnoses_older)}\n\n"
        "###Medications (Outpatient)###\n\n"
        "Active (Start Date Before Message, Not Yet Ended):\n"
        f"{meds}\n\n"
        f"{MESSAGE_MARKER} {message.strip()}"
    )


def _items(blob: str) -> list[str]:
    blob = blob.strip()
    return [p.strip() for p in _LIST_SEP.split(blob) if p.strip()] if blob else []


def parse_packed_text(text: str) -> dict[str, Any]:
    """Split a packed PMR ``text`` into the message and the EHR fields.

    Returns
    -------
    dict
        ``message``, ``ehr`` (the EHR part as text), ``age``, ``gender``, ``problems``,
        ``diagnoses_past_year``, ``diagnoses_older`` (lists) and ``medications`` (list of
        active outpatient medications; lines under other medication sub-headers, e.g.
        recently ended ones, go to ``medications_other``).
    """
    text = text if isinstance(text, str) else ""
    out: dict[str, Any] = {
        "message": "",
        "ehr": "",
        "age": "",
        "gender": "",
        "problems": [],
        "diagnoses_past_year": [],
        "diagnoses_older": [],
        "medications": [],
        "medications_other": [],
    }
    if MESSAGE_MARKER in text:
        ehr, message = text.split(MESSAGE_MARKER, 1)
    elif _SECTION_RE.search(text):
        ehr, message = text, ""
    else:
        ehr, message = "", text
    out["message"] = message.strip()
    ehr = _EHR_RE.sub("", ehr, count=1)
    out["ehr"] = ehr.strip()
    # Sections: header -> body up to the next header.
    heads = list(_SECTION_RE.finditer(ehr))
    sections: dict[str, str] = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(ehr)
        sections[m.group(1).strip().lower()] = ehr[m.end() : end]
    demo = sections.get("demographics", "")
    if (m := re.search(r"Age:\s*(.*)", demo)) is not None:
        out["age"] = m.group(1).strip()
    if (m := re.search(r"Gender:\s*(.*)", demo)) is not None:
        out["gender"] = m.group(1).strip()
    prob = next((v for k, v in sections.items() if k.startswith("full active problem")), "")
    out["problems"] = _items(prob.lstrip(":"))
    enc = next((v for k, v in sections.items() if k.startswith("recent encounters")), "")
    if (m := re.search(r"Diagnoses \(Past Year\):(.*)", enc)) is not None:
        out["diagnoses_past_year"] = _items(m.group(1))
    if (m := re.search(r"Diagnoses \(Older\):(.*)", enc)) is not None:
        out["diagnoses_older"] = _items(m.group(1))
    meds = next((v for k, v in sections.items() if k.startswith("medications")), "")
    active = True
    for line in meds.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.endswith(":") and not line.startswith("-"):
            active = line.lower().startswith("active")
            continue
        if line.startswith("-"):
            (out["medications"] if active else out["medications_other"]).append(line[1:].strip())
    return out


def _display_columns(texts: pd.Series) -> pd.DataFrame:
    parsed = [parse_packed_text(t) for t in texts]
    return pd.DataFrame(
        {
            "message": [p["message"] for p in parsed],
            "age": [p["age"] for p in parsed],
            "gender": [p["gender"] for p in parsed],
            "problems": ["; ".join(p["problems"]) for p in parsed],
            "medications": ["; ".join(p["medications"]) for p in parsed],
            "ehr": [p["ehr"] for p in parsed],
        },
        index=texts.index,
    )


# ---------------------------------------------------------------------- features
def _load_feature_table(
    features: str | os.PathLike[str] | pd.DataFrame, spec: Spec
) -> pd.DataFrame:
    if isinstance(features, pd.DataFrame):
        table = features.copy()
        if "message_id" not in table.columns:
            raise DataValidationError("feature table has no 'message_id' column")
        table["message_id"] = table["message_id"].astype(str)
        check_unique_message_ids(table, "feature table", range(1, len(table) + 1), "row")
        return table
    return load_table(features, spec)


def _attach_features(
    items: pd.DataFrame, table: pd.DataFrame, spec: Spec, source: str
) -> tuple[pd.DataFrame, list[str]]:
    """Join the feature columns onto ``items``; return the joined items and the ids of
    items without a usable (status ok, complete) row."""
    names = spec.names
    missing_cols = [n for n in names if n not in table.columns]
    if missing_cols:
        raise DataValidationError(f"{source}: feature table lacks column(s) {missing_cols}")
    t = table.set_index("message_id")  # ids are unique (checked when read)
    usable = pd.Series(True, index=t.index)
    if "status" in t.columns:
        usable &= t["status"].astype(str).eq("ok")
    for f in spec.features:
        if f.type != "multi_hot":
            usable &= t[f.name].notna()
    dropped = [m for m in items["message_id"] if m not in t.index or not usable.get(m, False)]
    keep = items[~items["message_id"].isin(dropped)].copy()
    feats = t.loc[keep["message_id"], names]
    for f in spec.features:
        col = feats[f.name]
        if f.type == "multi_hot":
            feats[f.name] = [
                [] if (v is None or (isinstance(v, float) and v != v)) else v for v in col
            ]
        elif f.type == "numeric":
            feats[f.name] = col.astype(float)
    keep = keep.drop(columns=[n for n in names if n in keep.columns])
    keep = pd.concat([keep.reset_index(drop=True), feats.reset_index(drop=True)], axis=1)
    return keep, dropped


def _build_study(
    key: str,
    title: str,
    items: pd.DataFrame,
    pair_ids: pd.DataFrame,
    schema: Schema,
    *,
    description: str,
    source: str,
    citation: str,
    license: str,
    extras: dict[str, Any],
) -> Study:
    """Items (with ``message_id``) + pairs given by message ids (``winner``, ``loser``,
    ``split``) -> Study with train/test views in extras. Pairs touching dropped items are
    removed (counted in ``extras["dropped_pairs"]``)."""
    index = {m: i for i, m in enumerate(items["message_id"])}
    ok = pair_ids["winner"].isin(index.keys()) & pair_ids["loser"].isin(index.keys())
    extras["dropped_pairs"] = int((~ok).sum())
    pair_ids = pair_ids[ok].reset_index(drop=True)
    pairs = (
        np.column_stack(
            [pair_ids["winner"].map(index).to_numpy(), pair_ids["loser"].map(index).to_numpy()]
        )
        .astype(np.int64)
        .reshape(-1, 2)
    )
    data = PreferenceData.from_frame(
        items,
        pairs,
        schema,
        item_ids=items["message_id"].to_numpy(),
        source=key,
    )
    split = pair_ids["split"].to_numpy(dtype=object)
    extras.update(
        {
            "split": split,
            "train": data.select_pairs(split == "train"),
            "test": data.select_pairs(split == "test"),
            "pair_ids": pair_ids,
            "texts": items[["message_id", "text"]].reset_index(drop=True),
        }
    )
    return Study(
        key=key,
        title=title,
        schema=schema,
        data=data,
        description=description,
        source=source,
        citation=citation,
        license=license,
        extras=extras,
        kind="text",
    )


def pmr_texts(study: Study) -> pd.DataFrame:
    """``message_id`` and ``text`` (what the LLM reads) of every message of a PMR study."""
    return study.extras["texts"].copy()


# ---------------------------------------------------------------------- demo inbox
#: Ground-truth urgency model of the demo inbox (see ``pmr_demo/README.md``).
#: ``u = sum of the terms below``; the label of a pair is drawn as
#: ``P(a more urgent than b) = Phi((u_a - u_b) / noise_sd)``.
DEMO_URGENCY_WEIGHTS: dict[str, Any] = {
    # dominant term: 1.5 per level of message_actionability (0..4)
    "message_actionability": 1.5,
    # red flags: 0.6 for any, 0.2 for each further one (at most two more)
    "red_flag_any": 0.6,
    "red_flag_extra": 0.2,
    "symptom_trajectory": {
        "rapidly_worsening": 0.5,
        "worsening": 0.25,
        "fluctuating": 0.1,
        "stable": 0.0,
        "not_specified": 0.0,
        "improving": -0.15,
        "resolved": -0.25,
    },
    # per level (codes 0..2 and 0..3)
    "diagnostic_uncertainty": 0.2,
    "frailty_or_fall_harm_risk": 0.1,
    # per listed context value, at most two counted per feature
    "vascular_thrombotic_risk_context": 0.15,
    "infection_risk_context": 0.1,
    "medication_complication_context": 0.05,
    "acuity_conflict": {
        "calm_wording_high_acuity_content": 0.3,
        "resolved_event_but_high_risk_history": 0.1,
        "urgent_wording_low_acuity_content": -0.1,
        "none": 0.0,
    },
    "noise_sd": 0.5,
}


def demo_true_urgency(truth: pd.DataFrame, weights: Mapping[str, Any] | None = None) -> np.ndarray:
    """Ground-truth urgency of every row of a Table 9 feature table (demo inbox model).

    Parameters
    ----------
    truth
        Table with the Table 9 columns: ordinal features as labels, multi-hot features as
        lists or ``;``-joined strings.
    weights
        Model weights (default :data:`DEMO_URGENCY_WEIGHTS`).
    """
    w = dict(DEMO_URGENCY_WEIGHTS if weights is None else weights)
    spec = table9_spec()

    def code(name: str) -> np.ndarray:
        levels = list(spec[name].values)
        return np.array([levels.index(v) for v in truth[name]], dtype=float)

    def count(name: str) -> np.ndarray:
        vals = truth[name]
        return np.array(
            [len([p for p in v.split(";") if p]) if isinstance(v, str) else len(v) for v in vals],
            dtype=float,
        )

    u = w["message_actionability"] * code("message_actionability")
    n_red = count("red_flag_syndrome")
    u += w["red_flag_any"] * (n_red > 0) + w["red_flag_extra"] * np.clip(n_red - 1, 0, 2)
    u += np.array([w["symptom_trajectory"][v] for v in truth["symptom_trajectory"]])
    u += w["diagnostic_uncertainty"] * code("diagnostic_uncertainty")
    u += w["frailty_or_fall_harm_risk"] * code("frailty_or_fall_harm_risk")
    for name in (
        "vascular_thrombotic_risk_context",
        "infection_risk_context",
        "medication_complication_context",
    ):
        u += w[name] * np.minimum(count(name), 2)
    u += np.array([w["acuity_conflict"][v] for v in truth["acuity_conflict"]])
    return u


def inbox_urgency(study: Study, inbox: str) -> tuple[np.ndarray, np.ndarray]:
    """The messages of one inbox of the demo study and their ground-truth urgency.

    Parameters
    ----------
    study
        The ``pmr-demo`` study (:func:`load_pmr_demo`; ``extras["truth"]`` holds
        ``true_urgency`` per ``message_id``).
    inbox
        ``"A"`` or ``"B"``: the prefix of the inbox's message ids.

    Returns
    -------
    rows, urgency
        Item indices of the inbox's messages in ``study.data`` (item order) and the
        true urgency of each; both empty when no message id starts with ``inbox``.
    """
    ids = study.data.items["message_id"].astype(str).to_numpy()
    rows = np.flatnonzero(np.char.startswith(ids.astype(str), inbox))
    truth = study.extras["truth"].set_index("message_id")
    return rows, truth.loc[ids[rows], "true_urgency"].to_numpy(float)


def _demo_file(name: str) -> Path:
    p = DEMO_DIR / name
    if not p.is_file():
        raise DataNotAvailableError(
            f"the bundled demo file {p} is missing; reinstall the project or run "
            "python data_loaders/data/pmr_demo/generate.py"
        )
    return p


def load_pmr_demo(features: str | os.PathLike[str] | pd.DataFrame = "truth") -> Study:
    """The bundled synthetic demo inbox (60 messages, 20 fictional patients).

    Parameters
    ----------
    features
        ``"truth"`` for the known ground-truth Table 9 features, or an extracted feature
        table (path to a CSV/JSON/Parquet written by ``python -m feature_extraction
        extract --study pmr-demo``, or a DataFrame) with ``message_id`` and the Table 9
        columns. Messages whose extraction failed (``status`` not ``ok``) are dropped
        with the pairs that involve them (listed in ``extras["dropped_items"]``).

    Returns
    -------
    Study
        Items = messages (schema = Table 9 spec's schema); items table with
        ``message_id``, ``patient_id``, ``inbox``, ``text`` (packed EHR + message, what
        the LLM reads), display columns (``message``, ``age``, ``gender``, ``problems``,
        ``medications``, ``ehr``) and the features. Pairs = urgency comparisons within each
        inbox. ``extras``: ``split`` (``"train"``/``"test"`` per pair: inbox A/B),
        ``train``/``test`` PreferenceData views, ``truth`` (ground-truth features and
        ``true_urgency``), ``true_utility`` (message id -> true urgency, what live
        sessions score against), ``texts``, ``features_source``, ``urgency_model``,
        ``dropped_items``, ``dropped_pairs``.
    """
    spec = table9_spec()
    schema = spec.to_schema()
    messages = pd.read_csv(_demo_file("messages.csv"), dtype={"message_id": str, "patient_id": str})
    truth = _load_feature_table(_demo_file("truth.csv"), spec)
    pair_ids = pd.read_csv(_demo_file("pairs.csv"), dtype={"winner": str, "loser": str})
    items = pd.concat(
        [
            messages[["message_id", "patient_id", "inbox", "text"]],
            _display_columns(messages["text"]),
        ],
        axis=1,
    )
    if isinstance(features, str) and features == "truth":
        table, source_name = truth, "ground truth (known by construction)"
    else:
        table = _load_feature_table(features, spec)
        source_name = str(features) if not isinstance(features, pd.DataFrame) else "DataFrame"
    items, dropped = _attach_features(items, table, spec, "pmr-demo features")
    if dropped:
        warnings.warn(
            f"pmr-demo: {len(dropped)} message(s) have no usable extracted features and are "
            f"dropped with their pairs: {dropped[:10]}{' ...' if len(dropped) > 10 else ''}",
            stacklevel=2,
        )
    truth = truth.merge(messages[["message_id", "true_urgency", "level"]], on="message_id")
    return _build_study(
        "pmr-demo",
        "Patient message triage (synthetic demo inbox)",
        items,
        pair_ids,
        schema,
        description=(
            "Synthetic demo of Patient Message Ranking: 60 portal messages of 20 fictional "
            "patients with short EHR excerpts, written from templates with known Table 9 "
            "features. Pairwise urgency labels come from a documented ground-truth model "
            "in which message_actionability dominates, with seeded noise. Inbox A (30 "
            "messages, 435 pairs) trains, inbox B tests. Not clinical data."
        ),
        source="generated by data_loaders/data/pmr_demo/generate.py (seeded)",
        citation="Feature set: DT-PBO Table 9; task: Gatto et al. 2026 (PMR-Synth-Inboxes)",
        license="MIT (part of this project; entirely synthetic)",
        extras={
            "truth": truth,
            TRUE_UTILITY: dict(
                zip(
                    truth["message_id"].astype(str),
                    truth["true_urgency"].astype(float),
                    strict=True,
                )
            ),
            "features_source": source_name,
            "urgency_model": dict(DEMO_URGENCY_WEIGHTS),
            "dropped_items": dropped,
            "spec": spec,
        },
    )


# ---------------------------------------------------------------------- PMR-Synth
def _find(folder: Path, pattern: str) -> list[Path]:
    hits = sorted(folder.glob(pattern)) + sorted(folder.glob(f"data/{pattern}"))
    return hits


def _synth_dir(path: str | os.PathLike[str] | None) -> Path:
    if path is not None:
        p = Path(path).expanduser()
        origin = "the given path"
    elif os.environ.get(PMR_DIR_ENV):
        p = Path(os.environ[PMR_DIR_ENV]).expanduser()
        origin = f"${PMR_DIR_ENV}"
    else:
        raise DataNotAvailableError(
            f"PMR-Synth-Inboxes: no path was given and ${PMR_DIR_ENV} is not set. {HOW_TO_GET}"
        )
    try:
        check_folder(p, "PMR-Synth-Inboxes folder")
    except FileNotFoundError:
        raise DataNotAvailableError(
            f"PMR-Synth-Inboxes: {p} ({origin}) is not a folder. {HOW_TO_GET}"
        ) from None
    for inbox in ("INBOX_A", "INBOX_B"):
        if not _find(p, f"{inbox}-*.parquet"):
            raise DataNotAvailableError(
                f"PMR-Synth-Inboxes: no {inbox}-*.parquet in {p} or {p / 'data'} ({origin}). "
                f"{HOW_TO_GET}"
            )
    return p


def pmr_synth_status() -> tuple[bool, str]:
    """``(available, reason)`` of PMR-Synth-Inboxes (``$DTPBO_PMR_DIR``); nothing is parsed."""
    try:
        p = _synth_dir(None)
    except DataNotAvailableError as e:
        return False, str(e)
    return True, f"found at {p} (${PMR_DIR_ENV})"


def _read_inbox(folder: Path, inbox: str) -> pd.DataFrame:
    """The rows of one inbox; errors and warnings name the parquet file and its row
    (counted from 1 in the file, before any row is dropped)."""
    frames = []
    for f in _find(folder, f"{inbox}-*.parquet"):
        check_file(f)
        try:
            df = pd.read_parquet(f)
        except Exception as e:
            raise DataValidationError(f"{f}: cannot read parquet ({e})") from None
        missing = {"text", "level", "relevancy"} - set(df.columns)
        if missing:
            raise DataValidationError(
                f"{f}: missing column(s) {sorted(missing)}; expected text, level, relevancy; "
                f"{describe_columns(df.columns, ('text', 'level', 'relevancy'))}"
            )
        df = df.reset_index(drop=True)
        df["_file"], df["_row"] = str(f), np.arange(1, len(df) + 1)
        frames.append(df)
    df = pd.concat(frames, ignore_index=True)
    bad = [i for i, t in enumerate(df["text"]) if not isinstance(t, str) or not t.strip()]
    if bad:
        shown = ", ".join(f"{df['_file'].iloc[i]} row {df['_row'].iloc[i]}" for i in bad[:10])
        warnings.warn(
            f"PMR-Synth {inbox}: skipping {len(bad)} row(s) with an empty 'text': {shown}"
            + (" ..." if len(bad) > 10 else ""),
            stacklevel=3,
        )
        df = df.drop(index=bad)
    df = df.reset_index(drop=True)
    for col in ("level", "relevancy"):
        vals = pd.to_numeric(df[col], errors="coerce")
        vals = vals.where(np.isfinite(vals.to_numpy(dtype=float)))
        if vals.isna().any():
            i = int(np.flatnonzero(vals.isna())[0])
            raise DataValidationError(
                f"{df['_file'].iloc[i]}, row {df['_row'].iloc[i]}, column {col!r}: "
                f"{quoted(df[col].iloc[i])} is not a finite number"
            )
        if col == "level":
            off = ~vals.isin(range(1, 7))
            if off.any():
                i = int(np.flatnonzero(off.to_numpy())[0])
                raise DataValidationError(
                    f"{df['_file'].iloc[i]}, row {df['_row'].iloc[i]}, column 'level': "
                    f"{quoted(df[col].iloc[i])} is not an urgency level 1..6"
                )
        df[col] = vals
    df = df.drop(columns=["_file", "_row"])
    letter = inbox[-1]
    df.insert(0, "message_id", [f"{letter}-{i:02d}" for i in range(len(df))])
    df.insert(1, "inbox", letter)
    return df


def _pairs_from_levels(items: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for letter, g in items.groupby("inbox", sort=True):
        ids, lv = g["message_id"].to_numpy(), g["level"].to_numpy(dtype=float)
        for i in range(len(g)):
            for j in range(i + 1, len(g)):
                if lv[i] == lv[j]:
                    continue
                w, l_ = (i, j) if lv[i] > lv[j] else (j, i)
                rows.append((ids[w], ids[l_], "train" if letter == "A" else "test"))
    return pd.DataFrame(rows, columns=["winner", "loser", "split"])


_ANNOTATION_COLUMNS = ("chosen", "rejected", "winner_id", "loser_id")


def _read_annotations(path: Path) -> tuple[pd.DataFrame, str]:
    """The annotation rows (index = CSV line, header = line 1; parquet: row from 1)."""
    if path.suffix.lower() in (".parquet", ".pq"):
        check_file(path)
        try:
            ann = pd.read_parquet(path)
        except Exception as e:
            raise DataValidationError(f"{path}: cannot read parquet ({e})") from None
        ann.index = pd.RangeIndex(1, len(ann) + 1)
        return ann, "row"
    return read_csv_lines(path, exact_lines=True), "line"


def _pairs_from_annotations(items: pd.DataFrame, path: Path) -> tuple[pd.DataFrame, list[Any]]:
    """Pairs of message ids from an annotation file, and the lines skipped (with a warning).

    Errors (naming the file, line and column): a winner equal to the loser, an empty cell,
    an id (``winner_id``/``loser_id``) that names no message. Skipped with a warning that
    lists the lines: texts (``chosen``/``rejected``) that match no message of the two
    inboxes (the annotation set may cover other inboxes), pairs across the two inboxes.
    """
    ann, unit = _read_annotations(path)
    inbox_of = dict(zip(items["message_id"], items["inbox"], strict=True))
    if {"winner_id", "loser_id"} <= set(ann.columns):
        cols = ("winner_id", "loser_id")
        w, l_ = ann["winner_id"], ann["loser_id"]
        by_id = True
    elif {"chosen", "rejected"} <= set(ann.columns):
        cols = ("chosen", "rejected")
        by_text = {t.strip(): m for t, m in zip(items["text"], items["message_id"], strict=True)}
        w = ann["chosen"].map(lambda t: by_text.get(str(t).strip()) if isinstance(t, str) else t)
        l_ = ann["rejected"].map(lambda t: by_text.get(str(t).strip()) if isinstance(t, str) else t)
        by_id = False
    else:
        raise DataValidationError(
            f"{path}, {'line 1 (header)' if unit == 'line' else 'columns'}: annotation columns "
            "are not understood (expected chosen/rejected (texts) or winner_id/loser_id "
            f"(message ids)); {describe_columns(ann.columns, _ANNOTATION_COLUMNS)}"
        )
    for c in cols:
        empty = ann[c].isna().to_numpy()
        if empty.any():
            raise DataValidationError(
                f"{path}, {unit} {py(ann.index[int(empty.argmax())])}, column {c!r}: is empty"
            )
    if by_id:
        w, l_ = w.astype(str).str.strip(), l_.astype(str).str.strip()
        for c, s in zip(cols, (w, l_), strict=True):
            unknown = ~s.isin(inbox_of.keys()).to_numpy()
            if unknown.any():
                i = int(unknown.argmax())
                raise DataValidationError(
                    f"{path}, {unit} {py(ann.index[i])}, column {c!r}: {quoted(s.iloc[i])} is "
                    "not a message id of the inboxes (A-00 .. B-29 style)"
                )
    same = (w == l_).to_numpy() & w.notna().to_numpy()
    if same.any():
        i = int(same.argmax())
        raise DataValidationError(
            f"{path}, {unit} {py(ann.index[i])}, columns {cols[0]!r}/{cols[1]!r}: the winner "
            "and the loser are the same message"
        )
    known = (w.isin(inbox_of.keys()) & l_.isin(inbox_of.keys())).to_numpy()
    same_inbox = known & (w.map(inbox_of) == l_.map(inbox_of)).to_numpy()
    pairs = pd.DataFrame({"winner": w[same_inbox], "loser": l_[same_inbox]}).reset_index(drop=True)
    pairs["split"] = ["train" if inbox_of[m] == "A" else "test" for m in pairs["winner"]]
    skipped = [py(x) for x in ann.index[~same_inbox]]
    if skipped:
        n_text = int((~known).sum())
        shown = ", ".join(str(x) for x in skipped[:10]) + (" ..." if len(skipped) > 10 else "")
        warnings.warn(
            f"{path}: {len(skipped)} annotated pair(s) skipped ({n_text} with a text that "
            f"matches no message, {len(skipped) - n_text} across the two inboxes), "
            f"{unit}s {shown}",
            stacklevel=3,
        )
    return pairs, skipped


def load_pmr_synth(
    path: str | os.PathLike[str] | None = None,
    *,
    features: str | os.PathLike[str] | pd.DataFrame | None = None,
    annotations: str | os.PathLike[str] | None = None,
    spec: Spec | None = None,
) -> Study:
    """PMR-Synth-Inboxes: INBOX_A (train) and INBOX_B (test) messages and their pairs.

    Parameters
    ----------
    path
        Folder with ``INBOX_A-*.parquet`` and ``INBOX_B-*.parquet`` (directly or under
        ``data/``); defaults to ``$DTPBO_PMR_DIR``.
    features
        Extracted feature table (path or DataFrame with ``message_id`` = ``A-00`` ..
        ``B-29`` and the spec's columns). ``None``: the study has an empty schema and
        ``extras["needs_extraction"] = True``.
    annotations
        Expert pairwise annotations (parquet/CSV, see the module notes). ``None`` looks
        for ``*AllPairs*.parquet`` / ``annotations.{parquet,csv}`` in the folder and
        otherwise derives pairs from ``level``.
    spec
        Feature spec of ``features`` (default: Table 9).

    Raises
    ------
    DataNotAvailableError
        When the files are not there; the message says how to obtain them.
    DataValidationError
        When a file does not have the published format (names file and row).
    """
    folder = _synth_dir(path)
    items = pd.concat(
        [_read_inbox(folder, "INBOX_A"), _read_inbox(folder, "INBOX_B")], ignore_index=True
    )
    items = pd.concat([items, _display_columns(items["text"])], axis=1)
    if annotations is None:
        found = (
            _find(folder, "*AllPairs*.parquet")
            + _find(folder, "annotations.parquet")
            + _find(folder, "annotations.csv")
        )
        annotations = found[0] if found else None
    skipped: list[Any] = []
    if annotations is not None:
        pair_ids, skipped = _pairs_from_annotations(items, Path(annotations))
        pair_source = f"expert annotations ({Path(annotations).name})"
    else:
        pair_ids = _pairs_from_levels(items)
        pair_source = "derived from level (higher level = more urgent; ties give no pair)"
    extras: dict[str, Any] = {
        "pair_source": pair_source,
        "annotation_unmatched": len(skipped),
        "annotation_skipped": skipped,
        "dropped_items": [],
        "needs_extraction": features is None,
    }
    if features is None:
        schema = Schema(())
        extras["features_source"] = None
    else:
        spec = spec or table9_spec()
        schema = spec.to_schema()
        table = _load_feature_table(features, spec)
        items, dropped = _attach_features(items, table, spec, "PMR-Synth features")
        extras.update({"features_source": str(features), "dropped_items": dropped, "spec": spec})
        if dropped:
            warnings.warn(
                f"PMR-Synth: {len(dropped)} message(s) without usable features are dropped",
                stacklevel=2,
            )
    return _build_study(
        "pmr",
        "Patient message triage (PMR-Synth-Inboxes)",
        items,
        pair_ids,
        schema,
        description=(
            "PMR-Synth-Inboxes: synthetic patient portal messages with EHR excerpts, urgency "
            "judged by clinical experts. INBOX_A trains, INBOX_B tests (DT-PBO Sec. 4.2). "
            f"Pairs: {pair_source}."
        ),
        source=f"huggingface.co/datasets/PortalPal-AI/PMR-Synth-Inboxes (local copy {folder})",
        citation=PMR_CITATION,
        license=PMR_LICENSE,
        extras=extras,
    )
