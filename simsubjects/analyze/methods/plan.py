"""Sample-size planning for a mixed-subjects study from a pilot (`simsubjects plan`).

A pilot holds the model's prediction for every unit and the human outcome for some of them.
From the units with both it estimates, for the estimand's coefficient of interest,

* sigma^2 — the per-unit variance of the human-only estimator (its standard error is sigma/sqrt(n));
* rho — the "PPI correlation" between the human and the model gradients (Broska, Howes & van Loon
  2024, the mixed subjects design; computed as ppi_py's `_get_ppi_corr`, capped at 1 - 1/n).

With lambda tuned (PPI++, Angelopoulos, Duchi & Zrnic 2024), n humans and N other units answered
by the model only, and kappa the model's gradient spread over the humans', the variance-optimal
lambda is rho / kappa * N / (N + n); PPI++ clips it to [0, 1], and the variance `plan` uses is that
clipped lambda's:

    lambda  = min(1, max(rho, 0) / kappa * N / (N + n))
    Var(n, N) = sigma^2 * ((1 - 2 lambda rho kappa + lambda^2 kappa^2) / n + lambda^2 kappa^2 / N).

Below the clip it is the textbook sigma^2 / n * (1 - rho^2 N / (N + n)); compressed predictions (a small
model's P(Yes) near 0.5: kappa << rho) ask for lambda > 1, and the textbook formula then promises what
lambda <= 1 cannot give, so `plan_table` requires kappa. A negative rho counts as 0 (the model cannot
help). With unlimited model answers (N -> infinity) and lambda < 1 a design needs (1 - rho^2) times the
humans of a human-only one. The interval's
width is 2 z Var^(1/2); the power of the two-sided level-alpha z test against an effect delta is
Phi(|delta|/se - z) + Phi(-|delta|/se - z).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from simsubjects.errors import UserError
from .ppi import ESTIMANDS, _ls, _ols_stats, design

COLUMNS = ["term", "design", "n_model", "sigma", "ppi_corr", "humans_for_width", "humans_for_power", "humans",
           "std.error", "width", "power", "n_effective"]


def ppi_corr(grads: np.ndarray, grads_hat: np.ndarray, inv_hessian: np.ndarray, coord: int) -> tuple[float, float]:
    """(sigma^2, rho) of one coefficient, as ppi_py.ppi_power_analysis._get_ppi_corr (population moments)."""
    sigma2, rho, _ = ppi_moments(grads, grads_hat, inv_hessian, coord)
    return sigma2, rho


def ppi_moments(grads: np.ndarray, grads_hat: np.ndarray, inv_hessian: np.ndarray, coord: int) -> tuple[float, float, float]:
    """(sigma^2, rho, kappa): ppi_corr's two and kappa = sd(model gradient) / sd(human gradient) of the
    coefficient. kappa is what the lambda <= 1 cap needs: the variance-optimal lambda is rho / kappa (times
    N/(N+n)), so compressed predictions (kappa << rho) ask for lambda > 1, which PPI++ clips to 1."""
    n = grads.shape[0]
    gc, hc = grads - grads.mean(0), grads_hat - grads_hat.mean(0)
    cov, var_h, var_g = gc.T @ hc / n, hc.T @ hc / n, gc.T @ gc / n
    sigma2 = np.diag(inv_hessian @ var_g @ inv_hessian)[coord]
    tau2 = np.diag(inv_hessian @ var_h @ inv_hessian)[coord]
    num = np.diag(inv_hessian @ cov @ inv_hessian)[coord]
    den = math.sqrt(sigma2 * tau2)
    rho = num / den if den > 0 else 0.0
    kappa = math.sqrt(tau2 / sigma2) if sigma2 > 0 else math.nan
    return float(sigma2), float(min(rho, 1 - 1 / n)), float(kappa)


def pilot_moments(y, yhat, X=None, coord: int = 0) -> tuple[float, float]:
    """sigma^2 and rho from the pilot's units with both a human outcome and a prediction."""
    return pilot_moments3(y, yhat, X, coord)[:2]


def pilot_moments3(y, yhat, X=None, coord: int = 0) -> tuple[float, float, float]:
    """sigma^2, rho and kappa (ppi_moments) from the pilot's units with both an outcome and a prediction."""
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    if y.size < 3:
        raise UserError(f"pilot: {y.size} units with a human outcome; need at least 3")
    if X is None:
        m = y.mean()
        return ppi_moments((y - m)[:, None], (yhat - m)[:, None], np.eye(1), 0)
    theta = _ls(X, y)
    g, gh, _, inv_h = _ols_stats(theta, X, y, yhat, X, yhat, 0.0)
    return ppi_moments(g, gh, inv_h, coord)


