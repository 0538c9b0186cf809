"""Silicon samples: OpinionQA readers, personas from data, raking, option order, the opinion-survey study.

References computed independently inside the tests: OpinionQA's formula (helpers.py of
tatsu-lab/opinions_qa: D_H from the counts of the ordinal references, scipy's
wasserstein_distance on the ordinal values divided by get_max_wd = max - min of them), raking's
closed form for one attribute (post-stratification), and R's representativeness().
"""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wasserstein_distance

from simsubjects.collect import option_order, personas as P
from simsubjects.studies.opinion_survey import analysis as op
from simsubjects.analyze.order_effects import order_effects
from simsubjects.datasets.opinionqa import read_count_files, read_info, read_opinionqa
from simsubjects.studies.opinion_survey import OPINION_SURVEY
from simsubjects.studies.opinion_survey import design as study
from simsubjects.datasets.registry import data_path
from simsubjects.errors import UserError

WAVE = data_path("opinion_survey/American_Trends_Panel_W99")
RESPONDENTS = data_path("opinion_survey/respondents.csv")


@pytest.fixture
def released(tmp_path):
    """The count files + info.csv only, as the OpinionQA repository holds them (no responses.csv)."""
    d = tmp_path / "American_Trends_Panel_W99"
    d.mkdir()
    for name in ("info.csv", "POLPARTY_data.json", "SEX_data.json"):
        shutil.copy(WAVE / name, d / name)
    return d


# ---------------------------------------------------------------- OpinionQA readers

def opinionqa_formula(counts_a: dict, counts_b: dict, refs: list, ordinal: list) -> float:
    """OpinionQA helpers.py, written out: D over the ordinal references, W1 on the ordinal values / max W1."""
    a = np.array([counts_a.get(r, 0.0) for r in refs[: len(ordinal)]], float)
    b = np.array([counts_b.get(r, 0.0) for r in refs[: len(ordinal)]], float)
    a, b = a / a.sum(), b / b.sum()
    d0, d1 = np.zeros(len(ordinal)), np.zeros(len(ordinal))
    d0[np.argmax(ordinal)], d1[np.argmin(ordinal)] = 1, 1
    max_wd = wasserstein_distance(ordinal, ordinal, d0, d1)
    return wasserstein_distance(ordinal, ordinal, a, b) / max_wd


def test_democrat_vs_republican_equals_opinionqa_formula(released):
    """Done when: the count files read as released; D-vs-R Rep of every question = OpinionQA's formula."""
    from simsubjects.analyze.methods.representativeness import representativeness, wasserstein_by_question

    human = read_count_files(released, attributes=["POLPARTY"])
    dem = human[human["group"] == "Democrat"].assign(model="Democrat")
    rep = human[human["group"] == "Republican"]
    ours = wasserstein_by_question(dem[["model", "key", "position", "refusal", "weight"]], rep,
                                   by=["attribute", "group"]).set_index("key")["distance"]
    raw = json.loads((released / "POLPARTY_data.json").read_text())
    info = pd.read_csv(released / "info.csv", keep_default_na=False)
    expected = {}
    for rec in info.to_dict("records"):
        refs, ordinal = eval(rec["references"]), eval(rec["option_ordinal"])  # noqa: S307 - the test's own fixture
        expected[rec["key"]] = opinionqa_formula(raw[rec["key"]]["Democrat"], raw[rec["key"]]["Republican"], refs, ordinal)
    assert len(ours) == len(expected) == 20
    for key, v in expected.items():
        assert ours[key] == pytest.approx(v, abs=1e-12), key
    r = representativeness(dem[["model", "key", "position", "refusal", "weight"]], rep, by=["attribute", "group"])
    assert r["estimate"].item() == pytest.approx(1 - np.mean(list(expected.values())), abs=1e-12)


