"""Classical tests as tidy one-row DataFrames (columns: test, statistic, df, p, estimate, ci)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats


def _row(**kw) -> pd.DataFrame:
    return pd.DataFrame([kw])


def mean_se(x) -> dict:
    x = np.asarray(x, dtype=float)
    n = len(x)
    sd = x.std(ddof=1) if n > 1 else np.nan
    return {"mean": x.mean() if n else np.nan, "se": sd / np.sqrt(n) if n > 1 else np.nan, "sd": sd, "n": n}


def one_sample_t(x, mu: float = 0.0, conf: float = 0.95) -> dict:
    """Student's one-sample t-test of mean(x) = mu (the paper's test; scipy.stats.ttest_1samp)."""
    x = np.asarray(x, float)
    n = len(x)
    est = x.mean() if n else math.nan
    if n < 2:
        return dict(test="One-sample t-test", estimate=est, se=math.nan, statistic=math.nan, df=math.nan, p=math.nan,
                    ci_low=math.nan, ci_high=math.nan, n=n)
    se = x.std(ddof=1) / math.sqrt(n)
    t = (est - mu) / se if se > 0 else math.nan
    q = stats.t.ppf(0.5 + conf / 2, n - 1)
    return dict(test="One-sample t-test", estimate=est, se=se, statistic=t, df=float(n - 1),
                p=2 * stats.t.sf(abs(t), n - 1) if se > 0 else math.nan,
                ci_low=est - q * se, ci_high=est + q * se, n=n)


def welch_t(x, y, conf: float = 0.95) -> dict:
    """Welch's two-sample t-test of mean(x) - mean(y) (R's t.test(x, y))."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    nx, ny = len(x), len(y)
    est = (x.mean() - y.mean()) if nx and ny else math.nan
    if nx < 2 or ny < 2:
        return dict(test="Welch two-sample t-test", estimate=est, se=math.nan, statistic=math.nan, df=math.nan,
                    p=math.nan, ci_low=math.nan, ci_high=math.nan, n=min(nx, ny))
    vx, vy = x.var(ddof=1) / nx, y.var(ddof=1) / ny
    se = math.sqrt(vx + vy)
    if se == 0:
        return dict(test="Welch two-sample t-test", estimate=est, se=0.0, statistic=math.nan, df=math.nan,
                    p=math.nan, ci_low=est, ci_high=est, n=min(nx, ny))
    df = (vx + vy) ** 2 / (vx**2 / (nx - 1) + vy**2 / (ny - 1))
    t = est / se
    q = stats.t.ppf(0.5 + conf / 2, df)
    return dict(test="Welch two-sample t-test", estimate=est, se=se, statistic=t, df=df, p=2 * stats.t.sf(abs(t), df),
                ci_low=est - q * se, ci_high=est + q * se, n=min(nx, ny))


def welch_test(x, y, conf: float = 0.95) -> pd.DataFrame:
    """Welch's two-sample t-test of mean(x) - mean(y), as R's t.test(x, y); one-row DataFrame."""
    return _row(**welch_t(x, y, conf), n_x=len(x), n_y=len(y))


def one_sample_test(x, mu: float = 0.0, conf: float = 0.95) -> pd.DataFrame:
    """One-sample Student t-test of mean(x) against mu, as R's t.test(x, mu = mu); one-row DataFrame."""
    return _row(**one_sample_t(x, mu, conf))


def kruskal_test(groups: dict[str, np.ndarray]) -> pd.DataFrame:
    """Kruskal-Wallis rank-sum test that several groups share one distribution."""
    h, p = stats.kruskal(*groups.values())
    return _row(test="Kruskal-Wallis rank-sum test", statistic=h, df=float(len(groups) - 1), p=p,
                n=int(sum(len(g) for g in groups.values())))


def anova_test(groups: dict[str, np.ndarray]) -> pd.DataFrame:
    """One-way ANOVA F-test of equal group means."""
    f, p = stats.f_oneway(*groups.values())
    n = sum(len(g) for g in groups.values())
    return _row(test="One-way ANOVA", statistic=f, df=float(len(groups) - 1), df_resid=float(n - len(groups)),
                p=p, n=int(n))
