"""AMCE: hand computations from the raw votes, regression = difference in means, SE conventions."""

import json
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import linalg, stats

from simsubjects.studies.moca.analysis import (
    _contrast_frames, amce, amce_bootstrap, amce_dim, amce_ols, amce_paper, analyze_moca,
    bootstrap_draws, cluster_vcov, dim_draws, draw_indices, ols_cluster, outcomes, plot_forest,
    plot_radar,
)
from simsubjects.datasets.moca_humans import data_dir, load_moca


@pytest.fixture(scope="module")
def data():
    responses, items = load_moca()
    return outcomes(responses, items)


def raw_votes(task, tag):
    with open(data_dir() / f"{task}_dataset_v1.json", encoding="utf-8") as f:
        stories = [json.loads(s) for s in json.load(f)]
    return [v for st in stories if any(s["annotation"][1] == tag for s in st["annotated_sentences"])
            for v in st["individual_votes"]]


def row(table, factor, source="human"):
    t = table[(table["factor"] == factor) & (table["source"] == source)]
    assert len(t) == 1
    return t.iloc[0]


@pytest.mark.parametrize("task,factor,tag_a,tag_b", [
    ("causal", "event_normality", "EC_4_Abnormal_Event", "EC_4_Normal_Event"),
    ("moral", "evitability", "inevitable", "avoidable"),
])
def test_human_amce_by_hand_from_raw_votes(data, task, factor, tag_a, tag_b):
    a, b = raw_votes(task, tag_a), raw_votes(task, tag_b)
    by_hand = sum(a) / len(a) - sum(b) / len(b)
    dim = row(amce_dim(data), factor)
    assert dim["estimate"] == pytest.approx(by_hand, abs=1e-12)
    assert (dim["n_a"], dim["n_b"]) == (len(a), len(b))
    assert row(amce_ols(data), factor)["estimate"] == pytest.approx(by_hand, abs=1e-12)


def synthetic_model(data, seed=0):
    """A fake model: one P(Yes) per story and template, for the side-by-side tables."""
    rng = np.random.default_rng(seed)
    items = data.drop_duplicates("item")
    rows = []
    for template in ("yesno", "ab"):
        m = items.assign(source="model", model="fake", template=template,
                         y=rng.uniform(0, 1, len(items)), trial=items["item"] + ":" + template)
        rows.append(m)
    return pd.concat([data, *rows], ignore_index=True)


def test_regression_equals_difference_in_means(data):
    both = synthetic_model(data)
    dim, ols = amce_dim(both), amce_ols(both, "CR0")
    key = ["source", "model", "task", "factor"]
    merged = dim.merge(ols, on=key, suffixes=("_dim", "_ols"))
    assert len(merged) == 22
    np.testing.assert_allclose(merged["estimate_dim"], merged["estimate_ols"], atol=1e-12)


def test_stata_and_cr0_equal_statsmodels(data):
    for fr in _contrast_frames(data, None, ("source", "model")):
        if fr["factor"] not in ("norm_type", "personal_force", "time"):
            continue
        X = np.column_stack([np.ones_like(fr["y"]), fr["d"].astype(float)])
        for se_type, corr in (("stata", True), ("CR0", False)):
            ours = ols_cluster(fr["y"], X, fr["cluster"], se_type)
            sm_fit = sm.OLS(fr["y"], X).fit(cov_type="cluster",
                                           cov_kwds={"groups": fr["cluster"], "use_correction": corr})
            np.testing.assert_allclose(ours["std.error"], sm_fit.bse, rtol=1e-10)
            G = np.unique(fr["cluster"]).size
            assert (ours["df"] == G - 1).all()


def small_clustered(seed=5):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, 12)
    cl = np.repeat(np.arange(sizes.size), sizes)
    n = cl.size
    X = np.column_stack([np.ones(n), rng.normal(size=n), rng.random(n) < 0.5]).astype(float)
    y = X @ [0.2, 0.5, -1.0] + rng.normal(size=n) * (1 + np.abs(X[:, 1]))
    return y, X, cl


