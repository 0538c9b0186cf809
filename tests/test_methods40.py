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


# ---------------------------------------------------------------- PPI: survey weights, clusters, small n

def _survey(seed=6, n=80, N=300):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.normal(size=n)])
    Xu = np.column_stack([np.ones(N), rng.normal(size=N)])
    y = X @ [0.3, 0.6] + rng.normal(size=n)
    yhat, yu = y + rng.normal(0, 0.8, n) + 0.2, Xu @ [0.3, 0.6] + rng.normal(0, 1.3, N) + 0.2
    return X, y, yhat, Xu, yu, rng.uniform(0.2, 3, n), rng.uniform(0.2, 3, N)


@pytest.mark.parametrize("lam", [0.0, 1.0, None])
def test_survey_weights_agree_with_ppi_python(lam):
    ppi_py = pytest.importorskip("ppi_py")
    X, y, yhat, Xu, yu, w, wu = _survey()
    lo, hi = ppi_py.ppi_ols_ci(X, y, yhat, Xu, yu, alpha=0.05, lam=lam, w=w, w_unlabeled=wu)
    t = ppi.ppi_ols(X, y, yhat, Xu, yu, lam=lam, w=w, w_unlabeled=wu)
    centre = (t["conf.low"] + t["conf.high"]) / 2
    assert np.allclose(centre, (lo + hi) / 2, atol=1e-10)
    if lam is not None:  # between 0 and 1 the Hessian is blended (see above), so only the centre is theirs
        assert np.allclose(t["conf.low"], lo, atol=1e-10) and np.allclose(t["conf.high"], hi, atol=1e-10)
    # a weighted mean: ppi-python's weighted OLS on a column of ones
    one, oneu = np.ones((y.size, 1)), np.ones((yu.size, 1))
    lo, hi = ppi_py.ppi_ols_ci(one, y, yhat, oneu, yu, alpha=0.05, lam=lam, w=w, w_unlabeled=wu)
    m = ppi.ppi_mean(y, yhat, yu, lam=lam, w=w, w_unlabeled=wu)
    assert m["estimate"].iat[0] == pytest.approx(float(np.ravel((lo + hi) / 2)[0]), abs=1e-10)
    assert m["estimate"].iat[0] != pytest.approx(ppi.ppi_mean(y, yhat, yu, lam=lam)["estimate"].iat[0], abs=1e-3)


def test_clusters_at_lambda_zero_are_statsmodels_cluster_robust_ols():
    import statsmodels.api as sm

    X, y, yhat, Xu, yu, _, _ = _survey()
    resp = np.repeat(np.arange(40), 2)  # each respondent rated two profiles
    t = ppi.ppi_ols(X, y, yhat, Xu, yu, lam=0.0, clusters=resp, clusters_unlabeled=1000 + np.arange(yu.size))
    fit = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": resp})
    n, k = X.shape
    # statsmodels' small-sample factor is G/(G-1) (n-1)/(n-k); ours (CR1 for PPI) G/(G-1)
    assert np.allclose(t["std.error"], fit.bse * np.sqrt((n - k) / (n - 1)), rtol=1e-10)
    assert np.allclose(t["estimate"], fit.params, atol=1e-12)


