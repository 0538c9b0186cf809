"""Issue 41, sessions (docs/studies.md, "Sessions"): each item's test fails on the code before its fix.

1. The pooled "all rounds" cell of a sampled run: each decision of a sampled path has weight 1, so a
   subject's value is the plain mean of its decisions' probabilities (rounds count equally), and a
   per-round cell with `paths: K` is each subject's plain mean over its paths; recomputed here by hand
   from the rows (unit: probability, then subject).
2. A text naming an item some path does not show (show_if, skip_to) is refused by `study check`
   (file:line, exit 2) unless it gives a default, `${item:-TEXT}`, which a run fills in.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsubjects.studyfile.session import load_session
from tests.bad_input import assert_one_line_exit_2
from tests.test_sessions import _run  # one session on the model, as test_sessions runs it

PD3 = """
study: pd3
title: Three rounds against tit-for-tat, two sampled paths per subject
prompt: {template: "${question}", answer_prefix: "\\nYour choice:"}
design: {subjects: 3, seed: 5}
session:
  memory: transcript
  paths: 2
  players:
    partner: {strategy: tit_for_tat, responds_to: choice, first: J}
  blocks:
    - id: game
      rounds: 3
      items:
        - id: choice
          text: "Round ${round}. Do you choose J or F?"
          response: {type: choice, style: words, options: [J, F]}
      payoffs:
        matrix: {J: {J: [48, 48], F: [12, 50]}, F: {J: [50, 12], F: [25, 25]}}
        moves: [choice, partner]
      feedback: "You chose ${choice}; the other chose ${partner}. You earned ${payoff}."
human:
  file: people.csv
  columns: {respondent: person, measure: measure, value: value, by: [round]}
"""

PEOPLE = """person,round,measure,value
a,,share choice=J,0.5
b,,share choice=J,0.25
a,2,share choice=J,1
b,2,share choice=J,0
"""


@pytest.fixture(scope="module")
def pd3_run(smollm2, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pd3")
    (tmp / "study.yaml").write_text(PD3)
    (tmp / "people.csv").write_text(PEOPLE)
    study, r = _run(tmp / "study.yaml", tmp / "run", smollm2)
    return study, r, tmp / "run"


def _p_j(r: pd.DataFrame) -> pd.DataFrame:
    """One row per decision: subject, path, round, reach and P(J) (by hand from the option rows)."""
    dec = r[r["condition"] == "decision"]
    out = []
    for trial, g in dec.groupby("trial"):
        w = g.set_index("response")["weight"].astype(float)
        out.append({"subject": g["subject"].iloc[0], "path": int(g["path"].iloc[0]), "round": int(g["round"].iloc[0]),
                    "reach": float(g["reach"].iloc[0]), "p": w["J"] / w.sum()})
    return pd.DataFrame(out)


def test_pooled_cell_of_sampled_paths_is_the_plain_mean_of_decisions(pd3_run):
    from simsubjects.studyfile.session_analysis import analyze_session

    study, r, _ = pd3_run
    d = _p_j(r)
    assert len(d) == 3 * 2 * 3 and d["reach"].nunique() > 3  # the fault needs reaches that differ
    tables = analyze_session(study, r, None)
    bp = tables["beside_people"]
    model = bp[(bp["source"] == "model")]
    pooled = model[model["round"].isna()].iloc[0]
    # by hand: a subject's value is the mean of P(J) over all its decisions (both paths, all rounds)
    per_subject = d.groupby("subject")["p"].mean()
    assert pooled["n"] == 3
    assert pooled["estimate"] == pytest.approx(per_subject.mean(), abs=1e-12)
    # ... and not the reach-weighted mean the old code took (round 1, reach 1, dominated it)
    old = d.assign(wp=d["p"] * d["reach"]).groupby("subject").apply(lambda g: g["wp"].sum() / g["reach"].sum())
    assert abs(old.mean() - per_subject.mean()) > 1e-6
    # the per-round cells with paths: 2: each subject's plain mean over its two paths
    r2 = model[model["round"] == 2].iloc[0]
    assert r2["estimate"] == pytest.approx(d[d["round"] == 2].groupby("subject")["p"].mean().mean(), abs=1e-12)
    cbr = tables["choice_by_round"]
    for rnd in (1, 2, 3):
        got = cbr[(cbr["round"] == rnd) & (cbr["response"] == "J")]["estimate"].iloc[0]
        assert got == pytest.approx(d[d["round"] == rnd].groupby("subject")["p"].mean().mean(), abs=1e-12)
    # subject_tests: the paired difference of those plain per-subject means, last round - first
    st = tables["subject_tests"]
    row = st[st["response"] == "J"].iloc[0]
    per = d.groupby(["subject", "round"])["p"].mean().unstack("round")
    assert row["estimate"] == pytest.approx((per[3] - per[1]).mean(), abs=1e-12)


# ------------------------------------------------------------------------------ 2. hidden placeholders

HIDDEN = """
study: hidden
title: A placeholder naming an item not shown on every path
design: {subjects: 2, seed: 1}
session:
  blocks:
    - id: b
      items:
        - id: q1
          text: "Do you work?"
          response: yesno
          __SKIP__
        - id: q2
          text: "Do you like it?"
          response: yesno
          __SHOW__
        - id: q3
          text: "__Q3__"
          response: yesno
      feedback: "__FEEDBACK__"