def test_overall_is_the_sum_over_groups_and_mc_options_quirks_are_ignored(released):
    human = read_count_files(released, attributes=["POLPARTY"])
    raw = json.loads((released / "POLPARTY_data.json").read_text())
    # released MC_options split "Smaller government, fewer services" at its comma; info.csv keeps it whole
    assert "fewer services" in raw["GOVSIZE_W99"]["MC_options"]
    overall = human[(human["attribute"] == "Overall") & (human["key"] == "GOVSIZE_W99")].set_index("response")["weight"]
    want = {}
    for group, counts in raw["GOVSIZE_W99"].items():
        if group in ("MC_options", "question_text"):
            continue
        for a, n in counts.items():
            want[a] = want.get(a, 0) + n  # the "Refused" party group counts in the overall distribution
    assert overall.to_dict() == want
    # the "Refused" party group is not a group of its own
    assert set(human.loc[human["attribute"] == "POLPARTY", "group"]) == {"Democrat", "Republican", "Independent"}


def test_both_released_formats_give_the_same_distributions():
    counts = read_opinionqa(WAVE, ["POLPARTY"], fmt="counts")
    wave = read_opinionqa(WAVE, ["POLPARTY"], fmt="wave")
    key = ["key", "attribute", "group", "response"]
    both = counts.merge(wave, on=key, how="outer", suffixes=("", "_wave"), indicator=True)
    assert (both["_merge"] == "both").all() and len(both) == 340
    assert np.allclose(both["weight"], both["weight_wave"], atol=0)


def test_none_answers_stay_answers(tmp_path):
    d = tmp_path / "W5"
    d.mkdir()
    info = pd.DataFrame({"key": ["Q1_W5"], "question": ["Which of these, if any?"],
                         "references": [repr(["Some", "None", "Refused"])], "option_ordinal": [repr([1.0, 2.0])]})
    info.to_csv(d / "info.csv", index=False)
    (d / "SEX_data.json").write_text(json.dumps({"Q1_W5": {
        "MC_options": ["Some", "None", "Refused"], "question_text": "Which of these, if any?",
        "Male": {"Some": 3.0, "None": 5.0}, "Female": {"None": 2.0, "Refused": 1.0, "\"Some\"": 4.0}}}))
    h = read_count_files(d).set_index(["group", "response"])
    assert h.loc[("Male", "None"), "weight"] == 5.0 and h.loc[("Male", "None"), "position"] == 2.0
    assert h.loc[("Female", "Some"), "weight"] == 4.0  # a quoted answer matches its reference
    assert h.loc[("Overall", "None"), "weight"] == 7.0
    assert not h.loc[("Overall", "None"), "refusal"] and h.loc[("Overall", "Refused"), "refusal"]


def test_cli_imports_an_opinionqa_folder(released, tmp_path):
    from simsubjects.cli.commands import main

    out = tmp_path / "human.parquet"
    assert main(["datasets", "import", "opinionqa", str(released), "--out", str(out)]) == 0
    got = pd.read_parquet(out)
    assert got["key"].nunique() == 20 and set(got["attribute"]) == {"Overall", "POLPARTY", "SEX"}
    assert main(["datasets", "import", "opinionqa", str(tmp_path / "missing")]) == 2


def test_bad_count_files_name_the_file(tmp_path):
    d = tmp_path / "W1"
    d.mkdir()
    with pytest.raises(UserError, match="no <ATTRIBUTE>_data.json"):
        read_count_files(d)
    shutil.copy(WAVE / "info.csv", d / "info.csv")
    (d / "SEX_data.json").write_text('{"GOVSIZE_W99": {"Male": {"Refused": -1}}}')
    with pytest.raises(UserError, match=r"SEX_data.json.*count -1"):
        read_count_files(d, keys=["GOVSIZE_W99"])
    (d / "SEX_data.json").write_text("not json")
    with pytest.raises(UserError, match="cannot read as JSON"):
        read_count_files(d)
    with pytest.raises(UserError, match="info.csv"):
        read_info(tmp_path)


# ---------------------------------------------------------------- personas, sampling, raking

