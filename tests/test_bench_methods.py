"""The bench's statistics (analyze/methods/effects.py, power.py) against direct recomputations.

Units: an effect or a power is one finding's; an across-finding statistic's unit is the finding."""

import math

import numpy as np
import pytest
from scipy import stats

from simsubjects.analyze.methods import effects as ef
from simsubjects.analyze.methods import power as pw


def _direct_two_binomials(p1, p2, n1, n2, reject):
    """The written-out double sum over every table (no truncation)."""
    total = 0.0
    for x1 in range(n1 + 1):
        f1 = stats.binom.pmf(x1, n1, p1)
        for x2 in range(n2 + 1):
            if reject(x1, x2):
                total += f1 * stats.binom.pmf(x2, n2, p2)
    return total


def _chi2_rejects(n1, n2, direction):
    def rej(x1, x2):
        table = np.array([[x1, n1 - x1], [x2, n2 - x2]])
        if table.sum(0).min() == 0:
            return False
        chi2 = stats.chi2_contingency(table, correction=False)[0]
        return stats.chi2.sf(chi2, 1) <= 0.05 and np.sign(x1 / n1 - x2 / n2) == direction
    return rej


@pytest.mark.parametrize("p1,p2,n1,n2,direction", [(0.62, 0.41, 23, 19, 1), (0.30, 0.35, 17, 25, -1),
                                                    (0.5, 0.5, 12, 12, 1)])
def test_exact_power_two_binomials_equals_direct_sum(p1, p2, n1, n2, direction):
    got = pw.power_two_proportions(p1, p2, n1, n2, test="chi2", direction=direction)
    want = _direct_two_binomials(p1, p2, n1, n2, _chi2_rejects(n1, n2, direction))
    assert abs(got - want) < 1e-12
    assert 0 < got < 1


def test_exact_power_fisher_equals_direct_sum():
    p1, p2, n1, n2 = 0.7, 0.35, 14, 16

    def rej(x1, x2):
        p = stats.fisher_exact([[x1, n1 - x1], [x2, n2 - x2]]).pvalue
        return p <= 0.05 and x1 / n1 > x2 / n2
    got = pw.power_two_proportions(p1, p2, n1, n2, test="fisher", direction=1)
    assert abs(got - _direct_two_binomials(p1, p2, n1, n2, rej)) < 1e-12


def test_exact_power_one_sample_binomial_equals_direct_sum():
    p, n, p0 = 0.63, 40, 0.5
    want = sum(stats.binom.pmf(x, n, p) for x in range(n + 1)
               if stats.binomtest(x, n, p0).pvalue <= 0.05 and x / n > p0)
    assert abs(pw.power_one_proportion(p, n, p0, "binomial", direction=1) - want) < 1e-12


def test_exact_power_large_n_matches_normal_theory():
    # at replication sizes the truncated exact sum and the normal approximation of the z test agree closely
    from statsmodels.stats.power import NormalIndPower
    p1, p2, n = 0.55, 0.50, 3000
    exact = pw.power_two_proportions(p1, p2, n, n, direction=1)
    approx = NormalIndPower().power(ef.cohens_h(p1, p2), nobs1=n, alpha=0.025, ratio=1, alternative="larger")
    assert abs(exact - approx) < 0.01


def test_power_means_is_statsmodels_noncentral_t():
    d, n1, n2 = 0.4, 30, 35
    df = n1 + n2 - 2
    nc = d * math.sqrt(n1 * n2 / (n1 + n2))
    want = stats.nct.sf(stats.t.isf(0.025, df), df, nc)
    assert abs(pw.power_means(d, n1, n2, direction=1) - want) < 1e-9
    want1 = stats.nct.sf(stats.t.isf(0.025, 24), 24, 0.3 * 5)
    assert abs(pw.power_means(0.3, 25, direction=1) - want1) < 1e-9


def test_power_chi2_w_is_noncentral_chi2():
    assert abs(pw.power_chi2_w(0.3, 100, 2) - stats.ncx2.sf(stats.chi2.isf(0.05, 2), 2, 9.0)) < 1e-12


def test_conversions_recomputed():
    assert ef.log_odds_ratio(0.6, 0.4) == pytest.approx(math.log(1.5 / (2 / 3)))
    assert ef.cohens_h(0.6, 0.4) == pytest.approx(2 * math.asin(math.sqrt(0.6)) - 2 * math.asin(math.sqrt(0.4)))
    assert ef.d_to_r(ef.r_to_d(0.3)) == pytest.approx(0.3)
    assert ef.logor_to_d(ef.d_to_logor(0.7)) == pytest.approx(0.7)
    assert ef.to_d(1.0, "log_or") == pytest.approx(math.sqrt(3) / math.pi)
    assert ef.fisher_z(0.5) == pytest.approx(np.arctanh(0.5))
    joint = np.array([[0.3, 0.2], [0.1, 0.4]])
    chi2 = stats.chi2_contingency(joint * 1000, correction=False)[0]
    assert ef.cohens_w_table(joint) == pytest.approx(math.sqrt(chi2 / 1000))
    x, y = np.array([3.0, 4, 5, 6]), np.array([1.0, 2, 2, 4])
    sp = math.sqrt(((len(x) - 1) * x.var(ddof=1) + (len(y) - 1) * y.var(ddof=1)) / (len(x) + len(y) - 2))
    assert ef.cohens_d(x.mean(), x.var(ddof=1), y.mean(), y.var(ddof=1), 4, 4) == pytest.approx((x.mean() - y.mean()) / sp)


def test_across_statistics_recomputed():
    rng = np.random.default_rng(1)
    x = rng.normal(size=30)
    y = 0.6 * x + rng.normal(scale=0.5, size=30)
    se = np.full(30, 0.2)
    assert ef.direction_agreement(x, y) == pytest.approx(np.mean(np.sign(x) == np.sign(y)))
    b = ef.pearson_boot(x, y, n_boot=500)
    assert b["estimate"] == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert b["conf.low"] < b["estimate"] < b["conf.high"]
    ccc = 2 * np.cov(x, y, ddof=0)[0, 1] / (x.var() + y.var() + (x.mean() - y.mean()) ** 2)
    assert ef.lins_ccc(x, y) == pytest.approx(ccc)
    rel = (y.var(ddof=1) - 0.04) / y.var(ddof=1)
    dis = ef.disattenuated_r(x, y, se)
    assert dis["reliability"] == pytest.approx(rel)
    assert dis["estimate"] == pytest.approx(np.corrcoef(x, y)[0, 1] / math.sqrt(rel))
    fp = ef.false_positive_rate([0.9, 0.2, 0.5, 0.1], [True, False, False, None])
    assert fp == {"estimate": pytest.approx(0.35), "n": 2}


def test_pas_and_pooling():
    assert pw.pas(0.9, 1, 0.8, 1) == pytest.approx(0.9 * 0.8 + 0.1 * 0.2)
    assert pw.pas(0.9, 1, 0.8, -1) == pytest.approx(0.1 * 0.2)
    assert pw.posterior_effect(16.0, 100) == pytest.approx(1 / (1 + math.exp(-(16 - math.log(100)) / 2)))
    v, w = [0.8, 0.6], [10, 30]
    z = np.arctanh(2 * np.array(v) - 1)
    assert pw.pas_pool(v, w) == pytest.approx((math.tanh((10 * z[0] + 30 * z[1]) / 40) + 1) / 2)
