"""Representativeness (Santurkar et al. 2023): normalized Wasserstein-1 on ordinal options, by hand."""

import math

import pandas as pd
import pytest

from simsubjects.analyze.methods.representativeness import (model_distribution, representativeness, wasserstein_by_question,
                                                    wasserstein_normalized)
from simsubjects.studies.survey_bias import design as sb
from simsubjects.errors import UserError


def dist(key, weights, positions=None, refusal=None, **extra):
    positions = positions or [float(i + 1) for i in range(len(weights))]
    refusal = refusal or [False] * len(weights)
    return [{"key": key, "position": p, "weight": w, "refusal": r, **extra}
            for p, w, r in zip(positions, weights, refusal)]


def test_wasserstein_by_hand():
    model = pd.DataFrame(dist("Q1", [0.5, 0.5, 0.0]) + dist("Q2", [1, 0, 0, 0]) + dist("Q3", [0.2, 0.8]))
    human = pd.DataFrame(dist("Q1", [0, 50, 50]) + dist("Q2", [0, 0, 0, 7]) + dist("Q3", [2, 8]))
    d = wasserstein_by_question(model, human).set_index("key")["distance"]
    # Q1: CDFs (.5, 1, 1) vs (0, .5, 1): W1 = .5 + .5 = 1 over span 2
    assert d["Q1"] == pytest.approx(0.5)
    # Q2: all mass at 1 vs all at 4: W1 = 3 over span 3
    assert d["Q2"] == pytest.approx(1.0)
    assert d["Q3"] == pytest.approx(0.0)
    rep = representativeness(model, human).iloc[0]
    assert rep["estimate"] == pytest.approx(1 - (0.5 + 1.0 + 0.0) / 3) and rep["n"] == 3
    sd = math.sqrt(((0.5 - 0.5) ** 2 + (1 - 0.5) ** 2 + (0 - 0.5) ** 2) / 2)
    assert rep["std.error"] == pytest.approx(sd / math.sqrt(3))


def test_refusal_is_excluded_and_renormalized():
    model = pd.DataFrame(dist("Q", [0.25, 0.75]))
    # 60 refused: D_H = (30, 10) / 40 = (.75, .25)
    human = pd.DataFrame(dist("Q", [30, 10, 60], positions=[1.0, 2.0, math.nan], refusal=[False, False, True]))
    d = wasserstein_by_question(model, human)["distance"].item()
    assert d == pytest.approx(0.5)  # |.25 - .75| over span 1
    # a model "Don't know" option flagged refusal does not count either
    model2 = pd.DataFrame(dist("Q", [0.2, 0.6, 0.2], positions=[1.0, 2.0, 3.0], refusal=[False, False, True]))
    assert wasserstein_by_question(model2, human)["distance"].item() == pytest.approx(abs(0.25 - 0.75))


def test_fractional_ordinals_like_opinionqa():
    # OpinionQA gives "A mix of both" ordinal 1.5 between 1 and 2: span is 1
    model = pd.DataFrame(dist("Q", [0, 0, 1], positions=[1.0, 2.0, 1.5]))
    human = pd.DataFrame(dist("Q", [1, 0, 0], positions=[1.0, 2.0, 1.5]))
    assert wasserstein_by_question(model, human)["distance"].item() == pytest.approx(0.5)
    assert wasserstein_normalized([1.0, 2.0], [1, 0], [1.0, 2.0], [0, 1]) == pytest.approx(1.0)


def test_per_group_and_models():
    model = pd.DataFrame(dist("Q", [1, 0, 0], model="m1") + dist("Q", [0, 0, 1], model="m2"))
    human = pd.DataFrame(dist("Q", [1, 0, 0], attribute="Overall", group="Overall")
                         + dist("Q", [1, 0, 0], attribute="SEX", group="Male")
                         + dist("Q", [0, 1, 0], attribute="SEX", group="Female"))
    rep = representativeness(model, human, by=["attribute", "group"]).set_index(["model", "group"])["estimate"]
    assert rep[("m1", "Male")] == pytest.approx(1.0)
    assert rep[("m1", "Female")] == pytest.approx(0.5)  # W1 1 over span 2
    assert rep[("m2", "Male")] == pytest.approx(0.0)
    assert rep[("m2", "Overall")] == pytest.approx(0.0)
    # without by: only the Overall rows are used
    overall = representativeness(model, human).set_index("model")["estimate"]
    assert overall["m1"] == pytest.approx(1.0) and overall["m2"] == pytest.approx(0.0)


