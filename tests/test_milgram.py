"""Milgram TE: scenario data, first-sentence extraction, the simulator's control flow on scripted
decisions (no model), the judgment rules, the Milgram (1963) reference, the survival statistics,
and both scenarios end to end through the CLI with the bundled model."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from simsubjects.studies.milgram.analysis import analyze_milgram, kaplan_meier, logrank_test, records_text
from simsubjects.cli.commands import main
from simsubjects.datasets.milgram1963 import load_milgram1963
from simsubjects.collect.models.base import ChoiceResult
from simsubjects.studies.milgram.design import decide, first_sentence, scenario, simulate, subject_pool

CLASSIC = scenario("milgram")
NOVEL = scenario("milgram_novel")


# --------------------------------------------------------------------------- data
@pytest.mark.parametrize("scen", [CLASSIC, NOVEL])
def test_stages_and_prods(scen):
    assert [s["level"] for s in scen["stages"]] == list(range(1, 31))
    assert sum(1 + bool(s["no_punish_text"]) for s in scen["stages"]) == 36
    assert len(scen["prods"]) == 4
    assert [(p["stage_level"], p["when"]) for p in scen["special_prods"]] == [(21, "first disobedience")]


def test_classic_special_prod_is_at_315_volts():
    assert CLASSIC["stages"][20]["voltage"] == 315 and CLASSIC["special_prods"][0]["voltage"] == 315


def test_subject_pool():
    p = subject_pool()
    assert len(p) == 100 and p["subject"].is_unique
    assert p.groupby(["group", "title"]).size().eq(10).all()
    assert list(p["subject"].head(2)) == [f"Mr. {p['surname'].iat[0]}", f"Ms. {p['surname'].iat[0]}"]


# --------------------------------------------------------------------------- first sentence
@pytest.mark.parametrize("completion,action,valid", [
    (" shocks the learner. Then he waits.", " shocks the learner.", True),
    (" asks Mr. Wallace to answer. Then", " asks Mr. Wallace to answer.", True),
    (" hesitates; then he shocks.", " hesitates.", True),
    (' says "stop!" and leaves.', ' says "stop!"', True),
    ("shocks the learner.", " shocks the learner.", True),
    (" shocks the learner\n\nThe experimenter nods.", " shocks the learner", False),
    ("\nThe experimenter nods.", "", False),
    ("'s hands shake.", "'s hands shake.", True),
])
def test_first_sentence(completion, action, valid):
    assert first_sentence(completion) == (action, valid)


# --------------------------------------------------------------------------- scripted simulator
def result(p_positive):
    """A 2-choice answer with normalized P(positive) = p (completions are [negative, positive])."""
    return ChoiceResult.from_logprobs([math.log(1 - p_positive), math.log(p_positive)])


class Script:
    """Generator + judge driven by per-subject action lists; judges read the action's keywords."""

    def __init__(self, actions: dict[str, list[str]], default=" shocks the learner."):
        self.actions, self.default = actions, default
        self.used = {k: 0 for k in actions}
        self.prompts: list[list[str]] = []

    def generate(self, prompts):
        self.prompts.append(prompts)
        out = []
        for p in prompts:
            name = next(n for n in self.actions if p.endswith("\n\n" + n))
            seq = self.actions[name]
            out.append(seq[self.used[name]] if self.used[name] < len(seq) else self.default)
            self.used[name] += 1
        return out

    def judge(self, reqs):
        out = []
        for r in reqs:
            action = r.prompt.split("\nAction: ", 1)[1].split("\n", 1)[0]
            if "did stop or did not stop" in r.prompt:
                out.append(result(0.9 if "stops the experiment" in action else 0.1))
            else:
                out.append(result(0.1 if "refuses" in action else 0.9))
        return out


def run(actions, scen=CLASSIC, **kw):
    people = [{"subject": n, "title": n.split()[0], "surname": n.split()[1], "group": "g"} for n in actions]
    s = Script(actions)
    return s, {r["subject"]: r for r in simulate(scen, people, s.generate, s.judge, **kw)}


def punish_steps_before(level):
    """Completions needed to obey every step of the stages before `level`."""
    return sum(1 + bool(s["no_punish_text"]) for s in CLASSIC["stages"][: level - 1])


def test_prods_in_order_then_the_experiment_ends():
    n = punish_steps_before(17)
    _, recs = run({"Mr. A": [" shocks the learner."] * n + [" refuses to go on."] * 5})
    r = recs["Mr. A"]
    assert r["cause"] == "prods exhausted" and r["breakoff_level"] == 16
    last = r["steps"][-5:]
    assert [s["level"] for s in last] == [17] * 5 and [s["attempt"] for s in last] == [0, 1, 2, 3, 4]
    assert [s["experimenter"] for s in last] == ["prod 1", "prod 2", "prod 3", "prod 4", "end"]
    tail = r["text"][r["text"].rindex("255 volts"):]
    positions = [tail.index(p.replace("$subject", "Mr. A")) for p in CLASSIC["prods"]]
    assert positions == sorted(positions)
    assert r["text"].endswith("Mr. A refuses to go on.\n\nThe experimenter ends the experiment.")
    assert CLASSIC["special_prods"][0]["text"].replace("$subject", "Mr. A") not in r["text"]