def test_clusters_spanning_both_sets_match_a_direct_computation():
    X, y, yhat, Xu, yu, _, _ = _survey(n=60, N=240)
    cl, clu = np.arange(60) % 30, np.arange(240) % 30  # a persona's several items, some with people's answers
    lam = 0.5
    t = ppi.ppi_ols(X, y, yhat, Xu, yu, lam=lam, clusters=cl, clusters_unlabeled=clu)
    theta = t["estimate"].to_numpy()
    r = X * (X @ theta - y)[:, None] - lam * X * (X @ theta - yhat)[:, None]
    gu = Xu * (Xu @ theta - yu)[:, None]
    psi = np.zeros((30, 2))
    for i in range(60):
        psi[cl[i]] += (r[i] - r.mean(0)) / 60
    for i in range(240):
        psi[clu[i]] += lam * (gu[i] - gu.mean(0)) / 240
    bread = np.linalg.inv(0.5 * X.T @ X / 60 + 0.5 * (X.T @ X + Xu.T @ Xu) / 300)
    se = np.sqrt(np.diag(bread @ (30 / 29 * psi.T @ psi) @ bread))
    assert np.allclose(t["std.error"], se, rtol=1e-10)
    # clustering matters here: the unclustered interval is a different one
    assert not np.allclose(ppi.ppi_ols(X, y, yhat, Xu, yu, lam=lam)["std.error"], se, rtol=1e-3)
    with pytest.raises(UserError, match="cluster ids for both"):
        ppi.ppi_ols(X, y, yhat, Xu, yu, clusters=cl)
    with pytest.raises(UserError, match="one cluster"):
        ppi.ppi_ols(X, y, yhat, Xu, yu, clusters=np.zeros(60), clusters_unlabeled=clu)


def test_small_n_gets_a_t_interval_with_a_note():
    from scipy import stats

    X, y, yhat, Xu, yu, _, _ = _survey(n=12, N=100)
    t = ppi.ppi_mean(y, yhat, yu, lam=0.0)
    se, q = t["std.error"].iat[0], stats.t.ppf(0.975, 11)
    assert t["conf.high"].iat[0] - t["conf.low"].iat[0] == pytest.approx(2 * q * se, rel=1e-12)
    assert t["p.value"].iat[0] == pytest.approx(2 * stats.t.sf(abs(t["statistic"].iat[0]), 11), rel=1e-12)
    assert "Student t" in t["warning"].iat[0] and "11 df" in t["warning"].iat[0]
    # clustered: the rule counts clusters (6 respondents: 5 df), even with 80 profiles
    X, y, yhat, Xu, yu, _, _ = _survey()
    c = ppi.ppi_ols(X, y, yhat, Xu, yu, lam=0.0, clusters=np.arange(80) % 6, clusters_unlabeled=np.arange(300))
    assert "5 df" in c["warning"].iat[0]
    assert ppi.ppi_mean(y, yhat, yu)["warning"].iat[0] == ""  # 80 humans: the normal interval


# ---------------------------------------------------------------- order effects: a two-option contrast once

def _two_option_responses(items=4, subjects=12, seed=3):
    rng = np.random.default_rng(seed)
    rows, trial = [], 0
    for it in range(items):
        for s in range(subjects):
            a_first = s % 2 == 0
            p_a = np.clip(0.5 + (0.1 if a_first else -0.1) * (it % 2) + rng.normal(0, 0.08), 0.01, 0.99)
            for opt, w, pos in (("A", p_a, 1 if a_first else 2), ("B", 1 - p_a, 2 if a_first else 1)):
                rows.append({"source": "model", "model": "m", "item": f"q{it}", "response": opt, "weight": w,
                             "trial": trial, "subject": f"s{it}_{s}", "shown_position": pos, "n_shown": 2})
            trial += 1
    return pd.DataFrame(rows)


def test_two_option_order_effects_count_one_contrast_once():
    from statsmodels.stats.multitest import multipletests

    from simsubjects.analyze.order_effects import order_effects

    per_item, _ = order_effects(_two_option_responses())
    assert len(per_item) == 8  # both options' rows are shown
    a, b = per_item[per_item["response"] == "A"], per_item[per_item["response"] == "B"]
    assert np.allclose(a["estimate"].to_numpy(), b["estimate"].to_numpy())  # "A first" is "B last": one contrast
    # Holm over the 4 items' contrasts, not over 8 cells (which doubled the p-values)
    ref = multipletests(a["p.value"].to_numpy(), method="holm")[1]
    assert np.allclose(a["p.value.holm"].to_numpy(), ref, atol=1e-12)
    assert np.allclose(b["p.value.holm"].to_numpy(), ref, atol=1e-12)  # the mirror carries its contrast's value
    assert b["family"].str.startswith("not counted: the mirror of option A").all()
    assert a["family"].str.startswith("order-effect cells").all()