def test_persona_formats():
    row = {"POLPARTY": "Republican", "SEX": "Female", "AGE": "30-49"}
    assert P.render(row, ["POLPARTY", "SEX", "AGE"], "argyle") == (
        "Politically, I am a Republican. I am female. In terms of my age, I am 30-49 years old.")
    assert P.render(row, ["POLPARTY"], "portray") == (
        "Answer the following question as if in politics today, you considered yourself a Republican.")
    assert P.render(row, ["POLPARTY"], "bio").endswith("Description: In politics today, I consider myself a Republican.")
    qa = P.render(row, ["POLPARTY"], "qa", {"POLPARTY": ["Democrat", "Republican"]})
    assert qa == "Question: In politics today, do you consider yourself a\nA. Democrat\nB. Republican\nAnswer: B"
    assert P.render(row, [], "I am $AGE and vote $POLPARTY.") == "I am 30-49 and vote Republican."
    with pytest.raises(UserError, match=r"\$INCOME"):
        P.render(row, [], "I earn $INCOME")
    with pytest.raises(UserError, match="--persona-format"):
        P.check_format("haiku")


def test_respondents_table_sav_keeps_labels_and_none(tmp_path):
    import pyreadstat

    df = pd.DataFrame({"id": ["a", "b"], "RELIG": ["None", "Jewish"], "wt": [1.0, 2.0]})
    df.to_csv(tmp_path / "r.csv", index=False)
    r = P.read_respondents(tmp_path / "r.csv", weight="wt")
    assert r.data["RELIG"].tolist() == ["None", "Jewish"] and r.attributes == ["RELIG"]
    pyreadstat.write_sav(df, str(tmp_path / "r.sav"), column_labels=["id", "Present religion", "weight"])
    r = P.read_respondents(tmp_path / "r.sav", weight="wt")
    assert P.column_labels(r)["RELIG"] == "Present religion"
    bad = df.assign(wt=["1", "x"])
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(UserError, match=r"bad.csv:3: weight wt"):
        P.read_respondents(tmp_path / "bad.csv", weight="wt")
    df.rename(columns={"RELIG": "model"}).to_csv(tmp_path / "clash.csv", index=False)
    with pytest.raises(UserError, match="shadow"):
        P.read_respondents(tmp_path / "clash.csv", weight="wt")


def test_weighted_resample_within_groups():
    r = P.read_respondents(RESPONDENTS)
    w = np.where(r.data["SEX"] == "Male", 1.0, 0.0)  # only men can be drawn
    s = P.resample(r, 5, seed=3, by="POLPARTY", weights=w)
    assert s.data.groupby("POLPARTY").size().to_dict() == {"Democrat": 5, "Republican": 5, "Independent": 5}
    assert set(s.data["SEX"]) == {"Male"} and s.data[P.ID].is_unique
    again = P.resample(r, 5, seed=3, by="POLPARTY", weights=w)
    assert again.data[P.ID].tolist() == s.data[P.ID].tolist()


def test_resample_per_group_keeps_the_peoples_group_shares():
    """Issue 25, audit finding 5: --sample N draws N per party; the pooled persona prompt weighted each party
    1/3. The drawn rows now carry their party's share of the people's weight, so the personas' weights give
    the people's party shares (to 1e-12), and a draw without groups keeps equal weights."""
    r = P.read_respondents(RESPONDENTS)
    base = r.data[r.weight] if r.weight else pd.Series(1.0, index=r.data.index)
    people = (base.groupby(r.data["POLPARTY"]).sum() / base.sum()).to_dict()
    s = P.resample(r, 20, seed=1, by="POLPARTY")
    assert s.data.groupby("POLPARTY").size().eq(20).all()
    table = P.personas(s, "argyle", s.attributes)
    got = (table["persona_weight"].groupby(s.data["POLPARTY"].to_numpy()).sum() / table["persona_weight"].sum())
    assert got.to_dict() == pytest.approx(people, abs=1e-12)
    assert max(abs(v - 1 / 3) for v in people.values()) > 0.01  # the fix matters for this table
    assert table["persona_weight"].mean() == pytest.approx(1.0)
    flat = P.resample(r, 30, seed=1)
    assert np.allclose(flat.data[flat.weight], 1.0)


