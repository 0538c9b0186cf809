"""`analyze --check-r` on study-file runs (issue 25, finding 8): every example study file in
examples/, collected at a tiny scale on the embedded model, has each of its tables recomputed in R
(R/studyfile.R, from the tidy responses) and the check exits 0; a perturbed analysis makes it exit 1.
The session files in examples/ (pd_tft, pd_dalbo) have no R twins and say so."""

import shutil
from pathlib import Path

import pandas as pd
import pytest

from simsubjects.cli import main

pytestmark = pytest.mark.r

ROOT = Path(__file__).resolve().parents[1]
# example -> (its subjects table, rows kept): the tiny scale; 8 subjects are 2 per cell of the 2x2
TINY = {"vignette_2x2": ("participants.csv", 8), "opinion_survey": ("personas.csv", 4),
        "estimation": ("people.csv", 3)}
SESSIONS = {"pd_tft", "pd_dalbo", "trust_bdm", "pd_noisy", "pd_dalbo_people"}
# a built-in study's own file (examples/milgram is `collect milgram`'s): its R check is the built-in's,
# tests/test_check_r.py; tests/test_milgram_studyfile.py runs it on the file's run
BUILTIN_FILES = {"milgram"}


def test_every_example_is_covered():
    """A new example in examples/ must be added here (a study file), to SESSIONS or to BUILTIN_FILES."""
    assert {p.name for p in (ROOT / "examples").iterdir() if p.is_dir()} == set(TINY) | SESSIONS | BUILTIN_FILES


@pytest.fixture(scope="module")
def runs(smollm2, tmp_path_factory):
    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    from simsubjects.analyze.check_r import r_session
    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile.adapter import file_parameters, study_def
    from simsubjects.studyfile.spec import load_study

    r_session()
    base = tmp_path_factory.mktemp("check_r_examples")
    out = {}
    for ex, (table, n) in TINY.items():
        src = base / "src" / ex
        shutil.copytree(ROOT / "examples" / ex, src)
        pd.read_csv(src / table).head(n).to_csv(src / table, index=False)
        study = load_study(src / "study.yaml")
        run = base / "runs" / ex
        sdef = study_def(study, out=run)
        params = {"studyfile": file_parameters(study), "seed": study.seed, "chat_template": False, "judge_model": None}
        run_study(sdef, "smollm2", run, params=params, method=sdef.methods[0], n=50, model=smollm2,
                  show_progress=False)
        out[ex] = run
    return out


# tables analyze writes that are not statistics of an analysis (per-trial scores) or are compared
# through the tables that hold them (a named test is also a row of tests.csv)
NOT_COMPARED = {"trials", "tests", "check_r"}


@pytest.mark.parametrize("example", sorted(TINY))
def test_check_r_passes_on_every_table(runs, example, capsys):
    run = runs[example]
    assert main(["analyze", str(run), "--no-plots", "--check-r"]) == 0
    out = capsys.readouterr().out
    assert "R cross-check:" in out
    # the count of written files includes check_r.csv (issue 25, smaller item: the extra tables were not counted)
    assert f": {len(list((run / 'analysis').glob('*.csv')))} CSV" in out
    check = pd.read_csv(run / "analysis" / "check_r.csv")
    assert check["ok"].all() and len(check) > 30
    # each table's rows are matched one to one: no row only Python (or only R) has
    only = check[check["statistic"].str.contains("rows in only one")]
    assert (only["r"] == 0).all() and len(only)
    # every table the analysis wrote is compared (a test table by its analysis's name)
    compared = set(check["statistic"].str.split(" ").str[0].str.rstrip(":"))
    tables = {p.stem for p in (run / "analysis").glob("*.csv")} - NOT_COMPARED
    tests = pd.read_csv(run / "analysis" / "tests.csv") if (run / "analysis" / "tests.csv").exists() else None
    if tests is not None:
        tables |= set(tests["analysis"])
    assert tables and tables <= compared, tables - compared
    # estimates, not only empty cells: a finite statistic of a test or the representativeness was compared
    stats = check[check["statistic"].str.endswith((" statistic", " estimate", " mean"))]
    assert stats["python"].notna().any()


