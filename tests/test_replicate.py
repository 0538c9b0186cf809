"""`simsubjects replicate`: sizing rules, bad input, and one tiny replication of all three papers.

The tiny replication swaps each paper's plans for the smallest designs that still exercise every
step (collect, analyze, export, README, analysis.R, report) on the bundled model; the sizing
rules of the real plans are checked separately, without a model.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyreadr
import pytest

from simsubjects.cli import replicate as rep
from simsubjects.collect.studies.registry import studies
from simsubjects.papers import papers
from simsubjects.cli.commands import main
from simsubjects.errors import UserError

STUDIES = ["ultimatum", "garden_path", "wisdom", "milgram", "milgram_novel", "survey_bias", "moca", "opinion_survey",
           "conjoint_immigration"]

# the smallest designs that still give every analysis something to compute
TINY = {
    # two name pairs per gender pairing: the Welch test runs; offers $0 and $2 (the report's "rarely accepted"
    # band and its $2 gender-pairing table), $5 and $10 (the "almost always accepted" band): 32 trials, not 88
    "ultimatum": {"pairs": 8, "offers": "0,2,5,10"},
    "garden_path": {"names": 1, "set": "published"},
    "wisdom": {"participants": 2, "questions": "1,6"},
    "milgram": {"subjects": 1, "max_stages": 2, "max_tokens": 12},
    "milgram_novel": {"subjects": 1, "max_stages": 2, "max_tokens": 12},
    "survey_bias": {"bias": "acquiescence,response_order", "perturbation": "key_typo", "as_sample": 0},
    "moca": {"task": "all", "stories": 3, "template": "yesno", "personas": "none"},
    "opinion_survey": {"first": 2, "personas": "bundled", "sample": "1", "order": "random", "groups": "POLPARTY"},
    "conjoint_immigration": {"respondents": 2, "tasks": 1, "orders": "both"},
}


def tiny_plans(mp: pytest.MonkeyPatch) -> None:
    """Swap every declared study's plans for the tiny designs (undone with mp.undo())."""
    for s in studies().values():
        mp.setattr(s, "papers", tuple(replace(pl, params=lambda sc, _p=TINY[s.name]: dict(_p)) for pl in s.papers))


# ---------------------------------------------------------------- sizing, without a model

def test_scale_one_is_the_papers_design():
    by = {study.name: params for _, _, study, params in rep.plan_studies(list(papers().values()), 1.0)}
    assert by["ultimatum"]["pairs"] == 10_000
    assert by["garden_path"]["names"] == 1_000
    assert by["wisdom"]["participants"] == 1_500
    assert by["milgram"] == {"subjects": 100, "max_stages": 30}
    assert by["milgram_novel"]["subjects"] == 100
    assert by["survey_bias"]["as_sample"] == 50
    assert by["moca"]["stories"] == 0 and by["moca"]["template"] == "both"  # 0 = every story
    assert by["opinion_survey"]["sample"] == "20" and by["opinion_survey"]["order"] == "random"
    assert by["conjoint_immigration"] == {"respondents": 1_396, "tasks": 5, "orders": "both"}


def test_small_scales_keep_a_testable_floor():
    by = {study.name: params for _, _, study, params in rep.plan_studies(list(papers().values()), 1e-4)}
    assert by["ultimatum"]["pairs"] == 8
    assert by["garden_path"]["names"] == 1
    assert by["wisdom"]["participants"] == 2
    assert by["milgram"]["subjects"] == 1
    assert by["survey_bias"]["as_sample"] == 10
    assert by["moca"]["stories"] == 6
    assert by["conjoint_immigration"]["respondents"] == 10  # 10 x 5 tasks x 2 orders in `make demo` (scale 0.002)
    assert rep.plan_studies([papers()["hhy2014"]], 0.002)[0][3]["respondents"] == 10
    assert rep.plan_studies([papers()["hhy2014"]], 0.05)[0][3]["respondents"] == 70
    assert rep.size(10_000, 0.002, floor=8) == 20
    assert rep.size(100, 0.5) == 50


def test_every_bundled_study_belongs_to_its_paper():
    by_paper = {k: [s.name for _, _, s, _ in rep.plan_studies([p], 1.0)] for k, p in papers().items()}
    assert by_paper == {"aher2023": ["ultimatum", "garden_path", "wisdom", "milgram", "milgram_novel"],
                        "tjuatja2024": ["survey_bias"], "nie2023": ["moca"], "santurkar2023": ["opinion_survey"],
                        "hhy2014": ["conjoint_immigration"]}