def test_raking_reproduces_margins_to_1e9():
    r = P.read_respondents(RESPONDENTS)
    margins = {"POLPARTY": {"Democrat": 0.33, "Republican": 0.29, "Independent": 0.38},
               "SEX": {"Male": 0.48, "Female": 0.52},
               "AGE": {"18-29": 0.21, "30-49": 0.33, "50-64": 0.25, "65+": 0.21}}
    w = P.rake(r, margins)
    for attr, shares in margins.items():
        got = pd.Series(w).groupby(r.data[attr].to_numpy()).sum()
        for g, s in shares.items():
            assert abs(got[g] - s) < 1e-9, (attr, g)
    # one attribute: raking is post-stratification, w_i = base_i * target_g / base share of g
    one = {"POLPARTY": margins["POLPARTY"]}
    base = r.data["WEIGHT"].to_numpy(float) / r.data["WEIGHT"].sum()
    share = pd.Series(base).groupby(r.data["POLPARTY"].to_numpy()).transform("sum").to_numpy()
    closed = base * r.data["POLPARTY"].map(one["POLPARTY"]).to_numpy() / share
    assert np.allclose(P.rake(r, one), closed, atol=1e-12)
    with pytest.raises(UserError, match="sum to 0.9"):
        P.rake(r, {"SEX": {"Male": 0.4, "Female": 0.5}})
    with pytest.raises(UserError, match="has no target share"):
        P.rake(r, {"SEX": {"Male": 1.0}})


# ---------------------------------------------------------------- option order

def test_orderings():
    cyc = option_order.orderings(4, "cyclic", 0, fixed_last=[False, False, False, True])
    assert len(cyc) == 3 and all(p[-1] == 3 for p in cyc)
    for pos in range(3):  # each free option once in every position
        assert sorted(p[pos] for p in cyc) == [0, 1, 2]
    assert len(option_order.orderings(4, "all", 0)) == 24
    assert option_order.orderings(5, "random", ("s", "q")) == option_order.orderings(5, "random", ("s", "q"))
    assert option_order.orderings(3, "fixed", 0) == [(0, 1, 2)]
    with pytest.raises(UserError, match="cyclic"):
        option_order.orderings(8, "all", 0)


def test_reorder_any_k_choice_trials():
    """A study whose completions are the answers themselves: completions move with their labels."""
    trials = pd.DataFrame({"trial": ["t1"], "item": ["i1"], "condition": [""], "subject": ["s"],
                           "prompt": ["Accept or reject?"], "options": [(" accept", " reject", " unsure")],
                           "labels": [("accept", "reject", "unsure")]})
    out = option_order.reorder_trials(trials, lambda rec, shown: f"Options: {', '.join(shown)}.", "all", positional=False)
    assert len(out) == 6 and out["trial"].is_unique
    for rec in out.to_dict("records"):
        assert [o.strip() for o in rec["options"]] == list(rec["labels"]) == json.loads(rec["order_shown"])
        assert rec["prompt"] == f"Options: {', '.join(rec['labels'])}."


def toy_analysis(responses, items):
    return {"rows": pd.DataFrame({"n": [len(responses)]})}