def test_a_perturbed_table_fails_the_check(runs, tmp_path):
    """The tables written as CSV, one number moved by 1e-6, compared with R: that number, and only it, fails."""
    from simsubjects.analyze.check_r import check_r
    from simsubjects.collect.store import load_run
    from simsubjects.studyfile.origin import study_def

    run = runs["vignette_2x2"]
    assert main(["analyze", str(run), "--no-plots", "--out", str(tmp_path / "a")]) == 0
    tables = {p.stem: pd.read_csv(p, keep_default_na=False, na_values=[""]) for p in (tmp_path / "a").glob("*.csv")}
    manifest, responses, items = load_run(run)
    spec = study_def(run, manifest)
    assert check_r(spec, responses, items, tables)["ok"].all()  # read back from CSV: still agrees
    tables["amce"].loc[0, "std.error"] += 1e-6
    bad = check_r(spec, responses, items, tables)
    bad = bad[~bad["ok"]]
    assert list(bad["statistic"]) == [f"amce (amce) | model | smollm2 | {tables['amce'].loc[0, 'term']} std.error"]


def test_a_perturbed_analysis_exits_1(runs, monkeypatch, capsys):
    """A Python analysis that drifts from its R twin (the Welch estimate moved by 1e-6): exit 1, the row named."""
    import simsubjects.analyze.methods.subjects as subjects  # the registry runs the test from its one home

    welch = subjects.welch
    monkeypatch.setattr(subjects, "welch", lambda *a, **k: welch(*a, **k).assign(estimate=lambda d: d["estimate"] + 1e-6))
    assert main(["analyze", str(runs["vignette_2x2"]), "--no-plots", "--check-r", "--out",
                 str(runs["vignette_2x2"].parent / "perturbed")]) == 1
    out = capsys.readouterr().out
    assert "frame_test (welch)" in out and "estimate" in out and "False" in out


def test_session_files_say_they_have_no_r_twins():
    from simsubjects.analyze.check_r import check_r
    from simsubjects.errors import UserError
    from simsubjects.studyfile.session import load_session
    from simsubjects.studyfile.session_def import session_def

    spec = session_def(load_session(ROOT / "examples" / "pd_tft" / "study.yaml"))
    with pytest.raises(UserError, match="no R twins for study 'pd_tft'"):
        check_r(spec, pd.DataFrame(), None, {})


