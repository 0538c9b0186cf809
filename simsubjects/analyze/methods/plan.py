"""Sample-size planning for a mixed-subjects study from a pilot (`simsubjects plan`).

A pilot holds the model's prediction for every unit and the human outcome for some of them.
From the units with both it estimates, for the estimand's coefficient of interest,

* sigma^2 — the per-unit variance of the human-only estimator (its standard error is sigma/sqrt(n));
* rho — the "PPI correlation" between the human and the model gradients (Broska, Howes & van Loon
  2024, the mixed subjects design; computed as ppi_py's `_get_ppi_corr`, capped at 1 - 1/n).

With lambda tuned (PPI++, Angelopoulos, Duchi & Zrnic 2024), n humans and N other units answered
by the model only, the prediction-powered variance is

    Var(n, N) = sigma^2 / n * (1 - rho^2 * N / (N + n)),

so the effective human sample size is n / (1 - rho^2 N / (N + n)). PPI++ keeps lambda >= 0, so a
negative rho counts as 0 (the model cannot help). With unlimited model answers
(N -> infinity) a design needs (1 - rho^2) times the humans of a human-only one. The interval's
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
    n = grads.shape[0]
    gc, hc = grads - grads.mean(0), grads_hat - grads_hat.mean(0)
    cov, var_h, var_g = gc.T @ hc / n, hc.T @ hc / n, gc.T @ gc / n
    sigma2 = np.diag(inv_hessian @ var_g @ inv_hessian)[coord]
    num = np.diag(inv_hessian @ cov @ inv_hessian)[coord]
    den = math.sqrt(sigma2 * np.diag(inv_hessian @ var_h @ inv_hessian)[coord])
    rho = num / den if den > 0 else 0.0
    return float(sigma2), float(min(rho, 1 - 1 / n))


def pilot_moments(y, yhat, X=None, coord: int = 0) -> tuple[float, float]:
    """sigma^2 and rho from the pilot's units with both a human outcome and a prediction."""
    y, yhat = np.asarray(y, float), np.asarray(yhat, float)
    if y.size < 3:
        raise UserError(f"pilot: {y.size} units with a human outcome; need at least 3")
    if X is None:
        m = y.mean()
        return ppi_corr((y - m)[:, None], (yhat - m)[:, None], np.eye(1), 0)
    theta = _ls(X, y)
    g, gh, _, inv_h = _ols_stats(theta, X, y, yhat, X, yhat, False)
    return ppi_corr(g, gh, inv_h, coord)


def variance(sigma2: float, rho: float, n, N) -> np.ndarray:
    """Per-estimate variance with n humans and N model-only units (N = inf: unlimited)."""
    n = np.asarray(n, float)
    share = 1.0 if np.isinf(N) else N / (N + n)
    return sigma2 / n * (1 - rho ** 2 * share)


def power(se, effect: float, level: float = 0.95):
    z = stats.norm.ppf(1 - (1 - level) / 2)
    return stats.norm.cdf(abs(effect) / se - z) + stats.norm.cdf(-abs(effect) / se - z)


def _smallest(ok: np.ndarray, grid: np.ndarray) -> float:
    hit = np.flatnonzero(ok)
    return float(grid[hit[0]]) if hit.size else math.nan


def plan_table(sigma2: float, rho: float, *, n_model: int, width: float | None = None, effect: float | None = None,
               target_power: float = 0.8, humans: int | None = None, level: float = 0.95, term: str = "",
               max_humans: int = 10_000_000) -> pd.DataFrame:
    """Humans needed without the model, with the model on `n_model` units (a fixed pool: the humans
    answer a subset of them), and with unlimited model answers."""
    z = stats.norm.ppf(1 - (1 - level) / 2)
    reported, rho = rho, max(rho, 0.0)  # PPI++ clips lambda at 0: a negative correlation cannot help
    rows = []
    for label, kind in (("human-only", "human"), (f"prediction-powered, model on {n_model} units", "pool"),
                        ("prediction-powered, unlimited model answers", "inf")):
        def var(n):
            n = np.asarray(n, float)
            if kind == "human":
                return sigma2 / n
            if kind == "inf":
                return variance(sigma2, rho, n, math.inf)
            return sigma2 / n * (1 - rho ** 2 * np.clip(n_model - n, 0, None) / np.maximum(n_model, n))

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
    return pd.DataFrame(rows, columns=COLUMNS)


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
    sigma2, rho = pilot_moments(lab[outcome].to_numpy(float), lab[prediction].to_numpy(float), X, terms.index(name))
    return plan_table(sigma2, rho, n_model=int(n_model or len(pilot)), term=name, **targets)
