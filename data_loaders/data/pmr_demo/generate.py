"""Generate the synthetic PMR demo inbox (deterministic; run from the repository root).

    python data_loaders/data/pmr_demo/generate.py            # writes the files next to it
    python data_loaders/data/pmr_demo/generate.py --check    # regenerate in memory, compare

Everything here is invented: 20 fictional patients (no names, ages and EHR excerpts made
up), 30 message scenarios written for this project, each used twice (once in inbox A,
once in inbox B, with different wording and patients). Every scenario fixes the Table 9
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
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))  # repository root, for data_loaders / feature_extraction

from data_loaders.pmr import DEMO_URGENCY_WEIGHTS, demo_true_urgency, pack_text  # noqa: E402

SEED = 20260213

V_ALL = frozenset(
    {
        "prior_dvt_or_pe",
        "known_jugular_or_unusual_site_thrombosis",
        "anticoagulant_use",
        "varicose_or_venous_disease",
        "recent_surgery_or_hospitalization",
        "active_or_recent_cancer",
    }
)
I_ALL = frozenset(
    {
        "immunosuppressive_medication",
        "chronic_steroid_use",
        "diabetes_or_obesity",
        "recent_urinary_or_genital_infection",
        "recent_respiratory_infection",
    }
)
M_ALL = frozenset(
    {
        "sedating_or_fall_risk_medication",
        "anticoagulant_or_bleeding_risk",
        "steroid_or_immunosuppressant",
        "beta_blocker_or_rate_control",
        "diuretic_or_electrolyte_affecting",
        "ace_arb_or_potassium_affecting",
        "statin_or_myopathy_risk",
        "gabapentinoid_or_edema_sedation_risk",
        "glp1_or_metabolic_medication",
        "polypharmacy",
    }
)

# ---------------------------------------------------------------------- catalogues
# medication key -> (EHR line, medication classes, vascular tags, infection tags)
MEDS: dict[str, tuple[str, set[str], set[str], set[str]]] = {
    "apixaban": (
        "apixaban 5 mg tablet, twice daily",
        {"anticoagulant_or_bleeding_risk"},
        {"anticoagulant_use"},
        set(),
    ),
    "warfarin": (
        "warfarin 5 mg tablet, daily (INR goal 2-3)",
        {"anticoagulant_or_bleeding_risk"},
        {"anticoagulant_use"},
        set(),
    ),
    "clopidogrel": (
        "clopidogrel 75 mg tablet, daily",
        {"anticoagulant_or_bleeding_risk"},
        set(),
        set(),
    ),
    "metoprolol": (
        "metoprolol succinate 50 mg tablet, daily",
        {"beta_blocker_or_rate_control"},
        set(),
        set(),
    ),
    "diltiazem": (
        "diltiazem ER 180 mg capsule, daily",
        {"beta_blocker_or_rate_control"},
        set(),
        set(),
    ),
    "furosemide": (
        "furosemide 40 mg tablet, daily",
        {"diuretic_or_electrolyte_affecting"},
        set(),
        set(),
    ),
    "hctz": (
        "hydrochlorothiazide 25 mg tablet, daily",
        {"diuretic_or_electrolyte_affecting"},
        set(),
        set(),
    ),
    "lisinopril": (
        "lisinopril 20 mg tablet, daily",
        {"ace_arb_or_potassium_affecting"},
        set(),
        set(),
    ),
    "losartan": ("losartan 50 mg tablet, daily", {"ace_arb_or_potassium_affecting"}, set(), set()),
    "spironolactone": (
        "spironolactone 25 mg tablet, daily",
        {"ace_arb_or_potassium_affecting", "diuretic_or_electrolyte_affecting"},
        set(),
        set(),
    ),
    "atorvastatin": (
        "atorvastatin 40 mg tablet, nightly",
        {"statin_or_myopathy_risk"},
        set(),
        set(),
    ),
    "rosuvastatin": ("rosuvastatin 20 mg tablet, daily", {"statin_or_myopathy_risk"}, set(), set()),
    "gabapentin": (
        "gabapentin 300 mg capsule, three times daily",
        {"gabapentinoid_or_edema_sedation_risk"},
        set(),
        set(),
    ),
    "pregabalin": (
        "pregabalin 75 mg capsule, twice daily",
        {"gabapentinoid_or_edema_sedation_risk"},
        set(),
        set(),
    ),
    "zolpidem": (
        "zolpidem 5 mg tablet, at bedtime as needed",
        {"sedating_or_fall_risk_medication"},
        set(),
        set(),
    ),
    "lorazepam": (
        "lorazepam 0.5 mg tablet, as needed for anxiety",
        {"sedating_or_fall_risk_medication"},
        set(),
        set(),
    ),
    "oxycodone": (
        "oxycodone 5 mg tablet, every 6 hours as needed for pain",
        {"sedating_or_fall_risk_medication"},
        set(),
        set(),
    ),
    "tamsulosin": (
        "tamsulosin 0.4 mg capsule, nightly",
        {"sedating_or_fall_risk_medication"},
        set(),
        set(),
    ),
    "prednisone": (
        "prednisone 10 mg tablet, daily",
        {"steroid_or_immunosuppressant"},
        set(),
        {"chronic_steroid_use"},
    ),
    "methotrexate": (
        "methotrexate 15 mg tablet, once weekly",
        {"steroid_or_immunosuppressant"},
        set(),
        {"immunosuppressive_medication"},
    ),
    "tacrolimus": (
        "tacrolimus 2 mg capsule, twice daily",
        {"steroid_or_immunosuppressant"},
        set(),
        {"immunosuppressive_medication"},
    ),
    "mycophenolate": (
        "mycophenolate mofetil 500 mg tablet, twice daily",
        {"steroid_or_immunosuppressant"},
        set(),
        {"immunosuppressive_medication"},
    ),
    "semaglutide": (
        "semaglutide 1 mg injection, once weekly",
        {"glp1_or_metabolic_medication"},
        set(),
        set(),
    ),
    "metformin": (
        "metformin 1000 mg tablet, twice daily",
        {"glp1_or_metabolic_medication"},
        set(),
        set(),
    ),
    "insulin": (
        "insulin glargine 20 units, nightly",
        {"glp1_or_metabolic_medication"},
        set(),
        set(),
    ),
    "albuterol": ("albuterol inhaler 90 mcg, 2 puffs every 4 hours as needed", set(), set(), set()),
    "fluticasone": ("fluticasone-salmeterol 250/50 inhaler, twice daily", set(), set(), set()),
    "levothyroxine": ("levothyroxine 75 mcg tablet, daily", set(), set(), set()),
    "sertraline": ("sertraline 50 mg tablet, daily", set(), set(), set()),
    "omeprazole": ("omeprazole 20 mg capsule, daily", set(), set(), set()),
    "letrozole": ("letrozole 2.5 mg tablet, daily", set(), set(), set()),
    "vitamin_d": ("cholecalciferol 2000 units, daily", set(), set(), set()),
    "ocp": ("norgestimate-ethinyl estradiol tablet, daily", set(), set(), set()),
    "sumatriptan": ("sumatriptan 50 mg tablet, as needed for migraine", set(), set(), set()),
}

# problem key -> (EHR text, vascular tags, infection tags, frailty point)
PROBLEMS: dict[str, tuple[str, set[str], set[str], bool]] = {
    "t2dm": ("Type 2 diabetes mellitus", set(), {"diabetes_or_obesity"}, False),
    "obesity": ("Obesity, BMI 37", set(), {"diabetes_or_obesity"}, False),
    "htn": ("Essential hypertension", set(), set(), False),
    "afib": ("Paroxysmal atrial fibrillation", set(), set(), False),
    "hfpef": ("Heart failure with preserved ejection fraction", set(), set(), False),
    "ckd": ("Chronic kidney disease, stage 3a", set(), set(), False),
    "copd": ("Chronic obstructive pulmonary disease", set(), set(), False),
    "asthma": ("Moderate persistent asthma", set(), set(), False),
    "ra": ("Rheumatoid arthritis", set(), set(), False),
    "kidney_tx": ("Kidney transplant recipient (2018)", set(), set(), False),
    "breast_ca": (
        "Breast cancer, on adjuvant endocrine therapy",
        {"active_or_recent_cancer"},
        set(),
        False,
    ),
    "colon_ca": (
        "Colon cancer, resected 2024, on surveillance",
        {"active_or_recent_cancer"},
        set(),
        False,
    ),
    "venous": (
        "Chronic venous insufficiency with varicose veins",
        {"varicose_or_venous_disease"},
        set(),
        False,
    ),
    "dvt_hist": ("Deep vein thrombosis of left leg (2019)", {"prior_dvt_or_pe"}, set(), False),
    "pe_hist": ("Pulmonary embolism (2021)", {"prior_dvt_or_pe"}, set(), False),
    "ij_thrombosis": (
        "Right internal jugular vein thrombosis (2022)",
        {"known_jugular_or_unusual_site_thrombosis"},
        set(),
        False,
    ),
    "uti": ("Acute cystitis", set(), {"recent_urinary_or_genital_infection"}, False),
    "bronchitis": ("Acute bronchitis", set(), {"recent_respiratory_infection"}, False),
    "pneumonia_hosp": (
        "Community-acquired pneumonia, hospitalized 4 days",
        {"recent_surgery_or_hospitalization"},
        {"recent_respiratory_infection"},
        False,
    ),
    "knee_tka": (
        "Right total knee arthroplasty",
        {"recent_surgery_or_hospitalization"},
        set(),
        False,
    ),
    "falls": ("Recurrent falls", set(), set(), True),
    "osteoporosis": ("Osteoporosis", set(), set(), True),
    "hld": ("Hyperlipidemia", set(), set(), False),
    "hypothyroid": ("Hypothyroidism", set(), set(), False),
    "depression": ("Major depressive disorder, in remission", set(), set(), False),
    "anxiety": ("Generalized anxiety disorder", set(), set(), False),
    "gerd": ("Gastroesophageal reflux disease", set(), set(), False),
    "bph": ("Benign prostatic hyperplasia", set(), set(), False),
    "migraine": ("Migraine without aura", set(), set(), False),
    "neuropathy": ("Diabetic peripheral neuropathy", set(), set(), False),
    "cad": ("Coronary artery disease, stent 2020", set(), set(), False),
    "oa_knee": ("Osteoarthritis of both knees", set(), set(), False),
}


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
            "problems": [PROBLEMS[k][0] for k in self.problems],
            "diagnoses_past_year": [PROBLEMS[k][0] for k in self.past_year],
            "diagnoses_older": [PROBLEMS[k][0] for k in self.older],
            "medications": [MEDS[k][0] for k in self.meds],
        }


# Inbox A: P01-P10, inbox B: P11-P20 (no patient in both).
PATIENTS: tuple[Patient, ...] = (
    Patient("P01", 78, "Female", ("htn", "afib", "osteoporosis"), ("uti",), ("dvt_hist",),
            ("apixaban", "metoprolol", "lisinopril", "vitamin_d", "zolpidem", "omeprazole")),
    Patient("P02", 34, "Female", ("asthma", "migraine"), ("bronchitis",), (),
            ("albuterol", "fluticasone", "sumatriptan", "ocp")),
    Patient("P03", 67, "Male", ("t2dm", "obesity", "htn", "hld", "neuropathy"), (), ("cad",),
            ("metformin", "semaglutide", "lisinopril", "atorvastatin", "gabapentin",
             "clopidogrel")),
    Patient("P04", 52, "Female", ("breast_ca", "hypothyroid"), (), (),
            ("letrozole", "levothyroxine", "sertraline")),
    Patient("P05", 85, "Male", ("hfpef", "ckd", "bph", "falls"), ("pneumonia_hosp",), (),
            ("furosemide", "spironolactone", "metoprolol", "tamsulosin", "rosuvastatin",
             "omeprazole", "vitamin_d")),
    Patient("P06", 45, "Male", ("ra",), (), (), ("methotrexate", "prednisone", "omeprazole")),
    Patient("P07", 29, "Female", ("anxiety",), ("uti",), (), ("sertraline", "lorazepam")),
    Patient("P08", 71, "Female", ("copd", "htn", "venous"), ("bronchitis",), ("pe_hist",),
            ("fluticasone", "albuterol", "hctz", "warfarin", "losartan")),
    Patient("P09", 58, "Male", ("kidney_tx", "htn", "t2dm"), (), (),
            ("tacrolimus", "mycophenolate", "prednisone", "insulin", "diltiazem")),
    Patient("P10", 40, "Male", ("gerd", "depression"), ("knee_tka",), (),
            ("omeprazole", "sertraline", "oxycodone")),
    Patient("P11", 81, "Female", ("afib", "osteoporosis", "hypothyroid", "oa_knee"), (), (),
            ("warfarin", "diltiazem", "levothyroxine", "vitamin_d", "oxycodone", "omeprazole")),
    Patient("P12", 38, "Male", ("asthma", "obesity"), ("bronchitis",), (),
            ("albuterol", "fluticasone", "semaglutide")),
    Patient("P13", 64, "Female", ("colon_ca", "htn", "hld"), ("knee_tka",), ("ij_thrombosis",),
            ("apixaban", "lisinopril", "atorvastatin")),
    Patient("P14", 73, "Male", ("t2dm", "ckd", "cad", "neuropathy", "htn"), ("uti",), (),
            ("insulin", "metformin", "pregabalin", "metoprolol", "losartan", "rosuvastatin",
             "clopidogrel")),
    Patient("P15", 26, "Female", ("migraine",), (), (), ("sumatriptan", "ocp")),
    Patient("P16", 55, "Female", ("ra", "depression", "obesity"), ("bronchitis",), (),
            ("methotrexate", "prednisone", "sertraline")),
    Patient("P17", 88, "Male", ("hfpef", "falls", "bph", "copd"), ("pneumonia_hosp",), (),
            ("furosemide", "metoprolol", "tamsulosin", "lorazepam", "albuterol", "fluticasone")),
    Patient("P18", 47, "Male", ("venous", "htn", "gerd"), (), ("dvt_hist",),
            ("hctz", "omeprazole")),
    Patient("P19", 69, "Female", ("t2dm", "breast_ca", "anxiety"), ("uti",), (),
            ("metformin", "letrozole", "zolpidem", "sertraline")),
    Patient("P20", 33, "Male", ("kidney_tx",), (), (), ("tacrolimus", "mycophenolate")),
)  # fmt: skip


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
    notes: str = field(default="", compare=False)


def fs(*xs: str) -> frozenset[str]:
    """Shorthand for a frozenset of tags."""
    return frozenset(xs)


E, T, R, A, N = (
    "emergency_or_immediate_evaluation",
    "same_day_triage_or_call",
    "schedule_routine_visit_or_labs",
    "asynchronous_advice",
    "none_or_fyi",
)

SCENARIOS: tuple[Scenario, ...] = (
    # ---------------------------------------------------------------- emergency (4)
    Scenario(
        "chest_pressure_now", E, "asks_whether_to_come_in", "worsening", "localized",
        ("chest_pain_or_possible_arrhythmia",), "high", "none",
        ("For about 30 minutes I have had a heavy pressure in the middle of my chest that goes "
         "into my left arm. It is getting stronger and I am sweaty and a bit sick to my "
         "stomach. Should I come in?",
         "Chest tightness started while I was carrying groceries about half an hour ago and it "
         "is worse now, spreading to my jaw, and I feel clammy. Do I need to be seen?"),
        rel_vasc=fs("prior_dvt_or_pe", "anticoagulant_use", "active_or_recent_cancer",
                    "known_jugular_or_unusual_site_thrombosis"),
        rel_med=fs("beta_blocker_or_rate_control", "statin_or_myopathy_risk",
                   "anticoagulant_or_bleeding_risk"),
    ),
    Scenario(
        "stroke_signs", E, "asks_whether_to_come_in", "rapidly_worsening", "localized",
        ("new_neurologic_deficit",), "high", "none",
        ("Writing for my spouse: since about an hour ago the right side of the face is drooping, "
         "the right arm is weak and the speech is slurred, and it is getting worse quickly. "
         "Should we go to the ER?",
         "This is the daughter. Mom suddenly cannot find her words and her left hand keeps "
         "dropping things, started 40 minutes ago and worse every few minutes. Should we bring "
         "her in?"),
        rel_vasc=fs("anticoagulant_use", "prior_dvt_or_pe",
                    "known_jugular_or_unusual_site_thrombosis"),
        rel_med=fs("anticoagulant_or_bleeding_risk"),
    ),
    Scenario(
        "anaphylaxis", E, "same_day_call_or_reply", "rapidly_worsening", "spreading_or_migrating",
        ("anaphylaxis_or_airway_allergy", "rapidly_spreading_rash"), "moderate", "none",
        ("I took the first dose of the new antibiotic an hour ago and now my lips are swelling, "
         "my throat feels tight and hives are spreading over my chest and arms. Please call "
         "me right away.",
         "After eating at a restaurant my tongue feels thick, my voice is hoarse and red welts "
         "are spreading fast down my body. Please call me back now."),
    ),
    Scenario(
        "breathless_wheeze", E, "same_day_visit_or_triage", "worsening", "systemic",
        ("respiratory_distress_or_wheezing",), "moderate", "none",
        ("My breathing has gotten worse all day, I am wheezing, I can only say a few words at a "
         "time and my rescue inhaler is not helping anymore. I need to be seen today.",
         "Since this morning I cannot catch my breath, the wheezing is louder and using the "
         "inhaler every hour does nothing. I need an appointment today."),
        rel_inf=fs("recent_respiratory_infection", "immunosuppressive_medication",
                   "chronic_steroid_use"),
        rel_med=fs("beta_blocker_or_rate_control"),
    ),
    Scenario(
        "fainted_hit_head_fyi", E, "informational_fyi", "resolved", "not_specified",
        ("syncope_or_near_syncope", "significant_fall_or_trauma"), "high",
        "calm_wording_high_acuity_content",
        ("Hi, not a big deal, but I blacked out in the shower this morning and hit my head on "
         "the tub. I feel okay now, just a small bump. Only letting you know for my chart.",
         "Just an FYI for my records: I passed out getting up from the couch last night and "
         "banged my head on the table. Seems fine today, no need to worry."),
        rel_vasc=fs("anticoagulant_use"),
        rel_med=fs("anticoagulant_or_bleeding_risk", "sedating_or_fall_risk_medication",
                   "beta_blocker_or_rate_control", "diuretic_or_electrolyte_affecting",
                   "ace_arb_or_potassium_affecting", "polypharmacy"),
        mobility=1,
    ),
    Scenario(
        "headache_stiff_neck_fever", E, "asks_whether_to_come_in", "worsening", "systemic",
        ("systemic_febrile_illness", "neck_stiffness_with_throat_symptoms"), "high", "none",
        ("Since yesterday I have the worst headache of my life, my neck is stiff so I cannot "
         "touch my chin to my chest, and my fever is 39.4. Light hurts my eyes. Should I come "
         "in?",
         "I have a fever of 39 C, a pounding headache that keeps getting worse and a very stiff "
         "neck, and I threw up twice. Do I need to be seen?"),
        rel_inf=I_ALL, msg_inf=fs("possible_deep_neck_or_meningeal_source"), fever=True,
        rel_med=fs("steroid_or_immunosuppressant"),
    ),
    # ---------------------------------------------------------------- same-day (3)
    Scenario(
        "calf_swelling_after_flight", T, "same_day_visit_or_triage", "worsening", "localized",
        (), "moderate", "none",
        ("My left calf has been swollen, warm and sore for two days, since I got back from an "
         "11-hour flight, and it is getting bigger. Can I be seen today?",
         "After a long drive and flight last weekend my right lower leg is swollen and tender "
         "and it hurts more each day. I would like to be checked today."),
        rel_vasc=V_ALL, msg_vasc=fs("recent_flight_or_immobility", "new_unilateral_limb_symptom"),
        rel_med=fs("anticoagulant_or_bleeding_risk"),
    ),
    Scenario(
        "uti_with_fever", T, "same_day_call_or_reply", "worsening", "systemic",
        ("systemic_febrile_illness",), "moderate", "none",
        ("Burning when I pee for three days and now a fever of 38.6 and pain in my right side "
         "of my back. Can someone call me today?",
         "My bladder infection symptoms came back and now I have chills, 38.5 fever and my "
         "lower back hurts on one side. Please call me today."),
        rel_inf=I_ALL, fever=True,
        rel_med=fs("steroid_or_immunosuppressant", "glp1_or_metabolic_medication"),
    ),
    Scenario(
        "bilateral_leg_swelling", T, "same_day_call_or_reply", "worsening",
        "bilateral_or_symmetric",
        ("new_bilateral_leg_edema",), "high", "none",
        ("Both of my ankles and legs have been swelling more every day this week, I gained 3 kg "
         "and I get winded on the stairs. Please call me today.",
         "My legs are puffy on both sides up to the knees, worse each day, and my shoes do not "
         "fit. I am also more short of breath at night. Can you call me today?"),
        rel_med=fs("diuretic_or_electrolyte_affecting", "gabapentinoid_or_edema_sedation_risk",
                   "ace_arb_or_potassium_affecting", "beta_blocker_or_rate_control",
                   "polypharmacy"),
        rel_vasc=fs("varicose_or_venous_disease", "active_or_recent_cancer"),
    ),
    Scenario(
        "vomiting_cannot_keep_fluids", T, "asks_whether_to_come_in", "worsening", "systemic",
        ("possible_dehydration_or_poor_intake", "syncope_or_near_syncope"), "moderate", "none",
        ("I have been vomiting since yesterday and cannot keep water down. I get dizzy when I "
         "stand and I have barely peed today. The kids had a stomach bug last week. Should I "
         "come in?",
         "Throwing up for 24 hours, can not even keep sips of water down, and I almost fainted "
         "in the bathroom. My husband had the same bug. Do I need to come in?"),
        msg_inf=fs("contagion_or_household_exposure_concern"),
        rel_med=fs("diuretic_or_electrolyte_affecting", "ace_arb_or_potassium_affecting",
                   "glp1_or_metabolic_medication", "polypharmacy"),
        mobility=1,
    ),
    Scenario(
        "ascending_leg_weakness", T, "same_day_call_or_reply", "rapidly_worsening",
        "spreading_or_migrating",
        ("acute_neuromuscular_weakness",), "high", "none",
        ("For two days my feet have been tingling and now my legs feel weak, and it is moving "
         "up. Today I could barely climb the stairs. I had a cold two weeks ago. Please call.",
         "Pins and needles started in my toes and in one day spread up to my knees, and my legs "
         "give way when I stand. I had a chest cold recently. Please call me today."),
        msg_inf=fs("recent_respiratory_infection"),
        rel_med=fs("statin_or_myopathy_risk"),
        mobility=1,
    ),
    Scenario(
        "spreading_cellulitis", T, "same_day_visit_or_triage", "worsening",
        "spreading_or_migrating",
        ("rapidly_spreading_rash", "systemic_febrile_illness"), "moderate", "none",
        ("The red, hot patch on my shin has spread past the pen line I drew this morning and now "
         "I have chills. I need to be seen today.",
         "A scrape on my leg turned red and warm and the redness is moving up toward my knee "
         "within hours; I feel feverish. Can I come in today?"),
        rel_inf=fs("diabetes_or_obesity", "immunosuppressive_medication", "chronic_steroid_use"),
        rel_vasc=fs("varicose_or_venous_disease"), fever=True,
        rel_med=fs("steroid_or_immunosuppressant"),
    ),
    Scenario(
        "fall_on_blood_thinner", T, "asks_whether_to_come_in", "worsening", "localized",
        ("significant_fall_or_trauma",), "moderate", "none",
        ("I slipped on the kitchen floor and landed on my hip. I can walk but the bruise is "
         "getting bigger and darker. I am on a blood thinner. Do I need to come in?",
         "I tripped on the front step and hit my side hard. The swelling keeps growing and I "
         "take a blood thinner. Should I be seen?"),
        rel_vasc=fs("anticoagulant_use"),
        rel_med=fs("anticoagulant_or_bleeding_risk", "sedating_or_fall_risk_medication",
                   "polypharmacy"),
        mobility=1,
    ),
    Scenario(
        "palpitations_lightheaded", T, "same_day_call_or_reply", "fluctuating", "not_specified",
        ("chest_pain_or_possible_arrhythmia",), "moderate", "none",
        ("Since this morning my heart keeps racing and skipping on and off, and I feel "
         "lightheaded during the spells. Please call me today.",
         "My pulse has been irregular and fast off and on all day, comes and goes, and I feel "
         "woozy when it happens. Can a nurse call me today?"),
        rel_med=fs("beta_blocker_or_rate_control", "diuretic_or_electrolyte_affecting",
                   "ace_arb_or_potassium_affecting", "polypharmacy"),
        rel_vasc=fs("anticoagulant_use"),
    ),
    Scenario(
        "throat_one_side_swollen", T, "same_day_visit_or_triage", "worsening", "localized",
        ("neck_stiffness_with_throat_symptoms",), "high", "none",
        ("My sore throat is much worse on the left, my neck is swollen on that side, swallowing "
         "is very hard and my voice sounds muffled. I need to be seen today.",
         "Terrible throat pain on one side for three days, getting worse, I can barely open my "
         "mouth and the side of my neck is swollen. Can I come in today?"),
        msg_inf=fs("possible_deep_neck_or_meningeal_source"),
        rel_inf=fs("immunosuppressive_medication", "diabetes_or_obesity", "chronic_steroid_use"),
        rel_vasc=fs("known_jugular_or_unusual_site_thrombosis"),
        rel_med=fs("steroid_or_immunosuppressant"),
    ),
    # ---------------------------------------------------------------- routine visit/labs (2)
    Scenario(
        "past_chest_tightness_checkup", R, "asks_whether_to_come_in", "resolved", "localized",
        ("chest_pain_or_possible_arrhythmia",), "moderate",
        "resolved_event_but_high_risk_history",
        ("Two weeks ago I had a short chest tightness while shoveling snow. Nothing since. Should "
         "I come in for a check-up or a stress test at some point?",
         "Last month I had a few minutes of chest pressure on a hike; it went away and has not "
         "come back. Should I schedule a visit to get it looked at?"),
        rel_med=fs("statin_or_myopathy_risk", "beta_blocker_or_rate_control"),
    ),
    Scenario(
        "home_bp_high", R, "general_question_or_reassurance", "stable", "not_specified",
        (), "low", "none",
        ("My home blood pressure readings have been around 150/95 for two weeks. I feel fine. "
         "Should we adjust my medicines at my next visit?",
         "BP at home stays in the high 140s over 90s, no symptoms at all. Do I need a medication "
         "change or a visit?"),
        rel_med=fs("ace_arb_or_potassium_affecting", "diuretic_or_electrolyte_affecting",
                   "beta_blocker_or_rate_control"),
    ),
    Scenario(
        "labs_before_refill", R, "general_question_or_reassurance", "stable", "not_specified",
        (), "low", "none",
        ("The pharmacy says I need an A1c and kidney labs before my next refill. Can you put in "
         "the lab order?",
         "My refill is due next month and I think I need blood work first. Could you order the "
         "labs?"),
        rel_med=fs("glp1_or_metabolic_medication", "ace_arb_or_potassium_affecting"),
    ),
    Scenario(
        "knee_pain_months", R, "asks_whether_to_come_in", "worsening", "localized",
        (), "low", "none",
        ("My right knee pain has been slowly getting worse over the past few months and stairs "
         "are harder. Can I get an appointment to look at it?",
         "For months my knee aches more and more, mostly on stairs and after walking. Should I "
         "book a visit?"),
        mobility=1,
    ),
    Scenario(
        "statin_muscle_aches", R, "general_question_or_reassurance", "stable",
        "bilateral_or_symmetric",
        (), "moderate", "none",
        ("Since I started the cholesterol pill my thighs on both sides ache, mild but steady for "
         "three weeks. Should I stop it or get a blood test?",
         "I have had achy muscles in both legs and shoulders since the statin was started, not "
         "worse, just there. Do I need labs?"),
        msg_med=fs("statin_or_myopathy_risk"),
    ),
    Scenario(
        "pre_procedure_blood_thinner", R, "pre_event_guidance", "not_specified",
        "not_specified",
        (), "low", "none",
        ("I have a colonoscopy next Tuesday. When should I stop my blood thinner, and what "
         "about my other medicines?",
         "My dental extraction is in ten days. Do I need to hold any of my medications before "
         "it, especially the blood thinner?"),
        rel_vasc=fs("anticoagulant_use"),
        rel_med=fs("anticoagulant_or_bleeding_risk", "glp1_or_metabolic_medication"),
    ),
    Scenario(
        "lingering_cough", R, "asks_whether_to_come_in", "improving", "not_specified",
        (), "moderate", "none",
        ("My cough has lasted three weeks since a cold. It is slowly getting better and I have "
         "no fever. Should I come in for a chest x-ray?",
         "Still coughing three weeks after a chest cold, a bit less each week, no fever. Do I "
         "need to be checked?"),
        msg_inf=fs("recent_respiratory_infection"),
        rel_inf=fs("immunosuppressive_medication", "chronic_steroid_use"),
        rel_med=fs("ace_arb_or_potassium_affecting"),
    ),
    # ---------------------------------------------------------------- asynchronous advice (1)
    Scenario(
        "itchy_patch", A, "general_question_or_reassurance", "stable", "localized",
        (), "low", "none",
        ("I have had an itchy dry patch on my forearm for a week. It is not spreading. "
         "Hydrocortisone helps a little. Anything else I can try?",
         "Small itchy rash on my wrist for about a week, same size, no pain. What cream should "
         "I use?"),
    ),
    Scenario(
        "sleep_aid_question", A, "general_question_or_reassurance", "stable", "not_specified",
        (), "low", "none",
        ("I have trouble falling asleep for a few weeks. Is it safe to take melatonin with my "
         "current medicines?",
         "Can I use an over-the-counter sleep aid with my medications? Sleep has been poor "
         "lately but otherwise I am fine."),
        rel_med=fs("sedating_or_fall_risk_medication", "polypharmacy"),
    ),
    Scenario(
        "travel_vaccines", A, "pre_event_guidance", "not_specified", "not_specified",
        (), "low", "none",
        ("I am traveling to Peru in two months. Which vaccines or medicines do I need before "
         "the trip?",
         "We are going to Kenya in the spring. What shots should I get before we go?"),
        rel_inf=fs("immunosuppressive_medication", "chronic_steroid_use"),
    ),
    Scenario(
        "urgent_runny_nose", A, "same_day_call_or_reply", "not_specified", "not_specified",
        (), "low", "urgent_wording_low_acuity_content",
        ("URGENT!!! Please call me ASAP. I have a runny nose and I keep sneezing since "
         "yesterday. No fever. A coworker had covid.",
         "Need a call back IMMEDIATELY - stuffy nose and scratchy throat since last night, no "
         "fever, my roommate has a cold."),
        msg_inf=fs("contagion_or_household_exposure_concern"),
    ),
    Scenario(
        "diet_cholesterol", A, "general_question_or_reassurance", "not_specified",
        "not_specified",
        (), "low", "none",
        ("What diet changes would help my cholesterol? Any handouts you recommend?",
         "Could you send me some tips on eating to lower cholesterol?"),
    ),
    # ---------------------------------------------------------------- FYI (0)
    Scenario(
        "thank_you_better", N, "informational_fyi", "improving", "not_specified",
        (), "low", "none",
        ("Thank you for seeing me last week. The antibiotics worked and I feel much better.",
         "Just wanted to say thanks, the new inhaler routine is working and I am doing better."),
    ),
    Scenario(
        "bp_log_upload", N, "informational_fyi", "stable", "not_specified",
        (), "low", "none",
        ("Uploading my blood pressure log as you asked. All readings were normal this month.",
         "Here is my glucose log for the last month as requested. Numbers look steady."),
    ),
    Scenario(
        "portal_test", N, "no_clear_request", "not_specified", "not_specified",
        (), "low", "none",
        ("Just testing that the portal works after I changed my email address.",
         "Hello, I updated my pharmacy in the app. Nothing else."),
    ),
)  # fmt: skip


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
    from feature_extraction.spec import table9_spec

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