@pytest.mark.parametrize("args,message", [
    (["replicate", "aher2023", "--scale", "0", "--out", "X"], "--scale 0"),
    (["replicate", "aher2023", "--scale", "2", "--out", "X"], "must be in (0, 1]"),
    (["replicate", "smith1999", "--out", "X"], "unknown paper 'smith1999'"),
    (["replicate", "nie2023", "--only", "ultimatum", "--out", "X"], "--only ultimatum"),
    (["replicate", "nie2023", "--model", "nosuch:thing", "--out", "X"], "nosuch"),
])
def test_bad_input_is_one_line_exit_2(args, message, tmp_path, capsys):
    args = [a if a != "X" else str(tmp_path / "out") for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err and "\n" not in err
    assert not (tmp_path / "out" / "manifest.json").exists()


def test_report_of_a_folder_without_runs(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 2
    assert "no run folder here" in capsys.readouterr().err


# ---------------------------------------------------------------- one tiny replication, all papers

# `simsubjects replicate` as a user runs it (its own process, progress bars, notes), on the tiny designs
DRIVER = """
import sys
import pytest
from tests.test_replicate import tiny_plans
tiny_plans(pytest.MonkeyPatch())
from simsubjects.cli.commands import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def replication_run(tmp_path_factory):
    """(folder, manifest, the command's stdout + stderr): one tiny replication of every paper."""
    out = tmp_path_factory.mktemp("replication") / "all"
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTHONWARNINGS", None)  # Python's default filters: what a user's terminal shows
    r = subprocess.run([sys.executable, "-c", DRIVER, "replicate", "all", "--model", "smollm2", "--scale", "0.001",
                        "--out", str(out)], cwd=root, env=env, capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stderr[-3000:]
    return out, json.loads((out / "manifest.json").read_text()), r.stdout + r.stderr


@pytest.fixture(scope="module")
def replication(replication_run):
    return replication_run[:2]


def test_the_output_has_no_warning_and_each_note_once(replication_run):
    """Issue 27: no Python warning reaches the terminal, and a note about the whole run is printed once."""
    text = replication_run[2].replace("\r", "\n")
    assert not [line for line in text.splitlines() if "Warning" in line or "warning:" in line.lower()], text[-3000:]
    notes = [line.strip() for line in text.splitlines() if line.strip().lower().startswith("note")]
    assert len(notes) == len(set(notes)), notes
    assert "loaded smollm2" in text and "conjoint_immigration: complete" in text


def test_folder_layout(replication):
    out, man = replication
    assert {"report.html", "README.md", "analysis.R", "manifest.json"} <= {p.name for p in out.iterdir()}
    top = json.loads((out / "manifest.json").read_text())
    assert top["kind"] == rep.KIND and top["papers"] == ["aher2023", "tjuatja2024", "nie2023", "santurkar2023",
                                                          "hhy2014"]
    assert top["command"].startswith("simsubjects replicate aher2023 tjuatja2024 nie2023 santurkar2023 hhy2014 "
                                     "--model smollm2 --scale 0.001")
    assert top["model"]["revision"].startswith("sha256:")
    entries = {e["study"]: e for e in top["studies"]}
    assert set(entries) == set(STUDIES)
    for study in STUDIES:
        e = entries[study]
        assert e["status"] == "complete", e.get("error")
        run = out / e["folder"]
        assert json.loads((out / e["manifest"]).read_text())["status"] == "complete"
        for name in ("manifest.json", "responses.parquet", "items.parquet"):
            assert (run / name).is_file(), (study, name)
        assert list((run / "analysis").glob("*.csv")) and list((run / "analysis").glob("*.png")), study
        for t in ("responses", "items"):
            for fmt in rep.EXPORT_FORMATS:
                assert (run / "export" / f"{t}.{fmt}").is_file(), (study, t, fmt)
            assert (run / "export" / f"codebook_{t}.md").is_file()
    readme = (out / "README.md").read_text()
    assert top["command"] in readme and "Rscript analysis.R" in readme
    assert all(f"`{s}/`" in readme for s in STUDIES)


def test_exports_read_back(replication):
    out, _ = replication
    for study in ("ultimatum", "moca", "milgram"):
        want = pd.read_parquet(out / study / "responses.parquet")
        rds = pyreadr.read_r(str(out / study / "export" / "responses.rds"))[None]
        dta = pd.read_stata(out / study / "export" / "responses.dta")
        csv = pd.read_csv(out / study / "export" / "responses.csv")
        assert len(rds) == len(dta) == len(csv) == len(want)
        assert rds["weight"].sum() == pytest.approx(want["weight"].sum())
        assert list(csv.columns) == list(want.columns)


def _section(page: str, study: str) -> str:
    start = page.index(f'<section id="{study}">')
    return page[start:page.index("</section>", start)]


def test_report_has_tables_figures_and_references(replication):
    out, _ = replication
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "http://" not in page.replace('href="http', "") and "<script" not in page  # self-contained
    for study in STUDIES:
        sec = _section(page, study)
        assert "<table>" in sec and "data:image/png;base64," in sec, study
    # the paper's numbers and the human references, study by study
    assert "97.6" in _section(page, "ultimatum")  # Aher et al. Table 1, LM-1
    assert "rarely accepted" in _section(page, "ultimatum")
    wisdom = _section(page, "wisdom")
    assert "190 (108)" in wisdom and "206 (180)" in wisdom  # Q01: people (Moussaïd), LM-5 (Table 2)
    milgram = _section(page, "milgram")
    assert "Milgram (1963) Exp. 1, people" in milgram and ">65<" in milgram and ">75<" in milgram
    survey = _section(page, "survey_bias")
    assert "24.915" in survey and "-60.35" in survey  # Table 4, Llama2 7b
    moca = _section(page, "moca")
    assert "Nie et al. Table 1" in moca and ">48<" in moca and ">46<" in moca
    assert "people (25 votes per story)" in moca  # human AMCE beside the model's
    conjoint = _section(page, "conjoint_immigration")
    assert "HHY 2014 respondents" in conjoint and "tasks per second" in conjoint and "-0.160" in conjoint
    head = page[:page.index("<section")]
    assert "sha256:" in head and "simsubjects replicate" in head and "Validity rates" in head
    assert "Demo scale (0.001):" in head and head.index("Demo scale") < head.index("Validity rates")


def test_report_command_on_a_replication_and_on_one_run(replication, tmp_path, capsys, monkeypatch):
    """`report` reads every study's analysis back from its folder (analysis/analysis.json is current: no
    analysis runs), and the page is the one `replicate` wrote from the analyses it had just computed
    (issue 27: both paths give the same HTML, on every study; tests/test_report.py covers stale records)."""
    import simsubjects.publish.analysis as an

    def computed_again(*a, **k):
        raise AssertionError(f"analysis computed again for {a}")

    monkeypatch.setattr(an, "analyze_runs", computed_again)
    out, _ = replication
    target = tmp_path / "r.html"
    assert main(["report", str(out), "--out", str(target)]) == 0
    assert capsys.readouterr().out.strip() == str(target)
    page = target.read_text(encoding="utf-8")
    assert page.count("<section id=") == len(STUDIES) and 'class="error"' not in page
    when = r"<dt>report written</dt><dd>[^<]*</dd>"
    assert re.sub(when, "", page) == re.sub(when, "", (out / "report.html").read_text(encoding="utf-8"))
    single = tmp_path / "ug"
    shutil.copytree(out / "ultimatum", single)
    assert main(["report", str(single)]) == 0
    page = (single / "report.html").read_text()
    assert page.count("<section id=") == 1 and "simsubjects collect ultimatum --model smollm2 --pairs 8" in page


@pytest.mark.parametrize("name", STUDIES)
def test_two_runs_together_give_each_run_alone(replication, name, tmp_path):
    """tests/test_multi_run.py's property on this replication's run of each study."""
    from tests.test_multi_run import two_runs_agree

    assert set(STUDIES) == set(studies())  # every declared study
    two_runs_agree(replication[0] / name, tmp_path)


def test_rerun_resumes_from_the_caches(replication, smollm2, tmp_path):
    out = tmp_path / "copy"  # a copy: the other tests read the original
    shutil.copytree(replication[0], out)
    mp = pytest.MonkeyPatch()
    tiny_plans(mp)
    try:
        again = rep.replicate(["nie2023"], "smollm2", out, scale=0.001, show_progress=False, loaded_model=smollm2,
                              log=lambda m: None, overwrite=True)
    finally:
        mp.undo()
    assert again["studies"][0]["timings"]["collect"] < 30  # every request answered from cache.sqlite
    pd.testing.assert_frame_equal(pd.read_parquet(out / "moca" / "responses.parquet"),
                                  pd.read_parquet(replication[0] / "moca" / "responses.parquet"))
    with pytest.raises(UserError, match="holds a replication of nie2023"):
        rep.replicate(["aher2023"], "smollm2", out, scale=0.001, loaded_model=smollm2, log=lambda m: None)


def _r_ready() -> str | None:
    if shutil.which("Rscript") is None:
        return "Rscript not found"
    ok = subprocess.run(["Rscript", "-e", "quit(status = !all(sapply(c('estimatr', 'survival', 'survey', 'sandwich'), "
                                          "requireNamespace, quietly = TRUE)))"], capture_output=True)
    return None if ok.returncode == 0 else "R packages estimatr/survival/survey/sandwich missing"


def _need_r():
    reason = _r_ready()
    if reason:
        if os.environ.get("SIMSUBJECTS_REQUIRE_R") == "1":
            pytest.fail(f"SIMSUBJECTS_REQUIRE_R=1 but {reason}", pytrace=False)
        pytest.skip(reason)


def test_analysis_r_runs_and_agrees_with_python(replication, tmp_path):
    """A fresh copy of the folder, elsewhere: the R package installed from the folder's own copy (no
    checkout), analysis.R compares every table it writes with the Python table and says so (issue 29)."""
    _need_r()
    out = tmp_path / "folder"
    shutil.copytree(replication[0], out)
    lib = tmp_path / "rlib"
    lib.mkdir()
    # --no-byte-compile: byte code only speeds R up (~4 s CPU to make here); test_check_r's R CMD check
    # installs the package byte-compiled, as a user's install does
    subprocess.run(["R", "CMD", "INSTALL", "--no-test-load", "--no-byte-compile", "-l", str(lib),
                    "r-package/simsubjects"], cwd=out, check=True, capture_output=True)
    env = {**os.environ, "R_LIBS": str(lib)}
    env.pop("SIMSUBJECTS_R_SOURCE", None)
    res = subprocess.run(["Rscript", "analysis.R"], cwd=out, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "(installed)" in res.stdout
    r = out / "r_results"
    written = sorted(f"{p.parent.name}/{p.stem}" for p in r.glob("*/*.csv"))
    checks = {line.split()[1]: line for line in res.stdout.splitlines() if line.startswith("check ")}
    assert sorted(checks) == written  # one line per table written
    assert all(line.endswith("agrees") for line in checks.values()), res.stdout
    assert {w.split("/")[0] for w in written} == set(STUDIES)  # every study has an R twin that is checked
    assert f"all {len(written)} tables agree with the Python tables" in res.stdout
    # same names, same columns as the Python tables
    for w in written:
        study, table = w.split("/")
        rt, pt = pd.read_csv(r / study / f"{table}.csv"), pd.read_csv(out / study / "analysis" / f"{table}.csv")
        assert len(set(rt.columns) & set(pt.columns)) >= 3, w
    session = (r / "session.txt").read_text()
    assert "R version" in session and "Commit: " in session and "estimatr" in session
    commit = json.loads((out / "manifest.json").read_text())["source"]["commit"]
    assert commit and f"Commit: {commit}" in session
    # a few numbers by hand, beside the script's own check
    welch = pd.read_csv(r / "ultimatum" / "pairing_tests.csv")
    py = pd.read_csv(out / "ultimatum" / "analysis" / "pairing_tests.csv")
    py = py[(py["offer"] == "all") & py["test"].str.startswith("Welch")].iloc[0]
    rw = welch[welch["offer"] == "all"].iloc[0]
    assert rw["estimate"] == pytest.approx(py["estimate"], abs=1e-8)
    assert rw["p.value"] == pytest.approx(py["p.value"], abs=1e-6)
    rm = pd.read_csv(r / "conjoint_immigration" / "amce.csv")
    pm = pd.read_csv(out / "conjoint_immigration" / "analysis" / "amce.csv")
    m = pm.merge(rm, on=["source", "feature", "level"], suffixes=("", "_r"))
    assert len(m) == len(pm) == len(rm) and set(pm["source"]) == {"smollm2", "HHY 2014 respondents"}
    assert (m["estimate"] - m["estimate_r"]).abs().max() < 1e-8
    # the first level of every attribute is the design's baseline, in R as in Python (the people saw every
    # level; the tiny model run may lack a baseline, and then both languages start at its first shown level)
    people = rm[rm["source"] == "HHY 2014 respondents"]
    assert list(people.groupby("feature", sort=False)["level"].first()[["Education", "Job", "CountryOfOrigin",
                                                                         "LanguageSkills"]]) == \
        ["No Formal", "Janitor", "India", "Fluent English"]
    # a difference is caught: one Python number moved by 1e-6, the script exits 1 and names the table; run
    # for the ultimatum folder alone (`Rscript analysis.R ultimatum`), it checks that study's tables only
    bad = out / "ultimatum" / "analysis" / "pairing_tests.csv"
    t = pd.read_csv(bad)
    t.loc[t["test"].str.startswith("Welch"), "estimate"] += 1e-6
    t.to_csv(bad, index=False)
    res = subprocess.run(["Rscript", "analysis.R", "ultimatum"], cwd=out, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 1
    assert [line for line in res.stdout.splitlines() if "DIFFERS" in line] and "ultimatum/pairing_tests" in \
        next(line for line in res.stdout.splitlines() if "DIFFERS" in line)
    assert {line.split()[1].split("/")[0] for line in res.stdout.splitlines() if line.startswith("check ")} == \
        {"ultimatum"}
    res = subprocess.run(["Rscript", "analysis.R", "ultimatum", "nosuch"], cwd=out, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 2 and res.stderr.strip().splitlines() == [
        "error: no study folder 'nosuch' here; name study folders of this replication"]


def test_stata_and_spss_exports_give_the_package_numbers(replication, tmp_path):
    """Every study's R twin on the .dta and the .sav export (read with haven, labels as factors) gives the
    Python tables' numbers; without R installed: the folder's own R sources (issue 29)."""
    _need_r()
    out, man = replication
    calls = "\n".join(f'  ok <- c(ok, check_results({studies()[e["study"]].r_function}("{e["folder"]}"), '
                      f'"{e["folder"]}")$ok)' for e in man["studies"])
    script = f"""
for (f in sort(list.files("r-package/simsubjects/R", pattern = "[.]R$", full.names = TRUE))) source(f)
ok <- logical(0)
for (fmt in c("dta", "sav")) {{
  options(simsubjects.format = fmt)
  cat("format", fmt, "\\n")
{calls}
}}
quit(status = if (length(ok) && all(ok)) 0 else 1)
"""
    res = subprocess.run(["Rscript", "-e", script], cwd=out, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    lines = [line for line in res.stdout.splitlines() if line.startswith("check ")]
    assert len(lines) >= 2 * len(STUDIES) and all(line.endswith("agrees") for line in lines)


def test_analysis_do_read_check(replication):
    """No Stata here: analysis.do is checked by reading it (tests/test_stata_do.py's checker): every file
    it reads is in the folder, every variable it uses is in the .dta, each CSV is renamed column by column,
    blocks and quotes balance, and every line starts with a Stata command (issue 29)."""
    from tests.test_stata_do import check_do

    out, _ = replication
    named = check_do(out)
    assert {"source", "model", "response", "pairing", "pair", "weight", "trial", "offer"} <= \
        named["ultimatum/export/responses.dta"]
    assert "garden_path/export/responses.dta" in named and "conjoint_immigration/export/profiles.dta" in named
    do = (out / "analysis.do").read_text()
    assert "exit 9" in do and "ttest p_accept" in do and ", by(pairing) unequal" in do
    # the name pair is the unit of the pooled Welch test (issue 25), as in Python and R
    assert do.index("collapse (mean) p_accept, by(model pairing pair)") < do.index("ttest p_accept")
    readme = (out / "README.md").read_text()
    assert "analysis.do" in readme and "No Stata version here" in readme


def test_dry_run_figures_match_the_manifests(replication, smollm2):
    """--dry-run counts what the run then used: requests exactly, prompt tokens within 1% (issue 17).
    Milgram's steps depend on the answers, so its dry figures are an estimate and are not compared."""
    from simsubjects.cli.dryrun import dry_run_replicate

    out, man = replication
    mp = pytest.MonkeyPatch()
    tiny_plans(mp)
    try:
        rows, model = dry_run_replicate(["all"], "smollm2", scale=0.001)
    finally:
        mp.undo()
    assert model.local and model.counter.info.revision == man["model"]["revision"]
    compared = 0
    for row in rows:
        used = json.loads((out / row["study"] / "manifest.json").read_text())["usage"]
        assert used["requests"] > 0 and used["prompt_tokens"] > 0
        if row.get("note"):
            continue
        assert row["requests"] == used["requests"], row["study"]
        assert abs(row["prompt_tokens"] - used["prompt_tokens"]) <= 0.01 * used["prompt_tokens"], row["study"]
        assert row["forwards"] == used["forwards"], row["study"]
        assert row["generations"] == used["generations"], row["study"]
        assert used["completion_tokens"] <= row["completion_tokens_max"], row["study"]
        compared += 1
    assert compared >= 4
