"""Conjoint: estimators against cregg 0.3.7 and R (survey, sandwich, estimatr), the design engine,
and the immigration study end to end on the embedded model."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.methods import conjoint as cj
from simsubjects.studies.conjoint.profiles import Design
from simsubjects.datasets.registry import data_path, load_json
from simsubjects.errors import UserError

HERE = Path(__file__).parent
FEATS = ["Gender", "Education", "LanguageSkills", "CountryOfOrigin", "Job", "JobExperience", "JobPlans",
         "ReasonForApplication", "PriorEntry"]
# the order of cregg's documented restricted formula (R's column order decides which interaction is aliased)
FEATS_R = ["Gender", "Education", "Job", "LanguageSkills", "CountryOfOrigin", "ReasonForApplication",
           "JobExperience", "JobPlans", "PriorEntry"]
CONS = [("Education", "Job"), ("CountryOfOrigin", "ReasonForApplication")]
TAX = [f"taxrate{i}" for i in range(1, 7)] + ["taxrev"]


@pytest.fixture(scope="module")
def imm():
    d = pd.read_parquet(data_path("conjoint/immigration.parquet"))
    d["ethno"] = pd.Categorical(np.where(d["ethnocentrism"] > 50, "above 50", "at most 50"),
                                ["at most 50", "above 50"])
    d.loc[d["ethnocentrism"].isna(), "ethno"] = np.nan
    return d


@pytest.fixture(scope="module")
def taxes():
    return pd.read_parquet(data_path("conjoint/taxes.parquet"))


def _worst(ours: pd.DataFrame, ref: pd.DataFrame) -> tuple[float, float]:
    ours = ours.assign(BY=ours["BY"] if "BY" in ours else "")
    m = ref.merge(ours, on=["BY", "level"], suffixes=("_ref", ""))
    assert len(m) == len(ref) == len(ours)
    assert (m["std.error"].isna() == m["std.error_ref"].isna()).all()  # baselines: no error in both
    return (float((m["estimate"] - m["estimate_ref"]).abs().max()),
            float((m["std.error"] - m["std.error_ref"]).abs().max()))


def test_bundled_data_keep_cregg_shape_and_level_order(imm, taxes):
    assert imm.shape == (13_960, 17) and imm["CaseID"].nunique() == 1_396
    assert list(imm["Education"].cat.categories)[:2] == ["No Formal", "4th Grade"]
    assert taxes.shape == (32_000, 13) and taxes["ID"].nunique() == 2_000
    assert list(taxes["taxrate1"].cat.categories) == ["<10k: 0%", "<10k: 5%", "<10k: 15%", "<10k: 25%"]


@pytest.mark.parametrize("what", ["amce", "amce_restricted", "mm", "mm_diff_ethno", "taxes_amce_weighted"])
def test_matches_cregg_037(what, imm, taxes):
    """cregg's own output (tests/data/conjoint_cregg_reference.R says how it was made) to 1e-8."""
    ref = pd.read_csv(HERE / "data" / "conjoint_cregg_reference.csv", keep_default_na=False, na_values=["NA"])
    ref = ref[ref["what"] == what]
    ours = {
        "amce": lambda: cj.amce(imm, "ChosenImmigrant", FEATS, id="CaseID"),
        "amce_restricted": lambda: cj.amce(imm, "ChosenImmigrant", FEATS_R, id="CaseID", constraints=CONS),
        "mm": lambda: cj.mm(imm, "ChosenImmigrant", FEATS, id="CaseID"),
        "mm_diff_ethno": lambda: cj.mm_diffs(imm, "ChosenImmigrant", FEATS, "ethno", id="CaseID"),
        "taxes_amce_weighted": lambda: cj.amce(taxes, "chose_plan", TAX, id="ID", weights="weight"),
    }[what]()
    de, ds = _worst(ours, ref)
    assert de < 1e-8 and ds < 1e-8, (de, ds)