# ---------------------------------------------------------------- study-file AMCE: the declared baseline

AMCE_STUDY = """study: t
title: T
design:
  factors: {frame: {levels: [zeta, alpha], assignment: between}, cue: ['on', 'off']}
  subjects: 16
prompt: "${question}\\n${options}"
items: [{id: q, text: "Q ${frame} ${cue}", response: likert5}]
analyses:
  - {type: amce, factors: [frame, cue], name: amce}
"""


def _amce_run(tmp_path):
    from simsubjects.studyfile import load_study
    from simsubjects.studyfile.design import build_trials

    (tmp_path / "s.yaml").write_text(AMCE_STUDY)
    s = load_study(tmp_path / "s.yaml")
    trials, items = build_trials(s)
    rng, rows = np.random.default_rng(5), []
    for rec in trials.to_dict("records"):
        p = rng.dirichlet(np.ones(5) * (3 if rec["frame"] == "zeta" else 0.6))
        for lab, w in zip(rec["labels"], p):
            rows.append({**{k: rec[k] for k in ("trial", "item", "condition", "subject", "frame", "cue")},
                         "study": "t", "source": "model", "model": "m", "method": "exact", "response": lab,
                         "weight": w, "validity": 1.0, "response_type": "choice"})
    return s, pd.DataFrame(rows), items


def test_study_file_amce_baseline_is_the_declared_first_level(tmp_path):
    import statsmodels.formula.api as smf

    from simsubjects.publish.rscript import _r_study_file
    from simsubjects.studyfile.analyses import analyze_study

    s, responses, items = _amce_run(tmp_path)
    tables = analyze_study(s, responses, items)
    a = tables["amce"].set_index("term")
    # before: the alphabetically first level (alpha, off) was the baseline: terms frame_zeta and cue_on
    assert set(a.index) == {"frame_alpha", "cue_off"}
    assert a.loc["frame_alpha", "contrast"] == "frame: alpha - zeta"
    fit = smf.ols("score ~ C(frame, Treatment('zeta')) + C(cue, Treatment('on'))", data=tables["trials"]).fit()
    assert a.loc["frame_alpha", "estimate"] == pytest.approx(
        fit.params["C(frame, Treatment('zeta'))[T.alpha]"], rel=1e-10)
    assert a.loc["frame_alpha", "estimate"] < 0  # zeta's answers sit higher: the declared contrast's sign
    # analysis.R hands R the same baselines
    assert 'baselines = c("zeta", "on")' in _r_study_file(s, "run")


@pytest.mark.r
def test_study_file_amce_baseline_in_r(tmp_path):
    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    from simsubjects.analyze.check_r import r_session
    from simsubjects.studyfile.analyses import analyze_study
    from simsubjects.studyfile.check_r import check_study_file

    s, responses, items = _amce_run(tmp_path)
    tables = analyze_study(s, responses, items)
    rows = pd.DataFrame(check_study_file(s, r_session(), responses, items, tables, 1e-8, 1e-8))
    amce = rows[rows["statistic"].str.startswith("amce")]
    assert len(amce) > 4 and amce["ok"].all(), amce[~amce["ok"]]
    assert amce["statistic"].str.contains("frame_alpha").any()  # R's rows are matched on the same terms


# ---------------------------------------------------------------- METHODS.md

OLD = __import__("pathlib").Path(__file__).parent / "data" / "old_runs"


