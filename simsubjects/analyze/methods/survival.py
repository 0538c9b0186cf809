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
