"""Issue 39 end to end on the embedded model: a study file whose subjects are the people of its
respondents table (design.subjects: people), collected with both --ablate twins into one run folder and
analyzed (fit tables and figures), a Qualtrics import with --people, and the bad input refused with
exit 2 before the model loads. Units: the person (every interval is over people)."""

import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXP = ROOT / "tests" / "data" / "qualtrics" / "experiment"

STUDY = """\
study: people-fit
title: People scored under the model
prompt:
  system: "You answer a survey as a ${party} voter."
  template: "${frame}${question}\\n${options}"
  answer_prefix: "\\nAnswer:"
response: {type: choice, options: [{label: "yes"}, {label: "no"}]}
items:
  - {id: tax, text: "Should taxes on the rich rise?"}
  - {id: guns, text: "Should gun laws be stricter?"}
  - {id: rent, text: "Should rents be capped?", response: {type: choice, options: [{label: "yes"}, {label: "no"}, {label: "unsure"}]}}
design:
  subjects: people
  factors:
    frame: {levels: {plain: "", urgent: "This vote is urgent. "}, assignment: between}
human:
  file: human.csv
  columns: {respondent: id, item: item, response: answer, condition: condition, groups: [party], order: shown}
"""
HUMAN = """\
id,item,answer,condition,party,shown
p1,tax,yes,frame=plain,Democratic,no|yes
p1,guns,yes,frame=plain,Democratic,
p1,rent,unsure,frame=plain,Democratic,unsure|yes|no
p2,tax,no,frame=urgent,Republican,
p2,guns,no,frame=urgent,Republican,
p3,tax,yes,frame=urgent,Democratic,
p3,guns,no,frame=urgent,Democratic,
p3,rent,yes,frame=urgent,Democratic,
p4,tax,no,frame=plain,Republican,
"""


def _write(folder: Path, study: str = STUDY, human: str = HUMAN) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "study.yaml").write_text(study)
    (folder / "human.csv").write_text(human)
    return folder / "study.yaml"


@pytest.fixture
def model(smollm2, monkeypatch):
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", lambda *a, **k: smollm2)
    monkeypatch.setattr(models, "load_model", lambda *a, **k: smollm2)
    return smollm2


@pytest.fixture(scope="module")
def run(tmp_path_factory, smollm2):
    """The study collected once with both ablations, and analyzed (tables and figures)."""
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    mp = pytest.MonkeyPatch()
    mp.setattr(pipeline, "load_model", lambda *a, **k: smollm2)
    mp.setattr(models, "load_model", lambda *a, **k: smollm2)
    base = tmp_path_factory.mktemp("people_fit")
    study, out = _write(base / "src"), base / "run"
    try:
        assert main(["collect", str(study), "--out", str(out), "-q", "--ablate", "instructions",
                     "--ablate", "labels"]) == 0
        assert main(["analyze", str(out)]) == 0
    finally:
        mp.undo()
    return out


def test_people_are_the_subjects_with_their_condition_and_columns():
    from simsubjects.studyfile.design import build_trials
    from simsubjects.studyfile.spec import load_study

    import tempfile

    with tempfile.TemporaryDirectory() as d:
        study = load_study(_write(Path(d)))
        study.ablate = ("instructions", "labels")
        trials, _ = build_trials(study)
    full = trials[trials["ablation"] == ""]
    # each person is asked what they answered, in their condition: 9 answers, 9 trials (and a twin each)
    assert sorted(zip(full["subject"], full["item"], full["condition"])) == sorted(
        (r.id, r.item, r.condition) for r in pd.read_csv(pd.io.common.StringIO(HUMAN)).itertuples())
    assert len(trials) == 27
    p2 = full[full["subject"] == "p2"].iloc[0]
    assert p2["prompt"].startswith("You answer a survey as a Republican voter.") and "This vote is urgent." in p2["prompt"]
    twin = trials[(trials["subject"] == "p2") & (trials["item"] == p2["item"])].set_index("ablation")["prompt"]
    assert twin["instructions"] == f"{p2['question']}\nA. yes\nB. no\nAnswer:"  # no system text, no frame
    assert "Option A" in twin["labels"] and "yes" not in twin["labels"].split("?")[-1]
    labels = trials[(trials["ablation"] == "labels") & (trials["subject"] == "p3") & (trials["item"] == "rent")].iloc[0]
    assert labels["labels"] == ("yes", "no", "unsure")  # the person's answer maps to the relabeled option
    # the order a person saw (human.columns.order) is the order their prompt shows
    seen = full.set_index(["subject", "item"])
    assert seen.loc[("p1", "tax"), "labels"] == ("no", "yes") and "A. no\nB. yes" in seen.loc[("p1", "tax"), "prompt"]
    assert seen.loc[("p1", "rent"), "labels"] == ("unsure", "yes", "no")
    assert seen.loc[("p2", "tax"), "labels"] == ("yes", "no")  # no order recorded: the study's (as listed)


