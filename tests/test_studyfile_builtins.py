"""The built-in k-choice studies as study files (tests/data/builtin_studyfiles, docs/studies.md):
each gives the command's trials (prompts compared exactly) and the command's responses table
(probabilities equal to 1e-12) on the embedded model; study files in `replicate`."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.cli.commands import main
from simsubjects.studyfile import load_study
from simsubjects.studyfile.design import build_trials

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = ROOT / "tests" / "data" / "builtin_studyfiles"


def _file(name: str, tmp_path: Path, replace: tuple[str, str] | None = None) -> Path:
    """A copy of a built-in study file (edited by `replace`), so a size can change."""
    dest = tmp_path / name
    shutil.copytree(BUILTIN / name, dest)
    if replace:
        text = (dest / "study.yaml").read_text()
        assert replace[0] in text
        (dest / "study.yaml").write_text(text.replace(*replace))
    return dest / "study.yaml"


def _collect(smollm2, study, out: Path) -> pd.DataFrame:
    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile.adapter import file_parameters, study_def

    params = {"studyfile": file_parameters(study), "seed": study.seed, "chat_template": False, "judge_model": None}
    responses, _ = run_study(study_def(study, out=out), "smollm2", out, params=params, method="exact",
                             model=smollm2, show_progress=False)
    return responses


def _command(smollm2, name: str, out: Path, **params) -> pd.DataFrame:
    from simsubjects.collect.pipeline import run_study
    from simsubjects.collect.studies.registry import get_study

    responses, _ = run_study(get_study(name), "smollm2", out, params=params, model=smollm2, show_progress=False)
    return responses


def _same_table(mine: pd.DataFrame, theirs: pd.DataFrame) -> None:
    """Every column of the command's table, equal; weight and validity to 1e-12."""
    assert len(theirs) > 0
    mine = mine[theirs.columns]
    num = ["weight", "validity"]
    pd.testing.assert_frame_equal(mine.drop(columns=num), theirs.drop(columns=num))
    for col in num:
        assert np.abs(mine[col].to_numpy(float) - theirs[col].to_numpy(float)).max() <= 1e-12, col


# ------------------------------------------------------------------------------------ Garden Path

def test_garden_path_study_file_gives_the_commands_trials(tmp_path):
    from simsubjects.studies.garden_path.design import build_trials as command_trials

    for names, seed in ((5, 0), (2, 7)):
        path = _file("garden_path", tmp_path / f"{names}-{seed}", ("per_item: 5 ", f"per_item: {names} "))
        study = load_study(path, seed=seed)  # as `collect STUDY.yaml --seed 7` gives it
        mine, _ = build_trials(study)
        theirs, _ = command_trials(names=names, seed=seed)
        assert len(theirs) == 48 * 2 * names
        pd.testing.assert_frame_equal(mine[theirs.columns], theirs)  # prompts, names, sentences: exactly


def test_garden_path_study_file_gives_the_commands_responses(smollm2, tmp_path, monkeypatch):
    from simsubjects.studies.garden_path import design as garden_path

    # the first 2 sentences only (keeps the test short): names are drawn sentence after sentence, so the
    # first sentences get the same names in the command and in the file (the trials test compares 5 per sentence)
    whole = garden_path.sentences
    monkeypatch.setattr(garden_path, "sentences", lambda set_="both": whole(set_).head(2))
    theirs = _command(smollm2, "garden_path", tmp_path / "cmd", names=1, set="both", seed=3)
    assert len(theirs) == 2 * 2 * 1 * 2  # sentences x versions x names x 2 options
    study = load_study(_file("garden_path", tmp_path, ("per_item: 5 ", "per_item: 1 ")), seed=3)
    study.items = study.items[:2]
    _same_table(_collect(smollm2, study, tmp_path / "file"), theirs)


# ------------------------------------------------------------------------------------ survey_bias

