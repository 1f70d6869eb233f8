"""Generate the synthetic PMR demo inbox (deterministic; run from the repository root).

    python data_loaders/data/pmr_demo/generate.py            # writes the files next to it
    python data_loaders/data/pmr_demo/generate.py --check    # regenerate in memory, compare

Everything here is invented: 20 fictional patients (no names, ages and EHR excerpts made
up), 30 message scenarios written for this project, each used twice (once in inbox A,
once in inbox B, with different wording and patients). The patients, the scenarios and
the medication and problem catalogues are data in ``scenarios.json`` next to this file
(:func:`load_catalogue` reads them); this script holds the rules. Every scenario fixes the Table 9
features that the message states (actionability, requested action, trajectory, red
flags...); the context features (vascular, infection, medication, frailty) follow from
the patient's EHR by the rules below, so the ground truth is known by construction.

Files written
-------------
messages.csv
    ``message_id``, ``patient_id``, ``inbox`` (A/B), ``scenario``, ``text`` (EHR excerpt
    + message in the PMR-Synth packed layout), ``true_urgency``, ``level`` (1-6, urgency
    sextiles over all 60 messages, higher = more urgent).
truth.csv
    ``message_id`` and the eleven Table 9 features (multi-hot values ``;``-joined).
pairs.csv
    every pair of messages within an inbox: ``winner``, ``loser``, ``split`` (A = train,
    B = test), ``p_model`` (model probability of the recorded order), ``noisy`` (True
    when the label disagrees with the noise-free utility order).

Context rules (ground truth)
----------------------------
* vascular = (patient's vascular tags relevant to the scenario) + tags the message states.
* infection = (patient's infection tags relevant to the scenario) + message tags
  + ``older_age_with_fever`` when the scenario has fever and the patient is >= 65.
* medication = (patient's medication classes relevant to the scenario) + message classes
  + ``polypharmacy`` when the patient takes >= 6 medications and the scenario counts it.
* frailty = min(3, age points (65-79: 1, >= 80: 2) + 1 for a sedating / fall-risk or
  gabapentinoid medication + 1 for a fall/osteoporosis problem + scenario mobility).

Labels: ``u = demo_true_urgency(truth)`` (``data_loaders.pmr.DEMO_URGENCY_WEIGHTS``), and
for every pair ``P(a more urgent than b) = Phi((u_a - u_b) / 0.5)``, drawn with
``numpy.random.default_rng(SEED)``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # repository root, for data_loaders / feature_extraction

from data_loaders.pmr import DEMO_URGENCY_WEIGHTS, demo_true_urgency, pack_text  # noqa: E402
from feature_extraction.spec import table9_spec  # noqa: E402

SEED = 20260213

#: The literal data: tag vocabularies, catalogues, patients and scenarios.
SCENARIOS_FILE = HERE / "scenarios.json"


# ---------------------------------------------------------------------- catalogues
class Medication(NamedTuple):
    """A medication of the catalogue: EHR line, classes and context tags it implies."""

    ehr: str
    classes: frozenset[str]
    vascular: frozenset[str]
    infection: frozenset[str]


class Problem(NamedTuple):
    """A problem or diagnosis of the catalogue: EHR text, tags and a frailty point."""

    ehr: str
    vascular: frozenset[str]
    infection: frozenset[str]
    frailty: bool


@dataclass(frozen=True)
class Patient:
    """A fictional patient: demographics, problems, diagnoses and medications (keys)."""

    pid: str
    age: int
    gender: str
    problems: tuple[str, ...]
    past_year: tuple[str, ...]
    older: tuple[str, ...]
    meds: tuple[str, ...]

    def tags(self) -> tuple[set[str], set[str], set[str], int]:
        """(vascular tags, infection tags, medication classes, frailty points)."""
        vasc: set[str] = set()
        inf: set[str] = set()
        med: set[str] = set()
        frail = 2 if self.age >= 80 else 1 if self.age >= 65 else 0
        frail_problem = False
        for k in (*self.problems, *self.past_year, *self.older):
            _, v, i, f = PROBLEMS[k]
            vasc |= v
            inf |= i
            frail_problem |= f
        for k in self.meds:
            _, m, v, i = MEDS[k]
            med |= m
            vasc |= v
            inf |= i
        if med & {"sedating_or_fall_risk_medication", "gabapentinoid_or_edema_sedation_risk"}:
            frail += 1
        frail += int(frail_problem)
        return vasc, inf, med, frail

    def ehr(self) -> dict[str, object]:
        """Keyword arguments of :func:`data_loaders.pmr.pack_text`."""
        return {
            "age": self.age,
            "gender": self.gender,
            "problems": [PROBLEMS[k].ehr for k in self.problems],
            "diagnoses_past_year": [PROBLEMS[k].ehr for k in self.past_year],
            "diagnoses_older": [PROBLEMS[k].ehr for k in self.older],
            "medications": [MEDS[k].ehr for k in self.meds],
        }


@dataclass(frozen=True)
class Scenario:
    """A message scenario: features stated by the message and which EHR context counts."""

    key: str
    actionability: str
    requested: str
    trajectory: str
    distribution: str
    red_flags: tuple[str, ...]
    uncertainty: str
    conflict: str
    variants: tuple[str, str]
    rel_vasc: frozenset[str] = frozenset()
    rel_inf: frozenset[str] = frozenset()
    rel_med: frozenset[str] = frozenset()
    msg_vasc: frozenset[str] = frozenset()
    msg_inf: frozenset[str] = frozenset()
    msg_med: frozenset[str] = frozenset()
    fever: bool = False
    mobility: int = 0


#: Scenario field holding context tags -> its vocabulary (``"all"`` = the whole one).
_TAG_FIELDS = {
    "rel_vasc": "vascular",
    "msg_vasc": "vascular",
    "rel_inf": "infection",
    "msg_inf": "infection",
    "rel_med": "medication",
    "msg_med": "medication",
}


def _check_keys(d: Any, where: str, required: set[str], optional: set[str] = frozenset()) -> None:
    if not isinstance(d, dict):
        raise ValueError(f"{where}: expected an object, got {type(d).__name__}")
    missing, unknown = sorted(required - set(d)), sorted(set(d) - required - optional)
    if missing:
        raise ValueError(f"{where}: missing key(s) {missing}")
    if unknown:
        allowed = sorted(required | optional)
        raise ValueError(f"{where}: unknown key(s) {unknown}; allowed: {allowed}")


def load_catalogue(
    path: Path = SCENARIOS_FILE,
) -> tuple[dict[str, Medication], dict[str, Problem], tuple[Patient, ...], tuple[Scenario, ...]]:
    """Read the medications, problems, patients and scenarios of ``scenarios.json``.

    Raises
    ------
    ValueError
        Naming the file, the entry and the field of a malformed or dangling value.
    """
    doc = json.loads(path.read_text(encoding="utf-8"))
    vocab = {k: frozenset(v) for k, v in doc["vocabularies"].items()}
    meds = {}
    for k, d in doc["medications"].items():
        _check_keys(d, f"{path}: medications.{k}", set(Medication._fields))
        meds[k] = Medication(d["ehr"], *(frozenset(d[f]) for f in Medication._fields[1:]))
    problems = {}
    for k, d in doc["problems"].items():
        _check_keys(d, f"{path}: problems.{k}", set(Problem._fields))
        problems[k] = Problem(
            d["ehr"], frozenset(d["vascular"]), frozenset(d["infection"]), bool(d["frailty"])
        )
    patients = []
    list_fields = ("problems", "past_year", "older", "meds")
    for i, d in enumerate(doc["patients"]):
        where = f"{path}: patients[{i}]"
        _check_keys(d, where, {"pid", "age", "gender", *list_fields})
        for f in list_fields:
            known = meds if f == "meds" else problems
            bad = [k for k in d[f] if k not in known]
            if bad:
                raise ValueError(f"{where} ({d['pid']}): {f}: unknown keys {bad}")
        patients.append(
            Patient(d["pid"], int(d["age"]), d["gender"], *(tuple(d[f]) for f in list_fields))
        )
    scenarios = []
    fields = Scenario.__dataclass_fields__
    required = {f for f, spec in fields.items() if spec.default is MISSING}
    for i, d in enumerate(doc["scenarios"]):
        where = f"{path}: scenarios[{i}] ({d.get('key')!r})"
        _check_keys(d, where, required, set(fields) - required)
        kw = dict(d)
        for f, v in _TAG_FIELDS.items():
            if f not in kw:
                continue
            tags = vocab[v] if kw[f] == "all" else frozenset(kw[f])
            if kw[f] != "all" and f.startswith("rel_") and not tags <= vocab[v]:
                raise ValueError(f"{where}: {f}: tags {sorted(tags - vocab[v])} not in {v}")
            kw[f] = tags
        kw["red_flags"], kw["variants"] = tuple(kw["red_flags"]), tuple(kw["variants"])
        if len(kw["variants"]) != 2:
            raise ValueError(f"{where}: variants: expected two wordings")
        scenarios.append(Scenario(**kw))
    return meds, problems, tuple(patients), tuple(scenarios)


MEDS, PROBLEMS, PATIENTS, SCENARIOS = load_catalogue()


# ---------------------------------------------------------------------- generation
def _join(values: set[str] | frozenset[str], order: list[str]) -> str:
    return ";".join(v for v in order if v in values)


def truth_row(p: Patient, s: Scenario, spec) -> dict[str, str]:
    """Ground-truth Table 9 features of patient ``p`` sending scenario ``s``."""
    vasc, inf, med, frail = p.tags()
    v = (vasc & s.rel_vasc) | s.msg_vasc
    i = (inf & s.rel_inf) | s.msg_inf
    if s.fever and p.age >= 65:
        i = i | {"older_age_with_fever"}
    m = (med & s.rel_med) | s.msg_med
    if len(p.meds) >= 6 and "polypharmacy" in s.rel_med:
        m = m | {"polypharmacy"}
    frailty = ["none", "mild", "moderate", "high"][min(3, frail + s.mobility)]
    return {
        "symptom_trajectory": s.trajectory,
        "red_flag_syndrome": _join(set(s.red_flags), list(spec["red_flag_syndrome"].values)),
        "vascular_thrombotic_risk_context": _join(
            v, list(spec["vascular_thrombotic_risk_context"].values)
        ),
        "infection_risk_context": _join(i, list(spec["infection_risk_context"].values)),
        "medication_complication_context": _join(
            m, list(spec["medication_complication_context"].values)
        ),
        "frailty_or_fall_harm_risk": frailty,
        "diagnostic_uncertainty": s.uncertainty,
        "patient_requested_action": s.requested,
        "message_actionability": s.actionability,
        "symptom_distribution_or_spread": s.distribution,
        "acuity_conflict": s.conflict,
    }


def generate() -> dict[str, pd.DataFrame]:
    """Build the three tables (deterministic)."""
    spec = table9_spec()
    for s in SCENARIOS:  # every stated value must be allowed by the spec
        spec.validate_answer(
            {
                **{n: [] for n in spec.names if spec[n].type == "multi_hot"},
                "symptom_trajectory": s.trajectory,
                "red_flag_syndrome": list(s.red_flags),
                "frailty_or_fall_harm_risk": "none",
                "diagnostic_uncertainty": s.uncertainty,
                "patient_requested_action": s.requested,
                "message_actionability": s.actionability,
                "symptom_distribution_or_spread": s.distribution,
                "acuity_conflict": s.conflict,
            }
        )
    rng = np.random.default_rng(SEED)
    msgs, truths = [], []
    # Disjoint scenario sets per inbox, stratified by actionability, so the test inbox
    # holds unseen scenarios; each scenario appears twice in its inbox (both wordings,
    # different patients).
    by_level: dict[str, list[int]] = {}
    for si, s in enumerate(SCENARIOS):
        by_level.setdefault(s.actionability, []).append(si)
    sets: dict[str, list[int]] = {"A": [], "B": []}
    turn = 0
    for level in sorted(by_level):
        for si in rng.permutation(by_level[level]):
            sets["AB"[turn % 2]].append(int(si))
            turn += 1
    for inbox, patients in (("A", PATIENTS[:10]), ("B", PATIENTS[10:])):
        chosen = sets[inbox]
        slots = [(int(si), 0) for si in rng.permutation(chosen)]
        slots += [(int(si), 1) for si in rng.permutation(chosen)]
        for k, (si, variant) in enumerate(slots):
            p = patients[k % len(patients)]
            s = SCENARIOS[si]
            msgs.append(
                {
                    "patient_id": p.pid,
                    "inbox": inbox,
                    "scenario": s.key,
                    "text": pack_text(s.variants[variant], **p.ehr()),
                }
            )
            truths.append(truth_row(p, s, spec))
    messages = pd.DataFrame(msgs)
    # Message ids in inbox order, sorted by patient so the file reads naturally.
    messages["_t"] = range(len(messages))
    messages = messages.sort_values(["inbox", "patient_id", "_t"]).reset_index(drop=True)
    truth = pd.DataFrame([truths[t] for t in messages["_t"]])
    messages = messages.drop(columns="_t")
    num = messages.groupby("inbox").cumcount() + 1
    ids = [f"{b}{k:02d}" for b, k in zip(messages["inbox"], num, strict=True)]
    messages.insert(0, "message_id", ids)
    truth.insert(0, "message_id", ids)
    u = demo_true_urgency(truth)
    messages["true_urgency"] = np.round(u, 4)
    ranks = pd.Series(u).rank(method="average").to_numpy()
    messages["level"] = np.clip(np.ceil(ranks / len(u) * 6), 1, 6).astype(int)
    sd = float(DEMO_URGENCY_WEIGHTS["noise_sd"])
    pairs = []
    for inbox in ("A", "B"):
        idx = np.flatnonzero(messages["inbox"].to_numpy() == inbox)
        for a, b in itertools.combinations(idx, 2):
            p_ab = 0.5 * (1.0 + math.erf((u[a] - u[b]) / (sd * math.sqrt(2.0))))
            a_wins = rng.random() < p_ab
            w, l_ = (a, b) if a_wins else (b, a)
            pairs.append(
                {
                    "winner": ids[w],
                    "loser": ids[l_],
                    "split": "train" if inbox == "A" else "test",
                    "p_model": round(p_ab if a_wins else 1.0 - p_ab, 4),
                    "noisy": bool(u[w] < u[l_]),
                }
            )
    return {"messages": messages, "truth": truth, "pairs": pd.DataFrame(pairs)}


def main(argv: list[str] | None = None) -> int:
    """Write (or ``--check``) the demo files."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: here)")
    ap.add_argument("--check", action="store_true", help="compare with the files on disk")
    args = ap.parse_args(argv)
    tables = generate()
    if args.check:
        bad = []
        for name, df in tables.items():
            on_disk = pd.read_csv(args.out / f"{name}.csv", keep_default_na=False, dtype=str)
            fresh = df.astype(str).replace({"nan": ""})
            if not on_disk.equals(fresh.reset_index(drop=True)):
                bad.append(name)
        if bad:
            print(f"out of date: {bad}; rerun without --check")
            return 1
        print("demo files are up to date")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        df.to_csv(args.out / f"{name}.csv", index=False)
    t, p = tables["truth"], tables["pairs"]
    print(
        f"wrote {len(t)} messages, {len(p)} pairs ({int(p['noisy'].sum())} noisy labels) "
        f"to {args.out}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