def test_every_answer_scored_and_recomputed_from_rows(run):
    resp = pd.read_parquet(run / "responses.parquet")
    assert set(resp.loc[resp["source"] == "model", "ablation"]) == {"", "instructions", "labels"}
    people = pd.read_csv(run / "analysis" / "fit_people.csv", keep_default_na=False)
    model = people[people["kind"] == "model"]
    # independent recomputation: each trial's exact shares, the share of the person's own answer
    m = resp[resp["source"] == "model"].copy()
    m["ablation"] = m["ablation"].fillna("")
    m["share"] = m["weight"] / m.groupby("trial")["weight"].transform("sum")
    h = resp[resp["source"] == "human"][["subject", "item", "response"]]
    got = m.merge(h, on=["subject", "item", "response"])
    assert len(got) == 9 * 3  # every person's every answer, under the full prompt and each twin
    want = got.groupby(["ablation", "subject"])["share"].apply(lambda s: np.log(s).sum())
    mine = model.set_index(["ablation", "person"])["loglik"].astype(float)
    assert np.allclose(mine.sort_index().to_numpy(), want.sort_index().to_numpy(), atol=1e-12)
    assert (model["n_decisions"].groupby(model["ablation"]).sum() == 9).all()
    # the uniform baseline: exactly log 2 per two-option decision, log 3 for rent
    dec = pd.read_csv(run / "analysis" / "fit_decisions.csv", keep_default_na=False)
    uni = dec[dec["model"] == "uniform"]
    assert (uni.loc[uni["item"] != "rent", "loglik"] == math.log(0.5)).all()
    assert np.allclose(uni.loc[uni["item"] == "rent", "loglik"], math.log(1 / 3))


def test_leave_one_out_baseline_and_intervals(run):
    dec = pd.read_csv(run / "analysis" / "fit_decisions.csv", keep_default_na=False)
    loo = dec[dec["model"] == "marginal_loo"].set_index(["person", "item"])
    # tax in frame=urgent: p2 no, p3 yes. Person p2 left out: p3 alone said yes -> p(no) = (0 + 1/2) / (1 + 1)
    assert loo.loc[("p2", "tax"), "p_answer"] == pytest.approx(0.25)
    st = pd.read_csv(run / "analysis" / "fit_study.csv", keep_default_na=False)
    assert set(zip(st["ablation"], st["baseline"])) == {(a, b) for a in ("", "instructions", "labels")
                                                        for b in ("uniform", "marginal_loo")}
    row = st[(st["ablation"] == "") & (st["baseline"] == "uniform")].iloc[0]
    people = pd.read_csv(run / "analysis" / "fit_people.csv", keep_default_na=False)
    full = people[(people["kind"] == "model") & (people["ablation"] == "")]
    assert row["estimate"] == pytest.approx(1 - full["loglik"].sum() / full["loglik_uniform"].sum())
    assert row["n_people"] == 4 and row["n_decisions"] == 9 and row["n_boot"] == 2000
    assert np.isfinite([row["conf.low"], row["conf.high"]]).all() and row["conf.low"] <= row["conf.high"]
    cmp = pd.read_csv(run / "analysis" / "fit_compare.csv", keep_default_na=False)
    assert {"instructions", "labels"} <= set(cmp["ablation_a"]) and (cmp["n"] == 4).all()
    assert len(pd.read_csv(run / "analysis" / "fit_unmatched.csv")) == 0
    for png in ("fit_people.png", "fit_calibration.png"):
        assert (run / "analysis" / png).stat().st_size > 1000