def test_model_distribution_from_responses():
    items = sb.generate_pairs(pd.DataFrame({"key": ["Q"], "question": ["How?"], "options": ["v | s | n | x"],
                                            "middle_label": ["mid"]}))
    rows = []
    for lab, p in zip("ABCDE", [0.1, 0.2, 0.3, 0.2, 0.2]):
        rows.append({"trial": "t1", "item": "odd_even/Q/original", "response": lab, "weight": p, "model": "m"})
    for lab, p in zip("ABCDEF", [0.1, 0.1, 0.1, 0.1, 0.1, 0.5]):
        rows.append({"trial": "t2", "item": "opinion_float/Q/modified", "response": lab, "weight": p, "model": "m"})
    md = model_distribution(pd.DataFrame(rows), items, biases=["odd_even"])
    # the added middle of a 4-point scale sits at 2.5 on the surveyed scale
    assert md.set_index("position")["weight"].to_dict() == pytest.approx({1.0: 0.1, 2.0: 0.2, 2.5: 0.3, 3.0: 0.2, 4.0: 0.2})
    human = pd.DataFrame(dist("Q", [1, 1, 1, 1]))  # uniform over the 4 surveyed options
    d = wasserstein_by_question(md, human)["distance"].item()
    # CDF gaps: [1,2): .1 vs .25, [2,2.5): .3 vs .5, [2.5,3): .6 vs .5, [3,4): .8 vs .75
    w1 = 0.15 * 1 + 0.2 * 0.5 + 0.1 * 0.5 + 0.05 * 1
    assert d == pytest.approx(w1 / 3)
    # the "Don't know" form: F is a refusal
    md2 = model_distribution(pd.DataFrame(rows), items, form="modified", biases=["opinion_float"])
    assert md2.loc[md2["response"] == "F", "refusal"].item()


def test_errors():
    with pytest.raises(UserError, match="position"):
        representativeness(pd.DataFrame({"key": ["Q"], "weight": [1.0]}), pd.DataFrame(dist("Q", [1, 1])))
    with pytest.raises(UserError, match="no question key"):
        representativeness(pd.DataFrame(dist("A", [1, 1])), pd.DataFrame(dist("B", [1, 1])))


# ------------------------------------------------------------------ interval from resampling units

def _units(rng, n_subjects=6, n_respondents=25, keys=("Q1", "Q2", "Q3"), k=5):
    """Model subjects with a distribution per key (unit: subject) and respondents with one weighted answer
    per key (unit: respondent), as the study file's representativeness pools them."""
    import numpy as np

    model, human = [], []
    for s in range(n_subjects):
        for key in keys:
            for j, w in enumerate(rng.dirichlet(np.ones(k))):
                model.append({"unit": f"s{s}", "key": key, "position": float(j + 1), "weight": w})
    for r in range(n_respondents):
        w = rng.uniform(0.5, 2.0)
        for key in keys:
            human.append({"unit": f"h{r:02d}", "key": key, "position": float(rng.integers(1, k + 1)), "weight": w})
    return pd.DataFrame(model), pd.DataFrame(human)


def test_resampled_interval_equals_a_direct_loop():
    """The same draws of subjects and respondents (with replacement, independently), each replicate's Rep
    computed by the pandas `representativeness` (checked against R above): interval and bias to 1e-12."""
    import numpy as np

    from simsubjects.analyze.methods.representativeness import resampled_interval

    m, h = _units(np.random.default_rng(3))
    B = 40
    got = resampled_interval(m, h, replicates=B, seed=11, calibrate=0)  # the plain basic interval
    assert got["rep_full"] == pytest.approx(representativeness(m, h)["estimate"].iat[0], abs=1e-12)
    rng = np.random.default_rng(11)
    mu, hu = sorted(m["unit"].unique()), sorted(h["unit"].unique())
    im = rng.integers(0, len(mu), size=(B, len(mu)))
    ih = rng.integers(0, len(hu), size=(B, len(hu)))
    reps = []
    for b in range(B):
        mb = pd.concat([m[m["unit"] == mu[i]] for i in im[b]])
        hb = pd.concat([h[h["unit"] == hu[i]] for i in ih[b]])
        reps.append(representativeness(mb, hb)["estimate"].iat[0])
    lo, hi = np.quantile(reps, [0.025, 0.975])
    assert [got["boot.percentile.low"], got["boot.percentile.high"]] == pytest.approx([lo, hi], abs=1e-12)
    # the basic interval (issue 40): the percentile bounds reflected about Rep, capped at 1
    full = got["rep_full"]
    assert [got["boot.low"], got["boot.high"]] == pytest.approx([2 * full - hi, min(1.0, 2 * full - lo)], abs=1e-12)
    assert got["boot.bias"] == pytest.approx(np.mean(reps) - got["rep_full"], abs=1e-12)
    # the bias-corrected Rep (issue 25): 2 Rep - mean of the same draws' Rep
    assert got["estimate.corrected"] == pytest.approx(2 * got["rep_full"] - np.mean(reps), abs=1e-12)
    assert (got["n_subjects"], got["n_respondents"]) == (6, 25)


