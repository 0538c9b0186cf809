"""Classical tests as tidy rows with broom's names, computed by scipy.

Each test is one function returning a dict (one row); `as_row` makes a one-row DataFrame.
Degenerate input (fewer than two values, or no spread) gives the estimate with NaN inference, as
the R twins (R/ttests.R) do, where scipy would warn or return NaN without the estimate.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
import pandas as pd
from scipy import stats

NAN_INFERENCE = {"std.error": math.nan, "statistic": math.nan, "df": math.nan, "p.value": math.nan,
                 "conf.low": math.nan, "conf.high": math.nan}


# R's t.test stops with "data are essentially constant" when the standard error is below 10 machine
# epsilons of the mean: the spread is float rounding (a model's P = 0.9999999 for every name pair),
# and scipy warns "Precision loss occurred in moment calculation" there. Such a sample has no spread.
EPS10 = 10 * np.finfo(float).eps


def essentially_constant(se: float, *means: float) -> bool:
    """True when `se` is 0 or float rounding beside the means (R's t.test criterion)."""
    return se == 0 or se < EPS10 * max(abs(m) for m in means)


@contextlib.contextmanager
def quiet_rounding():
    """scipy's precision-loss warning, silenced where the test is sound: scipy checks each sample on
    its own, so one sample without spread beside one with spread (a valid Welch test) warns too; a
    sample essentially constant overall never reaches scipy (essentially_constant above)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred in moment calculation", RuntimeWarning)
        yield


def as_row(row: dict) -> pd.DataFrame:
    return pd.DataFrame([row])


def mean_se(x) -> dict:
    """Mean, standard error, standard deviation and n of a sample (SE and SD NaN below two values)."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    sd = x.std(ddof=1) if n > 1 else np.nan
    return {"mean": x.mean() if n else np.nan, "std.error": sd / np.sqrt(n) if n > 1 else np.nan, "sd": sd, "n": n}


def one_sample_t(x, mu: float = 0.0, conf: float = 0.95) -> dict:
    """Student's one-sample t-test of mean(x) = mu (scipy.stats.ttest_1samp; R's t.test(x, mu = mu))."""
    x = np.asarray(x, float)
    n = len(x)
    est = x.mean() if n else math.nan
    row = {"test": "One-sample t-test", "estimate": est, **NAN_INFERENCE, "n": n}
    if n < 2:
        return row
    se = x.std(ddof=1) / math.sqrt(n)
    if essentially_constant(se, est):
        return {**row, "std.error": 0.0, "df": float(n - 1), "conf.low": est, "conf.high": est}
    with quiet_rounding():
        res = stats.ttest_1samp(x, mu)
    ci = res.confidence_interval(conf)
    return {**row, "std.error": se, "statistic": float(res.statistic), "df": float(res.df),
            "p.value": float(res.pvalue), "conf.low": float(ci.low), "conf.high": float(ci.high)}


def welch_t(x, y, conf: float = 0.95) -> dict:
    """Welch's two-sample t-test of mean(x) - mean(y) (scipy.stats.ttest_ind, equal_var=False; R's t.test)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    nx, ny = len(x), len(y)
    est = (x.mean() - y.mean()) if nx and ny else math.nan
    row = {"test": "Welch two-sample t-test", "estimate": est, **NAN_INFERENCE, "n": min(nx, ny)}
    if nx < 2 or ny < 2:
        return row
    se = math.sqrt(x.var(ddof=1) / nx + y.var(ddof=1) / ny)
    if essentially_constant(se, x.mean(), y.mean()):
        return {**row, "std.error": 0.0, "conf.low": est, "conf.high": est}
    with quiet_rounding():
        res = stats.ttest_ind(x, y, equal_var=False)
    ci = res.confidence_interval(conf)
    return {**row, "std.error": se, "statistic": float(res.statistic), "df": float(res.df),
            "p.value": float(res.pvalue), "conf.low": float(ci.low), "conf.high": float(ci.high)}


def welch_test(x, y, conf: float = 0.95) -> pd.DataFrame:
    """Welch's two-sample t-test of mean(x) - mean(y), as R's t.test(x, y); one-row DataFrame."""
    return as_row({**welch_t(x, y, conf), "n_x": len(x), "n_y": len(y)})


def one_sample_test(x, mu: float = 0.0, conf: float = 0.95) -> pd.DataFrame:
    """One-sample Student t-test of mean(x) against mu, as R's t.test(x, mu = mu); one-row DataFrame."""
    return as_row(one_sample_t(x, mu, conf))


def kruskal_test(groups: dict[str, np.ndarray]) -> pd.DataFrame:
    """Kruskal-Wallis rank-sum test that several groups share one distribution (scipy.stats.kruskal)."""
    h, p = stats.kruskal(*groups.values())
    return as_row({"test": "Kruskal-Wallis rank-sum test", "statistic": h, "df": float(len(groups) - 1),
                   "p.value": p, "n": int(sum(len(g) for g in groups.values()))})


def anova_test(groups: dict[str, np.ndarray]) -> pd.DataFrame:
    """One-way ANOVA F-test of equal group means (scipy.stats.f_oneway)."""
    f, p = stats.f_oneway(*groups.values())
    n = sum(len(g) for g in groups.values())
    return as_row({"test": "One-way ANOVA", "statistic": f, "df": float(len(groups) - 1),
                   "df_resid": float(n - len(groups)), "p.value": p, "n": int(n)})


def pearson_r(x, y, conf: float = 0.95) -> dict:
    """Pearson's r with its t-test p-value and Fisher-z confidence interval (scipy.stats.pearsonr)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"test": "Pearson correlation", "estimate": math.nan, "statistic": math.nan, "df": float(n - 2),
                "p.value": math.nan, "conf.low": math.nan, "conf.high": math.nan, "n": n}
    res = stats.pearsonr(x, y)
    r = float(res.statistic)
    ci = res.confidence_interval(conf) if n > 3 else None
    t = r * math.sqrt((n - 2) / (1 - r**2)) if abs(r) < 1 else math.copysign(math.inf, r)
    return {"test": "Pearson correlation", "estimate": r, "statistic": t, "df": float(n - 2),
            "p.value": float(res.pvalue), "conf.low": ci.low if ci else math.nan,
            "conf.high": ci.high if ci else math.nan, "n": n}
