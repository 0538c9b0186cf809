"""Issue 25: the subject is the unit of a study file's tests; order effects among substantive options.

Each test recomputes the package's number with an independent reference (scipy) on the stated unit,
from the raw fake responses, not from the package's intermediate tables.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simsubjects.errors import UserError
from simsubjects.collect.option_order import add_shown_position
from simsubjects.studyfile import load_study
from simsubjects.studyfile.analyses import analyze_study
from simsubjects.studyfile.design import build_trials

FRAMING = """study: framing
title: T
design:
  factors:
    frame: {levels: [gain, loss], assignment: between}
    cue: {levels: ['on', 'off'], assignment: between}
  subjects: {table: people.csv, id: id, template: "Party ${party}."}
  seed: 3
option_order: averaged
prompt: "${persona} ${question}\\n${options}"
items: [{id: q, text: "Q ${frame} ${cue}", response: yesno}]
analyses:
  - {type: welch, factor: frame}
  - {type: chi_square, factor: frame}
  - {type: one_sample, mu: 0.5}
  - {type: welch, factor: party, levels: [a, b], name: by_party}
"""


def _write(tmp_path, text, n_subjects=80):
    pd.DataFrame({"id": [f"s{i:03d}" for i in range(n_subjects)],
                  "party": ["a", "b"] * (n_subjects // 2)}).to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "s.yaml").write_text(text)
    return load_study(tmp_path / "s.yaml")


def _fake(trials: pd.DataFrame, first_bonus: float, effect, seed=0) -> pd.DataFrame:
    """A stand-in model: a subject-level propensity `effect(rec)` plus `first_bonus` on the option shown
    first (the position bias that averaging over orders removes), as exact probabilities."""
    rng = np.random.default_rng(seed)
    subject_noise = {s: rng.normal(0, 0.02) for s in trials["subject"].unique()}
    rows = []
    for rec in trials.to_dict("records"):
        labels = list(rec["labels"])
        p = np.full(len(labels), 0.0)
        p += effect(rec, labels) + subject_noise[rec["subject"]]
        p[0] += first_bonus
        p = np.clip(p, 1e-3, None)
        p /= p.sum()
        design = {k: v for k, v in rec.items() if k not in ("prompt", "options", "labels")}
        for lab, w in zip(labels, p):
            rows.append({**design, "study": "framing", "source": "model", "model": "m", "method": "exact",
                         "response": lab, "weight": w, "validity": 1.0})
    return add_shown_position(pd.DataFrame(rows))


def _framing(tmp_path):
    s = _write(tmp_path, FRAMING)
    trials, items = build_trials(s)
    assert len(trials) == 160 and trials["subject"].nunique() == 80  # two orderings per subject

    def effect(rec, labels):
        yes = 0.55 if rec["frame"] == "gain" else 0.25
        return np.array([yes if lab == "Yes" else 1 - yes for lab in labels])

    resp = _fake(trials, first_bonus=1.0, effect=effect)
    return s, resp, items


def _p_yes_by_subject(resp: pd.DataFrame) -> pd.DataFrame:
    """Reference: P(Yes) per trial from the raw rows, then each subject's mean over its orderings."""
    share = resp["weight"] / resp.groupby("trial")["weight"].transform("sum")
    yes = resp.assign(p=share.where(resp["response"] == "Yes", 0.0)).groupby(["subject", "frame", "party", "trial"])["p"].sum()
    return yes.groupby(["subject", "frame", "party"]).mean().reset_index()


