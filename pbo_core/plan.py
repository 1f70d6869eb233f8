"""The analysis plan: one set of choices per study, read by every page, command and report.

An :class:`AnalysisPlan` fixes what an analyst would otherwise decide again on every page:

* the **split** of the held-out evaluation (``"auto"``: the data's shape decides,
  :func:`pbo_core.splits.auto_kind`), its seed and folds, and the **evaluation sample**
  (``respondents``: the first N respondents, ``None``: all; a cost bound that is stated
  wherever a figure is shown);
* the **baseline**, the accuracy reference (any fitted registry model, the conditional
  logit ``mnl`` by default): every paired difference of held-out accuracy is against it;
* the **estimates** model (``mnl`` by default: a model with ``coef_table()`` and
  ``fit_statistics()``): the coefficient table, fit statistics and trade-offs every
  page, command and the report show, and its **penalty** (``"none"``: maximum
  likelihood, the default; ``"cv"`` or a ridge strength when asked);
* the models of the sensitivity analysis with the size of its sample;
* the **attribute roles**: the money attribute and the travel-time attribute, each with
  its unit (:class:`Role`). They are chosen by a loader that knows the data, at import or
  in the plan; never guessed from a unit alone. ``None`` is a valid answer and then no
  trade-off that needs it is shown (no value of time without a named time attribute);
* the **alternatives**: the attribute that says which alternative an item is, and the
  reference level whose constant is 0 (alternative-specific constants of the
  conditional logit);
* the **case-specific variables**: respondent features entering every non-reference
  alternative's utility.

:func:`plan_of` returns a study's plan: the one saved with it (``study.plan``) or the
default (:func:`default_plan`), whose every choice carries its reason in ``notes``. The
plan travels with results (:meth:`AnalysisPlan.to_dict` in every JSON output) and pages
state it in one line (:meth:`AnalysisPlan.line`). :func:`check_plan` names what in a plan
does not fit its study.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pbo_core.data import Schema, Study
from pbo_core.units import money_candidate

__all__ = [
    "MAX_CASE_SPECIFIC_LEVELS",
    "MAX_EVALUATION_RESPONDENTS",
    "TEST_TASKS",
    "AnalysisPlan",
    "Role",
    "check_plan",
    "default_plan",
    "penalty_alpha",
    "plan_of",
    "plan_with",
]

#: Respondent features with more levels than this are left out of the default
#: case-specific variables (e.g. 26 cantons: 25 constants per alternative); the plan
#: names them, and an analyst may add them.
MAX_CASE_SPECIFIC_LEVELS = 12

#: The default evaluation sample's cost bound: a study with more respondents is evaluated
#: on its first this many (stated with every figure: "the first 2,000 of 4,654").
MAX_EVALUATION_RESPONDENTS = 2000
#: Choice tasks of every respondent held out by a task split (respondents with fewer
#: train only).
TEST_TASKS = 2


@dataclass(frozen=True)
class Role:
    """An attribute in a role (money or time), with its unit and how it was chosen."""

    attribute: str
    unit: str = ""
    how: str = "chosen in the plan"

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"attribute": self.attribute, "unit": self.unit, "how": self.how}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Role | None:
        """Inverse of :meth:`to_dict` (``None`` stays ``None``)."""
        if not d:
            return None
        return cls(str(d["attribute"]), str(d.get("unit", "")), str(d.get("how", "")))


@dataclass(frozen=True)
class AnalysisPlan:
    """One study's analysis choices (see the module doc).

    Parameters
    ----------
    split
        Split kind of the held-out evaluation (``"auto"`` or a kind of
        :func:`pbo_core.splits.make_split`).
    seed
        Seed of the split and of every bootstrap.
    test_tasks
        A task split's held-out tasks per respondent.
    respondents
        Evaluation sample: the first N respondents (``None``: all).
    baseline
        The accuracy reference: the registry model every paired difference is against.
    estimates
        The registry model whose estimates (coefficients, fit statistics, trade-offs) are
        shown: one with ``coef_table()`` and ``fit_statistics()``.
    penalty
        The conditional logit's ridge: ``"none"`` (maximum likelihood; a penalty only
        when it is not identified, and then said), ``"cv"`` (strength by inner CV) or a
        strength (a number as text).
    sensitivity_models
        Models of the leave-one-out sensitivity (``()``: the registry's sensitivity role).
    sensitivity_respondents
        Respondents of the sensitivity sample (the first N of the evaluation sample;
        ``None``: the evaluation sample, so its all-attributes row is the accuracy figure).
    money, time
        The money and the travel-time attribute (``None``: none).
    alternative
        Categorical attribute naming the alternative (``None``: unlabelled alternatives).
    reference
        Level of ``alternative`` whose constant is 0 (``None``: its first level).
    case_specific
        Respondent features entering the non-reference alternatives' utilities.
    notes
        How each default was chosen, in words.
    """

    split: str = "auto"
    seed: int = 0
    test_tasks: int = TEST_TASKS
    respondents: int | None = None
    baseline: str = "mnl"
    estimates: str = "mnl"
    penalty: str = "none"
    sensitivity_models: tuple[str, ...] = ()
    sensitivity_respondents: int | None = None
    money: Role | None = None
    time: Role | None = None
    alternative: str | None = None
    reference: str | None = None
    case_specific: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (every output that shows a figure carries it)."""
        return {
            "split": self.split,
            "seed": self.seed,
            "test_tasks": self.test_tasks,
            "respondents": self.respondents,
            "baseline": self.baseline,
            "estimates": self.estimates,
            "penalty": self.penalty,
            "sensitivity_models": list(self.sensitivity_models),
            "sensitivity_respondents": self.sensitivity_respondents,
            "money": self.money.to_dict() if self.money else None,
            "time": self.time.to_dict() if self.time else None,
            "alternative": self.alternative,
            "reference": self.reference,
            "case_specific": list(self.case_specific),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AnalysisPlan:
        """Inverse of :meth:`to_dict`."""
        resp = d.get("respondents")
        return cls(
            split=str(d.get("split", "auto")),
            seed=int(d.get("seed", 0)),
            test_tasks=int(d.get("test_tasks", TEST_TASKS)),
            respondents=None if resp is None else int(resp),
            baseline=str(d.get("baseline", "mnl")),
            estimates=str(d.get("estimates", "mnl")),
            penalty=str(d.get("penalty", "none")),
            sensitivity_models=tuple(d.get("sensitivity_models") or ()),
            sensitivity_respondents=(
                None
                if d.get("sensitivity_respondents") is None
                else int(d["sensitivity_respondents"])
            ),
            money=Role.from_dict(d.get("money")),
            time=Role.from_dict(d.get("time")),
            alternative=d.get("alternative"),
            reference=d.get("reference"),
            case_specific=tuple(d.get("case_specific") or ()),
            notes=tuple(d.get("notes") or ()),
        )

    def with_roles(self, *, money: Any = ..., time: Any = ...) -> AnalysisPlan:
        """A copy with the money and/or time role replaced (an attribute name, ``None`` or
        ``""`` for none, or a :class:`Role`)."""
        out = self
        for key, value in (("money", money), ("time", time)):
            if value is ...:
                continue
            role = value if isinstance(value, Role) or value is None else None
            if isinstance(value, str) and value:
                role = Role(value, how="chosen by the analyst")
            out = replace(out, **{key: role})
        return out

    # ------------------------------------------------------------------ words
    def line(self) -> str:
        """The plan in one line, as pages state it."""
        sample = (
            "all respondents"
            if self.respondents is None
            else (f"the first {self.respondents:,} respondents")
        )

        def role(r: Role | None) -> str:
            return "none" if r is None else r.attribute + (f" ({r.unit})" if r.unit else "")

        money, time = role(self.money), role(self.time)
        alts = (
            f"alternatives by {self.alternative}"
            + (f" (reference {self.reference})" if self.reference else "")
            if self.alternative
            else "unlabelled alternatives"
        )
        cs = ", ".join(self.case_specific) if self.case_specific else "none"
        return (
            f"Plan: split {self.split}, seed {self.seed}, {sample}; baseline {self.baseline}; "
            f"estimates {self.estimates} (penalty asked: {self.penalty}); money {money}; "
            f"time {time}; {alts}; "
            f"respondent features in the conditional logit: {cs}."
        )

    def model_params(self, name: str, study: Study, schema: Schema | None = None) -> dict[str, Any]:
        """Parameters the plan gives registry model ``name`` on ``study`` (the conditional
        logit's alternatives, reference, case-specific variables and penalty). ``schema``:
        the attributes the model sees (an ablation without the alternative attribute fits
        unlabelled alternatives)."""
        if name != "mnl":
            return {}
        names = (schema or study.schema).names
        alt = self.alternative if self.alternative in names else None
        cs = self.case_specific if alt is not None and study.user_schema is not None else ()
        return {
            "alternative": alt,
            "reference": self.reference if alt is not None else None,
            "case_specific": tuple(cs),
            "user_schema": study.user_schema if cs else None,
            "alpha": penalty_alpha(self.penalty),
        }


def penalty_alpha(penalty: str) -> float | str:
    """The conditional logit's ``alpha`` of a plan's ``penalty``: ``"none"`` -> ``0.0``
    (maximum likelihood), ``"cv"`` -> ``"cv"``, a number -> that strength.

    Raises
    ------
    ValueError
        If ``penalty`` is none of these (or a negative number).
    """
    text = str(penalty).strip().lower()
    if text in ("none", "", "0", "0.0", "ml", "mle"):
        return 0.0
    if text == "cv":
        return "cv"
    try:
        value = float(text)
    except ValueError:
        raise ValueError(
            f"penalty {penalty!r} is not 'none', 'cv' or a ridge strength (a number)"
        ) from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"penalty must be a strength >= 0, got {penalty!r}")
    return value


def _unit(study: Study, name: str) -> str:
    return study.schema[name].unit if name in study.schema.names else ""


def default_plan(study: Study) -> AnalysisPlan:
    """The plan of a study whose loader saved none: every choice with its reason in
    ``notes``. Every loader and the importer save a plan (:func:`plan_with`); this default
    serves a study built in code.

    * money: the attribute the one money rule proposes
      (:func:`pbo_core.units.money_candidate`: a currency unit, else a price/cost name),
      said as proposed; else none;
    * time: none (a travel time is never guessed: an acceleration in seconds is not one);
    * alternatives: unlabelled (no constants);
    * case-specific variables: none without labelled alternatives.
    """
    notes: list[str] = []
    money: Role | None = None
    name, how = money_candidate(study.schema.features)
    if name:
        money = Role(name, _unit(study, name), f"proposed {how}; confirm in the plan")
    else:
        notes.append("money: none named; name the money attribute in the plan")
    notes.append("time: none named, so no value of time; name the travel-time attribute")
    plan = _case_specific(study, AnalysisPlan(money=money))
    plan = _sample(study, plan)
    return replace(plan, notes=(*notes, *plan.notes))


def plan_with(
    study: Study,
    *,
    money: str | Role | None = None,
    time: str | Role | None = None,
    alternative: str | None = None,
    reference: str | None = None,
    how: str = "set by the study's loader",
) -> AnalysisPlan:
    """The plan a loader that knows its data (or the importer) saves with a study: the
    named roles (a name, taking the attribute's unit from the schema, or a
    :class:`Role`; ``None``: none) and alternatives, the default case-specific
    variables and evaluation sample. Checked against the study."""

    def role(r: str | Role | None) -> Role | None:
        if r is None or isinstance(r, Role):
            return r
        return Role(r, _unit(study, r), how) if r else None

    plan = AnalysisPlan(
        money=role(money), time=role(time), alternative=alternative, reference=reference
    )
    plan = _sample(study, _case_specific(study, plan))
    problems = check_plan(study, plan)
    if problems:
        raise ValueError(f"{study.key}: " + "; ".join(problems))
    return plan


def _sample(study: Study, plan: AnalysisPlan) -> AnalysisPlan:
    """``plan`` with the default evaluation sample: every respondent, or the first
    :data:`MAX_EVALUATION_RESPONDENTS` of a larger study (a cost bound, stated)."""
    n = 0 if study.data.respondent is None else len(study.respondents())
    if n <= MAX_EVALUATION_RESPONDENTS:
        return plan
    note = (
        f"evaluation sample: the first {MAX_EVALUATION_RESPONDENTS:,} of {n:,} respondents "
        "(a cost bound; set respondents in the plan for all)"
    )
    return replace(plan, respondents=MAX_EVALUATION_RESPONDENTS, notes=(*plan.notes, note))


def _case_specific(study: Study, plan: AnalysisPlan) -> AnalysisPlan:
    """``plan`` with the default case-specific variables (and a note on what was left out)."""
    if study.user_schema is None or study.users is None:
        return replace(plan, case_specific=(), notes=("no respondent features recorded",))
    if plan.alternative is None:
        return replace(
            plan,
            case_specific=(),
            notes=("respondent features cannot enter unlabelled alternatives' utilities",),
        )
    keep, wide = [], []
    # a feature read from an availability column (SwissMetro's car_available from CAR_AV)
    # says which alternatives a respondent could choose: in an alternative's utility it
    # repeats that alternative's constant among the situations that offer it
    availability = {
        c.attribute or c.column for c in getattr(study, "columns", ()) if c.role == "availability"
    }
    avail = []
    for f in study.user_schema.features:
        if f.name in availability:
            avail.append(f.name)
        elif f.kind == "categorical" and len(f.levels) > MAX_CASE_SPECIFIC_LEVELS:
            wide.append(f"{f.name} ({len(f.levels)} levels)")
        else:
            keep.append(f.name)
    notes: tuple[str, ...] = ()
    if wide:
        notes += (
            f"left out of the baseline's respondent features by default: {', '.join(wide)}; "
            "add them in the plan",
        )
    if avail:
        notes += (
            f"left out of the baseline's respondent features: {', '.join(avail)} (read from "
            "an availability column: it repeats an alternative's constant)",
        )
    return replace(plan, case_specific=tuple(keep), notes=notes)


def plan_of(study: Study) -> AnalysisPlan:
    """The study's plan: the one saved with it, else :func:`default_plan`."""
    plan = getattr(study, "plan", None)
    return plan if plan is not None else default_plan(study)


def check_plan(study: Study, plan: AnalysisPlan) -> list[str]:
    """What in ``plan`` does not fit ``study``, one sentence each (empty: it fits)."""
    out: list[str] = []
    names = study.schema.names
    for label, role in (("money", plan.money), ("time", plan.time)):
        if role is None:
            continue
        if role.attribute not in names:
            out.append(f"the {label} attribute {role.attribute!r} is not an attribute ({names})")
        elif study.schema[role.attribute].kind != "numeric":
            out.append(f"the {label} attribute {role.attribute!r} is not numeric")
    if plan.money and plan.time and plan.money.attribute == plan.time.attribute:
        out.append(f"{plan.money.attribute!r} cannot be both the money and the time attribute")
    if plan.alternative is not None:
        if plan.alternative not in names:
            out.append(f"the alternative attribute {plan.alternative!r} is not an attribute")
        else:
            f = study.schema[plan.alternative]
            if f.kind not in ("categorical", "binary"):
                out.append(f"the alternative attribute {plan.alternative!r} is not categorical")
            elif plan.reference is not None and plan.reference not in (f.levels or ("0", "1")):
                out.append(f"the reference {plan.reference!r} is not a level of {f.name!r}")
    users = study.user_schema.names if study.user_schema is not None else []
    bad = [c for c in plan.case_specific if c not in users]
    if bad:
        out.append(f"case-specific variables {bad} are not respondent features ({users})")
    if plan.case_specific and plan.alternative is None:
        out.append("case-specific variables need labelled alternatives (name the attribute)")
    return out