def test_survey_bias_study_file_gives_the_commands_trials():
    from simsubjects.studies.survey_bias.design import study_items

    for seed in (0, 3):  # the perturbations (typos, swaps) follow the seed
        study = load_study(BUILTIN / "survey_bias" / "study.yaml", seed=seed)  # as collect --seed gives it
        mine, items = build_trials(study)
        theirs, their_items = study_items(seed=seed)
        assert len(theirs) == 136
        pd.testing.assert_frame_equal(mine[theirs.columns], theirs)
        # the ordinal positions and refusals of each form reach the items table (the analyses read them)
        pos = items.set_index("item")["positions"].map(tuple)
        want = their_items.set_index("item")["positions"].map(tuple)
        assert all(np.allclose(pos[i], want[i], equal_nan=True) for i in want.index)
        assert items.set_index("item")["refusal"].map(tuple).equals(their_items.set_index("item")["refusal"])
        assert items.set_index("item")["texts"].map(tuple).equals(their_items.set_index("item")["options"])


def test_survey_bias_study_file_gives_the_commands_responses(smollm2, tmp_path, monkeypatch):
    from simsubjects.studies.survey_bias import design as survey_bias

    # two response-order questions (original and reversed forms) and their letter-swap forms: short, and
    # both the mapped-back labels and the seeded perturbations are compared
    whole = survey_bias.load_bundled_items

    def few(*a, **k):
        items = whole(*a, **k)
        keys = items.loc[items["bias"] == "response_order", "key"].unique()[:2]
        return items[(items["bias"] == "response_order") & items["key"].isin(keys)
                     & items["perturbation"].isin(["", "letter_swap"])].reset_index(drop=True)

    monkeypatch.setattr(survey_bias, "load_bundled_items", few)
    theirs = _command(smollm2, "survey_bias", tmp_path / "cmd", bias="response_order",
                      perturbation="letter_swap", seed=0)
    assert set(theirs["perturbation"]) == {"", "letter_swap"} and theirs["trial"].nunique() == 8
    study = load_study(BUILTIN / "survey_bias" / "study.yaml")  # its built-in table reads the same function
    mine = _collect(smollm2, study, tmp_path / "file")
    _same_table(mine, theirs)
    # reversed forms record the letter of the same option in the original order
    assert set(theirs.loc[theirs["item"].str.contains("response_order/.*/modified"), "response"]) <= set("ABCDEFG")


# ------------------------------------------------------------------------------------ MoCa moral

def test_moca_moral_study_file_gives_the_commands_trials_and_votes():
    from simsubjects.datasets.moca_humans import load_moca
    from simsubjects.studies.moca.design import study_items

    study = load_study(BUILTIN / "moca_moral" / "study.yaml")
    mine, _ = build_trials(study)
    theirs, _ = study_items(task="moral")
    assert len(theirs) == 62
    pd.testing.assert_frame_equal(mine[theirs.columns], theirs)
    human, _ = load_moca("moral")
    pd.testing.assert_frame_equal(study.human[human.columns].reset_index(drop=True), human.reset_index(drop=True))


def test_moca_moral_study_file_gives_the_commands_responses_with_votes(smollm2, tmp_path):
    theirs = _command(smollm2, "moca", tmp_path / "cmd", task="moral", stories=3, seed=0)
    assert set(theirs["source"]) == {"model", "human"}  # the command adds the 25 votes per story
    study = load_study(BUILTIN / "moca_moral" / "study.yaml")
    study.items = study.items[:3]  # --stories 3
    study.human = study.human[study.human["item"].isin([it.id for it in study.items])]
    _same_table(_collect(smollm2, study, tmp_path / "file"), theirs)


# ------------------------------------------------------------------------------------ replicate

TINY = """\
study: moca            # named like a built-in study: its run must still be reported as this file
title: "Two tiny yes/no questions"
citation: "A test of replicate with a study file"
items:
  - {id: sky, text: "Is the sky blue?"}
  - {id: fire, text: "Is fire cold?"}
response: yesno
design:
  factors: {frame: {levels: {plain: "", polite: "Please answer. "}, assignment: within}}
prompt: "${frame}Question: ${question} Answer Yes or No.\\nAnswer:"
analyses: [distribution]
"""