def test_averaged_orders_welch_n_is_the_subjects_and_matches_scipy_on_subject_means(tmp_path):
    s, resp, items = _framing(tmp_path)
    tables = analyze_study(s, resp, items)
    t = tables["tests"].set_index(["test", "contrast"])
    w = t.loc[("Welch two-sample t-test", "frame: gain - loss")]
    assert w["n"] == 80 and w["unit"] == "subject"  # not 160 trials
    ref_units = _p_yes_by_subject(resp)
    ref = stats.ttest_ind(ref_units.loc[ref_units["frame"] == "gain", "p"], ref_units.loc[ref_units["frame"] == "loss", "p"],
                          equal_var=False)
    assert w["statistic"] == pytest.approx(ref.statistic, rel=1e-9) and w["df"] == pytest.approx(ref.df, rel=1e-9)
    assert w["p.value"] == pytest.approx(ref.pvalue, rel=1e-6) and w["p.value"] < 1e-20  # the order effect is not noise
    o = t.loc[("One-sample t-test", "score - 0.5")]
    assert o["n"] == 80 and o["statistic"] == pytest.approx(stats.ttest_1samp(ref_units["p"], 0.5).statistic, rel=1e-9)
    # a persona column as the grouping of a Welch test (finding 4)
    b = t.loc[("Welch two-sample t-test", "party: a - b")]
    ref_b = stats.ttest_ind(ref_units.loc[ref_units["party"] == "a", "p"], ref_units.loc[ref_units["party"] == "b", "p"],
                            equal_var=False)
    assert b["n"] == 80 and b["statistic"] == pytest.approx(ref_b.statistic, rel=1e-9)
    # the `name:` of a test analysis is its table (finding 9), and each tests row names its analysis
    assert tables["by_party"]["statistic"].tolist() == [b["statistic"]]
    assert set(tables["tests"]["analysis"]) == {"welch_1", "chi_square_2", "one_sample_3", "by_party"}


def test_averaged_orders_chi_square_counts_each_subject_once(tmp_path):
    s, resp, items = _framing(tmp_path)
    from simsubjects.analyze.methods.subjects import PERMUTATION_TEST

    # a model's rows: the permutation test of Pearson's statistic (issue 40, item 3); the chi-square
    # distribution's p stays beside it as p.value.asymptotic
    c = analyze_study(s, resp, items)["tests"].set_index("test").loc[PERMUTATION_TEST]
    units = _p_yes_by_subject(resp)
    table = np.array([[units.loc[units["frame"] == f, "p"].sum(), (1 - units.loc[units["frame"] == f, "p"]).sum()]
                      for f in ("gain", "loss")])
    assert table.sum() == pytest.approx(80)
    chi2, p, dof, _ = stats.chi2_contingency(table, correction=False)
    assert c["statistic"] == pytest.approx(chi2, rel=1e-9) and c["p.value.asymptotic"] == pytest.approx(p, rel=1e-6)
    assert c["n"] == 80 and isinstance(c["n"], (int, np.integer))


def test_welch_on_a_within_subject_factor_is_refused(tmp_path):
    s = _write(tmp_path, FRAMING.replace("cue: {levels: ['on', 'off'], assignment: between}",
                                         "cue: {levels: ['on', 'off'], assignment: within}")
               .replace("{type: welch, factor: party, levels: [a, b], name: by_party}", "{type: welch, factor: cue}"))
    trials, items = build_trials(s)
    resp = _fake(trials, 0.0, lambda rec, labels: np.full(len(labels), 0.5))
    with pytest.raises(UserError, match="answered at both levels.*type: paired"):
        analyze_study(s, resp, items)


def test_an_unknown_group_column_names_what_is_allowed(tmp_path):
    from simsubjects.studyfile.spec import StudyFileError

    with pytest.raises(StudyFileError, match=r"'region' is neither a declared factor.*allowed: cue, frame, id, party"):
        _write(tmp_path, FRAMING.replace("factor: party, levels: [a, b]", "factor: region, levels: [a, b]"))


DONT_KNOW = """study: dk
title: T
design:
  subjects: 12
  seed: 1
option_order: averaged
prompt: "${question}\\n${options}"
response_types:
  agree4: {type: likert, labels: [Disagree, Lean disagree, Lean agree, Agree], refusal: "Don't know"}
items:
  - {id: a, text: "A?", response: agree4}
  - {id: b, text: "B?", response: agree4}
"""


