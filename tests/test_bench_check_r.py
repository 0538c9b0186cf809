"""`bench report --check-r` agrees with R on real-corpus findings (issue 38's done-when line).

tests/data/bench_real holds 15 finished run folders of the bundled corpus (SmolLM2-135M, `bench run all
--model smollm2`, 2026-11-28), chosen to cover every case where the R twin once disagreed: association
findings with a two-group t test (hsb.s001_term_paper, ml2.ross1), a binary outcome's d on the difference
of proportions (hsb.s003_certainty, hsb.s005_exp1_intentional, ml2.shafir1 and its ratio_z), a paired
likert outcome (hsb.s008_comfort), a likert outcome whose original test was a chi-square (ml2.knobe1),
Fisher's exact test (seeds.moca_causal), an infinite model d (ml2.critcher1) and an unscored finding
(ml1.anchoring1). On the code before the fix 14 of its 67 numbers disagreed. No model loads here.
Unit of every number: the finding."""

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.methods import power as pw
from simsubjects.cli.commands import main

REAL = Path(__file__).parent / "data" / "bench_real"


@pytest.fixture(scope="module")
def r_twin():
    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    from simsubjects.analyze.check_r import r_session

    return r_session()


@pytest.fixture(scope="module")
def checked(tmp_path_factory, r_twin):
    out = tmp_path_factory.mktemp("bench_real") / "run"
    shutil.copytree(REAL, out)
    code = main(["bench", "report", str(out), "--cutoff", "2023", "--check-r"])
    return code, pd.read_csv(out / "scorecard.csv"), pd.read_csv(out / "check_r.csv")


def test_every_number_agrees_with_r(checked):
    code, card, check = checked
    assert check["ok"].all(), check[~check["ok"]].to_string()
    assert code == 0
    assert len(check) == len(card) * 4 + 7  # four numbers per finding, seven across findings
    both = check["python"].notna() & check["r"].notna()
    assert both.sum() >= 50  # numbers on both sides (an unscored finding's are NaN on both)


def test_the_cases_that_disagreed_are_covered(checked):
    _, card, check = checked
    c = card.set_index("finding")
    by = check.set_index("statistic")
    # each formerly failing kind of number is here, finite on both sides
    for label in ("hsb.s001_term_paper sig_at_original_n", "ml2.ross1 sig_at_original_n",
                  "hsb.s003_certainty model_d", "ml2.shafir1 model_d", "ml2.shafir1 ratio_z",
                  "hsb.s008_comfort sig_at_original_n", "ml2.knobe1 sig_at_original_n",
                  "seeds.moca_causal sig_at_original_n", "seeds.milgram sig_at_original_n",
                  "across pearson_r", "across lins_ccc", "across disattenuated_r", "across ecs"):
        assert np.isfinite(by.loc[label, "python"]) and np.isfinite(by.loc[label, "r"]), label
    assert c.loc["hsb.s003_certainty", "model_scale"] == "diff_prop"
    assert c.loc["ml2.ross1", "kind"] == "association" and c.loc["ml2.ross1", "power_method"] == "noncentral t"
    assert c.loc["hsb.s008_comfort", "kind"] == "within"
    assert c.loc["seeds.moca_causal", "power_method"] == "exact sum (fisher)"
    assert math.isinf(c.loc["ml2.critcher1", "model_d"])  # left out of the across-finding statistics
    assert c.loc["ml1.anchoring1", "note"].startswith("not scored")
    # the probabilities agree far inside the tolerance: R's pt() (AS 243) is the less exact side
    sig = check[check["statistic"].str.endswith("sig_at_original_n")]
    assert sig["abs_diff"].max() < 1e-11