"""


def _hidden(tmp_path, name, show="", skip="", q3="Go on?", feedback="Thanks.") -> Path:
    f = tmp_path / f"{name}.yaml"
    f.write_text(HIDDEN.replace("__SHOW__", show).replace("__SKIP__", skip).replace("__Q3__", q3)
                 .replace("__FEEDBACK__", feedback))
    return f


@pytest.mark.parametrize("name, kw", [
    ("show_if_hidden", {"show": "show_if: \"q1 == 'Yes'\"", "q3": "You said ${q2}. Go on?"}),
    ("skipped_over", {"skip": "skip_to: {if: \"q1 == 'No'\", to: q3}", "q3": "You said ${q2}. Go on?"}),
    ("end_block_feedback", {"skip": "skip_to: {if: \"q1 == 'No'\", to: end_block}",
                            "feedback": "You said ${q2}."}),
])
def test_placeholder_of_a_hidden_item_is_refused(name, kw, tmp_path, capsys):
    assert_one_line_exit_2(_hidden(tmp_path, name, **kw), tmp_path, capsys, "placeholder $q2: item q2 is not shown")


def test_placeholder_default_is_accepted_and_filled(tmp_path):
    from types import SimpleNamespace

    from simsubjects.studyfile.session_run import SessionRun

    f = _hidden(tmp_path, "ok", show="show_if: \"q1 == 'Yes'\"", q3="You said ${q2:-nothing}. Go on?",
                feedback="${q1}, ${q2:-no answer}.")
    study = load_session(f)
    # not hidden (no show_if, no skip): a plain placeholder stays allowed
    load_session(_hidden(tmp_path, "plain", q3="You said ${q2}."))
    run = SessionRun(study, SimpleNamespace(info=SimpleNamespace(spec="none")), "exact", 1, 1)
    st = run.initial()[0]
    st.answers = {"q1": "No", "q2": ""}
    assert run.fill(study.session.item("q3").item.text, st) == "You said nothing. Go on?"
    assert run.fill(study.session.blocks[0].feedback, st) == "No, no answer."
    st.answers["q2"] = "Yes"
    assert run.fill(study.session.item("q3").item.text, st) == "You said Yes. Go on?"


# ------------------------------------------------------------------------------ 3. skip_to semantics

SURVEY = """
study: screener
title: A screener, skip logic and randomized blocks
design: {subjects: 6, seed: 2}
session:
  block_order: __ORDER__
  blocks:
    - id: consent
      __POS_FIRST__
      items:
        - {id: agree, text: "Do you agree to take part?", response: yesno}
    - id: work
      items:
        - id: q1
          text: "Do you work?"
          response: yesno
          skip_to: {if: "q1 == 'No'", to: q3}
        - {id: q2, text: "Do you like your work?", response: yesno}
        - {id: q3, text: "Do you have a hobby?", response: yesno}
    - id: leisure
      items:
        - {id: q4, text: "Do you read?", response: yesno}
    - id: demo
      __POS_LAST__
      items:
        - {id: q5, text: "Are you over 40?", response: yesno}