def test_order_effects_with_a_refusal_option_use_the_substantive_options(tmp_path):
    (tmp_path / "s.yaml").write_text(DONT_KNOW)
    s = load_study(tmp_path / "s.yaml")
    trials, items = build_trials(s)
    assert (trials["labels"].map(lambda x: x[-1]) == "Don't know").all()
    resp = _fake(trials, first_bonus=2.0, effect=lambda rec, labels: np.full(len(labels), 0.2), seed=4)
    tables = analyze_study(s, resp, items)
    per_item = tables["order_effects"]
    assert len(per_item) == 2 * 4 and "Don't know" not in set(per_item["response"])
    # reference: each subject's mean share of the option when shown first / in the last substantive place (4th)
    share = resp["weight"] / resp.groupby("trial")["weight"].transform("sum")
    r = resp.assign(share=share, place=[json.loads(o).index(x) + 1 for o, x in zip(resp["order_shown"], resp["response"])])
    g = r[(r["item"] == "a") & (r["response"] == "Agree")]
    first = g[g["place"] == 1].groupby("subject")["share"].mean()
    last = g[g["place"] == 4].groupby("subject")["share"].mean()
    ref = stats.ttest_rel(first, last.loc[first.index])
    row = per_item.set_index(["item", "response"]).loc[("a", "Agree")]
    assert row["p_first"] == pytest.approx(first.mean()) and row["p_last"] == pytest.approx(last.mean())
    assert row["p_first"] > 0.5 > 0.2 > row["p_last"]  # the position bias the empty table hid
    assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-9) and row["n_first"] == 12
    assert row["test"].startswith("Paired") and row["unit"] == "subject"
    # Holm over the model's 8 cells, as statsmodels computes it
    from statsmodels.stats.multitest import multipletests

    assert per_item["p.value.holm"].to_numpy() == pytest.approx(multipletests(per_item["p.value"], method="holm")[1])
    assert per_item["family"].nunique() == 1 and "order-effect cells" in per_item["family"].iat[0]
    assert tables["order_effects_average"]["estimate"].item() > 0.3


# ---------------------------------------------------------------- conjoint: the model-vs-people omnibus test

def _conjoint_null(rng, respondents=30, tasks=6):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("cj_null", Path(__file__).resolve().parent.parent / "bench" / "cj_null.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.simulate(rng, respondents, tasks, slope_sd=2.0)


def test_cj_anova_cregg_errors_match_r_survey_regtermtest(tmp_path):
    """cj_anova with se_type="cregg" (survey's linearization): survey::regTermTest(svyglm(y ~ (A + B + C + D) *
    group, svydesign(ids = ~respondent)), method = "Wald"), run by Rscript on the same rows: the unit is the
    respondent (cluster)."""
    import shutil
    import subprocess

    from simsubjects.analyze.methods import conjoint as cj

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    d = _conjoint_null(np.random.default_rng(5))
    ours = cj.cj_anova(d, "chosen", ["A", "B", "C", "D"], "group", id="id", se_type="cregg").iloc[0]
    d.to_csv(tmp_path / "d.csv", index=False)
    code = f"""suppressMessages(library(survey)); d <- read.csv("{tmp_path / 'd.csv'}")
    d$cl <- paste(d$group, d$id); for (v in c("A", "B", "C", "D", "group")) d[[v]] <- factor(d[[v]])
    m <- svyglm(chosen ~ (A + B + C + D) * group, design = svydesign(ids = ~cl, weights = ~1, data = d))
    t <- regTermTest(m, ~ group + A:group + B:group + C:group + D:group, method = "Wald")
    cat(sprintf("%.15g", c(t$Ftest, t$df, t$ddf, t$p)))"""
    out = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, check=True).stdout.split()
    F, df1, df2, p = map(float, out)
    assert ours["statistic"] == pytest.approx(F, rel=1e-9) and ours["df"] == df1 and ours["df.residual"] == df2
    assert ours["p.value"] == pytest.approx(p, rel=1e-7) and ours["n_clusters"] == 60