def test_cr2_against_brute_force():
    """CR2 built the long way: explicit N x N matrices, scipy's sqrtm, eigenvalues of U'U."""
    y, X, cl = small_clustered()
    n, k = X.shape
    M = np.linalg.inv(X.T @ X)
    IH = np.eye(n) - X @ M @ X.T
    e = IH @ y
    groups = [np.flatnonzero(cl == g) for g in np.unique(cl)]
    meat = np.zeros((k, k))
    A = {}
    for g, idx in enumerate(groups):
        A[g] = np.real(linalg.inv(linalg.sqrtm(IH[np.ix_(idx, idx)])))
        s = X[idx].T @ A[g] @ e[idx]
        meat += np.outer(s, s)
    V = M @ meat @ M
    V_ours, df_ours = cluster_vcov(X, e, cl, "CR2")
    np.testing.assert_allclose(V_ours, V, rtol=1e-9)
    for j in range(k):
        # v_j = sum_g (u_g' eps)^2 with u_g = (I - H) S_g' A_g X_g M e_j; df = (sum l)^2 / sum l^2
        U = np.zeros((n, len(groups)))
        for g, idx in enumerate(groups):
            c = np.zeros(n)
            c[idx] = A[g] @ X[idx] @ M[:, j]
            U[:, g] = IH @ c
        lam = np.linalg.eigvalsh(U.T @ U)
        assert df_ours[j] == pytest.approx(lam.sum() ** 2 / (lam ** 2).sum(), rel=1e-9)


def test_cregg_is_g_over_g_minus_1_cr0():
    y, X, cl = small_clustered(7)
    e = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
    V0, _ = cluster_vcov(X, e, cl, "CR0")
    Vc, dfc = cluster_vcov(X, e, cl, "cregg")
    G = np.unique(cl).size
    np.testing.assert_allclose(Vc, V0 * G / (G - 1), rtol=1e-12)
    assert np.isinf(dfc).all()
    res = ols_cluster(y, X, cl, "cregg")
    np.testing.assert_allclose(res["p.value"], 2 * stats.norm.sf(np.abs(res["statistic"])), rtol=1e-12)


def test_bootstrap_vectorized_equals_loop():
    rng = np.random.default_rng(11)
    sa, ca = rng.uniform(0, 25, 9), rng.integers(1, 26, 9).astype(float)
    sb, cb = rng.uniform(0, 25, 6), rng.integers(1, 26, 6).astype(float)
    gen = np.random.default_rng(2)
    ia, ib = draw_indices(gen, 9, 300), draw_indices(gen, 6, 300)
    fast = dim_draws(sa, ca, sb, cb, ia, ib)
    slow = np.array([sa[ia[b]].sum() / ca[ia[b]].sum() - sb[ib[b]].sum() / cb[ib[b]].sum()
                     for b in range(300)])
    np.testing.assert_allclose(fast, slow, rtol=1e-12)


def test_bootstrap_reproducible_and_seeded(data):
    a = amce_bootstrap(data, n_boot=400, seed=9)
    b = amce_bootstrap(data, n_boot=400, seed=9)
    c = amce_bootstrap(data, n_boot=400, seed=10)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["conf.low"], c["conf.low"])
    assert (a["conf.low"] <= a["estimate"]).all() and (a["estimate"] <= a["conf.high"]).all()
    # vote-level resampling ignores clustering and so gives narrower intervals here
    v = amce_bootstrap(data, unit="vote", n_boot=400, seed=9)
    assert ((v["conf.high"] - v["conf.low"]) < (a["conf.high"] - a["conf.low"])).mean() > 0.8


def test_bootstrap_story_unit_keeps_stories_whole():
    # every A story is all-Yes and every B story all-No: every draw is exactly 1 - 0
    d = pd.DataFrame({"source": "human", "model": "h", "task": "moral", "item": np.repeat(list("abcd"), 3),
                      "y": np.repeat([1.0, 1.0, 0.0, 0.0], 3),
                      "evitability": np.repeat(["Inevitable", "Inevitable", "Avoidable", "Avoidable"], 3)})
    fr = next(_contrast_frames(d, None, ("source", "model")))
    assert (bootstrap_draws(fr, "story", 50, 0) == 1.0).all()


def test_paper_convention(data):
    p = amce_paper(data, seed=1)
    hum = p[p["source"] == "human"]
    assert (hum["estimate"] > 0).all()
    assert (p["n_boot"] == 100).all() and (p["conf_level"] == 0.90).all()
    # people favour omissions slightly, so the paper shows "Omission - Action"
    assert row(p, "action_omission")["term"] == "Omission - Action"
    dim = amce_dim(data)
    assert row(p, "event_normality")["estimate"] == pytest.approx(row(dim, "event_normality")["estimate"], abs=0.02)
    pd.testing.assert_frame_equal(amce(data, convention="paper", seed=1), p)