def test_resampled_interval_agrees_with_scipy_bootstrap():
    """scipy.stats.bootstrap (percentile, the two samples resampled independently) on the same statistic:
    the intervals agree within Monte Carlo error."""
    import numpy as np
    from scipy import stats

    from simsubjects.analyze.methods.representativeness import resampled_interval

    m, h = _units(np.random.default_rng(4), n_subjects=5, n_respondents=15, keys=("Q1", "Q2"))
    mu, hu = sorted(m["unit"].unique()), sorted(h["unit"].unique())
    mg, hg = {u: g for u, g in m.groupby("unit")}, {u: g for u, g in h.groupby("unit")}

    def rep(i, j):
        return representativeness(pd.concat([mg[mu[int(a)]] for a in i]),
                                  pd.concat([hg[hu[int(b)]] for b in j]))["estimate"].iat[0]

    ref = stats.bootstrap((np.arange(len(mu)), np.arange(len(hu))), rep, n_resamples=200, vectorized=False,
                          paired=False, method="percentile", random_state=np.random.default_rng(5))
    got = resampled_interval(m, h, replicates=4000, seed=6)
    assert got["boot.percentile.low"] == pytest.approx(ref.confidence_interval.low, abs=0.04)
    assert got["boot.percentile.high"] == pytest.approx(ref.confidence_interval.high, abs=0.04)


def test_a_perfect_model_against_few_respondents_gets_the_note():
    """The audit's finding 7: the model's distribution is the population's, the people a sample of it. With
    30 respondents Rep falls below 1 and the bias from resampling is negative, and the note says so;
    with 1,000 respondents there is no note."""
    import numpy as np

    from simsubjects.analyze.methods.representativeness import resampled_interval, small_sample_note

    rng = np.random.default_rng(8)
    p = np.array([0.1, 0.2, 0.4, 0.2, 0.1])
    model = pd.DataFrame([{"unit": "s0", "key": q, "position": float(j + 1), "weight": w}
                          for q in ("Q1", "Q2", "Q3") for j, w in enumerate(p)])
    notes = {}
    for n in (30, 1000):
        human = pd.DataFrame([{"unit": f"h{r}", "key": q, "position": float(rng.choice(5, p=p) + 1), "weight": 1.0}
                              for r in range(n) for q in ("Q1", "Q2", "Q3")])
        got = resampled_interval(model, human, replicates=300, seed=1)
        assert got["rep_full"] < 1 and got["boot.bias"] < 0 and got["boot.low"] < got["rep_full"]
        # the bias-corrected Rep is nearer the perfect model's 1
        assert abs(1 - got["estimate.corrected"]) < abs(1 - got["rep_full"])
        notes[n] = small_sample_note(got["n_respondents"], got["boot.bias"])
    assert "30 respondents: Rep is biased low" in notes[30] and notes[1000] == ""


def test_study_file_representativeness_carries_the_resampled_interval(tmp_path):
    """The study file's table: the resampled interval, its unit, counts of each unit and the note."""
    import numpy as np

    from simsubjects.studyfile.analyses import representativeness_table
    from simsubjects.studyfile.design import build_trials
    from simsubjects.studyfile.spec import load_study
    from pathlib import Path

    s = load_study(Path(__file__).resolve().parents[1] / "examples" / "opinion_survey" / "study.yaml")
    trials, _ = build_trials(s)
    rng = np.random.default_rng(1)
    rows = [{"study": s.name, "trial": rec["trial"], "item": rec["item"], "condition": "", "subject": rec["subject"],
             "source": "model", "model": "m", "method": "exact", "response": lab, "weight": w, "validity": 1.0,
             "party": rec["party"]}
            for rec in trials.to_dict("records") for lab, w in zip(rec["labels"], rng.dirichlet(np.ones(len(rec["labels"]))))]
    resp = pd.concat([pd.DataFrame(rows), s.human], ignore_index=True)
    got = representativeness_table(s, resp, ["party"])
    assert set(got["boot_unit"]) == {"respondent (people) and subject (model), resampled independently"}
    assert (got["boot.low"] <= got["boot.high"]).all() and (got["boot.bias"] < 0.05).all()
    assert np.allclose(got["estimate.corrected"], got["estimate"] - got["boot.bias"], atol=1e-12)
    assert got["n_respondents"].sum() == s.human["subject"].nunique()
    assert got["note"].str.contains("respondents: Rep is biased low").all()  # the example's groups are small