def test_cj_anova_cr2_with_a_respondent_who_alone_identifies_a_coefficient(tmp_path):
    """A model with few respondents (as `make demo`'s conjoint): some respondent's rows alone identify an
    attribute x group coefficient, so I - H_gg has an eigenvalue 0. CR2's (I - H_gg)^(-1/2) is then the
    generalized inverse square root (that direction counts 0), as estimatr's; clipping the eigenvalue to
    1e-12 moved F by 4e-6 in the demo. Reference: estimatr::lm_robust(se_type = "CR2") by Rscript."""
    import shutil
    import subprocess

    from simsubjects.analyze.methods import conjoint as cj

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    d = _conjoint_null(np.random.default_rng(11))
    few = d["id"].isin(sorted(d.loc[d["group"] == "model", "id"].unique())[:3])
    d = d[(d["group"] == "people") | few].reset_index(drop=True)
    d = d[(d["group"] == "people") | (d.groupby(["group", "id"]).cumcount() < 4)].reset_index(drop=True)
    ours = cj.cj_anova(d, "chosen", ["A", "B", "C", "D"], "group", id="id").iloc[0]
    d.to_csv(tmp_path / "d.csv", index=False)
    code = f"""d <- read.csv("{tmp_path / 'd.csv'}"); d$cl <- paste(d$group, d$id)
    for (v in c("A", "B", "C", "D", "group")) d[[v]] <- factor(d[[v]])
    m <- estimatr::lm_robust(chosen ~ (A + B + C + D) * group, data = d, clusters = cl, se_type = "CR2")
    k <- grepl("group", names(coef(m))) & !is.na(coef(m)); b <- coef(m)[k]; V <- vcov(m)[k, k]
    e <- eigen(V, symmetric = TRUE); keep <- e$values > max(e$values) * nrow(V) * .Machine$double.eps
    W <- sum(crossprod(e$vectors[, keep, drop = FALSE], b)^2 / e$values[keep])
    cat(sprintf("%.17g", c(W / sum(keep), sum(keep))))"""
    out = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, check=True).stdout.split()
    F, q = map(float, out)
    assert ours["df"] == q and ours["n_clusters"] == 33
    assert ours["statistic"] == pytest.approx(F, rel=1e-9)


def test_cj_anova_is_clustered_cr2_as_estimatr_and_statsmodels(tmp_path):
    """Issue 25 (audit finding 3): cj_anova is THE model-vs-people omnibus test, clustered by respondent. Its
    default: W = b' V^-1 b on the group and attribute x group coefficients, V CR2 (Bell-McCaffrey), F = W / q on
    F(q, G - p). References computed independently: V from estimatr::lm_robust(se_type = "CR2", clusters =
    respondent) by Rscript; and the CR1 variant (se_type="stata") as statsmodels' cluster-robust OLS f_test
    (its F on (q, G - 1), the p-value here taken on G - p). Both to 1e-10. cregg's unclustered test stays
    reachable as cj_anova_cregg and gives another statistic; without id= cj_anova stops with one line."""
    import shutil
    import subprocess

    import statsmodels.formula.api as smf
    from scipy import stats

    from simsubjects.analyze.methods import conjoint as cj
    from simsubjects.errors import UserError

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    d = _conjoint_null(np.random.default_rng(11))
    feats = ["A", "B", "C", "D"]
    ours = cj.cj_anova(d, "chosen", feats, "group", id="id").iloc[0]
    assert ours["df"] == 7 and ours["n_clusters"] == 60 and ours["df.residual"] == 60 - 14
    assert "CR2" in ours["test"] and ours["unit"] == "respondent (cluster)"
    d.to_csv(tmp_path / "d.csv", index=False)
    code = f"""d <- read.csv("{tmp_path / 'd.csv'}"); d$cl <- paste(d$group, d$id)
    for (v in c("A", "B", "C", "D", "group")) d[[v]] <- factor(d[[v]])
    m <- estimatr::lm_robust(chosen ~ (A + B + C + D) * group, data = d, clusters = cl, se_type = "CR2")
    k <- grepl("group", names(coef(m))); b <- coef(m)[k]; V <- vcov(m)[k, k]
    W <- drop(t(b) %*% solve(V, b)); G <- length(unique(d$cl)); p <- length(coef(m))
    cat(sprintf("%.17g", c(W / sum(k), sum(k), G - p, pf(W / sum(k), sum(k), G - p, lower.tail = FALSE))))"""
    out = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, check=True).stdout.split()
    F, df1, df2, p = map(float, out)
    assert abs(ours["statistic"] - F) < 1e-10 and ours["df"] == df1 and ours["df.residual"] == df2
    assert abs(ours["p.value"] - p) < 1e-10
    # CR1 (Stata's vce(cluster)) against statsmodels' cluster-robust OLS Wald F
    crl = cj.cj_anova(d, "chosen", feats, "group", id="id", se_type="stata").iloc[0]
    dd = d.assign(cl=pd.factorize(d["group"] + "|" + d["id"])[0],
                  group=pd.Categorical(d["group"], ["model", "people"]))
    fit = smf.ols("chosen ~ (A + B + C + D) * group", dd).fit(cov_type="cluster", cov_kwds={"groups": dd["cl"]})
    tested = [n for n in fit.params.index if "group" in n]
    ft = fit.f_test(np.eye(len(fit.params))[[list(fit.params.index).index(n) for n in tested]])
    assert abs(crl["statistic"] - float(np.squeeze(ft.fvalue))) < 1e-10 and crl["df"] == ft.df_num
    assert abs(crl["p.value"] - stats.f.sf(float(np.squeeze(ft.fvalue)), 7, 46)) < 1e-12
    # cregg's F takes the profiles as independent: another number, still reachable
    cregg = cj.cj_anova_cregg(d, "chosen", feats, "group").iloc[0]
    assert cregg["df.residual"] == 720 - 14 and abs(cregg["statistic"] - ours["statistic"]) > 1e-3
    with pytest.raises(UserError, match="needs id="):
        cj.cj_anova(d, "chosen", feats, "group")


