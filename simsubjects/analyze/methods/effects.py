"""Effect sizes, their conversions, and the across-finding statistics of `simsubjects bench`.

Unit of every per-finding function: one effect (a finding's contrast). Unit of every across-finding
function: the finding (one pair of effects per finding); a bootstrap interval resamples findings.

Conversions (Borenstein, Hedges, Higgins & Rothstein 2009, *Introduction to Meta-Analysis*, ch. 7;
Chinn 2000, Stat Med 19:3127): d = log OR * sqrt(3) / pi; r = d / sqrt(d^2 + a), a = (n1 + n2)^2 /
(n1 n2) (a = 4 for equal groups); d = 2 r / sqrt(1 - r^2); Fisher's z = atanh(r). Cohen's h
(Cohen 1988, 6.2) = 2 asin(sqrt p1) - 2 asin(sqrt p2); Cohen's w = sqrt(sum (p - p0)^2 / p0).
pingouin's `convert_effsize` holds the d <-> r step only and is not a dependency of the package;
these are one-line formulas, written here with their sources so every scale has one home.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

SCALES = ("d", "r", "z", "log_or", "or", "h", "diff_prop", "w", "q")


# -- per effect -------------------------------------------------------------------------------------

def log_odds_ratio(p1: float, p2: float) -> float:
    """log(p1/(1-p1)) - log(p2/(1-p2)): the log odds ratio of group 1 vs group 2 (unit: one contrast)."""
    return float(math.log(p1 / (1 - p1)) - math.log(p2 / (1 - p2))) if 0 < p1 < 1 and 0 < p2 < 1 else (
        math.copysign(math.inf, p1 - p2) if p1 != p2 else 0.0)


def cohens_h(p1: float, p2: float) -> float:
    """Cohen's h = 2 asin(sqrt p1) - 2 asin(sqrt p2) (Cohen 1988, eq. 6.2.1)."""
    return float(2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2)))


def cohens_w(p: np.ndarray, p0: np.ndarray) -> float:
    """Cohen's w = sqrt(sum (p - p0)^2 / p0) over the cells (Cohen 1988, eq. 7.2.1); for a contingency
    table p is the joint distribution and p0 the product of its margins."""
    p, p0 = np.asarray(p, float), np.asarray(p0, float)
    keep = p0 > 0
    return float(np.sqrt(np.sum((p[keep] - p0[keep]) ** 2 / p0[keep])))


def cohens_w_table(joint: np.ndarray) -> float:
    """Cohen's w of a two-way table of joint probabilities (rows: groups, columns: answers)."""
    joint = np.asarray(joint, float) / np.sum(joint)
    return cohens_w(joint, np.outer(joint.sum(1), joint.sum(0)))


def cohens_d(m1: float, v1: float, m2: float, v2: float, n1: float | None = None, n2: float | None = None) -> float:
    """(m1 - m2) / pooled sd; the pooled variance weights the groups by n - 1 (equal weights without Ns),
    as pingouin.compute_effsize(eftype='cohen') and R's effectsize::cohens_d."""
    if n1 and n2 and n1 + n2 > 2:
        pooled = ((n1 - 1) * v1 + (n2 - 1) * v2) / (n1 + n2 - 2)
    else:
        pooled = (v1 + v2) / 2
    return float((m1 - m2) / math.sqrt(pooled)) if pooled > 0 else (
        math.copysign(math.inf, m1 - m2) if m1 != m2 else 0.0)


def one_sample_d(m: float, v: float, mu: float) -> float:
    """(mean - mu) / sd (Cohen 1988, 2.3)."""
    return float((m - mu) / math.sqrt(v)) if v > 0 else (math.copysign(math.inf, m - mu) if m != mu else 0.0)


def d_to_r(d: float, n1: float | None = None, n2: float | None = None) -> float:
    """r = d / sqrt(d^2 + a), a = (n1+n2)^2/(n1 n2), 4 without Ns (Borenstein et al. 2009, eq. 7.5)."""
    a = (n1 + n2) ** 2 / (n1 * n2) if n1 and n2 else 4.0
    return float(d / math.sqrt(d * d + a)) if math.isfinite(d) else math.copysign(1.0, d)


def r_to_d(r: float) -> float:
    """d = 2 r / sqrt(1 - r^2) (Borenstein et al. 2009, eq. 7.7)."""
    return float(2 * r / math.sqrt(1 - r * r)) if abs(r) < 1 else math.copysign(math.inf, r)


def logor_to_d(log_or: float) -> float:
    """d = log OR * sqrt(3) / pi (Chinn 2000; Borenstein et al. 2009, eq. 7.1)."""
    return float(log_or * math.sqrt(3) / math.pi)


def d_to_logor(d: float) -> float:
    """log OR = d * pi / sqrt(3) (the inverse of logor_to_d)."""
    return float(d * math.pi / math.sqrt(3))


def fisher_z(r: float) -> float:
    """Fisher's z = atanh(r), r clamped to +-(1 - 1e-6) as HumanStudy-Bench's fisher_z_transform."""
    return float(math.atanh(max(-1 + 1e-6, min(1 - 1e-6, r))))


def h_to_d(h: float) -> float:
    """Cohen's h is on d's scale for proportions near .5 (Cohen 1988, 6.2): taken as d unchanged."""
    return float(h)


def to_d(value: float, scale: str, n1: float | None = None, n2: float | None = None) -> float:
    """An effect on `scale` expressed as Cohen's d (nan where no conversion exists, e.g. w, q)."""
    if value is None or not math.isfinite(float(value)) and scale != "d":
        return math.nan
    if scale == "d":
        return float(value)
    if scale == "r":
        return r_to_d(value)
    if scale == "z":
        return r_to_d(math.tanh(value))
    if scale == "log_or":
        return logor_to_d(value)
    if scale == "or":
        return logor_to_d(math.log(value)) if value > 0 else math.nan
    if scale == "h":
        return h_to_d(value)
    return math.nan


