"""Issue 40, item 7: `--check-r` compares the representativeness bootstrap columns (boot.low, boot.high,
boot.bias, estimate.corrected) with R/studyfile.R's sf_representativeness_boot, which recomputes Rep on
each of the resamples Python drew (their index matrices handed to R) and the basic interval from them."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.r

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    """The opinion_survey example (representativeness overall and by party) with synthetic model rows."""
    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    from simsubjects.studyfile.analyses import analyze_study
    from simsubjects.studyfile.design import build_trials
    from simsubjects.studyfile.spec import load_study

    src = tmp_path_factory.mktemp("rtwin40") / "survey"
    shutil.copytree(ROOT / "examples" / "opinion_survey", src)
    s = load_study(src / "study.yaml")
    trials, items = build_trials(s)
    rng = np.random.default_rng(40)
    rows = [{"study": s.name, "trial": rec["trial"], "item": rec["item"], "condition": "", "subject": rec["subject"],
             "source": "model", "model": "m", "method": "exact", "response": lab, "weight": w, "validity": 1.0,
             "response_type": "choice", "party": rec["party"]}
            for rec in trials.to_dict("records") for lab, w in zip(rec["labels"], rng.dirichlet(np.ones(len(rec["labels"]))))]
    resp = pd.concat([pd.DataFrame(rows), s.human], ignore_index=True)
    return s, resp, items, analyze_study(s, resp, items)


def _boot_rows(check: pd.DataFrame) -> pd.DataFrame:
    return check[check["statistic"].str.contains(" bootstrap ")]


def test_the_bootstrap_columns_match_r_on_the_same_resamples(survey):
    from simsubjects.analyze.check_r import r_session
    from simsubjects.studyfile.check_r import check_study_file

    s, resp, items, tables = survey
    check = pd.DataFrame(check_study_file(s, r_session(), resp, items, tables, 1e-8, 1e-6))
    assert check["ok"].all(), check[~check["ok"]]
    boot = _boot_rows(check)
    rows = len(tables["representativeness"]) + len(tables["representativeness_by_party"])
    assert rows >= 3 and len(boot) == 4 * rows  # four columns per row, overall and per party
    assert (boot["tolerance"] <= 1e-9).all() and boot["python"].notna().all()
    assert boot["statistic"].str.contains("representativeness_by_party .* Republican boot.low").any()


def test_other_resamples_fail_the_check(survey, monkeypatch):
    """The model's index matrix handed to R drawn with another seed (R's replicates are then other
    resamples; a permutation of the replicates or of a replicate's draws would not change a column):
    the bootstrap rows fail, so the check needs Python's and R's resamples to be the same."""
    from simsubjects.analyze.check_r import r_session
    from simsubjects.studyfile import check_r as sf_check

    s, resp, items, tables = survey
    real = sf_check.representativeness_resamples

    def shifted(*a, **k):
        out = real(*a, **k)
        for _, res in out:
            n, shape = len(res["units_model"]), res["idx_model"].shape
            res["idx_model"] = np.random.default_rng(99).integers(0, n, size=shape)
        return out

    monkeypatch.setattr(sf_check, "representativeness_resamples", shifted)
    check = pd.DataFrame(sf_check.check_study_file(s, r_session(), resp, items, tables, 1e-8, 1e-6))
    bad = _boot_rows(check[~check["ok"]])
    assert len(bad) and check.loc[~check["ok"], "statistic"].str.contains(" bootstrap ").all()
    assert bad["statistic"].str.endswith("boot.bias").any()


def test_the_plain_basic_interval_matches_r(survey):
    """Without the double bootstrap's level (alpha/2 = 0.025, upper bound below the cap at 1): R's
    quantile(type = 7) of its replicates gives resampled_interval's columns (numpy's linear nanquantile)."""
    from simsubjects.analyze.check_r import r_session
    from simsubjects.analyze.methods.representativeness import resampled_interval, resamples
    from simsubjects.studyfile.analyses import _boot_units, _ordinal_rows, options_table

    s, resp, _, tables = survey
    r = r_session()
    m, h = _boot_units(_ordinal_rows(s, resp, []), {"model": "m"}, [], [])
    py = resampled_interval(m, h, seed=3, calibrate=0)
    res = resamples(m, h, seed=3, calibrate=0)
    assert res["half_alpha"] == pytest.approx(0.025, abs=1e-15)
    mat = {k: r.ro.r["matrix"](r.vector(res[k].ravel(order="F")), nrow=res[k].shape[0]) for k in ("idx_model", "idx_human")}
    fn = r.env.find("sf_representativeness_boot")
    got = r.to_py(fn(r.to_r(resp), r.to_r(options_table(s)),
                     r.vector("m"), r.vector(res["units_model"]), mat["idx_model"], r.vector(res["units_human"]),
                     mat["idx_human"], r.vector(res["half_alpha"])))
    assert py["boot.high"] < 1  # the upper bound is a quantile here, not the cap
    for k in ("boot.low", "boot.high", "boot.bias", "estimate.corrected"):
        assert got[k].iat[0] == pytest.approx(py[k], abs=1e-9), k


def test_survey_bias_effect_sizes_are_compared_and_a_wrong_one_fails():
    """survey_bias's delta tests carry d (one-sample, of the deltas) and d_av (Welch, of the two forms),
    each recomputed here from the deltas; R's delta_tests (d = t / sqrt(n) from t.test's
    output, d_av from sd()) agrees, and a d moved by 1e-6 fails the check."""
    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    from simsubjects.analyze.check_r import check_r
    from simsubjects.studies.survey_bias.analysis import analyze_survey_bias, question_deltas
    from tests.test_check_r import survey_bias_data

    responses, items = survey_bias_data()
    tables = analyze_survey_bias(responses, items)
    t = tables["bias_tests"]
    row = t[t["effect_size"].notna()].iloc[0]
    d = question_deltas(responses, items)
    g = d[(d["model"] == row["model"]) & (d["bias"] == row["bias"]) & (d["perturbation"].fillna("") == "")]
    g = g.dropna(subset=["delta"])
    want = (g["delta"].mean() / g["delta"].std() if row["effect_size_type"] == "cohen_d" else
            (g["pct_first"].mean() - g["pct_second"].mean()) / ((g["pct_first"].std() + g["pct_second"].std()) / 2))
    assert row["effect_size"] == pytest.approx(want, rel=1e-12)
    assert set(t["effect_size_type"]) == {"cohen_d", "cohen_d_av"}
    out = check_r("survey_bias", responses, items, tables)
    assert out["ok"].all(), out[~out["ok"]]
    tables["bias_tests"].loc[row.name, "effect_size"] += 1e-6
    bad = check_r("survey_bias", responses, items, tables)
    bad = bad[~bad["ok"]]
    assert len(bad) == 1 and bad["statistic"].iat[0].endswith("effect_size")
