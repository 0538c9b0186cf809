"""`study import qualtrics`: every bundled sample survey imports, checks and dry-runs; response exports
become human rows counted independently from the CSV; a randomizer's per-arm human means equal a direct
computation; unconvertible elements are listed; bad files get one line and exit 2, nothing written.

Data: tests/data/qualtrics (SOURCE.md): QualtricsTools' sample surveys (BSD) and a framing-experiment
fixture written for these tests (experiment/make_experiment.py, CC0).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from simsubjects.cli.commands import main
from simsubjects.studyfile import load_study

DATA = Path(__file__).parent / "data" / "qualtrics"
EXP = DATA / "experiment"
SURVEYS = sorted(p for p in DATA.glob("*/*.qsf") if p.parent.name != "experiment")
EXPORTS = sorted(p for p in DATA.glob("*/*.csv") if p.parent.name != "experiment")


def _import(capsys, qsf: Path, out: Path, *extra) -> str:
    assert main(["study", "import", "qualtrics", str(qsf), str(out), *extra]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _direct(csv_path: Path) -> pd.DataFrame:
    """The export read directly with pandas: header rows below the names dropped (a legacy export's V1..V10
    are renamed from its second row)."""
    rows = list(csv.reader(open(csv_path, encoding="utf-8-sig")))
    head = rows[0]
    if head[0] == "V1":
        head = [rows[1][i] if h.startswith("V") and h[1:].isdigit() else h for i, h in enumerate(head)]
    rid = next(i for i, h in enumerate(head) if h in ("ResponseID", "ResponseId"))
    body = [r for r in rows[1:] if len(r) > rid and r[rid].startswith("R_")]
    return pd.DataFrame([(r + [""] * len(head))[:len(head)] for r in body], columns=head)


# ------------------------------------------------------------------------------ every sample survey

def test_corpus_covers_the_shared_samples():
    assert len(SURVEYS) == 15 and len(EXPORTS) >= 18


@pytest.mark.parametrize("qsf", SURVEYS, ids=lambda p: p.parent.name)
def test_sample_survey_imports_checks_and_dry_runs(qsf, tmp_path, capsys):
    out = _import(capsys, qsf, tmp_path / "bare")
    assert "not converted:" in out
    study = load_study(tmp_path / "bare" / "study.yaml")
    assert study.human is None and len(study.items) > 0
    assert main(["study", "check", str(tmp_path / "bare" / "study.yaml")]) == 0
    assert "valid" in capsys.readouterr().out
    assert main(["study", "check", str(tmp_path / "bare" / "session.yaml")]) == 0  # the survey as a session
    assert "valid (a session)" in capsys.readouterr().out
    for export in sorted(qsf.parent.glob("*.csv")):
        dest = tmp_path / export.stem
        _import(capsys, qsf, dest, "--responses", str(export))
        assert main(["study", "check", str(dest / "study.yaml")]) == 0
        capsys.readouterr()
    run = tmp_path / "dry"
    assert main(["collect", str(tmp_path / "bare" / "study.yaml"), "--model", "smollm2", "--dry-run",
                 "--out", str(run)]) == 0
    assert "dry run" in capsys.readouterr().out and not run.exists()
    # the survey as a session dry-runs too: counted by the tokenizer, nothing written
    assert main(["collect", str(tmp_path / "bare" / "session.yaml"), "--model", "smollm2", "--dry-run",
                 "--out", str(run)]) == 0
    assert "dry run" in capsys.readouterr().out and not run.exists()


def _legacy_export(qsf: Path) -> Path | None:
    """The export whose column names are the export tags (legacy, or Qualtrics' plain CSV)."""
    for p in sorted(qsf.parent.glob("*.csv")):
        if "Insights" not in p.name:
            return p
    return None


@pytest.mark.parametrize("qsf", [q for q in SURVEYS if _legacy_export(q)], ids=lambda p: p.parent.name)
def test_human_rows_count_equals_a_direct_count_of_the_csv(qsf, tmp_path, capsys):
    """Unit: respondent x item. Choice and number items: one row per non-empty cell of the item's column;
    check-all items: 'Yes' rows = selected cells; respondents = the export's rows."""
    export = _legacy_export(qsf)
    _import(capsys, qsf, tmp_path / "s", "--responses", str(export))
    study = load_study(tmp_path / "s" / "study.yaml")
    direct = _direct(export)
    code = pd.read_csv(tmp_path / "s" / "codebook.csv", keep_default_na=False).drop_duplicates("item")
    kind = dict(zip(code["item"], code["kind"]))
    human = study.human if study.human is not None else pd.DataFrame(columns=["item", "response", "subject"])
    assert human["subject"].nunique() <= len(direct)
    checked = 0
    for item, k in kind.items():
        if item not in direct.columns:
            continue
        cells = direct[item].str.strip()
        rows = human[human["item"] == item]
        if k in ("choice", "estimate"):
            assert len(rows) == int(((cells != "") & (cells != "-99")).sum()), item
            checked += 1
        elif k == "yesno":
            assert int((rows["response"] == "Yes").sum()) == int(((cells != "") & (cells != "0")).sum()), item
            checked += 1
    assert checked > 0
    notes = (tmp_path / "s" / "IMPORT_NOTES.md").read_text()
    assert f"{len(direct)} respondents imported" in notes


def test_insights_and_legacy_exports_give_the_same_rows(tmp_path, capsys):
    """The same responses exported with three header rows (ImportIds) and with two (V1..V10) agree."""
    pairs = [(q, sorted(q.parent.glob("*Insights.csv")), sorted(q.parent.glob("*Legacy.csv")) or
              [p for p in q.parent.glob("*.csv") if "Insights" not in p.name]) for q in SURVEYS
]
    n = 0
    for qsf, ins, leg in pairs:
        if not ins or not leg:
            continue
        _import(capsys, qsf, tmp_path / f"i{n}", "--responses", str(ins[0]))
        _import(capsys, qsf, tmp_path / f"l{n}", "--responses", str(leg[0]))
        a = pd.read_csv(tmp_path / f"i{n}" / "human.csv", dtype=str).sort_values(["respondent", "item"])
        b = pd.read_csv(tmp_path / f"l{n}" / "human.csv", dtype=str).sort_values(["respondent", "item"])
        # the legacy export of one survey lacks columns added later (listed as "no column" in the notes)
        common = set(a["respondent"]) & set(b["respondent"])
        items = set(a["item"]) & set(b["item"])
        # check-all 'No' rows depend on which of a question's columns an export holds: compared are the
        # answers and the selections ('Yes')
        a, b = (x[x["respondent"].isin(common) & x["item"].isin(items) & (x["response"] != "No")].reset_index(drop=True)
                for x in (a, b))
        if len(common):
            pd.testing.assert_frame_equal(a, b)
            n += 1
    assert n >= 4


# ------------------------------------------------------------------------------ the framing experiment

EXPECTED_NOTES = {("QID7", "choice randomization"), ("QID8", "JavaScript"), ("QID9", "rank order"),
                  ("QID10", "text entry"), ("QID12", "timing"), ("QID13", "trash"), ("FL_6", "embedded data"),
                  ("FL_8", "EndSurvey"), ("QO_1", "quotas"), ("QID7", "exclusive")}


def test_carry_forward_choices_are_the_source_questions(tmp_path, capsys):
    d = json.loads((EXP / "framing_experiment.qsf").read_text())
    d["SurveyElements"].append({"Element": "SQ", "PrimaryAttribute": "QID15", "Payload": {
        "QuestionID": "QID15", "DataExportTag": "most", "QuestionType": "MC", "Selector": "SAVR", "SubSelector": "TX",
        "QuestionText": "Whom do you trust most?", "Choices": {}, "ChoiceOrder": [],
        "DynamicChoices": {"Locator": "q://QID7/ChoiceGroup/SelectedChoices", "Type": "ChoiceGroup"}}})
    next(e for e in d["SurveyElements"] if e["Element"] == "BL")["Payload"][3]["BlockElements"].append(
        {"Type": "Question", "QuestionID": "QID15"})
    qsf = tmp_path / "cf.qsf"
    qsf.write_text(json.dumps(d))
    out = _import(capsys, qsf, tmp_path / "s")
    most = next(it for it in load_study(tmp_path / "s" / "study.yaml").items if it.id == "most")
    assert [o.label for o in most.response.options] == ["Doctors", "The government", "The news", "None of these"]
    assert "QID15  MC/SAVR/TX: carry-forward choices (q://QID7/ChoiceGroup/SelectedChoices)" in out


def test_a_long_choice_list_is_scored_by_its_texts(tmp_path, capsys):
    d = json.loads((EXP / "framing_experiment.qsf").read_text())
    q = next(e for e in d["SurveyElements"] if e.get("PrimaryAttribute") == "QID1")["Payload"]
    q["Choices"] = {str(i): {"Display": f"State {i}"} for i in range(1, 41)}
    q["ChoiceOrder"] = [str(i) for i in range(1, 41)]
    qsf = tmp_path / "long.qsf"
    qsf.write_text(json.dumps(d))
    _import(capsys, qsf, tmp_path / "s")
    age = next(it for it in load_study(tmp_path / "s" / "study.yaml").items if it.id == "age")
    assert len(age.response.options) == 40 and age.response.style == "words"


def test_ambiguous_legacy_columns_are_listed_not_guessed(tmp_path, capsys):
    """The legacy export of this survey names two matrices' cells alike (question_one_1, from their shared
    choice export tags); only the ImportIds of the three-row export tell them apart."""
    d = DATA / "Multiple_Answer_Matrix_Questions"
    out = _import(capsys, d / "Multiple_Answer_Matrix_Questions.qsf", tmp_path / "s", "--responses",
                  str(d / "Multiple_Answer_Matrix_Questions.csv"))
    assert "column 'question_one_1' of the export could be item" in out
    human = pd.read_csv(tmp_path / "s" / "human.csv")
    assert not human["item"].str.endswith("question_one_1").any()


def test_experiment_unsupported_elements_listed_on_screen_and_in_notes(tmp_path, capsys):
    out = _import(capsys, EXP / "framing_experiment.qsf", tmp_path / "s", "--responses",
                  str(EXP / "framing_experiment.csv"))
    notes = (tmp_path / "s" / "IMPORT_NOTES.md").read_text().replace("\\", "")
    for qid, word in EXPECTED_NOTES:
        assert any(qid in line and word.lower() in line.lower() for line in out.splitlines()), (qid, word)
        assert any(qid in line and word.lower() in line.lower() for line in notes.splitlines()), (qid, word)
    assert "q://QID3/ChoiceGroup/SelectedChoices" in out and "e://Field/panel" in notes
    # piped text is shown as a marker, entities decoded, HTML stripped
    study = load_study(tmp_path / "s" / "study.yaml")
    texts = {it.id: it for it in study.items}
    assert "[piped: q://QID3/ChoiceGroup/SelectedChoices]" in texts["why"].text
    assert [o.label for o in texts["age"].response.options] == ["18–34", "35–54", "55 or older"]
    assert "200 of the 600 people at risk will be saved." in texts["support_gain"].text
    # the arm's vignette is its own block's context only: the later block's questions are asked without it
    assert texts["support_loss"].text.startswith("A new vaccination program is proposed. If it is adopted, 400")
    assert not texts["rate_1"].text_by and "vaccination program" not in texts["rate_1"].text
    assert [o.refusal for o in texts["rate_2"].response.options] == [False] * 4 + [True]
    assert texts["support_gain"].attributes["randomizer_fl_3"] == "gain_frame"
    # the unmatched answer (rate_1 = 7) is listed, not dropped silently
    assert "R_fix013x rate_1 = '7'" in out and "R_fix013x" in notes
    # unfinished and preview are counted; --finished-only drops them
    assert "kept 1 unfinished and 1 preview" in out
    out2 = _import(capsys, EXP / "framing_experiment.qsf", tmp_path / "f", "--responses",
                   str(EXP / "framing_experiment.csv"), "--finished-only")
    assert "dropped 1 unfinished, 1 preview" in out2
    assert load_study(tmp_path / "f" / "study.yaml").human["subject"].nunique() == 22


def _human(tmp_path, capsys, export: Path, name: str) -> pd.DataFrame:
    _import(capsys, EXP / "framing_experiment.qsf", tmp_path / name, "--responses", str(export), "--finished-only")
    return pd.read_csv(tmp_path / name / "human.csv", dtype=str, keep_default_na=False).sort_values(
        ["respondent", "item"]).reset_index(drop=True)


def _embedded_randomizer(tmp_path) -> tuple[Path, Path]:
    """The fixture in Qualtrics' other experiment pattern: the randomizer sets embedded data `frame` to gain or
    loss, and a branch on it shows each arm its block; the export holds `frame` instead of FL_3_DO."""
    d = json.loads((EXP / "framing_experiment.qsf").read_text())
    flow = next(e for e in d["SurveyElements"] if e["Element"] == "FL")["Payload"]["Flow"]
    i = next(k for k, f in enumerate(flow) if f["Type"] == "BlockRandomizer")

    def branch(value, block, fid):
        return {"Type": "Branch", "FlowID": fid, "Flow": [{"Type": "Standard", "ID": block, "FlowID": fid + "b"}],
                "BranchLogic": {"0": {"0": {"LogicType": "EmbeddedField", "LeftOperand": "frame", "Operator": "EqualTo",
                                            "RightOperand": value, "Type": "Expression",
                                            "Description": f"If frame Is Equal to {value}"}, "Type": "If"},
                                "Type": "BooleanExpression"}}
    flow[i:i + 1] = [{"Type": "BlockRandomizer", "FlowID": "FL_3", "SubSet": 1, "EvenPresentation": True,
                      "Flow": [{"Type": "EmbeddedData", "FlowID": f"FL_3{v[0]}", "EmbeddedData": [
                          {"Description": "frame", "Type": "Custom", "Field": "frame", "Value": v}]}
                          for v in ("gain", "loss")]},
                     branch("gain", "BL_gain", "FL_20"), branch("loss", "BL_loss", "FL_21")]
    qsf = tmp_path / "embedded_randomizer.qsf"
    qsf.write_text(json.dumps(d))
    rows = list(csv.reader(open(EXP / "framing_experiment.csv", encoding="utf-8-sig")))
    do = rows[0].index("FL_3_DO")
    out = [[*rows[0][:do], "frame"], [*rows[1][:do], "frame"], [*rows[2][:do], '{"ImportId": "frame"}']]
    out += [[*r[:do], "gain" if r[do].startswith("BL_gain") else "loss"] for r in rows[3:]]
    export = tmp_path / "embedded_randomizer.csv"
    with open(export, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(out)
    return qsf, export


def test_embedded_data_randomizer_with_branches_is_the_same_experiment(tmp_path, capsys):
    qsf, export = _embedded_randomizer(tmp_path)
    out = _import(capsys, qsf, tmp_path / "e", "--responses", str(export), "--finished-only")
    assert "randomizers: frame" in out and "FL_20" not in out  # the branches became the arms
    study = load_study(tmp_path / "e" / "study.yaml")
    assert study.factor("frame").levels.keys() == {"gain", "loss"}
    items = {it.id: it for it in study.items}
    assert items["support_gain"].attributes["frame"] == "gain" and items["support_loss"].attributes["frame"] == "loss"
    assert items["support_loss"].text.startswith("A new vaccination program is proposed. If it is adopted, 400")
    assert not items["rate_1"].text_by
    got = pd.read_csv(tmp_path / "e" / "human.csv", dtype=str, keep_default_na=False)
    base = _human(tmp_path, capsys, EXP / "framing_experiment.csv", "do")
    arms = {"gain_frame": "gain", "loss_frame": "loss"}
    assert list(got.sort_values(["respondent", "item"])["frame"]) == list(base["randomizer_fl_3"].map(arms))
    pd.testing.assert_frame_equal(got.sort_values(["respondent", "item"])[["respondent", "item", "response"]]
                                  .reset_index(drop=True), base[["respondent", "item", "response"]])
    import yaml

    sess = yaml.safe_load((tmp_path / "e" / "session.yaml").read_text())
    shown = {it["id"]: it.get("show_if") for b in sess["session"]["blocks"] for it in b["items"]}
    assert shown["support_gain"] == "frame == 'gain'" and shown["support_loss"] == "frame == 'loss'"


def test_every_export_layout_gives_the_same_human_rows(tmp_path, capsys):
    """Three header rows with recode values; two header rows with choice texts; one header row (a cleaned
    export); SPSS .sav with value labels."""
    rows = list(csv.reader(open(EXP / "framing_experiment.csv", encoding="utf-8-sig")))
    one = tmp_path / "one_header.csv"
    with open(one, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([rows[0], *rows[3:]])
    rid = rows[0].index("ResponseId")
    ids = {r[rid]: f"person{i}" for i, r in enumerate(rows[3:])}
    renamed = tmp_path / "renamed_ids.csv"  # a cleaned export whose ids are no longer R_...
    with open(renamed, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([rows[0], *[[ids[c] if j == rid else c for j, c in enumerate(r)] for r in rows[3:]]])
    base = _human(tmp_path, capsys, EXP / "framing_experiment.csv", "three")
    assert len(base) > 200
    got = _human(tmp_path, capsys, renamed, "renamed")
    got["respondent"] = got["respondent"].map({v: k for k, v in ids.items()})
    pd.testing.assert_frame_equal(got.sort_values(["respondent", "item"]).reset_index(drop=True), base, obj="renamed")
    for export, name in ((EXP / "framing_experiment_text.csv", "text"), (one, "one"),
                         (EXP / "framing_experiment.sav", "sav")):
        pd.testing.assert_frame_equal(_human(tmp_path, capsys, export, name), base, obj=name)


def _direct_arm_means(item: str) -> dict[str, float]:
    """Per-arm mean of the item's recode values straight from the CSV: finished, non-preview respondents,
    the arm = the first block in FL_3_DO, refusals (negative recodes) and out-of-scale answers left out."""
    d = _direct(EXP / "framing_experiment.csv")
    d = d[(d["Finished"] == "1") & (d["Status"] != "1")]
    arm = d["FL_3_DO"].str.split("|").str[0].map({"BL_gain": "gain_frame", "BL_loss": "loss_frame"})
    x = pd.to_numeric(d[item], errors="coerce")
    ok = x.isin([1, 2, 3, 4, 5]) if item.startswith("support") else x.isin([1, 2, 3, 4])
    return {lv: float(x[ok & (arm == lv)].sum() / (ok & (arm == lv)).sum()) for lv in ("gain_frame", "loss_frame")}


def test_experiment_on_the_embedded_model_per_arm_means_and_report(smollm2, tmp_path, capsys, monkeypatch):
    """Unit: respondent (people) and subject (model). The randomizer is a between-subject factor; the human
    per-arm means of the analysis equal the direct computation from the CSV to 1e-12."""
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", lambda *a, **k: smollm2)
    monkeypatch.setattr(models, "load_model", lambda *a, **k: smollm2)
    study_dir, run = tmp_path / "s", tmp_path / "run"
    # four of the respondents' profiles as model subjects (two per arm: the model's arms are compared too)
    _import(capsys, EXP / "framing_experiment.qsf", study_dir, "--responses", str(EXP / "framing_experiment.csv"),
            "--finished-only", "--demographics", "age", "--subjects", "4")
    # the text entry's answers are judged, not read: 12 generated tokens instead of the import's 48 (decoding
    # is most of this test's model time); the edit is one a user makes in study.yaml
    yaml_path = study_dir / "study.yaml"
    assert yaml_path.read_text().count("max_tokens: 48") == 1
    yaml_path.write_text(yaml_path.read_text().replace("max_tokens: 48", "max_tokens: 12"))
    assert main(["collect", str(yaml_path), "--out", str(run), "-q"]) == 0
    # `report` analyzes the run (a study file's analysis is always computed: simsubjects.publish.analysis) and
    # writes the tables read below, as `analyze` would; `analyze` itself is tested on study files in test_studyfile
    assert main(["report", str(run)]) == 0
    capsys.readouterr()
    trials = pd.read_csv(run / "analysis" / "trials.csv")
    by = trials.dropna(subset=["score"]).groupby(["source", "item", "randomizer_fl_3"])["score"].mean()
    for item in ("rate_1", "rate_2"):
        direct = _direct_arm_means(item)
        for lv, mean in direct.items():
            assert math.isclose(by[("human", item, lv)], mean, rel_tol=0, abs_tol=1e-12), (item, lv)
            assert ("model", item, lv) in by.index  # the model answered in both arms
    tests = pd.read_csv(run / "analysis" / "tests.csv")
    h = tests[(tests["source"] == "human") & (tests["item"] == "rate_1") & (tests["test"] == "Welch two-sample t-test")
              & (tests["contrast"] == "randomizer_fl_3: gain_frame - loss_frame")].iloc[0]
    d = _direct_arm_means("rate_1")
    assert math.isclose(h["estimate"], d["gain_frame"] - d["loss_frame"], abs_tol=1e-12)
    m = tests[(tests["source"] == "model") & (tests["item"] == "rate_1") & (tests["test"] == "Welch two-sample t-test")]
    assert len(m) == 1 and m.iloc[0]["n"] == 4  # unit: the model subject, two per arm
    shares = pd.read_csv(run / "analysis" / "selection_shares.csv")
    assert set(shares["source"]) == {"model", "human"} and set(shares["item"]) == {f"trust_{k}" for k in range(1, 5)}
    direct = _direct(EXP / "framing_experiment.csv")
    direct = direct[(direct["Finished"] == "1") & (direct["Status"] != "1")]
    h1 = shares[(shares["source"] == "human") & (shares["item"] == "trust_1")]
    assert h1["n"].sum() == len(direct)  # every finished respondent answered the check-all question
    assert math.isclose((h1["estimate"] * h1["n"]).sum(), (direct["trust_1"] == "1").sum(), abs_tol=1e-9)
    means = pd.read_csv(run / "analysis" / "numeric_means.csv")
    assert {"likely_1", "household"} <= set(means.loc[means["source"] == "human", "item"])
    by_group = pd.read_csv(run / "analysis" / "representativeness_by_group.csv")
    assert set(by_group["age"]) <= {"18–34", "35–54", "55 or older"} and len(by_group)
    # each kind ran on the model and is analyzed: check-all, matrix, slider, rank (first), text entry
    dist = pd.read_csv(run / "analysis" / "distribution.csv")
    model_items = set(dist.loc[dist["source"] == "model", "item"])
    assert {"trust_1", "rate_1", "concerns_first", "why"} <= model_items
    est = pd.read_csv(run / "analysis" / "estimates.csv")
    assert {"likely_1", "household"} <= set(est.loc[est["source"] == "model", "item"])
    assert set(dist.loc[(dist["source"] == "human") & (dist["item"] == "rate_1"), "condition"]) == {
        "randomizer_fl_3=gain_frame", "randomizer_fl_3=loss_frame"}
    html = (run / "report.html").read_text()
    for arm in ("randomizer_fl_3=gain_frame", "randomizer_fl_3=loss_frame"):
        assert arm in html
    assert "qualtrics" in html and "smollm2" in html


def test_demographics_become_group_columns_and_personas(tmp_path, capsys):
    _import(capsys, EXP / "framing_experiment.qsf", tmp_path / "s", "--responses", str(EXP / "framing_experiment.csv"),
            "--finished-only", "--demographics", "age")
    study = load_study(tmp_path / "s" / "study.yaml")
    d = _direct(EXP / "framing_experiment.csv")
    d = d[(d["Finished"] == "1") & (d["Status"] != "1") & (d["age"] != "")]
    ages = {"1": "18–34", "2": "35–54", "3": "55 or older"}
    assert list(study.subjects["respondent"]) == list(d["ResponseId"])  # every respondent with an age, in order
    assert list(study.subjects["age"]) == [ages[a] for a in d["age"]]
    assert dict(zip(study.human["subject"], study.human["age"])) == dict(zip(d["ResponseId"], d["age"].map(ages)))
    first = study.subjects.iloc[0]
    assert first["persona"] == f"You are a survey respondent. What is your age? {first['age']}."
    assert [a.get("name") for a in study.analyses if a["type"] == "representativeness"] == [
        "representativeness", "representativeness_by_group"]
    for bad, msg in ((["--demographics", "agee"], "--demographics agee: not an item"),
                     (["--demographics", "likely_1"], "a single-answer question")):
        assert main(["study", "import", "qualtrics", str(EXP / "framing_experiment.qsf"), str(tmp_path / "x"),
                     "--responses", str(EXP / "framing_experiment.csv"), *bad]) == 2
        assert msg in capsys.readouterr().err and not (tmp_path / "x").exists()


# ------------------------------------------------------------------------------ the session

SAMPLE_NOTES = {
    "Survey_Logic": [("FL_3", "Branch"), ("FL_8", "Branch"), ("FL_6", "BlockRandomizer"), ("FL_7", "WebService"),
                     ("FL_5", "shown again"), ("QID1", "skip logic"), ("QID2", "display logic"),
                     ("QID5", "display logic on choices")],
    "Many_Different_Question_Types": [("QID25", "TE/PW"), ("QID11#1", "TE/Long"), ("QID10", "trash"),
                                      ("QID36", "display logic"), ("QID18", "text entry")],
    "User_Notes_Survey": [("NT_0iYWubeMrKdumON", "Notes"), ("NT_8GujHEW0bcBqoGV", "Notes")],
    "Sample_Survey": [("QID5", "exclusive option(s) 'None of the above'"), ("QID8", "1 scale point"),
                      ("QID7", "trash")],
}


@pytest.mark.parametrize("name", sorted(SAMPLE_NOTES))
def test_sample_survey_unconverted_elements_listed(name, tmp_path, capsys):
    qsf = next((DATA / name).glob("*.qsf"))
    out = _import(capsys, qsf, tmp_path / "s")
    notes = (tmp_path / "s" / "IMPORT_NOTES.md").read_text().replace("\\", "")
    for qid, word in SAMPLE_NOTES[name]:
        assert any(line.strip().startswith(qid) and word in line for line in out.splitlines()), (qid, word)
        assert any(f"| {qid} |" in line and word in line for line in notes.splitlines()), (qid, word)


def _session(tmp_path, capsys, qsf: Path) -> dict:
    import yaml

    _import(capsys, qsf, tmp_path / "s")
    data = yaml.safe_load((tmp_path / "s" / "session.yaml").read_text())
    return {it["id"]: it for b in data["session"]["blocks"] for it in b["items"]}


def _walk(items: dict, answers: dict, persona: dict | None = None) -> list[str]:
    """The items a subject is shown, in order, by the sessions' own expression evaluator: an item whose
    show_if holds is answered with `answers[item]`; a hidden item has no answer (reading it is an error)."""
    from simsubjects.studyfile import expr as X

    env, shown = dict(persona or {}), []
    for iid, it in items.items():
        if "show_if" in it and not X.evaluate(X.parse(it["show_if"]), env):
            continue
        shown.append(iid)
        env[iid] = answers[iid]
    return shown


def test_skip_and_display_logic_become_show_if(tmp_path, capsys):
    """Survey_Logic: Q1 = Choice 1 skips to the end of the block; Q2 = Choice 1 skips to Q4; Q3 = Choice 2
    ends the survey. Every answer path of the session shows what Qualtrics shows, and no show_if reads an
    answer that was not given (a skipped item has none)."""
    import itertools

    items = _session(tmp_path, capsys, DATA / "Survey_Logic" / "Survey_Logic_EVERYWHERE.qsf")
    labels = {iid: [o["label"] for o in it["response"]["options"]] for iid, it in items.items()}
    c = "Click to write Choice {}".format
    for a1, a2, a3 in itertools.product(labels["Q1"], labels["Q2"], labels["Q3"]):
        answers = {iid: opts[0] for iid, opts in labels.items()} | {"Q1": a1, "Q2": a2, "Q3": a3}
        expect = ["Q1"]
        if a1 != c(1):
            expect.append("Q2")
            if a2 != c(1):
                expect.append("Q3")
            if a2 == c(1) or a3 != c(2):
                expect += ["Q4", "Q5_1", "Q5_2", "Q5_3"]
        assert _walk(items, answers) == expect, (a1, a2, a3)
    notes = (tmp_path / "s" / "IMPORT_NOTES.md").read_text().replace("\\", "")
    assert "QID2 | MC/SAVR/TX | Q2: display logic not converted (operator Displayed" in notes


def test_rank_question_is_sequential_choices_with_every_ranking_reachable(tmp_path, capsys):
    """Four options: the first rank from 4, the second from the 3 left (4 items), the third from the 2 left
    (6 items); every one of the 24 rankings is one path, and the path shows exactly its three choices."""
    import itertools

    d = json.loads((EXP / "framing_experiment.qsf").read_text())
    q = next(e for e in d["SurveyElements"] if e.get("PrimaryAttribute") == "QID9")["Payload"]
    q["Choices"]["4"] = {"Display": "Trust"}
    q["ChoiceOrder"].append("4")
    qsf = tmp_path / "rank4.qsf"
    qsf.write_text(json.dumps(d))
    items = _session(tmp_path, capsys, qsf)
    ranks = [i for i in items if i.startswith("concerns_first")]
    assert len(ranks) == 1 + 4 + 6
    labels = ["Safety", "Cost", "Time", "Trust"]
    cid = dict(zip(labels, "1234"))
    base = {iid: it["response"]["options"][0]["label"] if isinstance(it["response"], dict) else "No"
            for iid, it in items.items()}
    for order in itertools.permutations(labels):
        answers = dict(base, concerns_first=order[0])
        for j in (1, 2):
            answers["concerns_first_after_" + "_".join(sorted(cid[x] for x in order[:j]))] = order[j]
        shown = [i for i in _walk(items, answers, {"randomizer_fl_3": "gain_frame"}) if i.startswith("concerns_first")]
        assert [answers[i] for i in shown] == list(order[:3]), order
        for i in shown[1:]:  # each choice is among the options left
            assert answers[i] in [o["label"] for o in items[i]["response"]["options"]]


def test_randomizer_arm_is_a_subjects_column_the_arm_blocks_are_shown_on(tmp_path, capsys):
    items = _session(tmp_path, capsys, EXP / "framing_experiment.qsf")
    assert items["support_gain"]["show_if"] == "randomizer_fl_3 == 'gain_frame'"
    assert items["support_loss"]["show_if"] == "randomizer_fl_3 == 'loss_frame'"
    assert "show_if" not in items["rate_1"] and "likely_1" not in items  # numbers stay in study.yaml
    assert items["flu"]["show_if"] == "age == '55 or older'"
    # the rank question as sequential choices: the second rank from the two options left after the first
    assert items["concerns_first_after_1"]["show_if"] == "(concerns_first == 'Safety')"
    assert [o["label"] for o in items["concerns_first_after_1"]["response"]["options"]] == ["Cost", "Time"]
    assert not any(i.startswith("concerns_first_after_") and i.count("_") > 3 for i in items)  # 3 options: 2 ranks
    # 'None of these' clears the other check-all options: asked only when none of them was selected
    assert items["trust_4"]["show_if"] == "(trust_1 == 'No') and (trust_2 == 'No') and (trust_3 == 'No')"  # the branch to the block for older respondents
    subjects = pd.read_csv(tmp_path / "s" / "subjects.csv")
    assert list(subjects["randomizer_fl_3"]) == ["gain_frame", "loss_frame"]


def test_session_runs_on_the_embedded_model_each_subject_in_its_arm(smollm2, tmp_path, capsys, monkeypatch):
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", lambda *a, **k: smollm2)
    monkeypatch.setattr(models, "load_model", lambda *a, **k: smollm2)
    _import(capsys, EXP / "framing_experiment.qsf", tmp_path / "s")
    run = tmp_path / "run"
    assert main(["collect", str(tmp_path / "s" / "session.yaml"), "--out", str(run), "-q"]) == 0
    r = pd.read_parquet(run / "responses.parquet")
    asked = {s: set(g["item"]) for s, g in r[r["source"] == "model"].groupby("subject")}
    arm = dict(pd.read_csv(tmp_path / "s" / "subjects.csv").values)
    for subject, items in asked.items():
        mine, other = ("support_gain", "support_loss")[::1 if arm[subject] == "gain_frame" else -1]
        assert mine in items and other not in items, subject
        assert {"age", "rate_1", "concerns_first"} <= items
        assert len([i for i in items if i.startswith("concerns_first_after_")]) == 1  # the second rank, once
    assert set(asked) == {"s1", "s2"}


def test_killed_import_leaves_no_folder_and_the_next_import_cleans_up(tmp_path, capsys):
    """SIGKILL while the folder is being written (held at its final check): the destination is absent, and
    the next import into it removes the temporary folder and succeeds."""
    import os
    import signal
    import subprocess
    import sys
    import time

    dest = tmp_path / "out"
    code = ("import time, simsubjects.studyfile.spec as spec\n"
            "spec.load_study = lambda *a, **k: time.sleep(600)\n"
            "from simsubjects.studyfile.qualtrics.write import import_qualtrics\n"
            f"import_qualtrics({str(EXP / 'framing_experiment.qsf')!r}, {str(dest)!r})\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    try:
        deadline = time.time() + 120
        while not list(tmp_path.glob(".out.tmp-*/codebook.csv")) and time.time() < deadline:
            time.sleep(0.1)
        assert list(tmp_path.glob(".out.tmp-*/codebook.csv")), "the import did not start writing"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert not dest.exists()
    _import(capsys, EXP / "framing_experiment.qsf", dest)
    assert (dest / "study.yaml").is_file() and not list(tmp_path.glob(".out.tmp-*"))


# ------------------------------------------------------------------------------ bad files

def _bad_surveys() -> dict[str, bytes]:
    good = json.loads((EXP / "framing_experiment.qsf").read_text())
    text = json.dumps(good).encode()

    def edit(fn):
        d = json.loads(text)
        fn(d)
        return json.dumps(d).encode()

    def elements(d, code):
        return [e for e in d["SurveyElements"] if e["Element"] == code]

    return {
        "empty": b"",
        "whitespace": b"  \n\n",
        "latin1": "café".encode("latin-1") + b"\xff",
        "not_json": b"Survey name: framing\nQuestions: 3\n",
        "truncated_half": text[: len(text) // 2],
        "truncated_end": text[:-3],
        "json_list": b"[1, 2, 3]",
        "no_elements": edit(lambda d: d.pop("SurveyElements")),
        "no_entry": edit(lambda d: d.pop("SurveyEntry")),
        "elements_empty": edit(lambda d: d.update(SurveyElements=[])),
        "element_no_payload": edit(lambda d: d["SurveyElements"][3].pop("Payload")),
        "no_flow": edit(lambda d: d.update(SurveyElements=[e for e in d["SurveyElements"] if e["Element"] != "FL"])),
        "no_blocks": edit(lambda d: d.update(SurveyElements=[e for e in d["SurveyElements"] if e["Element"] != "BL"])),
        "flow_unknown_block": edit(lambda d: elements(d, "FL")[0]["Payload"]["Flow"][0].update(ID="BL_gone")),
        "block_unknown_question": edit(lambda d: d.update(SurveyElements=[
            e for e in d["SurveyElements"] if e.get("PrimaryAttribute") != "QID6"])),
        "question_no_type": edit(lambda d: elements(d, "SQ")[0]["Payload"].pop("QuestionType")),
        "duplicate_question": edit(lambda d: d["SurveyElements"].append(elements(d, "SQ")[0])),
        "choices_not_object": edit(lambda d: elements(d, "SQ")[0]["Payload"].update(Choices="Yes,No")),
        "csv_as_survey": (EXP / "framing_experiment.csv").read_bytes(),
        "flow_without_list": edit(lambda d: elements(d, "FL")[0]["Payload"].pop("Flow")),
    }


BAD = _bad_surveys()


def test_bad_file_corpus_is_large():
    assert len(BAD) >= 15


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_survey_one_line_exit_2_nothing_written(name, tmp_path, capsys):
    path = tmp_path / f"{name}.qsf"
    path.write_bytes(BAD[name])
    out = tmp_path / "out"
    assert main(["study", "import", "qualtrics", str(path), str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{name}.qsf" in err, err
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize("case", ["missing", "unknown_type", "no_response_id", "header_only", "empty", "folder",
                                  "dest_not_empty", "bad_sav"])
def test_bad_responses_and_destination_one_line_exit_2(case, tmp_path, capsys):
    qsf, out = EXP / "framing_experiment.qsf", tmp_path / "out"
    resp = tmp_path / "r.csv"
    rows = list(csv.reader(open(EXP / "framing_experiment.csv", encoding="utf-8-sig")))
    if case == "unknown_type":
        resp = tmp_path / "r.json"
        resp.write_text("{}")
    elif case == "no_response_id":
        resp.write_text("a,b\n1,2\n")
    elif case == "header_only":
        resp.write_text("\n".join(",".join(r) for r in rows[:3]))
    elif case == "empty":
        resp.write_text("")
    elif case == "folder":
        resp = tmp_path / "dir.csv"
        resp.mkdir()
    elif case == "dest_not_empty":
        resp = EXP / "framing_experiment.csv"
        out.mkdir()
        (out / "keep.txt").write_text("mine")
    elif case == "bad_sav":
        resp = tmp_path / "r.sav"
        resp.write_bytes(b"not an spss file")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["study", "import", "qualtrics", str(qsf), str(out), "--responses", str(resp)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    if case == "dest_not_empty":
        assert [p.name for p in out.iterdir()] == ["keep.txt"]
    else:
        assert not out.exists()
