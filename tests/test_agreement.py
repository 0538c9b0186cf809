"""Table 3 metrics on a small hand-made fixture."""

import math

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.methods.agreement import _metric_draws, agreement, classify, story_counts

ITEMS = ["s0", "s1", "s2", "s3", "s4"]
HUMAN = pd.Series([0.9, 0.1, 0.5, 0.7, 0.2], index=ITEMS)  # Yes, No, ambiguous, Yes, No
MODEL = [0.8, 0.3, 0.55, 0.3, 0.1]  # Yes, No, ambiguous, No, No


def est(table, metric, **where):
    t = table[table["metric"] == metric]
    for k, v in where.items():
        t = t[t[k] == v]
    assert len(t) == 1
    return t.iloc[0]


def test_classify_band():
    assert list(classify([0.61, 0.6, 0.5, 0.4, 0.39])) == ["Yes", "ambiguous", "ambiguous", "ambiguous", "No"]


def test_metrics_by_hand():
    out = agreement(pd.Series(MODEL, index=ITEMS), HUMAN, n_boot=200, seed=1)
    assert est(out, "agreement")["estimate"] == pytest.approx(4 / 5)  # s3 differs
    # unambiguous stories: positives s0 (0.8), s3 (0.3); negatives s1 (0.3), s4 (0.1); one tie
    assert est(out, "auc")["estimate"] == pytest.approx((1 + 1 + 0.5 + 1) / 4)
    assert est(out, "mae")["estimate"] == pytest.approx((0.1 + 0.2 + 0.05 + 0.4 + 0.1) / 5)
    # matched-label CE: h* = share of the human majority, m* = model prob of that answer;
    # s2 is a tie and counts as Yes
    ce = -(0.9 * math.log(0.8) + 0.9 * math.log(0.7) + 0.5 * math.log(0.55)
           + 0.7 * math.log(0.3) + 0.8 * math.log(0.9)) / 5
    assert est(out, "ce")["estimate"] == pytest.approx(ce)
    bce = -sum(h * math.log(m) + (1 - h) * math.log(1 - m) for h, m in zip(HUMAN, MODEL)) / 5
    assert est(out, "ce_binary")["estimate"] == pytest.approx(bce)
    assert (out["n"] == 5).all()


def test_ce_floor():
    out = agreement(pd.Series([0.0], index=["a"]), pd.Series([1.0], index=["a"]), n_boot=10)
    assert est(out, "ce")["estimate"] == pytest.approx(-math.log(1e-3))


def test_bootstrap_reproducible_and_brackets_estimate():
    m = pd.Series(MODEL, index=ITEMS)
    a = agreement(m, HUMAN, n_boot=500, seed=3)
    b = agreement(m, HUMAN, n_boot=500, seed=3)
    c = agreement(m, HUMAN, n_boot=500, seed=4)
    pd.testing.assert_frame_equal(a, b)
    assert not a["conf.low"].equals(c["conf.low"]) or not a["conf.high"].equals(c["conf.high"])
    for metric in ("agreement", "mae", "ce"):
        r = est(a, metric)
        assert r["conf.low"] <= r["estimate"] <= r["conf.high"]


def test_vectorized_draws_equal_a_loop():
    rng = np.random.default_rng(0)
    n = 5
    idx = rng.integers(0, n, size=(50, n))
    counts = np.stack([np.bincount(row, minlength=n) for row in idx]).astype(float)
    h = HUMAN.to_numpy()
    m = np.array([MODEL])
    draws = _metric_draws(m, h, counts)
    for b, row in enumerate(idx):
        mm, hh = m[0, row], h[row]
        assert draws["agreement"][0, b] == pytest.approx(np.mean(classify(mm) == classify(hh)))
        assert draws["mae"][0, b] == pytest.approx(np.mean(np.abs(mm - hh)))
        pos, neg = mm[classify(hh) == "Yes"], mm[classify(hh) == "No"]
        if pos.size and neg.size:
            pairs = [(p > q) + 0.5 * (p == q) for p in pos for q in neg]
            assert draws["auc"][0, b] == pytest.approx(np.mean(pairs))
        else:
            assert np.isnan(draws["auc"][0, b])
    c = story_counts(np.random.default_rng(1), n, 20)
    assert c.shape == (20, n) and (c.sum(1) == n).all()


def test_personas_average_best_worst():
    p1 = MODEL  # agreement 0.8
    p2 = [0.45] * 5  # all ambiguous: agreement 0.2
    mp = pd.DataFrame({"item": ITEMS * 2, "persona": ["a"] * 5 + ["b"] * 5, "p_yes": p1 + p2, "model": "m"})
    out = agreement(mp, pd.DataFrame({"item": ITEMS, "p_yes": HUMAN.to_numpy()}), n_boot=100)
    assert est(out, "agreement", summary="persona", persona="b")["estimate"] == pytest.approx(0.2)
    assert est(out, "agreement", summary="average")["estimate"] == pytest.approx(0.5)
    assert est(out, "agreement", summary="best")["persona"] == "a"
    assert est(out, "agreement", summary="worst")["persona"] == "b"
    # mean P: [0.625, 0.375, 0.5, 0.375, 0.275] -> Yes, No, amb, No, No -> all but s3 agree
    assert est(out, "agreement", summary="mean_p")["estimate"] == pytest.approx(4 / 5)
    assert est(out, "mae", summary="average")["estimate"] == pytest.approx(
        (0.85 / 5 + np.mean(np.abs(0.45 - HUMAN.to_numpy()))) / 2)
