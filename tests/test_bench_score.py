"""bench/score.py's populations and effects on hand-made responses (no model): a subject's answer
distribution, the mixture over subjects, and each hypothesis kind against a direct computation.
Unit: a finding's effect (one number per finding)."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.bench import score
from simsubjects.bench.corpus import read_finding
from simsubjects.studyfile.spec import load_study

LABELS = ["Strongly disagree", "Disagree", "Neither agree nor disagree", "Agree", "Strongly agree"]

STUDY = """
study: two-items
title: two likert items and a three-way choice
design:
  factors:
    arm: {{assignment: between, levels: [a, b]}}
  subjects: 4
  seed: 1
items:
  - {{id: x, text: "Item x", response: likert5}}
  - {{id: y, text: "Item y", response: likert5}}
  - id: pick
    text: "Pick one"
    response: {{type: choice, options: [red, green, blue]}}
  - {{id: guess, text: "Guess a number", response: estimate}}
prompt: {{template: "${{question}}\\n${{options}}", answer_prefix: "\\nAnswer:"}}
finding:
  id: t.one
  title: t
  hypothesis: {hypothesis}
  estimator: {estimator}
  test: {test}
  original: {{effect: 0.3, ci: [0.1, 0.5], n: 100, scale: d, source: "made up for the test"}}