# ---------------------------------------------------------------- survey weights: one policy

def test_weighted_human_tests_match_r_survey(tmp_path):
    """The human rows carry survey weights: the one-sample and two-group tests are survey::svyttest's on
    svydesign(ids = ~1, weights = ~weight), one row per respondent (the unit), computed by Rscript."""
    import shutil
    import subprocess

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    src = Path(__file__).resolve().parent.parent / "examples" / "opinion_survey"
    for f in src.iterdir():
        (tmp_path / f.name).write_bytes(f.read_bytes())
    text = (src / "study.yaml").read_text() + \
        "  - {type: one_sample, mu: 3}\n  - {type: welch, factor: party, levels: [Democratic, Republican]}\n"
    (tmp_path / "study.yaml").write_text(text)
    s = load_study(tmp_path / "study.yaml")
    trials, items = build_trials(s)
    model = _fake(trials, 0.0, lambda rec, labels: np.linspace(1, 2, len(labels)))
    resp = pd.concat([model, s.human], ignore_index=True)
    tests = analyze_study(s, resp, items)["tests"]
    human = tests[(tests["source"] == "human") & (tests["item"] == "parks")].set_index("test")
    h = pd.read_csv(src / "human.csv")
    h = h[h["question"] == "parks"].assign(score=lambda d: d["answer"].map(
        {"Strongly disagree": 1, "Disagree": 2, "Neither agree nor disagree": 3, "Agree": 4, "Strongly agree": 5}))
    h = h.dropna(subset=["score"])
    h.to_csv(tmp_path / "h.csv", index=False)
    code = f"""suppressMessages(library(survey)); h <- read.csv("{tmp_path / 'h.csv'}")
    d <- svydesign(ids = ~1, weights = ~weight, data = h)
    a <- svyttest(I(score - 3) ~ 0, d); b <- svyttest(score ~ I(party == "Democratic"), d)
    cat(sprintf("%.15g", c(a$statistic, a$parameter, a$p.value, b$estimate, b$statistic, b$parameter, b$p.value)))"""
    r = list(map(float, subprocess.run(["Rscript", "-e", code], capture_output=True, text=True,
                                       check=True).stdout.split()))
    o = human.loc["Survey-weighted one-sample t-test (survey::svyttest)"]
    assert [o["statistic"], o["df"], o["p.value"]] == pytest.approx(r[0:3], rel=1e-9)
    assert o["n"] == len(h) and o["weights"] == "survey" and o["unit"] == "subject"
    w = human.loc["Survey-weighted t-test (survey::svyttest)"]
    assert [w["estimate"], w["statistic"], w["df"], w["p.value"]] == pytest.approx(r[3:7], rel=1e-9)
    # the model's rows are unweighted: the ordinary tests, labelled so
    assert set(tests.loc[tests["source"] != "human", "weights"]) == {"none"}


