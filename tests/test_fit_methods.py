"""analyze/methods/fit.py against hand computations (issue 39): unit = person throughout."""

import math

import numpy as np
import pandas as pd
import pytest

from simsubjects.analyze.methods import fit


def frame(answers: dict, probs: dict, model="m", ablation="", options=("x", "y"), prev=None) -> pd.DataFrame:
    """answers: {(person, decision): option}; probs: {decision: [p per option]} (or {(person, decision): ...})."""
    rows = []
    for (person, dec), ans in answers.items():
        ps = probs.get((person, dec), probs.get(dec))
        own, other = (prev or {}).get((person, dec), ("", ""))
        for opt, p in zip(options, ps):
            rows.append({"person": person, "decision": dec, "item": dec.split("/")[0], "round": pd.NA,
                         "condition": "", "option": opt, "p": p, "chosen": opt == ans, "model": model,
                         "ablation": ablation, "prev_own": own, "prev_other": other})
    return pd.DataFrame(rows, columns=fit.FRAME)


ANS = {("a", "q1"): "x", ("a", "q2"): "y", ("b", "q1"): "x", ("b", "q2"): "x", ("c", "q1"): "y", ("c", "q2"): "x"}
P = {"q1": [0.8, 0.2], "q2": [0.4, 0.6]}


def test_decision_and_person_fit_by_hand():
    dec = fit.decision_fit(fit.systems(frame(ANS, P)))
    m = dec[dec["kind"] == "model"].set_index(["person", "decision"])
    assert m.loc[("a", "q1"), "loglik"] == pytest.approx(math.log(0.8))
    assert m.loc[("c", "q1"), "rank"] == 2 and not m.loc[("c", "q1"), "argmax"]
    assert m.loc[("a", "q2"), "brier"] == pytest.approx(0.4 ** 2 + 0.4 ** 2)
    u = dec[dec["model"] == "uniform"]
    assert (u["loglik"] == math.log(0.5)).all() and (u["loglik"] == u["loglik_uniform"]).all()  # exactly log(1/2)
    people = fit.person_fit(dec)
    b = people[(people["model"] == "m") & (people["person"] == "b")].iloc[0]
    assert b["n_decisions"] == 2
    assert b["loglik"] == pytest.approx(math.log(0.8) + math.log(0.4))
    assert b["loglik_mean"] == pytest.approx((math.log(0.8) + math.log(0.4)) / 2)
    assert b["accuracy"] == 0.5
    assert b["brier"] == pytest.approx(((0.2 ** 2) * 2 + (0.6 ** 2) * 2) / 2)


def test_three_options_rank_and_uniform_log_third():
    ans = {("a", "q"): "z", ("b", "q"): "x"}
    dec = fit.decision_fit(fit.systems(frame(ans, {"q": [0.5, 0.3, 0.2]}, options=("x", "y", "z"))))
    m = dec[dec["kind"] == "model"].set_index("person")
    assert m.loc["a", "rank"] == 3 and m.loc["b", "rank"] == 1
    assert (dec.loc[dec["model"] == "uniform", "loglik"] == math.log(1 / 3)).all()


def test_marginal_leave_one_person_out_smoothed():
    base = fit.marginal_loo(frame(ANS, P)).set_index(["person", "decision", "option"])["p"]
    # q1: a=x, b=x, c=y. Person c left out: others x, x -> p(y) = (0 + 1/2) / (2 + 2 * 1/2)
    assert base[("c", "q1", "y")] == pytest.approx(0.5 / 3)
    assert base[("a", "q1", "x")] == pytest.approx(1.5 / 3)  # others b=x, c=y
    sums = base.groupby(level=[0, 1]).sum()
    assert np.allclose(sums, 1.0)


def test_marginal_by_condition():
    f = frame(ANS, P)
    f.loc[f["person"] == "c", "condition"] = "arm=2"
    base = fit.marginal_loo(f).set_index(["person", "decision", "option"])["p"]
    assert base[("c", "q1", "y")] == 0.5  # nobody else in arm 2: the smoothing alone, 1/k
    assert base[("a", "q1", "x")] == pytest.approx(1.5 / 2)  # only b (x) beside a in the empty arm


