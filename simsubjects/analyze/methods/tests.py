"""Classical tests as tidy rows with broom's names, computed by scipy: the package's one Welch, one
paired, one one-sample t-test and one Pearson chi-square (issue 37: every caller - the built-in
studies, study files, sessions, garden_path - computes through these).

Each test is one function returning a dict (one row); `as_row` makes a one-row DataFrame.
Degenerate input follows one rule, `no_test` below (docs/conventions.md, "Degenerate samples"), as the
R twins (R/ttests.R, R/studyfile.R) do, where scipy would warn or return NaN without the estimate.
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


DEGENERATE = ("zero variance (every value the same, up to float rounding: R's t.test 'data are essentially "
              "constant'): the exact value, no test; p.value empty")
TOO_FEW = "fewer than 2 units: no test; p.value empty"
ONE_ANSWER = "all one answer (a table with one row or one column): no test"


def no_test(estimate: float, n: int, zero_spread: bool, df: float = math.nan) -> dict:
    """The one rule for a degenerate sample, for every test here and every caller (docs/conventions.md):
    - fewer than 2 values (in either sample): the estimate, everything else NaN;
    - no spread (`essentially_constant`: a standard error that is 0 or float rounding): the estimate is
      exact, so std.error = 0 and the interval is the point [estimate, estimate]; no statistic and no
      p-value (R's t.test stops there); `df` where its formula needs no variance (n - 1), else NaN.
    A chi-square table of one row or one column (all one answer) is no test either (`pearson_chi2`)."""
    row = {"estimate": estimate, **NAN_INFERENCE, "n": n}
    if zero_spread:
        row.update({"std.error": 0.0, "df": df, "conf.low": estimate, "conf.high": estimate})
    return row


def is_degenerate(row: dict) -> bool:
    """True for a row `no_test` made (no statistic where a test was due)."""
    return not math.isfinite(row.get("statistic", math.nan))


def one_sample_t(x, mu: float = 0.0, conf: float = 0.95) -> dict:
    """Student's one-sample t-test of mean(x) = mu (scipy.stats.ttest_1samp; R's t.test(x, mu = mu))."""
    x = np.asarray(x, float)
    n = len(x)
    est = x.mean() if n else math.nan
    if n < 2:
        return {"test": "One-sample t-test", **no_test(est, n, False)}
    se = x.std(ddof=1) / math.sqrt(n)
    if essentially_constant(se, est):
        return {"test": "One-sample t-test", **no_test(est, n, True, float(n - 1))}
    with quiet_rounding():
        res = stats.ttest_1samp(x, mu)
    ci = res.confidence_interval(conf)
    return {"test": "One-sample t-test", "estimate": est, "std.error": se, "statistic": float(res.statistic),
            "df": float(res.df), "p.value": float(res.pvalue), "conf.low": float(ci.low), "conf.high": float(ci.high),
            "n": n}


def paired_t(x, y, conf: float = 0.95) -> dict:
    """Paired t-test of mean(x - y) = 0 (scipy.stats.ttest_rel; R's t.test(x, y, paired = TRUE)); x and y
    aligned, without missing values. It is the one-sample test of the differences (scipy's ttest_rel is
    ttest_1samp(x - y)), so the degenerate rule is one_sample_t's."""
    d = np.asarray(x, float) - np.asarray(y, float)
    return {**one_sample_t(d, 0.0, conf), "test": "Paired t-test"}


def welch_t(x, y, conf: float = 0.95, n: int | None = None) -> dict:
    """Welch's two-sample t-test of mean(x) - mean(y) (scipy.stats.ttest_ind, equal_var=False; R's t.test).
    `n`: the units behind the estimate, nx + ny (docs/conventions.md, "What n counts"; it was min(nx, ny)
    in the built-ins' tables and nx + ny in the study files' before issue 40); callers name each side's
    count beside it (n_x/n_y, n_first/n_last, n_model/n_people)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    nx, ny = len(x), len(y)
    n = nx + ny if n is None else n
    est = (x.mean() - y.mean()) if nx and ny else math.nan
    if nx < 2 or ny < 2:
        return {"test": "Welch two-sample t-test", **no_test(est, n, False)}
    se = math.sqrt(x.var(ddof=1) / nx + y.var(ddof=1) / ny)
    if essentially_constant(se, x.mean(), y.mean()):  # Welch's df is 0/0 without spread: NaN
        return {"test": "Welch two-sample t-test", **no_test(est, n, True)}
    with quiet_rounding():
        res = stats.ttest_ind(x, y, equal_var=False)
    ci = res.confidence_interval(conf)
    return {"test": "Welch two-sample t-test", "estimate": est, "std.error": se, "statistic": float(res.statistic),
            "df": float(res.df), "p.value": float(res.pvalue), "conf.low": float(ci.low), "conf.high": float(ci.high),
            "n": n}


def pearson_chi2(table) -> dict | None:
    """Pearson's chi-square test of independence on a table of (possibly fractional) counts, rows and
    columns without any count dropped, with Cramér's V (scipy.stats.chi2_contingency, correction=False;
    R's chisq.test(correct = FALSE)); V by its formula, since scipy's `association` takes integer counts
    only. None for a table of one row or one column (`no_test`'s rule: all one answer, no test)."""
    t = np.asarray(table, float)
    t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
    if min(t.shape) < 2:
        return None
    chi2, p, dof, _ = stats.chi2_contingency(t, correction=False)
    v = math.sqrt(chi2 / (float(t.sum()) * (min(t.shape) - 1)))
    return {"test": "Pearson chi-square", "estimate": float(chi2), "std.error": math.nan, "statistic": float(chi2),
            "df": float(dof), "p.value": float(p), "conf.low": math.nan, "conf.high": math.nan,
            "effect_size": v, "effect_size_type": "cramers_v", "total": float(t.sum())}


def welch_test(x, y, conf: float = 0.95) -> pd.DataFrame:
    """Welch's two-sample t-test of mean(x) - mean(y), as R's t.test(x, y); one-row DataFrame, with Lakens'
    (2013, eq. 10) d_av (the difference over the mean of the two sds; NaN without a test), as R's welch_test."""
    row = welch_t(x, y, conf)
    x, y = np.asarray(x, float), np.asarray(y, float)
    sd = (x.std(ddof=1) + y.std(ddof=1)) / 2 if len(x) > 1 and len(y) > 1 else math.nan
    d = row["estimate"] / sd if math.isfinite(row.get("statistic", math.nan)) and sd > 0 else math.nan
    return as_row({**row, "n_x": len(x), "n_y": len(y), "effect_size": d, "effect_size_type": "cohen_d_av"})


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


PROPORTION_METHODS = {"wilson": "Wilson score", "beta": "Clopper-Pearson exact"}


def proportion_interval(values, method: str = "wilson", conf: float = 0.95) -> dict:
    """The share of 1s among people's 0/1 values (a selection, a check-all box, a choice) with its Wilson
    score or Clopper-Pearson interval (statsmodels' proportion_confint, method "wilson" or "beta"), not a
    t interval: a t interval over 0/1 values leaves [0, 1] and collapses to a point at 0 or n successes
    (issue 40). Model probabilities are not 0/1 values: they keep the t interval over subjects."""
    from statsmodels.stats.proportion import proportion_confint

    x = np.asarray(values, float)
    x = x[~np.isnan(x)]
    if not np.isin(x, (0.0, 1.0)).all():
        raise ValueError("proportion_interval takes 0/1 values (a person's selection); got other values")
    if method not in PROPORTION_METHODS:
        raise ValueError(f"proportion_interval: method is one of {', '.join(PROPORTION_METHODS)}")
    n, k = len(x), int(x.sum())
    row = {"test": f"Proportion, {PROPORTION_METHODS[method]} interval", "estimate": k / n if n else math.nan,
           "conf.low": math.nan, "conf.high": math.nan, "n": n}
    if n:
        lo, hi = proportion_confint(k, n, alpha=1 - conf, method=method)
        # float rounding puts Wilson's bound at 0 successes a hair above 0 (2.8e-17): the bounds hold the share
        row.update({"conf.low": float(min(max(lo, 0.0), k / n)), "conf.high": float(max(min(hi, 1.0), k / n))})
    return row


WILSON = "wilson"


def t_label(unit: str) -> str:
    """The `interval` column's name for a t interval over `unit`s ("t over subjects", "t over persons")."""
    return f"t over {unit}s"


def people_share_interval(values, row: dict, conf: float = 0.95) -> dict:
    """A people's row of a mean table (`row`: estimate, conf.low, conf.high, interval): where every person's
    value is 0 or 1 (a selection, a check-all box, one choice), its bounds become the Wilson score interval
    (proportion_interval) and `interval` says "wilson"; other values keep the t row as it is (issue 40,
    item 4). Call it for people's rows only: a model's probabilities are not 0/1 values."""
    x = np.asarray(values, float)
    x = x[~np.isnan(x)]
    if not len(x) or not np.isin(x, (0.0, 1.0)).all():
        return row
    ci = proportion_interval(x, WILSON, conf)
    return {**row, "conf.low": ci["conf.low"], "conf.high": ci["conf.high"], "interval": WILSON}