def test_wilcoxon_statistic_is_r_v(tmp_path):
    """R's wilcox.test(x, y, paired = TRUE) reports V = the rank sum of the positive differences."""
    import shutil
    import subprocess

    from simsubjects.analyze.methods import paired

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    rng = np.random.default_rng(8)
    x = rng.random(30)
    y = x - rng.normal(0.1, 0.2, 30)  # mostly positive differences: W+ > W-
    code = f"x <- c({','.join(map(repr, x.tolist()))}); y <- c({','.join(map(repr, y.tolist()))}); " \
           "r <- wilcox.test(x, y, paired = TRUE); cat(sprintf('%.15g', c(r$statistic, r$p.value)))"
    v, p = map(float, subprocess.run(["Rscript", "-e", code], capture_output=True, text=True, check=True).stdout.split())
    w = paired.wilcoxon(x, y).iloc[0]
    assert w["statistic"] == v and w["p.value"] == pytest.approx(p, rel=1e-10)


# ---------------------------------------------------------------- Milgram: a tiny group gets an exact p

def test_milgram_logrank_with_one_model_subject_is_exact():
    """One model subject against Milgram's 40: the permutation p over all 41 relabelings, recomputed with
    statsmodels' survdiff per relabeling (event at break-off + 1; completers censored at 30)."""
    from statsmodels.duration.survfunc import survdiff

    from simsubjects.studies.milgram.analysis import tests as milgram_tests
    from simsubjects.datasets.milgram1963 import load_milgram1963

    human = load_milgram1963("milgram")
    model = human.iloc[[0]].assign(model="m", source="model", breakoff_level=9, censored=0.0, trial="m-1")
    b = pd.concat([model, human], ignore_index=True).assign(censored=lambda d: d["censored"].astype(bool))
    t = milgram_tests(b).set_index("test")
    asym = t.loc["Log-rank (Mantel-Cox) test"]
    assert asym["p.value"] < 1e-4 and "unreliable" in asym["note"]
    perm = t.loc["Log-rank permutation test"]
    levels = b["breakoff_level"].to_numpy(int)
    event = ~b["censored"].to_numpy() & (levels < 30)
    time = np.where(event, levels + 1, levels)
    obs = survdiff(time, event.astype(int), (np.arange(41) == 0).astype(int))[0]
    ref = np.mean([survdiff(time, event.astype(int), (np.arange(41) == j).astype(int))[0] >= obs - 1e-9
                   for j in range(41)])
    assert perm["statistic"] == pytest.approx(obs, rel=1e-9)
    assert perm["p.value"] == pytest.approx(ref) and perm["p.value"] == pytest.approx(1 / 41)
    assert "exact: all 41 relabelings" in perm["note"]


def test_percent_obedient_has_a_wilson_interval_as_r_prop_test():
    import shutil
    import subprocess

    from simsubjects.studies.milgram.analysis import obedience_summary
    from simsubjects.datasets.milgram1963 import load_milgram1963

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    human = load_milgram1963("milgram").assign(censored=lambda d: d["censored"].astype(bool))
    row = obedience_summary(human).iloc[0]
    ci = subprocess.run(["Rscript", "-e", "cat(sprintf('%.15g', prop.test(26, 40, correct = FALSE)$conf.int))"],
                        capture_output=True, text=True, check=True).stdout.split()
    assert row["percent_obedient"] == 65.0
    assert [row["conf.low"], row["conf.high"]] == pytest.approx([100 * float(c) for c in ci], rel=1e-10)


def test_human_rows_with_undeclared_conditions_or_levels_are_rejected(tmp_path, capsys):
    from simsubjects.cli.commands import main
    from simsubjects.studyfile.spec import StudyFileError

    text = FRAMING + """human:
  file: h.csv
  columns: {respondent: r, item: q, response: a, condition: cond, groups: [frame]}
"""
    good = "r,q,a,cond,frame\nh1,q,Yes,\"frame=gain,cue=on\",gain\nh2,q,No,\"frame=loss,cue=off\",loss\n"
    (tmp_path / "h.csv").write_text(good)
    assert _write(tmp_path, text).human is not None
    (tmp_path / "h.csv").write_text(good + "h3,q,No,\"frame=los,cue=off\",loss\n")
    with pytest.raises(StudyFileError, match=r"row 4 of the human table: condition 'frame=los,cue=off' is not a "
                                             r"condition of the design; did you mean 'frame=loss,cue=off'"):
        _write(tmp_path, text)
    (tmp_path / "h.csv").write_text(good + "h3,q,No,\"frame=loss,cue=off\",Loss\n")
    assert main(["study", "check", str(tmp_path / "s.yaml")]) == 2
    err = capsys.readouterr().err
    assert "row 4 of the human table: frame 'Loss' is not a declared level of factor 'frame'" in err
    assert len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- a resume keeps the finished run's record