def test_any_study_that_records_its_order_gets_an_order_effect_table(tmp_path, monkeypatch):
    from simsubjects.publish import analysis as analyze_run
    from simsubjects.collect.store import RunStore
    from simsubjects.collect.studies.registry import StudyDef
    from simsubjects.collect.schema import check_responses

    trials = pd.DataFrame({"trial": [f"t{i}" for i in range(6)], "item": ["i1", "i2"] * 3, "condition": "",
                           "subject": [f"s{i}" for i in range(6)], "prompt": "", "options": [(" A", " B", " C")] * 6,
                           "labels": [("x", "y", "z")] * 6})
    shown = option_order.reorder_trials(trials, lambda rec, labels: "/".join(labels), "cyclic")
    resp = option_order.add_shown_position(_fake_responses(shown, primacy=1.0).assign(study="toy"))
    store = RunStore.open(tmp_path / "run", {"study": "toy"})
    store.finish(check_responses(resp), pd.DataFrame({"item": ["i1", "i2"]}), {"study": "toy", "status": "complete"})
    toy = StudyDef(name="toy", help="", build=None, analyze=toy_analysis)
    monkeypatch.setattr("simsubjects.collect.studies.registry.get_study", lambda name: toy)  # studyfile.origin asks it
    a = analyze_run.analyze_runs([tmp_path / "run"], plots=False)
    assert set(a.tables) == {"rows", "order_effects", "order_effects_average"}
    assert len(a.tables["order_effects"]) == 6 and a.tables["order_effects_average"]["estimate"].item() > 0.3


def _fake_responses(trials: pd.DataFrame, primacy: float, seed: int = 0) -> pd.DataFrame:
    """A stand-in model: a seeded distribution per trial plus `primacy` on the option shown first."""
    rng = np.random.default_rng(seed)
    rows = []
    for rec in trials.to_dict("records"):
        p = rng.dirichlet(np.ones(len(rec["labels"])))
        p[0] += primacy
        p /= p.sum()
        design = {k: v for k, v in rec.items() if k not in ("prompt", "options", "labels")}
        for lab, w in zip(rec["labels"], p):
            rows.append({**design, "study": "opinion_survey", "source": "model", "model": "fake", "method": "exact",
                         "response": lab, "weight": w, "validity": 1.0})
    return pd.DataFrame(rows)


def test_order_effects_by_hand():
    trials, _ = study.build(first=3, order="cyclic")
    resp = option_order.add_shown_position(_fake_responses(trials, primacy=0.5))
    per_item, avg = order_effects(resp, item="key")
    share = resp["weight"] / resp.groupby("trial")["weight"].transform("sum")
    r = resp.assign(share=share)
    g = r[(r["key"] == "CLIM1_W99") & (r["response"] == "A great deal")]
    first = g.loc[g["shown_position"] == 1, "share"].mean()
    last = g.loc[g["shown_position"] == g["n_ordered"], "share"].mean()
    row = per_item.set_index(["item", "response"]).loc[("CLIM1_W99", "A great deal")]
    assert row["estimate"] == pytest.approx(first - last)
    item_means = per_item.groupby("item")["estimate"].mean()  # the item is the unit (its cells are dependent)
    assert avg["estimate"].item() == pytest.approx(item_means.mean()) and avg["n"].item() == len(item_means) == 3
    assert avg["estimate"].item() > 0.2
    assert "Refused" not in set(per_item["response"])  # kept last, never first
    _, none = order_effects(resp.drop(columns=["shown_position"]))
    assert none.empty


# ---------------------------------------------------------------- the study and its analysis

def test_trials_record_personas_and_order():
    trials, items = study.build(first=2, personas="bundled", sample="1", order="cyclic", persona_format="bio")
    assert set(trials["condition"]) == {"default", "persona"}
    steered = trials[trials["condition"] == "persona"]
    assert sorted(steered["POLPARTY"].unique()) == ["Democrat", "Independent", "Republican"]
    assert steered["prompt"].str.startswith("Below you will be asked").all()
    t = trials[trials["key"] == "GOVSIZE_W99"].iloc[1]
    assert json.loads(t["order_shown"]) == list(t["labels"]) and t["labels"][-1] == "Refused"
    assert t["prompt"].endswith("A. Bigger government, more services\nB. Smaller government, fewer services\n"
                                "C. Refused\nAnswer:")
    assert trials.attrs["column_labels"]["POLPARTY"].startswith("Persona attribute POLPARTY")
    assert list(items["key"]) == ["GOVSIZE_W99", "ECON1_W99"]