def test_replicate_analyze_export_report_a_study_file(smollm2, tmp_path, monkeypatch, capsys):
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", lambda *a, **k: smollm2)
    monkeypatch.setattr(models, "load_model", lambda *a, **k: smollm2)
    path = tmp_path / "tiny" / "study.yaml"
    path.parent.mkdir()
    path.write_text(TINY)
    out = tmp_path / "rep"
    assert main(["replicate", str(path), "--out", str(out), "-q", "--seed", "3"]) == 0, capsys.readouterr().err
    man = json.loads((out / "manifest.json").read_text())
    assert man["papers"] == [str(path)] and man["studies"][0]["status"] == "complete"
    assert man["command"].startswith(f"simsubjects replicate {path} ")
    run = json.loads((out / "moca" / "manifest.json").read_text())
    assert run["parameters"]["seed"] == 3 and run["parameters"]["studyfile"]["file"] == "study/study.yaml"
    r = pd.read_parquet(out / "moca" / "responses.parquet")
    assert len(r) == 2 * 2 * 2 and set(r["condition"]) == {"frame=plain", "frame=polite"}
    assert (out / "moca" / "export" / "responses.rds").is_file() and (out / "moca" / "export" / "responses.dta").is_file()
    html = (out / "report.html").read_text()
    # the file's own section: its title and analyses, not MoCa's paper tables
    assert "<h2>Two tiny yes/no questions</h2>" in html and "moca/analysis/distribution.csv" in html
    assert "Beside people and the paper" not in html and "Replication: A test of replicate with a study file" in html
    # analysis.R runs the study file's R twins (R/studyfile.R), never the built-in study's (issue 25), and
    # its tables agree with Python's
    script = (out / "analysis.R").read_text()
    assert 'replicate_study_file("moca"' in script and "replicate_moca(" not in script
    if shutil.which("Rscript"):
        res = subprocess.run(["Rscript", "analysis.R"], cwd=out, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0 and "check moca/distribution" in res.stdout, res.stdout[-2000:] + res.stderr[-2000:]
    # analyze, export and report on the study file's run folder, unchanged
    capsys.readouterr()
    assert main(["analyze", str(out / "moca"), "--no-plots"]) == 0
    assert "frame=polite" in capsys.readouterr().out  # the distribution by item x condition
    assert main(["export", str(out / "moca"), "--to", "csv"]) == 0
    assert main(["report", str(out / "moca")]) == 0
    single = (out / "moca" / "report.html").read_text()
    assert "Run report: Two tiny yes/no questions" in single and "Beside people and the paper" not in single
    # re-running resumes (every trial from the request cache); a paper and a file of the same study name clash
    assert main(["replicate", str(path), "--out", str(out), "-q", "--seed", "3"]) == 0
    assert main(["replicate", "nie2023", str(path), "--out", str(tmp_path / "both"), "-q"]) == 2
    assert "already in this replication" in capsys.readouterr().err and not (tmp_path / "both").exists()


# ------------------------------------------------------------------------------------ MoCa personas, both templates

def test_moca_personas_study_file_gives_the_commands_trials(tmp_path):
    from simsubjects.studies.moca.design import load_personas, study_items

    path = _file("moca_personas", tmp_path, ("    n: 25\n", "    n: 3\n"))
    study = load_study(path)
    study.items = study.items[:4]  # --stories 4
    mine, _ = build_trials(study)
    slugs = ",".join(load_personas()["slug"][:3])
    theirs, _ = study_items(task="causal", personas=slugs, stories=4, template="both")
    assert len(theirs) == 4 * 2 * 3 and set(theirs["template"]) == {"yesno", "ab"}
    pd.testing.assert_frame_equal(mine[theirs.columns], theirs)


def test_moca_personas_study_file_gives_the_commands_responses(smollm2, tmp_path):
    from simsubjects.studies.moca.design import load_personas

    slugs = ",".join(load_personas()["slug"][:1])
    theirs = _command(smollm2, "moca", tmp_path / "cmd", task="causal", personas=slugs, stories=1, template="both",
                      seed=0)
    study = load_study(_file("moca_personas", tmp_path, ("    n: 25\n", "    n: 1\n")))
    study.items = study.items[:1]
    study.human = study.human[study.human["item"] == study.items[0].id]
    mine = _collect(smollm2, study, tmp_path / "file")
    _same_table(mine, theirs)
    ab = mine[(mine["template"] == "ab") & (mine["source"] == "model")]
    assert set(ab["response"]) == {"Yes", "No"}  # " A" / " B" recorded as Yes / No


# ------------------------------------------------------------------------------------ format pieces, no model

def test_options_per_row_from_csv_and_parquet(tmp_path):
    """Options per row in CSV (JSON list or `a | b`) and parquet (lists): shown texts, recorded labels, positions."""
    rows = pd.DataFrame({"item": ["q1", "q2"], "question": ["Happy?", "Reversed?"],
                         "options": ['["Very", "Somewhat", "Don\'t know"]', "Not at all | Very"],
                         "labels": ['["A", "B", "C"]', "B | A"], "positions": ["[1, 2, null]", "2 | 1"],
                         "refusal": ["[false, false, true]", "false | false"]})
    yaml = ("study: forms\ntitle: Forms\nitems:\n  table: forms.{ext}\n  id: item\n  text: question\n"
            "  options: options\n  option_labels: labels\n  option_positions: positions\n  option_refusal: refusal\n"
            "  response: {type: choice}\nprompt: \"${question}\\n${options}\\nAnswer:\"\n")
    rows.to_csv(tmp_path / "forms.csv", index=False)
    as_lists = rows.assign(options=[["Very", "Somewhat", "Don't know"], ["Not at all", "Very"]],
                           labels=[["A", "B", "C"], ["B", "A"]], positions=[[1.0, 2.0, None], [2.0, 1.0]],
                           refusal=[[False, False, True], [False, False]])
    as_lists.to_parquet(tmp_path / "forms.parquet")
    for ext in ("csv", "parquet"):
        (tmp_path / f"{ext}.yaml").write_text(yaml.replace("{ext}", ext))
        trials, items = build_trials(load_study(tmp_path / f"{ext}.yaml"))
        assert trials["prompt"].tolist() == ["Happy?\nA. Very\nB. Somewhat\nC. Don't know\nAnswer:",
                                             "Reversed?\nA. Not at all\nB. Very\nAnswer:"]
        assert trials["labels"].tolist() == [("A", "B", "C"), ("B", "A")]
        assert trials["options"].tolist() == [(" A", " B", " C"), (" A", " B")]
        q1, q2 = items.set_index("item").loc["q1"], items.set_index("item").loc["q2"]
        assert list(q1["positions"][:2]) == [1.0, 2.0] and np.isnan(q1["positions"][2]) and list(q1["refusal"]) == [False, False, True]
        assert list(q2["texts"]) == ["Not at all", "Very"] and list(q2["positions"]) == [2.0, 1.0]


def test_factor_levels_in_identifiers_and_texts_in_prompts(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "study: ids\ntitle: Ids\ndesign:\n  factors: {frame: {levels: {gain: 'saved', loss: 'lost'}}}\n"
        "  trial_id: '${item}-${frame}'\n  condition: '${frame}'\n  columns: {shown: '${question}'}\n"
        "items:\n  - {id: q, text: 'People were ${frame}. Agree?', response: yesno}\nprompt: '${question}'\n")
    trials, _ = build_trials(load_study(tmp_path / "s.yaml"))
    assert trials["trial"].tolist() == ["q-gain", "q-loss"] and trials["condition"].tolist() == ["gain", "loss"]
    assert trials["prompt"].tolist() == ["People were saved. Agree?", "People were lost. Agree?"]
    assert trials["shown"].tolist() == trials["prompt"].tolist()


def test_replicate_dry_run_counts_a_study_file_as_collect_does(tmp_path, capsys):
    """`replicate STUDY.yaml --dry-run` plans the file's own design: the same figures as `collect STUDY.yaml --dry-run`."""
    path = tmp_path / "tiny" / "study.yaml"
    path.parent.mkdir()
    path.write_text(TINY)

    def figures(args):
        assert main([*args, "--model", "smollm2", "--dry-run", "--out", str(tmp_path / "never")]) == 0
        line = next(x for x in capsys.readouterr().out.splitlines() if x.split()[:1] == ["moca"])
        return line.split()[1:6]  # trials, requests, forwards, generations, prompt tokens

    assert figures(["replicate", str(path)]) == figures(["collect", str(path)])
    assert not (tmp_path / "never").exists()
