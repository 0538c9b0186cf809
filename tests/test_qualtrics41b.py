"""Issue 41, item 11 (last part): a 2 x 2 built as one block per cell under one randomizer, its design declared
only by the blocks' names (Gain_Low, Gain_High, Loss_Low, Loss_High). With --merge-arms the four-level arm
factor still assigns subjects and picks the texts, and each crossed factor is a column of the people's rows
and of the model's (design.columns by the arm's level) with its own welch and chi_square tests."""

from __future__ import annotations

import copy
import csv
import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from simsubjects.cli.commands import main
from simsubjects.studyfile import load_study

EXP = Path(__file__).parent / "data" / "qualtrics" / "experiment"
QSF = EXP / "framing_experiment.qsf"
CSV3 = EXP / "framing_experiment.csv"  # three header rows, recode values
ARMS = {"BL_gain": "Gain_Low", "BL_gh": "Gain_High", "BL_loss": "Loss_Low", "BL_lh": "Loss_High"}
TAGS = {"BL_gain": "support_gain", "BL_gh": "support_gh", "BL_loss": "support_loss", "BL_lh": "support_lh"}


def _el(d, code):
    return [e for e in d["SurveyElements"] if e["Element"] == code]


def _four_arms(tmp_path: Path, names: dict) -> tuple[Path, Path]:
    """The fixture's two-arm randomizer made four arms (blocks named `names`), each asking the support question
    under its own export tag; respondent k of the export is dealt to arm k mod 4 with their own answer."""
    d = json.loads(QSF.read_text())
    sq = {e["PrimaryAttribute"]: e for e in _el(d, "SQ")}
    for new, (db, q), like in (("BL_gh", ("QID30", "QID31"), ("QID2", "QID3")),
                               ("BL_lh", ("QID32", "QID33"), ("QID4", "QID5"))):
        for qid, src in zip((db, q), like):
            e = copy.deepcopy(sq[src])
            e["PrimaryAttribute"] = e["Payload"]["QuestionID"] = qid
            e["Payload"]["DataExportTag"] = TAGS[new] if qid == q else f"{new}_text"
            if qid == db:  # the high-stakes arms' vignettes differ from the low ones'
                e["Payload"]["QuestionText"] = "The stakes are high. " + e["Payload"]["QuestionText"]
            d["SurveyElements"].append(e)
        _el(d, "BL")[0]["Payload"].append({"Type": "Standard", "Description": names[new], "ID": new, "BlockElements": [
            {"Type": "Question", "QuestionID": db}, {"Type": "Question", "QuestionID": q}]})
    for b in _el(d, "BL")[0]["Payload"]:
        b["Description"] = names.get(b["ID"], b["Description"])
    rnd = next(f for f in _el(d, "FL")[0]["Payload"]["Flow"] if f["Type"] == "BlockRandomizer")
    rnd["Flow"] = [{"Type": "Standard", "ID": b, "FlowID": f"FL_4{k}"} for k, b in enumerate(names)]
    qsf = tmp_path / "twobytwo.qsf"
    qsf.write_text(json.dumps(d))
    rows = list(csv.reader(open(CSV3, encoding="utf-8-sig")))
    g, lo, do = (rows[0].index(c) for c in ("support_gain", "support_loss", "FL_3_DO"))
    head = [[*r[:do], *extra, r[do]] for r, extra in zip(rows[:3], (["support_gh", "support_lh"],) * 2 +
                                                          ([json.dumps({"ImportId": "QID31"}),
                                                            json.dumps({"ImportId": "QID33"})],))]
    body = []
    for k, r in enumerate(rows[3:]):
        answer, arm = r[g] or r[lo], list(names)[k % 4]
        cells = {t: (answer if b == arm else "") for b, t in TAGS.items()}
        r = [*r[:do], cells["support_gh"], cells["support_lh"], arm]
        r[g], r[lo] = cells["support_gain"], cells["support_loss"]
        body.append(r)
    export = tmp_path / "twobytwo.csv"
    with open(export, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(head + body)
    return qsf, export


def _import(tmp_path, capsys, names: dict, *more) -> Path:
    qsf, export = _four_arms(tmp_path, names)
    out = tmp_path / "s"
    rc = main(["study", "import", "qualtrics", str(qsf), str(out), "--responses", str(export), "--merge-arms", *more])
    got = capsys.readouterr()
    assert rc == 0, got.err
    assert "arms of randomizer_fl_3: " in got.out  # the split, or why not, is on screen too
    return out


def test_arms_named_as_a_2x2_are_two_factors(tmp_path, capsys):
    from simsubjects.analyze.methods.subjects import welch
    from simsubjects.analyze.methods.registry import TESTS
    from simsubjects.studyfile.analyses import trial_scores
    from simsubjects.studyfile.design import build_trials

    out = _import(tmp_path, capsys, ARMS)
    data = yaml.safe_load((out / "study.yaml").read_text())
    arm = "randomizer_fl_3"
    want = {"gain_loss": {"gain_low": "gain", "gain_high": "gain", "loss_low": "loss", "loss_high": "loss"},
            "low_high": {"gain_low": "low", "gain_high": "high", "loss_low": "low", "loss_high": "high"}}
    assert data["design"]["columns"] == {n: {arm: by} for n, by in want.items()}
    tests = {(a["type"], a.get("factor")) for a in data["analyses"] if isinstance(a, dict)}
    assert {("welch", "gain_loss"), ("welch", "low_high"), ("chi_square", "gain_loss"),
            ("chi_square", "low_high"), ("welch", arm)} <= tests
    assert main(["study", "check", str(out / "study.yaml")]) == 0
    notes = (out / "IMPORT_NOTES.md").read_text().replace("\\", "")
    assert "Arms as crossed factors" in notes and "`gain_loss` (gain, loss) x `low_high` (low, high)" in notes

    study = load_study(out / "study.yaml")
    # the people's rows: each crossed factor's level beside the arm the export says
    h = pd.read_csv(out / "human.csv", dtype=str, keep_default_na=False)
    sup = h[h["item"] == "support"]
    assert len(sup) > 20 and set(sup[arm]) == set(want["gain_loss"])
    for n, by in want.items():
        assert (sup[n] == sup[arm].map(by)).all()
    # the model's rows: design.columns sets the same columns from each subject's assigned arm
    trials, _ = build_trials(study)
    assert {"gain_loss", "low_high"} <= set(trials.columns)
    for n, by in want.items():
        assert (trials[n] == trials[arm].map(by)).all()
    assert set(trials["gain_loss"]) == {"gain", "loss"} and set(trials["low_high"]) == {"low", "high"}
    # the people's tests: Welch's t on gain_loss (unit: 1-5 support positions) is the gain-minus-loss mean
    pos = {o.label: o.position for o in next(it for it in study.items if it.id == "support").response.options}
    for n, (a, b) in (("gain_loss", ("gain", "loss")), ("low_high", ("low", "high"))):
        w = welch(trial_scores(study, study.human), n, [a, b], ["item"])
        row = w[w["item"] == "support"].iloc[0]
        means = sup.assign(x=sup["response"].map(pos)).groupby(n)["x"].mean()
        assert math.isclose(row["estimate"], means[a] - means[b], abs_tol=1e-12)
    # the file's own analyses of each crossed factor, as `analyze` runs them on the people's rows
    trials = trial_scores(study, study.human)
    for a in study.analyses:
        if isinstance(a, dict) and a.get("factor") in want:
            got = TESTS[a["type"]].run(trials, study.human, a, list(a.get("by", ["item"])))
            assert (got["item"] == "support").sum() == 1


def test_people_subjects_carry_the_crossed_factors(tmp_path, capsys):
    """--people: the respondents are the model's subjects; their trials carry the crossed factors as
    design.columns sets them, the same as their rows in human.csv."""
    from simsubjects.studyfile.design import build_trials

    out = _import(tmp_path, capsys, ARMS, "--people")
    assert main(["study", "check", str(out / "study.yaml")]) == 0
    study = load_study(out / "study.yaml")
    trials, _ = build_trials(study)
    sup = trials[trials["item"] == "support"]
    assert len(sup) > 20 and set(sup["gain_loss"]) == {"gain", "loss"} and set(sup["low_high"]) == {"low", "high"}


def test_names_that_do_not_cross_stay_one_factor_with_a_note(tmp_path, capsys):
    names = {"BL_gain": "Gain_Low", "BL_gh": "Gain_High", "BL_loss": "Loss_Low", "BL_lh": "Neutral_Mid"}
    out = _import(tmp_path, capsys, names)
    data = yaml.safe_load((out / "study.yaml").read_text())
    assert "columns" not in data["design"]
    assert {a.get("factor") for a in data["analyses"] if isinstance(a, dict)} - {None} == {"randomizer_fl_3"}
    assert list(pd.read_csv(out / "human.csv", nrows=0).columns)[:5] == \
        ["respondent", "item", "response", "condition", "randomizer_fl_3"]
    notes = (out / "IMPORT_NOTES.md").read_text().replace("\\", "")
    assert "`randomizer_fl_3` stays one factor of 4 arms" in notes and "full crossing" in notes
    assert main(["study", "check", str(out / "study.yaml")]) == 0


def test_the_model_run_is_analyzed_by_each_crossed_factor(smollm2, tmp_path, capsys, monkeypatch):
    """A tiny collect on the embedded model (8 subjects, two per arm, the support item only): `analyze` writes
    Welch's t and the chi-square of each crossed factor for the model (unit: the subject, 4 per level) beside
    the people's (unit: the respondent)."""
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", lambda *a, **k: smollm2)
    monkeypatch.setattr(models, "load_model", lambda *a, **k: smollm2)
    out = _import(tmp_path, capsys, ARMS, "--subjects", "8")
    data = yaml.safe_load((out / "study.yaml").read_text())
    data["items"] = [it for it in data["items"] if it["id"] == "support"]  # a user's edit: one item
    (out / "study.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    h = pd.read_csv(out / "human.csv", dtype=str, keep_default_na=False)
    h[h["item"] == "support"].to_csv(out / "human.csv", index=False)
    run = tmp_path / "run"
    assert main(["collect", str(out / "study.yaml"), "--out", str(run), "-q"]) == 0
    assert main(["analyze", str(run)]) == 0
    capsys.readouterr()
    tests = pd.read_csv(run / "analysis" / "tests.csv")
    for contrast in ("gain_loss: gain - loss", "low_high: low - high"):
        w = tests[(tests["test"] == "Welch two-sample t-test") & (tests["contrast"] == contrast)]
        assert set(w["source"]) == {"model", "human"}, contrast
        assert w.loc[w["source"] == "model", "n"].tolist() == [8]
    chi = tests[tests["test"].str.contains("chi-square") & (tests["source"] == "model")]  # a permutation test
    assert {"gain_loss x response", "low_high x response"} <= set(chi["contrast"])
    # the model's arm pairs compare 2 subjects with 2; each crossed factor 4 with 4
    arm = tests[(tests["source"] == "model") & tests["contrast"].str.startswith("randomizer_fl_3: ")]
    assert len(arm) == 6 and set(arm["n"]) == {4}
    pytest.importorskip("rpy2")  # R's twins group by the derived columns as Python does
    assert main(["analyze", str(run), "--no-plots", "--check-r"]) == 0
    check = pd.read_csv(run / "analysis" / "check_r.csv")
    assert check["ok"].all() and check["statistic"].str.contains("gain_loss").any()


def _study(tmp_path: Path, columns) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({
        "study": "cols", "title": "columns by level", "prompt": {"template": "${question}\n${options}"},
        "design": {"subjects": 4, "factors": {"arm": {"assignment": "between", "levels": ["a_x", "a_y", "b_x", "b_y"]}},
                   "columns": columns},
        "items": [{"id": "q", "text": "Yes?", "response": "yesno"}],
        "analyses": [{"type": "welch", "factor": "ab", "levels": ["a", "b"]}]}))
    return path


def test_a_column_by_level_is_checked_and_tested_like_a_group(tmp_path, capsys):
    """design.columns NAME: {FACTOR: {level: value}}: every level mapped, a declared factor; one line, exit 2."""
    from simsubjects.studyfile.design import build_trials

    ok = {"ab": {"arm": {"a_x": "a", "a_y": "a", "b_x": "b", "b_y": "b"}}}
    assert main(["study", "check", str(_study(tmp_path, ok))]) == 0
    trials, _ = build_trials(load_study(tmp_path / "study.yaml"))
    assert (trials["ab"] == trials["arm"].str[0]).all() and len(trials) == 4
    capsys.readouterr()
    for bad, says in (({"ab": {"arm": {"a_x": "a", "a_y": "a", "b_x": "b"}}}, "b_y"),
                      ({"ab": {"nope": {"a_x": "a"}}}, "'nope' is not a within- or between-subject factor"),
                      ({"ab": {"arm": {"a_x": "a", "a_y": "a", "b_x": "b", "b_y": ["b"]}}}, "expected a value")):
        assert main(["study", "check", str(_study(tmp_path, bad))]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "design.columns.ab" in err and says in err, err
    within = tmp_path / "within.yaml"  # set by a within-subject factor: a subject has both levels
    within.write_text(_study(tmp_path, ok).read_text().replace("assignment: between", "assignment: within"))
    assert main(["study", "check", str(within)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "analyses" in err and "varies within subject" in err, err


def test_split_arms_reads_each_separator_and_refuses_what_does_not_cross():
    from simsubjects.studyfile.qualtrics.build import Factor, split_arms

    def arms(*names):
        return Factor("r", "FL_3", {f"l{k}": n for k, n in enumerate(names)}, {}, {})
    got, why = split_arms(arms("Gain / Expert", "Gain / Peer", "Loss / Expert", "Loss / Peer"), set())
    assert why == "" and got == {"gain_loss": {"l0": "gain", "l1": "gain", "l2": "loss", "l3": "loss"},
                                 "expert_peer": {"l0": "expert", "l1": "peer", "l2": "expert", "l3": "peer"}}
    got, why = split_arms(arms("A-x", "A-y", "B-x", "B-y", "C-x", "C-y"), {"a_b_c"})  # 3 x 2; a name taken
    assert why == "" and list(got) == ["a_b_c_2", "x_y"]
    for names in (("A_x", "A_y", "B_x"),  # a cell missing
                  ("A_x", "A_y", "B_x", "B_y_z"),  # parts differ in number
                  ("Gain frame", "Loss frame")):  # one value in a part: nothing crossed
        got, why = split_arms(arms(*names), set())
        assert got == {} and "full crossing" in why