@pytest.mark.parametrize("name", ["opinion_survey_cyclic", "studyfile_averaged"])  # a built-in and a study file
def test_analyze_writes_a_methods_paragraph_from_the_run(tmp_path, name):
    import json
    import shutil

    run = tmp_path / name
    shutil.copytree(OLD / name, run)
    assert main(["analyze", str(run), "--out", str(tmp_path / "a"), "--no-plots"]) == 0
    text = (tmp_path / "a" / "METHODS.md").read_text()
    r = pd.read_parquet(run / "responses.parquet")
    m = r[r["source"] != "human"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["model"]["name"].replace("_", "\\_") in text
    assert f"{m['trial'].nunique()} trials" in text and f"{m['subject'].nunique()} subject" in text
    v = m.groupby("trial")["validity"].first()
    assert f"averaged {v.mean():.3f}" in text and f"minimum {v.min():.3f}" in text
    oe = pd.read_csv(tmp_path / "a" / "order_effects.csv")
    assert f"order\\_effects ({len(oe)} tests: {oe['test'].iloc[0]}" in text
    assert "Holm" in text and "estimand is the model's expected answer" in text
    assert f"({r.loc[r['source'] == 'human', 'subject'].nunique()} respondents)" in text


def test_methods_text_escapes_user_text():
    from simsubjects.publish.methods_md import methods_text

    resp = pd.DataFrame({"source": "model", "model": "m", "trial": [1, 2], "subject": ["a", "b"],
                         "item": "q", "method": "sampled", "validity": [0.9, 0.2]})
    table = pd.DataFrame({"test": ["<b>t</b>"], "p.value": [0.1], "unit": ["subject"]})
    text = methods_text("s", "# [evil](http://x)", [{"model": {"name": "m*1*"}}], resp, {"t_[1]": table})
    assert "\\# \\[evil\\](http://x)" in text and "m\\*1\\*" in text and "\\<b\\>t\\</b\\>" in text
    assert "t\\_\\[1\\]" in text
    assert "within-subject sampling noise" in text and "1 of 2 trials below 0.5" in text


def test_mixed_subjects_and_analyze_take_weights_and_clusters(tmp_path, capsys):
    X, y, yhat, Xu, yu, w, _ = _survey()
    resp = np.arange(80) // 2  # each respondent rated two units
    human = pd.DataFrame({"item": [f"h{i}" for i in range(80)], "y": y, "wt": w, "resp": resp})
    model = pd.DataFrame({"item": [f"h{i}" for i in range(80)] + [f"m{i}" for i in range(300)],
                          "yhat": np.r_[yhat, yu]})
    t = ppi.mixed_subjects(model, human, weight="wt", cluster="resp").set_index("method")
    ref = ppi.ppi_mean(y, yhat, yu, w=w, clusters=resp, clusters_unlabeled=[f"u{i}" for i in range(300)])
    for col in ("estimate", "std.error", "lambda"):
        assert t.loc["prediction-powered", col] == pytest.approx(ref[col].iat[0], rel=1e-12)
    assert t.loc["human-only", "estimate"] == pytest.approx(np.average(y, weights=w), rel=1e-12)
    with pytest.raises(UserError, match="--ppi-weight nope"):
        ppi.mixed_subjects(model, human, weight="nope")
    # analyze --ppi-human: the options reach the table; without --ppi-human they are refused
    from tests.test_ppi import _synthetic_moca_run

    run, people, _ = _synthetic_moca_run(tmp_path)
    hfile = tmp_path / "human.csv"
    people.assign(resp=np.arange(len(people)) // 3).to_csv(hfile, index=False)
    base = ["analyze", str(run), "--no-plots", "--ppi-human", str(hfile), "--ppi-response", "Yes"]
    assert main(base) == 0
    plain = pd.read_csv(run / "analysis" / "ppi.csv").set_index("method")
    assert main(base + ["--ppi-cluster", "resp"]) == 0
    clustered = pd.read_csv(run / "analysis" / "ppi.csv").set_index("method")
    assert clustered.loc["human-only", "estimate"] == pytest.approx(plain.loc["human-only", "estimate"])
    assert clustered.loc["human-only", "std.error"] != pytest.approx(plain.loc["human-only", "std.error"], rel=1e-6)
    capsys.readouterr()
    assert main(["analyze", str(run), "--no-plots", "--ppi-cluster", "resp"]) == 2
    assert "needs --ppi-human" in capsys.readouterr().err
