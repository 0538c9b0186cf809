"""Holm/BH adjusted p-values (statsmodels and R's p.adjust), paired comparisons, and `simsubjects plan`."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from simsubjects.analyze.methods import multiplicity, paired, plan
from simsubjects.cli.commands import main


def _pvalues():
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(0, 0.01, 8), rng.uniform(0, 1, 40)])
    p[[5, 20]] = np.nan
    return p


def test_adjusted_agree_with_statsmodels_and_keep_missing():
    p = _pvalues()
    df = pd.DataFrame({"p.value": p, "model": ["a", "b"] * 24})
    out = multiplicity.add_adjusted(df, by=["model"])
    for model in ("a", "b"):
        sub = out[out["model"] == model]
        ok = sub["p.value"].notna()
        for m, sm in (("holm", "holm"), ("bh", "fdr_bh")):
            ref = multipletests(sub.loc[ok, "p.value"], method=sm)[1]
            assert np.max(np.abs(sub.loc[ok, f"p.value.{m}"] - ref)) < 1e-12
            assert sub.loc[~ok, f"p.value.{m}"].isna().all()
    assert set(out["family"]) == {"a", "b"}
    wide = multiplicity.add_adjusted_wide(pd.DataFrame({"p_x": p[:24], "p_y": p[24:]}), ["p_x", "p_y"])
    ref = multipletests(p[~np.isnan(p)], method="holm")[1]
    flat = wide[["p_x.holm", "p_y.holm"]].to_numpy().ravel()
    assert np.allclose(np.sort(flat[~np.isnan(flat)]), np.sort(ref), atol=1e-12)


def test_holm_is_statsmodels_bit_for_bit_with_ties_and_the_cap():
    """Holm is written out (statsmodels' Holm calls gc.collect(), ~0.5 s a call beside a model)."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 60):
        p = rng.choice([0.001, 0.01, 0.04, 0.3, 0.9, 1.0], n) * rng.choice([1.0, 1.0, 0.5], n)  # ties
        assert np.array_equal(multiplicity.adjust(p, "holm"), multipletests(p, method="holm")[1]), p


@pytest.mark.r
def test_adjusted_agree_with_r_p_adjust():
    pytest.importorskip("rpy2")
    from simsubjects.analyze import check_r
    from simsubjects.analyze.check_r import r_session

    p = _pvalues()
    long = multiplicity.add_adjusted(pd.DataFrame({"p.value": p, "g": ["a", "b", "c"] * 16}), by=["g"])
    wide = multiplicity.add_adjusted_wide(pd.DataFrame({"p_x": p[:24], "p_y": p[24:]}), ["p_x", "p_y"])
    rows = check_r.check_r_rows(r_session(), {"long": long, "table4": wide})
    assert len(rows) == 4 and all(r["ok"] for r in rows), rows
    assert max(r["abs_diff"] for r in rows) < 1e-12
    # the check fails on a wrong column
    bad = long.assign(**{"p.value.bh": long["p.value.bh"] * 1.001})
    assert not all(r["ok"] for r in check_r.check_r_rows(r_session(), {"long": bad}))


@pytest.mark.r
def test_paired_tests_agree_with_r():
    pytest.importorskip("rpy2")
    from simsubjects.analyze.check_r import r_session

    ro = r_session().ro
    rng = np.random.default_rng(0)
    x = rng.random(40)
    y = x + rng.normal(0.05, 0.1, 40)
    xb, yb = (rng.random(60) < 0.5).astype(float), (rng.random(60) < 0.65).astype(float)
    X, Y, XB, YB = (ro.FloatVector(v) for v in (x, y, xb, yb))
    t = paired.paired_test(x, y).iloc[0]
    rt = ro.r["t.test"](X, Y, paired=True)
    assert abs(t["p.value"] - rt.rx2("p.value")[0]) < 1e-12 and abs(t["statistic"] - rt.rx2("statistic")[0]) < 1e-10
    assert abs(t["conf.low"] - rt.rx2("conf.int")[0]) < 1e-10
    w = paired.wilcoxon(x, y).iloc[0]
    assert abs(w["p.value"] - ro.r["wilcox.test"](X, Y, paired=True).rx2("p.value")[0]) < 1e-12
    mc = ro.r("function(a, b) mcnemar.test(table(factor(a, 0:1), factor(b, 0:1)))$p.value")(XB, YB)[0]
    assert abs(paired.mcnemar(xb, yb, exact=False)["p.value"].iloc[0] - mc) < 1e-12
    bt = ro.r("function(a, b) binom.test(sum(a == 1 & b == 0), sum(a != b))$p.value")(XB, YB)[0]
    assert abs(paired.mcnemar(xb, yb)["p.value"].iloc[0] - bt) < 1e-12


def test_cluster_bootstrap_widens_with_clustered_items():
    rng = np.random.default_rng(1)
    cl = np.repeat(np.arange(20), 10)
    d = np.repeat(rng.normal(0, 1, 20), 10) + rng.normal(0, 0.1, 200)  # differences shared within a cluster
    x, y = d, np.zeros(200)
    by_item = paired.cluster_bootstrap(x, y, None, n_boot=2000, seed=0).iloc[0]
    by_cluster = paired.cluster_bootstrap(x, y, cl, n_boot=2000, seed=0).iloc[0]
    assert by_cluster["conf.high"] - by_cluster["conf.low"] > 2 * (by_item["conf.high"] - by_item["conf.low"])
    assert abs(by_cluster["estimate"] - d.mean()) < 1e-12
    again = paired.cluster_bootstrap(x, y, cl, n_boot=2000, seed=0).iloc[0]
    assert again["conf.low"] == by_cluster["conf.low"]  # seeded


def test_paired_comparisons_family():
    rng = np.random.default_rng(2)
    items = [f"i{k}" for k in range(30)]
    base = rng.random(30)
    rows = [dict(item=i, model=m, y=b + s + rng.normal(0, 0.05), c=float(b + s > 0.5))
            for m, s in (("human", 0), ("m1", 0.1), ("m2", 0.0)) for i, b in zip(items, base)]
    out = paired.paired_comparisons(pd.DataFrame(rows), binary="c", n_boot=500)
    assert len(out) == 3 * 4 and set(out["test"]) >= {"Paired t-test", "McNemar exact (binomial)"}
    t = out[out["test"] == "Paired t-test"]
    ref = multipletests(t["p.value"], method="holm")[1]
    assert np.allclose(t["p.value.holm"], ref, atol=1e-12)


# ---------------------------------------------------------------- planning

def test_plan_table_and_formula():
    t = plan.plan_table(0.25, 0.8, kappa=1.0, n_model=1000, width=0.1, effect=0.05, humans=100)
    h, pool, inf = t.itertuples()
    z = 1.959963984540054
    assert h.humans_for_width == np.ceil((2 * z * 0.5 / 0.1) ** 2)  # 385
    assert inf.humans_for_width == np.ceil((2 * z * 0.5 / 0.1) ** 2 * (1 - 0.64))
    assert inf.humans_for_width <= pool.humans_for_width <= h.humans_for_width
    assert h.power < pool.power < inf.power
    assert abs(pool.n_effective - 100 / (1 - 0.64 * 900 / 1000)) < 1e-9
    t0 = plan.plan_table(0.25, 0.0, kappa=1.0, n_model=1000, width=0.1)
    assert t0["humans_for_width"].nunique() == 1  # an uninformative model saves no humans


def test_plan_cli(tmp_path, capsys):
    rng = np.random.default_rng(5)
    n = 300
    g = rng.integers(0, 2, n)
    p = np.clip(0.4 + 0.2 * g + rng.normal(0, 0.15, n), 0, 1)
    df = pd.DataFrame({"item": range(n), "factor": np.where(g, "A", "B"), "yhat": p,
                       "y": np.where(np.arange(n) < 60, np.clip(p + rng.normal(0, 0.1, n), 0, 1), np.nan)})
    f = tmp_path / "pilot.csv"
    df.to_csv(f, index=False)
    assert main(["plan", str(f), "--estimand", "difference", "--x", "factor", "--width", "0.2", "--effect", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "recommended for an interval of width 0.2" in out and "with the model on 300 units" in out
    assert main(["plan", str(f), "--width", "0.1", "--subsample", "1000"]) == 2
    assert "--subsample 1000" in capsys.readouterr().err
    assert main(["plan", str(f)]) == 2
    assert main(["plan", str(tmp_path / "none.csv"), "--width", "0.1"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_plan_negative_correlation_saves_nothing():
    t = plan.plan_table(0.25, -0.5, kappa=1.0, n_model=1000, width=0.1)
    assert t["humans_for_width"].nunique() == 1 and t["ppi_corr"].iloc[1] == -0.5
