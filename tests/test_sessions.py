"""Sessions (docs/studies.md, "Sessions"): the checks, the expression language, and runs on the embedded model.

* The malformed-session corpus (tests/data/sessions/bad): one line naming file:line, exit 2, nothing written.
* The repeated prisoner's dilemma example (10 subjects x 5 rounds vs tit-for-tat): every decision's
  distribution equals the model's own scoring of the rebuilt prompt, the draws follow the seeded
  generator, each row's history can be rebuilt from `parent`, and the round table is there.
* `paths: enumerate` on a 3-round game: the leaves' probabilities sum to 1 within 1e-9.
* SIGKILL during a session, then the same command: the rows equal an uninterrupted run's.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.cli.commands import main
from simsubjects.studyfile import expr as X
from simsubjects.studyfile.session import load_session

ROOT = Path(__file__).resolve().parents[1]
BAD = ROOT / "tests" / "data" / "sessions" / "bad"
EXPECTED = json.loads((BAD / "expected.json").read_text())
PD = ROOT / "examples" / "pd_tft" / "study.yaml"


# ------------------------------------------------------------------------------ malformed files

def test_corpus_is_large_and_its_base_is_valid():
    assert len(EXPECTED) >= 20
    s = load_session(BAD / "valid_base.yaml")
    assert [b.id for b in s.session.blocks] == ["survey", "game"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_session_one_line_exit_2_nothing_written(name, tmp_path, capsys):
    path = BAD / f"{name}.yaml"
    for argv in (["study", "check", str(path)], ["collect", str(path), "--out", str(tmp_path / "run")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert EXPECTED[name] in err, err
        assert f"{name}.yaml:" in err and err.split(f"{name}.yaml:")[1].split(":")[0].isdigit(), err
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------ expressions

@pytest.mark.parametrize("text", ["__import__('os')", "open('x')", "q.__class__", "x[0]", "(lambda: 1)",
                                  "[y for y in z]", "2 ** 8", "{'a': 1}", "f'{x}'", "_x == 1", "a := 1"])
def test_expressions_refuse_code(text):
    with pytest.raises(X.ExprError):
        X.parse(text)


def test_expressions_evaluate_and_type():
    e = X.parse("total + (3 if move == 'C' else 1) * 2")
    assert X.evaluate(e, {"total": 10, "move": "C"}) == 16
    assert X.evaluate(e, {"total": 10, "move": "D"}) == 12
    types = {"total": X.NUM, "move": X.T("text", frozenset({"C", "D"}))}
    assert X.typecheck(e, types).kind == "num"
    assert X.evaluate(X.parse("move in ['C', 'D'] and not total > 3"), {"move": "D", "total": 2}) is True
    assert X.evaluate(X.parse("1 < total <= 3"), {"total": 3}) is True
    with pytest.raises(X.ExprError, match="not an option"):
        X.typecheck(X.parse("move == 'E'"), types)
    with pytest.raises(X.ExprError, match="division by zero"):
        X.evaluate(X.parse("total / (move == 'C' and 0 or 0)"), {"total": 1, "move": "C"})
    with pytest.raises(X.ExprError, match="division by zero"):
        X.evaluate(X.parse("total % x"), {"total": 1, "x": 0})


# ------------------------------------------------------------------------------ runs on the model

def _run(study_file, out, model, **params):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile.adapter import file_parameters
    from simsubjects.studyfile.session_def import session_def

    study = load_session(study_file)
    p = {"studyfile": file_parameters(study), "seed": study.seed, "paths": params.pop("paths", None)}
    responses, _ = run_study(session_def(study, out=out), "smollm2", out, params=p, model=model,
                             show_progress=False, **params)
    return study, responses


@pytest.fixture(scope="module")
def pd_run(smollm2, tmp_path_factory):
    out = tmp_path_factory.mktemp("pd") / "run"
    study, responses = _run(PD, out, smollm2)
    return study, responses, out


def test_pd_example_rows_rebuild_every_history(pd_run, smollm2):
    study, r, out = pd_run
    dec = r[r["condition"] == "decision"]
    assert dec["subject"].nunique() == 10 and sorted(dec["round"].unique()) == [1, 2, 3, 4, 5]
    assert len(dec) == 10 * 5 * 2  # one row per decision x option
    by = dec.groupby("trial")
    assert np.allclose(by["weight"].sum(), 1.0, atol=1e-12)  # the full distribution at every decision
    assert (by["drawn"].sum() == 1).all()  # one option drawn
    # the parent chain: each subject's decisions form one path, step 1..5, round r at step r
    for s, d in dec.drop_duplicates("trial").groupby("subject"):
        d = d.sort_values("step")
        assert d["step"].tolist() == [1, 2, 3, 4, 5] and d["round"].tolist() == [1, 2, 3, 4, 5]
        assert d["parent"].tolist() == [""] + d["trial"].tolist()[:-1]
    # tit-for-tat: the partner plays J in round 1, then the subject's answer of the round before
    rounds = r[r["condition"] == "round"].sort_values(["subject", "round"])
    for s, d in rounds.groupby("subject"):
        assert d["partner"].tolist() == ["J"] + d["choice"].tolist()[:-1]
        pay = {("J", "J"): 48, ("J", "F"): 12, ("F", "J"): 50, ("F", "F"): 25}
        assert d["payoff"].tolist() == [pay[(a, b)] for a, b in zip(d["choice"], d["partner"])]
        assert d["total"].tolist() == list(np.cumsum(d["payoff"]))
    # the drawn answer is the round's choice, and the draws are the seeded generator's
    drawn = dec[dec["drawn"] == 1].set_index(["subject", "round"])["response"]
    assert (rounds.set_index(["subject", "round"])["choice"].sort_index() == drawn.sort_index()).all()
    from simsubjects.collect.sessions import _draw, _rng

    for s, d in dec.groupby("subject"):
        rng = _rng(study.seed, "path", s, 1)
        for t, g in d.groupby("step"):
            j = _draw(g["weight"].tolist(), float(rng.random()))
            assert g["drawn"].iloc[j] == 1


def test_pd_distribution_is_the_models_on_the_rebuilt_transcript(pd_run, smollm2):
    """Round 3: each subject's prompt rebuilt by hand from the rows (system, the earlier rounds, their
    feedback), the ten scored in one batch as the run did, gives the recorded distributions exactly."""
    from simsubjects.collect.models.base import ChoiceRequest

    study, r, _ = pd_run
    prompts = []
    for s in [f"s{i}" for i in range(1, 11)]:
        rounds = r[(r["condition"] == "round") & (r["subject"] == s)].sort_values("round")
        text = study.system + "\n\n"
        for rec in rounds.head(2).to_dict("records"):
            text += (f"Round {rec['round']}. Do you choose J or F?\nYour choice: {rec['choice']}\n\n"
                     f"You chose {rec['choice']} and the other person chose {rec['partner']}. You earned "
                     f"{rec['payoff']:g} points (total {rec['total']:g}).\n\n")
        prompts.append(text + "Round 3. Do you choose J or F?\nYour choice:")
    res = smollm2.choose([ChoiceRequest(p, (" J", " F")) for p in prompts])
    for s, one in zip([f"s{i}" for i in range(1, 11)], res):
        got = r[(r["condition"] == "decision") & (r["subject"] == s) & (r["round"] == 3)]
        assert got["response"].tolist() == ["J", "F"]
        assert np.allclose(got["weight"].to_numpy(), one.probs, atol=1e-12, rtol=0)


def test_pd_analysis_subject_is_the_unit(pd_run, capsys):
    _, r, out = pd_run
    assert main(["analyze", str(out), "--no-plots"]) == 0
    a = out / "analysis"
    by_round = pd.read_csv(a / "rounds_by_round.csv")
    coop = by_round[by_round["measure"] == "share choice=J"].sort_values("round")
    assert coop["round"].tolist() == [1, 2, 3, 4, 5] and (coop["n"] == 10).all() and (coop["unit"] == "subject").all()
    rounds = r[r["condition"] == "round"]
    expect = rounds.groupby("round")["choice"].apply(lambda x: (x == "J").mean())
    assert np.allclose(coop["estimate"].to_numpy(), expect.to_numpy())
    assert (a / "rounds.csv").exists() and len(pd.read_csv(a / "rounds.csv")) == 50
    tests = pd.read_csv(a / "subject_tests.csv")
    assert (tests["n"] == 10).all() and (tests["df"] == 9).all()  # subjects, not 50 decisions


ENUM = """
study: enum3
title: Three rounds against grim trigger, every branch
prompt: {template: "${question}", answer_prefix: "\\nAnswer:"}
design: {subjects: 2, seed: 4}
session:
  paths: enumerate
  memory: transcript
  variables: {total: 0}
  players:
    partner: {strategy: grim_trigger, responds_to: move, cooperate: C, defect: D}
  blocks:
    - id: game
      rounds: {max: 3, continue: 0.75}
      items:
        - id: move
          text: "Round ${round}. Choose C or D."
          response: {type: choice, style: words, options: [C, D]}
      payoffs:
        rules: {payoff: "(3 if partner == 'C' else 0) + (2 if move == 'D' else 0)"}
      update: {total: "total + payoff"}
      feedback: "The other chose ${partner}. You earned ${payoff}."