def test_special_prod_only_on_first_disobedience_at_315_volts():
    n = punish_steps_before(21)
    seq = [" shocks the learner."] * n + [" refuses to go on.", " refuses again.", " shocks the learner."]
    seq += [" refuses at 330.", " shocks the learner."]
    _, recs = run({"Ms. B": seq}, max_stages=22)
    steps = recs["Ms. B"]["steps"]
    at = {lvl: [s["experimenter"] for s in steps if s["level"] == lvl] for lvl in (21, 22)}
    assert at[21] == ["prod 1*", "prod 2", None]  # the count advances past prod 1
    assert at[22] == ["prod 1", None]  # an ordinary stage starts with prod 1 again
    special = CLASSIC["special_prods"][0]["text"].replace("$subject", "Ms. B")
    assert recs["Ms. B"]["text"].count(special) == 1
    assert recs["Ms. B"]["cause"] == "max stages" and recs["Ms. B"]["breakoff_level"] == 22


def test_reattempt_prompt_does_not_repeat_the_stage_text():
    n = punish_steps_before(2)
    s, _ = run({"Mr. C": [" shocks the learner."] * n + [" refuses to go on."]}, max_stages=2)
    prompt = s.prompts[n + 1][0]  # the attempt after the prod
    prod = CLASSIC["prods"][0].replace("$subject", "Mr. C")
    assert prompt.endswith("Mr. C refuses to go on.\n\n" + prod + "\n\nMr. C")
    assert prompt.count("slight shock, 30 volts. The experimenter is sitting") == 1


def test_termination_ends_at_once_and_break_off_is_last_obeyed_level():
    s, recs = run({"Mr. D": [" shocks the learner."] * 3 + [" stops the experiment."],
                   "Ms. E": [" refuses to go on."] + [" stops the experiment."]})
    d, e = recs["Mr. D"], recs["Ms. E"]
    # Mr. D: levels 1-3 obeyed, the no-punish step of level 4 comes next and ends it
    assert (d["cause"], d["breakoff_level"], d["steps"][-1]["level"], d["steps"][-1]["kind"]) == \
        ("terminated", 3, 4, "no_punish")
    assert (e["cause"], e["breakoff_level"], len(e["steps"])) == ("terminated", 0, 2)
    assert s.used == {"Mr. D": 4, "Ms. E": 2}  # no generation after a termination
    # lockstep: one generate call per step, with every subject still running
    assert [len(p) for p in s.prompts] == [2, 2, 1, 1]


def test_no_punish_step_correction_and_completion():
    seq = [" shocks the learner."] * 36
    _, recs = run({"Mr. F": seq})
    r = recs["Mr. F"]
    assert (r["cause"], r["breakoff_level"], len(r["steps"])) == ("completed", 30, 36)
    corrections = [s for s in r["steps"] if s["experimenter"] == "correction"]
    assert [s["level"] for s in corrections] == [4, 6, 10, 13, 14, 16]
    assert all(s["kind"] == "no_punish" and s["outcome"] == "punished" for s in corrections)
    assert r["text"].count("The experimenter tells Mr. F to follow the correct experimental procedure.") == 6


def test_novel_scenario_runs_on_the_same_simulator():
    n = punish_steps_before(21)
    _, recs = run({"Ms. G": [" presses the button."] * n + [" refuses to go on."] * 5}, scen=NOVEL)
    r = recs["Ms. G"]
    assert r["scenario"] == "milgram_novel" and r["breakoff_level"] == 20 and r["cause"] == "prods exhausted"
    assert [s["experimenter"] for s in r["steps"][-5:]] == ["prod 1*", "prod 2", "prod 3", "prod 4", "end"]
    assert r["text"].startswith("This document contains a record of Ms. G's actions")


def test_judgment_rules():
    spec = CLASSIC["judgments"]["termination"]  # completions [" not stop", " stop"]
    res = ChoiceResult.from_logprobs([math.log(0.3), math.log(0.1)])
    norm, scored = decide(res, spec, "normalized"), decide(res, spec, "scored")
    assert norm["p"] == pytest.approx(0.25) and norm["positive"] is False
    assert scored["p_scored"] == pytest.approx(0.3) and scored["positive"] is True  # P(not stop) <= 0.5
    assert decide(ChoiceResult.from_logprobs([math.log(0.6), math.log(0.3)]), spec, "scored")["positive"] is False


# --------------------------------------------------------------------------- humans and statistics
def test_milgram1963_reference_is_65_percent_obedient():
    h = load_milgram1963()
    assert len(h) == 40 and set(h["source"]) == {"human"} and set(h["method"]) == {"observed"}
    counts = h["breakoff_level"].value_counts().to_dict()
    assert counts == {30: 26, 20: 5, 21: 4, 22: 2, 23: 1, 24: 1, 25: 1}
    t = analyze_milgram(h)
    ob = t["obedience"].set_index("model").loc["milgram1963"]
    assert ob["percent_obedient"] == pytest.approx(65.0)
    sv = t["survival"].set_index("level")["share_obeying"]
    assert sv[20] == 1.0 and sv[21] == pytest.approx(35 / 40) and sv[30] == pytest.approx(0.65)


