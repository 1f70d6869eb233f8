"""LLM-assisted feature proposal (DT-PBO App. G.2).

One proposal round:

1. Fit the DT surrogate (:class:`pbo_core.models.dt.DTSurrogate`) on the training pairs with
   the current features.
2. Score the current features by cross-validation on the training pairs (pairwise
   accuracy; by default folds of held-out messages, see ``FeatureProposer``).
3. Pick the training pairs the model explains worst (:func:`hard_pairs`):
   (i) both messages in the same leaf, (ii) equal expected utility but different leaves,
   (iii) the preferred message in a leaf of lower utility.
4. For each picked pair ask the LLM why the preferred message was judged more urgent
   (:func:`reasoning_messages`, free text).
5. Ask the LLM to propose ONE new feature from those reasons, as a spec entry
   (:func:`proposal_messages`, JSON validated by :func:`parse_proposal`).
6. Extract the new feature for every message (:mod:`feature_extraction.extract`).
7. Score again with the new feature on the same folds; keep it only if the validation
   accuracy improves by more than ``min_gain``, otherwise prune it.

Every step is recorded in a :class:`ProposalRecord` (JSON-serialisable: pairs, reasons,
the proposal, extraction failures, scores, decision) so an analyst can review the
proposals and accept or reject them (:func:`apply_decisions`). The LLM only reads and
proposes; the urgency model stays the tree.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from feature_extraction.cache import ExtractionCache, completion_key
from feature_extraction.client import LLMClient, LLMConfig, LLMRequestError
from feature_extraction.extract import Extractor
from feature_extraction.spec import (
    SPEC_TYPES,
    AnswerValidationError,
    FeatureSpec,
    Spec,
    SpecError,
    feedback_message,
    parse_json_content,
)
from pbo_core.data import PreferenceData, Schema
from pbo_core.metrics import accuracy
from pbo_core.models.dt import DTSurrogate

log = logging.getLogger(__name__)

#: Version of the reasoning and proposal prompts (part of the completion cache keys).
PROPOSE_PROMPT_VERSION = "propose-v1"

HardCategory = Literal["same_leaf", "equal_utility", "preferred_lower"]
HARD_CATEGORIES: tuple[str, ...] = ("same_leaf", "equal_utility", "preferred_lower")


# ---------------------------------------------------------------------- scoring
def hard_pairs(model: Any, data: PreferenceData, *, tol: float = 1e-9) -> pd.DataFrame:
    """The pairs of ``data`` the fitted DT explains worst.

    Parameters
    ----------
    model
        A fitted :class:`pbo_core.models.dt.DTSurrogate` (``apply``/``predict``).
    data
        Items and pairs (the model's training data or any other).
    tol
        Utilities closer than this count as equal.

    Returns
    -------
    DataFrame
        One row per hard pair: ``pair`` (row in ``data.pairs``), ``winner``, ``loser``
        (item indices), ``category`` (``same_leaf``, ``equal_utility``,
        ``preferred_lower``), ``leaf_winner``, ``leaf_loser``, ``u_winner``, ``u_loser``.
        Pairs the model orders correctly are not listed.
    """
    leaf = np.asarray(model.apply(data.X))
    u = np.asarray(model.predict(data.X), dtype=float)
    w, lo = data.pairs[:, 0], data.pairs[:, 1]
    same = leaf[w] == leaf[lo]
    equal = ~same & (np.abs(u[w] - u[lo]) <= tol)
    lower = ~same & ~equal & (u[w] < u[lo])
    cat = np.full(len(w), "", dtype=object)
    cat[same], cat[equal], cat[lower] = "same_leaf", "equal_utility", "preferred_lower"
    idx = np.flatnonzero(cat != "")
    return pd.DataFrame(
        {
            "pair": idx,
            "winner": w[idx],
            "loser": lo[idx],
            "category": cat[idx].astype(str),
            "leaf_winner": leaf[w[idx]],
            "leaf_loser": leaf[lo[idx]],
            "u_winner": u[w[idx]],
            "u_loser": u[lo[idx]],
        }
    )


def select_hard_pairs(hard: pd.DataFrame, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Up to ``n`` hard pairs, spread over the three categories (round robin, random order
    within a category; ``preferred_lower`` first)."""
    order = ["preferred_lower", "equal_utility", "same_leaf"]
    pools = {
        c: list(rng.permutation(np.flatnonzero(hard["category"].to_numpy() == c))) for c in order
    }
    picked: list[int] = []
    while len(picked) < n and any(pools.values()):
        for c in order:
            if pools[c] and len(picked) < n:
                picked.append(int(pools[c].pop(0)))
    return hard.iloc[picked].reset_index(drop=True)


# ---------------------------------------------------------------------- prompts
_REASON_SYSTEM = """\
You help clinicians understand how they triage patient portal messages. Two messages \
(each with an EHR excerpt) were compared by a clinical expert, who judged Message A more \
urgent than Message B. Explain, in at most five short bullet points, which concrete \
differences in the messages and EHR most plausibly made Message A more urgent. Mention \
only facts that appear in the texts. Do not re-judge the comparison."""

_PROPOSE_SYSTEM = """\
You design features for an interpretable decision tree that ranks patient portal \
messages by urgency. An LLM will extract the feature from each message and its EHR \
excerpt separately, so the feature must be readable from one message alone.

The model already uses these features:
{existing}

Below are explanations of comparisons that the current model gets wrong or cannot \
separate. Propose ONE new feature, different from the existing ones, that would help \
separate such messages. Reply with one JSON object with the fields:
- name: lower-case snake_case, not one of the existing names
- type: one of categorical, ordinal, multi_hot, numeric
- values: the allowed values (lower-case snake_case; ordinal values ordered from lowest \
to highest); an empty list for numeric
- bounds: [low, high] for numeric, an empty list otherwise
- instruction: one or two sentences telling the extractor what to read off a message
- rationale: one sentence on why it separates the comparisons"""


def _fmt_features(values: dict[str, Any] | None) -> str:
    if not values:
        return "(no features)"
    parts = []
    for k, v in values.items():
        if isinstance(v, list | tuple):
            v = ", ".join(map(str, v)) or "none"
        parts.append(f"{k}={v}")
    return "; ".join(parts)


def reasoning_messages(
    text_preferred: str,
    text_other: str,
    *,
    features_preferred: dict[str, Any] | None = None,
    features_other: dict[str, Any] | None = None,
) -> list[dict[str, str]]:
    """Chat messages asking why the preferred message was judged more urgent (Fig. 18).

    The current feature values of both messages are shown so the explanation can point
    at what the features miss.
    """
    user = (
        f"Message A (judged MORE urgent):\n<<<\n{text_preferred.strip()}\n>>>\n"
        f"Current features of A: {_fmt_features(features_preferred)}\n\n"
        f"Message B (judged less urgent):\n<<<\n{text_other.strip()}\n>>>\n"
        f"Current features of B: {_fmt_features(features_other)}\n\n"
        "Why was Message A judged more urgent?"
    )
    return [{"role": "system", "content": _REASON_SYSTEM}, {"role": "user", "content": user}]


def proposal_messages(spec: Spec, reasons: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages asking for one new feature from the reasoning traces (Fig. 19)."""
    existing = "\n".join(f"- {f.name} ({f.type}): {f.instruction.strip()}" for f in spec.features)
    body = "\n\n".join(f"Comparison {i + 1}:\n{r.strip()}" for i, r in enumerate(reasons))
    return [
        {"role": "system", "content": _PROPOSE_SYSTEM.format(existing=existing)},
        {"role": "user", "content": body + "\n\nPropose one new feature as a JSON object."},
    ]


#: JSON schema of a proposal answer.
PROPOSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "type": {"type": "string", "enum": list(SPEC_TYPES)},
        "values": {"type": "array", "items": {"type": "string"}},
        "bounds": {"type": "array", "items": {"type": "number"}},
        "instruction": {"type": "string"},
        "rationale": {"type": "string"},
    },
    "required": ["name", "type", "values", "bounds", "instruction", "rationale"],
    "additionalProperties": False,
}

_VALUE_RE = re.compile(r"^[a-z0-9][a-z0-9_]*$")


def parse_proposal(
    content: str | None, spec: Spec, *, max_values: int = 15
) -> tuple[FeatureSpec, str]:
    """Parse and validate a proposal answer; return the feature and its rationale.

    Raises
    ------
    AnswerValidationError
        Listing every problem (bad JSON, missing fields, taken or malformed name, unknown
        type, too few/many or malformed values, bad bounds).
    """
    obj = parse_json_content(content)
    if not isinstance(obj, dict):
        raise AnswerValidationError(["the answer must be a JSON object"])
    errors: list[str] = []
    missing = [k for k in PROPOSAL_SCHEMA["required"] if k not in obj]
    if missing:
        errors.append(f"missing field(s) {missing}")
    extra = [k for k in obj if k not in PROPOSAL_SCHEMA["properties"]]
    if extra:
        errors.append(f"unknown field(s) {extra}")
    if errors:
        raise AnswerValidationError(errors)
    name, typ = obj["name"], obj["type"]
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]{2,59}", name):
        errors.append(f"name {name!r} must be lower-case snake_case (3-60 characters)")
    elif name in spec:
        errors.append(f"name {name!r} is already a feature; propose a different feature")
    if typ not in SPEC_TYPES:
        errors.append(f"type {typ!r} is not one of {list(SPEC_TYPES)}")
    values = obj["values"]
    bounds = obj["bounds"]
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        errors.append("values must be a list of strings")
        values = []
    if not isinstance(bounds, list) or not all(
        isinstance(b, int | float) and not isinstance(b, bool) for b in bounds
    ):
        errors.append("bounds must be a list of numbers")
        bounds = []
    if typ == "numeric":
        if values:
            errors.append("a numeric feature takes no values (use an empty list)")
        if len(bounds) != 2 or (len(bounds) == 2 and not bounds[0] < bounds[1]):
            errors.append("a numeric feature needs bounds [low, high] with low < high")
    elif typ in SPEC_TYPES:
        if bounds:
            errors.append(f"a {typ} feature takes no bounds (use an empty list)")
        lo = 1 if typ == "multi_hot" else 2
        if not lo <= len(values) <= max_values:
            errors.append(f"a {typ} feature needs {lo}-{max_values} values, got {len(values)}")
        bad = [v for v in values if not _VALUE_RE.match(v)]
        if bad:
            errors.append(f"values must be lower-case snake_case, got {bad}")
        if len(set(values)) != len(values):
            errors.append("values must be unique")
    instruction = obj["instruction"]
    if not isinstance(instruction, str) or len(instruction.strip()) < 10:
        errors.append("instruction must be a sentence telling the extractor what to read")
    if errors:
        raise AnswerValidationError(errors)
    try:
        feature = FeatureSpec(
            name=name,
            type=typ,
            instruction=instruction.strip(),
            values=tuple(values),
            bounds=(float(bounds[0]), float(bounds[1])) if typ == "numeric" else None,
        )
    except SpecError as e:
        raise AnswerValidationError([str(e)]) from None
    rationale = obj["rationale"] if isinstance(obj["rationale"], str) else ""
    return feature, rationale


# ---------------------------------------------------------------------- records
@dataclass
class ProposalRecord:
    """Everything one proposal round did, for review.

    Attributes
    ----------
    round
        Round number.
    status
        ``"kept"`` (validation accuracy improved), ``"pruned"`` (it did not) or
        ``"failed"`` (a step failed; ``error`` says which and why).
    decision
        Automatic decision: ``"keep"`` or ``"prune"`` (``None`` when failed).
    analyst_decision
        ``None`` until an analyst sets ``"accept"`` or ``"reject"``.
    proposal
        The proposed spec entry (``FeatureSpec.to_dict()``) plus ``rationale``.
    hard_pairs
        The comparisons shown to the LLM (message ids, category, leaves, utilities).
    reasons
        One entry per comparison: message ids and the LLM's explanation (or error).
    validation
        ``"items"`` (folds of held-out messages) or ``"pairs"`` (folds of pairs).
    baseline_val_accuracy, new_val_accuracy, gain
        Validation pairwise accuracy (mean over folds) without and with the new feature,
        on the same pairs (pairs of messages whose new feature could not be extracted
        are left out of both).
    fold_accuracies
        ``{"baseline": [...], "new": [...]}`` per fold.
    extraction
        Counts of the new feature's extraction and the failures with reasons.
    """

    round: int
    status: str = "failed"
    decision: str | None = None
    analyst_decision: str | None = None
    error: str | None = None
    spec_name: str = ""
    spec_hash: str = ""
    model: str = ""
    prompt_version: str = PROPOSE_PROMPT_VERSION
    seed: int = 0
    validation: str = "items"
    n_folds: int = 0
    n_train_pairs: int = 0
    baseline_val_accuracy: float | None = None
    new_val_accuracy: float | None = None
    gain: float | None = None
    fold_accuracies: dict[str, list[float]] = field(default_factory=dict)
    hard_pair_counts: dict[str, int] = field(default_factory=dict)
    hard_pairs: list[dict[str, Any]] = field(default_factory=list)
    reasons: list[dict[str, Any]] = field(default_factory=list)
    proposal: dict[str, Any] | None = None
    proposal_attempts: list[dict[str, Any]] = field(default_factory=list)
    extraction: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready representation."""
        return _jsonable(asdict(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProposalRecord:
        """Inverse of :meth:`to_dict`."""
        return cls(**d)

    def feature(self) -> FeatureSpec | None:
        """The proposed feature (``None`` if there is none)."""
        if not self.proposal:
            return None
        d = {k: v for k, v in self.proposal.items() if k != "rationale"}
        return FeatureSpec.from_dict(d)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and x != x:
        return None
    return x


def save_records(records: Sequence[ProposalRecord], path: str | Path) -> Path:
    """Write proposal records as a JSON list."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps([r.to_dict() for r in records], indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return path


def load_records(path: str | Path) -> list[ProposalRecord]:
    """Read records written by :func:`save_records`."""
    return [ProposalRecord.from_dict(d) for d in json.loads(Path(path).read_text("utf-8"))]


def apply_decisions(
    spec: Spec, records: Sequence[ProposalRecord], *, default_to_automatic: bool = False
) -> Spec:
    """The spec plus every proposed feature the analyst accepted.

    ``analyst_decision == "accept"`` adds the feature; ``"reject"`` skips it. With
    ``default_to_automatic`` an undecided record follows its automatic ``decision``.
    """
    out = spec
    for r in records:
        accept = r.analyst_decision == "accept" or (
            r.analyst_decision is None and default_to_automatic and r.decision == "keep"
        )
        feat = r.feature() if accept else None
        if feat is not None and feat.name not in out:
            out = out.with_feature(feat)
    return out


# ---------------------------------------------------------------------- the proposer
def _completion_key(model: str, kind: str, messages: list[dict[str, str]]) -> str:
    return completion_key(model, kind, PROPOSE_PROMPT_VERSION, messages)


def _preference_data(
    table: pd.DataFrame, spec: Spec, pairs: np.ndarray, ids: np.ndarray
) -> PreferenceData:
    schema: Schema = spec.to_schema()
    rows = table.set_index("message_id").loc[ids, spec.names].reset_index()
    return PreferenceData.from_frame(rows, pairs, schema, source="proposal")


class FeatureProposer:
    """Run proposal rounds (see the module docstring).

    Parameters
    ----------
    spec
        Current features.
    config
        LLM settings.
    cache
        Optional cache (reasoning and proposal answers, extractions, call statistics).
    n_pairs
        Hard comparisons explained per round.
    validation
        How the training pairs are split into fit and validation parts, ``n_folds``
        times: ``"items"`` (default) holds out a fold of messages and validates on the
        pairs among them, fitting on the pairs among the other messages (pairs across
        are unused); ``"pairs"`` holds out a fold of pairs. With ``"pairs"`` the held-out
        pairs compare messages the tree has already seen, so a tree that can tell all
        training messages apart scores well without the new feature; ``"items"``
        measures whether the feature generalises to unseen messages.
    n_folds
        Number of folds (the validation score is the mean over folds).
    min_gain
        Required improvement of validation accuracy to keep a feature.
    seed
        Seed of the split and the pair selection.
    surrogate
        Factory of the surrogate (default ``DTSurrogate()``).
    max_proposal_retries
        How often an invalid proposal is re-asked with the errors fed back.
    """

    def __init__(
        self,
        spec: Spec,
        config: LLMConfig,
        *,
        cache: ExtractionCache | None = None,
        n_pairs: int = 8,
        validation: Literal["items", "pairs"] = "items",
        n_folds: int = 3,
        min_gain: float = 0.0,
        seed: int = 0,
        surrogate: Callable[[], Any] | None = None,
        max_proposal_retries: int = 2,
    ) -> None:
        if validation not in ("items", "pairs"):
            raise ValueError(f"validation must be 'items' or 'pairs', got {validation!r}")
        if int(n_folds) < 2:
            raise ValueError("n_folds must be at least 2")
        self.spec = spec
        self.config = config
        self.cache = cache
        self.n_pairs = int(n_pairs)
        self.validation = validation
        self.n_folds = int(n_folds)
        self.min_gain = float(min_gain)
        self.seed = int(seed)
        if surrogate is None:
            surrogate = DTSurrogate
        self.surrogate = surrogate
        self.max_proposal_retries = int(max_proposal_retries)

    # .............................................................. LLM steps
    async def _free_text(self, client: LLMClient, kind: str, messages: list[dict[str, str]]) -> str:
        key = _completion_key(self.config.model, kind, messages)
        if self.cache is not None:
            hit = self.cache.get_completion(key)
            if hit is not None:
                return hit
        res = await client.chat(messages, kind=kind, max_tokens=512)
        content = (res.content or "").strip()
        if not content:
            raise LLMRequestError("empty answer", res.calls)
        if self.cache is not None:
            self.cache.put_completion(
                key, kind=kind, model=self.config.model, content=content, calls=res.calls
            )
        return content

    async def _proposal(
        self, client: LLMClient, spec: Spec, reasons: list[str], record: ProposalRecord
    ) -> tuple[FeatureSpec, str]:
        messages = proposal_messages(spec, reasons)
        key = _completion_key(self.config.model, "propose", messages)
        cached = self.cache.get_completion(key) if self.cache is not None else None
        if cached is not None:
            try:
                feat, why = parse_proposal(cached, spec)
                record.proposal_attempts.append({"content": cached, "cached": True, "error": None})
                return feat, why
            except AnswerValidationError:
                pass
        last: AnswerValidationError | None = None
        for _ in range(1 + self.max_proposal_retries):
            res = await client.chat(
                messages, json_schema=PROPOSAL_SCHEMA, name="feature_proposal", kind="propose"
            )
            try:
                feat, why = parse_proposal(res.content, spec)
            except AnswerValidationError as e:
                last = e
                record.proposal_attempts.append({"content": res.content, "error": str(e)})
                messages = [
                    *messages,
                    {"role": "assistant", "content": res.content or ""},
                    {"role": "user", "content": feedback_message(e.errors)},
                ]
                continue
            record.proposal_attempts.append({"content": res.content, "error": None})
            if self.cache is not None and res.content is not None:
                self.cache.put_completion(
                    key,
                    kind="propose",
                    model=self.config.model,
                    content=res.content,
                    calls=res.calls,
                )
            return feat, why
        assert last is not None
        raise last

    # .............................................................. validation
    def _cv(
        self,
        table: pd.DataFrame,
        spec: Spec,
        P: np.ndarray,
        ids: np.ndarray,
        item_fold: np.ndarray,
        pair_fold: np.ndarray,
    ) -> list[float]:
        """Validation accuracy of every fold (see ``validation``)."""
        data = _preference_data(table, spec, P, ids)
        scores: list[float] = []
        for k in range(self.n_folds):
            if self.validation == "items":
                inside = item_fold[P] == k
                val = np.flatnonzero(inside.all(axis=1))
                fit = np.flatnonzero(~inside.any(axis=1))
            else:
                val = np.flatnonzero(pair_fold == k)
                fit = np.flatnonzero(pair_fold != k)
            if not len(val) or not len(fit):
                continue
            model = self.surrogate().fit(data.select_pairs(fit))
            scores.append(accuracy(model, data.select_pairs(val)))
        if not scores:
            raise ValueError("no fold has both fit and validation pairs")
        return scores

    # .............................................................. one round
    async def propose_async(
        self,
        items: pd.DataFrame,
        features: pd.DataFrame,
        pairs: pd.DataFrame,
        *,
        round: int = 0,
        client: LLMClient | None = None,
    ) -> tuple[ProposalRecord, pd.DataFrame]:
        """Run one round.

        Parameters
        ----------
        items
            ``message_id`` and ``text`` of every message.
        features
            ``message_id`` and the current spec's columns (ground truth or extracted).
        pairs
            Training comparisons: columns ``winner`` and ``loser`` (message ids).
        round
            Round number for the record.
        client
            Optional client to reuse.

        Returns
        -------
        (ProposalRecord, DataFrame)
            The record, and ``features`` with the new column added when the feature was
            kept (unchanged otherwise).
        """
        spec = self.spec
        rng = np.random.default_rng([self.seed, round])
        rec = ProposalRecord(
            round=round,
            spec_name=spec.name,
            spec_hash=spec.spec_hash(),
            model=self.config.model,
            seed=self.seed,
        )
        t_all = time.perf_counter()
        texts = dict(zip(items["message_id"].astype(str), items["text"], strict=True))
        feats = features.copy()
        feats["message_id"] = feats["message_id"].astype(str)
        ids = np.array(sorted(set(pairs["winner"].astype(str)) | set(pairs["loser"].astype(str))))
        unknown = [m for m in ids if m not in texts or m not in set(feats["message_id"])]
        if unknown:
            raise ValueError(f"pairs name messages without text or features: {unknown[:5]}")
        pos = {m: i for i, m in enumerate(ids)}
        P = np.column_stack(
            [pairs["winner"].astype(str).map(pos), pairs["loser"].astype(str).map(pos)]
        ).astype(np.int64)
        item_fold = rng.permutation(len(ids)) % self.n_folds
        pair_fold = rng.permutation(len(P)) % self.n_folds
        rec.validation, rec.n_folds, rec.n_train_pairs = self.validation, self.n_folds, len(P)
        owned = client is None
        client = client or LLMClient(self.config)
        try:
            # 1-2: current model on all training pairs (for the hard pairs) + baseline score
            t0 = time.perf_counter()
            data = _preference_data(feats, spec, P, ids)
            model = self.surrogate().fit(data)
            # 3: hard pairs
            hard = hard_pairs(model, data)
            rec.hard_pair_counts = {c: int((hard["category"] == c).sum()) for c in HARD_CATEGORIES}
            chosen = select_hard_pairs(hard, self.n_pairs, rng)
            row_of = feats.set_index("message_id")
            rec.hard_pairs = [
                {
                    "winner": str(ids[r.winner]),
                    "loser": str(ids[r.loser]),
                    "category": r.category,
                    "leaf_winner": int(r.leaf_winner),
                    "leaf_loser": int(r.leaf_loser),
                    "u_winner": float(r.u_winner),
                    "u_loser": float(r.u_loser),
                }
                for r in chosen.itertuples()
            ]
            base_folds = self._cv(feats, spec, P, ids, item_fold, pair_fold)
            rec.baseline_val_accuracy = float(np.mean(base_folds))
            rec.fold_accuracies = {"baseline": base_folds}
            rec.seconds["baseline"] = time.perf_counter() - t0
            if not rec.hard_pairs:
                rec.error = "the current model explains every training pair; nothing to propose"
                return rec, features
            # 4: reasons
            t0 = time.perf_counter()

            async def _reason(hp: dict[str, Any]) -> dict[str, Any]:
                w, lo = hp["winner"], hp["loser"]
                msgs = reasoning_messages(
                    texts[w],
                    texts[lo],
                    features_preferred=_row_values(row_of, w, spec),
                    features_other=_row_values(row_of, lo, spec),
                )
                try:
                    text = await self._free_text(client, "reason", msgs)
                    return {"winner": w, "loser": lo, "reason": text, "error": None}
                except LLMRequestError as e:
                    return {"winner": w, "loser": lo, "reason": None, "error": e.reason}

            rec.reasons = list(await asyncio.gather(*(_reason(hp) for hp in rec.hard_pairs)))
            rec.seconds["reasoning"] = time.perf_counter() - t0
            good = [r["reason"] for r in rec.reasons if r["reason"]]
            if not good:
                rec.error = "no reasoning answer: " + "; ".join(
                    str(r["error"]) for r in rec.reasons
                )
                return rec, features
            # 5: proposal
            t0 = time.perf_counter()
            try:
                feat, why = await self._proposal(client, spec, good, rec)
            except AnswerValidationError as e:
                rec.error = f"no valid proposal: {e}"
                return rec, features
            except LLMRequestError as e:
                rec.error = f"proposal request failed: {e.reason}"
                return rec, features
            rec.proposal = {**feat.to_dict(), "rationale": why}
            rec.seconds["proposal"] = time.perf_counter() - t0
            # 6: extraction of the new feature
            t0 = time.perf_counter()
            one = Spec((feat,), name=f"{spec.name}+{feat.name}", context=spec.context)
            extractor = Extractor(one, self.config, cache=self.cache, client=client)
            result = await extractor.run([(m, texts[m]) for m in ids])
            counts = result.counts()
            rec.extraction = {
                **counts,
                "failures": result.failures().to_dict(orient="records"),
            }
            rec.seconds["extraction"] = time.perf_counter() - t0
            ok = {r.message_id: r.values[feat.name] for r in result.records if r.ok}
            if not ok:
                rec.error = "the new feature could not be extracted for any message"
                return rec, features
            # 7: validation with and without the feature on the same pairs
            t0 = time.perf_counter()
            keep = np.array([m in ok for m in ids])
            sub = np.flatnonzero(keep)
            remap = np.full(len(ids), -1, dtype=np.int64)
            remap[sub] = np.arange(len(sub))
            keep_pair = keep[P[:, 0]] & keep[P[:, 1]]
            P2 = remap[P[keep_pair]].reshape(-1, 2)
            new_table = feats.copy()
            new_table[feat.name] = new_table["message_id"].map(ok)
            spec2 = spec.with_feature(feat)
            args = (P2, ids[sub], item_fold[sub], pair_fold[keep_pair])
            try:
                base_folds = self._cv(feats, spec, *args)
                new_folds = self._cv(new_table, spec2, *args)
            except ValueError as e:
                rec.error = f"validation failed: {e}"
                return rec, features
            rec.baseline_val_accuracy = float(np.mean(base_folds))
            rec.new_val_accuracy = float(np.mean(new_folds))
            rec.fold_accuracies = {"baseline": base_folds, "new": new_folds}
            rec.gain = rec.new_val_accuracy - rec.baseline_val_accuracy
            rec.seconds["validation"] = time.perf_counter() - t0
            if rec.gain > self.min_gain:
                rec.status, rec.decision = "kept", "keep"
                return rec, new_table
            rec.status, rec.decision = "pruned", "prune"
            return rec, features
        finally:
            rec.seconds["total"] = time.perf_counter() - t_all
            if owned:
                await client.aclose()

    def propose(
        self, items: pd.DataFrame, features: pd.DataFrame, pairs: pd.DataFrame, *, round: int = 0
    ) -> tuple[ProposalRecord, pd.DataFrame]:
        """Synchronous :meth:`propose_async`."""
        return asyncio.run(self.propose_async(items, features, pairs, round=round))

    async def run_async(
        self,
        items: pd.DataFrame,
        features: pd.DataFrame,
        pairs: pd.DataFrame,
        *,
        rounds: int = 3,
        on_record: Callable[[ProposalRecord], None] | None = None,
    ) -> tuple[list[ProposalRecord], Spec, pd.DataFrame]:
        """Several rounds; a kept feature joins the spec used by the next round.

        Returns the records, the final spec and the final feature table.
        """
        records: list[ProposalRecord] = []
        spec0 = self.spec
        async with LLMClient(self.config) as client:
            try:
                for k in range(rounds):
                    rec, features = await self.propose_async(
                        items, features, pairs, round=k, client=client
                    )
                    records.append(rec)
                    if on_record is not None:
                        on_record(rec)
                    if rec.status == "kept":
                        feat = rec.feature()
                        assert feat is not None
                        self.spec = self.spec.with_feature(feat)
                final = self.spec
            finally:
                self.spec = spec0
        return records, final, features

    def run(
        self,
        items: pd.DataFrame,
        features: pd.DataFrame,
        pairs: pd.DataFrame,
        *,
        rounds: int = 3,
        on_record: Callable[[ProposalRecord], None] | None = None,
    ) -> tuple[list[ProposalRecord], Spec, pd.DataFrame]:
        """Synchronous :meth:`run_async`."""
        return asyncio.run(
            self.run_async(items, features, pairs, rounds=rounds, on_record=on_record)
        )


def _row_values(table: pd.DataFrame, message_id: str, spec: Spec) -> dict[str, Any]:
    row = table.loc[message_id]
    return {n: row[n] for n in spec.names}