def to_r(value: float, scale: str, n1: float | None = None, n2: float | None = None) -> float:
    """An effect on `scale` expressed as a correlation r (via d, Borenstein's a from the Ns)."""
    if scale == "r":
        return float(value)
    if scale == "z":
        return math.tanh(value)
    d = to_d(value, scale)
    return d_to_r(d, n1, n2) if math.isfinite(d) else math.nan


def se_d(d: float, n1: float, n2: float | None = None) -> float:
    """Standard error of d: sqrt((n1+n2)/(n1 n2) + d^2/(2(n1+n2))) for two groups, sqrt(1/n + d^2/(2n))
    for one sample (Borenstein et al. 2009, eq. 4.20; HumanStudy-Bench's cohens_d_se)."""
    if n2:
        return float(math.sqrt((n1 + n2) / (n1 * n2) + d * d / (2 * (n1 + n2))))
    return float(math.sqrt(1 / n1 + d * d / (2 * n1)))


def se_from_ci(low: float, high: float, level: float = 0.95) -> float:
    """A symmetric (normal) interval's standard error: (high - low) / (2 z_{1-(1-level)/2})."""
    return float((high - low) / (2 * stats.norm.ppf(1 - (1 - level) / 2)))


# -- across findings (unit: the finding) -------------------------------------------------------------

def _pairs(x, y) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    return x[keep], y[keep]


def direction_agreement(model, reference) -> float:
    """Share of findings whose model effect has the reference's sign (findings with a zero or missing
    effect on either side are left out). Unit: finding."""
    x, y = _pairs(model, reference)
    keep = (x != 0) & (y != 0)
    return float(np.mean(np.sign(x[keep]) == np.sign(y[keep]))) if keep.any() else math.nan


def pearson_boot(x, y, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """Pearson r of the pairs (scipy.stats.pearsonr) with a percentile bootstrap interval that resamples
    findings (numpy, seeded). Unit: finding."""
    x, y = _pairs(x, y)
    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"estimate": math.nan, "conf.low": math.nan, "conf.high": math.nan, "n": n}
    r = float(stats.pearsonr(x, y).statistic)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    xb, yb = x[idx], y[idx]
    xc, yc = xb - xb.mean(1, keepdims=True), yb - yb.mean(1, keepdims=True)
    den = np.sqrt((xc ** 2).sum(1) * (yc ** 2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rb = (xc * yc).sum(1) / den
    rb = rb[np.isfinite(rb)]
    a = (1 - level) / 2
    return {"estimate": r, "conf.low": float(np.quantile(rb, a)), "conf.high": float(np.quantile(rb, 1 - a)), "n": n}


def lins_ccc(x, y, w=None) -> float:
    """Lin's concordance correlation 2 cov / (var x + var y + (mean x - mean y)^2) (Lin 1989), with
    weights as HumanStudy-Bench's weighted_ccc (population moments, weights normalised). Unit: finding."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    w = np.ones_like(x) if w is None else np.asarray(w, float)
    keep = np.isfinite(x) & np.isfinite(y) & np.isfinite(w) & (w > 0)
    x, y, w = x[keep], y[keep], w[keep] / w[keep].sum() if keep.any() else w[keep]
    if len(x) < 2:
        return math.nan
    mx, my = np.sum(w * x), np.sum(w * y)
    vx, vy = np.sum(w * (x - mx) ** 2), np.sum(w * (y - my) ** 2)
    cov = np.sum(w * (x - mx) * (y - my))
    den = vx + vy + (mx - my) ** 2
    return float(2 * cov / den) if den > 0 else math.nan


def reliability(effects, se) -> float:
    """Reliability of a set of observed effects given their sampling errors: (var - mean se^2) / var, the
    share of the effects' variance that is not sampling error (Hewitt et al. 2024, supplement). Unit: finding."""
    e, s = _pairs(effects, se)
    if len(e) < 3:
        return math.nan
    v = float(np.var(e, ddof=1))
    return float((v - np.mean(s ** 2)) / v) if v > 0 else math.nan


def disattenuated_r(model, observed, observed_se) -> dict:
    """Pearson r of model and observed effects divided by sqrt of the observed effects' reliability
    (Hewitt et al. 2024: only the observed side has sampling error; the model's exact effects have none).
    Unit: finding."""
    x = np.asarray(model, float)
    y = np.asarray(observed, float)
    s = np.asarray(observed_se, float)
    keep = np.isfinite(x) & np.isfinite(y) & np.isfinite(s)
    x, y, s = x[keep], y[keep], s[keep]
    rel = reliability(y, s)
    r = float(stats.pearsonr(x, y).statistic) if len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0 else math.nan
    return {"estimate": r / math.sqrt(rel) if rel > 0 else math.nan, "r": r, "reliability": rel, "n": int(len(x))}


def false_positive_rate(power_at_original_n, replication_supported) -> dict:
    """Among findings the replication did not support: the mean probability that a study of the original
    size drawn from the model's population is significant in the original direction (the expected share of
    'significant' findings where people found nothing; Cui et al. 2025's false positives). Unit: finding."""
    p = np.asarray(power_at_original_n, float)
    s = np.asarray(replication_supported, dtype=object)
    keep = np.array([v is not None and v == v for v in s]) & np.isfinite(p)
    null = keep & np.array([v is False or v == 0 for v in s])
    return {"estimate": float(p[null].mean()) if null.any() else math.nan, "n": int(null.sum())}
