"""Issue 40, item 4 (the parts in analyze/methods): proportions of people's 0/1 values get a Wilson or
Clopper-Pearson interval (unit: a person; the share of 1s), and a Monte-Carlo permutation p-value is
(b + 1) / (R + 1), never 0."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from simsubjects.analyze.methods.survival import MAX_EXACT, logrank_permutation, monte_carlo_p
from simsubjects.analyze.methods.tests import proportion_interval


@pytest.mark.parametrize("k, n", [(0, 12), (3, 12), (12, 12), (41, 100)])
def test_proportion_intervals_against_direct_computations(k, n):
    values = [1.0] * k + [0.0] * (n - k)
    w = proportion_interval(values, "wilson")
    z = stats.norm.ppf(0.975)
    p = k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert w["estimate"] == p and w["n"] == n
    assert (w["conf.low"], w["conf.high"]) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert 0 <= w["conf.low"] <= p <= w["conf.high"] <= 1 and w["conf.high"] > w["conf.low"]  # never a point
    cp = proportion_interval(values, "beta")
    ref = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
    assert (cp["conf.low"], cp["conf.high"]) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_proportion_interval_refuses_values_that_are_not_0_or_1():
    with pytest.raises(ValueError, match="0/1 values"):
        proportion_interval([0.2, 1.0])


def test_monte_carlo_permutation_p_is_never_zero():
    assert monte_carlo_p(0, 9999) == pytest.approx(1e-4)
    # two groups far apart, too many relabelings to enumerate: the Monte-Carlo branch
    a = np.full(30, 5)
    b = np.full(30, 25)
    assert math.comb(60, 30) > MAX_EXACT
    row = logrank_permutation(a, np.zeros(30, bool), b, np.zeros(30, bool), max_level=30, seed=1)
    assert "Monte Carlo" in row["method"] and row["p.value"] == pytest.approx(1 / 10_001)
