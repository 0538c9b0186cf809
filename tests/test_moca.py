"""MoCa loader, personas and trials: checked against the raw JSON and the paper's Table 1."""

import json

import numpy as np
import pandas as pd
import pytest

from simsubjects.datasets.moca_humans import data_dir, load_moca
from simsubjects.analyze.choice_stats import p_yes
from simsubjects.studies.moca.design import build_trials, load_personas
from simsubjects.errors import UserError


def raw(task):
    """The raw stories, decoded twice (each list element is a JSON string)."""
    with open(data_dir() / f"{task}_dataset_v1.json", encoding="utf-8") as f:
        return [json.loads(s) for s in json.load(f)]


@pytest.fixture(scope="module")
def moca():
    return load_moca("all")


@pytest.mark.parametrize("task,n,yes,no,amb", [("causal", 144, 48, 50, 46), ("moral", 62, 23, 10, 29)])
def test_table1_counts(moca, task, n, yes, no, amb):
    responses, items = moca
    it = items[items["task"] == task]
    assert len(it) == n
    counts = it["human_class"].value_counts()
    assert (counts["Yes"], counts["No"], counts["ambiguous"]) == (yes, no, amb)
    assert (responses["task"] == task).sum() == 25 * n


def test_votes_and_p_yes_match_raw_json(moca):
    responses, items = moca
    for task in ("causal", "moral"):
        stories = raw(task)
        for k in (0, 7, len(stories) - 1):
            votes = stories[k]["individual_votes"]
            item = f"{task}-{k:03d}"
            got = responses[responses["item"] == item]
            assert list(got["response"]) == ["Yes" if v else "No" for v in votes]
            assert items.set_index("item").loc[item, "human_p_yes"] == pytest.approx(sum(votes) / len(votes))
    assert set(responses["source"]) == {"human"} and set(responses["method"]) == {"observed"}
    assert set(responses["model"]) == {"moca-human"} and (responses["weight"] == 1).all()
    assert (responses["condition"] == responses["task"]).all()


def test_factor_columns_from_tags(moca):
    _, items = moca
    causal, moral = raw("causal"), raw("moral")

    def count(stories, tag):
        return sum(any(s["annotation"][1] == tag for s in st["annotated_sentences"]) for st in stories)

    ic, im = items[items["task"] == "causal"], items[items["task"] == "moral"]
    assert (ic["event_normality"] == "Abnormal").sum() == count(causal, "EC_4_Abnormal_Event")
    assert (ic["norm_type"] == "Statistical").sum() == count(causal, "Norm_3_Statistics_Norm")
    assert (ic["time"] == "Same time").sum() == count(causal, "EC_4_Same_Time_Cause")
    assert (im["evitability"] == "Inevitable").sum() == count(moral, "inevitable")
    assert (im["locus_of_intervention"] == "Patient of harm").sum() == count(moral, "influence patient")
    assert (im["beneficence"] == "Self-beneficial").sum() == count(moral, "self beneficial")
    # story 0 of the causal set: Jane's abnormal, prescriptive-norm action in a conjunctive structure
    first = ic.iloc[0]
    assert (first["causal_structure"], first["norm_type"], first["event_normality"]) == (
        "Conjunctive", "Prescriptive", "Abnormal")
    assert pd.isna(first["agent_awareness"])
    assert ic["causal_role"].isna().all()  # moral factors are empty for causal stories


def test_bad_task_is_a_user_error():
    with pytest.raises(UserError):
        load_moca("ethics")


def test_personas_table_a3():
    p = load_personas()
    assert len(p) == 25 and p["slug"].is_unique
    assert p.groupby("category").size().tolist() == [5] * 5
    # the two personas Appendix A.4 names as most aligned
    assert "Emily White is a Republican who got fed up with the party" in set(p["persona"])
    assert "Allen Lee is a really cool guy" in set(p["persona"])
    assert not p["persona"].str.endswith(".").any()


def test_prompt_in_paper_style(moca):
    _, items = moca
    t = build_trials(items.head(3))
    story, question = items.iloc[0]["story"], items.iloc[0]["question"]
    assert t.iloc[0]["prompt"] == f"Question: {story} {question} Please answer Yes or No.\n\nAnswer:"
    assert t.iloc[0]["options"] == (" Yes", " No") and t.iloc[0]["labels"] == ("Yes", "No")
    assert (t["subject"] == "").all() and (t["condition"] == t["task"]).all()
    assert t["trial"].is_unique


def test_personas_change_the_prompt_and_nothing_else(moca):
    _, items = moca
    sample = items.iloc[[0, 150]]
    plain = build_trials(sample).set_index("item")
    with_p = build_trials(sample, personas=True)
    assert len(with_p) == 2 * 25 and with_p["trial"].is_unique
    texts = load_personas().set_index("slug")["persona"]
    for _, row in with_p.iterrows():
        base = plain.loc[row["item"]]
        assert row["prompt"] == texts[row["persona"]] + ".\n\n" + base["prompt"]
        assert row["subject"] == row["persona"]
        for col in ("options", "labels", "condition", "task", "template"):
            assert row[col] == base[col]


def test_sampled_variant_allows_not_sure(moca):
    _, items = moca
    t = build_trials(items.head(1), method="sampled")
    assert t.iloc[0]["options"] == ("Yes", "No", "not sure")
    assert "Not Sure" in t.iloc[0]["prompt"]
    with pytest.raises(UserError):
        build_trials(items.head(1), method="guess")


def test_p_yes_exact_and_sampled():
    rows = [  # trial, method, response, weight
        ("t1", "exact", "Yes", 0.7), ("t1", "exact", "No", 0.3),
        ("t2", "sampled", "Yes", 3), ("t2", "sampled", "No", 1), ("t2", "sampled", "not sure", 2),
        ("t3", "sampled", "maybe", 4),
    ]
    df = pd.DataFrame(rows, columns=["trial", "method", "response", "weight"]).assign(
        item="causal-000", source="model", model="m")
    got = p_yes(df).set_index("trial")
    assert got.loc["t1", "p_yes"] == pytest.approx(0.7)
    assert got.loc["t2", "p_yes"] == pytest.approx((3 + 0.5 * 2) / 6)
    assert got.loc["t2", "method"] == "sampled" and got.loc["t2", "n"] == 6
    assert np.isnan(got.loc["t3", "p_yes"])


def test_p_yes_keeps_models_apart():
    # two runs reuse the same trial ids; each model keeps its own P(Yes)
    rows = [("m1", "Yes", 0.9), ("m1", "No", 0.1), ("m2", "Yes", 0.2), ("m2", "No", 0.8)]
    df = pd.DataFrame(rows, columns=["model", "response", "weight"]).assign(
        trial="causal-000:yesno", item="causal-000", source="model", method="exact")
    got = p_yes(df).set_index("model")["p_yes"]
    assert got["m1"] == pytest.approx(0.9) and got["m2"] == pytest.approx(0.2)
