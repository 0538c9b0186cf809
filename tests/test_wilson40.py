"""Issue 40, item 4 (proportions): people's shares of 0/1 values get the Wilson score interval, model rows
keep the t interval over subjects, and an `interval` column names which each row has.

Tables: the study files' `selection_shares` (check-all boxes; a Qualtrics import's too), sessions'
`beside_people` (people's shares beside the model's) and `model_and_people`, and R's `sf_summaries`.
Unit of every interval here: the subject (model) or the person (people); 95%. Data: made-up rows.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from simsubjects.analyze.methods.tests import proportion_interval
from simsubjects.studyfile.summaries import summaries

# each person's check-all answer (1: ticked), per item; "all" is a share of 1.0 on 5 people
PEOPLE = {"box": [1, 0, 0, 1, 0, 0, 0], "all": [1, 1, 1, 1, 1]}
MODEL_P = {"box": [0.2, 0.35, 0.9, 0.6], "all": [0.97, 0.99, 0.95, 0.999]}  # each subject's P(Yes)


def _responses() -> pd.DataFrame:
    """A check-all run's long responses: a person's one answer (weight 1), a model subject's P(Yes), P(No);
    and a number item ("kids") whose people's answers are all 0 or 1: a mean of numbers, not a share."""
    rows = [{"source": "human", "model": "people", "trial": f"k{i}", "subject": f"r{i}", "item": "kids",
             "condition": "", "response": str(v), "estimate": float(v), "weight": 1.0, "validity": 1.0}
            for i, v in enumerate([0, 1, 1, 0, 1])]
    for item, ticks in PEOPLE.items():
        for i, tick in enumerate(ticks):
            rows.append({"source": "human", "model": "people", "trial": f"h{i}{item}", "subject": f"r{i}",
                         "item": item, "condition": "", "response": "Yes" if tick else "No", "weight": 1.0,
                         "validity": 1.0})
    for item, ps in MODEL_P.items():
        for i, p in enumerate(ps):
            for response, w in (("Yes", p), ("No", 1 - p)):
                rows.append({"source": "model", "model": "m", "trial": f"m{i}{item}", "subject": f"s{i}",
                             "item": item, "condition": "", "response": response, "weight": w, "validity": 1.0})
    return pd.DataFrame(rows)


ITEMS = pd.DataFrame({"item": ["box", "all", "kids"], "answer_kind": ["yesno", "yesno", "estimate"]})


def _row(table, source, item):
    got = table[(table["source"] == source) & (table["item"] == item)]
    assert len(got) == 1
    return got.iloc[0]


@pytest.mark.parametrize("item", sorted(PEOPLE))
def test_peoples_selection_shares_have_the_wilson_interval(item):
    """A people's check-all share: statsmodels' Wilson interval (not mean +- t * se), within [0, 1], also at a
    share of 1.0 on 5 people, where the t interval is the single point [1, 1]."""
    shares = summaries(_responses(), ITEMS)["selection_shares"]
    h = _row(shares, "human", item)
    k, n = sum(PEOPLE[item]), len(PEOPLE[item])
    lo, hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert h["n"] == n and h["estimate"] == k / n
    assert math.isclose(h["conf.low"], lo, abs_tol=1e-12) and math.isclose(h["conf.high"], hi, abs_tol=1e-12)
    assert h["interval"] == "wilson"
    assert 0.0 <= h["conf.low"] <= h["estimate"] <= h["conf.high"] <= 1.0
    if k == n:
        assert h["conf.high"] == 1.0 and h["conf.low"] < 0.6  # the t interval was [1, 1]


def test_model_selection_shares_keep_the_t_interval_over_subjects():
    """Model rows (each subject's exact P(Yes), averaged over subjects) keep the t interval, labelled so."""
    shares = summaries(_responses(), ITEMS)["selection_shares"]
    m = _row(shares, "model", "box")
    x = np.array(MODEL_P["box"])
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    assert m["interval"] == "t over subjects"
    assert math.isclose(m["conf.low"], x.mean() - half, rel_tol=1e-12)
    assert math.isclose(m["conf.high"], x.mean() + half, rel_tol=1e-12)
    assert set(shares["interval"]) == {"wilson", "t over subjects"}


def test_peoples_numbers_of_0_or_1_keep_the_t_interval():
    """numeric_means: people's numbers that are all 0 or 1 are a mean of numbers, not a share: t interval."""
    means = summaries(_responses(), ITEMS)["numeric_means"]
    h = _row(means, "human", "kids")
    x = np.array([0, 1, 1, 0, 1.0])
    half = stats.t.ppf(0.975, 4) * x.std(ddof=1) / math.sqrt(5)
    assert h["interval"] == "t over subjects" and h["conf.low"] == pytest.approx(x.mean() - half, abs=1e-12)


def test_people_rows_that_are_not_0_or_1_keep_the_t_row():
    from simsubjects.analyze.methods.tests import people_share_interval

    row = {"estimate": 0.5, "conf.low": 0.1, "conf.high": 0.9, "interval": "t over persons"}
    assert people_share_interval([0.2, 0.8], row) == row  # a person's mean over rounds: not a 0/1 value
    assert people_share_interval([1.0, 0.0, 1.0], row)["interval"] == "wilson"


