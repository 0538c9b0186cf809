"""Conjoint estimation with cregg's conventions: AMCEs, marginal means, group differences, diagnostics.

Every estimator follows cregg 0.3.7 (Leeper; github.com/leeper/cregg), which fits
`survey::svyglm(y ~ features, svydesign(ids = id, weights = w))`:

* AMCEs (Hainmueller, Hopkins & Yamamoto 2014, eq. 5; `cregg::amce`): one linear regression of
  the outcome on treatment-coded dummies of every attribute. A restricted attribute pair adds the
  pair's interaction; the AMCE of a level is then its main effect plus the mean of its estimable
  interactions (cregg's `calculate_amce`: weight 1 on the main effect, 1/K on each of the K - 1
  estimable interactions), i.e. the average over the combinations that can occur.
* Columns that are linearly dependent on earlier ones are dropped in column order, as R's `lm`/`glm`
  do (dqrdc2's limited pivoting). Which interaction is dropped changes K above, so the order of the
  columns is R's: intercept, main effects in feature order, then each pair's interaction with the
  first attribute's levels varying fastest.
* Standard errors, clustered by `id` (each row its own cluster without one):
  - "cregg": survey's linearization, G/(G-1) * A [sum_g (u_g - mean u)(u_g - mean u)'] A with
    A = (X'WX)^-1 and u_g the cluster's sum of w_i x_i e_i (`survey::svyrecvar`);
  - "stata": G/(G-1) * (N-1)/(N-K) * A [sum_g u_g u_g'] A (CR1, Stata's `vce(cluster)`);
  - "CR2": Bell & McCaffrey (2002), as estimatr's `se_type = "CR2"`.
  Tests use normal quantiles, as cregg does (z statistics).
* Marginal means (Leeper, Hobolt & Tilley 2020; `cregg::mm`): per attribute, the weighted mean of
  the outcome at each level, from `svyglm(y ~ 0 + level)` with the same clustered errors; the
  z statistic tests `h0` (0.5 is the no-preference value of a two-profile forced choice).
* Group differences: `mm_diffs` (each group's MMs minus the first group's, independent samples),
  `amce_diffs` (interactions of every attribute with the group in one model), `cj_anova` (Wald F
  test that every attribute x group interaction is 0, CR2 clustered by respondent) and `cj_anova_cregg`
  (cregg's unclustered F test of the model with all attribute x group interactions against the one without).

Neither statsmodels nor linearmodels drops aliased columns the way R does, centers the cluster
totals as survey does, or computes CR2; that is why the sandwich is written here (a few lines).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse, stats

from simsubjects.errors import UserError

from .regression import inv_sqrt_eigenvalues

SE_TYPES = ("cregg", "stata", "CR2")


def _one_thread(fn):
    """Run with single-threaded BLAS: the matrices here are at most a few hundred columns wide, and
    OpenBLAS's thread pool costs more than it saves on them (0.3 s vs 1 ms per product on a busy 2-core
    machine), which would break the < 1 s budget for the 14k human rows."""
    import functools

    from threadpoolctl import threadpool_limits

    @functools.wraps(fn)
    def run(*args, **kwargs):
        with threadpool_limits(limits=1, user_api="blas"):
            return fn(*args, **kwargs)
    return run
COLUMNS = ["feature", "level", "estimate", "std.error", "statistic", "p.value", "conf.low", "conf.high", "n"]


# ------------------------------------------------------------------ input checks

def _prepare(data: pd.DataFrame, outcome: str | None, features: list[str], id=None, weights=None,
             extra: tuple[str, ...] = ()) -> pd.DataFrame:
    """The rows used: needed columns present, features categorical (level order kept), NA rows dropped."""
    if not isinstance(data, pd.DataFrame):
        raise UserError("conjoint: data must be a pandas DataFrame")
    if not features:
        raise UserError("conjoint: name at least one feature")
    need = [c for c in (outcome, *features, id, weights, *extra) if c]
    missing = [c for c in need if c not in data.columns]
    if missing:
        raise UserError(f"conjoint: column(s) {', '.join(map(repr, missing))} not in the data "
                        f"(has {', '.join(map(str, data.columns[:12]))}{' ...' if data.shape[1] > 12 else ''})")
    df = data[list(dict.fromkeys(need))].dropna().copy()
    for f in features:
        if not isinstance(df[f].dtype, pd.CategoricalDtype):
            df[f] = pd.Categorical(df[f])
        df[f] = df[f].cat.remove_unused_categories()
    if outcome:
        df[outcome] = pd.to_numeric(df[outcome], errors="raise").astype(float)
    if weights and (df[weights] < 0).any():
        raise UserError(f"conjoint: weights column {weights!r} has negative values")
    if df.empty:
        raise UserError("conjoint: no complete rows (every row has a missing value in the columns used)")
    return df


def _check_se(se_type: str) -> None:
    if se_type not in SE_TYPES:
        raise UserError(f"conjoint: se_type {se_type!r}; choose {', '.join(SE_TYPES)}")


# ------------------------------------------------------------------ design matrix and fit

@dataclass
class Column:
    vars: tuple[str, ...]  # () for the intercept
    levels: tuple[str, ...]


def _design(df: pd.DataFrame, features: list[str], constraints=(), intercept: bool = True):
    """Treatment-coded 0/1 columns in R's model.matrix order (see module docstring), as a sparse matrix."""
    n = len(df)
    cols, meta = [], []
    if intercept:
        cols.append(np.arange(n))
        meta.append(Column((), ()))
    codes = {f: df[f].cat.codes.to_numpy() for f in features}
    cats = {f: list(df[f].cat.categories) for f in features}
    for f in features:
        for k, lev in enumerate(cats[f][1:], start=1):
            cols.append(np.flatnonzero(codes[f] == k))
            meta.append(Column((f,), (lev,)))
    for a, b in constraints:
        for kb, lb in enumerate(cats[b][1:], start=1):
            for ka, la in enumerate(cats[a][1:], start=1):
                cols.append(np.flatnonzero((codes[a] == ka) & (codes[b] == kb)))
                meta.append(Column((a, b), (la, lb)))
    return _sparse(cols, n), meta


