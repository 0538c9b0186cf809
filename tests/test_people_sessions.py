"""`paths: people` (issue 39, docs/people.md): a session replayed on recorded people's decisions.

A tiny design (3 recorded persons, at most 3 rounds of a prisoner's dilemma, 6 recorded decisions, one
answer that is no option) on the embedded model:
* every recorded decision is scored, and each distribution equals the packed scorer's on the prompt
  rebuilt by hand from the recorded data (the person's own answers, the other's recorded moves, the
  payoffs the rules give): the path is the person's, not a draw;
* the decision frame equals an independent recomputation from responses.csv and decisions.csv (unit:
  person); the uniform baseline is exactly log 2 per two-option decision;
* the answer that is no option is in `unmatched`, not in the frame;
* each ablation (history, instructions, labels) runs into the same run folder, rows with `ablation`;
* SIGKILL mid-run, then the same command: identical rows;
* bad recorded data exits 2 with one line naming the file, line and key, before a model loads.
"""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.cli.commands import main
from simsubjects.studyfile.session import load_session
from simsubjects.studyfile.session_people import FRAME_COLUMNS, decision_frame
from tests import forked

STUDY = """
study: people_tiny
title: Three recorded persons, replayed
prompt: {system: "You play a game. Choose C or D each round.", template: "${question}", answer_prefix: "\\nAnswer:"}
design: {subjects: {table: subjects.csv, id: subject}, seed: 3}
session:
  paths: people
  people:
    file: decisions.csv
    condition: arm
    columns: {person: who, round: rnd, move: mine, partner: theirs}
  memory: transcript
  variables: {total: 0}
  players:
    partner: {strategy: grim_trigger, responds_to: move, cooperate: C, defect: D}
  blocks:
    - id: game
      rounds: {max: 3, continue: 0.5}
      items:
        - id: move
          text: "Round ${round}. Choose C or D."
          response: {type: choice, style: words, options: [C, D]}
      payoffs:
        rules: {payoff: "(3 if partner == 'C' else 0) + (2 if move == 'D' else 0)"}
      update: {total: "total + payoff"}
      feedback: "You chose ${move}, the other chose ${partner}. You earned ${payoff}."
"""
SUBJECTS = "subject,arm\np1,a\np2,a\np3,b\n"
# p3's round 2 answer is no option (X): scored, listed in `unmatched`, the path goes on with it
DECISIONS = "who,rnd,mine,theirs\np1,1,C,C\np1,2,D,C\np1,3,C,D\np2,1,D,D\np3,1,C,D\np3,2,X,C\n"


def _write(folder: Path, study: str = STUDY, decisions: str = DECISIONS, subjects: str = SUBJECTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "subjects.csv").write_text(subjects)
    (folder / "decisions.csv").write_text(decisions)
    (folder / "study.yaml").write_text(study)
    return folder / "study.yaml"


def _collect(path: Path, out: Path, model, ablate=(), **kw) -> pd.DataFrame:
    """In process, with the session's loaded model and the parameters `collect SESSION.yaml` gives."""
    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile.adapter import file_parameters
    from simsubjects.studyfile.session_def import session_def

    study = load_session(path)
    p = {"studyfile": file_parameters(study), "seed": study.seed, "paths": None, "session_scorer": "incremental-kv",
         **({"ablate": list(ablate)} if ablate else {})}
    responses, _ = run_study(session_def(study, out=out), "smollm2", out, params=p, model=model,
                             show_progress=False, **kw)
    return responses


@pytest.fixture(scope="module")
def people_run(smollm2, tmp_path_factory):
    """The tiny design with every ablation, collected once."""
    folder = tmp_path_factory.mktemp("people")
    path = _write(folder / "study")
    r = _collect(path, folder / "run", smollm2, ("history", "instructions", "labels"))
    return load_session(path), r, folder


def _recorded() -> pd.DataFrame:
    from io import StringIO

    return pd.read_csv(StringIO(DECISIONS), dtype=str)


def test_every_recorded_decision_is_scored_on_the_persons_own_history(people_run, smollm2):
    """Unit: decision. Each full-prompt decision's distribution is the packed scorer's on the prompt
    rebuilt by hand from decisions.csv (the reused keys/values agree to ~1e-6; a wrong history would
    move them by far more), and the other player's moves are the recorded ones, not grim trigger's."""
    from simsubjects.collect.models.base import ChoiceRequest

    _, r, _ = people_run
    full = r[(r["condition"] == "decision") & (r["ablation"] == "")]
    rec = _recorded()
    assert len(full) == 2 * len(rec)  # every recorded decision, both options
    prompts, keys = [], []
    for who, g in rec.groupby("who", sort=False):
        text, total = "You play a game. Choose C or D each round.\n\n", 0
        for x in g.to_dict("records"):
            prompts.append(text + f"Round {x['rnd']}. Choose C or D.\nAnswer:")
            keys.append((who, int(x["rnd"])))
            pay = (3 if x["theirs"] == "C" else 0) + (2 if x["mine"] == "D" else 0)
            total += pay
            text += (f"Round {x['rnd']}. Choose C or D.\nAnswer: {x['mine']}\n\n"
                     f"You chose {x['mine']}, the other chose {x['theirs']}. You earned {pay}.\n\n")
    res = smollm2.choose([ChoiceRequest(p, (" C", " D")) for p in prompts])
    for (who, rnd), one in zip(keys, res):
        got = full[(full["subject"] == who) & (full["round"] == rnd)]
        assert got["response"].tolist() == ["C", "D"]
        assert np.allclose(got["weight"].to_numpy(), one.probs, atol=1e-5, rtol=0)
    rounds = r[(r["condition"] == "round") & (r["ablation"] == "")].sort_values(["subject", "round"])
    assert rounds["partner"].tolist() == rec.sort_values(["who", "rnd"])["theirs"].tolist()  # recorded moves
    assert rounds["move"].tolist() == rec.sort_values(["who", "rnd"])["mine"].tolist()


