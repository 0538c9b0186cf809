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
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.cli.commands import main
from simsubjects.studyfile import expr as X
from simsubjects.studyfile.session import load_session
from tests import forked
from tests.bad_input import assert_one_line_exit_2

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
    assert_one_line_exit_2(BAD / f"{name}.yaml", tmp_path, capsys, EXPECTED[name])


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
    p = {"studyfile": file_parameters(study), "seed": study.seed, "paths": params.pop("paths", None),
         "session_scorer": "incremental-kv"}
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
    from simsubjects.studyfile.session_run import _draw, _rng

    for s, d in dec.groupby("subject"):
        rng = _rng(study.seed, "path", s, 1)
        for t, g in d.groupby("step"):
            j = _draw(g["weight"].tolist(), float(rng.random()))
            assert g["drawn"].iloc[j] == 1


def test_pd_distribution_is_the_models_on_the_rebuilt_transcript(pd_run, smollm2):
    """Round 3: each subject's prompt rebuilt by hand from the rows (system, the earlier rounds, their
    feedback), scored from scratch by the packed scorer, gives the recorded distributions (which the
    run computed with reused keys/values: the same numbers up to float sums in another order, ~1e-6;
    a wrong transcript moves them by far more)."""
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
        assert np.allclose(got["weight"].to_numpy(), one.probs, atol=1e-5, rtol=0)


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
    """SIGKILL after a few cached answers, then the same command again: the rows equal an uninterrupted
    run's exactly. Each start is forked from a fork server that imported torch once (tests/forked.py)."""
    (tmp_path / "s.yaml").write_text(SMALL)
    _, ref = _run(tmp_path / "s.yaml", tmp_path / "ref", smollm2, batch_size=4)
    out, log = tmp_path / "killed", tmp_path / "killed.log"
    argv = ["collect", str(tmp_path / "s.yaml"), "--out", str(out), "-q", "--batch-size", "4"]
    ctx = forked.context()
    proc = forked.Start(ctx, argv, log)
    deadline = time.time() + 400
    while _answers(out) < 3 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = _answers(out)
    assert 0 < killed_at < ref["trial"][ref["condition"] == "decision"].nunique()
    assert not (out / "responses.parquet").exists()
    assert forked.Start(ctx, argv, log).wait() == 0, log.read_text(errors="replace")[-2000:]
    got = pd.read_parquet(out / "responses.parquet")
    pd.testing.assert_frame_equal(got.reset_index(drop=True), ref.reset_index(drop=True), check_exact=True)


# ------------------------------------------------------------------------------ Dal Bó & Fréchette (2011)

DALBO = ROOT / "examples" / "pd_dalbo"
# the article's decisions, bundled with their source and GPL-3 licence so the test runs on a plain clone
DF2011 = ROOT / "tests" / "data" / "dalbo2011" / "DF2011.rda"


def test_dalbo_bundled_decisions_are_the_source_file():
    """The bundled copy is the file its SOURCE.md names (checksum read from there); beside the project's
    shared data folder, it is also byte for byte that file."""
    import hashlib
    import re

    recorded = re.search(r"sha256: ([0-9a-f]{64})", (DF2011.parent / "SOURCE.md").read_text()).group(1)
    assert hashlib.sha256(DF2011.read_bytes()).hexdigest() == recorded
    shared = ROOT.parent / "shared" / "data" / "games" / "DF2011.rda"
    if shared.exists():
        assert shared.read_bytes() == DF2011.read_bytes()


def test_dalbo_people_equal_a_fresh_computation_from_the_article_data():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from bundle_dalbo2011 import people
    finally:
        sys.path.pop(0)
    fresh = people(DF2011)
    bundled = pd.read_csv(DALBO / "people.csv", keep_default_na=False)
    assert len(bundled) == len(fresh) and bundled["person"].nunique() == 266
    assert (bundled["person"].tolist() == fresh["person"].tolist())
    assert np.allclose(bundled["value"].astype(float), fresh["value"].astype(float), atol=1e-6)
    assert (bundled["n"].astype(int).to_numpy() == fresh["n"].to_numpy()).all()


def test_dalbo_payoffs_are_table_1():
    """The payoff rules of the study file give the article's Table 1 in every treatment."""
    study = load_session(DALBO / "study.yaml")
    rules = dict(study.session.blocks[0].rules)
    for R in (32, 40, 48):
        for (me, other), (mine, theirs) in {("J", "J"): (R, R), ("J", "F"): (12, 50), ("F", "J"): (50, 12),
                                            ("F", "F"): (25, 25)}.items():
            env = {"R": R, "choice": me, "partner": other}
            assert X.evaluate(rules["payoff"], env) == mine
            assert X.evaluate(rules["partner_payoff"], env) == theirs
    assert sorted(study.subjects["treatment"].unique()) == ["D5R32", "D5R40", "D5R48", "D75R32", "D75R40", "D75R48"]


