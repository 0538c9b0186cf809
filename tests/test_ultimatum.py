"""Ultimatum Game design, prompt and analyses (hand computations on small fixtures)."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simsubjects.studies.ultimatum.analysis import analyze_ultimatum
from simsubjects.studies.names import name_pool, surnames, ultimatum_pairs
from simsubjects.studies.ultimatum.design import build_trials


def test_name_pool_and_balanced_pairing():
    s = surnames()
    assert len(s) == 500 and s["surname"].is_unique and s.groupby("group").size().eq(100).all()
    assert len(name_pool()) == 1000 and len(name_pool(("Mr.", "Ms.", "Mx."))) == 1500
    p = ultimatum_pairs(seed=3)
    assert len(p) == 10_000
    assert p["responder"].value_counts().eq(10).all() and p["responder"].nunique() == 1000
    assert p["proposer"].value_counts().eq(10).all()
    # each proposer surname meets one responder of every group
    sur = p.assign(ps=p["proposer"].str.split(" ").str[1]).drop_duplicates(["ps", "responder_group", "pair"])
    assert sur.groupby("ps")["responder_group"].nunique().eq(5).all()
    assert (p["proposer"].str[4:] != p["responder"].str[4:]).all()
    assert p["pairing"].head(200).value_counts().eq(50).all()
    assert ultimatum_pairs(seed=3).equals(p) and not ultimatum_pairs(seed=4).equals(p)


def test_prompt_is_figure_3():
    trials, items = build_trials(pairs=4)
    assert len(trials) == 44 and len(items) == 11
    row = trials[(trials["offer"] == 4)].iloc[0]
    prop, resp = row["proposer"], row["responder"]
    self_ = "himself" if prop.startswith("Mr.") else "herself"
    want = (f"In the following scenario, {resp} had to decide whether to accept or reject the proposal.\n\n"
            f"Scenario: {prop} is given $10. {prop} will propose how to split the money between {self_} and {resp}. "
            f"Then {resp} will decide whether to accept or reject {prop}'s proposal. If {resp} accepts, then {prop} "
            f"and {resp} get the money as they agreed to split. If {resp} rejects, then {prop} and {resp} both "
            f"receive nothing. {prop} takes $6 for {self_} and offers {resp} $4\n\nAnswer: {resp} decides to")
    assert row["prompt"] == want
    assert row["options"] == (" accept", " reject")


def fixture_responses(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for k, pairing in enumerate(["Mr-Mr", "Mr-Ms", "Ms-Mr", "Ms-Ms"] * 3):
        pair = f"pair{k}"
        for offer in (1, 2, 5):
            p = float(np.clip(0.1 * offer + 0.1 * (pairing == "Mr-Ms") + rng.normal(0, 0.05), 0.01, 0.99))
            z = float(rng.uniform(0.5, 1))
            for resp, w in (("accept", p), ("reject", 1 - p)):
                rows.append({"study": "ultimatum", "trial": f"{pair}|{offer}", "item": f"offer-{offer:02d}",
                             "condition": pairing, "subject": pair, "source": "model", "model": "m",
                             "method": "exact", "response": resp, "weight": w, "validity": z,
                             "offer": offer, "pairing": pairing, "pair": pair})
    return pd.DataFrame(rows)


def test_analysis_by_hand():
    df = fixture_responses()
    t = analyze_ultimatum(df)
    acc = df[df["response"] == "accept"]
    for offer, g in acc.groupby("offer"):
        row = t["acceptance_by_offer"].query("offer == @offer").iloc[0]
        assert row["mean"] == pytest.approx(g["weight"].mean())
        assert row["std.error"] == pytest.approx(g["weight"].std(ddof=1) / np.sqrt(len(g)))
    v = t["validity"].query("offer == 'all'").iloc[0]
    assert v["validity"] == pytest.approx(acc["validity"].mean())
    w = t["pairing_tests"].query("offer == '2' and comparison == 'Mr-Ms minus Ms-Mr'").iloc[0]
    a = acc.query("offer == 2 and pairing == 'Mr-Ms'")["weight"]
    b = acc.query("offer == 2 and pairing == 'Ms-Mr'")["weight"]
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert w["statistic"] == pytest.approx(ref.statistic) and w["p.value"] == pytest.approx(ref.pvalue)
    kw = t["pairing_tests"].query("offer == 'all' and comparison == '4 pairings'").iloc[0]
    # pooled over offers the unit is the name pair, its mean over the offers (issue 25: not pairs x offers)
    per_pair = acc.groupby(["pairing", "pair"])["weight"].mean()
    groups = [per_pair[k] for k in ["Mr-Mr", "Mr-Ms", "Ms-Mr", "Ms-Ms"]]
    assert kw["statistic"] == pytest.approx(stats.kruskal(*groups).statistic) and kw["df"] == 3
    assert kw["n"] == acc["pair"].nunique() < len(acc) and kw["unit"] == "name pair"
    wa = t["pairing_tests"].query("offer == 'all' and comparison == 'Mr-Ms minus Ms-Mr'").iloc[0]
    ref = stats.ttest_ind(per_pair["Mr-Ms"], per_pair["Ms-Mr"], equal_var=False)
    assert wa["statistic"] == pytest.approx(ref.statistic) and wa["df"] == pytest.approx(ref.df)
    c = t["offer_correlations"].query("offer_a == 1 and offer_b == 5").iloc[0]
    wide = acc.pivot(index="pair", columns="offer", values="weight")
    assert c["r"] == pytest.approx(np.corrcoef(wide[1], wide[5])[0, 1])


def test_two_models_are_kept_apart():
    a, b = fixture_responses(0), fixture_responses(1).assign(model="other")
    t = analyze_ultimatum(pd.concat([a, b]))
    assert set(t["acceptance_by_offer"]["model"]) == {"m", "other"}
    assert t["acceptance_by_offer"].groupby("model")["n"].sum().eq(36).all()


def test_offers_option_selects_offers(tmp_path, capsys):
    """--offers: a subset of the 11 offers (the tiny replication asks $0, $2, $5, $10); a bad one is one line, exit 2."""
    from simsubjects.cli.commands import main
    from simsubjects.studies.ultimatum import STUDY

    trials, items = STUDY.build(pairs=8, offers="0,2,5,10")
    assert len(trials) == 8 * 4 and list(items["offer"]) == [0, 2, 5, 10]
    assert len(STUDY.build(pairs=8)[0]) == 8 * 11 and len(STUDY.build(pairs=8, offers="all")[0]) == 8 * 11
    for bad, message in (("0,11", "--offers: [11] not in 0..10"), ("two", "--offers two: give dollars")):
        assert main(["collect", "ultimatum", "--model", "smollm2", "--pairs", "8", "--offers", bad,
                     "--out", str(tmp_path / "run")]) == 2
        err = capsys.readouterr().err.strip()
        assert message in err and "\n" not in err
        assert not (tmp_path / "run" / "manifest.json").exists()