def test_survey_weighted_tests_match_r(tmp_path):
    """People with unequal survey weights: welch and one_sample go design-based (survey::svyttest) and
    chi_square to Kish's effective n, in Python and in R/studyfile.R alike; every analysis compared."""
    import numpy as np

    from simsubjects.analyze.check_r import r_session
    from simsubjects.studyfile.analyses import analyze_study
    from simsubjects.studyfile.check_r import check_study_file
    from tests.test_studyfile import _scored

    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    rng = np.random.default_rng(7)
    s, model, items = _scored(tmp_path, rng)
    labels = [o.label for o in s.items[0].response.options]
    people = []
    for i in range(40):
        frame, cue = ("gain", "loss")[i % 2], ("on", "off")[(i // 2) % 2]
        people.append({"trial": f"h{i}", "item": "q", "condition": f"frame={frame},cue={cue}", "subject": f"h{i}",
                       "frame": frame, "cue": cue, "study": "t", "source": "human", "model": "people",
                       "method": "human", "response": labels[rng.integers(0, 5)], "weight": rng.uniform(0.5, 2.0),
                       "validity": 1.0, "response_type": "choice"})
    responses = pd.concat([model, pd.DataFrame(people)], ignore_index=True)
    tables = analyze_study(s, responses, items)
    t = tables["tests"]
    assert set(t.loc[t["source"] == "human", "weights"]) == {"survey"}
    # the AMCE of weighted people is design-based too (it ignored the weights before)
    assert set(tables["amce"].loc[tables["amce"]["source"] == "human", "weights"]) == {"survey"}
    assert set(tables["amce"].loc[tables["amce"]["source"] == "model", "weights"]) == {"none"}
    check = pd.DataFrame(check_study_file(s, r_session(), responses, items, tables, 1e-8, 1e-6))
    assert check["ok"].all(), check[~check["ok"]]
    for name in ("welch_1", "one_sample_3", "chi_square_4", "amce"):
        rows = check[check["statistic"].str.startswith(name) & check["statistic"].str.contains("human")]
        assert len(rows), name
    # issue 40, item 7: paired has an R twin (sf_paired), and the t-tests' effect sizes are compared
    assert not check["statistic"].str.contains("no R twin").any()
    for name in ("welch_1", "paired_2", "one_sample_3"):
        assert check["statistic"].str.match(f"{name} .* effect_size$").any(), name


def test_agreement_by_group_is_a_row_per_group_and_matches_r(tmp_path):
    """`agreement` with `by: [party]`: one row per model x party over the items (as `representativeness`
    by party), each r equal to scipy's pearsonr of that party's item means; R's cor.test agrees."""
    import numpy as np
    from scipy import stats

    from simsubjects.analyze.check_r import r_session
    from simsubjects.studyfile.analyses import analyze_study, trial_scores
    from simsubjects.studyfile.check_r import check_study_file
    from simsubjects.studyfile.design import build_trials
    from simsubjects.studyfile.spec import load_study

    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    src = tmp_path / "survey"
    shutil.copytree(ROOT / "examples" / "opinion_survey", src)
    with open(src / "study.yaml", "a") as f:
        f.write("  - {type: agreement, by: [party], name: agreement_by_party}\n")
    s = load_study(src / "study.yaml")
    trials, items = build_trials(s)
    rng = np.random.default_rng(5)
    rows = [{"study": s.name, "trial": rec["trial"], "item": rec["item"], "condition": "", "subject": rec["subject"],
             "source": "model", "model": "m", "method": "exact", "response": lab, "weight": w, "validity": 1.0,
             "response_type": "choice", "party": rec["party"]}
            for rec in trials.to_dict("records") for lab, w in zip(rec["labels"], rng.dirichlet(np.ones(len(rec["labels"]))))]
    resp = pd.concat([pd.DataFrame(rows), s.human], ignore_index=True)
    tables = analyze_study(s, resp, items)
    got = tables["agreement_by_party"].set_index("party")
    assert set(got.index) == {"Democratic", "Republican"} and (got["unit"] == "item").all()
    tr = trial_scores(s, resp)
    for party, row in got.iterrows():
        t = tr[tr["party"] == party]
        m = t[t["source"] == "model"].groupby("item")["score"].mean()
        h = t[(t["source"] == "human") & t["score"].notna()].groupby("item").apply(  # a "Don't know" has no score
            lambda g: np.average(g["score"], weights=g["tw"]), include_groups=False)
        both = pd.concat([m, h], axis=1, join="inner").dropna()
        assert row["estimate"] == pytest.approx(stats.pearsonr(both.iloc[:, 0], both.iloc[:, 1])[0], abs=1e-12)
        assert row["n"] == len(both) == 4
    assert len(tables["agreement"]) == 1  # without `by`: one row per model, as before
    check = pd.DataFrame(check_study_file(s, r_session(), resp, items, tables, 1e-8, 1e-6))
    assert check["ok"].all(), check[~check["ok"]]
    assert check["statistic"].str.contains("agreement_by_party \\(agreement\\) \\| m \\| Republican estimate").any()


def test_study_files_get_figures_in_the_analysis_and_the_report(runs, tmp_path):
    """Issue 25, smaller item: study files got no figures. The distribution per item and the tests' estimates
    with their intervals are drawn, and the report embeds them."""
    from PIL import Image

    run = runs["vignette_2x2"]
    out = tmp_path / "a"
    assert main(["analyze", str(run), "--out", str(out)]) == 0
    for name in ("distribution.png", "tests.png"):
        with Image.open(out / name) as im:
            assert im.size[0] > 300 and im.size[1] > 100
    assert main(["report", str(runs["opinion_survey"])]) == 0
    page = (runs["opinion_survey"] / "report.html").read_text()
    assert "<h3>Figures</h3>" in page and page.count("data:image/png;base64") >= 1


def test_analysis_r_reproduces_the_study_file_tables(runs, tmp_path):
    """Issue 25 ("R twins, so that analysis.R covers study-file runs"): a replication folder holding the three
    example study files' runs (and a session file's, which keeps its one line). Its analysis.R calls
    replicate_study_file() (R/studyfile.R) on each exported run; Rscript exits 0, and every table R writes
    equals the Python table of the same name, row for row, to 1e-10. User text reaches R only as string
    literals."""
    import os
    import subprocess

    import numpy as np

    from simsubjects.publish.rscript import r_script
    from simsubjects.collect.store import RunStore
    from simsubjects.publish.export import export_run

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript not installed")
    rep = tmp_path / "rep"
    studies = []
    for ex, run in runs.items():
        folder = rep / ex
        shutil.copytree(run, folder, ignore=shutil.ignore_patterns("analysis", "export"))
        assert main(["analyze", str(folder), "--no-plots"]) == 0
        export_run(folder, ["rds"])
        params = RunStore(folder).read_manifest()["parameters"]
        studies.append({"study": ex, "folder": ex, "parameters": params, "exported": ["rds"]})
    # a session file's run: one line, no call
    studies.append({"study": "pd_tft", "folder": "pd_tft", "exported": ["rds"],
                    "parameters": {"studyfile": {"file": "study/study.yaml"}}})
    shutil.copytree(ROOT / "examples" / "pd_tft", rep / "pd_tft" / "study")
    # a Milgram obedience file's run: one line too (writing analysis.R used to fail on it after collecting)
    studies.append({"study": "milgram", "folder": "milgram", "exported": ["rds"],
                    "parameters": {"studyfile": {"file": "study/study.yaml"}}})
    (rep / "milgram" / "study").mkdir(parents=True)
    shutil.copyfile(ROOT / "examples" / "milgram" / "study.yaml", rep / "milgram" / "study" / "study.yaml")
    text = r_script({"command": "simsubjects replicate ...", "studies": studies}, rep)
    assert text.count("replicate_study_file(") == 3 and "pd_tft: no R twin yet" in text
    assert "milgram: no R twin yet" in text
    # a level, item or name is an escaped R string literal: a quote or a line break cannot end it
    from simsubjects.publish.rscript import _r_value

    assert _r_value(['a"); system("x")\n#', 2, True]) == 'c("a\\"); system(\\"x\\")\\u{000a}#", 2.0, TRUE)'
    (rep / "analysis.R").write_text(text)
    res = subprocess.run(["Rscript", "analysis.R"], cwd=rep, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "SIMSUBJECTS_R_SOURCE": str(ROOT / "R")})
    checks = "\n".join(line for line in res.stdout.splitlines() if line.startswith("check "))
    assert res.returncode == 0, checks + res.stderr[-2000:]
    assert "DIFFERS" not in res.stdout and "tables agree with the Python tables" in res.stdout
    compared = 0
    for ex in runs:
        made = sorted((rep / "r_results" / ex).glob("*.csv"))
        names = {p.stem for p in made}
        assert {"distribution", "tests"} & names or ex == "estimation"
        for p in made:
            r = pd.read_csv(p, keep_default_na=False, na_values=["NA", ""])
            py = pd.read_csv(rep / ex / "analysis" / p.name, keep_default_na=False, na_values=[""])
            text = lambda d, c: not pd.api.types.is_numeric_dtype(d[c])  # noqa: E731
            keys = [c for c in r.columns if c in py.columns and text(r, c) and text(py, c) and r[c].notna().all()]
            assert keys, (ex, p.name, dict(r.dtypes), dict(py.dtypes))
            m = r.merge(py, on=keys, suffixes=("_r", ""), how="left", indicator=True)
            assert (m["_merge"] == "both").all() and len(m) == len(r) > 0, (ex, p.name)
            nums = [c for c in r.columns if c not in keys and c in py.columns and c != "n"
                    and pd.api.types.is_numeric_dtype(r[c]) and pd.api.types.is_numeric_dtype(py[c])]
            assert nums, (ex, p.name)
            # a model's chi_square p.value permutes subjects (issue 40, item 3): R's random stream is not
            # Python's, so those rows agree to 4 Monte-Carlo standard errors (p.value.mc_se, R's only)
            mc = m["p.value.mc_se"].notna() if "p.value.mc_se" in m else pd.Series(False, index=m.index)
            for c in nums:
                exact = ~mc if c == "p.value" else pd.Series(True, index=m.index)
                assert np.allclose(m.loc[exact, f"{c}_r"], m.loc[exact, c], rtol=0, atol=1e-10, equal_nan=True), \
                    (ex, p.name, c)
                compared += int(m.loc[exact, c].notna().sum())
            if mc.any():
                assert ((m["p.value_r"] - m["p.value"]).abs()[mc] <= 4 * m["p.value.mc_se"][mc]).all(), (ex, p.name)
    assert compared > 100