def test_negative_direction_and_multinomial_twins(r_twin):
    """Cases the real corpus does not hold: an original that found levels[0] below levels[1] (chi-square,
    Fisher, binomial), a multinomial outcome (noncentral chi-square) and a correlation test: R against Python."""
    base = {"kind": "between", "model_scale": "diff_prop", "original_effect": 0.1, "original_scale": "d",
            "replication_effect": math.nan, "replication_scale": "", "null": math.nan, "chi2_df": math.nan,
            "direction": -1.0, "original_n": 60, "original_n1": 28.0, "original_n2": 32.0,
            "model_p1": 0.3, "model_p2": 0.55}
    rows = [
        {**base, "finding": "chi2", "power_method": "exact sum (chi2)",
         "want": pw.power_two_proportions(0.3, 0.55, 28, 32, "chi2", 0.05, -1)},
        {**base, "finding": "fisher", "power_method": "exact sum (fisher)",
         "want": pw.power_two_proportions(0.3, 0.55, 28, 32, "fisher", 0.05, -1)},
        {**base, "finding": "binom", "kind": "one_sample", "model_scale": "h", "power_method": "exact sum (binomial)",
         "model_p2": math.nan, "null": 0.5, "want": pw.power_one_proportion(0.3, 60, 0.5, "binomial", 0.05, -1)},
        {**base, "finding": "w", "model_scale": "w", "power_method": "noncentral chi-square (lambda = N w^2)",
         "direction": 1.0, "model_p1": math.nan, "model_p2": math.nan, "chi2_df": 2.0,
         "want": pw.power_chi2_w(0.3, 60, 2, 0.05)},
        {**base, "finding": "r", "kind": "association", "model_scale": "r", "power_method": "Fisher z normal",
         "direction": 1.0, "model_p1": math.nan, "model_p2": math.nan, "want": pw.power_correlation(0.3, 60, 0.05, 1)},
    ]
    card = pd.DataFrame(rows)
    card["model_effect"] = [-(0.3 - 0.55), -(0.3 - 0.55), -0.2, 0.3, 0.3]
    got = r_twin("bench_effects", card.drop(columns="want")).set_index("finding")
    for _, row in card.iterrows():
        assert got.loc[row["finding"], "sig_at_original_n"] == pytest.approx(row["want"], abs=1e-12), row["finding"]
        assert row["want"] > 0.05  # the swapped direction is the likely one here: a sum that could fail
    # the binary rows' d: Chinn's d of the odds ratio, aligned by the direction
    lor = math.log(0.3 / 0.7) - math.log(0.55 / 0.45)
    assert got.loc["chi2", "model_d"] == pytest.approx(-lor * math.sqrt(3) / math.pi, abs=1e-12)


def test_noncentral_t_against_mpmath():
    """Which side is exact: statsmodels' noncentral t (scipy's nct, Boost) equals a 40-digit integral of the
    noncentral t law to 1e-14; R's pwr (pt(), AS 243) was up to 3.4e-13 off it on the corpus."""
    mp = pytest.importorskip("mpmath")
    from scipy import stats

    mp.mp.dps = 40

    def sf(t, df, nc):  # P((Z + nc) / sqrt(V / df) > t), V ~ chi2(df): the normal tail integrated over V
        t, df, nc = mp.mpf(t), mp.mpf(df), mp.mpf(nc)

        def f(v):
            dens = mp.exp((df / 2 - 1) * mp.log(v) - v / 2 - df / 2 * mp.log(2) - mp.loggamma(df / 2))
            return mp.ncdf(nc - t * mp.sqrt(v / df)) * dens
        return mp.quad(f, [0, df, df + 10 * mp.sqrt(2 * df), mp.inf])

    for d, n1, n2 in ((0.3, 64, 16), (0.047, 132, None), (-0.2, 41, 42)):
        if n2:
            df, nc = n1 + n2 - 2, d / math.sqrt(1 / n1 + 1 / n2)
        else:
            df, nc = n1 - 1, d * math.sqrt(n1)
        exact = float(sf(float(stats.t.isf(0.025, df)), df, nc))
        assert pw.power_means(d, n1, n2, 0.05, 1) == pytest.approx(exact, abs=1e-14)