def test_panel_from_margins_in_the_study(tmp_path):
    m = tmp_path / "margins.csv"
    pd.DataFrame({"attribute": ["SEX", "SEX", "POLPARTY", "POLPARTY", "POLPARTY"],
                  "group": ["Male", "Female", "Democrat", "Republican", "Independent"],
                  "share": [0.0, 1.0, 0.5, 0.25, 0.25]}).to_csv(m, index=False)
    trials, _ = study.build(first=1, personas="bundled", margins=str(m), sample="12", seed=4, no_default_prompt=True)
    assert trials["persona"].nunique() == 12 and set(trials["SEX"]) == {"Female"}  # a zero margin is never drawn
    pd.DataFrame({"attribute": ["SEX"], "group": ["Male"], "share": ["half"]}).to_csv(m, index=False)
    with pytest.raises(UserError, match=r"margins.csv:2: share 'half'"):
        study.build(first=1, personas="bundled", margins=str(m), sample="12")


def test_analysis_against_direct_computation():
    params = dict(first=6, personas="bundled", sample="2", order="cyclic", seed=1)
    trials, items = study.build(**params)
    resp = study.finalize(_fake_responses(trials, primacy=0.2), {**params, "groups": "POLPARTY"})
    tables = op.analyze_opinion_survey(resp, items)
    rep = tables["representativeness"].set_index(["prompt", "attribute", "group"])
    assert len(rep) == 2 * 4 and rep["n"].eq(6).all()
    # the default prompt vs Democrats, from the raw rows: mean share over orderings, refusals out
    m = resp[(resp["source"] == "model") & (resp["subject"] == "")].copy()
    m["share"] = m["weight"] / m.groupby("trial")["weight"].transform("sum")
    h = resp[(resp["source"] == "human") & (resp["group"] == "Democrat")]
    dists = []
    for key, g in m.groupby("key"):
        d_m = g[~g["refusal"].astype(bool)].groupby("position")["share"].mean()
        hk = h[(h["key"] == key) & ~h["refusal"].astype(bool)].groupby("position")["weight"].sum()
        pos = d_m.index.to_numpy(float)
        dists.append(wasserstein_distance(pos, hk.index.to_numpy(float), d_m.to_numpy(), hk.to_numpy())
                     / (pos.max() - pos.min()))
    assert rep.loc[("default", "POLPARTY", "Democrat"), "estimate"] == pytest.approx(1 - np.mean(dists), abs=1e-12)
    st = tables["steerability"].set_index("group")
    assert st.loc["Democrat", "rep_default"] == pytest.approx(1 - np.mean(dists), abs=1e-12)
    dem = st.loc["Democrat"]
    assert dem["estimate"] == pytest.approx(dem["rep_steered"] - dem["rep_default"])
    ref = tables["refusal_summary"].set_index(["source", "who"])
    hr = resp[(resp["source"] == "human") & (resp["attribute"] == "Overall")]
    per_q = hr.groupby("key").apply(lambda g: g.loc[g["refusal"].astype(bool), "weight"].sum() / g["weight"].sum(),
                                    include_groups=False)
    assert ref.loc[("human", "Overall=Overall"), "estimate"] == pytest.approx(per_q.mean())
    hb = tables["human_baseline"].set_index("group")
    assert set(hb.index) == {"Democrat", "Republican", "Independent"} and (hb["estimate"] < 1).all()
    assert tables["order_effects_average"]["estimate"].item() > 0


