"""Issue 40, items 1 and 2: the estimand named in every test table (`sample`), no p-value over copies of one
prompt, and the validity policy (`low_validity`, `analyze --min-validity`). The unit of each check is a test
table's row."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from simsubjects.analyze.estimand import NOT_A_SAMPLE, annotate, run_sample
from simsubjects.cli.commands import main
from simsubjects.collect.sample_kinds import (CENSUS, DRAWN, IDENTICAL_PROMPTS, PEOPLE, SAMPLE_KINDS, SAMPLED_METHOD,
                                        VS_PEOPLE)
from simsubjects.publish.analysis import analyze_runs

ROOT = Path(__file__).resolve().parents[1]
OLD = ROOT / "tests" / "data" / "old_runs"
OLD_RUNS = sorted(p.name for p in OLD.iterdir() if (p / "manifest.json").exists())
KINDS = set(SAMPLE_KINDS) | {k + VS_PEOPLE for k in SAMPLE_KINDS if k != PEOPLE}


def _small_pd(tmp_path: Path) -> Path:
    """examples/pd_tft (10 anonymous subjects, one sampled path each) cut to 4 subjects and 2 rounds."""
    text = (ROOT / "examples" / "pd_tft" / "study.yaml").read_text()
    assert "subjects: 10" in text and "rounds: 5" in text
    path = tmp_path / "pd.yaml"
    path.write_text(text.replace("subjects: 10", "subjects: 4").replace("rounds: 5", "rounds: 2"))
    return path


@pytest.fixture(scope="module")
def pd_run(smollm2, tmp_path_factory):
    from tests.test_sessions import _run  # the session runner of tests/test_sessions.py

    tmp = tmp_path_factory.mktemp("pd40")
    out = tmp / "run"
    study, responses = _run(_small_pd(tmp), out, smollm2)
    return study, responses, out


@pytest.fixture(scope="module")
def vignette_run(smollm2, tmp_path_factory):
    """examples/vignette_2x2 with its first 8 participants (a census of those rows), answered exactly."""
    tmp = tmp_path_factory.mktemp("vig40")
    shutil.copytree(ROOT / "examples" / "vignette_2x2", tmp / "study")
    f = tmp / "study" / "study.yaml"
    f.write_text(f.read_text().replace("    id: name\n", "    id: name\n    n: 8\n"))
    out = tmp / "run"
    from unittest import mock

    with mock.patch("simsubjects.collect.pipeline.load_model", lambda spec, **kw: smollm2):
        assert main(["collect", str(f), "--model", "smollm2", "--out", str(out), "-q"]) == 0
    return out


def test_a_session_over_copies_of_one_prompt_gives_no_p_value(pd_run, tmp_path):
    """The audit's case: every subject of a session read one prompt and the paths were drawn, so a paired
    t-test over subjects measured only the package's own seeded draws (it reported p = 0.005). Now the
    estimate stays (the model's value for that prompt) and the statistic and p-value are empty."""
    from simsubjects.studyfile.session_analysis import analyze_session

    study, responses, out = pd_run
    computed = analyze_session(study, responses, pd.DataFrame())["subject_tests"]
    assert computed["p.value"].notna().any(), "the draws gave a p-value before the policy (the fault)"
    a = analyze_runs([out], tmp_path / "a", plots=False)
    got = a.tables["subject_tests"]
    assert (got["sample"] == IDENTICAL_PROMPTS).all()
    assert got["p.value"].isna().all() and got["statistic"].isna().all()
    pd.testing.assert_series_equal(got["estimate"], computed["estimate"])
    assert got["note"].str.contains(NOT_A_SAMPLE, regex=False).all()
    written = pd.read_csv(tmp_path / "a" / "subject_tests.csv")
    assert written["p.value"].isna().all() and (written["sample"] == IDENTICAL_PROMPTS).all()
    assert "identical prompts" in (tmp_path / "a" / "METHODS.md").read_text()


def _assert_test_tables(folder: Path) -> int:
    """Every CSV with a p-value column has `sample` (in the vocabulary) and `low_validity` (True/False)."""
    seen = 0
    for f in sorted(folder.glob("*.csv")):
        df = pd.read_csv(f)
        if "p.value" not in df.columns:
            continue
        seen += 1
        assert {"sample", "low_validity"} <= set(df.columns), f.name
        assert set(df["sample"].dropna()) <= KINDS and df["sample"].notna().all(), (f.name, set(df["sample"]))
        assert df["low_validity"].isin([True, False]).all(), f.name
    return seen


@pytest.mark.parametrize("name", OLD_RUNS)
def test_every_test_table_of_an_old_run_has_sample_and_low_validity(tmp_path, name):
    shutil.copytree(OLD / name, tmp_path / name)
    assert main(["analyze", str(tmp_path / name), "--out", str(tmp_path / "a"), "--no-plots"]) == 0
    assert _assert_test_tables(tmp_path / "a") >= 2


def test_every_test_table_of_fresh_runs_has_sample_and_low_validity(pd_run, vignette_run, tmp_path):
    _, _, pd_out = pd_run
    assert main(["analyze", str(pd_out), "--out", str(tmp_path / "pd"), "--no-plots"]) == 0
    assert _assert_test_tables(tmp_path / "pd") >= 1
    assert main(["analyze", str(vignette_run), "--out", str(tmp_path / "vig"), "--no-plots"]) == 0
    assert _assert_test_tables(tmp_path / "vig") >= 1
    tests = pd.read_csv(tmp_path / "vig" / "tests.csv")
    model = tests[tests["source"] != "human"] if "source" in tests else tests
    assert (model["sample"] == CENSUS).all()  # 8 rows of the participants table, each once
    assert model["p.value"].notna().any()  # a census keeps its tests


def test_min_validity_sets_the_flag_and_methods_md_says_it(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(OLD / "studyfile_averaged", run)
    flags = {}
    for threshold in ("0", "1"):
        out = tmp_path / threshold
        assert main(["analyze", str(run), "--out", str(out), "--no-plots", "--min-validity", threshold]) == 0
        flags[threshold] = pd.read_csv(out / "order_effects.csv")["low_validity"]
        assert f"below {threshold}" in (out / "METHODS.md").read_text()
    assert not flags["0"].any() and flags["1"].all()


def test_min_validity_out_of_range_is_one_line(tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(OLD / "studyfile_averaged", run)
    assert main(["analyze", str(run), "--out", str(tmp_path / "a"), "--min-validity", "1.5"]) == 2
    assert "--min-validity" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()


def test_low_validity_follows_the_rows_behind_each_test():
    """Item a's trials put 0.2 of the mass on the options, item b's 0.9: only a's row is flagged."""
    responses = pd.DataFrame({"trial": ["t1", "t1", "t2", "t2"], "item": ["a", "a", "b", "b"],
                              "source": "model", "model": "m", "validity": [0.2, 0.2, 0.9, 0.9]})
    table = pd.DataFrame({"item": ["a", "b"], "estimate": [0.1, 0.2], "p.value": [0.01, 0.02]})
    got = annotate({"t": table, "plain": table.drop(columns="p.value")}, responses, DRAWN, 0.5)
    assert got["t"]["low_validity"].tolist() == [True, False]
    assert got["t"]["p.value"].tolist() == [0.01, 0.02]  # drawn subjects keep their tests
    assert "sample" not in got["plain"]  # not a test table


def test_a_test_over_items_keeps_its_p_value_over_identical_prompts():
    """Copies of one prompt are no sample, but a test whose unit is the item (agreement over items) is a
    test over the study's item table: it keeps its p-value, as a census of that table."""
    responses = pd.DataFrame({"trial": ["t1"], "item": ["a"], "source": "model", "validity": [1.0]})
    table = pd.DataFrame({"estimate": [0.5, 0.1], "statistic": [2.0, 1.0], "p.value": [0.04, 0.3],
                          "unit": ["item", "subject"]})
    got = annotate({"t": table}, responses, IDENTICAL_PROMPTS)["t"]
    assert got["sample"].tolist() == [CENSUS, IDENTICAL_PROMPTS]
    assert got["p.value"].iloc[0] == 0.04 and math.isnan(got["p.value"].iloc[1])
    assert math.isnan(got["statistic"].iloc[1]) and got["note"].iloc[1] == NOT_A_SAMPLE


def test_people_rows_and_model_beside_people():
    responses = pd.DataFrame({"trial": ["t1"], "item": ["a"], "source": "model", "validity": [0.1]})
    table = pd.DataFrame({"source": ["human", "model", "model"], "estimate": [1.0, 2.0, 3.0],
                          "p.value": [0.1, 0.2, 0.3], "unit": ["subject", "subject", "subject / person"]})
    got = annotate({"t": table}, responses, DRAWN)["t"]
    assert got["sample"].tolist() == [PEOPLE, DRAWN, DRAWN + VS_PEOPLE]
    assert got["low_validity"].tolist() == [False, True, True]  # people's rows carry no model validity


@pytest.mark.parametrize("rows, declared, kind", [
    ({"persona": ["", ""], "method": ["exact", "exact"]}, "", IDENTICAL_PROMPTS),
    ({"persona": ["p1", "p2"], "method": ["exact", "exact"]}, "", CENSUS),
    ({"persona": ["p1", "p2"], "method": ["sampled", "sampled"]}, "", SAMPLED_METHOD),
    ({"persona": ["", ""], "method": ["sampled", "sampled"]}, "", IDENTICAL_PROMPTS),  # draws of one prompt
    ({"method": ["exact", "exact"]}, DRAWN, DRAWN),
    ({"method": ["generated", "generated"]}, CENSUS, SAMPLED_METHOD),
    ({"condition": ["decision"] * 2, "drawn": [1, 0], "method": ["exact"] * 2}, CENSUS, SAMPLED_METHOD),
])
def test_run_sample(rows, declared, kind):
    assert run_sample(declared, {}, pd.DataFrame(rows)) == kind


@pytest.mark.parametrize("subjects, kind", [
    ("10", IDENTICAL_PROMPTS),
    ("{table: people.csv, template: 'I am ${name}.'}", CENSUS),
    ("{table: people.csv, n: 2, template: 'I am ${name}.'}", CENSUS),
    ("{table: people.csv, n: 2, sample: true, template: 'I am ${name}.'}", DRAWN),
    ("{table: people.csv, per_item: 2, template: 'I am ${name}.'}", DRAWN),
    ("{table: people.csv}", IDENTICAL_PROMPTS),  # the names are never shown: copies of one prompt
    ("{table: arms.csv}", IDENTICAL_PROMPTS),  # rows that only deal subjects into arms (Qualtrics' subjects.csv)
])
def test_a_study_files_subjects_declare_their_sample(tmp_path, subjects, kind):
    from simsubjects.studyfile.spec import load_study

    (tmp_path / "people.csv").write_text("name\nAnn\nBo\nCy\n")
    (tmp_path / "arms.csv").write_text("id,arm\ns1,a\ns2,b\ns3,a\n")
    (tmp_path / "study.yaml").write_text(
        "study: s\ntitle: t\nprompt: {template: '${question}'}\n"
        f"design: {{subjects: {subjects}}}\n"
        "items:\n  - {id: q, text: Yes?, response: {type: yesno}}\n")
    assert load_study(tmp_path / "study.yaml").subjects_sample == kind


def test_the_opinion_survey_declares_its_sample():
    from simsubjects.studies.opinion_survey import OPINION_SURVEY

    assert OPINION_SURVEY.sample({"personas": "none"}) == IDENTICAL_PROMPTS
    assert OPINION_SURVEY.sample({"personas": "bundled", "sample": "all"}) == CENSUS
    assert OPINION_SURVEY.sample({"personas": "bundled", "sample": "20"}) == DRAWN
    manifest = json.loads((OLD / "opinion_survey_cyclic" / "manifest.json").read_text())
    assert OPINION_SURVEY.sample(manifest["parameters"]) == IDENTICAL_PROMPTS


def test_the_report_says_the_sample_in_words_and_counts_the_flags(tmp_path):
    from simsubjects.collect.sample_kinds import SAMPLE_KINDS

    run = tmp_path / "run"
    shutil.copytree(OLD / "studyfile_averaged", run)
    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text()
    assert "sample of the tests" in page and SAMPLE_KINDS[CENSUS].split(":")[0] in page
    flagged = sum(int(pd.read_csv(f)["low_validity"].sum()) for f in (run / "analysis").glob("*.csv")
                  if "low_validity" in pd.read_csv(f, nrows=0).columns)
    assert flagged > 0 and f"{flagged} of " in page


def test_milgram_percent_obedient_leaves_censored_runs_out_and_reports_them_apart():
    """Six runs: two completed, one broke off at 12, three cut by --max-stages at 5. Before issue 40 the
    three cut runs counted as disobedient (2/6 = 33%); they are neither, so the share is 2/3, with the three
    counted apart and the Kaplan-Meier value at level 30 beside it. Unit: subject."""
    from simsubjects.studies.milgram.analysis import obedience_summary

    b = pd.DataFrame({"model": "m", "source": "model", "subject": list("abcdef"),
                      "breakoff_level": [30, 30, 12, 5, 5, 5], "censored": [False] * 3 + [True] * 3,
                      "cause": ["completed", "completed", "refused", *["max stages"] * 3]})
    row = obedience_summary(b).iloc[0]
    assert row["percent_obedient"] == pytest.approx(200 / 3) and row["n_uncensored"] == 3 and row["censored"] == 3
    assert row["km_percent_obedient"] == pytest.approx(200 / 3)  # the curve's value at 30: 1 x (1 - 1/3)
    every_run_cut = obedience_summary(b.assign(breakoff_level=5, censored=True)).iloc[0]
    assert math.isnan(every_run_cut["percent_obedient"]) and math.isnan(every_run_cut["km_percent_obedient"])
    every_run_stopped = obedience_summary(b.assign(breakoff_level=0, censored=False)).iloc[0]
    assert every_run_stopped["percent_obedient"] == 0 and every_run_stopped["km_percent_obedient"] == 0


def test_ppi_rows_of_people_say_people():
    responses = pd.DataFrame({"trial": ["t1"], "item": ["a"], "source": "model", "validity": [0.9]})
    table = pd.DataFrame({"method": ["human-only", "model-only", "prediction-powered"], "estimate": [1.0, 2.0, 1.5],
                          "p.value": [0.1, 0.2, 0.3]})
    got = annotate({"ppi": table}, responses, CENSUS)["ppi"]
    assert got["sample"].tolist() == [PEOPLE, CENSUS, PEOPLE]


def test_a_reference_of_people_named_in_the_rows_and_tables_against_people():
    """The conjoint's tables name people by their data set ("HHY 2014 respondents"), and its model-vs-people
    tables by their name; Milgram's tests carry n_human."""
    responses = pd.DataFrame({"trial": ["t1", "h1"], "item": ["a", "a"], "source": ["model", "human"],
                              "model": ["m", "HHY 2014 respondents"], "validity": [0.9, 1.0]})
    amce = pd.DataFrame({"source": ["m", "HHY 2014 respondents"], "estimate": [0.1, 0.2], "p.value": [0.1, 0.2]})
    vs = pd.DataFrame({"estimate": [0.1], "p.value": [0.3]})
    got = annotate({"amce": amce, "anova_model_vs_people": vs}, responses, DRAWN)
    assert got["amce"]["sample"].tolist() == [DRAWN, PEOPLE]
    assert got["anova_model_vs_people"]["sample"].tolist() == [DRAWN + VS_PEOPLE]
    milgram = pd.DataFrame({"model": ["m"], "n_model": [4], "n_human": [40], "p.value": [0.5]})
    assert annotate({"tests": milgram}, responses, CENSUS)["tests"]["sample"].tolist() == [CENSUS + VS_PEOPLE]


def test_an_analysis_may_name_some_rows_itself():
    """The conjoint's people come from the bundled data, not the run: its analysis marks their rows and the
    rest are filled with the run's kind."""
    responses = pd.DataFrame({"trial": ["t1"], "item": ["a"], "source": "model", "model": "m", "validity": [0.9]})
    amce = pd.DataFrame({"source": ["m", "HHY"], "estimate": [0.1, 0.2], "p.value": [0.1, 0.2],
                         "sample": [None, PEOPLE]})
    assert annotate({"amce": amce}, responses, DRAWN)["amce"]["sample"].tolist() == [DRAWN, PEOPLE]