"""


def _study(tmp_path: Path, hypothesis: str, estimator: str, test: str):
    f = tmp_path / "study.yaml"
    f.write_text(STUDY.format(hypothesis=hypothesis, estimator=estimator, test=test))
    return load_study(f), read_finding(f)


def _responses(probs: dict) -> pd.DataFrame:
    """probs: (subject, arm, item) -> {label: probability}; one trial each, weights summing to 0.9 (the
    validity): shares are renormalized over the options."""
    rows = []
    for (subj, arm, item), dist in probs.items():
        trial = f"{subj} | {item} | arm={arm}"
        for label, p in dist.items():
            rows.append({"source": "model", "model": "m", "trial": trial,
                         "subject": subj, "item": item, "arm": arm, "response": label, "weight": p * 0.9,
                         "validity": 0.9})
    return pd.DataFrame(rows)


RNG = np.random.default_rng(4)


def _dist(labels):
    p = RNG.dirichlet(np.ones(len(labels)))
    return dict(zip(labels, p))


def _probs():
    out = {}
    for s, arm in (("s1", "a"), ("s2", "a"), ("s3", "b"), ("s4", "b")):
        for item in ("x", "y"):
            out[(s, arm, item)] = _dist(LABELS)
        out[(s, arm, "pick")] = _dist(["red", "green", "blue"])
    return out


def _moments(probs, subjects, item):
    pos = np.arange(1, 6)
    m = np.array([sum(probs[(s, a, item)][lab] * p for lab, p in zip(LABELS, pos)) for s, a in subjects])
    e2 = np.array([sum(probs[(s, a, item)][lab] * p * p for lab, p in zip(LABELS, pos)) for s, a in subjects])
    return m, e2 - m ** 2


SUBJECTS = [("s1", "a"), ("s2", "a"), ("s3", "b"), ("s4", "b")]


def test_within_is_paired_d_of_the_mixture(tmp_path):
    study, finding = _study(tmp_path, "{kind: within, outcomes: [x, y], measure: {mean: true}, direction: positive}", "one_sample_d",
                            "paired_t")
    probs = _probs()
    shuffled = _responses(probs).sample(frac=1, random_state=0)  # subjects in another order per item
    me = score.model_effect(finding, study, shuffled)
    mx, vx = _moments(probs, SUBJECTS, "x")
    my, vy = _moments(probs, SUBJECTS, "y")
    diff = mx - my
    var = np.mean(vx + vy) + diff.var()  # independent items given the subject
    assert me.value == pytest.approx(diff.mean() / math.sqrt(var), rel=1e-12)


def test_association_is_the_mixture_correlation(tmp_path):
    study, finding = _study(tmp_path, "{kind: association, outcomes: [x, y], measure: {mean: true}, direction: positive}", "r",
                            "correlation")
    probs = _probs()
    me = score.model_effect(finding, study, _responses(probs))
    mx, vx = _moments(probs, SUBJECTS, "x")
    my, vy = _moments(probs, SUBJECTS, "y")
    cov = np.mean(mx * my) - mx.mean() * my.mean()
    r = cov / math.sqrt((vx.mean() + mx.var()) * (vy.mean() + my.var()))
    assert me.value == pytest.approx(r, rel=1e-12)
    assert -1 < me.value < 1


def test_multinomial_w_and_likert_d_between(tmp_path):
    study, finding = _study(tmp_path, "{kind: between, outcome: pick, factor: arm, levels: [a, b], "
                                      "measure: {options: [red, green, blue]}}", "cohens_w", "chi2")
    probs = _probs()
    resp = _responses(probs)
    me = score.model_effect(finding, study, resp)
    pa = np.mean([[probs[(s, "a", "pick")][c] for c in ("red", "green", "blue")] for s in ("s1", "s2")], axis=0)
    pb = np.mean([[probs[(s, "b", "pick")][c] for c in ("red", "green", "blue")] for s in ("s3", "s4")], axis=0)
    joint = np.vstack([pa, pb]) / 2
    expected = np.outer(joint.sum(1), joint.sum(0))
    assert me.value == pytest.approx(math.sqrt(((joint - expected) ** 2 / expected).sum()), rel=1e-12)
    study, finding = _study(tmp_path, "{kind: between, outcome: x, factor: arm, levels: [a, b], "
                                      "measure: {mean: true}, direction: positive}", "cohens_d", "welch_t")
    me = score.model_effect(finding, study, resp)
    ma, va = _moments(probs, SUBJECTS[:2], "x")
    mb, vb = _moments(probs, SUBJECTS[2:], "x")
    var_a, var_b = va.mean() + ma.var(), vb.mean() + mb.var()
    assert me.value == pytest.approx((ma.mean() - mb.mean()) / math.sqrt((var_a + var_b) / 2), rel=1e-12)


def test_estimates_are_empirical_draws_and_none_valid_is_unscored(tmp_path):
    study, finding = _study(tmp_path, "{kind: between, outcome: guess, factor: arm, levels: [a, b], "
                                      "measure: {mean: true}, direction: positive}", "cohens_d", "welch_t")
    values = {"s1": [10.0, 14.0], "s2": [20.0, 22.0], "s3": [5.0, 7.0], "s4": [9.0, 9.0]}
    arm = {"s1": "a", "s2": "a", "s3": "b", "s4": "b"}
    rows = [{"source": "model", "model": "m", "trial": f"{s} | guess | {k}", "subject": s, "item": "guess",
             "arm": arm[s], "response": "", "weight": 1.0, "validity": 1.0, "estimate": v}
            for s, vs in values.items() for k, v in enumerate(vs)]
    me = score.model_effect(finding, study, pd.DataFrame(rows))

    def moments(subjects):
        m = np.array([np.mean(values[s]) for s in subjects])
        v = np.array([np.var(values[s]) for s in subjects])
        return m.mean(), v.mean() + m.var()
    (ma, va), (mb, vb) = moments(["s1", "s2"]), moments(["s3", "s4"])
    assert me.value == pytest.approx((ma - mb) / math.sqrt((va + vb) / 2), rel=1e-12)
    invalid = pd.DataFrame(rows).assign(estimate=np.nan, validity=0.0)
    with pytest.raises(score.NoValidAnswers, match="no valid estimate"):
        score.model_effect(finding, study, invalid)
    row = score._unscored(finding, "no valid estimate")
    assert math.isnan(row["model_d"]) and row["note"].startswith("not scored") and row["original_d"] == 0.3


@pytest.mark.parametrize("hypothesis,message", [
    ("{kind: between, outcome: x, factor: arm, levels: [a, c], measure: {mean: true}, direction: positive}",
     "'c': not a level of arm"),
    ("{kind: between, outcome: z, factor: arm, levels: [a, b], measure: {mean: true}, direction: positive}",
     "'z': not an item"),
    ("{kind: between, outcome: pick, factor: arm, levels: [a, b], measure: {option: pink}, direction: positive}",
     "'pink': not an option"),
    ("{kind: between, outcome: pick, factor: arm, levels: [a, b], measure: {mean: true}, direction: positive}",
     "no positions"),
])
def test_hypothesis_checked_before_the_model_loads(tmp_path, hypothesis, message):
    from simsubjects.bench import run as bench_run
    from simsubjects.errors import UserError

    study, finding = _study(tmp_path, hypothesis, "cohens_d", "welch_t")
    with pytest.raises(UserError, match=message) as e:
        bench_run.plan([finding], tmp_path / "out")
    assert "study.yaml:" in str(e.value) and "finding.hypothesis" in str(e.value)
    assert not (tmp_path / "out").exists()


def test_association_of_a_binary_choice_and_a_scale(tmp_path):
    """{option: X} scores the outcome that has option X; the other outcome is scored by its positions."""
    study, finding = _study(tmp_path, "{kind: association, outcomes: [pick, x], measure: {option: red}, "
                                      "direction: positive}", "r", "correlation")
    probs = _probs()
    me = score.model_effect(finding, study, _responses(probs))
    pr = np.array([probs[(s, a, "pick")]["red"] for s, a in SUBJECTS])
    mx, vx = _moments(probs, SUBJECTS, "x")
    cov = np.mean(pr * mx) - pr.mean() * mx.mean()
    r = cov / math.sqrt((pr.mean() * (1 - pr.mean())) * (vx.mean() + mx.var()))
    assert me.value == pytest.approx(r, rel=1e-12)
