"""Feature proposal (App. G.2): hard comparisons, prompts, proposal validation, and full
rounds against the scripted server on the demo inbox (kept / pruned / failed)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from data_loaders.pmr import load_pmr_demo
from feature_extraction.cache import ExtractionCache
from feature_extraction.client import LLMConfig
from feature_extraction.propose import (
    FeatureProposer,
    ProposalRecord,
    apply_decisions,
    hard_pairs,
    load_records,
    parse_proposal,
    proposal_messages,
    reasoning_messages,
    save_records,
    select_hard_pairs,
)
from feature_extraction.spec import AnswerValidationError, table9_spec
from pbo_core.data import PreferenceData
from pbo_core.metrics import pairwise_accuracy


class FakeTree:
    """Stands in for a fitted DTSurrogate with known leaves and leaf utilities."""

    def __init__(self, leaf: list[int], leaf_mean: list[float]) -> None:
        self.leaf = np.array(leaf)
        self.leaf_mean = np.array(leaf_mean)

    def apply(self, X):
        return self.leaf[np.asarray(X)[:, 0].astype(int)]

    def predict(self, X):
        return self.leaf_mean[self.apply(X)]


def test_pairwise_accuracy_golden() -> None:
    u = np.array([3.0, 1.0, 1.0, 0.0])
    pairs = np.array([[0, 1], [1, 2], [3, 0], [2, 3]])
    # correct, tie, wrong, correct -> (2 + 0.5) / 4
    assert pairwise_accuracy(u, pairs) == pytest.approx(0.625)
    assert pairwise_accuracy(u, pairs, ties=0.0) == pytest.approx(0.5)
    assert np.isnan(pairwise_accuracy(u, np.zeros((0, 2))))


def test_hard_pairs_categories() -> None:
    # items 0..5 -> leaves 0,0,1,2,3,3 ; leaf utilities 0.5, 0.0, 0.0, 1.0
    model = FakeTree([0, 0, 1, 2, 3, 3], [0.5, 0.0, 0.0, 1.0])
    X = np.arange(6, dtype=float)[:, None]
    pairs = np.array(
        [
            [0, 1],  # same leaf
            [2, 3],  # different leaves, equal utility
            [1, 4],  # preferred in the lower leaf (0.5 < 1.0)
            [4, 0],  # explained correctly
        ]
    )
    hp = hard_pairs(model, PreferenceData(X=X, pairs=pairs))
    assert hp["category"].tolist() == ["same_leaf", "equal_utility", "preferred_lower"]
    assert hp["pair"].tolist() == [0, 1, 2]
    assert hp.loc[2, ["u_winner", "u_loser"]].tolist() == [0.5, 1.0]
    picked = select_hard_pairs(hp, 2, np.random.default_rng(0))
    assert picked["category"].tolist() == ["preferred_lower", "equal_utility"]
    assert len(select_hard_pairs(hp, 10, np.random.default_rng(0))) == 3


def test_prompts() -> None:
    msgs = reasoning_messages(
        "I cannot breathe",
        "thanks",
        features_preferred={"red_flag_syndrome": ["respiratory_distress_or_wheezing"]},
        features_other={"red_flag_syndrome": []},
    )
    user = msgs[1]["content"]
    assert "Message A (judged MORE urgent)" in user and "I cannot breathe" in user
    assert "red_flag_syndrome=respiratory_distress_or_wheezing" in user
    assert "red_flag_syndrome=none" in user
    spec = table9_spec()
    pm = proposal_messages(spec, ["A mentions X", "A mentions Y"])
    assert all(n in pm[0]["content"] for n in spec.names)
    assert "Comparison 2:\nA mentions Y" in pm[1]["content"]


def _proposal(**over) -> str:
    d = {
        "name": "needs_medication_today",
        "type": "categorical",
        "values": ["yes", "no"],
        "bounds": [],
        "instruction": "Does the patient run out of an essential medication today?",
        "rationale": "Several preferred messages were urgent refills.",
    }
    d.update(over)
    return json.dumps(d)


def test_parse_proposal_accepts_a_valid_entry() -> None:
    feat, why = parse_proposal(_proposal(), table9_spec())
    assert feat.name == "needs_medication_today" and feat.values == ("yes", "no")
    assert why.startswith("Several")
    num, _ = parse_proposal(
        _proposal(name="days_of_symptoms", type="numeric", values=[], bounds=[0, 365]),
        table9_spec(),
    )
    assert num.bounds == (0.0, 365.0)


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"name": "message_actionability"}, "already a feature"),
        ({"name": "Needs Med"}, "snake_case"),
        ({"type": "free_text"}, "not one of"),
        ({"values": ["yes"]}, "needs 2-15 values"),
        ({"values": ["Yes", "No"]}, "lower-case"),
        ({"values": ["yes", "yes"]}, "unique"),
        ({"bounds": [0, 1]}, "takes no bounds"),
        ({"type": "numeric", "values": [], "bounds": [5, 1]}, "low < high"),
        ({"instruction": "?"}, "instruction"),
    ],
)
def test_parse_proposal_rejects(over, message) -> None:
    with pytest.raises(AnswerValidationError, match=message):
        parse_proposal(_proposal(**over), table9_spec())


def test_parse_proposal_rejects_missing_fields_and_bad_json() -> None:
    with pytest.raises(AnswerValidationError, match="missing field"):
        parse_proposal('{"name": "x_y"}', table9_spec())
    with pytest.raises(AnswerValidationError, match="not valid JSON"):
        parse_proposal("a feature called urgency", table9_spec())


# ---------------------------------------------------------------------- full rounds
DEMO = load_pmr_demo()
TRUTH = DEMO.extras["truth"]
ACT_LEVELS = list(table9_spec()["message_actionability"].values)
NEW_LEVELS = ["nothing", "advice", "routine", "same_day", "emergency"]
SPEC10 = table9_spec().subset([n for n in table9_spec().names if n != "message_actionability"])


def _texts() -> pd.DataFrame:
    return DEMO.extras["texts"]


def _script_round(state, proposal: str, value_of) -> None:
    """Answer reasoning, proposal and extraction requests of a proposal round."""
    text_to_id = {
        t.strip(): m for m, t in zip(_texts()["message_id"], _texts()["text"], strict=True)
    }

    def fallback(body) -> str:
        system = body["messages"][0]["content"]
        user = body["messages"][1]["content"]
        if system.startswith("You help clinicians"):
            return "text:- Message A asks for help now; B is routine."
        if system.startswith("You design features"):
            return "json:" + proposal
        inner = user.split("<<<\n", 1)[1].rsplit("\n>>>", 1)[0].strip()
        mid = text_to_id[inner]
        return "json:" + json.dumps(value_of(mid))

    state.fallback = fallback


def _train_pairs() -> pd.DataFrame:
    p = DEMO.extras["pair_ids"]
    return p[p["split"] == "train"]


def _config(server) -> LLMConfig:
    return LLMConfig(base_url=server.base_url, model="scripted", backoff_base=0.01, timeout=10)


def test_round_keeps_an_informative_feature(llm_server, tmp_path) -> None:
    act = dict(zip(TRUTH["message_id"], TRUTH["message_actionability"], strict=True))
    prop = _proposal(
        name="clinician_action_needed",
        type="ordinal",
        values=NEW_LEVELS,
        instruction="How soon must a clinician act on this message?",
    )
    _script_round(
        llm_server.state,
        prop,
        lambda m: {"clinician_action_needed": NEW_LEVELS[ACT_LEVELS.index(act[m])]},
    )
    features = TRUTH[["message_id", *SPEC10.names]]
    with ExtractionCache(tmp_path / "c.sqlite") as cache:
        proposer = FeatureProposer(SPEC10, _config(llm_server), cache=cache, n_pairs=4, seed=1)
        rec, table = proposer.propose(_texts(), features, _train_pairs())
        stats = cache.stats().set_index("kind")
    assert rec.status == "kept" and rec.decision == "keep", rec.error
    assert rec.gain > 0
    assert rec.validation == "items" and len(rec.fold_accuracies["new"]) == 3
    assert rec.new_val_accuracy > rec.baseline_val_accuracy
    assert rec.n_train_pairs == len(_train_pairs())
    assert len(rec.hard_pairs) == 4 and len(rec.reasons) == 4
    assert all(r["reason"] for r in rec.reasons)
    assert sum(rec.hard_pair_counts.values()) >= 4
    assert rec.proposal["name"] == "clinician_action_needed"
    assert rec.extraction["ok"] == 30 and rec.extraction["failures"] == []
    assert "clinician_action_needed" in table.columns
    assert {"reason call", "propose call", "extract call"} <= set(stats.index)
    # The whole record is JSON: an analyst can review it, accept it, and apply it.
    again = ProposalRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert again == ProposalRecord.from_dict(rec.to_dict())
    again.analyst_decision = "accept"
    path = save_records([again], tmp_path / "proposals.json")
    spec11 = apply_decisions(SPEC10, load_records(path))
    assert spec11.names[-1] == "clinician_action_needed"
    assert spec11["clinician_action_needed"].type == "ordinal"
    again.analyst_decision = "reject"
    assert apply_decisions(SPEC10, [again]) == SPEC10
    again.analyst_decision = None
    assert apply_decisions(SPEC10, [again], default_to_automatic=True) == spec11


def test_round_prunes_a_useless_feature_and_feeds_back_invalid_proposals(llm_server) -> None:
    st = llm_server.state
    bad = _proposal(name="red_flag_syndrome")  # taken name: invalid, fed back
    good = _proposal(name="mentions_weekday", values=["yes", "no"])
    answers = iter([bad, good])
    _script_round(st, "", lambda m: {"mentions_weekday": "no"})
    base_fallback = st.fallback

    def fallback(body):
        if body["messages"][0]["content"].startswith("You design features"):
            return "json:" + next(answers)
        return base_fallback(body)

    st.fallback = fallback
    features = TRUTH[["message_id", *SPEC10.names]]
    proposer = FeatureProposer(SPEC10, _config(llm_server), n_pairs=3, seed=2)
    rec, table = proposer.propose(_texts(), features, _train_pairs())
    assert rec.status == "pruned" and rec.decision == "prune", rec.error
    assert rec.gain <= 0
    assert [a["error"] is None for a in rec.proposal_attempts] == [False, True]
    assert "already a feature" in rec.proposal_attempts[0]["error"]
    feedback = [
        r for r in st.requests if r["body"]["messages"][0]["content"].startswith("You design")
    ][-1]["body"]["messages"]
    assert "already a feature" in feedback[-1]["content"]
    assert table.equals(features)


def test_round_failure_is_recorded(llm_server) -> None:
    st = llm_server.state
    _script_round(st, "not json at all", lambda m: {})
    features = TRUTH[["message_id", *SPEC10.names]]
    proposer = FeatureProposer(SPEC10, _config(llm_server), n_pairs=2, max_proposal_retries=1)
    rec, table = proposer.propose(_texts(), features, _train_pairs())
    assert rec.status == "failed" and rec.decision is None
    assert "no valid proposal" in rec.error and "not valid JSON" in rec.error
    assert len(rec.proposal_attempts) == 2
    json.dumps(rec.to_dict())
    assert table.equals(features)