def test_recollecting_a_finished_run_keeps_its_manifest_and_appends_an_event(smollm2, tmp_path):
    import json as _json

    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile.adapter import file_parameters, study_def

    (tmp_path / "s.yaml").write_text(DONT_KNOW.replace("subjects: 12", "subjects: 2").replace("averaged", "as_listed"))
    study = load_study(tmp_path / "s.yaml")
    out = tmp_path / "run"
    params = {"studyfile": file_parameters(study), "seed": study.seed, "chat_template": False, "judge_model": None}

    def collect():
        return run_study(study_def(study, out=out), "smollm2", out, params=params, method="exact", model=smollm2,
                         show_progress=False)

    _, first = collect()
    on_disk = _json.loads((out / "manifest.json").read_text())
    assert on_disk["usage"]["prompt_tokens"] > 0 and "events" not in on_disk
    _, second = collect()  # every answer from the cache
    again = _json.loads((out / "manifest.json").read_text())
    for key in ("created", "timings", "counts", "usage"):
        assert again[key] == on_disk[key], key  # the original record, not the cached pass's
    assert len(again["events"]) == 1 and again["events"][0]["usage"]["prompt_tokens"] == 0
    assert again["status"] == "complete"


# ---------------------------------------------------------------- PPI: ordinal scores, one prediction per unit

def test_ppi_predictions_from_an_ordinal_scale_and_duplicate_units(tmp_path):
    from simsubjects.analyze.methods.ppi import mixed_subjects
    from simsubjects.cli.ppi import model_predictions

    (tmp_path / "s.yaml").write_text(DONT_KNOW)
    s = load_study(tmp_path / "s.yaml")
    trials, items = build_trials(s)
    resp = _fake(trials, first_bonus=0.5, effect=lambda rec, labels: np.linspace(0.1, 0.5, len(labels)), seed=2)
    got = model_predictions(resp, "item", None, items).set_index("item")["yhat"]
    # by hand: per trial, the expected position (1..4) over the four substantive options, then the mean
    pos = {"Disagree": 1, "Lean disagree": 2, "Lean agree": 3, "Agree": 4}
    sub = resp[resp["response"].isin(list(pos))]
    per_trial = (sub["weight"] * sub["response"].map(pos)).groupby(sub["trial"]).sum() / \
        sub.groupby("trial")["weight"].sum()
    ref = per_trial.groupby(sub.groupby("trial")["item"].first()).mean()
    assert got.to_dict() == pytest.approx(ref.to_dict(), rel=1e-12)
    with pytest.raises(UserError, match="unit 'a' appears more than once"):
        mixed_subjects(pd.DataFrame({"item": ["a", "a", "b", "c"], "yhat": [1.0, 2.0, 3.0, 4.0]}),
                       pd.DataFrame({"item": ["a", "b"], "y": [1.0, 2.0]}))


def test_distribution_rows_follow_the_scale(tmp_path):
    (tmp_path / "s.yaml").write_text(DONT_KNOW.replace("averaged", "reversed"))
    s = load_study(tmp_path / "s.yaml")
    trials, items = build_trials(s)
    resp = _fake(trials, 0.0, lambda rec, labels: np.linspace(0.1, 0.5, len(labels)))
    d = analyze_study(s, resp, items)["distribution"]
    scale = ["Disagree", "Lean disagree", "Lean agree", "Agree", "Don't know"]
    assert d.loc[d["item"] == "a", "response"].tolist() == scale and d["item"].tolist() == ["a"] * 5 + ["b"] * 5