def test_frame_equals_an_independent_recomputation(people_run):
    """Unit: person. The frame's columns are the contract's; its log p(answer) per person equals one
    recomputed from responses.parquet and decisions.csv by hand; the uniform baseline is log 2 per
    two-option decision; the answer X is in `unmatched` only."""
    study, r, _ = people_run
    frame, unmatched = decision_frame(study, r)
    assert list(frame.columns) == FRAME_COLUMNS
    assert unmatched.to_dict("records") == [{"person": "p3", "decision": "game/r2/move", "item": "move",
                                             "answer": "X"}]
    assert sorted(frame["ablation"].unique()) == ["", "history", "instructions", "labels"]
    rec = _recorded()
    for abl, f in frame.groupby("ablation"):
        assert (f.groupby(["person", "decision"])["chosen"].sum() == 1).all()
        assert len(f) == 2 * 5  # 6 recorded decisions, one unmatched
        dec = r[(r["condition"] == "decision") & (r["ablation"] == abl)]
        for who, g in rec[rec["mine"].isin(["C", "D"])].groupby("who"):
            want = [math.log(dec[(dec["subject"] == who) & (dec["round"] == int(x["rnd"]))
                                 & (dec["response"] == x["mine"])]["weight"].iloc[0]) for x in g.to_dict("records")]
            mine = f[(f["person"] == who) & f["chosen"]]
            assert np.isclose(np.log(mine["p"]).mean(), np.mean(want), atol=1e-12)
            assert mine["condition"].iloc[0] == {"p1": "a", "p2": "a", "p3": "b"}[who]
        # the uniform choice: log(1/2) per two-option decision, exactly
        k = f.groupby(["person", "decision"])["option"].size()
        assert (k == 2).all() and np.allclose(np.log(1 / k), -math.log(2), atol=0)
    p1 = frame[(frame["person"] == "p1") & (frame["ablation"] == "")].drop_duplicates("decision")
    assert p1["prev_own"].tolist() == ["", "C", "D"] and p1["prev_other"].tolist() == ["", "C", "C"]


def test_each_ablation_changes_what_the_model_is_shown(people_run):
    """history: round 2 sees no round 1; instructions: no system text; labels: A/B shown, C/D recorded."""
    import json

    _, r, folder = people_run
    t = [json.loads(x) for x in (folder / "run" / "transcripts.jsonl").read_text().splitlines()]
    by = {(x["ablation"], x["subject"], x["round"]): x for x in t}
    assert "Round 1" in by[("", "p1", 2)]["text"] and "Round 1" not in by[("history", "p1", 2)]["text"]
    assert "You play a game" in by[("", "p1", 1)]["text"]
    assert "You play a game" not in by[("instructions", "p1", 1)]["text"]
    lab = by[("labels", "p1", 2)]
    assert lab["completions"] == [" A", " B"] and "Choose A or B" in lab["text"] and "Answer: A" in lab["text"]
    assert lab["labels"] == ["A", "B"] and lab["recorded"] == "D"
    dec = r[(r["condition"] == "decision") & (r["ablation"] == "labels")]
    assert set(dec["response"]) == {"C", "D"}  # rows keep the declared labels: the twins pair by decision
    assert r.groupby("ablation")["trial"].nunique().nunique() == 1  # the same trials in each twin


def _answers(out: Path) -> int:
    try:
        with sqlite3.connect(out / "cache.sqlite", timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_sigkill_mid_people_run_resumes_with_identical_rows(smollm2, tmp_path):
    """SIGKILL after a few cached answers, then the same command: rows equal an uninterrupted run's.
    Each start is forked from a fork server that imported torch once (tests/forked.py)."""
    # every person plays 3 rounds (9 decisions): the kill lands mid-run even on a quiet machine
    path = _write(tmp_path / "study", decisions="who,rnd,mine,theirs\n" + "".join(
        f"{w},{k},{'CD'[(k + i) % 2]},{'DC'[k % 2]}\n" for i, w in enumerate(("p1", "p2", "p3")) for k in (1, 2, 3)))
    ref = _collect(path, tmp_path / "ref", smollm2, batch_size=1)
    out, log = tmp_path / "killed", tmp_path / "killed.log"
    argv = ["collect", str(path), "--out", str(out), "-q", "--batch-size", "1"]
    ctx = forked.context()
    proc = forked.Start(ctx, argv, log)
    deadline = time.time() + 300
    while _answers(out) < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert 0 < _answers(out) < 9 and not (out / "responses.parquet").exists()
    assert forked.Start(ctx, argv, log).wait() == 0, log.read_text(errors="replace")[-2000:]
    got = pd.read_parquet(out / "responses.parquet")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), ref.reset_index(drop=True), check_exact=True)


