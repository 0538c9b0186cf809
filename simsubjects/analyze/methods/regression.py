"""OLS with cluster-robust standard errors: CR0, CR1 ("stata"), cregg's and CR2 (see studies/moca/analysis.py's
module docstring for the formulas). CR0/CR1 come from statsmodels' cluster sandwich; CR2 is
hand-written because no maintained Python library computes estimatr's CR2 with its Satterthwaite df.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ...errors import UserError

SE_TYPES = ("CR0", "stata", "cregg", "CR2")


def inv_sqrt_eigenvalues(w: np.ndarray) -> np.ndarray:
    """CR2's (I - H_gg)^(-1/2) from its eigenvalues: the generalized inverse square root, as estimatr's
    and clubSandwich's; an eigenvalue at or below 1e-12 (a cluster that alone identifies a coefficient)
    counts 0 (a clip to 1e-12 would weight it by 1e6)."""
    return np.where(w > 1e-12, 1.0 / np.sqrt(np.maximum(w, 1e-12)), 0.0)


def _cr2_parts(X, e, groups, M):
    """CR2 meat half-rows and estimatr's Satterthwaite df, unweighted, no fixed effects."""
    r, G = X.shape[1], len(groups)
    L = np.linalg.cholesky(M)
    half = np.empty((G, r))
    p_diag = np.empty((r, G))
    hmat = np.empty((r, r, G))  # hmat[j, :, g] = h_g for coefficient j
    for gi, idx in enumerate(groups):
        Xg = X[idx]
        w, Q = np.linalg.eigh(np.eye(idx.size) - Xg @ M @ Xg.T)
        AX = (Q * inv_sqrt_eigenvalues(w)) @ Q.T @ Xg  # A_g X_g
        half[gi] = e[idx] @ AX
        ME = M @ AX.T  # rows: c_g for each coefficient
        p_diag[:, gi] = (ME ** 2).sum(1)
        hmat[:, :, gi] = ME @ Xg @ L
    df = np.empty(r)
    for j in range(r):
        H = hmat[j]  # (r, G)
        P = np.diag(p_diag[j]) - H.T @ H
        df[j] = np.trace(P) ** 2 / (P ** 2).sum()
    return half, df


def cluster_vcov(X: np.ndarray, resid: np.ndarray, cluster: np.ndarray, se_type: str = "CR2"):
    """Cluster-robust covariance of OLS coefficients and the df of each coefficient's t test."""
    if se_type not in SE_TYPES:
        raise UserError(f"se_type: expected one of {', '.join(SE_TYPES)}, got {se_type!r}")
    N, K = X.shape
    M = np.linalg.inv(X.T @ X)
    codes = pd.factorize(cluster)[0]
    G = int(codes.max()) + 1
    if se_type == "CR2":
        # hand-written: no maintained Python library has estimatr's CR2 with its Satterthwaite df
        order = np.argsort(codes, kind="stable")
        groups = np.split(order, np.flatnonzero(np.diff(codes[order])) + 1)
        half, df = _cr2_parts(X, resid, groups, M)
        return M @ (half.T @ half) @ M, df
    import statsmodels.api as sm
    from statsmodels.stats.sandwich_covariance import cov_cluster

    # statsmodels' cluster sandwich on these residuals: OLS of the residuals on X has exactly these
    # residuals (they are orthogonal to X), so its fit carries X, M and e. use_correction=True is
    # CR1 (G/(G-1) (N-1)/(N-K), Stata's), False is CR0.
    fit = sm.OLS(resid, X).fit()
    V = cov_cluster(fit, codes, use_correction=se_type == "stata")
    if se_type == "cregg":
        V = V * (G / (G - 1))  # survey::svyglm's linearization (cregg): CR0 x G/(G-1), normal reference
        return V, np.full(K, np.inf)
    return V, np.full(K, G - 1.0)


def ols_cluster(y: np.ndarray, X: np.ndarray, cluster: np.ndarray, se_type: str = "CR2",
                level: float = 0.95) -> pd.DataFrame:
    """OLS with cluster-robust inference; one row per coefficient."""
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    V, df = cluster_vcov(X, y - X @ beta, cluster, se_type)
    # a variance below zero (the rounding of a zero one: a coefficient without spread in a tiny design,
    # e.g. `make demo`'s MoCa) has no standard error: NaN, as numpy's sqrt gives, without its warning
    var = np.diag(V)
    se = np.sqrt(np.where(var >= 0, var, np.nan))
    with np.errstate(invalid="ignore", divide="ignore"):
        tstat = beta / se
    p = 2 * stats.t.sf(np.abs(tstat), df)
    q = stats.t.ppf(1 - (1 - level) / 2, df)
    return pd.DataFrame({"estimate": beta, "std.error": se, "statistic": tstat, "df": df, "p.value": p,
                         "conf.low": beta - q * se, "conf.high": beta + q * se})
