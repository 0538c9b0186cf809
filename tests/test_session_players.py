"""Model players in sessions (docs/studies.md, "Players"), and the trust-game example beside people.

* A model player (`model: same` with its own persona) moves by a decision: its full option
  distribution is recorded (rows with `player` = its name) and equals the model's own scoring of the
  player's prompt rebuilt by hand; its move is drawn by the path's seeded generator.
* Enumerated, a model player's options are branches: the leaves sum to 1 within 1e-9.
* `model: hf:FILE` (another model spec) is loaded and asked: on the same weights, the same numbers.
* examples/trust_bdm: the bundled people's numbers equal the ones transcribed from the cited page,
  and the example runs on the embedded model with model and people side by side (unit: subject / person).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.cli.commands import main
from simsubjects.studyfile.session import load_session

ROOT = Path(__file__).resolve().parents[1]
TRUST = ROOT / "examples" / "trust_bdm"

GAME = """
study: ultimatum2
title: An ultimatum game with both roles played
prompt: {template: "${question}", answer_prefix: "\\nAnswer:"}
design: {subjects: 3, seed: 7}
session:
  memory: transcript
  paths: __PATHS__
  variables: {total: 0}
  players:
    responder:
      model: __MODEL__
      persona: "You are the responder in a game. Another person splits $$10 between you and them."
      text: "Round ${round}. The other person offers you ${offer} dollars. Do you accept or reject?"
      response: {type: choice, style: words, options: [accept, reject]}
  blocks:
    - id: game
      rounds: 2
      moves: {order: [offer, responder]}
      items:
        - id: offer
          text: "Round ${round}. You split $$10 with another person. Do you offer them 1 or 5 dollars?"
          response: {type: choice, style: words, options: ["1", "5"]}
      payoffs:
        rules:
          payoff: "(0 if responder == 'reject' else 9 if offer == '1' else 5)"
          responder_payoff: "(0 if responder == 'reject' else 1 if offer == '1' else 5)"
      update: {total: "total + payoff"}
      feedback: "The other person chose to ${responder}. You earned ${payoff}."
