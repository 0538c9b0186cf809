"""A study declared in a file outside the package is picked up by every command with no edit elsewhere.

The toy study lives in a temporary folder named by SIMSUBJECTS_STUDIES: its declaration holds its
trials, CLI option, design-column label, paper with a sizing rule, analysis, report section, R
twin (an R file of its own) and check-r piece. collect, analyze --check-r, export, report and
replicate are run through the CLI on the embedded model.
"""

from __future__ import annotations

import json
import textwrap

import pandas as pd
import pytest

from simsubjects.cli.commands import main
from simsubjects.collect.studies.registry import get_study, studies
from simsubjects.errors import UserError

TOY = '''
from pathlib import Path

import pandas as pd

from simsubjects.analyze.check_r import compare
from simsubjects.analyze.tidy import prob_of
from simsubjects.collect.studies.registry import Option, Paper, Plan, StudyDef
from simsubjects.publish.htmlkit import block, table

TOY2026 = Paper("toy2026", "Parity judgments of a toy model", "Toy & Test (2026)", order=90)


def build(numbers: int = 3, seed: int = 0):
    rows = [{"trial": f"n{i}", "item": f"n{i}", "condition": "even" if i % 2 == 0 else "odd",
             "subject": "toy", "prompt": f"Question: is {i} an even number? Answer:", "options": (" yes", " no"),
             "labels": ("yes", "no"), "number": i} for i in range(numbers)]
    return pd.DataFrame(rows), pd.DataFrame({"item": [r["item"] for r in rows], "number": range(numbers)})


def analyze(responses, items):
    p = prob_of(responses[responses["source"] == "model"], "yes", keep=["number"])
    mean = p.groupby("model", as_index=False)["p_yes"].agg(estimate="mean", n="size")
    return {"p_yes": p, "mean_p_yes": mean}


def section(run):
    return [block("Toy parity beside chance", table(run.analysis.tables["mean_p_yes"]), "Chance is 0.5.")]


def check(r, responses, items, tables, tol, tol_p):
    rows = []
    for m in tables["mean_p_yes"].itertuples():
        x = tables["p_yes"].loc[tables["p_yes"]["model"] == m.model, "p_yes"]
        rows.append(compare(f"toy mean P(yes) {m.model}", m.estimate, r("toy_mean", x)["estimate"].iloc[0], tol))
    return rows


TOY = StudyDef(
    name="toy_parity", help="Toy parity: is a number even? (a study declared outside the package)",
    build=build,
    options=[Option(("--numbers",), {"default": 3, "type": int, "help": "Numbers 0..N-1 asked about."})],
    columns={"number": "The number asked about (toy label)"},
    papers=(Plan(TOY2026, lambda s: {"numbers": 2}, "two numbers"),),
    analyze=analyze, report=section, check_r=check,
    title="Toy parity (Toy & Test 2026)",
    r_function="toy_results", r_source=str(Path(__file__).with_name("toy.R")),
)
'''

TOY_R = '''
toy_mean <- function(x) data.frame(estimate = mean(as.numeric(x)))
toy_results <- function(folder) {
  r <- read_run(folder)$responses
  p <- prob_of(r[r$source == "model", ], "yes")
  list(toy_mean = toy_mean(p$p_yes))
}
'''


@pytest.fixture
def toy(tmp_path, monkeypatch, smollm2):
    d = tmp_path / "my_studies"
    d.mkdir()
    (d / "toy.py").write_text(textwrap.dedent(TOY))
    (d / "toy.R").write_text(TOY_R)
    monkeypatch.setenv("SIMSUBJECTS_STUDIES", str(d))
    # every command loads this session's model instead of loading it again
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(models, "load_model", lambda spec, **kw: smollm2)
    monkeypatch.setattr(pipeline, "load_model", lambda spec, **kw: smollm2)
    return d


def test_declared_outside_the_package_every_command_sees_it(toy, tmp_path, capsys):
    assert "toy_parity" in studies()
    run = tmp_path / "run"
    assert main(["collect", "toy-parity", "--model", "smollm2", "--numbers", "4", "--out", str(run), "-q"]) == 0
    r = pd.read_parquet(run / "responses.parquet")
    assert sorted(r["trial"].unique()) == ["n0", "n1", "n2", "n3"] and set(r["study"]) == {"toy_parity"}

    assert main(["analyze", str(run), "--no-plots", "--check-r"]) == 0
    mean = pd.read_csv(run / "analysis" / "mean_p_yes.csv")
    assert mean["n"].item() == 4
    check = pd.read_csv(run / "analysis" / "check_r.csv")
    assert len(check) == 1 and check["ok"].all() and check["abs_diff"].max() < 1e-8

    assert main(["export", str(run), "--to", "csv,dta"]) == 0
    book = pd.read_csv(run / "export" / "codebook_responses.csv")
    assert book.set_index("column").loc["number", "label"] == "The number asked about (toy label)"

    assert main(["report", str(run)]) == 0
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "Toy parity (Toy &amp; Test 2026)" in page and "Toy parity beside chance" in page

    rep = tmp_path / "rep"
    assert main(["replicate", "toy2026", "--model", "smollm2", "--out", str(rep), "-q"]) == 0
    man = json.loads((rep / "manifest.json").read_text())
    assert [e["study"] for e in man["studies"]] == ["toy_parity"] and man["studies"][0]["parameters"] == {"numbers": 2}
    script = (rep / "analysis.R").read_text()
    # analysis.R writes each study's R tables to r_results/<folder>/ and checks them: study(folder, results)
    assert 'study("toy_parity", toy_results("toy_parity"))' in script and str(toy / "toy.R") in script
    assert "Toy &amp; Test (2026)" in (rep / "report.html").read_text(encoding="utf-8")


def test_an_unknown_build_parameter_is_an_error_naming_it(toy):
    study = get_study("toy_parity")
    with pytest.raises(UserError, match="unknown parameter.*numbrs"):
        study.make(numbrs=2)
    assert len(study.make(numbers=2, seed=0)[0]) == 2
    # the bundled studies check their parameters the same way (replicate plans included)
    with pytest.raises(UserError, match="ultimatum: unknown parameter.*pair\\b"):
        get_study("ultimatum").make(pair=8)