def test_ordinary_tables_read_the_full_prompt_only(run):
    """The twins enter the fit tables only: the distribution's n is the full prompt's trials."""
    dist = pd.read_csv(run / "analysis" / "distribution.csv", keep_default_na=False)
    model = dist[dist["source"] == "model"]
    assert model.drop_duplicates(["item", "condition"])["n"].sum() == 9


@pytest.mark.r
def test_check_r_agrees_on_the_fit(run, capsys):
    pytest.importorskip("rpy2")
    assert main(["analyze", str(run), "--no-plots", "--check-r"]) == 0
    check = pd.read_csv(run / "analysis" / "check_r.csv")
    fit = check[check["statistic"].str.startswith(("fit_people", "fit_study"))]
    assert len(fit) >= 3 * 4 * 6 and fit["ok"].all()


def test_resume_keeps_the_twins(run, model, tmp_path, capsys):
    """The same command again resumes from the run folder's cache: the same rows."""
    before = pd.read_parquet(run / "responses.parquet")
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    study = copy / "study" / "study.yaml"
    assert main(["collect", str(study), "--out", str(copy), "-q", "--ablate", "instructions",
                 "--ablate", "labels"]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(copy / "responses.parquet"), before)


def test_qualtrics_import_with_people_scored(model, tmp_path):
    import csv

    with open(EXP / "framing_experiment.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f))
    # 3 respondents; their two numeric estimates left unanswered (a generated answer per person is slow, and
    # an estimate has no options to score): each person is asked only what they answered
    blank = [rows[0].index(c) for c in ("likely_1", "household")]
    rows = rows[:3] + [[("" if j in blank else v) for j, v in enumerate(r)] for r in rows[3:6]]
    export = tmp_path / "export.csv"
    with open(export, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    assert main(["study", "import", "qualtrics", str(EXP / "framing_experiment.qsf"), str(tmp_path / "s"),
                 "--responses", str(export), "--people"]) == 0
    assert "subjects: people" in (tmp_path / "s" / "study.yaml").read_text()
    out = tmp_path / "run"
    assert main(["collect", str(tmp_path / "s" / "study.yaml"), "--out", str(out), "-q"]) == 0
    assert main(["analyze", str(out), "--no-plots"]) == 0
    human = pd.read_csv(tmp_path / "s" / "human.csv", keep_default_na=False)
    people = pd.read_csv(out / "analysis" / "fit_people.csv", keep_default_na=False)
    model_rows = people[people["kind"] == "model"].set_index("person")
    from simsubjects.studyfile.spec import load_study

    kinds = {it.id: it.response.kind for it in load_study(tmp_path / "s" / "study.yaml").items}
    choice = human[human["item"].map(kinds) == "choice"]  # estimates and free text have no options to score
    assert set(model_rows.index) == set(choice["respondent"])
    assert model_rows["n_decisions"].to_dict() == choice.groupby("respondent").size().to_dict()


BAD = [  # (rows added to human.csv, the error's words, edits of the study file)
    ("p5,tax,,frame=plain,Democratic,\n", "answered no item", {}),
    ("p4,tax,yes,frame=plain,Republican,\n", "twice", {}),
    ("p5,tax,yes,frame=plain,Democratic,yes|maybe\n", "is not the options of item tax", {}),
    ("", "subjects is a number, a mapping", {"  subjects: people\n": "  subjects: peple\n"}),
]


@pytest.mark.parametrize("extra_human,why,edit", BAD)
def test_bad_people_input_exits_2_before_the_model(tmp_path, monkeypatch, capsys, extra_human, why, edit):
    import simsubjects.collect.models as models

    monkeypatch.setattr(models, "load_model", lambda *a, **k: pytest.fail("the model loaded"))
    text = STUDY
    for old, new in edit.items():
        text = text.replace(old, new)
    study = _write(tmp_path, text, HUMAN + extra_human)
    assert main(["collect", str(study), "--out", str(tmp_path / "run"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert why in err and "study.yaml" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_people_without_a_human_table_and_history_on_a_plain_file(tmp_path, capsys):
    cut = STUDY[:STUDY.index("human:")]
    study = _write(tmp_path, cut)
    assert main(["collect", str(study), "--out", str(tmp_path / "run"), "-q"]) == 2
    assert "add human:" in capsys.readouterr().err
    study = _write(tmp_path / "b")
    assert main(["collect", str(study), "--out", str(tmp_path / "run"), "-q", "--ablate", "history"]) == 2
    assert "--ablate history" in capsys.readouterr().err
    assert main(["study", "import", "qualtrics", str(EXP / "framing_experiment.qsf"), str(tmp_path / "q"),
                 "--people"]) == 2
    assert "--people" in capsys.readouterr().err and not (tmp_path / "q").exists()
    assert not (tmp_path / "run").exists()


def test_two_runs_compared_per_person(run, tmp_path):
    """analyze RUN1 RUN2: each run is its own system, compared with the other on the same people."""
    other = tmp_path / "again"
    shutil.copytree(run, other, ignore=shutil.ignore_patterns("analysis"))
    assert main(["analyze", str(run), str(other), "--out", str(tmp_path / "both"), "--no-plots"]) == 0
    cmp = pd.read_csv(tmp_path / "both" / "fit_compare.csv", keep_default_na=False)
    pair = cmp[(cmp["model_a"] == "run: smollm2") & (cmp["model_b"] == "again: smollm2")].iloc[0]
    assert pair["estimate"] == 0 and pair["n"] == 4  # the same rows: no difference for any person


def test_answers_never_scored_are_listed(tmp_path):
    """The frame from rows alone (no model): a person's answer whose decision the model did not score is in
    `unmatched`, not dropped; an option order averaged over two trials is their mean."""
    from simsubjects.studyfile.people_fit import decision_frame
    from simsubjects.studyfile.spec import load_study

    study = load_study(_write(tmp_path))
    human = study.human
    rows = []
    for r in human.itertuples():
        if (r.subject, r.item) == ("p4", "tax"):
            continue  # the model never answered p4's tax question
        labels = ["yes", "no", "unsure"] if r.item == "rent" else ["yes", "no"]
        for t, first in ((f"{r.subject}|{r.item}|o1", 0.8), (f"{r.subject}|{r.item}|o2", 0.4)):
            ps = [first] + [(1 - first) / (len(labels) - 1)] * (len(labels) - 1)
            rows += [{"trial": t, "item": r.item, "condition": r.condition, "subject": r.subject, "source": "model",
                      "model": "m", "method": "exact", "response": lab, "weight": p} for lab, p in zip(labels, ps)]
    frame, unmatched = decision_frame(study, pd.concat([pd.DataFrame(rows), human], ignore_index=True))
    assert unmatched.to_dict("records") == [{"person": "p4", "decision": "tax", "item": "tax", "answer": "no"}]
    tax = frame[(frame["person"] == "p1") & (frame["item"] == "tax")].set_index("option")["p"]
    assert tax["yes"] == pytest.approx(0.6) and tax["no"] == pytest.approx(0.4)  # mean of 0.8 and 0.4
    assert frame.groupby("person")["decision"].nunique().to_dict() == {"p1": 3, "p2": 2, "p3": 3}
    assert (frame.groupby(["person", "decision"])["chosen"].sum() == 1).all()