"""

PERSONA = "You are the responder in a game. Another person splits $10 between you and them."


def _write(tmp_path, model="same", paths="1", subjects=None) -> Path:
    text = GAME.replace("__MODEL__", model).replace("__PATHS__", paths)
    if subjects is not None:
        text = text.replace("subjects: 3", f"subjects: {subjects}")
    f = tmp_path / "game.yaml"
    f.write_text(text)
    return f


def _run(study_file, out, model, **params):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile.adapter import file_parameters
    from simsubjects.studyfile.session_def import session_def

    study = load_session(study_file)
    p = {"studyfile": file_parameters(study), "seed": study.seed, "paths": None, "session_scorer": "incremental-kv"}
    responses, _ = run_study(session_def(study, out=out), "smollm2", out, params=p, model=model,
                             show_progress=False, **params)
    return study, responses


@pytest.fixture(scope="module")
def game_run(smollm2, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ug")
    return _run(_write(tmp), tmp / "run", smollm2)


def test_model_player_decisions_are_recorded_exact_and_drawn(game_run, smollm2):
    from simsubjects.collect.models.base import ChoiceRequest
    from simsubjects.studyfile.session_run import _draw, _rng

    study, r = game_run
    dec = r[r["condition"] == "decision"]
    mine = dec[dec["player"] == "responder"]
    assert set(mine["item"]) == {"responder"} and set(dec.loc[dec["player"] == "subject", "item"]) == {"offer"}
    assert len(mine) == 3 * 2 * 2  # subjects x rounds x options
    by = dec.groupby("trial")
    assert np.allclose(by["weight"].sum(), 1.0, atol=1e-12) and (by["drawn"].sum() == 1).all()
    rounds = r[r["condition"] == "round"].set_index(["subject", "round"]).sort_index()
    for s, d in dec.groupby("subject"):
        d = d.sort_values(["step", "response"])
        steps = d.drop_duplicates("trial")
        # the subject offers, then the responder answers: steps 1..4, each the child of the one before
        assert steps["step"].tolist() == [1, 2, 3, 4] and steps["player"].tolist() == ["subject", "responder"] * 2
        assert steps["parent"].tolist() == [""] + steps["trial"].tolist()[:-1]
        rng = _rng(study.seed, "path", s, 1)  # one seeded generator per path draws both players' moves
        for _, g in d.groupby("step", sort=True):
            g = g.assign(response=g["response"].astype(str)).set_index("response")
            g = g.loc[[x for x in ("1", "5", "accept", "reject") if x in set(g.index)]]  # the options' order
            j = _draw(g["weight"].tolist(), float(rng.random()))
            assert g["drawn"].iloc[j] == 1
        # the round table carries the drawn moves and the payoff rules' values
        for rnd in (1, 2):
            row = rounds.loc[(s, rnd)]
            drawn = d[(d["round"] == rnd) & (d["drawn"] == 1)].set_index("player")["response"]
            assert row["offer"] == drawn["subject"] and row["responder"] == drawn["responder"]
            want = 0 if row["responder"] == "reject" else (9 if row["offer"] == "1" else 5)
            assert row["payoff"] == want
    # the responder's distribution is the model's on its own prompt: its persona, its own earlier
    # question and move (memory: transcript), not the subject's system text or feedback
    prompts, keys = [], []
    for s in ("s1", "s2", "s3"):
        text = PERSONA + "\n\n"
        for rnd in (1, 2):
            offer = rounds.loc[(s, rnd), "offer"]
            q = f"Round {rnd}. The other person offers you {offer} dollars. Do you accept or reject?\nAnswer:"
            prompts.append(text + q)
            keys.append((s, rnd))
            text += q + " " + rounds.loc[(s, rnd), "responder"] + "\n\n"
    res = smollm2.choose([ChoiceRequest(p, (" accept", " reject")) for p in prompts])
    for (s, rnd), one in zip(keys, res):
        got = mine[(mine["subject"] == s) & (mine["round"] == rnd)].set_index("response").loc[["accept", "reject"]]
        assert np.allclose(got["weight"].to_numpy(), one.probs, atol=1e-5, rtol=0), (s, rnd)


def test_model_player_branches_when_enumerated(smollm2, tmp_path):
    study, r = _run(_write(tmp_path, paths="enumerate", subjects=1), tmp_path / "run", smollm2)
    leaves = r[r["condition"] == "path"]
    assert len(leaves) == (2 * 2) ** 2  # offer x responder, two rounds
    assert abs(leaves["weight"].sum() - 1) < 1e-9
    dec = r[r["condition"] == "decision"]
    # responder nodes: round 1 after each of the 2 offers; round 2 after each of the 4 round-1 leaves x 2 offers
    assert len(dec[dec["player"] == "responder"].drop_duplicates("trial")) == 2 + 2 * 2 * 2


def test_another_model_spec_is_loaded_and_asked(smollm2, tmp_path, game_run):
    """`model: hf:FILE` loads a second model (here the embedded model's own GGUF file, so the numbers
    must equal the `model: same` run's: same prompts, same weights)."""
    from simsubjects.collect.models import smollm2_path

    study, r = _run(_write(tmp_path, model=f"'hf:{smollm2_path()}'"), tmp_path / "run", smollm2)
    _, same = game_run
    key = ["subject", "round", "player", "response"]
    a = r[r["condition"] == "decision"].set_index(key).sort_index()["weight"]
    b = same[same["condition"] == "decision"].set_index(key).sort_index()["weight"]
    assert a.index.equals(b.index) and np.allclose(a.to_numpy(), b.to_numpy(), atol=1e-6, rtol=0)


# ------------------------------------------------------------------------------ the trust game example

# Transcribed from EconPort's summary of Berg, Dickhaut & McCabe (1995), section "Subjects' Behavior
# in the Investment Game Treatment" (examples/trust_bdm/SOURCE.md): of 32 senders, 2 sent $0 and 30
# a positive amount, $5.16 on average; five sent $10, one $8, three $7, five $6, six $5, two $4,
# four $3, two $2, two $1.
CITED = {10: 5, 8: 1, 7: 3, 6: 5, 5: 6, 4: 2, 3: 4, 2: 2, 1: 2, 0: 2}


def test_trust_people_equal_the_cited_numbers():
    with open(TRUST / "cited.csv", newline="") as f:
        bundled = {int(r["sent"]): int(r["senders"]) for r in csv.DictReader(f)}
    assert {k: v for k, v in bundled.items() if v} == CITED and set(bundled) == set(range(11))
    n = sum(bundled.values())
    assert n == 32 and n - bundled[0] == 30 and bundled[0] == 2
    assert round(sum(k * v for k, v in bundled.items()) / n, 2) == 5.16  # the page's mean
    import importlib.util

    spec = importlib.util.spec_from_file_location("bundle_bdm1995", ROOT / "scripts" / "bundle_bdm1995.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    people = pd.read_csv(TRUST / "people.csv")
    fresh = pd.DataFrame(mod.people_rows())
    assert people.astype(str).equals(fresh.astype(str))
    study = load_session(TRUST / "study.yaml")  # what the study file reads: person-level values
    means = study.people.groupby("measure")["value"].mean()
    assert means["mean sent"] == pytest.approx(165 / 32)
    assert means[[f"share send={k}" for k in range(11)]].tolist() == [bundled[k] / 32 for k in range(11)]


def test_trust_example_runs_beside_people(smollm2, tmp_path):
    out = tmp_path / "run"
    study, r = _run(TRUST / "study.yaml", out, smollm2)
    dec = r[r["condition"] == "decision"]
    assert set(dec["player"]) == {"subject", "receiver"} and dec["subject"].nunique() == 8
    rounds = r[r["condition"] == "round"]
    share = {"none": 0, "one third": 1 / 3, "one half": 1 / 2, "two thirds": 2 / 3}
    for rec in rounds.to_dict("records"):
        sent = int(rec["send"])
        ret = 3 * sent * share[rec["receiver"]]
        assert rec["sent"] == sent and rec["returned"] == pytest.approx(ret)
        assert rec["payoff"] == pytest.approx(10 - sent + ret) and rec["receiver_payoff"] == pytest.approx(10 + 3 * sent - ret)
    assert main(["analyze", str(out), "--no-plots"]) == 0
    bp = pd.read_csv(out / "analysis" / "beside_people.csv")
    for m in ["mean sent", *(f"share send={k}" for k in range(11))]:
        got = bp[bp["measure"] == m].set_index("unit")
        assert set(got.index) == {"subject", "person"}, m
        assert got.loc["person", "n"] == 32 and got.loc["subject", "n"] == 8
    assert bp[(bp["measure"] == "mean sent") & (bp["unit"] == "person")]["estimate"].item() == pytest.approx(165 / 32)
    side = pd.read_csv(out / "analysis" / "model_and_people.csv").set_index("measure")  # the report's table
    assert len(side) == 12 and side.loc["mean sent", "people"] == pytest.approx(165 / 32)
    assert side.loc["share send=5", "people"] == pytest.approx(6 / 32) and (side["n_subjects"] == 8).all()
    model_mean = rounds["sent"].mean()
    assert bp[(bp["measure"] == "mean sent") & (bp["unit"] == "subject")]["estimate"].item() == pytest.approx(model_mean)


# ------------------------------------------------------------------------------ memory as chat turns

def test_transcript_as_chat_turns_with_a_chat_template(smollm2, tmp_path):
    """With a chat template, each earlier decision is a user turn (feedback and question as shown)
    and an assistant turn (the answer): the recorded distributions equal the packed scorer's on
    chat turns built here by hand, and differ from the same session as text."""
    import copy

    from simsubjects.collect.models.base import ChoiceRequest

    chat = copy.copy(smollm2)  # the loaded weights, with the chat template on (no second load)
    chat.chat_template = True
    text = (ROOT / "examples" / "pd_tft" / "study.yaml").read_text()
    text = text.replace("subjects: 10", "subjects: 2").replace("rounds: 5", "rounds: 3")
    (tmp_path / "pd.yaml").write_text(text)
    study, r = _run_chat(tmp_path / "pd.yaml", tmp_path / "run", chat)
    _, plain = _run(tmp_path / "pd.yaml", tmp_path / "run_text", smollm2)
    dec = r[r["condition"] == "decision"]
    rounds = r[r["condition"] == "round"]
    reqs, keys = [], []
    for s in ("s1", "s2"):
        turns = [("system", study.system.strip())]
        before = ""
        for rec in rounds[rounds["subject"] == s].sort_values("round").to_dict("records"):
            q = f"Round {rec['round']}. Do you choose J or F?\nYour choice:"
            reqs.append(ChoiceRequest("", (" J", " F"), messages=tuple(turns + [("user", before + q)])))
            keys.append((s, rec["round"]))
            turns += [("user", before + q), ("assistant", rec["choice"])]
            before = (f"You chose {rec['choice']} and the other person chose {rec['partner']}. You earned "
                      f"{rec['payoff']:g} points (total {rec['total']:g}).\n\n")
    res = chat.choose(reqs)
    for (s, rnd), one in zip(keys, res):
        got = dec[(dec["subject"] == s) & (dec["round"] == rnd)]
        assert got["response"].tolist() == ["J", "F"]
        assert np.allclose(got["weight"].to_numpy(), one.probs, atol=1e-5, rtol=0), (s, rnd)
    as_text = plain[plain["condition"] == "decision"]["weight"].to_numpy()
    assert np.abs(dec["weight"].to_numpy() - as_text).max() > 1e-3  # chat turns are another prompt


def _run_chat(study_file, out, model):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile.adapter import file_parameters
    from simsubjects.studyfile.session_def import session_def

    study = load_session(study_file)
    p = {"studyfile": file_parameters(study), "seed": study.seed, "paths": None, "session_scorer": "incremental-kv",
         "chat_template": True}
    responses, _ = run_study(session_def(study, out=out), "smollm2", out, params=p, model=model, show_progress=False)
    return study, responses


from tests.llama_server import llama_server  # noqa: E402,F401 (fixture)


def test_chat_turns_as_messages_on_the_loopback_llama_server(llama_server, tmp_path, monkeypatch, capsys):
    """--chat-template on an OpenAI-compatible server: the session's turns go as chat messages, and
    each decision is the chat endpoint's own top log-probabilities for the messages rebuilt here."""
    import httpx

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    text = (ROOT / "examples" / "pd_tft" / "study.yaml").read_text()
    (tmp_path / "s.yaml").write_text(text.replace("subjects: 10", "subjects: 2").replace("rounds: 5", "rounds: 2"))
    out = tmp_path / "run"
    assert main(["collect", str(tmp_path / "s.yaml"), "--model", f"openai:smollm2@{llama_server}", "--chat-template",
                 "--out", str(out), "-q"]) == 0, capsys.readouterr().err
    r = pd.read_parquet(out / "responses.parquet")
    dec = r[r["condition"] == "decision"]
    assert set(dec["method"]) == {"exact"} and len(dec) == 2 * 2 * 2
    assert np.allclose(dec.groupby("trial")["weight"].sum(), 1.0, atol=1e-9)
    study = load_session(tmp_path / "s.yaml")
    first = r[(r["condition"] == "round") & (r["round"] == 1)].sort_values("subject").iloc[0]
    q1, q2 = ("Round 1. Do you choose J or F?\nYour choice:", "Round 2. Do you choose J or F?\nYour choice:")
    fb = (f"You chose {first['choice']} and the other person chose {first['partner']}. You earned "
          f"{first['payoff']:g} points (total {first['total']:g}).\n\n")
    messages = [{"role": "system", "content": study.system.strip()}, {"role": "user", "content": q1},
                {"role": "assistant", "content": first["choice"]}, {"role": "user", "content": fb + q2}]
    j = httpx.post(f"{llama_server}/chat/completions", timeout=60,
                   json={"model": "smollm2", "messages": messages, "max_tokens": 1, "logprobs": True,
                         "top_logprobs": 20, "temperature": 0.0}).json()
    top = {t["token"]: t["logprob"] for t in j["choices"][0]["logprobs"]["content"][0]["top_logprobs"]}
    lp = np.array([top["J"], top["F"]])
    want = np.exp(lp - lp.max()) / np.exp(lp - lp.max()).sum()
    got = dec[(dec["subject"] == first["subject"]) & (dec["round"] == 2)]
    assert got["response"].tolist() == ["J", "F"] and np.allclose(got["weight"].to_numpy(), want, atol=1e-9)
