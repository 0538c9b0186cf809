"""Issue 40, items 3 (first half), 6 and 7 (the rest): the study-file chi_square for a model's subjects,
families of tests with Holm/BH, one definition of `n`, garden_path's V, the W1 span warning and the
conjoint test's clusters. Each test fails on the code before the fix."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.methods.subjects import chi_square


def _model_run(rng, n_per_level: int, alphas: dict[str, np.ndarray], source: str = "smollm2") -> pd.DataFrame:
    """A model's exact answer probabilities, one trial per subject: each subject's vector over three answers
    drawn from a Dirichlet whose mean depends on its level of `frame` (unit: subject)."""
    rows = []
    for level, a in alphas.items():
        for i in range(n_per_level):
            p = rng.dirichlet(a)
            for resp, w in zip("ABC", p):
                rows.append({"source": "model", "model": source, "trial": f"{level}{i}", "subject": f"{level}{i}",
                             "item": "q1", "frame": level, "response": resp, "weight": w, "validity": 1.0})
    return pd.DataFrame(rows)


def _trials(responses: pd.DataFrame) -> pd.DataFrame:
    return responses.drop_duplicates(["source", "model", "trial"]).assign(tw=1.0)


def _p(responses: pd.DataFrame) -> float:
    out = chi_square(responses, _trials(responses), "frame", ["item"])
    assert len(out) == 1
    from simsubjects.analyze.methods.subjects import PERMUTATION_TEST  # new in issue 40: read here, not at import

    assert out["test"].iloc[0] == PERMUTATION_TEST
    return float(out["p.value"].iloc[0])


def test_model_chi_square_has_its_size_under_a_null_and_power_on_a_clear_difference():
    """Item 3, first half. 100 simulated model runs (20 subjects per level, each subject a probability vector
    over 3 answers): under a null (both levels from one Dirichlet) the share of p < 0.05 is near 0.05 (the
    old Pearson chi-square on expected counts gave about 0); with a clear difference (mean P(A) 0.5 vs 0.3)
    it rejects nearly always (the old test: about 0)."""
    rng = np.random.default_rng(40)
    same = np.array([4.0, 3.0, 3.0])
    null = [_p(_model_run(rng, 20, {"gain": same, "loss": same})) for _ in range(100)]
    size = np.mean(np.array(null) < 0.05)
    assert 0.01 <= size <= 0.11, size  # binomial SE at 100 runs: 0.022 (this seed: 0.08)
    alt = [_p(_model_run(rng, 20, {"gain": np.array([5.0, 2.5, 2.5]), "loss": np.array([3.0, 3.5, 3.5])}))
           for _ in range(25)]
    assert np.mean(np.array(alt) < 0.05) >= 0.8  # this seed: 25 of 25


def test_model_chi_square_p_is_seeded_and_never_0_and_keeps_the_asymptotic_p_beside():
    rng = np.random.default_rng(1)
    d = _model_run(rng, 15, {"gain": np.array([20.0, 1.0, 1.0]), "loss": np.array([1.0, 1.0, 20.0])})
    a = chi_square(d, _trials(d), "frame", ["item"])
    b = chi_square(d, _trials(d), "frame", ["item"])
    assert a["p.value"].iloc[0] == b["p.value"].iloc[0] == pytest.approx(1 / 2000)  # (b + 1)/(R + 1), b = 0
    assert a["p.value.asymptotic"].iloc[0] > 0 and a["n"].iloc[0] == 30
    assert "permutes the subjects" in a["note"].iloc[0]


def test_people_keep_pearson_chi_square_on_their_counts():
    rng = np.random.default_rng(2)
    rows = []
    for level, p in (("gain", [0.6, 0.2, 0.2]), ("loss", [0.3, 0.35, 0.35])):
        for i in range(40):
            rows.append({"source": "human", "model": "people", "trial": f"{level}{i}", "subject": f"{level}{i}",
                         "item": "q1", "frame": level, "response": rng.choice(list("ABC"), p=p), "weight": 1.0,
                         "validity": 1.0})
    d = pd.DataFrame(rows)
    out = chi_square(d, _trials(d), "frame", ["item"])
    from scipy import stats

    want = stats.chi2_contingency(pd.crosstab(d["frame"], d["response"]).to_numpy(), correction=False)
    assert out["test"].iloc[0] == "Pearson chi-square"
    assert out["p.value"].iloc[0] == pytest.approx(want[1]) == out["p.value.asymptotic"].iloc[0]


def _holm_by_family(t: pd.DataFrame) -> np.ndarray:
    from statsmodels.stats.multitest import multipletests

    want = np.full(len(t), np.nan)
    for _, idx in t.groupby("family").indices.items():
        p = t["p.value"].to_numpy(float)[idx]
        ok = ~np.isnan(p)
        sub = np.full(len(idx), np.nan)
        sub[ok] = multipletests(p[ok], method="holm")[1]
        want[idx] = sub
    return want


@pytest.fixture(scope="module")
def qualtrics_study(tmp_path_factory):
    """The Qualtrics fixture (tests/data/qualtrics/experiment) imported with its responses, once per module."""
    from simsubjects.cli.commands import main

    out = tmp_path_factory.mktemp("q") / "s"
    exp = __import__("pathlib").Path(__file__).parent / "data" / "qualtrics" / "experiment"
    assert main(["study", "import", "qualtrics", str(exp / "framing_experiment.qsf"), str(out),
                 "--responses", str(exp / "framing_experiment.csv"), "--finished-only"]) == 0
    return out / "study.yaml"


def test_qualtrics_arm_tests_are_one_family_per_source_and_model_with_holm(qualtrics_study):
    """Item 6: the study-file `tests` table (here a Qualtrics import's per-item arm tests, on its people) names
    its family and carries Holm and BH p-values within it, equal to statsmodels' multipletests."""
    from simsubjects.analyze.methods.registry import TESTS
    from simsubjects.studyfile import load_study
    from simsubjects.studyfile.analyses import TESTS_FAMILY, analyze_study

    study = load_study(qualtrics_study)
    study.analyses[:] = [a for a in study.analyses if a["type"] in TESTS]  # agreement needs a model side
    tables = analyze_study(study, study.human, pd.DataFrame())
    t = tables["tests"]
    assert t["p.value"].notna().sum() >= 3
    assert set(t["family"]) == {f"{TESTS_FAMILY} | human | {study.human['model'].iloc[0]}"}
    np.testing.assert_allclose(t["p.value.holm"], _holm_by_family(t), rtol=1e-12, equal_nan=True)
    assert (t["p.value.bh"].dropna() <= t["p.value.holm"].dropna() + 1e-15).all()
    assert (t["p.value.holm"].dropna() >= t["p.value"].dropna() - 1e-15).all()


def test_beside_people_tests_are_one_family_with_holm():
    """Item 6: a session's model - people tests (one per cell of the human table; here rounds 1 and 2) are one
    named family with Holm and BH p-values (before: raw p-values only)."""
    from tests.test_sessions import PD, load_session

    from simsubjects.studyfile.session_analysis import BESIDE_FAMILY, beside_people

    study = load_session(PD)
    rows = []
    for rnd in (1, 2):
        for s, ps in (("s1", [0.2, 0.4]), ("s2", [0.7, 0.9]), ("s3", [0.5, 0.6])):
            for path, p in enumerate(ps, 1):
                for lab, w in (("J", p), ("F", 1 - p)):
                    rows.append({"subject": s, "item": "choice", "response": lab, "weight": w, "reach": p,
                                 "round": rnd, "path": path, "condition": "decision", "trial": f"{s}|p{path}|{rnd}"})
    dec = pd.DataFrame(rows)
    study.people = pd.DataFrame({"respondent": list("abcdabcd"), "measure": "share choice=J",
                                 "value": [0.1, 0.3, 0.2, 0.6, 0.9, 0.8, 0.95, 0.7], "round": [1] * 4 + [2] * 4})
    study.people_by = ["round"]
    _, tests = beside_people(study, dec, dec.iloc[:0])
    assert len(tests) == 2 and set(tests["family"]) == {BESIDE_FAMILY}
    np.testing.assert_allclose(tests["p.value.holm"], _holm_by_family(tests), rtol=1e-12)


def test_garden_path_wilcoxon_reports_v_as_methods_paired_does():
    """Item 7: garden_path's signed-rank statistic is V, the rank sum of the positive differences (R's
    wilcox.test and analyze.methods.paired.wilcoxon), not scipy's two-sided min(W+, W-) (unit: sentence)."""
    from scipy import stats

    from simsubjects.analyze.methods.paired import wilcoxon
    from simsubjects.studies.garden_path.analysis import paired_tests

    gp = np.array([0.9, 0.8, 0.85, 0.7, 0.6, 0.75, 0.4, 0.95])
    ctl = np.array([0.2, 0.3, 0.1, 0.5, 0.65, 0.35, 0.45, 0.15])  # 6 of 8 differences positive: W+ > W-
    sent = pd.DataFrame({"model": "m", "set": "s", "type": "t", "item": [f"i{k}" for k in range(8)],
                         "garden_path": gp, "control": ctl, "difference": gp - ctl, "n_names": 1})
    out = paired_tests(sent)
    w = out[(out["test"] == "Wilcoxon signed-rank test") & (out["type"] == "t")].iloc[0]
    v = stats.wilcoxon(gp - ctl, alternative="greater").statistic  # scipy's one-sided statistic is W+
    assert w["statistic"] == v == wilcoxon(gp, ctl)["statistic"].iloc[0] > 8 * 9 / 4
    assert w["p.value"] == pytest.approx(wilcoxon(gp, ctl)["p.value"].iloc[0], rel=1e-12)


def test_w1_span_without_options_warns_and_options_give_the_whole_scale():
    """Item 7: without options= the W1 span is the range of the positions the distributions list, so an
    option no one chose narrows it; representativeness says so (a UserWarning). With the question's option
    list the span is the whole scale (unit: question)."""
    import warnings

    from simsubjects.analyze.methods.representativeness import representativeness

    model = pd.DataFrame({"model": "m", "key": "q", "position": [1.0, 2.0], "refusal": False, "weight": [0.5, 0.5]})
    people = pd.DataFrame({"key": "q", "position": [1.0, 2.0], "refusal": False, "weight": [0.9, 0.1]})
    with pytest.warns(UserWarning, match="no options= given"):
        narrow = representativeness(model, people)
    opts = pd.DataFrame({"key": "q", "position": [1.0, 2.0, 3.0, 4.0, 5.0], "refusal": False})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        whole = representativeness(model, people, options=opts)
    assert narrow["mean_distance"].iloc[0] == pytest.approx(0.4)  # W1 = 0.4 over a span of 1
    assert whole["mean_distance"].iloc[0] == pytest.approx(0.1)  # over the scale's span of 4


def test_conjoint_model_vs_people_test_reports_clusters_and_says_when_they_are_few():
    """Item 7: cj_anova reports the clusters (respondents) of each group and, where a group has fewer than
    bench/cj_null.py's 60, a note that Naive-Fp's size is unchecked there and names clubSandwich's HTZ."""
    from simsubjects.analyze.methods import conjoint as cj

    rng = np.random.default_rng(5)
    rows = []
    for group, k in (("people", 80), ("model", 12)):
        for r in range(k):
            for task in range(4):
                for prof in range(2):
                    a, b = rng.choice(["x", "y"]), rng.choice(["u", "v", "w"])
                    rows.append({"group": group, "id": f"{group}{r}", "A": a, "B": b,
                                 "chosen": float(rng.random() < 0.5 + 0.1 * (a == "y"))})
    d = pd.DataFrame(rows)
    out = cj.cj_anova(d, "chosen", ["A", "B"], "group", id="id").iloc[0]
    assert out["n_clusters"] == 92 and out["n_clusters_min"] == 12
    assert out["clusters_by_group"] == "people: 80; model: 12"
    assert "few clusters in model (12)" in out["note"] and "HTZ" in out["note"]


def test_n_counts_the_units_behind_the_estimate():
    """Item 7: `n` has one definition (docs/conventions.md, "What n counts"): the units behind the estimate.
    A two-sample test's n is both samples' units (it was min(nx, ny) in the built-ins' tables); a study-file
    AMCE's n is its subjects (it was its trials), the trials in n_trials."""
    from simsubjects.analyze.methods.tests import welch_t, welch_test
    from simsubjects.studies.survey_bias.analysis import delta_tests
    from simsubjects.studyfile.analyses import amce

    assert welch_t([1.0, 2.0, 4.0], [1.0, 3.0, 2.0, 5.0, 7.0])["n"] == 8
    row = welch_test([1.0, 2.0, 4.0], [1.0, 3.0, 2.0, 5.0, 7.0]).iloc[0]
    assert (row["n"], row["n_x"], row["n_y"]) == (8, 3, 5)
    deltas = pd.DataFrame({"model": "m", "bias": "b", "perturbation": "", "pairs_from": "b", "key": list("abcd"),
                           "delta": [1.0, -2.0, 3.0, 4.0], "pct_first": [50.0, 40, 60, 70],
                           "pct_second": [49.0, 42, 57, 66]})
    t = delta_tests(deltas).set_index("test")["n"]
    assert t["One-sample t-test"] == 4 and t["Welch two-sample t-test"] == 8  # questions; both forms' values
    rng = np.random.default_rng(3)
    trials = pd.DataFrame([{"source": "model", "model": "m", "subject": f"s{s}", "trial": f"s{s}t{k}",
                            "frame": ("gain", "loss")[k % 2], "score": rng.normal(), "tw": 1.0}
                           for s in range(10) for k in range(4)])
    out = amce(trials, ["frame"], {"frame": ["gain", "loss"]})
    assert (out["n"].iloc[0], out["n_trials"].iloc[0]) == (10, 40)


def test_summaries_have_an_r_twin(qualtrics_study):
    """Item 7: `summaries` (check-all shares, numeric means; t interval over subjects) is compared with R's
    sf_summaries by --check-r (before: "no R twin"). Data: the Qualtrics fixture's people."""
    pytest.importorskip("rpy2", reason="rpy2 not installed")
    from simsubjects.analyze.check_r import r_session
    from simsubjects.studyfile import load_study
    from simsubjects.studyfile.check_r import check_study_file
    from simsubjects.studyfile.design import build_trials

    study = load_study(qualtrics_study)
    study.analyses[:] = [a for a in study.analyses if a["type"] == "summaries"]
    assert study.analyses
    _, items = build_trials(study)
    check = pd.DataFrame(check_study_file(study, r_session(), study.human, items, None, 1e-8, 1e-6))
    rows = check[check["statistic"].str.contains(r"\(summaries\)")]
    assert len(rows) >= 5 and rows["ok"].all(), rows[~rows["ok"]]
    assert not check["statistic"].str.contains("no R twin").any()
    assert (rows["statistic"].str.contains("rows in only one") & (rows["r"] == 0)).any()