"""


def _survey(tmp_path, order="randomized", first="position: first", last="position: last", name="survey") -> Path:
    f = tmp_path / f"{name}.yaml"
    f.write_text(SURVEY.replace("__ORDER__", order).replace("__POS_FIRST__", first).replace("__POS_LAST__", last))
    return f


def _stub_run(study):
    from types import SimpleNamespace

    from simsubjects.studyfile.session_run import SessionRun

    return SessionRun(study, SimpleNamespace(info=SimpleNamespace(spec="none")), "exact", 1, 1)


def test_screener_on_the_item_itself_skips_after_its_answer(tmp_path):
    study = load_session(_survey(tmp_path, order="fixed", first="", last=""))
    run = _stub_run(study)
    st = run.initial()[0]
    asked = []
    for answer in ["Yes", "No", "Yes", "Yes", "Yes"]:  # agree = Yes, q1 = No: q2 is skipped
        d = run.advance(st)
        if d is None:
            break
        asked.append(d.item.id)
        run.answer(d, answer, " " + answer)
    assert asked == ["agree", "q1", "q3", "q4", "q5"]
    assert st.answers["q2"] == "" and st.answer_hist["q2"] == [""]


def test_skip_to_under_randomized_blocks_with_fixed_first_and_last(tmp_path):
    study = load_session(_survey(tmp_path))  # the old code refused skip_to under block_order: randomized
    run = _stub_run(study)
    ids = [b.id for b in study.session.blocks]
    orders = [[ids[i] for i in st.blocks] for st in run.initial()]
    assert all(o[0] == "consent" and o[-1] == "demo" for o in orders)
    assert {tuple(o[1:3]) for o in orders} == {("work", "leisure"), ("leisure", "work")}
    # without positions the permutation is the one the old code drew (no published order moves)
    plain = load_session(_survey(tmp_path, first="", last="", name="plain"))
    from simsubjects.studyfile.session_run import _rng

    for st in _stub_run(plain).initial():
        assert st.blocks == [int(i) for i in _rng(plain.seed, "blocks", st.subject, st.path).permutation(4)]


def test_position_needs_randomized_blocks(tmp_path, capsys):
    f = _survey(tmp_path, order="fixed", last="", name="position_fixed")
    assert_one_line_exit_2(f, tmp_path, capsys, "needs session.block_order: randomized")


def test_shuffled_block_reads_only_first_blocks(tmp_path, capsys):
    text = SURVEY.replace("__ORDER__", "randomized").replace("__POS_FIRST__", "position: first") \
        .replace("__POS_LAST__", "position: last").replace('"Do you read?"', '"You said ${agree}. Do you read?"')
    (tmp_path / "reads_first.yaml").write_text(text)
    load_session(tmp_path / "reads_first.yaml")  # consent is always first: its answer is known
    (tmp_path / "reads_shuffled.yaml").write_text(text.replace("${agree}", "${q3}"))
    assert_one_line_exit_2(tmp_path / "reads_shuffled.yaml", tmp_path, capsys, "placeholder $q3 has no value")


# ------------------------------------------------------------------------------ 4. the logic walk

def _one_block(tmp_path, name, items: str, rounds=1, extra="") -> Path:
    f = tmp_path / f"{name}.yaml"
    f.write_text(f"""
