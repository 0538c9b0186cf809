"""Design-based tests with survey weights, as R's survey package computes them (public: the study
file's tests, people's weighted rows beside a model's, call these; moved here from
studyfile/analyses.py by issue 37).

The fit is conjoint.weighted_fit (weighted least squares with survey's linearization sandwich, n/(n-1)
times the centered sum of squared score totals, clustered by unit); statsmodels' WLS has no
survey-style linearization variance for svydesign(ids = ~1, weights = ~w), so the package's own,
peer-checked against survey::svyglm in tests/test_conjoint.py, is used.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from .conjoint import weighted_fit


def svy_t(y: np.ndarray, X: np.ndarray, w: np.ndarray, df: int, contrast_sign: float = 1.0) -> dict:
    """Design-based t of the last coefficient of the weighted regression y ~ X, as survey::svyttest on
    svydesign(ids = ~1, weights = ~w): t on `df` = degf(design) - (columns - 1). Broom's names."""
    fit = weighted_fit(X, [None] * X.shape[1], y, w, None, "cregg")
    est, se = float(fit.coef[-1]) * contrast_sign, float(np.sqrt(fit.vcov[-1, -1]))
    t = est / se if se > 0 else math.nan
    q = stats.t.ppf(0.975, df)
    return {"estimate": est, "std.error": se, "statistic": t, "df": float(df),
            "p.value": float(2 * stats.t.sf(abs(t), df)) if se > 0 else math.nan,
            "conf.low": est - q * se, "conf.high": est + q * se}


def svy_mean_t(x: np.ndarray, w: np.ndarray) -> dict:
    """One-sample design-based t of the weighted mean of x against 0: survey::svymean's SE and svyttest's
    df, degf(design) - 1 = n - 2 (survey's choice for the one-sample test, one below svymean's)."""
    return svy_t(x, np.ones((len(x), 1)), w, len(x) - 2)


def svy_ols(y: np.ndarray, X: np.ndarray, w: np.ndarray, cluster: np.ndarray) -> pd.DataFrame:
    """Weighted OLS with survey's linearization clustered by `cluster` (as survey::svyglm on
    svydesign(ids = ~cluster, weights = ~w)); t on svyglm's residual df, G - p. One row per column of X."""
    fit = weighted_fit(X, [None] * X.shape[1], y, w, cluster, "cregg")
    df = float(len(np.unique(cluster)) - X.shape[1])
    se = np.sqrt(np.diag(fit.vcov))
    t = fit.coef / se
    q = stats.t.ppf(0.975, df)
    return pd.DataFrame({"estimate": fit.coef, "std.error": se, "statistic": t, "df": df,
                         "p.value": 2 * stats.t.sf(np.abs(t), df), "conf.low": fit.coef - q * se,
                         "conf.high": fit.coef + q * se})