def variance(sigma2: float, rho: float, n, N, kappa: float | None = None) -> np.ndarray:
    """Per-estimate variance with n humans and N model-only units (N = inf: unlimited).

    kappa None: lambda unbounded (the textbook sigma^2/n (1 - rho^2 N/(N+n))). With kappa, lambda is the
    optimum clipped to [0, 1] as PPI++ clips it, and the variance is that lambda's:
    sigma^2/n (1 - 2 lambda rho kappa + lambda^2 kappa^2) + sigma^2 lambda^2 kappa^2 / N."""
    n = np.asarray(n, float)
    N = np.asarray(N, float)
    with np.errstate(invalid="ignore"):  # inf/inf where N is infinite: np.where replaces it with 1
        share = np.where(np.isinf(N), 1.0, N / np.maximum(N + n, 1e-300))
    if kappa is None or not np.isfinite(kappa) or kappa == 0:
        return sigma2 / n * (1 - max(rho, 0.0) ** 2 * share)
    lam = np.clip(max(rho, 0.0) * share / kappa, 0.0, 1.0)
    model_part = np.where(np.isinf(N), 0.0, lam ** 2 * kappa ** 2 / np.where(np.isinf(N), 1.0, np.maximum(N, 1e-300)))
    return sigma2 * ((1 - 2 * lam * rho * kappa + lam ** 2 * kappa ** 2) / n + model_part)


def power(se, effect: float, level: float = 0.95):
    z = stats.norm.ppf(1 - (1 - level) / 2)
    return stats.norm.cdf(abs(effect) / se - z) + stats.norm.cdf(-abs(effect) / se - z)


def _smallest(ok: np.ndarray, grid: np.ndarray) -> float:
    hit = np.flatnonzero(ok)
    return float(grid[hit[0]]) if hit.size else math.nan


def plan_table(sigma2: float, rho: float, *, kappa: float, n_model: int, width: float | None = None,
               effect: float | None = None, target_power: float = 0.8, humans: int | None = None,
               level: float = 0.95, term: str = "", max_humans: int = 10_000_000) -> pd.DataFrame:
    """Humans needed without the model, with the model on `n_model` units (a fixed pool: the humans
    answer a subset of them), and with unlimited model answers. `kappa` (ppi_moments) is required: the
    prediction-powered rows use lambda <= 1, as PPI++ does, and never promise more than that attains
    (without kappa the textbook formula promised e.g. 588 or 810 effective humans that lambda <= 1
    cannot give, issue 40)."""
    if not sigma2 > 0:
        raise UserError("pilot: the human outcomes do not vary (sigma = 0); a pilot with no spread cannot size a study")
    if kappa is None or not kappa >= 0:
        raise UserError(f"plan: kappa = {kappa}: the model's gradient spread over the humans' (ppi_moments) is "
                        "needed for the variance PPI++ attains with lambda <= 1")
    if effect is not None and effect == 0:
        raise UserError("--effect 0: a test has no power against a zero effect; give the smallest effect that matters")
    z = stats.norm.ppf(1 - (1 - level) / 2)
    _check_width(width, z, sigma2)
    reported, rho = rho, max(rho, 0.0)  # PPI++ clips lambda at 0: a negative correlation cannot help
    rows = []
    for label, kind in (("human-only", "human"), (f"prediction-powered, model on {n_model} units", "pool"),
                        ("prediction-powered, unlimited model answers", "inf")):
        def var(n):
            n = np.asarray(n, float)
            if kind == "human":
                return sigma2 / n
            if kind == "inf":
                return variance(sigma2, rho, n, math.inf, kappa)
            return variance(sigma2, rho, n, np.clip(n_model - n, 0, None), kappa)

        cap = n_model if kind == "pool" else max_humans
        grid = np.unique(np.concatenate([np.arange(2, min(cap, 100_000) + 1),
                                         np.geomspace(2, max(cap, 3), 2000).round()])).astype(float)
        grid = grid[grid <= cap]
        se = np.sqrt(var(grid))
        row = {"term": term, "design": label, "n_model": n_model if kind == "pool" else (math.inf if kind == "inf" else 0),
               "sigma": math.sqrt(sigma2), "ppi_corr": reported if kind != "human" else math.nan}
        row["humans_for_width"] = _smallest(2 * z * se <= width, grid) if width else math.nan
        row["humans_for_power"] = _smallest(power(se, effect, level) >= target_power, grid) if effect else math.nan
        if humans:
            s = float(np.sqrt(var(min(humans, cap))))
            row.update({"humans": min(humans, cap), "std.error": s, "width": 2 * z * s,
                        "power": float(power(s, effect, level)) if effect else math.nan,
                        "n_effective": sigma2 / s ** 2})
        rows.append(row)
    out = pd.DataFrame(rows, columns=COLUMNS)
    if width and out["humans_for_width"].isna().all():
        raise UserError(f"--width {width:g}: no design reaches it with at most {max_humans:,} humans (sigma "
                        f"{math.sqrt(sigma2):.4g}, PPI correlation {reported:.3f}); give a wider target")
    return out