study: {name}
title: logic
design: {{subjects: 2, seed: 1}}
session:
  {extra}
  blocks:
    - id: b
      rounds: {rounds}
      items:
{items}
""")
    return f


@pytest.mark.parametrize("name, items, want", [
    ("both_answers", """        - {id: employed, text: "Employed?", response: yesno}
        - {id: q2, text: "Q2?", response: yesno, show_if: "employed == 'Yes' and employed == 'No'"}""",
     "item 'q2' is unreachable: show_if"),
    ("round_in_one_round_block", """        - {id: q1, text: "Q1?", response: yesno}
        - {id: q2, text: "Q2?", response: yesno, show_if: "round > 1"}""", "item 'q2' is unreachable: show_if"),
    ("skip_covers_every_answer", """        - {id: q1, text: "Q1?", response: yesno, skip_to: {if: "q1 in ['Yes', 'No']", to: q3}}
        - {id: q2, text: "Q2?", response: yesno}
        - {id: q3, text: "Q3?", response: yesno}""", "item 'q2' is unreachable: every path skips it"),
    ("skip_never_true", """        - {id: q1, text: "Q1?", response: yesno, skip_to: {if: "q1 == 'No' and round == 2", to: q3}}
        - {id: q2, text: "Q2?", response: yesno}
        - {id: q3, text: "Q3?", response: yesno}""", "the condition \"q1 == 'No' and round == 2\" is never true"),
])
def test_unreachable_items_and_impossible_conditions(name, items, want, tmp_path, capsys):
    assert_one_line_exit_2(_one_block(tmp_path, name, items), tmp_path, capsys, want)


SIXTEEN = """        - {id: a, text: "A?", response: yesno}
        - {id: b1, text: "B1?", response: yesno, show_if: "a == 'Yes'"}
        - {id: b2, text: "B2?", response: yesno, show_if: "a == 'Yes'"}
        - {id: c1, text: "C1?", response: yesno, show_if: "a == 'No'"}
        - {id: c2, text: "C2?", response: yesno, show_if: "a == 'No'"}
        - {id: d, text: "D?", response: yesno}"""


def test_max_leaves_counts_the_tree_with_its_show_if(tmp_path):
    from simsubjects.studyfile.session import leaves

    # a: 2 answers, then two of four items (2 x 2), then d: 2 x 4 x 2 = 16 leaves, not 2^6 = 64
    s = load_session(_one_block(tmp_path, "sixteen", SIXTEEN, extra="paths: enumerate\n  max_leaves: 16"))
    assert leaves(s.session) == 16
    # a condition on a variable is undecided: both outcomes are followed, so the bound never undercounts
    s = load_session(_one_block(tmp_path, "undecided", """        - {id: a, text: "A?", response: yesno}
        - {id: bb, text: "B?", response: yesno, show_if: "total > 1"}""", extra="variables: {total: 0}"))
    assert s.session.blocks[0].round_leaves == 2 * (2 + 1)


# ------------------------------------------------------------------------------ 5. chance moves, 6. draws

NOISY = Path(__file__).resolve().parents[1] / "examples" / "pd_noisy" / "study.yaml"
FLIP = {"C": "D", "D": "C"}


def _tft_on_carried_out_moves(rounds: pd.DataFrame) -> None:
    """Per path: the carried-out move is the intended one unless noise flipped it; tit-for-tat plays C,
    then the subject's carried-out move of the round before (Fudenberg, Rand & Dreber 2012)."""
    for _, d in rounds.groupby(["subject", "path"]):
        d = d.sort_values("round")
        played = [c if n == "keep" else FLIP[c] for c, n in zip(d["choice"], d["noise"])]
        assert d["played"].tolist() == played and d["mine"].tolist() == played
        assert d["partner"].tolist() == ["C", *played[:-1]]