def test_layout_and_restricted_averaging(imm):
    a = cj.amce(imm, "ChosenImmigrant", FEATS_R, id="CaseID", constraints=CONS)
    assert list(a.columns) == ["feature", "level", "estimate", "std.error", "statistic", "p.value", "conf.low",
                               "conf.high", "n"]
    base = a[a["level"] == "Janitor"].iloc[0]
    assert base["estimate"] == 0 and np.isnan(base["std.error"])
    doc = a[a["level"] == "Doctor"].iloc[0]
    assert doc["conf.low"] < doc["estimate"] < doc["conf.high"]
    assert doc["p.value"] == pytest.approx(2 * (1 - __import__("scipy").stats.norm.cdf(abs(doc["statistic"]))))


def test_human_rows_analyzed_under_one_second(imm):
    """Done-when: the 14k human rows (AMCEs with restrictions + MMs) in < 1 s.

    Measured as this process's CPU time (best of 3): the test machines are shared, and wall time
    there measures the neighbours (0.17 s CPU, 0.3 s wall idle, 1.6 s wall at load 15 on 2 cores).
    """
    cj.amce(imm.head(200), "ChosenImmigrant", ["Gender"], id="CaseID")  # imports, thread pools
    best, wall = np.inf, np.inf
    for _ in range(3):
        t0, w0 = time.process_time(), time.perf_counter()
        cj.amce(imm, "ChosenImmigrant", FEATS_R, id="CaseID", constraints=CONS)
        cj.mm(imm, "ChosenImmigrant", FEATS, id="CaseID")
        best, wall = min(best, time.process_time() - t0), min(wall, time.perf_counter() - w0)
    print(f"14k human rows: AMCE + MM in {best:.3f}s CPU ({wall:.3f}s wall)")
    assert best < 1.0


def test_freqs_and_props_show_the_restrictions(imm):
    f = cj.freqs(imm, ["Gender"])
    assert f["estimate"].sum() == len(imm)
    p = cj.props(imm, ["Job", "Education"])
    zero = p[p["Proportion"] == 0]
    assert len(zero) == 16 and set(zero["Job"]) == {"Financial Analyst", "Computer Programmer",
                                                    "Research Scientist", "Doctor"}
    assert p["Proportion"].sum() == pytest.approx(1.0)
    within = cj.props(imm, ["Job", "Education"], margin=0)
    assert within.groupby("Job", observed=False)["Proportion"].sum().to_numpy() == pytest.approx(1.0)


def test_bad_input_is_one_clear_error(imm):
    with pytest.raises(UserError, match="'Nope'"):
        cj.amce(imm, "ChosenImmigrant", ["Nope"])
    with pytest.raises(UserError, match="se_type"):
        cj.mm(imm, "ChosenImmigrant", FEATS, se_type="HC9")
    with pytest.raises(UserError, match="constraints"):
        cj.amce(imm, "ChosenImmigrant", ["Gender"], constraints=[("Gender", "Job")])


# ------------------------------------------------------------------ R: survey, sandwich, estimatr

@pytest.fixture(scope="module")
def R():
    pytest.importorskip("rpy2")
    from simsubjects.analyze.check_r import r_session

    r = r_session()
    if not r.ro.r('isTRUE(requireNamespace("survey", quietly = TRUE))')[0]:
        pytest.skip("R package survey missing (apt-get install r-cran-survey)")
    return r


def _to_r(R, df: pd.DataFrame, factors: list[str]):
    ro = R.ro
    rd = R.to_r(df.assign(**{f: df[f].astype(str) for f in factors}))
    fac = ro.r("function(d, f, lv) { d[[f]] <- factor(d[[f]], levels = lv); d }")
    for f in factors:
        rd = fac(rd, f, ro.StrVector([str(v) for v in df[f].cat.categories]))
    return rd