def test_tables_plots_and_analyze(tmp_path, data):
    responses, items = load_moca()
    rng = np.random.default_rng(4)
    model = pd.DataFrame({"trial": items["item"] + ":yesno", "item": items["item"]})
    pyes = rng.uniform(0, 1, len(model))
    model = pd.concat([model.assign(response="Yes", weight=pyes), model.assign(response="No", weight=1 - pyes)])
    model = model.assign(study="moca", condition="", subject="", source="model", model="fake",
                         method="exact", validity=1.0, persona="", template="yesno")
    out = analyze_moca(pd.concat([responses, model], ignore_index=True), items, n_boot=200)
    assert set(out) >= {"table1", "story_p", "agreement", "amce", "amce_paper"}
    t1 = out["table1"].set_index("task")
    assert t1.loc["moral", ["Yes", "No", "ambiguous"]].tolist() == [23, 10, 29]
    fake = out["story_p"][out["story_p"]["model"] == "fake"].set_index("item")["p_yes"]
    np.testing.assert_allclose(fake.loc[items["item"]].to_numpy(), pyes)
    assert set(out["amce"]["method"]) == {"difference-in-means", "ols-cluster", "bootstrap-story"}
    assert set(out["agreement"]["task"]) == {"causal", "moral"}
    for fn, name in ((plot_radar, "radar.png"), (plot_forest, "forest.png")):
        fn(out["amce"], tmp_path / name)
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.r
def test_matches_estimatr(tmp_path, data):
    """R twin: estimatr::lm_robust(clusters=, se_type=) agrees to 1e-6 on SE, df, p and CI."""
    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not found")
    ok = subprocess.run(["Rscript", "-e", "quit(status = !requireNamespace('estimatr', quietly = TRUE))"],
                        capture_output=True)
    if ok.returncode:
        pytest.skip("R package estimatr not installed")
    y, X, cl = small_clustered()
    pd.DataFrame({"y": y, "x1": X[:, 1], "x2": X[:, 2], "cl": cl}).to_csv(tmp_path / "g.csv", index=False)
    sub = data[data["evitability"].isin(["Inevitable", "Avoidable"])]
    pd.DataFrame({"y": sub["y"], "d": (sub["evitability"] == "Inevitable").astype(float),
                  "cl": sub["item"]}).to_csv(tmp_path / "h.csv", index=False)
    script = f"""
    suppressMessages(library(estimatr))
    g <- read.csv("{tmp_path / 'g.csv'}"); h <- read.csv("{tmp_path / 'h.csv'}")
    out <- NULL
    for (st in c("CR0", "stata", "CR2")) {{
      a <- tidy(lm_robust(y ~ x1 + x2, data = g, clusters = cl, se_type = st)); a$data <- "g"
      b <- tidy(lm_robust(y ~ d, data = h, clusters = cl, se_type = st)); b$data <- "h"
      out <- rbind(out, transform(rbind(a, b), se_type = st))
    }}
    write.csv(out, "{tmp_path / 'r.csv'}", row.names = FALSE)
    """
    subprocess.run(["Rscript", "-e", script], check=True, capture_output=True)
    r = pd.read_csv(tmp_path / "r.csv")
    hd = pd.read_csv(tmp_path / "h.csv")
    Xh = np.column_stack([np.ones(len(hd)), hd["d"]])
    for st in ("CR0", "stata", "CR2"):
        for name, (yy, XX, cc) in {"g": (y, X, cl), "h": (hd["y"].to_numpy(), Xh, hd["cl"].to_numpy())}.items():
            ours = ols_cluster(yy, XX, cc, st)
            theirs = r[(r["se_type"] == st) & (r["data"] == name)]
            for a, b in (("std.error", "std.error"), ("df", "df"), ("p.value", "p.value"), ("conf.low", "conf.low"),
                         ("conf.high", "conf.high")):
                np.testing.assert_allclose(ours[a].to_numpy(), theirs[b].to_numpy(), rtol=1e-6, atol=1e-9)
