"""Pew ATP loaders: OpinionQA layout and raw .sav give the same weighted distributions (by hand)."""

import math

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.methods.representativeness import representativeness
from simsubjects.datasets.atp import read_atp_sav, read_opinionqa_wave
from simsubjects.errors import UserError

# respondent: (answer to Q1_W99, SEX, weight); None = not asked
PEOPLE = [
    ("Very likely", "Male", 1.5),
    ("Very likely", "Female", 0.5),
    ("Somewhat likely", "Female", 2.0),
    ("Refused", "Male", 1.0),
    (None, "Female", 3.0),
    ("Not likely", "Refused", 1.0),
]
OPTIONS = ["Very likely", "Somewhat likely", "Not likely", "Refused"]
# hand totals of the survey weights
OVERALL = {"Very likely": 2.0, "Somewhat likely": 2.0, "Not likely": 1.0, "Refused": 1.0}
MALE = {"Very likely": 1.5, "Somewhat likely": 0.0, "Not likely": 0.0, "Refused": 1.0}
FEMALE = {"Very likely": 0.5, "Somewhat likely": 2.0, "Not likely": 0.0, "Refused": 0.0}


@pytest.fixture
def opinionqa(tmp_path):
    d = tmp_path / "human_resp" / "American_Trends_Panel_W99"
    d.mkdir(parents=True)
    pd.DataFrame({
        "Unnamed: 0": [0, 1], "key": ["Q1_W99", "Q2_W99"],
        "question": ["How likely is it?", "Is it good?"],
        "references": [str(OPTIONS), str(["Yes", "No", "Refused"])],
        "option_ordinal": ["[1.0, 2.0, 3.0]", "[1.0, 2.0]"],
    }).to_csv(d / "info.csv")
    pd.DataFrame({"key": ["SEX"], "options": [str(["Male", "Female"])]}).to_csv(d / "metadata.csv")
    pd.DataFrame({
        "QKEY": range(len(PEOPLE)),
        "Q1_W99": [a for a, _, _ in PEOPLE],
        "Q2_W99": ["Yes"] * len(PEOPLE),
        "SEX": [s for _, s, _ in PEOPLE],
        "WEIGHT_W99": [w for _, _, w in PEOPLE],
    }).to_csv(d / "responses.csv", index=False)
    return d


@pytest.fixture
def sav(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    codes = {"Very likely": 1, "Somewhat likely": 2, "Not likely": 3, "Refused": 99}
    sex = {"Male": 1, "Female": 2, "Refused": 99}
    df = pd.DataFrame({
        "QKEY": np.arange(len(PEOPLE), dtype=float),
        "Q1_W99": [np.nan if a is None else float(codes[a]) for a, _, _ in PEOPLE],
        "F_SEX": [float(sex[s]) for _, s, _ in PEOPLE],
        "WEIGHT_W99": [w for _, _, w in PEOPLE],
    })
    path = tmp_path / "ATP W99.sav"
    pyreadstat.write_sav(df, str(path), column_labels=["id", "How likely is it?", "Sex", "Weight"],
                         variable_value_labels={"Q1_W99": {float(v): k for k, v in codes.items()},
                                                "F_SEX": {float(v): k for k, v in sex.items()}})
    return path


def weights(df, attribute="Overall", group="Overall", key="Q1_W99"):
    d = df[(df["attribute"] == attribute) & (df["group"] == group) & (df["key"] == key)]
    return dict(zip(d["response"], d["weight"]))


def test_opinionqa_weighted_distribution(opinionqa):
    h = read_opinionqa_wave(opinionqa, by="SEX")
    assert set(h["source"]) == {"human"} and set(h["method"]) == {"observed"} and set(h["model"]) == {"ATP W99"}
    assert weights(h) == pytest.approx(OVERALL)
    assert weights(h, "SEX", "Male") == pytest.approx(MALE)
    assert weights(h, "SEX", "Female") == pytest.approx(FEMALE)
    assert set(h.loc[h["attribute"] == "SEX", "group"]) == {"Male", "Female"}  # "Refused" is no group
    o = h[(h["attribute"] == "Overall") & (h["key"] == "Q1_W99")].set_index("response")
    assert o.loc["Refused", "refusal"] and math.isnan(o.loc["Refused", "position"])
    assert o.loc[["Very likely", "Somewhat likely", "Not likely"], "position"].tolist() == [1.0, 2.0, 3.0]
    assert o["n_respondents"].to_dict() == {"Very likely": 2, "Somewhat likely": 1, "Not likely": 1, "Refused": 1}
    # the respondent not asked (weight 3.0) is in no row
    assert o["weight"].sum() == pytest.approx(6.0)
    assert weights(h, key="Q2_W99") == pytest.approx({"Yes": 9.0, "No": 0.0, "Refused": 0.0})


def test_sav_matches_opinionqa(opinionqa, sav):
    a = read_opinionqa_wave(opinionqa, keys=["Q1_W99"])
    b = read_atp_sav(sav, keys=["Q1_W99"], by="F_SEX")
    assert weights(a) == pytest.approx(OVERALL)
    assert weights(b) == pytest.approx(OVERALL)
    assert weights(b, "F_SEX", "Male") == pytest.approx(MALE)
    assert weights(b, "F_SEX", "Female") == pytest.approx(FEMALE)
    assert set(b.loc[b["attribute"] == "F_SEX", "group"]) == {"Male", "Female"}
    o = b[b["attribute"] == "Overall"].set_index("response")
    assert o.loc["Refused", "refusal"] and math.isnan(o.loc["Refused", "position"])
    assert o.loc[["Very likely", "Somewhat likely", "Not likely"], "position"].tolist() == [1.0, 2.0, 3.0]
    assert set(b["question"]) == {"How likely is it?"} and set(b["model"]) == {"ATP W99"}


def test_representativeness_against_weighted_humans(opinionqa):
    h = read_opinionqa_wave(opinionqa, keys=["Q1_W99"], by="SEX")
    model = pd.DataFrame({"model": "m", "key": "Q1_W99", "position": [1.0, 2.0, 3.0], "weight": [0.5, 0.5, 0.0]})
    rep = representativeness(model, h).iloc[0]
    # D_H without "Refused": (2, 2, 1) / 5; CDFs (.5, 1) vs (.4, .8): W1 = .1 + .2 = .3 over span 2
    assert rep["estimate"] == pytest.approx(1 - 0.15)
    by = representativeness(model, h, by=["attribute", "group"]).set_index("group")["estimate"]
    # Male: D_H = (1, 0, 0): CDF gaps (.5 vs 1) + (1 vs 1) = .5 over 2
    assert by["Male"] == pytest.approx(1 - 0.25)
    # Female: (.5, 2, 0)/2.5 = (.2, .8, 0): gaps |.5 - .2| + 0 = .3 over 2
    assert by["Female"] == pytest.approx(1 - 0.15)


def test_errors(opinionqa, tmp_path):
    with pytest.raises(UserError, match="NOPE_W99"):
        read_opinionqa_wave(opinionqa, keys=["NOPE_W99"])
    with pytest.raises(UserError, match="demographic"):
        read_opinionqa_wave(opinionqa, by="PARTY")
    r = pd.read_csv(opinionqa / "responses.csv").drop(columns="WEIGHT_W99")
    r.to_csv(opinionqa / "responses.csv", index=False)
    with pytest.raises(UserError, match="weight"):
        read_opinionqa_wave(opinionqa)
    with pytest.raises(UserError, match="info.csv"):
        read_opinionqa_wave(tmp_path)