@pytest.mark.r
def test_r_twin_and_svyglm_agree_to_1e8(R, imm, taxes):
    """conjoint_amce/conjoint_mm (R/conjoint.R) and a direct survey::svyglm fit vs Python."""
    ro = R.ro
    rd = _to_r(R, imm[["CaseID", "ChosenImmigrant", *FEATS_R]], FEATS_R)
    amce_r = R.to_py(R.env.find("conjoint_amce")(rd, "ChosenImmigrant", ro.StrVector(FEATS_R), id="CaseID",
                                                 constraints=ro.StrVector(["Education:Job",
                                                                           "CountryOfOrigin:ReasonForApplication"])))
    ours = cj.amce(imm, "ChosenImmigrant", FEATS_R, id="CaseID", constraints=CONS)
    m = ours.merge(amce_r, on=["feature", "level"], suffixes=("", "_r"))
    assert len(m) == len(ours) == 50
    for c in ("estimate", "std.error", "statistic", "conf.low"):
        assert np.nanmax((m[c] - m[f"{c}_r"]).abs()) < 1e-8, c
    mm_r = R.to_py(R.env.find("conjoint_mm")(rd, "ChosenImmigrant", ro.StrVector(FEATS_R), id="CaseID", h0=0.5))
    m = cj.mm(imm, "ChosenImmigrant", FEATS_R, id="CaseID", h0=0.5).merge(mm_r, on=["feature", "level"],
                                                                         suffixes=("", "_r"))
    assert np.max((m["estimate"] - m["estimate_r"]).abs()) < 1e-8
    assert np.max((m["statistic"] - m["statistic_r"]).abs()) < 1e-8
    # weighted taxes AMCEs straight from survey::svyglm (no simsubjects R code involved)
    td = _to_r(R, taxes[["ID", "weight", "chose_plan", *TAX]], TAX)
    svy = ro.r("""function(d) { des <- survey::svydesign(ids = ~ID, weights = ~weight, data = d)
      m <- survey::svyglm(chose_plan ~ taxrate1 + taxrate2 + taxrate3 + taxrate4 + taxrate5 + taxrate6 + taxrev,
                          design = des)
      data.frame(term = names(coef(m))[-1], estimate = unname(coef(m))[-1], se = sqrt(diag(vcov(m)))[-1]) }""")
    ref = R.to_py(svy(td))
    ours = cj.amce(taxes, "chose_plan", TAX, id="ID", weights="weight").dropna(subset=["std.error"])
    ours["term"] = ours["feature"] + ours["level"]
    m = ours.merge(ref, on="term")
    assert len(m) == len(ref) == 25
    assert np.max((m["estimate_x"] - m["estimate_y"]).abs()) < 1e-8
    assert np.max((m["std.error"] - m["se"]).abs()) < 1e-8


@pytest.mark.r
@pytest.mark.parametrize("se_type", ["stata", "CR2"])
def test_stata_and_cr2_match_estimatr(R, imm, se_type):
    f = ["Gender", "Education", "LanguageSkills"]
    rd = _to_r(R, imm[["CaseID", "ChosenImmigrant", *f]], f)
    fit = R.ro.r(f"""function(d) {{ e <- estimatr::lm_robust(ChosenImmigrant ~ Gender + Education + LanguageSkills,
      data = d, clusters = CaseID, se_type = "{se_type}"); data.frame(se = e$std.error[-1]) }}""")
    ref = R.to_py(fit(rd))["se"].to_numpy()
    ours = cj.amce(imm, "ChosenImmigrant", f, id="CaseID", se_type=se_type)["std.error"].dropna().to_numpy()
    assert np.max(np.abs(ours - ref)) < 1e-8


