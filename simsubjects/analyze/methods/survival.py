"""Survival of ordinal 'levels' (Milgram's shock levels): Kaplan-Meier and the log-rank test, by statsmodels.

A subject who administered level L and refused L + 1 has the event at L + 1; one who completed the
last level, or whose run was cut short (--max-stages), is censored at L. This is the coding of the
R twins (survival::survfit / survdiff in R/milgram.R and analyze/check_r.py).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.duration.survfunc import SurvfuncRight, survdiff


def _times(levels, censored, max_level: int) -> tuple[np.ndarray, np.ndarray]:
    levels, censored = np.asarray(levels, int), np.asarray(censored, bool)
    event = ~censored & (levels < max_level)
    return np.where(event, levels + 1, levels), event


def kaplan_meier(levels, censored, max_level: int) -> pd.DataFrame:
    """Share still obeying at each level 0..max_level (S(L) = P(administered level L)), with the
    number at risk and the refusals at each level (statsmodels.SurvfuncRight)."""
    time, event = _times(levels, censored, max_level)
    grid = np.arange(1, max_level + 1)
    at_risk = (time[None, :] >= grid[:, None]).sum(1)
    events = ((time[None, :] == grid[:, None]) & event[None, :]).sum(1)
    share = np.ones(len(grid))
    if event.any():
        sf = SurvfuncRight(time, event.astype(int))
        # the step function at each level: the estimate after the last event time <= level
        idx = np.searchsorted(sf.surv_times, grid, side="right") - 1
        share = np.where(idx >= 0, sf.surv_prob[np.maximum(idx, 0)], 1.0)
    rows = {"level": np.r_[0, grid], "at_risk": np.r_[len(time), at_risk], "events": np.r_[0, events],
            "share_obeying": np.r_[1.0, share]}
    return pd.DataFrame(rows).astype({"level": int, "at_risk": int, "events": int})


def logrank_test(a_levels, a_censored, b_levels, b_censored, max_level: int) -> dict:
    """Log-rank (Mantel-Cox) chi-square test, 1 df, of two survival curves (statsmodels.survdiff).

    `estimate`: observed - expected events of the first group, the direction of the difference
    (statsmodels does not return it; counted here from the same risk sets).
    """
    ta, ea = _times(a_levels, a_censored, max_level)
    tb, eb = _times(b_levels, b_censored, max_level)
    time, event = np.r_[ta, tb], np.r_[ea, eb]
    group = np.r_[np.zeros(len(ta), int), np.ones(len(tb), int)]
    row = {"test": "Log-rank (Mantel-Cox) test", "statistic": np.nan, "df": 1.0, "p.value": np.nan,
           "estimate": np.nan, "estimate_label": "observed - expected events (model)"}
    if not event.any():
        return row
    chi2, p = survdiff(time, event.astype(int), group)
    expected = 0.0
    for t in np.unique(time[event]):
        risk = time >= t
        expected += event[time == t].sum() * risk[group == 0].sum() / risk.sum()
    return {**row, "statistic": float(chi2), "p.value": float(p), "estimate": float(ea.sum() - expected)}


SMALL_GROUP = 10  # below this many subjects in a group, the log-rank chi-square's asymptotics are not trusted
MAX_EXACT = 50_000  # relabelings enumerated exactly up to this many; beyond, a seeded Monte Carlo sample


def _logrank_chi2(time: np.ndarray, event: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Log-rank chi-square for each row of Z (R x n 0/1 group labels), vectorized over the relabelings.
    Written here because statsmodels' survdiff takes one labeling per call (seconds for 10^4 of them)."""
    times = np.unique(time[event])
    risk = (time[None, :] >= times[:, None]).astype(float)  # T x n
    died = ((time[None, :] == times[:, None]) & event[None, :]).astype(float)
    n_t, d_t = risk.sum(1), died.sum(1)
    n_a, o_a = Z @ risk.T, Z @ died.T  # R x T
    e_a = d_t * n_a / n_t
    with np.errstate(invalid="ignore", divide="ignore"):
        v = np.where(n_t > 1, d_t * (n_a / n_t) * (1 - n_a / n_t) * (n_t - d_t) / (n_t - 1), 0.0)
    var = v.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(var > 0, (o_a - e_a).sum(1) ** 2 / var, 0.0)


def logrank_permutation(a_levels, a_censored, b_levels, b_censored, max_level: int, seed: int = 0) -> dict:
    """Permutation log-rank test: the share of relabelings of the pooled subjects (group sizes kept) whose
    log-rank chi-square is at least the observed one. Exact (every relabeling) up to MAX_EXACT of them,
    else 10^4 seeded draws. With one model subject against Milgram's 40 the asymptotic p of 2.5e-10 is
    an artefact: the smallest p any data can give is 1/41 = 0.024."""
    from itertools import combinations
    from math import comb

    ta, ea = _times(a_levels, a_censored, max_level)
    tb, eb = _times(b_levels, b_censored, max_level)
    time, event = np.r_[ta, tb], np.r_[ea, eb]
    n, k = len(time), len(ta)
    row = {"test": "Log-rank permutation test", "statistic": np.nan, "df": np.nan, "p.value": np.nan,
           "estimate": np.nan, "estimate_label": "", "method": ""}
    if not event.any() or k == 0 or k == n:
        return row
    obs = _logrank_chi2(time, event, np.r_[np.ones(k), np.zeros(n - k)][None, :])[0]
    total = comb(n, k)
    if total <= MAX_EXACT:
        Z = np.zeros((total, n))
        for r, idx in enumerate(combinations(range(n), k)):
            Z[r, list(idx)] = 1.0
        method = f"exact: all {total} relabelings"
    else:
        rng = np.random.default_rng(seed)
        Z = np.zeros((10_000, n))
        for r in range(len(Z)):
            Z[r, rng.choice(n, k, replace=False)] = 1.0
        method = f"Monte Carlo: 10000 seeded relabelings of {total}"
    perm = _logrank_chi2(time, event, Z)
    at_least = int(np.sum(perm >= obs * (1 - 1e-12)))
    # exact: the share of all relabelings (the observed one among them); Monte Carlo: (b + 1) / (R + 1),
    # counting the observed labeling as one of the draws, so p is never 0 and the test keeps its size
    # (Phipson & Smyth 2010, "Permutation p-values should never be zero")
    p = at_least / len(Z) if total <= MAX_EXACT else monte_carlo_p(at_least, len(Z))
    return {**row, "statistic": float(obs), "p.value": float(p), "method": method}


def monte_carlo_p(b: int, replicates: int) -> float:
    """The Monte-Carlo permutation p-value (b + 1) / (R + 1): b of R random relabelings at least as extreme
    as the observed one (Phipson & Smyth 2010). statsmodels and scipy.stats.permutation_test compute it
    inside their own resampling loops only; the log-rank statistic here is vectorized over relabelings."""
    return (b + 1) / (replicates + 1)