def test_bad_inputs_fail_before_the_model(tmp_path):
    from simsubjects.cli.commands import main

    out = tmp_path / "run"
    assert main(["collect", "opinion-survey", "--personas", str(tmp_path / "nope.csv"), "--out", str(out)]) == 2
    assert main(["collect", "opinion-survey", "--human", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert main(["collect", "opinion-survey", "--no-default-prompt", "--out", str(out)]) == 2
    assert main(["collect", "opinion-survey", "--persona-format", "haiku", "--out", str(out)]) == 2
    assert main(["collect", "opinion-survey", "--groups", "RACE", "--out", str(out)]) == 2  # no RACE_data.json
    assert not out.exists()


# ---------------------------------------------------------------- on the embedded model

@pytest.fixture(scope="module")
def small_run(smollm2, tmp_path_factory):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.publish.export import export_run

    out = tmp_path_factory.mktemp("opinion") / "run"
    run_study(OPINION_SURVEY, "smollm2", out, params=dict(first=3, personas="bundled", sample="1",
                                                                 order="random", seed=0, groups="POLPARTY"),
              model=smollm2, show_progress=False)
    export_run(out, ["dta", "sav", "rds"])
    return out


def test_personas_are_columns_of_the_table_and_exports(small_run):
    import pyreadr
    import pyreadstat

    resp = pd.read_parquet(small_run / "responses.parquet")
    model = resp[resp["source"] == "model"]
    assert set(model["POLPARTY"]) == {"", "Democrat", "Republican", "Independent"}
    assert model["shown_position"].notna().all() and model.groupby("trial")["weight"].sum().round(9).eq(1).all()
    _, meta = pyreadstat.read_sav(str(small_run / "export" / "responses.sav"), metadataonly=True)
    assert meta.column_names_to_labels["POLPARTY"] == "Persona attribute POLPARTY (from respondents.csv)"
    assert "Republican" in meta.variable_value_labels["POLPARTY"].values()
    _, meta = pyreadstat.read_dta(str(small_run / "export" / "responses.dta"), metadataonly=True)
    assert meta.column_names_to_labels["AGE"] == "Persona attribute AGE (from respondents.csv)"
    rds = pyreadr.read_r(str(small_run / "export" / "responses.rds"))[None]
    assert "Democrat" in rds["POLPARTY"].cat.categories
    # issue 29: the answers are a factor in each question's scale order (option_ordinal), refusals last,
    # not alphabetical (OpinionQA's "Refused" after every scale point, "Smaller government" before "Bigger")
    levels = list(rds["response"].cat.categories)
    for _, q in model.dropna(subset=["position"]).groupby("item"):
        scale = q.drop_duplicates("response").sort_values("position")["response"].tolist()
        assert [levels.index(v) for v in scale] == sorted(levels.index(v) for v in scale), scale
    positioned = set(model.dropna(subset=["position"])["response"])
    refusals = set(model["response"].dropna()) - positioned
    assert refusals and min(levels.index(v) for v in refusals) > max(levels.index(v) for v in positioned)


@pytest.mark.r
def test_rds_persona_columns_carry_their_labels_in_r(small_run):
    """The .rds of a real run read in R: persona columns are factors labelled as in the codebook."""
    import shutil
    import subprocess

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed")
    book = pd.read_csv(small_run / "export" / "codebook_responses.csv", keep_default_na=False).set_index("column")
    script = (f'x <- readRDS("{small_run / "export" / "responses.rds"}"); stopifnot(is.factor(x$POLPARTY)); '
              'cat(attr(x$POLPARTY, "label"), attr(x$AGE, "label"), attr(x$shown_position, "label"), sep = "\\n")')
    r = subprocess.run(["Rscript", "--vanilla", "-e", script], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines() == [book.loc[c, "label"] for c in ("POLPARTY", "AGE", "shown_position")]
    assert r.stdout.startswith("Persona attribute POLPARTY (from respondents.csv)")


def test_analyze_cli_writes_heatmap_and_report(small_run):
    from simsubjects.cli.commands import main
    from simsubjects.publish.report import render_report

    assert main(["analyze", str(small_run)]) == 0
    assert (small_run / "analysis" / "representativeness_heatmap.png").stat().st_size > 5000
    html = render_report(small_run).read_text()
    assert "representativeness_heatmap.png" in html and "Order effect: P(option) shown first vs last" in html


@pytest.mark.r
def test_check_r_and_r_twin_by_group(small_run, monkeypatch):
    pytest.importorskip("rpy2")
    from simsubjects.analyze.check_r import check_r, r_session
    from simsubjects.collect.store import load_run

    _, resp, items = load_run(small_run)
    table = check_r("opinion_survey", resp, items)
    assert len(table) > 50 and table["ok"].all()
    # issue 40, item 7: the bootstrap columns, recomputed in R on the resamples Python drew
    boot = table[table["statistic"].str.contains("representativeness bootstrap")]
    assert len(boot) == 4 * 8 and (boot["tolerance"] <= 1e-9).all() and boot["python"].notna().all()
    # ... and only on those: the people's counts handed to R redrawn with another seed fail the check
    from simsubjects.analyze.methods import representativeness as rep

    tables, real = op.analyze_opinion_survey(resp, items), rep.multinomial_resamples
    monkeypatch.setattr(rep, "multinomial_resamples",
                        lambda *a, **k: {**real(*a, **k), "human_pooled": real(*a[:2], seed=1)["human_pooled"]})
    bad = check_r("opinion_survey", resp, items, tables)
    bad = bad[~bad["ok"]]
    assert len(bad) and bad["statistic"].str.contains("representativeness bootstrap").all()
    monkeypatch.undo()
    assert table["statistic"].str.contains("POLPARTY | Republican").any()
    # the R twin computes the distributions itself from the exported .rds
    r = r_session()
    import rpy2.robjects as ro

    rdf = r("opinion_representativeness", r.to_py(ro.r["readRDS"](str(small_run / "export" / "responses.rds"))))
    py = op.analyze_opinion_survey(resp, items)["representativeness"]
    both = py.assign(model=py["model"] + " | " + py["prompt"]).merge(rdf, on=["model", "attribute", "group"],
                                                                     suffixes=("", "_r"))
    assert len(both) == len(py) == 8
    assert np.allclose(both["estimate"], both["estimate_r"], atol=1e-12)


def test_raked_panel_records_kish_n_and_trims_on_request(tmp_path):
    """Issue 25: Kish's effective n of raked weights, with optional trimming. Kish n against a direct
    computation, the cap holds after trimming, Kish n grows, untrimmed weights keep their ratios, and the
    study records both in the trials (then the manifest); --trim without --margins is one line."""
    margins = {"POLPARTY": {"Democrat": 0.6, "Republican": 0.2, "Independent": 0.2},
               "SEX": {"Male": 0.3, "Female": 0.7}}
    r = P.read_respondents(RESPONDENTS)
    w = P.rake(r, margins)
    assert P.kish_n(w) == pytest.approx(1 / np.sum((w / w.sum()) ** 2), rel=1e-12) and P.kish_n(w) < len(w)
    cap = 1.5
    t = P.trim_weights(w, cap)
    assert t.sum() == pytest.approx(1.0) and t.max() <= cap / len(t) * (1 + 1e-9)
    assert P.kish_n(t) > P.kish_n(w)
    kept = t < cap / len(t) * (1 - 1e-9)
    ratio = t[kept] / w[kept]
    assert np.allclose(ratio, ratio[0], rtol=1e-9)  # the excess is spread in proportion to the weights
    m = tmp_path / "margins.csv"
    pd.DataFrame([{"attribute": a, "group": g, "share": s} for a, d in margins.items() for g, s in d.items()]).to_csv(
        m, index=False)
    trials, _ = study.build(first=1, personas="bundled", margins=str(m), sample="12", seed=4, trim=cap,
                            no_default_prompt=True)
    info = trials.attrs["panel"]
    assert info["kish_n_raked"] == pytest.approx(P.kish_n(w), rel=1e-9)
    assert info["kish_n_trimmed"] == pytest.approx(P.kish_n(t), rel=1e-9) and info["trim"] == cap
    assert info["respondents"] == len(w) and info["max_margin_error"] > 0  # trimming moved the margins
    with pytest.raises(UserError, match="--trim: trims raked weights; pass --margins too"):
        study.build(first=1, personas="bundled", sample="12", trim=2.0)