BAD = {
    "unknown_person": (dict(decisions=DECISIONS + "p9,1,C,C\n"),
                       "line 8 of decisions.csv: person 'p9' is not in the subjects"),
    "round_beyond_max": (dict(decisions=DECISIONS + "p2,2,C,C\np2,3,C,C\np2,4,C,C\n"), "round 4 is beyond block game"),
    "missing_column": (dict(study=STUDY.replace("move: mine, ", "")), "missing required key 'move'"),
    "no_such_column": (dict(study=STUDY.replace("move: mine", "move: mien")), "column 'mien' is not in decisions.csv"),
    "bad_move": (dict(decisions=DECISIONS.replace("p2,1,D,D", "p2,1,D,Q")),
                 "line 5 of decisions.csv: 'Q' is not a move"),
    "gap": (dict(decisions=DECISIONS.replace("p1,2,D,C\n", "")), "a round is missing"),
    "twice": (dict(decisions=DECISIONS + "p2,1,C,C\n"), "has round 1 of block game twice"),
    "unrecorded_subject": (dict(subjects=SUBJECTS + "p4,b\n"), "subject 'p4' has no recorded decisions"),
    "no_people_key": (dict(study=STUDY.replace("  people:\n    file: decisions.csv\n    condition: arm\n"
                                                "    columns: {person: who, round: rnd, move: mine, partner: theirs}\n",
                                                "")), "name them in session.people"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_recorded_data_one_line_exit_2(name, tmp_path, capsys):
    kw, expected = BAD[name]
    path = _write(tmp_path / name, **kw)
    for argv in (["study", "check", str(path)], ["collect", str(path), "--out", str(tmp_path / "run")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expected in err, err
        assert "study.yaml:" in err and err.split("study.yaml:")[1].split(":")[0].isdigit(), err
    assert not (tmp_path / "run").exists()


def test_paths_option_and_bad_ablation_exit_2(tmp_path, capsys):
    path = _write(tmp_path / "s")
    assert main(["collect", str(path), "--out", str(tmp_path / "run"), "--paths", "2"]) == 2
    assert "replays recorded people" in capsys.readouterr().err
    assert main(["collect", str(path), "--out", str(tmp_path / "run"), "--ablate", "nonsense"]) == 2
    capsys.readouterr()
    assert not (tmp_path / "run").exists()


def test_dalbo_people_example_is_a_fresh_computation_from_the_article_data():
    """examples/pd_dalbo_people's decisions.csv and subjects.csv equal scripts/bundle_dalbo2011.py's output
    on the bundled DF2011.rda; the study file reads them (every recorded answer an option: no unmatched)."""
    import sys

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "scripts"))
    try:
        from bundle_dalbo2011 import SOURCE, decisions, subjects
    finally:
        sys.path.pop(0)
    folder = root / "examples" / "pd_dalbo_people"
    fresh = decisions(SOURCE)
    bundled = pd.read_csv(folder / "decisions.csv", keep_default_na=False)
    pd.testing.assert_frame_equal(bundled, fresh.astype(bundled.dtypes.to_dict()), check_dtype=False)
    pd.testing.assert_frame_equal(pd.read_csv(folder / "subjects.csv"), subjects(fresh), check_dtype=False)
    assert fresh["person"].nunique() == 6 and fresh["treatment"].nunique() == 6
    study = load_session(folder / "study.yaml")
    rec = study.session.recorded
    assert len(rec) == len(fresh) and set(rec["choice"]) <= {"J", "F"} and set(rec["partner"]) <= {"J", "F"}


@pytest.mark.r
def test_check_r_agrees_on_the_session_fit_with_every_twin(people_run, capsys):
    """`analyze --check-r` of a paths: people run: R/fit.R's sf_fit_session_people recomputes every person's
    log-likelihoods from the rows (the recorded answer: drawn = 1) for the full prompt and each twin."""
    pytest.importorskip("rpy2")
    from simsubjects.cli.commands import main

    _, _, folder = people_run
    assert main(["analyze", str(folder / "run"), "--no-plots", "--check-r"]) == 0
    check = pd.read_csv(folder / "run" / "analysis" / "check_r.csv")
    fit = check[check["statistic"].str.startswith("fit_people |")]
    people = pd.read_csv(folder / "run" / "analysis" / "fit_people.csv")
    n_model = int((people["kind"] == "model").sum())
    assert n_model == 4 * len(people.loc[people["kind"] == "model", "person"].unique())  # full + 3 twins
    assert len(fit) == 6 * n_model and fit["ok"].all()
    assert check[check["statistic"].str.startswith("fit_study |")]["ok"].all()
