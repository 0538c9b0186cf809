"""Issue 40 (meth40): mixed subjects (PPI's Hessian, plan's clipped numbers and refusals, survey weights,
clusters, the small-n rule), two-option order effects counted once, the study-file AMCE baseline.

References: ppi-python where it has the method (ppi_py), a direct computation where it has none.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.methods import plan, ppi
from simsubjects.cli.commands import main
from simsubjects.errors import UserError


# ---------------------------------------------------------------- PPI: the Hessian is continuous in lambda

def _weak():
    """8 humans in two groups and a weak model: predictions almost constant, barely correlated."""
    rng = np.random.default_rng(1)
    g = np.r_[np.zeros(4), np.ones(4)]
    gu = rng.integers(0, 2, 40)
    gu[:2] = [0, 1]
    y = rng.normal(0, 1, 8) + g
    return y, 0.3 + 1e-3 * y + rng.normal(0, 1e-2, 8), g, 0.3 + rng.normal(0, 1e-2, 40), gu


def test_a_weak_models_tiny_lambda_does_not_switch_the_hessian():
    y, yhat, g, yu, gu = _weak()
    se = {lam: ppi.ppi_difference(y, yhat, g, yu, gu, lam=lam)["std.error"].iat[0] for lam in (0.0, 1e-6)}
    # before: lambda = 1e-6 switched to the pooled units' Hessian and moved the interval by 5%
    assert se[1e-6] == pytest.approx(se[0.0], rel=1e-5)
    t = ppi.compare(y, yhat, yu, g[:, None], gu[:, None], estimand="difference").set_index("method")
    lam = t.loc["prediction-powered", "lambda"]
    assert 0 < lam < 0.1
    # a weak model is credited with (almost) no humans: n_effective within lambda's own effect of 8
    assert t.loc["prediction-powered", "n_effective"] == pytest.approx(8, rel=0.01)


def test_blended_hessian_is_ppi_pythons_at_lambda_one_and_a_direct_sandwich_between():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(4)
    n, N = 30, 200
    X = np.column_stack([np.ones(n), rng.normal(size=n)])
    Xu = np.column_stack([np.ones(N), rng.normal(size=N)])
    y = X @ [0.2, 0.5] + rng.normal(size=n)
    yhat, yu = y + rng.normal(0, 0.7, n), Xu @ [0.2, 0.5] + rng.normal(0, 1.2, N)
    lo, hi = ppi_py.ppi_ols_ci(X, y, yhat, Xu, yu, alpha=0.05, lam=1.0)
    t = ppi.ppi_ols(X, y, yhat, Xu, yu, lam=1.0)
    assert np.allclose(t["conf.low"], lo, atol=1e-10) and np.allclose(t["conf.high"], hi, atol=1e-10)
    # lambda = 0.4, directly: theta minimizes the rectified squared loss; the bread is
    # 0.6 X'X/n + 0.4 (X'X + Xu'Xu)/(n + N); the meat n/N Cov(lam gu) + Cov(g - lam gh)
    lam = 0.4
    theta = np.linalg.lstsq(Xu, lam * yu, rcond=None)[0] + np.linalg.lstsq(X, y - lam * yhat, rcond=None)[0]
    g, gh, gu = (X * (X @ theta - y)[:, None], X * (X @ theta - yhat)[:, None], Xu * (Xu @ theta - yu)[:, None])
    bread = np.linalg.inv(0.6 * X.T @ X / n + 0.4 * (X.T @ X + Xu.T @ Xu) / (n + N))
    meat = n / N * np.cov((lam * gu).T) + np.cov((g - lam * gh).T)
    se = np.sqrt(np.diag(bread @ meat @ bread) / n)
    t = ppi.ppi_ols(X, y, yhat, Xu, yu, lam=lam)
    assert np.allclose(t["estimate"], theta, atol=1e-12) and np.allclose(t["std.error"], se, rtol=1e-10)


# ---------------------------------------------------------------- plan: clipped numbers, refusals

def test_plan_table_requires_kappa_and_returns_the_clipped_numbers():
    with pytest.raises(TypeError):  # before: the textbook (unclipped) numbers without kappa
        plan.plan_table(0.25, 0.9, n_model=1000, humans=100)
    clipped = plan.plan_table(0.25, 0.9, kappa=0.1, n_model=1000, humans=100).set_index("design")
    # kappa = 0.1: lambda clipped to 1, so the variance is lambda = 1's, computed here directly
    var1 = 0.25 * ((1 - 2 * 0.9 * 0.1 + 0.01) / 100 + 0.01 / 900)
    assert clipped["n_effective"].iloc[1] == pytest.approx(0.25 / var1, rel=1e-12)
    textbook = 100 / (1 - 0.81 * 900 / 1000)
    assert clipped["n_effective"].iloc[1] < textbook / 3


def _pilot(tmp_path, n=60, labeled=20):
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 1, n)
    f = tmp_path / "pilot.csv"
    pd.DataFrame({"item": range(n), "yhat": p,
                  "y": np.where(np.arange(n) < labeled, p + rng.normal(0, 0.2, n), np.nan)}).to_csv(f, index=False)
    return f


@pytest.mark.parametrize("args,needle", [(["--n-model", "10", "--width", "0.2"], "--n-model 10: fewer units"),
                                         (["--width", "5"], "--width 5: at least the width of 2 humans"),
                                         (["--width", "1e-9"], "--width 1e-09: no design reaches it")])
def test_plan_refuses_too_few_model_units_and_absurd_widths(tmp_path, capsys, args, needle):
    f = _pilot(tmp_path)
    assert main(["plan", str(f), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]
    assert main(["plan", str(f), "--n-model", "20", "--width", "0.2"]) == 0