def _check_width(width, z: float, sigma2: float) -> None:
    """An absurd --width is refused: one at least as wide as the human-only interval of 2 humans (any
    study meets it, so there is nothing to plan)."""
    if width is None:
        return
    widest = 2 * z * math.sqrt(sigma2 / 2)
    if width >= widest:
        raise UserError(f"--width {width:g}: at least the width of 2 humans' interval ({widest:.4g}, sigma "
                        f"{math.sqrt(sigma2):.4g}); any study meets it, give a narrower target")


def read_pilot(path, unit: str, outcome: str, prediction: str) -> pd.DataFrame:
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise UserError(f"{path}: no such file (a CSV or parquet table, one row per unit)")
    try:
        df = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    except Exception as e:  # noqa: BLE001 - any reader error is a bad input file
        raise UserError(f"{path}: cannot read as {'parquet' if p.suffix == '.parquet' else 'CSV'} ({e})") from None
    missing = [c for c in (unit, outcome, prediction) if c not in df]
    if missing:
        raise UserError(f"{path}: missing column(s) {', '.join(missing)}; available: {', '.join(map(str, df.columns))}")
    if df[prediction].isna().any():
        raise UserError(f"{path}: column {prediction} is missing on {int(df[prediction].isna().sum())} row(s); "
                        "the model must answer every unit")
    for col in (prediction, outcome):  # inf, -inf, 1e400 (read as inf) or text: refused with the row
        v = pd.to_numeric(df[col], errors="coerce")
        bad = (df[col].notna() & ~np.isfinite(v.astype(float))).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise UserError(f"{path}: row {i + 2}, column {col}: {df[col].iat[i]!r} is not a finite number")
    return df


def plan(pilot: pd.DataFrame, *, outcome: str = "y", prediction: str = "yhat", estimand: str = "mean",
         x: Sequence[str] = (), term: str | None = None, n_model: int | None = None, subsample: int | None = None,
         seed: int = 0, **targets) -> pd.DataFrame:
    """The planning table of a pilot frame (rows without an outcome are model-only units)."""
    if estimand not in ESTIMANDS or estimand == "logistic":
        raise UserError(f"--estimand: plan supports mean, difference and ols, got {estimand!r}")
    if estimand != "mean" and not x:
        raise UserError(f"--estimand {estimand}: name the covariate column(s) with --x")
    pilot = pilot.dropna(subset=list(x)) if x else pilot
    if subsample:
        have = pilot.index[pilot[outcome].notna()]
        if subsample > len(have):
            raise UserError(f"--subsample {subsample}: the pilot has only {len(have)} units with a human outcome")
        keep = np.random.default_rng(seed).choice(have, size=subsample, replace=False)
        pilot = pilot.assign(**{outcome: pilot[outcome].where(pilot.index.isin(keep))})
    lab = pilot[pilot[outcome].notna()]
    if n_model is not None and n_model < len(lab):
        raise UserError(f"--n-model {n_model}: fewer units than the pilot's {len(lab)} with a human outcome; the "
                        "model answers every unit people answer, so it needs at least as many")
    if estimand == "mean":
        X, terms = None, ["mean"]
    else:
        Xall, terms = design(pilot, x, estimand)
        if estimand == "difference":
            Xall, terms = np.column_stack([np.ones(len(Xall)), Xall]), ["(Intercept)", *terms]
        X = Xall[pilot[outcome].notna().to_numpy()]
    name = term or terms[-1]
    if name not in terms:
        raise UserError(f"--term {name}: not a coefficient; choose from {', '.join(terms)}")
    sigma2, rho, kappa = pilot_moments3(lab[outcome].to_numpy(float), lab[prediction].to_numpy(float), X,
                                        terms.index(name))
    return plan_table(sigma2, rho, n_model=int(n_model or len(pilot)), term=name, kappa=kappa, **targets)