def test_dalbo_example_beside_people_subject_and_person_units(smollm2, tmp_path):
    """One subject per treatment (the example has four): the model and people tables by round and
    treatment, each computed on subject- or person-level values, and the Welch tests."""
    from scipy import stats

    for f in ("study.yaml", "people.csv"):
        (tmp_path / f).write_bytes((DALBO / f).read_bytes())
    subjects = pd.read_csv(DALBO / "subjects.csv")
    subjects.groupby("treatment").head(1).to_csv(tmp_path / "subjects.csv", index=False)
    study, r = _run(tmp_path / "study.yaml", tmp_path / "run", smollm2)
    assert main(["analyze", str(tmp_path / "run"), "--no-plots"]) == 0
    side = pd.read_csv(tmp_path / "run" / "analysis" / "beside_people.csv")
    first = side[(side["round"] == 1) & side["block"].isna()]
    people = pd.read_csv(DALBO / "people.csv", keep_default_na=False)
    for t in subjects["treatment"].unique():
        p = people[(people["treatment"] == t) & (people["round"].astype(str) == "1")]
        got = first[(first["treatment"] == t) & (first["unit"] == "person")]
        assert got["n"].iat[0] == p["person"].nunique()
        assert abs(got["estimate"].iat[0] - p["value"].astype(float).mean()) < 1e-12
        m = first[(first["treatment"] == t) & (first["source"] == "model")]
        dec = r[(r["condition"] == "decision") & (r["treatment"] == t) & (r["round"] == 1) & (r["response"] == "J")]
        assert m["n"].iat[0] == 1 and abs(m["estimate"].iat[0] - dec["weight"].iat[0]) < 1e-12
    assert (side.loc[side["source"] == "model", "unit"] == "subject").all()
    assert (side.loc[side["source"] != "model", "unit"] == "person").all()


def test_beside_people_welch_test_is_scipys_on_subject_and_person_values():
    """The Welch test of beside_people on made-up rows: scipy's ttest_ind(equal_var=False) on each
    subject's mean (over its sampled paths, each of weight 1) and each person's value, never on decisions."""
    from scipy import stats

    from simsubjects.studyfile.session_analysis import beside_people

    study = load_session(PD)
    rows = []
    for s, ps in (("s1", [0.2, 0.4]), ("s2", [0.7, 0.9]), ("s3", [0.5, 0.5])):
        for path, p in enumerate(ps, 1):
            for lab, w in (("J", p), ("F", 1 - p)):
                rows.append({"subject": s, "item": "choice", "response": lab, "weight": w, "reach": p,
                             "round": 1, "path": path, "condition": "decision", "trial": f"{s}|p{path}|1"})
    dec = pd.DataFrame(rows)
    study.people = pd.DataFrame({"respondent": ["a", "b", "c", "d"], "measure": "share choice=J",
                                 "value": [0.1, 0.3, 0.2, 0.6], "round": 1})
    study.people_by = ["round"]
    side, tests = beside_people(study, dec, dec.iloc[:0])
    model = np.array([0.3, 0.8, 0.5])
    ref = stats.ttest_ind(model, [0.1, 0.3, 0.2, 0.6], equal_var=False)
    assert tests["n_model"].iat[0] == 3 and tests["n_people"].iat[0] == 4
    assert abs(tests["statistic"].iat[0] - ref.statistic) < 1e-12 and abs(tests["p.value"].iat[0] - ref.pvalue) < 1e-12
    assert abs(side.loc[side["source"] == "model", "estimate"].iat[0] - model.mean()) < 1e-12


# ------------------------------------------------------------------------------ an OpenAI-compatible server

from tests.llama_server import llama_server  # noqa: E402,F401 (fixture)