@pytest.mark.r
def test_cj_anova_matches_r_anova(R, imm):
    d = imm.dropna(subset=["ethno"])
    f = ["Gender", "Education", "Job"]
    ours = cj.cj_anova_cregg(d, "ChosenImmigrant", f, "ethno").iloc[0]
    rd = _to_r(R, d[["ChosenImmigrant", "ethno", *f]], [*f, "ethno"])
    an = R.ro.r("""function(d) { a <- anova(glm(ChosenImmigrant ~ Gender + Education + Job, data = d),
      glm(ChosenImmigrant ~ (Gender + Education + Job) * ethno, data = d), test = "F")
      data.frame(F = a$F[2], df = a$Df[2], p = a[["Pr(>F)"]][2]) }""")
    ref = R.to_py(an(rd)).iloc[0]
    assert ours["statistic"] == pytest.approx(ref["F"], abs=1e-8)
    assert ours["df"] == ref["df"]
    assert ours["p.value"] == pytest.approx(ref["p"], abs=1e-10)


@pytest.mark.r
def test_r_by_twins_match_python(R, imm):
    """by= in R (issue 29): conjoint_amce/conjoint_mm(by=), conjoint_amce_diffs, conjoint_mm_diffs and
    conjoint_anova against the Python tables, every row and column to 1e-8 (respondent-clustered)."""
    ro = R.ro
    d = imm.dropna(subset=["ethno"])
    f = ["Gender", "Education", "Job", "LanguageSkills"]
    rd = _to_r(R, d[["CaseID", "ChosenImmigrant", "ethno", *f]], [*f, "ethno"])
    fs = ro.StrVector(f)
    pairs = [
        (cj.amce(d, "ChosenImmigrant", f, id="CaseID", by="ethno"),
         R.env.find("conjoint_amce")(rd, "ChosenImmigrant", fs, id="CaseID", by="ethno")),
        (cj.mm(d, "ChosenImmigrant", f, id="CaseID", h0=0.5, by="ethno"),
         R.env.find("conjoint_mm")(rd, "ChosenImmigrant", fs, id="CaseID", h0=0.5, by="ethno")),
        (cj.amce_diffs(d, "ChosenImmigrant", f, "ethno", id="CaseID"),
         R.env.find("conjoint_amce_diffs")(rd, "ChosenImmigrant", fs, by="ethno", id="CaseID")),
        (cj.amce_diffs(d, "ChosenImmigrant", f, "ethno", id="CaseID", se_type="CR2"),
         R.env.find("conjoint_amce_diffs")(rd, "ChosenImmigrant", fs, by="ethno", id="CaseID", se_type="CR2")),
        (cj.mm_diffs(d, "ChosenImmigrant", f, "ethno", id="CaseID"),
         R.env.find("conjoint_mm_diffs")(rd, "ChosenImmigrant", fs, by="ethno", id="CaseID")),
    ]
    for ours, theirs in pairs:
        theirs = R.to_py(theirs)
        assert list(theirs.columns[:3]) == ["BY", "feature", "level"]
        m = ours.merge(theirs, on=["BY", "feature", "level"], suffixes=("", "_r"))
        assert len(m) == len(ours) == len(theirs) > 0
        assert set(ours["BY"]) == set(theirs["BY"])
        for c in ("estimate", "std.error", "statistic", "p.value", "conf.low", "conf.high"):
            assert np.allclose(m[c], m[f"{c}_r"], atol=1e-8, rtol=0, equal_nan=True), c
    # the unordered by column: Python's sorted groups are R's (radix) groups, so the BY labels match
    d2 = d.assign(half=np.where(d["CaseID"].astype(int) % 2 == 0, "even", "Odd"))
    rd2 = _to_r(R, d2[["CaseID", "ChosenImmigrant", "half", "Gender"]], ["Gender"])
    theirs = R.to_py(R.env.find("conjoint_mm_diffs")(rd2, "ChosenImmigrant", ro.StrVector(["Gender"]),
                                                     by="half", id="CaseID"))
    assert set(theirs["BY"]) == set(cj.mm_diffs(d2, "ChosenImmigrant", ["Gender"], "half", id="CaseID")["BY"])
    an = R.to_py(R.env.find("conjoint_anova")(rd, "ChosenImmigrant", fs, by="ethno")).iloc[0]
    ours = cj.cj_anova_cregg(d, "ChosenImmigrant", f, "ethno").iloc[0]
    assert an["statistic"] == pytest.approx(ours["statistic"], abs=1e-8) and an["df"] == ours["df"]