def _sparse(rows_per_column: list[np.ndarray], n: int) -> sparse.csc_matrix:
    indptr = np.r_[0, np.cumsum([len(r) for r in rows_per_column])]
    idx = np.concatenate(rows_per_column) if rows_per_column else np.zeros(0, int)
    return sparse.csc_matrix((np.ones(len(idx)), idx, indptr), shape=(n, len(rows_per_column)))


def _times(X: sparse.csc_matrix, g: np.ndarray) -> sparse.csc_matrix:
    """Every column of X multiplied by the 0/1 column g (interactions with a group dummy)."""
    return sparse.csc_matrix(X.multiply(g[:, None]))


def _independent(G: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Columns R's lm/glm keep: in order, drop one that is (numerically) a combination of the kept ones.

    R's QR (dqrdc2) moves such columns to the end in column order; this is the same greedy rule on
    the Gram matrix (a sequential Cholesky, cheap for a few hundred columns): a column is dropped when
    its squared residual on the kept columns is below tol times its squared norm. Conjoint designs are
    0/1 dummies, so a dependence is exact (residual ~1e-16) and an independent column is far above tol.
    """
    from scipy.linalg import solve_triangular

    p = G.shape[0]
    keep: list[int] = []
    L = np.zeros((p, p))
    for j in range(p):
        d = G[j, j]
        if d <= 0:
            continue
        k = len(keep)
        l = solve_triangular(L[:k, :k], G[keep, j], lower=True) if k else np.zeros(0)
        r = d - l @ l
        if r > tol * d:
            L[k, :k], L[k, k] = l, np.sqrt(r)
            keep.append(j)
    mask = np.zeros(p, bool)
    mask[keep] = True
    return mask


@dataclass
class Fit:
    coef: np.ndarray  # full length, NaN where aliased
    vcov: np.ndarray  # full size, NaN rows/columns where aliased
    meta: list[Column]
    n: int
    rank: int = 0
    rss: float = 0.0  # weighted residual sum of squares


def _cluster_matrix(cluster: np.ndarray) -> sparse.csr_matrix:
    """G x n indicator: row g sums the rows of cluster g."""
    _, inv = np.unique(cluster, return_inverse=True)
    return sparse.csr_matrix((np.ones(len(inv)), (inv, np.arange(len(inv)))), shape=(inv.max() + 1, len(inv)))


def _cr2_meat(Xt: np.ndarray, et: np.ndarray, A: np.ndarray, cluster: np.ndarray) -> np.ndarray:
    """Bell-McCaffrey: sum_g X_g' M_g e_g e_g' M_g X_g with M_g = (I - H_gg)^(-1/2), clusters batched by size.

    M_g is the generalized inverse square root (regression.inv_sqrt_eigenvalues), as estimatr's: with few
    model respondents one alone can identify a coefficient; a clip to 1e-12 there moved `make demo`'s
    cj_anova F by 4e-6 from estimatr's (27.8097718 against 27.8097677)."""
    order = np.argsort(cluster, kind="stable")
    c = cluster[order]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    sizes = np.diff(np.r_[starts, len(c)])
    meat = np.zeros((Xt.shape[1], Xt.shape[1]))
    for s in np.unique(sizes):
        idx = order[(starts[sizes == s])[:, None] + np.arange(s)]  # (G_s, s) row indices
        Xg, eg = Xt[idx], et[idx]  # (G_s, s, p), (G_s, s)
        H = (Xg @ A) @ Xg.transpose(0, 2, 1)  # batched products: einsum's three-way loop took seconds
        vals, vecs = np.linalg.eigh(np.eye(s) - H)
        M = (vecs * inv_sqrt_eigenvalues(vals)[:, None, :]) @ vecs.transpose(0, 2, 1)
        u = (Xg.transpose(0, 2, 1) @ (M @ eg[:, :, None]))[:, :, 0]
        meat += u.T @ u
    return meat


def weighted_fit(X, meta: list[Column], y: np.ndarray, w: np.ndarray | None, cluster: np.ndarray | None,
                 se_type: str = "cregg") -> Fit:
    """Weighted least squares with R's aliasing and clustered errors; X sparse or dense, n x p."""
    X = sparse.csc_matrix(X)
    n, p = X.shape
    w = np.ones(n) if w is None else np.asarray(w, float)
    w = w / w.mean()  # svyglm rescales weights to mean 1 (estimates and errors do not depend on it)
    cluster = np.arange(n) if cluster is None else np.asarray(cluster)
    Xw = sparse.csc_matrix(X.multiply(w[:, None]))
    keep = _independent((X.T @ Xw).toarray())
    Xk, Xwk = X[:, keep], Xw[:, keep]
    A = np.linalg.inv((Xk.T @ Xwk).toarray())  # the kept columns are well conditioned 0/1 dummies
    beta = A @ (Xwk.T @ y)
    e = y - Xk @ beta
    G, k = len(np.unique(cluster)), Xk.shape[1]
    if se_type == "CR2":
        sw = np.sqrt(w)
        meat = _cr2_meat(Xk.toarray() * sw[:, None], e * sw, A, cluster)
    else:
        U = np.asarray((_cluster_matrix(cluster) @ Xk.multiply((w * e)[:, None])).todense())
        if se_type == "cregg":
            U = U - U.mean(axis=0)  # survey::svyrecvar centers the PSU totals
            meat = G / (G - 1) * (U.T @ U)
        else:  # stata
            meat = G / (G - 1) * (n - 1) / (n - k) * (U.T @ U)
    V = A @ meat @ A
    coef = np.full(p, np.nan)
    coef[keep] = beta
    vcov = np.full((p, p), np.nan)
    vcov[np.ix_(keep, keep)] = V
    rss = float(w @ e**2)
    return Fit(coef, vcov, meta, n, k, rss)


def _row(feature, level, est, var, n, alpha, h0=0.0) -> dict:
    se = float(np.sqrt(var)) if var is not None and np.isfinite(var) else np.nan
    z = (est - h0) / se if np.isfinite(se) and se > 0 else np.nan
    q = stats.norm.ppf(1 - alpha / 2)
    return {"feature": feature, "level": level, "estimate": float(est), "std.error": se, "statistic": z,
            "p.value": 2 * stats.norm.sf(abs(z)) if np.isfinite(z) else np.nan,
            "conf.low": est - q * se, "conf.high": est + q * se, "n": n}


def _by_groups(data: pd.DataFrame, by: str):
    if by not in data.columns:
        raise UserError(f"conjoint: by column {by!r} not in the data")
    g = data[by]
    levels = list(g.cat.categories) if isinstance(g.dtype, pd.CategoricalDtype) else sorted(g.dropna().unique())
    groups = [(lev, data[g == lev]) for lev in levels if (g == lev).any()]
    if len(groups) < 1:
        raise UserError(f"conjoint: by column {by!r} has no values")
    return groups


def _stack_by(fn, data, by, **kw) -> pd.DataFrame:
    parts = [fn(sub, **kw).assign(BY=str(lev)) for lev, sub in _by_groups(data, by)]
    out = pd.concat(parts, ignore_index=True)
    return out[["BY", *[c for c in out.columns if c != "BY"]]]


# ------------------------------------------------------------------ AMCE

@_one_thread
def amce(data: pd.DataFrame, outcome: str, features: list[str], *, id: str | None = None,
         weights: str | None = None, constraints=(), se_type: str = "cregg", alpha: float = 0.05,
         by: str | None = None) -> pd.DataFrame:
    """AMCE of every level (baseline rows: estimate 0, no error), cregg's `amce`/`cj(estimate = "amce")`.

    constraints: pairs (a, b) of restricted attributes, each estimated with its interaction.
    """
    _check_se(se_type)
    if by:
        return _stack_by(amce, data.dropna(subset=[by]), by, outcome=outcome, features=features, id=id,
                         weights=weights, constraints=constraints, se_type=se_type, alpha=alpha)
    constraints = [tuple(c) for c in constraints]
    flat = [v for c in constraints for v in c]
    if any(len(c) != 2 for c in constraints) or len(set(flat)) != len(flat) or not set(flat) <= set(features):
        raise UserError("conjoint: constraints must be pairs of distinct features, each feature in one pair at most")
    df = _prepare(data, outcome, features, id, weights)
    X, meta = _design(df, features, constraints)
    fit = weighted_fit(X, meta, df[outcome].to_numpy(float), df[weights].to_numpy(float) if weights else None,
               df[id].to_numpy() if id else None, se_type)
    index = {(c.vars, c.levels): j for j, c in enumerate(meta)}
    partner = {a: (b, 0) for a, b in constraints} | {b: (a, 1) for a, b in constraints}
    rows = []
    for f in features:
        levels = list(df[f].cat.categories)
        rows.append(_row(f, levels[0], 0.0, None, fit.n, alpha))
        for lev in levels[1:]:
            j = index[((f,), (lev,))]
            if f not in partner:
                rows.append(_row(f, lev, fit.coef[j], fit.vcov[j, j], fit.n, alpha))
                continue
            other, pos = partner[f]
            inter = [index[((f, other) if pos == 0 else (other, f),
                            (lev, m) if pos == 0 else (m, lev))] for m in list(df[other].cat.categories)[1:]]
            if not np.isfinite(fit.coef[j]):  # the main effect is aliased (a tiny run): not estimable
                rows.append(_row(f, lev, np.nan, None, fit.n, alpha))
                continue
            terms = [j] + [i for i in inter if np.isfinite(fit.coef[i])]
            wts = np.r_[1.0, np.full(len(terms) - 1, 1.0 / len(terms))]  # cregg's calculate_amce
            est = wts @ fit.coef[terms]
            rows.append(_row(f, lev, est, wts @ fit.vcov[np.ix_(terms, terms)] @ wts, fit.n, alpha))
    return pd.DataFrame(rows, columns=COLUMNS)


@_one_thread
def amce_diffs(data: pd.DataFrame, outcome: str, features: list[str], by: str, *, id: str | None = None,
               weights: str | None = None, se_type: str = "cregg", alpha: float = 0.05) -> pd.DataFrame:
    """Differences in AMCEs between each group and the first (cregg's `amce_diffs`, unrestricted designs)."""
    _check_se(se_type)
    df = _prepare(data, outcome, features, id, weights, extra=(by,))
    if not isinstance(df[by].dtype, pd.CategoricalDtype):
        df[by] = pd.Categorical(df[by])
    df[by] = df[by].cat.remove_unused_categories()
    groups = list(df[by].cat.categories)
    if len(groups) < 2:
        raise UserError(f"conjoint: by column {by!r} needs at least two groups")
    X, meta = _design(df, features)
    gcols, gmeta = _design(df, [by], intercept=False)
    inter, imeta = [], []
    for k, gm in enumerate(gmeta):  # R's (.) * by: the by dummies, then feature:by interactions
        inter.append(_times(X[:, 1:], gcols[:, [k]].toarray().ravel()))
        imeta += [Column(m.vars + (by,), m.levels + gm.levels) for m in meta[1:]]
    Xf = sparse.hstack([X, gcols, *inter], format="csc")
    fit = weighted_fit(Xf, meta + gmeta + imeta, df[outcome].to_numpy(float),
               df[weights].to_numpy(float) if weights else None, df[id].to_numpy() if id else None, se_type)
    rows = []
    first = len(meta) + len(gmeta)
    for j, c in enumerate(imeta, start=first):
        r = _row(c.vars[0], c.levels[0], fit.coef[j], fit.vcov[j, j], fit.n, alpha)
        rows.append({"BY": f"{c.levels[1]} - {groups[0]}", **r})
    return pd.DataFrame(rows, columns=["BY", *COLUMNS])


# ------------------------------------------------------------------ marginal means

@_one_thread
def mm(data: pd.DataFrame, outcome: str, features: list[str], *, id: str | None = None, weights: str | None = None,
       se_type: str = "cregg", alpha: float = 0.05, h0: float = 0.0, by: str | None = None) -> pd.DataFrame:
    """Marginal mean of the outcome at every level of every feature (cregg's `mm`); z tests h0."""
    _check_se(se_type)
    if by:
        return _stack_by(mm, data.dropna(subset=[by]), by, outcome=outcome, features=features, id=id,
                         weights=weights, se_type=se_type, alpha=alpha, h0=h0)
    df = _prepare(data, outcome, features, id, weights)
    y = df[outcome].to_numpy(float)
    w = df[weights].to_numpy(float) if weights else None
    cl = df[id].to_numpy() if id else None
    rows = []
    for f in features:
        codes = df[f].cat.codes.to_numpy()
        levels = list(df[f].cat.categories)
        X = (codes[:, None] == np.arange(len(levels))[None, :]).astype(float)
        fit = weighted_fit(X, [Column((f,), (lev,)) for lev in levels], y, w, cl, se_type)
        rows += [_row(f, lev, fit.coef[k], fit.vcov[k, k], fit.n, alpha, h0) for k, lev in enumerate(levels)]
    return pd.DataFrame(rows, columns=COLUMNS)


def mm_diffs(data: pd.DataFrame, outcome: str, features: list[str], by: str, *, id: str | None = None,
             weights: str | None = None, se_type: str = "cregg", alpha: float = 0.05, h0: float = 0.0) -> pd.DataFrame:
    """Each group's MMs minus the first group's (cregg's `mm_diffs`): se = sqrt(se_1^2 + se_0^2) when each
    respondent is in one group. When the grouping varies within respondent (e.g. the profile's position),
    the two MMs share respondents and that formula drops their covariance (the audit: s.e. about 10% too
    small); there the difference's variance is c'Vc from one fit of the level x group cell means with
    errors clustered by respondent (survey::svycontrast on svyglm; cregg has no such case)."""
    m = mm(data, outcome, features, id=id, weights=weights, se_type=se_type, alpha=alpha, by=by)
    groups = list(dict.fromkeys(m["BY"]))
    if len(groups) < 2:
        raise UserError(f"conjoint: by column {by!r} needs at least two groups")
    base = m[m["BY"] == groups[0]].set_index(["feature", "level"])
    q = stats.norm.ppf(1 - alpha / 2)
    shared = _shared_respondent_se(data, outcome, features, by, id, weights, se_type, groups) if id else None
    parts = []
    for g in groups[1:]:
        cur = m[m["BY"] == g].set_index(["feature", "level"])
        d = pd.DataFrame({"estimate": cur["estimate"] - base["estimate"],
                          "std.error": np.sqrt(cur["std.error"] ** 2 + base["std.error"] ** 2),
                          "n": cur["n"] + base["n"]}).reset_index()
        if shared is not None:  # respondents in both groups: the covariance enters
            d["std.error"] = [shared.get((f, str(lev), str(g)), np.nan) for f, lev in zip(d["feature"], d["level"])]
        d["statistic"] = (d["estimate"] - h0) / d["std.error"]
        d["p.value"] = 2 * stats.norm.sf(d["statistic"].abs())
        d["conf.low"], d["conf.high"] = d["estimate"] - q * d["std.error"], d["estimate"] + q * d["std.error"]
        parts.append(d.assign(BY=f"{g} - {groups[0]}"))
    return pd.concat(parts, ignore_index=True)[["BY", *COLUMNS]]


def _shared_respondent_se(data, outcome, features, by, id, weights, se_type, groups) -> dict | None:
    """{(feature, level, group): se of MM(group) - MM(first group)} from one clustered fit of the level x
    group cell means, or None when no respondent is in two groups (cregg's formula is then exact)."""
    df = _prepare(data.dropna(subset=[by]), outcome, features, id, weights, extra=(by,))
    grp = df[by].astype(str).to_numpy()
    if not (df.assign(_g=grp).groupby(id, observed=True)["_g"].nunique() > 1).any():
        return None
    names = [str(g) for g in groups]
    y = df[outcome].to_numpy(float)
    w = df[weights].to_numpy(float) if weights else None
    cl = df[id].to_numpy()
    out = {}
    for f in features:
        codes = df[f].cat.codes.to_numpy()
        levels = list(df[f].cat.categories)
        cells = [(k, g) for k in range(len(levels)) for g in names]
        X = np.column_stack([(codes == k) & (grp == g) for k, g in cells]).astype(float)
        fit = weighted_fit(X, [Column((), ())] * X.shape[1], y, w, cl, se_type)
        V = fit.vcov
        for k, lev in enumerate(levels):
            j = cells.index((k, names[0]))
            for g in names[1:]:
                i = cells.index((k, g))
                out[(f, str(lev), g)] = float(np.sqrt(V[i, i] + V[j, j] - 2 * V[i, j]))
    return out


def _interacted(data, outcome, features, by, constraints, id=None):
    """The rows used and the design of y ~ (features) * by: (df, X of y ~ features, the full design)."""
    df = _prepare(data, outcome, features, id=id, extra=(by,))
    df[by] = pd.Categorical(df[by]).remove_unused_categories()
    if len(df[by].cat.categories) < 2:
        raise UserError(f"conjoint: by column {by!r} needs at least two groups")
    X, _ = _design(df, features, [tuple(c) for c in constraints])
    G, _ = _design(df, [by], intercept=False)
    Xf = sparse.hstack([X, G, *[_times(X[:, 1:], G[:, [k]].toarray().ravel()) for k in range(G.shape[1])]],
                       format="csc")
    return df, X, Xf


CJ_ANOVA_TEST = "Wald F, CR2 clustered by respondent, F(q, G - p) (clubSandwich Naive-Fp)"


@_one_thread
def cj_anova(data: pd.DataFrame, outcome: str, features: list[str], by: str, *, id: str | None = None,
             constraints=(), se_type: str = "CR2") -> pd.DataFrame:
    """The model-vs-people omnibus test: does `by` change anything? Every group and attribute x group
    coefficient of y ~ (features) * by is 0, with errors clustered by respondent `id` (the unit).

    A respondent answers several tasks, so their profiles are not independent: cregg's F test
    (`cj_anova_cregg`) rejected 7-13% of true nulls at 5% (bench/cj_null.py). Here W = b' V^-1 b on the
    q tested coefficients, V their cluster-robust covariance, and F = W / q against F(q, G - p) (G
    respondents, p coefficients). The default V is CR2 (Bell & McCaffrey 2002; Imbens & Kolesar 2016), with
    the m - p reference of clubSandwich's `Wald_test(test = "Naive-Fp")` (Pustejovsky & Tipton 2018): under
    the simulated nulls of bench/cj_null.py it rejects 4.9-5.8% at 5% (docs/benchmarks.md), where CR1 with
    F(q, G - 1) (Stata's `test` after `vce(cluster)`) rejected up to 6.1%. se_type "stata" (CR1) or
    "cregg" (survey's linearization) swap the covariance; the reference stays F(q, G - p).
    A respondent id that occurs in two groups is two respondents (the groups are separate samples).
    """
    _check_se(se_type)
    if not id:
        raise UserError("conjoint: cj_anova needs id= (the respondent column: the test clusters a respondent's "
                        "profiles); cregg's unclustered F test is cj_anova_cregg")
    df, X, Xf = _interacted(data, outcome, features, by, constraints, id=id)
    y = df[outcome].to_numpy(float)
    cluster = (df[by].astype(str) + "\r" + df[id].astype(str)).to_numpy()  # ids of two groups never merge
    full = weighted_fit(Xf, [Column((), ())] * Xf.shape[1], y, None, cluster, se_type)
    tested = np.arange(Xf.shape[1]) >= X.shape[1]
    ok = tested & np.isfinite(full.coef)
    b, V = full.coef[ok], full.vcov[np.ix_(ok, ok)]
    q = int(np.linalg.matrix_rank(V))
    n_clusters = len(np.unique(cluster))
    df2 = n_clusters - full.rank
    F = float(b @ np.linalg.pinv(V) @ b) / q if q else np.nan
    p = float(stats.f.sf(F, q, df2)) if q and df2 > 0 else np.nan
    test = CJ_ANOVA_TEST if se_type == "CR2" else CJ_ANOVA_TEST.replace("CR2", se_type).replace(
        " (clubSandwich Naive-Fp)", "")
    per_group = df.groupby(by, sort=False)[id].nunique()
    return pd.DataFrame([{"by": by, "test": test, "statistic": F, "df": q, "df.residual": df2, "p.value": p,
                          "n": full.n, "n_clusters": n_clusters, "unit": "respondent (cluster)",
                          "clusters_by_group": "; ".join(f"{g}: {k}" for g, k in per_group.items()),
                          "n_clusters_min": int(per_group.min()), "note": _few_clusters(per_group)}])


CJ_NULL_CLUSTERS = 60  # respondents per group in bench/cj_null.py, where F(q, G - p) was checked (docs/benchmarks.md)


def _few_clusters(per_group: pd.Series) -> str:
    """Why Naive-Fp is kept, and where its size is unchecked. clubSandwich's HTZ (Hotelling's T^2
    approximation, Tipton & Pustejovsky 2015) is the small-sample reference for few clusters; it is not
    computed here: no Python library computes it, a hand-written one would need checking against
    clubSandwich first, and F(q, G - p) with CR2 held its size (4.9-5.8% at 5%) in bench/cj_null.py's nulls
    at CJ_NULL_CLUSTERS respondents per group. Below that in some group the note says so."""
    small = per_group[per_group < CJ_NULL_CLUSTERS]
    if small.empty:
        return ""
    groups = ", ".join(f"{g} ({k})" for g, k in small.items())
    return (f"few clusters in {groups}: F(q, G - p) (Naive-Fp) held its size in simulations at "
            f"{CJ_NULL_CLUSTERS} respondents per group only; with fewer it may reject too often. "
            "clubSandwich::Wald_test(test = \"HTZ\") in R is the small-sample test")


cj_wald = cj_anova  # the name this test had (issue 25); one test, one name: cj_anova


@_one_thread
def cj_anova_cregg(data: pd.DataFrame, outcome: str, features: list[str], by: str, constraints=()) -> pd.DataFrame:
    """cregg's `cj_anova`: F test of y ~ features against y ~ (features) * by (OLS, unclustered, unweighted).

    Kept as cregg's twin; it takes a respondent's profiles as independent and over-rejects true nulls
    (bench/cj_null.py), so the report uses `cj_anova`.
    F = ((RSS_r - RSS_f) / (rank_f - rank_r)) / (RSS_f / (n - rank_f)), as R's anova(glm, glm, test = "F")
    for a gaussian model. The residual sums come from the sparse fit above: statsmodels' OLS would
    need the dense design and a pseudo-inverse, seconds on 28,000 x 200 columns.
    """
    df, X, Xf = _interacted(data, outcome, features, by, constraints)
    y = df[outcome].to_numpy(float)
    red = weighted_fit(X, [Column((), ())] * X.shape[1], y, None, None)
    full = weighted_fit(Xf, [Column((), ())] * Xf.shape[1], y, None, None)
    df1, df2 = full.rank - red.rank, full.n - full.rank
    F = ((red.rss - full.rss) / df1) / (full.rss / df2)
    return pd.DataFrame([{"by": by, "statistic": F, "df": df1, "df.residual": df2,
                          "p.value": float(stats.f.sf(F, df1, df2)), "n": full.n}])


# ------------------------------------------------------------------ design diagnostics

def freqs(data: pd.DataFrame, features: list[str], weights: str | None = None) -> pd.DataFrame:
    """Display frequency of every level (cregg's `cj_freqs`): (weighted) count of profiles."""
    df = _prepare(data, None, features, weights=weights)
    w = df[weights] if weights else pd.Series(1.0, index=df.index)
    rows = []
    for f in features:
        counts = w.groupby(df[f], observed=False).sum()
        rows += [{"feature": f, "level": lev, "estimate": float(v)} for lev, v in counts.items()]
    return pd.DataFrame(rows)


def props(data: pd.DataFrame, features: list[str], weights: str | None = None,
          margin: int | None = None) -> pd.DataFrame:
    """Joint display proportions of the level combinations of `features` (cregg's `cj_props`).

    margin None: shares of all profiles; margin k: shares within each level of the k-th feature
    (0-based, R's prop.table margin minus 1). A restricted combination shows Proportion 0.
    """
    df = _prepare(data, None, features, weights=weights)
    w = df[weights] if weights else pd.Series(1.0, index=df.index)
    tab = w.groupby([df[f] for f in features], observed=False).sum()
    if margin is None:
        prop = tab / tab.sum()
    else:
        prop = tab / tab.groupby(level=margin, observed=False).transform("sum")
    return prop.rename("Proportion").reset_index()


def restriction_violations(data: pd.DataFrame, pair: tuple[str, str], allowed) -> pd.DataFrame:
    """Rows whose (pair[0], pair[1]) combination is not in `allowed` (a set of level tuples)."""
    combos = list(zip(data[pair[0]].astype(str), data[pair[1]].astype(str)))
    bad = [c not in allowed for c in combos]
    return data[np.array(bad, dtype=bool)]


# ------------------------------------------------------------------ figures

def plot_estimates(table: pd.DataFrame, path: Path, title: str, xlabel: str, ref: float | None = 0.0,
                   series: str = "source") -> Path:
    """Dot-and-whisker plot, one panel block per feature, one colour per series (people, each model)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(table[series])) if series in table else ["estimate"]
    keys = list(dict.fromkeys(zip(table["feature"], table["level"])))
    ypos, labels, y = {}, [], 0
    last = None
    for f, lev in keys:
        if f != last:
            labels.append((y, f"{f}:", True))
            y += 1
            last = f
        ypos[(f, lev)] = y
        labels.append((y, f"  {lev}", False))
        y += 1
    fig, ax = plt.subplots(figsize=(7, 0.22 * y + 1.2))
    step = 0.6 / max(len(names), 1)
    for i, name in enumerate(names):
        sub = table[table[series] == name] if series in table else table
        off = (i - (len(names) - 1) / 2) * step
        ys = [ypos[(f, lev)] + off for f, lev in zip(sub["feature"], sub["level"])]
        err = np.vstack([sub["estimate"] - sub["conf.low"], sub["conf.high"] - sub["estimate"]])
        ax.errorbar(sub["estimate"], ys, xerr=np.nan_to_num(err), fmt="o", ms=3, lw=1, label=str(name))
    if ref is not None:
        ax.axvline(ref, color="grey", lw=0.8, ls="--")
    ax.set_yticks([p for p, _, _ in labels], [t for _, t, _ in labels], fontsize=7)
    for tick, (_, _, bold) in zip(ax.get_yticklabels(), labels):
        tick.set_fontweight("bold" if bold else "normal")
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9)
    if len(names) > 1:
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