def test_pseudo_r2_and_bootstrap_recomputed():
    people = fit.person_fit(fit.decision_fit(fit.systems(frame(ANS, P))))
    st = fit.study_fit(people, n_boot=500, seed=3)
    row = st[(st["model"] == "m") & (st["baseline"] == "uniform")].iloc[0]
    ll = sum(math.log(P[d][0] if a == "x" else P[d][1]) for (_, d), a in ANS.items())
    assert row["estimate"] == pytest.approx(1 - ll / (6 * math.log(0.5)))
    assert row["n_people"] == 3 and row["n_decisions"] == 6
    # the interval: people resampled with numpy's seeded generator, recomputed here by hand
    per = people[people["model"] == "m"].set_index("person")["loglik"].to_numpy()
    idx = np.random.default_rng(3).integers(0, 3, size=(500, 3))
    draws = 1 - per[idx].sum(1) / (2 * math.log(0.5) * 3)
    assert row["conf.low"] == pytest.approx(np.quantile(draws, 0.025))
    assert row["conf.high"] == pytest.approx(np.quantile(draws, 0.975))
    assert row["conf.low"] <= row["estimate"] <= row["conf.high"]
    assert fit.study_fit(people, n_boot=500, seed=3).equals(st)  # seeded


def test_compare_paired_over_people():
    full = frame(ANS, P)
    twin = frame(ANS, {"q1": [0.5, 0.5], "q2": [0.5, 0.5]}, ablation="instructions")
    dec = fit.decision_fit(fit.systems(pd.concat([full, twin], ignore_index=True)))
    cmp = fit.comparisons(dec)
    row = cmp[(cmp["ablation_a"] == "instructions") & (cmp["model_b"] == "m")].iloc[0]
    per = {p: np.mean([math.log(P[d][0] if ANS[(p, d)] == "x" else P[d][1]) for d in ("q1", "q2")]) for p in "abc"}
    d = np.array([math.log(0.5) - per[p] for p in "abc"])
    assert row["estimate"] == pytest.approx(d.mean())
    assert row["std.error"] == pytest.approx(d.std(ddof=1) / math.sqrt(3))
    assert row["n"] == 3 and row["df"] == 2
    assert {"uniform", "marginal_loo"} <= set(cmp["model_b"])


def test_logit_loo_on_previous_moves():
    """A repeated game: each person repeats the other's last move (tit for tat); the logit fitted on the
    other people predicts it, the uniform choice does not."""
    answers, prev = {}, {}
    rng = np.random.default_rng(0)
    for person in "abcdef":
        other = rng.choice(["C", "D"], size=6)
        for r in range(1, 6):
            answers[(person, f"pd/r{r}")] = other[r - 1]
            prev[(person, f"pd/r{r}")] = (other[r - 2] if r > 1 else "", other[r - 1])
    f = frame(answers, {(k[0], k[1]): [0.5, 0.5] for k in answers}, options=("C", "D"), prev=prev)
    f["item"] = "pd"
    base = fit.logit_loo(f)
    assert base is not None
    chosen = base[base["chosen"]]
    assert (chosen["p"] > 0.5).all() and np.isfinite(np.log(chosen["p"])).all()
    assert np.allclose(base.groupby(["person", "decision"])["p"].sum(), 1.0)
    assert fit.logit_loo(frame(ANS, P)) is None  # no previous moves: no behavioural baseline


def test_person_fit_recomputed_from_rows():
    """fit_people's numbers equal a recomputation from the frame's rows alone."""
    t = fit.fit_tables(frame(ANS, P), n_boot=50)
    f = frame(ANS, P)
    got = t["fit_people"].query("kind == 'model'").set_index("person")["loglik"]
    want = f[f["chosen"]].groupby("person")["p"].apply(lambda s: np.log(s).sum())
    assert np.allclose(got.sort_index(), want.sort_index())
    assert list(t["fit_study"].columns) == fit.STUDY_COLUMNS
    assert list(t["fit_compare"].columns) == fit.COMPARE_COLUMNS