def test_session_on_the_loopback_llama_server(llama_server, tmp_path, monkeypatch, capsys):
    """The same session on llama.cpp's OpenAI-compatible server: exact where it returns
    log-probabilities, the transcript sent as text; each decision's distribution is the server's own
    answer to the prompt rebuilt from the rows."""
    from simsubjects.collect.models.base import ChoiceRequest
    from simsubjects.collect.models.openai_api import OpenAIModel

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    text = PD.read_text().replace("subjects: 10", "subjects: 2").replace("rounds: 5", "rounds: 2")
    (tmp_path / "s.yaml").write_text(text)
    out = tmp_path / "run"
    assert main(["collect", str(tmp_path / "s.yaml"), "--model", f"openai:smollm2@{llama_server}", "--out", str(out),
                 "-q"]) == 0, capsys.readouterr().err
    r = pd.read_parquet(out / "responses.parquet")
    dec = r[r["condition"] == "decision"]
    assert set(dec["method"]) == {"exact"} and len(dec) == 2 * 2 * 2
    assert np.allclose(dec.groupby("trial")["weight"].sum(), 1.0, atol=1e-9)
    rounds = r[r["condition"] == "round"].sort_values(["subject", "round"])
    first = rounds[rounds["round"] == 1].iloc[0]
    study = load_session(tmp_path / "s.yaml")
    prompt = (study.system + "\n\nRound 1. Do you choose J or F?\nYour choice: " + first["choice"] + "\n\n"
              f"You chose {first['choice']} and the other person chose {first['partner']}. You earned "
              f"{first['payoff']:g} points (total {first['total']:g}).\n\nRound 2. Do you choose J or F?\nYour choice:")
    m = OpenAIModel("smollm2", llama_server, timeout=30, max_retries=3, backoff=0.05)
    res = m.choose([ChoiceRequest(prompt, (" J", " F"))])[0]
    got = dec[(dec["subject"] == first["subject"]) & (dec["round"] == 2)]
    assert np.allclose(got["weight"].to_numpy(), res.probs, atol=1e-9)


def test_paths_option_and_replicate_plan(tmp_path, capsys):
    """--paths is refused where it means nothing (before any model loads); a session file is a row of
    `replicate`'s plan like any study file."""
    from simsubjects.cli.replicate import plan_all

    other = ROOT / "tests" / "data" / "studyfiles" / "bad" / "valid_base.yaml"
    assert main(["collect", str(other), "--paths", "2", "--out", str(tmp_path / "a")]) == 2
    assert "not a session" in capsys.readouterr().err
    (tmp_path / "e.yaml").write_text(ENUM)
    assert main(["collect", str(tmp_path / "e.yaml"), "--paths", "2", "--out", str(tmp_path / "b")]) == 2
    assert "enumerates its paths" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    papers, rows = plan_all([str(DALBO / "study.yaml")], 1.0, [], tmp_path / "rep")
    assert rows[0][2].name == "pd_dalbo" and rows[0][3]["session_scorer"] == "incremental-kv"
    trials, items = rows[0][2].make(**{k: v for k, v in rows[0][3].items() if k == "paths"})
    assert len(trials) == 24 and items["item"].tolist() == ["choice"]


def test_show_if_and_sequential_moves_on_the_model(smollm2, tmp_path):
    """show_if: q2 is asked only on the branches where q1 was 'No' (enumerated, so both happen);
    sequential moves: the partner's scheduled move of the round is in the question the subject sees."""
    text = (BAD / "valid_base.yaml").read_text().replace("memory: transcript", "memory: answers\n  paths: enumerate")
    text = text.replace("partner: {strategy: tit_for_tat, responds_to: move, first: C}",
                        "partner: {strategy: schedule, moves: [D, C, D]}")
    text = text.replace('text: "Round ${round}: C or D?"', 'text: "Round ${round}: the other chose ${partner}. C or D?"')
    text = text.replace("      rounds: 3\n", "      rounds: 2\n      moves: {order: [partner, move]}\n")
    (tmp_path / "s.yaml").write_text(text)
    study, r = _run(tmp_path / "s.yaml", tmp_path / "run", smollm2)
    dec = r[r["condition"] == "decision"].drop_duplicates("trial").set_index("trial")
    q1 = dec[dec["item"] == "q1"]
    for t, rec in dec[dec["item"] == "q2"].iterrows():
        assert rec["parent"] in q1.index and t.endswith("|No")  # the history after q1 was No
    assert len(dec[dec["item"] == "q2"]) == 2  # one per subject
    moves = dec[dec["item"] == "move"]
    assert set(moves.loc[moves["round"] == 1, "question"]) == {"Round 1: the other chose D. C or D?"}
    assert set(moves.loc[moves["round"] == 2, "question"]) == {"Round 2: the other chose C. C or D?"}
    paths = r[r["condition"] == "path"]
    # leaves per subject: q1=Yes (4 game leaves) + q1=No x q2 (2 x 4)
    assert (paths.groupby("subject").size() == 12).all()
    assert np.allclose(paths.groupby("subject")["weight"].sum(), 1.0, atol=1e-9)