def test_opinion_survey_interval_resamples_people_as_a_multinomial_of_their_n():
    """Issue 25: the built-in opinion_survey's people are distributions with counts (no respondent rows). Each
    question's distribution is redrawn as a multinomial of its n_respondents, the model's persona subjects
    resampled; the interval, bias and bias-corrected Rep equal a direct loop over the same draws (each
    replicate's Rep by the pandas `representativeness`), and the table of a bundled old run carries them."""
    import numpy as np

    from simsubjects.studies.opinion_survey import analysis as op
    from simsubjects.analyze.methods.representativeness import multinomial_interval
    from simsubjects.collect.store import load_run

    from pathlib import Path

    run = Path(__file__).resolve().parent / "data" / "old_runs" / "opinion_survey_random"
    _, responses, _ = load_run(run)
    model, human = op._split(responses)
    attrs = op.persona_attributes(model, human)
    units, hd = op.prompt_units(model, attrs), op._human_dist(human)
    m = units[units["prompt"] == "personas"]
    h = hd[(hd["attribute"] == "POLPARTY") & (hd["group"] == "Democrat") & ~hd["refusal"] & hd["position"].notna()]
    B = 30
    got = multinomial_interval(m, h, replicates=B, seed=4)
    # the same draws, by hand: subjects first, then each question (key order) as a multinomial of its n
    rng = np.random.default_rng(4)
    subjects = sorted(m["unit"].unique())
    pick = rng.integers(0, len(subjects), size=(B, len(subjects)))
    cells = pd.concat([m[["key", "position"]], h[["key", "position"]]]).drop_duplicates().sort_values(["key", "position"])
    hw = h.groupby(["key", "position"])[["weight", "n_respondents"]].sum()
    draws = {}
    for key, c in cells.groupby("key", sort=True):
        w = hw.reindex(list(zip(c["key"], c["position"])), fill_value=0.0)
        draws[key] = (c["position"].to_numpy(), rng.multinomial(int(w["n_respondents"].sum()),
                                                                w["weight"].to_numpy() / w["weight"].sum(), size=B))
    reps = []
    for b in range(B):
        mb = pd.concat([m[m["unit"] == subjects[i]] for i in pick[b]])
        hb = pd.DataFrame([{"key": k, "position": p, "weight": float(n)} for k, (pos, d) in draws.items()
                           for p, n in zip(pos, d[b])])
        reps.append(representativeness(mb[["key", "position", "weight"]], hb)["estimate"].iat[0])
    full = representativeness(m[["key", "position", "weight"]], h[["key", "position", "weight"]])["estimate"].iat[0]
    assert got["rep_full"] == pytest.approx(full, abs=1e-12)
    assert [got["boot.percentile.low"], got["boot.percentile.high"]] == \
        pytest.approx(list(np.quantile(reps, [0.025, 0.975])), abs=1e-12)
    assert got["boot.bias"] == pytest.approx(np.mean(reps) - full, abs=1e-12)
    assert got["estimate.corrected"] == pytest.approx(2 * full - np.mean(reps), abs=1e-12)
    assert got["n_subjects"] == 3 and got["n_respondents"] == h.groupby("key")["n_respondents"].sum().max()
    # the analysis table: every row (prompt x group) with its interval
    tab = op.analyze_opinion_survey(responses)["representativeness"]
    assert tab["boot.low"].notna().all() and (tab["boot.low"] <= tab["boot.high"]).all()
    assert np.allclose(tab["estimate.corrected"], tab["estimate"] - tab["boot.bias"], atol=1e-12)
    assert tab["boot_unit"].str.contains("multinomial of its n_respondents").all()
    assert (tab.loc[tab["prompt"] == "default", "n_subjects"] == 1).all()