def _session(values, measure="share choice=J"):
    """A prisoner's-dilemma session (examples/pd_tft) with made-up decisions and people's round-1 values."""
    from pathlib import Path

    from simsubjects.studyfile.session import load_session

    study = load_session(Path(__file__).resolve().parents[1] / "examples" / "pd_tft" / "study.yaml")
    rows = []
    for s, p in (("s1", 0.3), ("s2", 0.8), ("s3", 0.5)):
        for lab, w in (("J", p), ("F", 1 - p)):
            rows.append({"subject": s, "item": "choice", "response": lab, "weight": w, "reach": 1.0, "round": 1,
                         "path": 1, "condition": "decision", "trial": f"{s}|p1|1"})
    study.people = pd.DataFrame({"respondent": [f"r{i}" for i in range(len(values))], "measure": measure,
                                 "value": values, "round": 1})
    study.people_by = ["round"]
    return study, pd.DataFrame(rows)


def test_peoples_shares_beside_a_session_have_the_wilson_interval():
    """beside_people: the people's share of one choice (0/1 per person) gets Wilson's interval; the model's
    mean over subjects keeps its t interval; model_and_people carries both, and the people's label."""
    from simsubjects.studyfile.session_analysis import beside_people, side_by_side

    study, dec = _session([1, 1, 1, 1, 1])
    side, _ = beside_people(study, dec, dec.iloc[:0])
    people = side[side["source"] != "model"].iloc[0]
    lo, hi = proportion_confint(5, 5, alpha=0.05, method="wilson")
    assert people["interval"] == "wilson" and people["estimate"] == 1.0 and people["conf.high"] == 1.0
    assert math.isclose(people["conf.low"], lo, abs_tol=1e-12) and hi == pytest.approx(1.0)
    model = side[side["source"] == "model"].iloc[0]
    assert model["interval"] == "t over subjects"
    x = np.array([0.3, 0.8, 0.5])  # each subject's P(J)
    half = stats.t.ppf(0.975, 2) * x.std(ddof=1) / math.sqrt(3)
    assert model["estimate"] == pytest.approx(x.mean(), abs=1e-12)
    assert model["conf.low"] == pytest.approx(x.mean() - half, abs=1e-12)
    both = side_by_side(side, study.human_name)
    assert len(both) == 1 and both["people.interval"].iat[0] == "wilson"
    assert both["people.conf.low"].iat[0] == people["conf.low"]


@pytest.mark.parametrize("values, measure", [([0.1, 0.3, 0.2, 0.6], "share choice=J"),  # means over rounds
                                              ([0, 1, 1, 0], "mean payoff")])  # a payoff's 0/1 values
def test_peoples_means_keep_the_t_interval_over_persons(values, measure):
    from simsubjects.studyfile.session_analysis import beside_people

    study, dec = _session(values, measure)
    rounds = pd.DataFrame({"subject": ["s1", "s2", "s3"], "round": 1, "weight": 1.0, "payoff": [3.0, 1.0, 5.0]})
    side, _ = beside_people(study, dec, rounds)
    assert side["source"].tolist() == ["model", study.human_name]
    people = side[side["source"] != "model"].iloc[0]
    x = np.asarray(values, float)
    assert people["interval"] == "t over persons"
    half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    assert people["conf.low"] == pytest.approx(x.mean() - half, abs=1e-12)


@pytest.mark.parametrize("k, n", [(0, 5), (1, 1), (3, 7), (5, 5), (40, 97)])
def test_r_prop_test_is_the_wilson_interval_of_proportion_interval(k, n):
    """R's twin: prop.test(x, n, correct = FALSE)$conf.int equals proportion_interval's Wilson bounds."""
    pytest.importorskip("rpy2", reason="rpy2 not installed")
    from simsubjects.analyze.check_r import r_session

    r = r_session()
    ci = list(r.ro.r(f"suppressWarnings(prop.test({k}, {n}, correct = FALSE))$conf.int"))
    py = proportion_interval([1] * k + [0] * (n - k), "wilson")
    assert abs(ci[0] - py["conf.low"]) < 1e-12 and abs(ci[1] - py["conf.high"]) < 1e-12


def test_r_sf_summaries_gives_the_same_intervals_and_labels():
    """sf_summaries (R/studyfile.R) on the same responses: every row's interval label and bounds as Python's."""
    pytest.importorskip("rpy2", reason="rpy2 not installed")
    from simsubjects.analyze.check_r import r_session

    r = r_session()
    resp = _responses()
    got = r.env.find("sf_summaries")(r.to_r(resp), r.to_r(pd.DataFrame({"item": ["box"]})), r.to_r(ITEMS))
    keys = ["source", "model", "item"]
    for name, rows in (("selection_shares", 4), ("numeric_means", 1)):
        rr = r.to_py(got.rx2(name))
        py = summaries(resp, ITEMS)[name]
        m = py.merge(rr, on=keys, suffixes=("", "_r"))
        assert len(m) == len(py) == len(rr) == rows
        assert (m["interval"] == m["interval_r"]).all()
        for col in ("estimate", "conf.low", "conf.high", "n"):
            np.testing.assert_allclose(m[col], m[f"{col}_r"], rtol=0, atol=1e-12)