# ------------------------------------------------------------------ design engine

def _spec(**over):
    spec = load_json("conjoint/immigration_design.json")
    spec.update(over)
    return spec


def test_design_is_seeded_restricted_and_weighted():
    d = Design.from_dict(_spec())
    a = d.profiles(40, seed=3)
    assert a.equals(d.profiles(40, seed=3))
    assert a.head(50).equals(d.profiles(5, seed=3))  # the first respondents do not depend on the total
    assert not a.equals(d.profiles(40, seed=4))
    big = d.profiles(400, seed=1)
    job_edu = cj.props(big, ["Job", "Education"])
    assert (job_edu["Proportion"] == 0).sum() == 16  # every forbidden cell empty, every other cell shown
    assert big.groupby("respondent")["attribute_order"].nunique().max() == 1  # order fixed per respondent
    assert big["attribute_order"].nunique() > 100  # and random across respondents
    spec = _spec()
    spec["attributes"][0]["weights"] = [9, 1]
    heavy = Design.from_dict(spec).profiles(300, seed=0)
    assert 0.85 < (heavy["Gender"] == "Female").mean() < 0.95


def test_design_trials_both_orders_and_rating():
    d = Design.from_dict(_spec())
    prof = d.profiles(2, seed=0)
    t = d.trials(prof, "x")
    assert len(t) == 2 * 5 * 2 and set(t["shown"]) == {"1-2", "2-1"}
    first = t[t["item"] == "r00001-t1"]
    p1, p2 = prof.iloc[0], prof.iloc[1]
    assert first["prompt"].iloc[0].index(str(d.text("Job", p1["Job"]))) >= 0
    # the second order shows profile 2 in the first column
    row = next(line for line in first["prompt"].iloc[1].splitlines() if line.startswith("| Job |"))
    assert row.split("|")[2].strip() == d.text("Job", p2["Job"])
    r = d.with_options(outcome="rating", layout="prose").trials(prof, "x")
    assert len(r) == 2 * 5 * 2 and r["options"].iloc[0] == tuple(f" {i}" for i in range(1, 8))
    assert "Immigrant 2:" in r["prompt"].iloc[0] and "rate Immigrant 1?" in r["prompt"].iloc[0]


@pytest.mark.parametrize("bad, match", [
    ({"attributes": []}, "attributes"),
    ({"layout": "grid"}, "layout"),
    ({"restrictions": [{"if": {"Job": ["Pilot"]}, "forbid": {"Education": ["No Formal"]}}]}, r"restrictions\[0\].*Pilot"),
    ({"restrictions": [{"if": {"Nope": ["x"]}, "forbid": {"Education": ["No Formal"]}}]}, "unknown attribute 'Nope'"),
    ({"profiles_per_task": 3}, "choice_options"),
])
def test_design_errors_name_the_key(bad, match):
    with pytest.raises(UserError, match=match):
        Design.from_dict(_spec(**bad), "study.yaml")


def test_unsatisfiable_restrictions_fail():
    spec = _spec(restrictions=[{"if": {"Gender": ["Female", "Male"]}, "forbid": {"Job": [
        lv["level"] for lv in _spec()["attributes"][4]["levels"]]}}])
    with pytest.raises(UserError, match="no profile satisfies"):
        Design.from_dict(spec).profiles(1)


# ------------------------------------------------------------------ the study on the embedded model

