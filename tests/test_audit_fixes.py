"""The four fixes of the audit against the papers' released code, each checked on hand-computed numbers."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from simsubjects.analyze.methods.agreement import agreement
from simsubjects.studies.moca.analysis import agreement_units, outcomes
from simsubjects.analyze.methods.representativeness import model_distribution, wasserstein_by_question
from simsubjects.datasets.atp import read_opinionqa_wave


# ---------------------------------------------------------------- 1. MoCa: both templates pooled as rows

def _two_templates():
    # story s1: people 0.8 (Yes), s2: people 0.2 (No); the model per template
    rows = [("s1", "yesno", 0.7), ("s1", "ab", 0.3), ("s2", "yesno", 0.5), ("s2", "ab", 0.1)]
    data = pd.DataFrame([{"model": "m", "persona": "", "item": i, "template": t, "y": y} for i, t, y in rows])
    human = pd.Series({"s1": 0.8, "s2": 0.2})
    return data, human


def _metrics(data, human, pooling):
    mp, hp = agreement_units(data, human, pooling)
    a = agreement(mp, hp, n_boot=10, seed=0)
    return a.set_index("metric")["estimate"].to_dict(), int(a["n"].iloc[0])


def test_moca_pools_story_template_rows_like_the_released_evaluator():
    data, human = _two_templates()
    m, n = _metrics(data, human, "rows")
    assert n == 4
    # classes: .7 Yes (=Yes), .3 No (!=Yes), .5 ambiguous (!=No), .1 No (=No)
    assert m["agreement"] == pytest.approx(0.5)
    assert m["mae"] == pytest.approx((0.1 + 0.5 + 0.3 + 0.1) / 4)
    # positives (.7, .3) against negatives (.5, .1): 3 of 4 pairs ordered right
    assert m["auc"] == pytest.approx(0.75)
    # CE on the matched label: s1 rows -0.8 log m, s2 rows -0.8 log(1 - m)
    ce = -0.8 * (math.log(0.7) + math.log(0.3) + math.log(0.5) + math.log(0.9)) / 4
    assert m["ce"] == pytest.approx(ce)


def test_moca_story_means_on_request():
    data, human = _two_templates()
    m, n = _metrics(data, human, "story")
    assert n == 2
    # s1 mean .5 (ambiguous != Yes), s2 mean .3 (No = No)
    assert m["agreement"] == pytest.approx(0.5)
    assert m["mae"] == pytest.approx((0.3 + 0.1) / 2)
    assert m["auc"] == pytest.approx(1.0)


# ---------------------------------------------------------------- 2. MoCa: a missing P(Yes) counts 0.5

def test_moca_missing_p_yes_counts_one_half():
    base = {"study": "moca", "item": "s1", "source": "model", "model": "m", "method": "sampled", "validity": 1.0}
    responses = pd.DataFrame([
        {**base, "trial": "t1", "template": "yesno", "response": "Yes", "weight": 3.0},
        {**base, "trial": "t1", "template": "yesno", "response": "No", "weight": 1.0},
        {**base, "trial": "t2", "template": "ab", "response": "maybe", "weight": 5.0},  # no valid answer
    ])
    items = pd.DataFrame({"item": ["s1"], "task": ["causal"], "causal_structure": ["Conjunctive"]})
    y = outcomes(responses, items).set_index("trial")["y"]
    assert y.to_dict() == {"t1": 0.75, "t2": 0.5}
    assert y.mean() == pytest.approx(0.625)  # the story's P(Yes), released-code convention
    assert outcomes(responses, items, missing_p="drop")["y"].tolist() == [0.75]


# ---------------------------------------------------------------- 3. OpinionQA: "None" is an answer

def test_opinionqa_answer_none_is_text(tmp_path):
    d = tmp_path / "American_Trends_Panel_W26"
    d.mkdir()
    options = ["All or most", "Some", "Only a few", "None", "Refused"]
    pd.DataFrame({"key": ["GUNFRIEND_W26"], "question": ["How many of your friends own guns?"],
                  "references": [str(options)], "option_ordinal": ["[1.0, 2.0, 3.0, 4.0]"]}).to_csv(d / "info.csv")
    answers = ["None", "None", "Some", "NA", "", "Refused"]  # "" = not asked; "NA" is not an option
    pd.DataFrame({"QKEY": range(6), "GUNFRIEND_W26": answers, "WEIGHT_W26": [1.0, 2.0, 0.5, 1.5, 4.0, 1.0]}
                 ).to_csv(d / "responses.csv", index=False)
    df = read_opinionqa_wave(d)
    w = dict(zip(df["response"], df["weight"]))
    assert w["None"] == pytest.approx(3.0)  # was dropped as missing with pandas' default NA strings
    assert w["Some"] == 0.5 and w["Refused"] == 1.0 and w["NA"] == 1.5
    assert df["weight"].sum() == pytest.approx(6.0)  # the not-asked respondent (weight 4) is out
    assert df.loc[df["response"] == "None", "position"].item() == 4.0


# ---------------------------------------------------------------- 4. representativeness: span of the option list

def test_representativeness_divides_by_the_whole_option_span():
    # a 4-option question; neither side puts or lists any mass on options 1 and 4
    model = pd.DataFrame({"model": "m", "key": "Q", "position": [2.0, 3.0], "weight": [0.0, 1.0]})
    human = pd.DataFrame({"key": "Q", "position": [2.0, 3.0], "weight": [1.0, 0.0]})
    options = pd.DataFrame({"key": "Q", "position": [1.0, 2.0, 3.0, 4.0, math.nan],
                            "refusal": [False, False, False, False, True]})
    # W1 = 1 (all mass moves one step); OpinionQA divides by 4 - 1 = 3
    d = wasserstein_by_question(model, human, options=options)["distance"].item()
    assert d == pytest.approx(1 / 3)
    # without the option list, only the listed positions (2..3) are known
    assert wasserstein_by_question(model, human)["distance"].item() == pytest.approx(1.0)


def test_model_distribution_lists_every_option():
    from simsubjects.studies.survey_bias import design as sb

    items = sb.generate_pairs(pd.DataFrame({"key": ["Q"], "question": ["How?"], "options": ["v | s | n | x"],
                                            "middle_label": ["mid"]}))
    rows = [{"trial": "t1", "item": "response_order/Q/original", "response": r, "weight": w, "model": "m"}
            for r, w in (("B", 0.6), ("C", 0.4))]
    md = model_distribution(pd.DataFrame(rows), items, biases=["response_order"])
    listed = md[~md["refusal"]].set_index("position")["weight"].sort_index()
    assert listed.index.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert listed.tolist() == pytest.approx([0.0, 0.6, 0.4, 0.0])
    # human mass on option 2 only: W1 = 0.4 over the span 3, not over the span 1 of the answers
    human = pd.DataFrame({"key": "Q", "position": [2.0], "weight": [1.0]})
    assert wasserstein_by_question(md, human)["distance"].item() == pytest.approx(0.4 / 3)
