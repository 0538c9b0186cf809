"""Representativeness (Santurkar et al. 2023): normalized Wasserstein-1 on ordinal options, by hand."""

import math

import pandas as pd
import pytest

from simsubjects.analyze.methods.representativeness import (model_distribution, representativeness, wasserstein_by_question,
                                                    wasserstein_normalized)
from simsubjects.collect.studies import survey_bias as sb
from simsubjects.errors import UserError


def dist(key, weights, positions=None, refusal=None, **extra):
    positions = positions or [float(i + 1) for i in range(len(weights))]
    refusal = refusal or [False] * len(weights)
    return [{"key": key, "position": p, "weight": w, "refusal": r, **extra}
            for p, w, r in zip(positions, weights, refusal)]


def test_wasserstein_by_hand():
    model = pd.DataFrame(dist("Q1", [0.5, 0.5, 0.0]) + dist("Q2", [1, 0, 0, 0]) + dist("Q3", [0.2, 0.8]))
    human = pd.DataFrame(dist("Q1", [0, 50, 50]) + dist("Q2", [0, 0, 0, 7]) + dist("Q3", [2, 8]))
    d = wasserstein_by_question(model, human).set_index("key")["distance"]
    # Q1: CDFs (.5, 1, 1) vs (0, .5, 1): W1 = .5 + .5 = 1 over span 2
    assert d["Q1"] == pytest.approx(0.5)
    # Q2: all mass at 1 vs all at 4: W1 = 3 over span 3
    assert d["Q2"] == pytest.approx(1.0)
    assert d["Q3"] == pytest.approx(0.0)
    rep = representativeness(model, human).iloc[0]
    assert rep["estimate"] == pytest.approx(1 - (0.5 + 1.0 + 0.0) / 3) and rep["n"] == 3
    sd = math.sqrt(((0.5 - 0.5) ** 2 + (1 - 0.5) ** 2 + (0 - 0.5) ** 2) / 2)
    assert rep["std.error"] == pytest.approx(sd / math.sqrt(3))


def test_refusal_is_excluded_and_renormalized():
    model = pd.DataFrame(dist("Q", [0.25, 0.75]))
    # 60 refused: D_H = (30, 10) / 40 = (.75, .25)
    human = pd.DataFrame(dist("Q", [30, 10, 60], positions=[1.0, 2.0, math.nan], refusal=[False, False, True]))
    d = wasserstein_by_question(model, human)["distance"].item()
    assert d == pytest.approx(0.5)  # |.25 - .75| over span 1
    # a model "Don't know" option flagged refusal does not count either
    model2 = pd.DataFrame(dist("Q", [0.2, 0.6, 0.2], positions=[1.0, 2.0, 3.0], refusal=[False, False, True]))
    assert wasserstein_by_question(model2, human)["distance"].item() == pytest.approx(abs(0.25 - 0.75))


def test_fractional_ordinals_like_opinionqa():
    # OpinionQA gives "A mix of both" ordinal 1.5 between 1 and 2: span is 1
    model = pd.DataFrame(dist("Q", [0, 0, 1], positions=[1.0, 2.0, 1.5]))
    human = pd.DataFrame(dist("Q", [1, 0, 0], positions=[1.0, 2.0, 1.5]))
    assert wasserstein_by_question(model, human)["distance"].item() == pytest.approx(0.5)
    assert wasserstein_normalized([1.0, 2.0], [1, 0], [1.0, 2.0], [0, 1]) == pytest.approx(1.0)


def test_per_group_and_models():
    model = pd.DataFrame(dist("Q", [1, 0, 0], model="m1") + dist("Q", [0, 0, 1], model="m2"))
    human = pd.DataFrame(dist("Q", [1, 0, 0], attribute="Overall", group="Overall")
                         + dist("Q", [1, 0, 0], attribute="SEX", group="Male")
                         + dist("Q", [0, 1, 0], attribute="SEX", group="Female"))
    rep = representativeness(model, human, by=["attribute", "group"]).set_index(["model", "group"])["estimate"]
    assert rep[("m1", "Male")] == pytest.approx(1.0)
    assert rep[("m1", "Female")] == pytest.approx(0.5)  # W1 1 over span 2
    assert rep[("m2", "Male")] == pytest.approx(0.0)
    assert rep[("m2", "Overall")] == pytest.approx(0.0)
    # without by: only the Overall rows are used
    overall = representativeness(model, human).set_index("model")["estimate"]
    assert overall["m1"] == pytest.approx(1.0) and overall["m2"] == pytest.approx(0.0)


def test_model_distribution_from_responses():
    items = sb.generate_pairs(pd.DataFrame({"key": ["Q"], "question": ["How?"], "options": ["v | s | n | x"],
                                            "middle_label": ["mid"]}))
    rows = []
    for lab, p in zip("ABCDE", [0.1, 0.2, 0.3, 0.2, 0.2]):
        rows.append({"trial": "t1", "item": "odd_even/Q/original", "response": lab, "weight": p, "model": "m"})
    for lab, p in zip("ABCDEF", [0.1, 0.1, 0.1, 0.1, 0.1, 0.5]):
        rows.append({"trial": "t2", "item": "opinion_float/Q/modified", "response": lab, "weight": p, "model": "m"})
    md = model_distribution(pd.DataFrame(rows), items, biases=["odd_even"])
    # the added middle of a 4-point scale sits at 2.5 on the surveyed scale
    assert md.set_index("position")["weight"].to_dict() == pytest.approx({1.0: 0.1, 2.0: 0.2, 2.5: 0.3, 3.0: 0.2, 4.0: 0.2})
    human = pd.DataFrame(dist("Q", [1, 1, 1, 1]))  # uniform over the 4 surveyed options
    d = wasserstein_by_question(md, human)["distance"].item()
    # CDF gaps: [1,2): .1 vs .25, [2,2.5): .3 vs .5, [2.5,3): .6 vs .5, [3,4): .8 vs .75
    w1 = 0.15 * 1 + 0.2 * 0.5 + 0.1 * 0.5 + 0.05 * 1
    assert d == pytest.approx(w1 / 3)
    # the "Don't know" form: F is a refusal
    md2 = model_distribution(pd.DataFrame(rows), items, form="modified", biases=["opinion_float"])
    assert md2.loc[md2["response"] == "F", "refusal"].item()


def test_errors():
    with pytest.raises(UserError, match="position"):
        representativeness(pd.DataFrame({"key": ["Q"], "weight": [1.0]}), pd.DataFrame(dist("Q", [1, 1])))
    with pytest.raises(UserError, match="no question key"):
        representativeness(pd.DataFrame(dist("A", [1, 1])), pd.DataFrame(dist("B", [1, 1])))