def test_immigration_study_end_to_end(smollm2, tmp_path):
    from simsubjects.publish.analysis import analyze_runs
    from simsubjects.collect.pipeline import run_study
    from simsubjects.collect.studies.registry import get_study

    study = get_study("conjoint-immigration")
    t0 = time.perf_counter()
    responses, man = run_study(study, "smollm2", tmp_path / "run", params={"respondents": 2, "tasks": 1, "seed": 0},
                               model=smollm2, show_progress=False)
    c = man["counts"]
    assert c["trials"] == c["answered"] == 4 and c["tasks"] == 2
    assert 0 < c["forward_passes"] <= c["task_orders"]  # one forward pass per task order (or fewer, packed)
    print(f"conjoint on smollm2: {c['tasks_per_second']} tasks/s, {time.perf_counter() - t0:.1f}s")
    p = responses.groupby("trial")["weight"].sum()
    assert np.allclose(p, 1.0)
    a = analyze_runs([tmp_path / "run"])
    amce = a.tables["amce"]
    assert set(amce["source"]) == {"smollm2", "HHY 2014 respondents"}
    # issue 25: Holm over each source's levels (the family), as statsmodels' multipletests computes it
    from statsmodels.stats.multitest import multipletests

    people = amce[(amce["source"] == "HHY 2014 respondents") & amce["p.value"].notna()]
    assert people["family"].nunique() == 1 and "AMCE levels" in people["family"].iat[0]
    assert np.allclose(people["p.value.holm"], multipletests(people["p.value"], method="holm")[1], atol=1e-12)
    assert a.tables["anova_model_vs_people"]["unit"].iat[0] == "respondent (cluster)"
    mm = a.tables["mm"]
    model_mm = mm[mm["source"] == "smollm2"]
    # with both orders, each task's two profile probabilities sum to 1: the MMs of a feature average 0.5
    g = model_mm.merge(a.tables["design_freqs"], on=["feature", "level"], suffixes=("", "_n"))
    weighted = (g["estimate"] * g["estimate_n"]).groupby(g["feature"]).sum() / g.groupby("feature")["estimate_n"].sum()
    assert np.allclose(weighted, 0.5)
    assert (a.tables["design_restrictions"]["profiles_breaking_it"] == 0).all()
    assert {"mm_diff_model_minus_people", "anova_model_vs_people", "position"} <= set(a.tables)
    assert all(Path(f).is_file() for f in a.figures)


@pytest.mark.parametrize("args, match", [
    (["--respondents", "0"], "--respondents 0"),
    (["--tasks", "99"], "--tasks 99"),
    (["--layout", "grid"], "grid"),
])
def test_cli_bad_options_exit_2_before_the_model_loads(tmp_path, capsys, args, match):
    from simsubjects.cli.commands import main

    code = main(["collect", "conjoint-immigration", "--model", "smollm2",
                 "--out", str(tmp_path / "o"), *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert match in err and err.count("\n") == 1 and not (tmp_path / "o").exists()


def test_three_profiles_are_asked_in_every_rotation():
    spec = _spec(profiles_per_task=3, tasks_per_respondent=1)
    spec["prompt"]["choice_options"] = [" 1", " 2", " 3"]
    d = Design.from_dict(spec)
    t = d.trials(d.profiles(1, seed=0), "x")
    assert list(t["shown"]) == ["1-2-3", "2-3-1", "3-1-2"]
    # P(profile chosen) averages each profile's probability over the three positions it held
    from simsubjects.studies.conjoint.profiles import choice_by_profile

    rows = [{"source": "model", "model": "m", "respondent": "r00001", "task": 1, "trial": tr, "shown": sh,
             "response": str(k), "weight": w}
            for tr, sh in zip(t["trial"], t["shown"]) for k, w in zip((1, 2, 3), (0.6, 0.3, 0.1))]
    p = choice_by_profile(pd.DataFrame(rows)).set_index("profile")["p"]
    assert np.allclose(p.to_numpy(), [1 / 3] * 3)  # pure position preference cancels
