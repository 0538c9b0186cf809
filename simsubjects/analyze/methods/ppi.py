"""Prediction-powered inference (PPI, PPI++): human quantities from a few humans and many model answers.

The model answers every unit (a story, a profile, a survey item, a persona row); people answer a
random subsample of the units. A prediction-powered estimate corrects the model's answers on all
units by the model's error measured where people answered (Angelopoulos, Bates, Fannjiang, Jordan
& Zrnic, Science 2023), and the power-tuned version PPI++ weighs the model's part by a factor
lambda in [0, 1] chosen from the data so that the interval is never much wider than the human-only
one (Angelopoulos, Duchi & Zrnic 2024, arXiv:2311.01453). Broska, Howes & van Loon (2024, "the
mixed subjects design") apply it to language-model participants and define the effective human
sample size: the number of humans a human-only study would need for the same variance.

Notation (as ppi-python): ``y`` the human outcomes of the n labeled units, ``yhat`` the model's
predictions on them, ``yhat_unlabeled`` the model's predictions on the N units without human
outcomes (disjoint from the n), ``X``/``X_unlabeled`` the covariates (for regression).

One function per estimand, each with a broom-named table out (term, estimate, std.error,
statistic, p.value, conf.low, conf.high, n, n_model, lambda):

* `ppi_mean` — a mean (`ppi_py.ppi_mean_ci`);
* `ppi_ols` — OLS coefficients, e.g. AMCEs or persona-attribute regressions (`ppi_py.ppi_ols_ci`);
* `ppi_difference` — the difference between two conditions, the slope of y ~ 1 + 1{A};
* `ppi_logistic` — logistic coefficients (`ppi_py.ppi_logistic_ci`);
* `compare` — human-only, model-only and prediction-powered side by side with the effective
  human sample size; `mixed_subjects` does the same from data frames keyed by unit.

Why not call ppi-python: it pulls numba and scikit-learn into every install, its logistic point
estimate stops at L-BFGS tolerance, and the coverage simulation needs estimators vectorized over
replications. The code follows ppi-python's algorithm step for step (the same lambda, the same
recursion, normal intervals) and tests/test_ppi.py checks agreement with it to 1e-10.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from simsubjects.errors import UserError

COLUMNS = ["term", "estimate", "std.error", "statistic", "p.value", "conf.low", "conf.high", "n", "n_model",
           "lambda", "method", "warning"]
DEGENERATE = "zero variance (every outcome the same): no test; p.value left empty"


# ---------------------------------------------------------------- helpers

def _z(level: float) -> float:
    if not 0 < level < 1:
        raise UserError(f"level: must be between 0 and 1, got {level}")
    return float(stats.norm.ppf(1 - (1 - level) / 2))


def _arr(v, name: str, ndim: int = 1) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    if ndim == 2 and a.ndim == 1:
        a = a[:, None]
    if a.ndim != ndim:
        raise UserError(f"{name}: expected a {ndim}-D array, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise UserError(f"{name}: contains missing or infinite values")
    return a


def _check(y, yhat, yhat_u, X=None, X_u=None):
    y, yhat, yhat_u = _arr(y, "y"), _arr(yhat, "yhat"), _arr(yhat_u, "yhat_unlabeled")
    if y.size != yhat.size:
        raise UserError(f"yhat: {yhat.size} predictions for {y.size} human outcomes; the model must answer "
                        "every unit people answered")
    if y.size < 2 or yhat_u.size < 2:
        raise UserError(f"need at least 2 human-labeled units and 2 model-only units (got {y.size} and {yhat_u.size})")
    if X is None:
        return y, yhat, yhat_u
    X, X_u = _arr(X, "X", 2), _arr(X_u, "X_unlabeled", 2)
    if X.shape[0] != y.size or X_u.shape[0] != yhat_u.size or X.shape[1] != X_u.shape[1]:
        raise UserError(f"X: shapes {X.shape} and {X_u.shape} do not match {y.size} labeled and "
                        f"{yhat_u.size} unlabeled units")
    return y, yhat, yhat_u, X, X_u


SMALL_N = 30  # below this many human units (clusters when clustered): a Student t interval, with a note


def _small_n(level: float, units: int, d: int, clustered: bool):
    """(quantile, p-value function, note) of the small-n rule. PPI's intervals are normal (CLT) intervals; with
    few humans they undercover, so below SMALL_N human units the interval and p-value use Student's t with
    units - d degrees of freedom (G - 1 for G clusters: Cameron & Miller 2015, section VI.C)."""
    if not 0 < units < SMALL_N:
        return _z(level), lambda z: 2 * stats.norm.sf(np.abs(z)), ""
    df = max(units - 1 if clustered else units - d, 1)
    what = "clusters" if clustered else "human units"
    note = f"{units} {what} (< {SMALL_N}): Student t interval and p-value with {df} df instead of normal ones"
    return float(stats.t.ppf(1 - (1 - level) / 2, df)), lambda z: 2 * stats.t.sf(np.abs(z), df), note


def _table(est, se, level, terms, n, N, lam, method, units: int = 0, d: int = 1,
           clustered: bool = False) -> pd.DataFrame:
    """The broom table; `units` the independent human units (n, or the clusters) for the small-n rule
    (0: no rule, as for the model-only rows)."""
    est, se = np.atleast_1d(est).astype(float), np.atleast_1d(se).astype(float)
    q, pval, note = _small_n(level, units, d, clustered)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = est / se
    # a standard error of 0 (identical outcomes) gives z = inf and p = 0: a degenerate test, not evidence
    degenerate = ~(se > 0)
    z = np.where(degenerate, np.nan, z)
    return pd.DataFrame({"term": list(terms), "estimate": est, "std.error": se, "statistic": z,
                         "p.value": pval(z), "conf.low": est - q * se,
                         "conf.high": est + q * se, "n": n, "n_model": N,
                         "lambda": np.broadcast_to(np.asarray(lam, float), est.shape), "method": method,
                         "warning": np.where(degenerate, DEGENERATE, note)})


def _calc_lam(grads, grads_hat, grads_hat_u, inv_hessian, coord=None) -> float:
    """PPI++'s variance-minimizing lambda, clipped to [0, 1] (ppi_py._calc_lam_glm, optim_mode="overall").

    num = tr(H^-1 C H^-1) with C the symmetrized covariance of the human and model gradients on the
    labeled units; denom = 2 (1 + n/N) tr(H^-1 V H^-1) with V the covariance of the model gradients
    on all units (Angelopoulos, Duchi & Zrnic 2024, eq. 6).
    """
    n, N = grads.shape[0], grads_hat_u.shape[0]
    gc, hc = grads - grads.mean(0), grads_hat - grads_hat.mean(0)
    cov = (gc.T @ hc + hc.T @ gc) / n
    var = np.cov(np.concatenate([grads_hat, grads_hat_u]).T).reshape(cov.shape)
    if coord is None:
        num, den = np.trace(inv_hessian @ cov @ inv_hessian), np.trace(inv_hessian @ var @ inv_hessian)
    else:
        v = inv_hessian[coord]
        num, den = v @ cov @ v, v @ var @ v
    if not den > 0:
        return 0.0  # predictions constant: nothing to learn from them
    return _tolerant(float(np.clip(num / (2 * (1 + n / N) * den), 0, 1)))


LAM_TOL = 1e-8  # a tuned lambda below this is rounding noise: 0, the human-only (classical) interval


def _tolerant(lam):
    """lambda with rounding noise set to 0. Constant predictions give lambda ~ 1e-17 for the difference and
    OLS estimands, which is not 0, so `lam != 0` switched to the PPI variance formula and credited the model
    with humans it never replaced (n_effective 19.5 from 8 humans; ppi-python: lambda = 0). At 0 the
    estimator is exactly the classical one."""
    return np.where(np.asarray(lam) < LAM_TOL, 0.0, lam) if np.ndim(lam) else (0.0 if lam < LAM_TOL else lam)


# ---------------------------------------------------------------- mean

def mean_fit(y, yhat, yhat_u, lam=None):
    """Estimate, standard error and lambda of the PPI++ mean, vectorized over leading axes.

    Arrays have the units on the last axis, so a (R, n) array fits R replications at once (the
    coverage simulation). lam=None tunes lambda = Cov(Y, Yhat) / ((1 + n/N) Var(Yhat)) as ppi-python
    (population covariance on the labeled units, sample variance of all predictions); lam=0 is
    the human-only CLT interval, lam=1 plain PPI.
    """
    n, N = y.shape[-1], yhat_u.shape[-1]
    if lam is None:
        c = ((y - y.mean(-1, keepdims=True)) * (yhat - yhat.mean(-1, keepdims=True))).mean(-1)
        v = np.concatenate([yhat, yhat_u], axis=-1).var(-1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = _tolerant(np.where(v > 0, np.clip(c / ((1 + n / N) * v), 0, 1), 0.0))
    lam = np.asarray(lam, float)
    lk = lam[..., None] if lam.ndim else lam
    est = (lk * yhat_u).mean(-1) + (y - lk * yhat).mean(-1)
    var = (lk * yhat_u).var(-1) / N + (y - lk * yhat).var(-1) / n
    return est, np.sqrt(var), lam


def ppi_mean(y, yhat, yhat_unlabeled, *, lam: float | None = None, level: float = 0.95, w=None,
             w_unlabeled=None, clusters=None, clusters_unlabeled=None) -> pd.DataFrame:
    """Prediction-powered mean of the human outcome (PPI++ with lam=None); one broom row.

    With survey weights or clusters it is the intercept of `ppi_ols` on a column of ones (the weighted mean,
    its gradients linearized at the estimate as ppi-python's weighted OLS; ppi-python's own weighted mean
    leaves the weights' spread around the estimate in its variance)."""
    if any(v is not None for v in (w, w_unlabeled, clusters, clusters_unlabeled)):
        y, yhat, yu = _check(y, yhat, yhat_unlabeled)
        out = ppi_ols(np.ones((y.size, 1)), y, yhat, np.ones((yu.size, 1)), yu, lam=lam, level=level,
                      terms=["mean"], w=w, w_unlabeled=w_unlabeled, clusters=clusters,
                      clusters_unlabeled=clusters_unlabeled)
        return out.assign(method=_method(out["lambda"].iat[0] if lam is None else lam, "mean"))
    y, yhat, yu = _check(y, yhat, yhat_unlabeled)
    est, se, lam = mean_fit(y, yhat, yu, lam)
    return _table(est, se, level, ["mean"], y.size, yu.size, lam, _method(lam, "mean"), units=y.size)


def _method(lam, what) -> str:
    return f"human-only {what}" if lam is not None and np.all(np.asarray(lam) == 0) else f"prediction-powered {what}"


# ---------------------------------------------------------------- OLS

def _ls(X, y, w=None):
    """(Weighted) least squares; `w` survey weights (None: all 1)."""
    Xw = X if w is None else X * w[:, None]
    try:  # normal equations: fast, and equal to a QR/SVD solution to rounding on a full-rank design
        return np.linalg.solve(Xw.T @ X, Xw.T @ y)
    except np.linalg.LinAlgError:
        root = np.sqrt(np.ones(len(y)) if w is None else w)
        return np.linalg.lstsq(X * root[:, None], y * root, rcond=None)[0]


def _blend(H_labeled, H_pooled, pooled: float):
    """The inverse of (1 - w) H_labeled + w H_pooled, w = `pooled` in [0, 1].

    ppi-python switches from the labeled units' Hessian to the pooled one as soon as lambda != 0, so a weak
    model's lambda of 1e-6 changed the interval as much as lambda = 1 did, and credited the model with humans
    it never replaced (issue 40). Both matrices estimate the same population Hessian (the units people answer
    are a random subsample), so weighting them by lambda is as valid and continuous in lambda: at lambda = 0
    it is the classical interval, at lambda = 1 ppi-python's."""
    w = float(pooled)
    return np.linalg.inv(H_labeled if w == 0 else (1 - w) * H_labeled + w * H_pooled)


def _ols_stats(theta, X, y, yhat, Xu, yhu, pooled: float, w=None, wu=None):
    """Per-unit gradients of the squared loss and the inverse Hessian (ppi_py._ols_get_stats, survey weights
    `w`/`wu` normalized to mean 1 as there), the Hessian the `pooled`-weighted blend of the labeled and the
    pooled units' (`_blend`)."""
    n, N = y.size, yhu.size
    w = np.ones(n) if w is None else w
    wu = np.ones(N) if wu is None else wu
    ghu = Xu * (wu * (Xu @ theta - yhu))[:, None]
    g = X * (w * (X @ theta - y))[:, None]
    gh = X * (w * (X @ theta - yhat))[:, None]
    Hl, Hu = (X.T * w) @ X, (Xu.T * wu) @ Xu
    return g, gh, ghu, _blend(Hl / n, (Hu + Hl) / (N + n), pooled)


def _ols_point(X, y, yhat, Xu, yhu, lam, coord, w=None, wu=None):
    if lam is None:  # ppi_py.ppi_ols_pointestimate: tune lambda at the plain-PPI estimate
        theta = _ls(Xu, yhu, wu) + _ls(X, y - yhat, w)
        lam = _calc_lam(*_ols_stats(theta, X, y, yhat, Xu, yhu, 1.0, w, wu), coord)
    return _ls(Xu, lam * yhu, wu) + _ls(X, y - lam * yhat, w)


def _sandwich(g, gh, ghu, inv_h, lam, n, N):
    d = inv_h.shape[0]
    var_u = np.cov((lam * ghu).T).reshape(d, d)
    var = np.cov((g - lam * gh).T).reshape(d, d)
    with np.errstate(invalid="ignore"):  # a degenerate sample gives NaN, not a warning
        return np.sqrt(np.diag(inv_h @ (n / N * var_u + var) @ inv_h) / n)


def _cluster_sandwich(g, gh, ghu, inv_h, lam, cl, clu):
    """Cluster-robust standard errors: a respondent's several profiles or a persona's several items are one
    independent draw, not several. Not in ppi-python, so written out: the estimator's influence
    psi_c = lam/N sum_(u in c) (gu - mean gu) + 1/n sum_(l in c) (r - mean r), r = g - lam gh, summed per
    cluster (a cluster may hold labeled and model-only units: their covariance is then counted), and
    Var = G/(G - 1) H^-1 (sum_c psi_c psi_c') H^-1 (the CR1 factor; Cameron & Miller 2015, J. Human Resources
    50(2), section VI), G the clusters holding people's answers: the few human clusters drive the small-sample
    bias, and a G that counted the model's clusters too would jump as lambda leaves 0. At lambda = 0 this is
    statsmodels' cluster-robust OLS without its (n - 1)/(n - k) factor."""
    n, N = g.shape[0], ghu.shape[0]
    r = g - lam * gh
    parts = np.concatenate([(r - r.mean(0)) / n, lam * (ghu - ghu.mean(0)) / N])
    codes, ids = pd.factorize(pd.Series(np.concatenate([cl, clu]).astype(str)))
    psi = np.zeros((len(ids), parts.shape[1]))
    np.add.at(psi, codes, parts)
    G = len(set(codes[:n]))
    with np.errstate(invalid="ignore"):
        return np.sqrt(np.diag(inv_h @ (G / (G - 1) * psi.T @ psi) @ inv_h))


def ols_fit(X, y, yhat, Xu, yhu, lam=None, coord=None, w=None, wu=None, clusters=None):
    """(estimate, std.error, lambda) of PPI++ OLS, following ppi_py.ppi_ols_ci's steps exactly (survey
    weights `w`, `wu` as there); `clusters` = (labeled ids, model-only ids) for cluster-robust errors."""
    n, N = y.size, yhu.size
    theta = _ols_point(X, y, yhat, Xu, yhu, lam, coord, w, wu)
    if lam is None:  # ppi_ols_ci re-tunes lambda at the tuned estimate, then recomputes with it
        lam = _calc_lam(*_ols_stats(theta, X, y, yhat, Xu, yhu, 1.0, w, wu), coord)
        theta = _ols_point(X, y, yhat, Xu, yhu, lam, coord, w, wu)
    stats_ = _ols_stats(theta, X, y, yhat, Xu, yhu, lam, w, wu)
    if clusters is not None:
        return theta, _cluster_sandwich(*stats_, lam, *clusters), float(lam)
    return theta, _sandwich(*stats_, lam, n, N), float(lam)


def _weights(w, size: int, name: str):
    """Survey weights normalized to mean 1 (ppi-python's construct_weight_vector); None stays None."""
    if w is None:
        return None
    w = _arr(w, name)
    if w.size != size or not (w >= 0).all() or not w.sum() > 0:
        raise UserError(f"{name}: expected {size} non-negative weights, not all 0 (got {w.size})")
    return w / w.sum() * size


def _clusters(cl, clu, n: int, N: int):
    """(labeled ids, model-only ids), checked; None when no clusters are given."""
    if cl is None and clu is None:
        return None
    if cl is None or clu is None:
        raise UserError("clusters: give cluster ids for both the labeled and the model-only units")
    cl, clu = np.asarray(cl).ravel(), np.asarray(clu).ravel()
    if cl.size != n or clu.size != N:
        raise UserError(f"clusters: {cl.size} and {clu.size} ids for {n} labeled and {N} model-only units")
    if pd.isna(pd.Series(np.concatenate([cl, clu]), dtype=object)).any():
        raise UserError("clusters: an id is missing; every unit belongs to a cluster")
    if len(set(map(str, cl))) < 2:
        raise UserError("clusters: people's answers all come from one cluster; cluster-robust errors need at least 2")
    return cl, clu


def _terms(terms, d):
    terms = list(terms) if terms is not None else [f"x{j}" for j in range(d)]
    if len(terms) != d:
        raise UserError(f"terms: {len(terms)} names for {d} columns of X")
    return terms


def ppi_ols(X, y, yhat, X_unlabeled, yhat_unlabeled, *, lam: float | None = None, coord: int | None = None,
            level: float = 0.95, terms: Sequence[str] | None = None, w=None, w_unlabeled=None,
            clusters=None, clusters_unlabeled=None) -> pd.DataFrame:
    """Prediction-powered OLS coefficients of y on X (include a column of ones for an intercept).

    `coord`: tune lambda for that coefficient's variance (default: the total variance). `w`,
    `w_unlabeled`: survey weights (as ppi-python's). `clusters`, `clusters_unlabeled`: cluster ids (a
    respondent, a persona) for cluster-robust errors; the small-n rule then counts clusters.
    """
    y, yhat, yu, X, Xu = _check(y, yhat, yhat_unlabeled, X, X_unlabeled)
    w, wu = _weights(w, y.size, "w"), _weights(w_unlabeled, yu.size, "w_unlabeled")
    cl = _clusters(clusters, clusters_unlabeled, y.size, yu.size)
    theta, se, lam = ols_fit(X, y, yhat, Xu, yu, lam, coord, w, wu, cl)
    units = y.size if cl is None else len(set(map(str, cl[0])))
    return _table(theta, se, level, _terms(terms, X.shape[1]), y.size, yu.size, lam, _method(lam, "OLS"),
                  units=units, d=X.shape[1], clustered=cl is not None)


def ppi_difference(y, yhat, group, yhat_unlabeled, group_unlabeled, *, lam: float | None = None,
                   level: float = 0.95, term: str = "difference", **survey) -> pd.DataFrame:
    """Difference in the human mean between units with group True and False (e.g. an AMCE).

    The slope of the OLS regression y ~ 1 + 1{group}; lambda is tuned for the slope. `survey`: the
    weights and cluster ids of `ppi_ols`.
    """
    g, gu = np.ravel(group) != 0, np.ravel(group_unlabeled) != 0
    for name, a in (("group", g), ("group_unlabeled", gu)):
        if a.all() or not a.any():
            raise UserError(f"{name}: both conditions need units (got {int(a.sum())} of {a.size} in the first)")
    X = np.column_stack([np.ones(g.size), g])
    Xu = np.column_stack([np.ones(gu.size), gu])
    out = ppi_ols(X, y, yhat, Xu, yhat_unlabeled, lam=lam, coord=1, level=level, terms=["(Intercept)", term],
                  **survey)
    return out.iloc[[1]].reset_index(drop=True).assign(method=_method(lam, "difference"))


# ---------------------------------------------------------------- logistic

def _log1pexp(x):
    return np.logaddexp(0.0, x)


def logistic_point(X, y, yhat, Xu, yhu, lam: float, tol: float = 1e-13, max_iter: int = 100) -> np.ndarray:
    """Minimizer of the rectified logistic loss (ppi-python's objective) by damped Newton steps.

    L(t) = lam/N sum l(Xu t, yhu) - lam/n sum l(X t, yhat) + 1/n sum l(X t, y), l the logistic
    loss; for lam in [0, 1] its Hessian lam Hu + (1 - lam) Hl is positive semi-definite, so
    Newton converges to the exact minimizer (ppi-python stops at L-BFGS-B's tolerance).
    """
    n, N = y.size, yhu.size

    def loss(t):
        a, au = X @ t, Xu @ t
        return (lam / N * np.sum(-yhu * au + _log1pexp(au)) - lam / n * np.sum(-yhat * a + _log1pexp(a))
                + np.sum(-y * a + _log1pexp(a)) / n)

    t = np.zeros(X.shape[1])
    for _ in range(max_iter):
        mu, muu = expit(X @ t), expit(Xu @ t)
        grad = lam / N * Xu.T @ (muu - yhu) - lam / n * X.T @ (mu - yhat) + X.T @ (mu - y) / n
        H = lam / N * (Xu.T * (muu * (1 - muu))) @ Xu + (1 - lam) / n * (X.T * (mu * (1 - mu))) @ X
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            raise UserError("logistic: the design is singular or the outcome perfectly separated") from None
        f0, s = loss(t), 1.0
        while loss(t - s * step) > f0 + 1e-15 * abs(f0) and s > 1e-10:
            s /= 2
        t = t - s * step
        if np.max(np.abs(s * step)) < tol:
            return t
    raise UserError("logistic: Newton's method did not converge (perfect separation?)")


def _logistic_stats(theta, X, y, yhat, Xu, yhu, pooled: float):
    """Gradients of the logistic loss and the inverse Hessian (ppi_py._logistic_get_stats), the Hessian
    blended by `pooled` as in `_blend`."""
    n, N = y.size, yhu.size
    mu, muu = expit(X @ theta), expit(Xu @ theta)
    Hl, Hu = (X.T * (mu * (1 - mu))) @ X, (Xu.T * (muu * (1 - muu))) @ Xu
    inv_h = _blend(Hl / n, (Hu + Hl) / (N + n), pooled)
    return X * (mu - y)[:, None], X * (mu - yhat)[:, None], Xu * (muu - yhu)[:, None], inv_h


def logistic_interval_at(theta, X, y, yhat, Xu, yhu, lam: float) -> np.ndarray:
    """Standard errors of the PPI++ logistic coefficients at `theta` with a given lambda."""
    return _sandwich(*_logistic_stats(theta, X, y, yhat, Xu, yhu, lam), lam, y.size, yhu.size)


def logistic_fit(X, y, yhat, Xu, yhu, lam=None):
    """(estimate, std.error, lambda) following ppi_py.ppi_logistic_ci's steps (lambda for the total variance)."""
    if lam is None:
        # ppi-python starts lambda's tuning at the lambda = 1 fit; that objective can have no minimum (the
        # model's predictions on the unlabeled units separate them) while lambda = 0 (the humans' own
        # logistic fit) has one: start from the best lambda that has a minimum, and fall back to 0
        theta, start = _first_fit(X, y, yhat, Xu, yhu, (1.0, 0.5, 0.0))
        lam = _calc_lam(*_logistic_stats(theta, X, y, yhat, Xu, yhu, 1.0))
        theta, lam = _first_fit(X, y, yhat, Xu, yhu, dict.fromkeys((lam, min(lam, start), 0.0)))
        lam = _calc_lam(*_logistic_stats(theta, X, y, yhat, Xu, yhu, 1.0))
        theta, lam = _first_fit(X, y, yhat, Xu, yhu, dict.fromkeys((lam, 0.0)))
        return theta, logistic_interval_at(theta, X, y, yhat, Xu, yhu, lam), float(lam)
    theta = logistic_point(X, y, yhat, Xu, yhu, lam)
    return theta, logistic_interval_at(theta, X, y, yhat, Xu, yhu, lam), float(lam)


def _first_fit(X, y, yhat, Xu, yhu, lams):
    """(theta, lambda) of the first lambda in `lams` whose rectified logistic loss has a minimum."""
    for lam in lams:
        try:
            return logistic_point(X, y, yhat, Xu, yhu, float(lam)), float(lam)
        except UserError:
            if lam == 0:
                raise UserError("logistic: the human outcomes are perfectly separated by the covariates (no "
                                "finite maximum-likelihood fit even without the model)") from None
    raise AssertionError("unreachable: the last lambda tried is 0")


def ppi_logistic(X, y, yhat, X_unlabeled, yhat_unlabeled, *, lam: float | None = None, level: float = 0.95,
                 terms: Sequence[str] | None = None) -> pd.DataFrame:
    """Prediction-powered logistic-regression coefficients (y in {0, 1}, yhat a probability)."""
    y, yhat, yu, X, Xu = _check(y, yhat, yhat_unlabeled, X, X_unlabeled)
    if not np.isin(y, (0.0, 1.0)).all():
        raise UserError("y: logistic regression needs 0/1 human outcomes")
    if ((yhat < 0) | (yhat > 1)).any() or ((yu < 0) | (yu > 1)).any():
        raise UserError("yhat: logistic regression needs predictions in [0, 1] (a probability)")
    theta, se, lam = logistic_fit(X, y, yhat, Xu, yu, lam)
    return _table(theta, se, level, _terms(terms, X.shape[1]), y.size, yu.size, lam, _method(lam, "logistic"),
                  units=y.size, d=X.shape[1])


# ---------------------------------------------------------------- side by side

ESTIMANDS = ("mean", "difference", "ols", "logistic")


def _fit(estimand, y, yhat, yu, X, Xu, lam, level, terms, **survey):
    """`survey`: the weights and cluster ids of ppi_ols (not for logistic)."""
    survey = {k: v for k, v in survey.items() if v is not None}
    if estimand == "mean":
        return ppi_mean(y, yhat, yu, lam=lam, level=level, **survey)
    if estimand == "difference":
        return ppi_difference(y, yhat, X, yu, Xu, lam=lam, level=level, term=(terms or ["difference"])[-1], **survey)
    if estimand == "ols":
        return ppi_ols(X, y, yhat, Xu, yu, lam=lam, level=level, terms=terms, **survey)
    if estimand == "logistic" and survey:
        raise UserError("survey weights and clusters: available for mean, difference and ols, not logistic")
    if estimand == "logistic":
        return ppi_logistic(X, y, yhat, Xu, yu, lam=lam, level=level, terms=terms)
    raise UserError(f"estimand: expected one of {', '.join(ESTIMANDS)}, got {estimand!r}")


def compare(y, yhat, yhat_unlabeled, X=None, X_unlabeled=None, *, estimand: str = "mean",
            terms: Sequence[str] | None = None, level: float = 0.95, **survey) -> pd.DataFrame:
    """Human-only, model-only and prediction-powered estimates side by side, per term.

    * human-only: the classical estimate from the n humans (PPI with lambda = 0; for OLS the HC0
      sandwich with the n - 1 divisor of ppi-python);
    * model-only: the same estimator on the model's answers for all n + N units as if they were
      people's (no correction; its interval is valid only if the model is unbiased);
    * prediction-powered: PPI++ (lambda tuned).

    ``n_effective`` = n x (human-only variance / prediction-powered variance): the humans a
    human-only study needs for the prediction-powered precision (Broska et al. 2024);
    ``n_gained`` = n_effective - n. `survey`: `w`, `w_unlabeled`, `clusters`, `clusters_unlabeled` of
    `ppi_ols`, for the human-only and prediction-powered rows (the model-only row stays unweighted and
    unclustered: it is a description of the model's answers, valid only if the model is unbiased).
    """
    human = _fit(estimand, y, yhat, yhat_unlabeled, X, X_unlabeled, 0.0, level, terms, **survey)
    ppi = _fit(estimand, y, yhat, yhat_unlabeled, X, X_unlabeled, None, level, terms, **survey)
    yall = np.concatenate([np.asarray(yhat, float), np.asarray(yhat_unlabeled, float)])
    Xall = None if X is None else np.concatenate([np.asarray(X), np.asarray(X_unlabeled)])
    if estimand == "logistic":  # model probabilities as fractional outcomes: the quasi-likelihood fit
        model = _model_only_logistic(Xall, yall, level, terms)
    else:  # lambda = 0 on the model's answers: the classical estimator with predictions as outcomes
        model = _fit_all(estimand, yall, Xall, level, human["term"])
    model = model.assign(method="model-only", n=0, n_model=yall.size, **{"lambda": np.nan})
    human = human.assign(method="human-only")
    ppi = ppi.assign(method="prediction-powered")
    out = pd.concat([human, model, ppi], ignore_index=True)
    var_h = human.set_index("term")["std.error"] ** 2
    ratio = out["term"].map(var_h) / out["std.error"] ** 2
    out["n_effective"] = np.where(out["method"] == "model-only", np.nan, out["n"] * ratio)
    out["n_gained"] = out["n_effective"] - out["n"]
    order = {"human-only": 0, "model-only": 1, "prediction-powered": 2}
    out = out.assign(_o=out["method"].map(order), _t=out["term"].map({t: i for i, t in enumerate(human["term"])}))
    return out.sort_values(["_t", "_o"], kind="stable").drop(columns=["_o", "_t"]).reset_index(drop=True)


def _fit_all(estimand, yall, Xall, level, terms):
    """The classical (lambda = 0) estimate on all model answers: every unit 'labeled' by the model."""
    if estimand == "mean":
        est, se = yall.mean(), yall.std() / np.sqrt(yall.size)
    else:
        X = Xall if estimand != "difference" else np.column_stack([np.ones(len(Xall)), np.ravel(Xall) != 0])
        theta = _ls(X, yall)
        g = X * (X @ theta - yall)[:, None]
        inv_h = np.linalg.inv(X.T @ X / yall.size)
        se = np.sqrt(np.diag(inv_h @ np.cov(g.T).reshape(len(theta), len(theta)) @ inv_h) / yall.size)
        est = theta
        if estimand == "difference":
            est, se = theta[1:], se[1:]
    return _table(est, se, level, list(terms), 0, yall.size, np.nan, "model-only")


def _model_only_logistic(Xall, yall, level, terms):
    """Logistic fit of the model's probabilities on all units; with lambda = 0 the unlabeled
    arguments of the PPI functions are unused, so the first rows stand in for them."""
    theta = logistic_point(Xall, yall, yall, Xall[:2], yall[:2], 0.0)
    se = logistic_interval_at(theta, Xall, yall, yall, Xall[:2], yall[:2], 0.0)
    return _table(theta, se, level, _terms(terms, Xall.shape[1]), 0, yall.size, np.nan, "model-only")


# ---------------------------------------------------------------- from data frames

def design(frame: pd.DataFrame, x: Sequence[str], estimand: str) -> tuple[np.ndarray, list[str]]:
    """Covariates of `frame` as a design matrix: an intercept, numeric columns as they are, other
    columns as treatment-coded dummies (first level in sorted order is the reference)."""
    missing = [c for c in x if c not in frame]
    if missing:
        raise UserError(f"--ppi-x: column(s) {', '.join(missing)} not found; available: {', '.join(frame.columns)}")
    if estimand == "difference":
        if len(x) != 1:
            raise UserError("--ppi-estimand difference: name exactly one --ppi-x column with two levels")
        levels = sorted(frame[x[0]].dropna().astype(str).unique())
        if len(levels) != 2:
            raise UserError(f"--ppi-x {x[0]}: a difference needs two levels, found {len(levels)} ({levels[:5]})")
        return (frame[x[0]].astype(str) == levels[1]).to_numpy()[:, None].astype(float), [f"{levels[1]} - {levels[0]}"]
    parts = [pd.Series(1.0, index=frame.index, name="(Intercept)")]
    for c in x:
        col = frame[c]
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
            parts.append(col.astype(float).rename(c))
        else:
            dummies = pd.get_dummies(col.astype(str), prefix=c, prefix_sep="", dtype=float)
            parts.extend(dummies[k] for k in sorted(dummies.columns)[1:])
    Xdf = pd.concat(parts, axis=1)
    return Xdf.to_numpy(float), list(Xdf.columns)


def mixed_subjects(model_units: pd.DataFrame, human_units: pd.DataFrame, *, unit: str = "item",
                   prediction: str = "yhat", outcome: str = "y", estimand: str = "mean",
                   x: Sequence[str] = (), level: float = 0.95, weight: str | None = None,
                   cluster: str | None = None) -> pd.DataFrame:
    """The side-by-side table from two frames keyed by `unit` (reusable from study files).

    `weight`: a survey-weight column of `human_units` (and of `model_units`, if it has one). `cluster`: a
    cluster-id column (a respondent, a persona) of `human_units` and, if it has one, of `model_units`
    (a model-only unit without one is its own cluster).

    `model_units`: one row per unit the model answered, with the prediction column and any
    covariates; `human_units`: one row per unit people answered, with the outcome. Units of
    `human_units` form the labeled set, the model's other units the unlabeled set.
    """
    for name, frame, cols in (("model units", model_units, [unit, prediction, *x]), ("human data", human_units,
                                                                                    [unit, outcome])):
        missing = [c for c in cols if c not in frame]
        if missing:
            raise UserError(f"{name}: missing column(s) {', '.join(missing)}; available: {', '.join(map(str, frame.columns))}")
    if estimand not in ESTIMANDS:
        raise UserError(f"--ppi-estimand: expected one of {', '.join(ESTIMANDS)}, got {estimand!r}")
    if estimand != "mean" and not x:
        raise UserError(f"--ppi-estimand {estimand}: name the covariate column(s) with --ppi-x")
    dup = human_units[unit][human_units[unit].duplicated()]
    if len(dup):
        raise UserError(f"human data: unit {dup.iloc[0]!r} appears more than once; give one outcome per {unit}")
    dup_m = model_units[unit][model_units[unit].duplicated()]
    if len(dup_m):  # keeping the first would silently drop the model's other answers to that unit
        raise UserError(f"model units: unit {dup_m.iloc[0]!r} appears more than once; give one prediction per "
                        f"{unit} (average a unit's trials first)")
    mu = model_units.set_index(unit)
    lacking = sorted(set(human_units[unit]) - set(mu.index), key=str)
    if lacking:
        raise UserError(f"human data: {len(lacking)} unit(s) the model did not answer (e.g. {lacking[0]!r}); "
                        "prediction-powered inference needs the model's answer on every unit")
    labeled = human_units.set_index(unit)[[outcome]].join(mu, how="inner")
    unlabeled = mu.drop(index=labeled.index)
    X, terms = (None, None) if estimand == "mean" else design(pd.concat([labeled, unlabeled]), x, estimand)
    k = len(labeled)
    survey = _survey_columns(human_units.set_index(unit).loc[labeled.index], mu.loc[unlabeled.index], weight, cluster)
    return compare(labeled[outcome].to_numpy(float), labeled[prediction].to_numpy(float),
                   unlabeled[prediction].to_numpy(float), None if X is None else X[:k],
                   None if X is None else X[k:], estimand=estimand, terms=terms, level=level, **survey)


def _survey_columns(human: pd.DataFrame, model_only: pd.DataFrame, weight, cluster) -> dict:
    """ppi_ols's weights and cluster ids from the frames' columns (labeled rows, then model-only rows)."""
    out = {}
    for col, what in ((weight, "weight"), (cluster, "cluster")):
        if col and col not in human:
            raise UserError(f"--ppi-{what} {col}: not a column of the human data; available: "
                            f"{', '.join(map(str, human.columns))}")
    if weight:
        out["w"] = pd.to_numeric(human[weight], errors="coerce").to_numpy(float)
        if weight in model_only:
            out["w_unlabeled"] = pd.to_numeric(model_only[weight], errors="coerce").to_numpy(float)
    if cluster:
        out["clusters"] = human[cluster].astype(str).to_numpy()
        own = pd.Series(["unit " + str(u) for u in model_only.index], index=model_only.index)
        ids = model_only[cluster].astype(str).where(model_only[cluster].notna(), own) if cluster in model_only else own
        out["clusters_unlabeled"] = ids.to_numpy()
    return out