@pytest.mark.parametrize("example", ["opinion_survey", "vignette_2x2", "estimation"])
def test_study_check_and_dry_run_count_the_same_prompt_tokens(example, tmp_path, capsys):
    """Issue 25, smaller item: `study check` and `collect --dry-run` counted different prompt tokens under
    randomized option orders. Both now count the trials the collection would send (the orders drawn)."""
    import re
    from pathlib import Path

    from simsubjects.cli import main

    study = str(Path(__file__).resolve().parents[1] / "examples" / example / "study.yaml")
    assert main(["study", "check", study]) == 0
    checked = int(re.search(r"prompt tokens per model: ([\d,]+)", capsys.readouterr().out).group(1).replace(",", ""))
    assert main(["collect", study, "--dry-run", "--out", str(tmp_path / "dry")]) == 0
    total = [line.split() for line in capsys.readouterr().out.splitlines() if line.strip().startswith("total ")]
    assert checked > 0 and total and int(total[0][5]) == checked


def test_mm_diffs_with_a_grouping_within_respondent_keeps_the_covariance():
    """Issue 25, audit: mm_diffs took se = sqrt(se_1^2 + se_0^2), about 10% too small when the grouping
    varies within respondent (the profile's position). The se now equals survey::svycontrast of the two
    cell means of one svyglm clustered by respondent; a grouping between respondents keeps cregg's."""
    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    from simsubjects.analyze.check_r import r_session
    from simsubjects.analyze.methods import conjoint as cj

    rng = np.random.default_rng(12)
    n_resp, tasks = 80, 5
    rid = np.repeat(np.arange(n_resp), tasks * 2)
    taste = rng.normal(0, 1.0, n_resp)[rid]  # a respondent's answers are correlated
    level = rng.choice(["x", "y", "z"], size=len(rid))
    y = (taste + (level == "y") * 0.5 + rng.normal(0, 1, len(rid)) > 0.3).astype(float)
    d = pd.DataFrame({"id": rid.astype(str), "A": pd.Categorical(level, ["x", "y", "z"]), "y": y,
                      "pos": np.tile(["1", "2"], n_resp * tasks)})
    got = cj.mm_diffs(d, "y", ["A"], "pos", id="id").set_index("level")
    naive = cj.mm(d, "y", ["A"], id="id", by="pos")
    r = r_session()
    fn = r.ro.r("""function(d) {
      d$cell <- factor(paste(d$A, d$pos, sep = "_"))
      des <- suppressWarnings(survey::svydesign(ids = ~id, data = d))  # equal weights
      fit <- survey::svyglm(y ~ 0 + cell, design = des)
      do.call(rbind, lapply(c("x", "y", "z"), function(l) {
        k <- setNames(rep(0, length(coef(fit))), names(coef(fit)))
        k[paste0("cell", l, "_2")] <- 1
        k[paste0("cell", l, "_1")] <- -1
        s <- survey::svycontrast(fit, k)
        data.frame(level = l, estimate = unname(coef(s)), se = unname(sqrt(diag(vcov(s)))))
      })) }""")
    ref = r.to_py(fn(r.to_r(d.assign(A=d["A"].astype(str))))).set_index("level")
    assert got.loc[["x", "y", "z"], "estimate"].to_numpy() == pytest.approx(ref["estimate"].to_numpy(), abs=1e-12)
    assert got.loc[["x", "y", "z"], "std.error"].to_numpy() == pytest.approx(ref["se"].to_numpy(), rel=1e-8)
    old = naive.pivot(index="level", columns="BY", values="std.error")
    old = np.sqrt(old["1"] ** 2 + old["2"] ** 2).reindex(["x", "y", "z"]).to_numpy()
    assert (np.abs(got.loc[["x", "y", "z"], "std.error"].to_numpy() / old - 1) > 0.02).any()  # the fix matters
    between = d.assign(pos=np.where(rid < n_resp // 2, "1", "2"))
    b = cj.mm_diffs(between, "y", ["A"], "pos", id="id")
    nb = cj.mm(between, "y", ["A"], id="id", by="pos").pivot(index="level", columns="BY", values="std.error")
    assert b.set_index("level").loc[["x", "y", "z"], "std.error"].to_numpy() == pytest.approx(
        np.sqrt(nb["1"] ** 2 + nb["2"] ** 2).reindex(["x", "y", "z"]).to_numpy(), rel=1e-12)