def test_chance_player_enumerated_branches_sum_to_one(smollm2, tmp_path):
    # the example, made smaller for the test: one subject, two rounds
    text = NOISY.read_text().replace("subjects: 2", "subjects: 1").replace("rounds: 3", "rounds: 2")
    (tmp_path / "noisy.yaml").write_text(text)
    study, r = _run(tmp_path / "noisy.yaml", tmp_path / "run", smollm2)
    paths = r[r["condition"] == "path"]
    for s, d in paths.groupby("subject"):
        assert len(d) == (2 * 2) ** 2 and abs(d["weight"].sum() - 1) < 1e-9  # answers x noise, 2 rounds
        assert d["response"].str.contains("noise=flip").any() and d["response"].str.startswith("noise=").all()
    # a leaf's probability: its answers' probabilities times 7/8 per keep and 1/8 per flip; the
    # decision before answer k has the trial id SUBJECT|e|k|(the outcomes before it, joined by .)
    dec = r[r["condition"] == "decision"]
    for leaf in (paths.sort_values("weight").iloc[0], paths.sort_values("weight").iloc[-1]):
        vals = [x.split("=", 1)[1] for x in leaf["response"].split("; ")]
        p = 1.0
        for k in range(1, 3):
            g = dec[dec["trial"] == f"{leaf['subject']}|e|{k}|{'.'.join(vals[:2 * k - 1])}"]
            p *= float(g.set_index("response")["weight"][vals[2 * k - 1]])
        flips = vals.count("flip")
        assert leaf["weight"] == pytest.approx(p * (1 / 8) ** flips * (7 / 8) ** (2 - flips), rel=1e-9)
    rounds = r[r["condition"] == "round"]
    carried = [c if n == "keep" else FLIP[c] for c, n in zip(rounds["choice"], rounds["noise"])]
    assert rounds["played"].tolist() == carried