"""


def test_enumerated_paths_sum_to_one(smollm2, tmp_path):
    (tmp_path / "s.yaml").write_text(ENUM)
    study, r = _run(tmp_path / "s.yaml", tmp_path / "run", smollm2)
    paths = r[r["condition"] == "path"]
    for s, d in paths.groupby("subject"):
        # 2 after round 1 (stop) + 2*2 after round 2 (stop) + 2*2*2 at the end
        assert len(d) == 2 + 4 + 8
        assert abs(d["weight"].sum() - 1) < 1e-9
        assert sorted(d["path"]) == list(range(1, 15))
    dec = r[r["condition"] == "decision"]
    # each node's reach is its parent's reach x the option's probability (x 0.75 between rounds)
    nodes = dec.drop_duplicates("trial").set_index("trial")
    for t, rec in nodes.iterrows():
        if rec["parent"]:
            p = dec[(dec["trial"] == rec["parent"]) & (dec["response"] == t.split("|")[-1].split(".")[-1])]
            assert abs(rec["reach"] - nodes.loc[rec["parent"], "reach"] * p["weight"].iat[0] * 0.75) < 1e-12
    # expected payoff of round 1, exactly: P(D) * 2 + 3 (the partner cooperates in round 1)
    first = dec[(dec["round"] == 1) & (dec["response"] == "D")].set_index("subject")["weight"]
    r1 = r[(r["condition"] == "round") & (r["round"] == 1)]
    ev = r1.assign(x=r1["weight"] * r1["payoff"]).groupby("subject")["x"].sum()
    assert np.allclose(ev.sort_index().to_numpy(), (3 + 2 * first.sort_index()).to_numpy(), atol=1e-12)


# ------------------------------------------------------------------------------ resume after SIGKILL

SMALL = ENUM.replace("paths: enumerate", "paths: 2").replace("subjects: 2", "subjects: 3")


def _answers(out: Path) -> int:
    try:
        with sqlite3.connect(out / "cache.sqlite", timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_sigkill_mid_session_resumes_with_identical_rows(smollm2, tmp_path):
    (tmp_path / "s.yaml").write_text(SMALL)
    _, ref = _run(tmp_path / "s.yaml", tmp_path / "ref", smollm2, batch_size=4)
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "simsubjects", "collect", str(tmp_path / "s.yaml"), "--out", str(out), "-q",
           "--batch-size", "4"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 400
    while _answers(out) < 3 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = _answers(out)
    assert 0 < killed_at < ref["trial"][ref["condition"] == "decision"].nunique()
    assert not (out / "responses.parquet").exists()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    got = pd.read_parquet(out / "responses.parquet")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), ref.reset_index(drop=True), check_exact=True)
