"""Exact power of an original test under a model's population, and HumanStudy-Bench's PAS.

"Significant at N" (docs/bench.md): the probability that a study of N people drawn from the model's
population (the mixture over the design's subjects), analyzed with the original test at alpha (two-sided),
rejects H0 AND its estimate has the original's sign. Unit: one finding at one N.

- Binary outcome, two groups: an exact sum over the two binomials (x1 ~ Bin(n1, p1), x2 ~ Bin(n2, p2)) of
  the indicator that the test on the table (x1, n1 - x1; x2, n2 - x2) rejects in the original direction.
  No library computes this (statsmodels and pingouin give the normal approximation of a z test), hence the
  hand-written sum. The sum runs over the counts whose probability is above 1e-17 (scipy's binom.ppf
  bounds); the mass left out is below 4e-17, far under the 1e-12 the tests hold it to.
- Binary outcome, one sample: the same sum over one binomial (binomial test or z test against p0).
- Multinomial outcome (k options, chi-square of the two groups' k x 2 table, or goodness of fit): no
  exact sum at the sizes of these studies (C(n+k-1, k-1) tables per group); the noncentral chi-square
  with lambda = N w^2 (Cohen 1988, ch. 7; statsmodels GofChisquarePower) is used. It is the chi-square
  test's own large-sample distribution under the alternative; the test has no direction.
- Means (likert or numeric scores): statsmodels' noncentral t (TTestIndPower / TTestPower) at alpha/2 one
  sided in the original direction, with d from the model's mixture mean and variance per group. The
  scores are discrete, so the t statistic's noncentral t law holds by the central limit theorem, not
  exactly; for the Ns of these studies (tens to thousands) the difference is small.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

TAIL = 1e-17  # probability below which binomial counts are left out of the exact sums


def _support(n: int, p: float) -> np.ndarray:
    lo = int(stats.binom.ppf(TAIL, n, p)) if 0 < p < 1 else (0 if p == 0 else n)
    hi = int(stats.binom.isf(TAIL, n, p)) if 0 < p < 1 else (0 if p == 0 else n)
    return np.arange(max(0, lo - 1), min(n, hi + 1) + 1)


def _z_two_props(x1, n1, x2, n2) -> tuple[np.ndarray, np.ndarray]:
    """Pooled two-proportion z and its estimate p1 - p2 on a grid (equal to Pearson's chi-square without
    continuity correction: chi2 = z^2)."""
    p1, p2 = x1 / n1, x2 / n2
    pool = (x1 + x2) / (n1 + n2)
    se = np.sqrt(pool * (1 - pool) * (1 / n1 + 1 / n2))
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(se > 0, (p1 - p2) / se, 0.0)
    return z, p1 - p2


def _fisher_reject(x1, n1, x2, n2, alpha: float) -> np.ndarray:
    """Fisher's exact test (two-sided, scipy's rule: tables no likelier than the observed, relative
    tolerance 1e-7) on every (x1, x2) of the grid, by conditioning on each margin m = x1 + x2."""
    out = np.zeros(np.broadcast(x1, x2).shape, bool)
    X1, X2 = np.broadcast_arrays(x1, x2)
    M = X1 + X2
    for m in np.unique(M):
        lo, hi = max(0, m - n2), min(m, n1)
        k = np.arange(lo, hi + 1)
        pmf = stats.hypergeom.pmf(k, n1 + n2, m, n1)
        order = np.argsort(pmf, kind="stable")
        cum = np.cumsum(pmf[order])
        srt = pmf[order]
        # p-value of k: sum of pmf over tables with pmf <= pmf(k) (1 + 1e-7)
        idx = np.searchsorted(srt, pmf * (1 + 1e-7), side="right") - 1
        p = np.where(idx >= 0, cum[np.clip(idx, 0, None)], 0.0)
        sel = M == m
        out[sel] = p[X1[sel] - lo] <= alpha
    return out


def power_two_proportions(p1: float, p2: float, n1: int, n2: int, test: str = "chi2", alpha: float = 0.05,
                          direction: int = 1) -> float:
    """Exact probability that the original test (chi2 | z_proportions: Pearson chi-square without
    continuity correction; fisher: Fisher's exact) rejects at `alpha` two-sided with the sign of p1 - p2
    equal to `direction` (+1 or -1; 0 counts any rejection), x1 ~ Bin(n1, p1), x2 ~ Bin(n2, p2)
    independent. Unit: one finding at group sizes (n1, n2)."""
    a, b = _support(int(n1), p1), _support(int(n2), p2)
    f1, f2 = stats.binom.pmf(a, n1, p1), stats.binom.pmf(b, n2, p2)
    x1, x2 = a[:, None], b[None, :]
    z, est = _z_two_props(x1, n1, x2, n2)
    if test == "fisher":
        reject = _fisher_reject(x1, int(n1), x2, int(n2), alpha)
    elif test in ("chi2", "z_proportions", "z"):
        reject = z * z > stats.chi2.isf(alpha, 1)
    else:
        raise ValueError(f"power_two_proportions: unknown test {test!r}")
    if direction:
        reject = reject & (np.sign(est) == np.sign(direction))
    return float(f1 @ (reject.astype(float)) @ f2)


def power_one_proportion(p: float, n: int, p0: float = 0.5, test: str = "binomial", alpha: float = 0.05,
                         direction: int = 1) -> float:
    """Exact probability that a one-sample test of x ~ Bin(n, p) against p0 rejects at `alpha` two-sided
    in `direction` (sign of x/n - p0). binomial: scipy.stats.binomtest's two-sided rule (outcomes no
    likelier under p0 than the observed); z: the score test (x/n - p0)/sqrt(p0(1-p0)/n)."""
    n = int(n)
    x = np.arange(n + 1)
    if test == "binomial":
        pmf0 = stats.binom.pmf(x, n, p0)
        order = np.argsort(pmf0, kind="stable")
        cum = np.cumsum(pmf0[order])
        idx = np.searchsorted(pmf0[order], pmf0 * (1 + 1e-7), side="right") - 1
        pval = np.minimum(1.0, np.where(idx >= 0, cum[np.clip(idx, 0, None)], 0.0))
        reject = pval <= alpha
    elif test in ("z", "z_proportions", "chi2"):
        z = (x / n - p0) / math.sqrt(p0 * (1 - p0) / n)
        reject = z * z > stats.chi2.isf(alpha, 1)
    else:
        raise ValueError(f"power_one_proportion: unknown test {test!r}")
    if direction:
        reject = reject & (np.sign(x / n - p0) == np.sign(direction))
    return float(np.sum(stats.binom.pmf(x, n, p)[reject]))


def power_means(d: float, n1: int, n2: int | None = None, alpha: float = 0.05, direction: int = 1) -> float:
    """Power of a two-sided t test at `alpha` rejecting in `direction`, by the noncentral t (statsmodels):
    two groups (n1, n2; Student's t df = n1 + n2 - 2) or one sample / paired (n2 None; df = n1 - 1).
    d: the model's standardized effect (mixture means over the pooled mixture sd)."""
    from statsmodels.stats.power import TTestIndPower, TTestPower

    if not math.isfinite(d):
        return 1.0 if direction == 0 or np.sign(d) == np.sign(direction) else 0.0
    signed = d * (np.sign(direction) if direction else 1.0)
    if n2:
        up = TTestIndPower().power(effect_size=signed, nobs1=n1, alpha=alpha / 2, ratio=n2 / n1, alternative="larger")
        down = TTestIndPower().power(effect_size=-signed, nobs1=n1, alpha=alpha / 2, ratio=n2 / n1,
                                     alternative="larger")
    else:
        up = TTestPower().power(effect_size=signed, nobs=n1, alpha=alpha / 2, alternative="larger")
        down = TTestPower().power(effect_size=-signed, nobs=n1, alpha=alpha / 2, alternative="larger")
    return float(up if direction else up + down)


def power_chi2_w(w: float, n: int, k_df: int, alpha: float = 0.05) -> float:
    """Power of a chi-square test with `k_df` degrees of freedom at effect w and N people: the noncentral
    chi-square with lambda = N w^2 (Cohen 1988, ch. 7), scipy.stats.ncx2. No direction."""
    crit = stats.chi2.isf(alpha, k_df)
    return float(stats.ncx2.sf(crit, k_df, n * w * w)) if w > 0 else float(alpha)


def power_correlation(r: float, n: int, alpha: float = 0.05, direction: int = 1) -> float:
    """Power of the test of a Pearson correlation, by Fisher's z: atanh(r) sqrt(n - 3) against the normal
    critical value (the approximation R's pwr::pwr.r.test also uses), in `direction`."""
    z = math.atanh(max(-1 + 1e-12, min(1 - 1e-12, r))) * math.sqrt(n - 3)
    c = stats.norm.isf(alpha / 2)
    up, down = stats.norm.sf(c - z), stats.norm.cdf(-c - z)
    return float(up if direction > 0 else down if direction < 0 else up + down)


# -- HumanStudy-Bench's PAS --------------------------------------------------------------------------

def bf10_bic(chi2_1df: float, n: float) -> float:
    """Bayes factor for an effect from a 1-df Wald statistic (t^2, z^2 or chi^2) and N, by the BIC
    (unit-information prior) approximation BF10 = exp((chi2 - ln n) / 2) (Wagenmakers 2007, eq. 10).
    HumanStudy-Bench derives its posteriors from Bayes factors of the test statistics without fixing the
    prior in its docs; this is the one approximation that serves every test type here alike."""
    return float(math.exp(min(700.0, (chi2_1df - math.log(n)) / 2)))


def posterior_effect(chi2_1df: float, n: float) -> float:
    """P(effect | data) at prior odds 1: BF10 / (1 + BF10)."""
    bf = bf10_bic(chi2_1df, n)
    return float(bf / (1 + bf))


def pas(pi_human: float, sign_human: float, pi_agent: float, sign_agent: float) -> float:
    """HumanStudy-Bench's per-test PAS, three states (docs/ECS_vs_PAS_explanation.md):
    pi_h+ pi_a+ + pi_h- pi_a- + pi_h0 pi_a0, where an effect's posterior goes to the sign of its
    estimate. With one test per finding, the finding's PAS is this value (PAS_ECS_math.md, K = 1)."""
    hp, hm = (pi_human, 0.0) if sign_human >= 0 else (0.0, pi_human)
    ap, am = (pi_agent, 0.0) if sign_agent >= 0 else (0.0, pi_agent)
    return float(hp * ap + hm * am + (1 - pi_human) * (1 - pi_agent))


def pas_pool(values, n_eff) -> float:
    """Several tests' PAS into one (PAS_ECS_math.md, PAS aggregation): r_i = 2 PAS_i - 1, Fisher z
    (clamped at 1e-6), n_eff-weighted mean, back to PAS; a single test is itself."""
    v = np.asarray(values, float)
    w = np.asarray(n_eff, float)
    if len(v) == 0:
        return 0.5
    if len(v) == 1:
        return float(v[0])
    z = np.arctanh(np.clip(2 * v - 1, -1 + 1e-6, 1 - 1e-6))
    zbar = np.sum(w * z) / np.sum(w) if np.sum(w) > 0 else np.mean(z)
    return float((math.tanh(zbar) + 1) / 2)