def _path_rng(seed, subject, path):
    """The documented draw formula (docs/studies.md, "The draws"), written out independently."""
    import hashlib

    digest = hashlib.sha256(f"{seed}\x1fpath\x1f{subject}\x1f{path}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _first_over(cum_probs, u):
    return next(i for i, c in enumerate(np.cumsum(cum_probs)) if u < c)


def test_sampled_draws_replay_from_the_documented_formula(smollm2, tmp_path):
    """Chance draws, decisions and continuation draws of sampled paths, replayed in the documented
    order from the documented seed (no package code): noise, then the decision, then (before the
    last round) the continuation."""
    text = NOISY.read_text().replace("paths: enumerate", "paths: 2")
    text = text.replace("rounds: 3", "rounds: {max: 3, continue: 0.75}")
    (tmp_path / "noisy.yaml").write_text(text)
    study, r = _run(tmp_path / "noisy.yaml", tmp_path / "run", smollm2)
    dec = r[r["condition"] == "decision"]
    rounds = r[r["condition"] == "round"]
    _tft_on_carried_out_moves(rounds)
    assert rounds["continued"].eq(0).any() and (rounds["round"] > 1).any()
    for (s, p), d in rounds.groupby(["subject", "path"]):
        rng = _path_rng(study.seed, s, p)
        for rec in d.sort_values("round").to_dict("records"):
            # simultaneous block: the chance player moves first, then the subject's decision
            assert ["keep", "flip"][_first_over([7 / 8, 1 / 8], rng.random())] == rec["noise"]
            g = dec[(dec["subject"] == s) & (dec["path"] == p) & (dec["round"] == rec["round"])]
            w = g["weight"].astype(float).to_numpy()
            assert g["response"].tolist()[_first_over(w / w.sum(), rng.random())] == rec["choice"]
            if rec["round"] < 3:
                assert rec["continued"] == int(rng.random() < 0.75)
            else:
                assert rec["continued"] == 0


# ------------------------------------------------------------------------------ 6. prompts and transcripts

def test_study_check_prints_the_first_prompts(capsys):
    from simsubjects.cli.commands import main

    assert main(["study", "check", str(NOISY)]) == 0
    out = capsys.readouterr().out
    assert "--- subject s1, path 1, decision 1 (item choice, round 1) ---" in out
    assert "Round 1. Do you choose C or D?\nYour choice:" in out and "decision 2" in out
    assert "completions scored: ' C' = C, ' D' = D" in out


def test_transcripts_hold_the_exact_text_scored_and_resume_identically(pd3_run, smollm2):
    import json

    from simsubjects.collect.models.base import ChoiceRequest

    study, r, out = pd3_run
    recs = [json.loads(x) for x in (out / "transcripts.jsonl").read_text().splitlines()]
    dec = r[r["condition"] == "decision"]
    assert len(recs) == dec["trial"].nunique() == 3 * 2 * 3
    for rec in recs:
        g = dec[dec["trial"] == rec["trial"]]
        assert rec["probs"] == pytest.approx(g["weight"].tolist(), abs=1e-12)
        assert rec["drawn"] == g[g["drawn"] == 1]["response"].iloc[0] and rec["labels"] == ["J", "F"]
        assert rec["text"].endswith(f"Round {rec['round']}. Do you choose J or F?\nYour choice:")
        assert rec["path"] == g["path"].iloc[0] and rec["completions"] == [" J", " F"]
    # the text scored: a round-2 record's is round 1 with its answer and feedback, then round 2
    rec = next(x for x in recs if x["round"] == 2)
    first = next(x for x in recs if x["subject"] == rec["subject"] and x["path"] == rec["path"] and x["round"] == 1)
    assert rec["text"].startswith(first["text"] + " " + first["drawn"] + "\n\n")
    got = smollm2.choose([ChoiceRequest(rec["text"], tuple(rec["completions"]))])[0]
    assert np.allclose(got.probs, rec["probs"], atol=1e-5)
    # the same command again (a resumed run): the same transcripts, byte for byte
    before = (out / "transcripts.jsonl").read_bytes()
    _run(out.parent / "study.yaml", out, smollm2)
    assert (out / "transcripts.jsonl").read_bytes() == before


# ------------------------------------------------------------------------------ 7. smaller items

def test_degenerate_samples_get_a_note_and_no_p_value():
    from simsubjects.studyfile.session_analysis import degenerate

    assert degenerate(("model", [0.5, 0.5, 0.5 + 1e-12]), ("people", [0, 1, 0.5])) == "zero variance (model): no test"
    assert degenerate(("model", [0.2, 0.4]), ("people", [0, 1, 0.5])) == "n < 3 (model: 2): no test"
    assert degenerate(("model", [0.2, 0.4, 0.3]), ("people", [0, 1, 0.5])) == ""


def test_beside_people_tests_note_a_zero_variance_side(pd3_run):
    from simsubjects.studyfile.session_analysis import analyze_session

    study, r, _ = pd3_run
    # people.csv holds two persons per cell: n < 3 on that side, so no p-value (the old code printed one)
    tests = analyze_session(study, r, None)["beside_people_tests"]
    assert "note" in tests
    flat = tests[tests["note"] != ""]
    assert len(flat) == len(tests) and flat["p.value"].isna().all()
    assert flat["note"].str.contains("n < 3 \\(human: 2\\)").all()


def test_subject_tests_compare_the_last_round_most_subjects_reached():
    from simsubjects.studyfile.session_analysis import subject_tests

    rows = []
    for s, last in (("a", 3), ("b", 3), ("c", 2), ("d", 2), ("e", 5)):  # only e reaches rounds 4-5
        for rnd in range(1, last + 1):
            p = 0.2 + 0.1 * rnd + 0.01 * ord(s)
            rows += [{"subject": s, "round": rnd, "item": "q", "response": "A", "_p": p, "_w": 1.0},
                     {"subject": s, "round": rnd, "item": "q", "response": "B", "_p": 1 - p, "_w": 1.0}]
    t = subject_tests(pd.DataFrame(rows))
    a = t[t["response"] == "A"].iloc[0]
    assert a["test"] == "round 3 - round 1" and a["n"] == 3 and a["reached"] == pytest.approx(3 / 5)
    assert a["note"] == "zero variance (subjects): no test" and np.isnan(a["p.value"])


def test_exports_keep_declared_order_labels_and_named_path_answers(pd3_run):
    import json

    from simsubjects.studyfile.session_def import session_levels

    study, r, out = pd3_run
    levels = session_levels(study, r)
    assert levels["choice"] == ["J", "F"] and levels["response"] == ["J", "F"]  # declared, not sorted
    labels = json.loads((out / "manifest.json").read_text())["column_labels"]
    assert labels["choice"].startswith("Answer to choice: Round ${round}") and "reach" in labels
    paths = r[r["condition"] == "path"]
    assert paths["response"].str.fullmatch(r"choice=[JF](; choice=[JF]){2}").all()