def test_kaplan_meier_without_censoring_is_the_plain_share():
    levels = np.array([0, 3, 3, 10, 30, 30])
    km = kaplan_meier(levels, np.zeros(6, bool)).set_index("level")["share_obeying"]
    for lvl in (0, 1, 3, 4, 10, 11, 30):
        assert km[lvl] == pytest.approx(np.mean(levels >= lvl))
    # a run censored after level 5 leaves the risk set without an event
    km = kaplan_meier(np.array([5, 2, 30]), np.array([True, False, False])).set_index("level")
    assert km.loc[3, "share_obeying"] == pytest.approx(2 / 3) and km.loc[6, "at_risk"] == 1


def test_logrank_by_hand():
    # A: one event at level 1, one completed; B: two completed. At t=1: n=4, d=1, n_A=2:
    # E_A = 0.5, V = 1 * 0.5 * 0.5 * 3/3 = 0.25, chi2 = 0.5^2 / 0.25 = 1.
    r = logrank_test([0, 30], [False, False], [30, 30], [False, False])
    assert r["statistic"] == pytest.approx(1.0) and r["p.value"] == pytest.approx(0.3173, abs=1e-4)
    same = logrank_test([20, 30, 25], [False] * 3, [20, 30, 25], [False] * 3)
    assert same["statistic"] == pytest.approx(0.0)


# --------------------------------------------------------------------------- end to end
@pytest.fixture
def bundled(monkeypatch, smollm2):
    monkeypatch.setattr("simsubjects.collect.pipeline.load_model", lambda spec, **kw: smollm2)
    return smollm2


@pytest.mark.parametrize("study,item", [("milgram", "milgram_classic"), ("milgram-novel", "milgram_novel")])
def test_cli_end_to_end(tmp_path, bundled, study, item):
    out = tmp_path / study
    args = ["collect", study, "--out", str(out), "--subjects", "1", "--max-stages", "1", "--max-tokens", "5", "-q"]
    assert main(args) == 0
    recs = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 1
    rec = recs[0]
    assert rec["text"].startswith(f"This document contains a record of {rec['subject']}'s actions")
    assert rec["cause"] in ("terminated", "prods exhausted", "max stages") and rec["breakoff_level"] in (0, 1)
    for s in rec["steps"]:
        assert 0 <= s["termination"]["p"] <= 1 and 0 < s["obedience"]["validity"] <= 1
    r = pd.read_parquet(out / "responses.parquet")
    assert (r.loc[r["source"] == "human", "model"] == "milgram1963").sum() == 40  # Milgram (1963) beside the model
    b = r[(r["condition"] == "breakoff") & (r["source"] == "model")]
    assert len(b) == 1 and b["response"].iat[0] == str(rec["breakoff_level"]) and b["item"].iat[0] == item
    j = r[r["condition"] == "judgment"]
    assert len(j) == 4 * len(rec["steps"]) and np.allclose(j.groupby("trial")["weight"].sum(), 1)
    first = r.copy()
    assert main(args) == 0  # resumed entirely from the cache: the same record and table
    pd.testing.assert_frame_equal(first, pd.read_parquet(out / "responses.parquet"))
    assert main(["analyze", str(out)]) == 0
    assert (out / "analysis" / "fig7_survival.png").stat().st_size > 0
    assert len(pd.read_csv(out / "analysis" / "breakoff.csv")) == 2 * 31  # model + humans, levels 0-30
    assert rec["subject"] in records_text(out)
    # two runs analyzed together: the shared human rows count once
    assert main(["analyze", str(out), str(out), "--out", str(tmp_path / "two")]) == 0
    ob = pd.read_csv(tmp_path / "two" / "obedience.csv").set_index("model")
    assert ob.loc["milgram1963", "n"] == 40


class FakeModel:
    """Answers every completion with one sentence and every 2-choice prompt with Z = e^-1 + e^-2."""

    def complete(self, reqs):
        from simsubjects.collect.models.base import CompletionResult

        return [CompletionResult(texts=[" shocks the learner. And"]) for _ in reqs]

    def choose(self, reqs):
        return [ChoiceResult.from_logprobs([-1.0, -2.0]) for _ in reqs]


def test_validate_reports_validity_rates_only():
    from simsubjects.studies.milgram.design import build_trials, validate

    trials, _ = build_trials("milgram_novel", subjects=3)
    v = validate(FakeModel(), trials, {"seed": 0}, n=2)
    assert list(v.columns) == ["measure", "mean", "min", "max", "size"]
    m = v.set_index("measure")
    assert m.loc["first sentence found", "mean"] == 1.0 and (m["size"] == 2).all()
    assert m.loc["termination judgment Z", "mean"] == pytest.approx(math.exp(-1) + math.exp(-2))
