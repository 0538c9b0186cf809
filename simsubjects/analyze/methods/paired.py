"""Paired comparisons of two systems (two models, or a model and people) on the same items.

Users of inspect_ai and lm-evaluation-harness ask for these (inspect #2176, lm-eval #3831): two
models scored on one item set are paired data, and unpaired intervals waste that pairing. One
function per test, each a one-row broom table (estimate, std.error, statistic, df, p.value,
conf.low, conf.high, n); `paired_comparisons` runs them for every pair of systems and adds Holm
and Benjamini-Hochberg adjusted p-values across the pairs (multiplicity.add_adjusted).

* `paired_test` — paired t-test of the mean difference (tests.paired_t, the package's one; R t.test(paired = TRUE));
* `wilcoxon` — Wilcoxon signed-rank test (scipy.stats.wilcoxon, zero differences dropped as R's
  wilcox.test; exact when n < 50 without ties, else the normal approximation with continuity
  correction); estimate = the median difference;
* `mcnemar` — McNemar's test for binary choices (statsmodels' mcnemar): exact = the binomial test
  on the discordant pairs (R binom.test), else the chi-square with continuity correction (R
  mcnemar.test); estimate = the difference in proportions;
* `cluster_bootstrap` — percentile interval of the mean difference, resampling clusters (e.g.
  stories, question keys) with all their items, so correlated items are not counted as
  independent; vectorized over draws.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from scipy import stats

from simsubjects.errors import UserError
from simsubjects.analyze.methods import tests

COLUMNS = ["test", "estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n"]


def _pair(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1:
        raise UserError(f"paired data: x and y need the same items (got {x.shape} and {y.shape})")
    ok = ~(np.isnan(x) | np.isnan(y))
    return x[ok], y[ok]


def _row(**kw) -> pd.DataFrame:
    return pd.DataFrame([{c: kw.get(c, math.nan) for c in COLUMNS}])


def paired_test(x, y, level: float = 0.95) -> pd.DataFrame:
    """Paired t-test of mean(x - y) = 0: tests.paired_t (the package's one) on the complete pairs."""
    x, y = _pair(x, y)
    return _row(**tests.paired_t(x, y, level))


def wilcoxon(x, y) -> pd.DataFrame:
    """Wilcoxon signed-rank test of x - y symmetric about 0 (zero differences dropped)."""
    x, y = _pair(x, y)
    d = x - y
    nz = d[d != 0]
    if nz.size < 1:
        return _row(test="Wilcoxon signed-rank test", estimate=float(np.median(d)) if d.size else math.nan, n=d.size)
    ties = np.unique(np.abs(nz)).size < nz.size
    method = "exact" if nz.size < 50 and not ties else "approx"
    res = stats.wilcoxon(nz, zero_method="wilcox", correction=method == "approx", method=method)
    # statistic: R's V, the rank sum of the positive differences (scipy's two-sided statistic is
    # min(W+, W-), which names no direction and differs from R's whenever W+ > W-)
    v = float(stats.rankdata(np.abs(nz))[nz > 0].sum())
    return _row(test="Wilcoxon signed-rank test", estimate=float(np.median(d)), statistic=v,
                **{"p.value": float(res.pvalue)}, n=int(nz.size))


def mcnemar(x, y, exact: bool = True) -> pd.DataFrame:
    """McNemar's test of equal proportions of 1 in paired binary choices x and y."""
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    x, y = _pair(x, y)
    if not (np.isin(x, (0, 1)).all() and np.isin(y, (0, 1)).all()):
        raise UserError("mcnemar: x and y must be binary (0/1) choices")
    b, c = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
    table = [[int(((x == 1) & (y == 1)).sum()), b], [c, int(((x == 0) & (y == 0)).sum())]]
    est = float(x.mean() - y.mean()) if x.size else math.nan
    name = "McNemar exact (binomial)" if exact else "McNemar chi-square"
    if b + c == 0:
        return _row(test=name, estimate=est, **{"p.value": 1.0}, n=x.size)
    res = sm_mcnemar(table, exact=exact, correction=True)
    return _row(test=name, estimate=est, statistic=float(res.statistic), df=math.nan if exact else 1.0,
                **{"p.value": float(res.pvalue)}, n=int(x.size))


def cluster_bootstrap(x, y, cluster=None, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Percentile bootstrap of mean(x - y), resampling clusters (default: every item its own cluster).

    The estimate is the plain mean difference; a draw takes G clusters with replacement and
    divides the drawn clusters' summed differences by their item count (vectorized: one index row
    per draw). The p-value is the two-sided percentile p: twice the smaller share of draws on either
    side of 0, at least 1 / n_boot.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    cl = np.arange(x.size) if cluster is None else np.asarray(cluster)
    if cl.shape != x.shape:
        raise UserError("cluster_bootstrap: one cluster label per item")
    ok = ~(np.isnan(x) | np.isnan(y))
    d, codes = (x - y)[ok], pd.factorize(cl[ok])[0]
    G = int(codes.max()) + 1 if codes.size else 0
    if G < 2:
        return _row(test="Cluster bootstrap", estimate=d.mean() if d.size else math.nan, n=d.size)
    sums, counts = np.bincount(codes, weights=d, minlength=G), np.bincount(codes, minlength=G).astype(float)
    rng = np.random.default_rng(seed)
    draws = np.empty(n_boot)
    step = max(1, 2_000_000 // G)
    for s in range(0, n_boot, step):  # chunks bound memory; each chunk is one vectorized draw matrix
        idx = rng.integers(0, G, size=(min(step, n_boot - s), G))
        draws[s:s + idx.shape[0]] = sums[idx].sum(1) / counts[idx].sum(1)
    lo, hi = np.quantile(draws, [(1 - level) / 2, 1 - (1 - level) / 2])
    p = max(min(1.0, 2 * min((draws <= 0).mean(), (draws >= 0).mean())), 1 / n_boot)
    return _row(test="Cluster bootstrap", estimate=float(d.mean()), **{"std.error": float(draws.std(ddof=1)),
                "p.value": p, "conf.low": float(lo), "conf.high": float(hi)}, n=int(d.size), df=math.nan)


def paired_comparisons(data: pd.DataFrame, unit: str = "item", system: str = "model", value: str = "y",
                       cluster: str | None = None, binary: str | None = None, by=(), n_boot: int = 2000,
                       seed: int = 0) -> pd.DataFrame:
    """Every pair of systems compared on their shared units; Holm/BH per test across the pairs.

    `data`: one row per system x unit with the score `value` (and a 0/1 choice column `binary`
    for McNemar, when given). Columns out: [by...], system_a, system_b, test, estimate (a - b), ...,
    n, family, p.value.holm, p.value.bh.
    """
    from .multiplicity import add_adjusted

    need = [unit, system, value, *by, *([cluster] if cluster else []), *([binary] if binary else [])]
    missing = [c for c in need if c not in data]
    if missing:
        raise UserError(f"paired data: missing column(s) {', '.join(missing)}")
    rows = []
    groups = data.groupby(list(by), sort=False) if by else [((), data)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        systems = list(dict.fromkeys(g[system]))
        for a, b in itertools.combinations(systems, 2):
            m = g[g[system] == a].merge(g[g[system] == b], on=unit, suffixes=("_a", "_b"))
            if m.empty:
                continue
            xa, xb = m[f"{value}_a"].to_numpy(float), m[f"{value}_b"].to_numpy(float)
            parts = [paired_test(xa, xb), wilcoxon(xa, xb),
                     cluster_bootstrap(xa, xb, m[f"{cluster}_a"].to_numpy() if cluster else None, n_boot, seed)]
            if binary:
                parts.append(mcnemar(m[f"{binary}_a"].to_numpy(float), m[f"{binary}_b"].to_numpy(float)))
            for part in parts:
                rows.append({**dict(zip(by, key)), "system_a": a, "system_b": b, **part.iloc[0].to_dict()})
    out = pd.DataFrame(rows, columns=[*by, "system_a", "system_b", *COLUMNS])
    return add_adjusted(out, by=[*by, "test"]) if len(out) else out