@pytest.mark.filterwarnings("error::FutureWarning")  # transformers' past_key_values deprecation (issue 27)
def test_replicate_runs_a_session_file(smollm2, tmp_path):
    """`make demo` replicates a session file beside the papers: replicate's study-file checks (code that
    runs only with --allow-code) read a session as a session, not as a k-choice study file."""
    from simsubjects.cli.replicate import replicate

    src = tmp_path / "s"
    src.mkdir()
    cite = "Someone, A. (2020). A paper (the no-history treatment, 32 pairs)."
    (src / "study.yaml").write_text((BAD / "valid_base.yaml").read_text().replace(
        "title: A malformed session corpus", f"title: A malformed session corpus\ncitation: \"{cite}\""))
    man = replicate([str(src / "study.yaml")], "smollm2", tmp_path / "rep", show_progress=False,
                    loaded_model=smollm2, log=lambda m: None)
    assert [e["study"] for e in man["studies"]] == ["bad-session"]
    # the list of papers: the citation, then the title apart (issue 41: not "...32 pairs).: A malformed ...")
    assert list(man["paper_titles"].values()) == [f"{cite} — A malformed session corpus"]
    assert not man["studies"][0].get("error")
    assert (tmp_path / "rep" / "bad-session" / "responses.parquet").exists()


# ------------------------------------------------------------------------------ the incremental scorer

def test_path_scorer_buffers_branches_and_tails(smollm2, monkeypatch):
    """The incremental scorer writes each step's keys/values into the path's buffers in place (no copy of
    the transcript's cache per step). Unit: one request. Checked: multi-token completions (their tails use
    the room after the context), a branch from an earlier step (an entry whose buffer a later step already
    extended: it must get a copy, not overwrite the later step's positions), a cached entry asked again,
    and a fresh scorer rebuilding the same chain: every distribution equals the packed scorer's to 1e-5
    (float sums in another order) and the incremental ones equal each other bit for bit."""
    from simsubjects.collect.models.base import ChoiceRequest
    from simsubjects.collect.models.incremental import PathScorer

    opts = (" cooperate with them", " defect against them", " walk away")
    rules = ("You are playing a game with another person for several rounds. In each round you both choose what to "
             "do at the same time. If you both cooperate, you each get 48 points. If you cooperate and the other "
             "defects, you get 12 and the other gets 50. If you defect and the other cooperates, you get 50 and the "
             "other gets 12. If you both defect, you each get 25 points. Walking away ends the game for both. ")
    # long enough that the first step's buffer has room for steps 2 and 3: they extend it in place
    p1 = rules * 2 + "Round 1. What do you do?\nI"
    p2 = p1 + " cooperate with them.\nThey cooperated too. Round 2. What do you do?\nI"
    p2b = p1 + " walk away.\nThey were left alone. Round 2. What do you do now?\nI"
    p3 = p2 + " defect against them.\nThey cooperated. Round 3. What do you do?\nI"
    r1, r2, r2b, r3 = (ChoiceRequest(p, opts) for p in (p1, p2, p2b, p3))
    sc = PathScorer(smollm2)
    a1 = sc.choose([r1], [[]])[0]
    buf = next(iter(sc.entries.values()))[2].buf
    a2, a3 = sc.choose([r2], [[r1]])[0], sc.choose([r3], [[r1, r2]])[0]
    b2 = sc.choose([r2b], [[r1]])[0]  # a branch from step 1: step 3 has extended that buffer in place
    assert [e[2].buf for e in sc.entries.values()][:3] == [buf] * 3  # steps 1-3 share one buffer (in place)
    again3 = sc.choose([r3], [[r1, r2]])[0]
    held = {id(e[2].buf): e[2].buf for e in sc.entries.values()}
    assert sc.used == sum(b.nbytes() for b in held.values())  # the memory budget counts a shared buffer once
    fresh = PathScorer(smollm2)
    f3 = fresh.choose([r3], [[r1, r2]])[0]
    f2b = fresh.choose([r2b], [[r1]])[0]
    packed = smollm2.choose([r1, r2, r2b, r3])
    for got, ref in zip((a1, a2, b2, a3), packed):
        assert np.allclose(got.probs, ref.probs, atol=1e-5, rtol=0), (got.probs, ref.probs)
    assert list(again3.probs) == list(a3.probs) == list(f3.probs)
    assert list(f2b.probs) == list(b2.probs)
    # its attention (SDPA's lower-right causal mask, key/value heads shared) is bit for bit transformers' sdpa
    import contextlib

    from simsubjects.collect.models import incremental

    monkeypatch.setattr(incremental, "_attention", lambda model: contextlib.nullcontext())
    plain = PathScorer(smollm2)
    assert list(plain.choose([r3], [[r1, r2]])[0].probs) == list(a3.probs)
    assert smollm2.model.config._attn_implementation == "sdpa"
