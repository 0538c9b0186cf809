"""Study files (docs/studies.md): validation corpus, design expansion, option orders, tables, analyses
against independent references, and the three examples collected on the embedded model."""

from __future__ import annotations

import filecmp
import json
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simsubjects.cli.commands import main
from simsubjects.studyfile import load_study
from simsubjects.studyfile.collect import parse_estimate
from simsubjects.studyfile.design import build_trials
from simsubjects.studyfile.spec import Response
from tests.bad_input import assert_one_line_exit_2

ROOT = Path(__file__).resolve().parents[1]
BAD = ROOT / "tests" / "data" / "studyfiles" / "bad"
EXPECTED = json.loads((BAD / "expected.json").read_text())
EXAMPLES = {"opinion_survey": "survey", "vignette_2x2": "vignette", "estimation": "estimation"}


# ------------------------------------------------------------------------------ malformed files

def test_corpus_is_large_and_its_base_is_valid():
    assert len(EXPECTED) >= 25
    assert load_study(BAD / "valid_base.yaml").name == "bad-example"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_study_file_one_line_exit_2_nothing_written(name, tmp_path, capsys):
    assert_one_line_exit_2(BAD / f"{name}.yaml", tmp_path, capsys, EXPECTED[name],
                           with_line=name not in ("empty_file",))


def test_unreadable_and_missing_study_files(tmp_path, capsys):
    assert main(["study", "check", str(tmp_path / "none.yaml")]) == 2
    assert "no such study file" in capsys.readouterr().err
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00bad")
    assert main(["study", "check", str(tmp_path / "bin.yaml")]) == 2
    assert "not UTF-8" in capsys.readouterr().err
    assert main(["collect", str(BAD / "valid_base.yaml"), "--judge-model", "nosuch", "--out", str(tmp_path / "r")]) == 2
    assert "nosuch" in capsys.readouterr().err and not (tmp_path / "r").exists()


# ------------------------------------------------------------------------------ design

def _study(tmp_path, text: str, files: dict | None = None):
    for name, content in (files or {}).items():
        (tmp_path / name).write_text(content)
    (tmp_path / "s.yaml").write_text(text)
    return load_study(tmp_path / "s.yaml")


BASE = """study: t
title: T
prompt: {template: "${persona}${question}\\n${options}", answer_prefix: "\\nAnswer:"}
items:
  - {id: q1, text: "Pick one", response: {type: choice, options: [Red, Blue, Green], style: letters}}
"""


def test_between_assignment_is_balanced_and_item_tags_restrict(tmp_path):
    s = _study(tmp_path, """study: t
title: T
design:
  factors:
    frame: {levels: {gain: "saved", loss: "lost"}, assignment: between}
    time: {levels: [now, later]}
  subjects: 6
  repetitions: 2
prompt: "${question} ${frame} ${time}"
items:
  - {id: a, text: "All ${frame}", response: yesno}
  - {id: b, text: "Only later", response: yesno, attributes: {time: later}}
""")
    trials, items = build_trials(s)
    per_subject = trials.groupby("subject")["frame"].nunique()
    assert (per_subject == 1).all()  # between: one level per subject
    assert trials.drop_duplicates("subject")["frame"].value_counts().to_dict() == {"gain": 3, "loss": 3}
    assert set(trials.loc[trials["item"] == "b", "time"]) == {"later"}
    # 6 subjects x (2 time cells for a + 1 for b) x 2 repetitions
    assert len(trials) == 6 * 3 * 2 and trials["trial"].is_unique
    gain = trials[(trials["frame"] == "gain") & (trials["item"] == "a")]
    assert gain["prompt"].str.startswith("All saved saved").all() and len(gain) == 3 * 2 * 2
    assert list(items["item"]) == ["a", "b"]


def test_sampled_crossing_gives_each_subject_n_cells(tmp_path):
    s = _study(tmp_path, """study: t
title: T
design:
  factors: {x: [a, b, c, d], y: [e, f]}
  crossing: sampled
  sample: 3
  subjects: 5
prompt: "${question} ${x}${y}"
items: [{id: q, text: "Q", response: yesno}]
""")
    trials, _ = build_trials(s)
    assert (trials.groupby("subject")["condition"].nunique() == 3).all()
    assert trials.equals(build_trials(s)[0])  # seeded


@pytest.mark.parametrize("mode, n", [("as_listed", 1), ("reversed", 1), ("randomized", 1), ("averaged", 6)])
def test_option_orders_recorded(tmp_path, mode, n):
    s = _study(tmp_path, BASE.replace("study: t", "study: t\noption_order: " + mode + "\ndesign: {subjects: 4}"))
    trials, _ = build_trials(s)
    assert len(trials) == 4 * n
    assert "option_order" not in trials and "ordering" not in trials  # one vocabulary (collect/option_order.py)
    assert trials.groupby("subject")["order"].apply(list).map(lambda o: o == list(range(n))).all()
    assert trials["n_ordered"].eq(3).all()
    for rec in trials.to_dict("records"):
        assert json.loads(rec["order_shown"]) == list(rec["labels"])
        assert rec["options"] == (" A", " B", " C")
        for letter, label in zip("ABC", rec["labels"]):
            assert f"{letter}. {label}" in rec["prompt"]
    if mode == "reversed":
        assert trials["labels"].iat[0] == ("Green", "Blue", "Red")
    if mode == "averaged":
        assert trials.groupby("subject")["order_shown"].nunique().eq(6).all()
    if mode == "randomized":
        assert trials["order_shown"].nunique() > 1


def test_averaged_orderings_sampled_when_k_factorial_is_large(tmp_path):
    s = _study(tmp_path, BASE.replace("[Red, Blue, Green]", "[A1, A2, A3, A4, A5, A6]").replace(
        "study: t", "study: t\noption_order: {mode: averaged, max_orderings: 10}"))
    trials, _ = build_trials(s)
    assert len(trials) == 10 and trials["order_shown"].nunique() == 10


def test_refusal_stays_last_and_words_style_completions(tmp_path):
    s = _study(tmp_path, BASE.replace("{type: choice, options: [Red, Blue, Green], style: letters}",
                                      "{type: likert, points: 5, refusal: \"Don't know\", style: words}").replace(
        "study: t", "study: t\noption_order: reversed"))
    trials, items = build_trials(s)
    assert trials["labels"].iat[0][-1] == "Don't know"
    assert trials["options"].iat[0][0] == " Strongly agree"
    assert list(items["positions"].iat[0][:5]) == [1, 2, 3, 4, 5] and items["refusal"].iat[0][-1]


@pytest.mark.parametrize("text, value", [("1,064] yes", 1064), (" 42]", 42), ("299 792]", 299792), ("about 7]", None),
                                         ("5", None), ("3.5]", None), ("-3]", None), ("2000000]", None), ("]", None),
                                         ("1 + 0.5]", None)])
def test_parse_estimate(text, value):
    r = Response("estimate", min=0, max=1_000_000, integer=True, terminator="]")
    assert parse_estimate(text, r) == value


@pytest.mark.parametrize("text, value", [("about 7 people", 7), ("It is 1,200.5 km", 1200.5), ("none", None), ("-4", None)])
def test_parse_estimate_without_terminator(text, value):
    assert parse_estimate(text, Response("estimate", min=0)) == value


@pytest.mark.parametrize("ext", ["csv", "xlsx", "sav", "dta", "parquet"])
def test_tables_in_every_format(tmp_path, ext):
    df = pd.DataFrame({"id": ["p1", "p2", "p3"], "age": [30, 41, 52], "party": ["D", "R", "D"]})
    path = tmp_path / f"people.{ext}"
    if ext == "csv":
        df.to_csv(path, index=False)
    elif ext == "xlsx":
        df.to_excel(path, index=False)
    elif ext == "parquet":
        df.to_parquet(path)
    else:
        import pyreadstat

        (pyreadstat.write_sav if ext == "sav" else pyreadstat.write_dta)(df, str(path))
    s = _study(tmp_path, BASE.replace("study: t", "study: t\ndesign:\n  subjects: {table: people." + ext +
                                      ", id: id, template: 'Age ${age}, ${party}. '}"))
    assert s.subjects["subject"].tolist() == ["p1", "p2", "p3"]
    assert s.subjects["persona"].tolist() == ["Age 30, D. ", "Age 41, R. ", "Age 52, D. "]


# ------------------------------------------------------------------------------ analyses vs references

def _scored(tmp_path, rng):
    """A study with a between factor and fake exact answers, to test the analyses' arithmetic."""
    s = _study(tmp_path, """study: t
title: T
design:
  factors: {frame: {levels: [gain, loss], assignment: between}, cue: ['on', 'off']}
  subjects: 30
prompt: "${question}\\n${options}"
items: [{id: q, text: "Q ${frame} ${cue}", response: likert5}]
analyses:
  - {type: welch, factor: frame}
  - {type: paired, factor: cue, levels: ['on', 'off']}
  - {type: one_sample, mu: 3}
  - {type: chi_square, factor: frame}
  - {type: amce, factors: [frame, cue], name: amce}
""")
    trials, items = build_trials(s)
    rows = []
    for rec in trials.to_dict("records"):
        p = rng.dirichlet(np.ones(5) * (2 if rec["frame"] == "gain" else 0.7))
        for lab, w in zip(rec["labels"], p):
            rows.append({**{k: rec[k] for k in ("trial", "item", "condition", "subject", "frame", "cue")},
                         "study": "t", "source": "model", "model": "m", "method": "exact", "response": lab,
                         "weight": w, "validity": 0.5, "response_type": "choice"})
    return s, pd.DataFrame(rows), items


def test_tests_match_independent_references(tmp_path):
    from simsubjects.analyze.stats import welch_t
    from simsubjects.studyfile.analyses import analyze_study

    s, responses, items = _scored(tmp_path, np.random.default_rng(0))
    tables = analyze_study(s, responses, items)
    tr = tables["trials"]
    pos = {"Strongly disagree": 1, "Disagree": 2, "Neither agree nor disagree": 3, "Agree": 4, "Strongly agree": 5}
    score = responses.assign(x=responses["response"].map(pos) * responses["weight"]).groupby("trial")["x"].sum()
    assert np.allclose(tr.set_index("trial")["score"].loc[score.index], score, atol=1e-12)
    t = tables["tests"].set_index("test")
    # Welch on the unit, the subject (each subject's mean over its two cue trials): scipy's Welch test
    subj = tr.groupby(["subject", "frame"], as_index=False)["score"].mean()
    x = subj.loc[subj["frame"] == "gain", "score"]
    y = subj.loc[subj["frame"] == "loss", "score"]
    ref = welch_t(x, y)
    w = t.loc["Welch two-sample t-test"]
    for a in ("estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high"):
        assert w[a] == pytest.approx(ref[a], rel=1e-10)
    assert w["n"] == 30 and w["unit"] == "subject"
    # Lakens (2013) eq. 10: d_av = mean difference / ((sd1 + sd2) / 2)
    assert w["effect_size"] == pytest.approx((x.mean() - y.mean()) / ((x.std() + y.std()) / 2))
    # paired over subjects: differences' one-sample t by hand
    m = tr.pivot_table(index="subject", columns="cue", values="score")
    d = m["on"] - m["off"]
    p = t.loc["Paired t-test"]
    assert p["statistic"] == pytest.approx(d.mean() / (d.std() / math.sqrt(len(d))), rel=1e-10)
    assert p["effect_size"] == pytest.approx(d.mean() / d.std(), rel=1e-10)
    o = t.loc["One-sample t-test"]
    o_ref = stats.ttest_1samp(tr.groupby("subject")["score"].mean() - 3, 0)
    assert o["statistic"] == pytest.approx(o_ref.statistic, rel=1e-10) and o["n"] == 30
    # chi-square on expected counts with each subject counted once (its two trials' shares halved)
    # (a model's rows: the permutation test of the same statistic since issue 40, item 3)
    from simsubjects.analyze.methods.subjects import PERMUTATION_TEST

    c = t.loc[PERMUTATION_TEST]
    table = responses.pivot_table(index="frame", columns="response", values="weight", aggfunc="sum") / 2
    chi2 = stats.chi2_contingency(table.to_numpy(), correction=False)[0]
    assert table.to_numpy().sum() == pytest.approx(30) and c["n"] == 30 and isinstance(c["n"], (int, np.integer))
    assert c["statistic"] == pytest.approx(chi2) and c["effect_size"] == pytest.approx(math.sqrt(chi2 / 30))
    # AMCE: statsmodels OLS gives the same point estimates
    import statsmodels.formula.api as smf

    # the baselines are the declared first levels (gain; 'on', declared before 'off'), issue 40
    fit = smf.ols("score ~ C(frame) + C(cue, Treatment('on'))", data=tr).fit()
    a = tables["amce"].set_index("term")
    assert a.loc["frame_loss", "estimate"] == pytest.approx(fit.params["C(frame)[T.loss]"], rel=1e-10)
    assert a.loc["cue_off", "estimate"] == pytest.approx(fit.params["C(cue, Treatment('on'))[T.off]"], rel=1e-10)
    assert a.loc["cue_off", "contrast"] == "cue: off - on"
    for col in ("estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n"):
        assert col in tables["tests"].columns and col in tables["amce"].columns


@pytest.mark.r
def test_welch_and_amce_match_r(tmp_path):
    """R's t.test and estimatr::lm_robust(clusters = subject, se_type = "CR2") on the same trial scores."""
    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    from simsubjects.analyze.check_r import r_session
    from simsubjects.studyfile.analyses import analyze_study

    rs = r_session()
    s, responses, items = _scored(tmp_path, np.random.default_rng(2))
    tables = analyze_study(s, responses, items)
    tr = tables["trials"][["subject", "frame", "cue", "score"]]
    fn = rs.ro.r("""function(d) {
      s <- aggregate(score ~ subject + frame, data = d, FUN = mean)  # the unit: a subject
      w <- t.test(s$score[s$frame == 'gain'], s$score[s$frame == 'loss'])
      d$cue <- factor(d$cue, levels = c('on', 'off'))  # the declared order: 'on' is the baseline
      m <- estimatr::lm_robust(score ~ frame + cue, data = d, clusters = subject, se_type = 'CR2')
      data.frame(w_t = unname(w$statistic), w_df = unname(w$parameter), w_p = w$p.value,
                 a_est = unname(coef(m)[2:3]), a_se = unname(m$std.error[2:3]), a_df = unname(m$df[2:3]),
                 a_p = unname(m$p.value[2:3])) }""")
    r = rs.to_py(fn(rs.to_r(tr)))
    w = tables["tests"].set_index("test").loc["Welch two-sample t-test"]
    assert [w["statistic"], w["df"], w["p.value"]] == pytest.approx([r["w_t"][0], r["w_df"][0], r["w_p"][0]], rel=1e-8)
    a = tables["amce"].set_index("term").loc[["frame_loss", "cue_off"]]
    for mine, theirs in (("estimate", "a_est"), ("std.error", "a_se"), ("df", "a_df"), ("p.value", "a_p")):
        assert a[mine].to_numpy(float) == pytest.approx(r[theirs].to_numpy(float), rel=1e-8)


def test_representativeness_matches_w1_by_hand(tmp_path):
    from simsubjects.studyfile.analyses import representativeness_table

    s = load_study(ROOT / "examples" / "opinion_survey" / "study.yaml")
    trials, _ = build_trials(s)
    rng = np.random.default_rng(1)
    rows = []
    for rec in trials.to_dict("records"):
        for lab, w in zip(rec["labels"], rng.dirichlet(np.ones(len(rec["labels"])))):
            rows.append({"study": s.name, "trial": rec["trial"], "item": rec["item"], "condition": "",
                         "subject": rec["subject"], "source": "model", "model": "m", "method": "exact",
                         "response": lab, "weight": w, "validity": 1.0, "party": rec["party"]})
    resp = pd.concat([pd.DataFrame(rows), s.human], ignore_index=True)
    got = representativeness_table(s, resp, [])
    dists = []
    for it in s.items:
        pos = {o.label: o.position for o in it.response.options if not o.refusal}
        def dist(df, weighted):
            df = df[df["item"] == it.id]
            tw = df["weight"] if weighted else 1.0
            sh = df["weight"] / df.groupby("trial")["weight"].transform("sum")
            d = (sh * tw).groupby(df["response"]).sum()
            d = d[d.index.isin(list(pos))]
            return d / d.sum()
        m, h = dist(resp[resp["source"] == "model"], False), dist(resp[resp["source"] == "human"], True)
        dists.append(stats.wasserstein_distance([pos[k] for k in m.index], [pos[k] for k in h.index], m, h)
                     / (max(pos.values()) - min(pos.values())))
    assert got["estimate"].iat[0] == pytest.approx(1 - np.mean(dists), rel=1e-10)


# ------------------------------------------------------------------------------ examples on the model

def test_examples_are_the_starters_and_check_fast(capsys):
    for ex, kind in EXAMPLES.items():
        cmp = filecmp.dircmp(ROOT / "examples" / ex, ROOT / "simsubjects" / "studyfile" / "starters" / kind)
        assert not cmp.diff_files and not cmp.left_only and not cmp.right_only, ex
        t0 = time.process_time()  # CPU time: other processes on a shared CI machine do not count
        assert main(["study", "check", str(ROOT / "examples" / ex / "study.yaml")]) == 0
        assert time.process_time() - t0 < 2.0
        assert "valid" in capsys.readouterr().out


def test_study_new_writes_a_valid_study(tmp_path, capsys):
    for kind in ("survey", "vignette", "estimation"):
        assert main(["study", "new", kind, str(tmp_path / kind)]) == 0
        assert main(["study", "check", str(tmp_path / kind / "study.yaml")]) == 0
    assert main(["study", "new", "survey", str(tmp_path / "survey")]) == 2  # not empty: refused
    assert "not an empty folder" in capsys.readouterr().err


def _collect(smollm2, path: Path, out: Path, **kw):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.studyfile.adapter import file_parameters, study_def

    study = load_study(path) if isinstance(path, Path) else path
    sdef = study_def(study, out=out, judge=kw.pop("judge", None))
    params = {"studyfile": file_parameters(study), "seed": study.seed, "chat_template": False, "judge_model": None}
    t0 = time.perf_counter()
    responses, manifest = run_study(sdef, "smollm2", out, params=params, method=kw.get("method", sdef.methods[0]),
                                    n=kw.get("n", 50), model=smollm2, show_progress=False)
    return responses, manifest, time.perf_counter() - t0


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_example_runs_on_the_embedded_model(smollm2, tmp_path, example, capsys):
    from simsubjects.publish.analysis import analyze_runs
    from simsubjects.publish.export import export_run

    path = ROOT / "examples" / example / "study.yaml"
    out = tmp_path / "run"
    responses, manifest, seconds = _collect(smollm2, path, out)
    print(f"\n{example}: {seconds:.1f}s on the embedded model")
    assert manifest["parameters"]["studyfile"]["sha256"] == load_study(path).sha256
    assert filecmp.cmp(out / "study" / "study.yaml", path, shallow=False)
    model = responses[responses["source"] == "model"]
    assert model["validity"].between(0, 1).all()
    a = analyze_runs([out], plots=False)
    assert "trials" in a.tables
    if example == "opinion_survey":
        assert (responses["source"] == "human").sum() == 48
        assert set(a.tables) >= {"distribution", "representativeness", "representativeness_by_party", "agreement"}
        assert set(a.tables["representativeness_by_party"]["party"]) == {"Democratic", "Republican"}
        # the order shown is recorded and differs between subjects
        assert model["order_shown"].nunique() > 4
        assert "order_effects" in a.tables and model["shown_position"].between(1, 6).all()
        share = a.tables["distribution"].groupby(["source", "item"])["share"].sum()
        assert np.allclose(share, 1.0)
    elif example == "vignette_2x2":
        t = a.tables["tests"]
        row = t[t["contrast"] == "frame: gain - loss"].iloc[0]
        assert row["n"] == 40 and np.isfinite(row["p.value"]) and row["effect_size_type"] == "cohen_d_av"
        assert len(a.tables["amce"]) == 2
    else:
        e = a.tables["estimates"]
        assert set(e["item"]) == {"everest", "moon", "bones", "piano"} and (e["n"] == 3).all()
        valid = model[model["validity"] == 1]
        heads = valid["completion"].str.partition("]")[0].str.replace(",", "").str.replace(" ", "")
        assert (valid["estimate"] == heads.astype(float)).all()
        assert model.loc[model["validity"] == 0, "estimate"].isna().all()
    # resume: the same collection again answers from the cache with the identical table
    again, _, _ = _collect(smollm2, path, out)
    pd.testing.assert_frame_equal(responses.reset_index(drop=True), again.reset_index(drop=True))
    export_run(out, ["csv", "dta"])


def test_free_text_judged_by_a_k_choice_prompt(smollm2, tmp_path):
    s = tmp_path / "free.yaml"
    s.write_text("""study: free
title: Free text judged
design: {subjects: 2, repetitions: 2}
prompt: "Q: ${question}\\nA:"
items:
  - id: greet
    text: "Say something kind to a stranger."
    response:
      type: free_text
      max_tokens: 8
      judge:
        prompt: "Is this reply kind? Reply: ${answer}\\nAnswer Yes or No:"
        response: yesno
""")
    judged = []

    def judge():
        judged.append(1)
        return smollm2

    responses, manifest, _ = _collect(smollm2, s, tmp_path / "run", judge=judge)
    assert judged and len(responses) == 4 * 2  # 4 trials x (Yes, No)
    assert set(responses["response"]) == {"Yes", "No"}
    p = responses.groupby("trial")["weight"].sum()
    assert np.allclose(p, 1.0) and responses["completion"].str.len().gt(0).any()
    assert responses["trial"].nunique() == 4 and responses.groupby("trial")["completion"].nunique().eq(1).all()


# ------------------------------------------------------------------------------ built-ins as study files

ULTIMATUM = ROOT / "tests" / "data" / "builtin_studyfiles" / "ultimatum"


def _ultimatum_file(tmp_path, pairs: int) -> Path:
    import shutil

    shutil.copy(ULTIMATUM / "offers.csv", tmp_path / "offers.csv")
    text = (ULTIMATUM / "study.yaml").read_text().replace("    n: 200\n", f"    n: {pairs}\n")
    (tmp_path / "study.yaml").write_text(text)
    return tmp_path / "study.yaml"


def test_ultimatum_study_file_gives_the_commands_trials(tmp_path):
    from simsubjects.studies.ultimatum.design import build_trials as command_trials

    mine, _ = build_trials(load_study(_ultimatum_file(tmp_path, 40)))
    theirs, _ = command_trials(pairs=40)
    pd.testing.assert_frame_equal(mine[theirs.columns], theirs)


def test_ultimatum_study_file_gives_the_commands_responses(smollm2, tmp_path):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.collect.studies.registry import get_study

    theirs, _ = run_study(get_study("ultimatum"), "smollm2", tmp_path / "cmd", params={"pairs": 2, "seed": 0},
                          model=smollm2, show_progress=False)
    (tmp_path / "f").mkdir()
    mine, _, _ = _collect(smollm2, _ultimatum_file(tmp_path / "f", 2), tmp_path / "file")
    mine = mine[theirs.columns]
    pd.testing.assert_frame_equal(mine.drop(columns=["weight", "validity"]), theirs.drop(columns=["weight", "validity"]))
    assert np.abs(mine["weight"] - theirs["weight"]).max() <= 1e-12
    assert np.abs(mine["validity"] - theirs["validity"]).max() <= 1e-12


def test_cli_collect_validate_analyze_report_a_study_file(smollm2, tmp_path, monkeypatch, capsys):
    import simsubjects.collect.models as models
    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", lambda *a, **k: smollm2)
    monkeypatch.setattr(models, "load_model", lambda *a, **k: smollm2)
    study, out = str(BAD / "valid_base.yaml"), tmp_path / "run"
    assert main(["collect", study, "--validate", "--out", str(out)]) == 0
    assert "validity" in capsys.readouterr().out and not out.exists()
    assert main(["collect", study, "--out", str(out), "-q", "--seed", "5"]) == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["study"] == "bad-example" and man["parameters"]["seed"] == 5
    assert sorted(p.name for p in (out / "study").iterdir()) == ["human.csv", "people.csv", "valid_base.yaml"]
    assert main(["analyze", str(out), "--no-plots"]) == 0
    assert "Welch two-sample t-test" in capsys.readouterr().out
    assert main(["report", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert f"{out}/study/valid_base.yaml" in html
    # an edited study file is another run: refused without --overwrite, nothing changed
    edited = tmp_path / "edited"
    edited.mkdir()
    for f in ("people.csv", "human.csv"):
        (edited / f).write_bytes((BAD / f).read_bytes())
    (edited / "s.yaml").write_text((BAD / "valid_base.yaml").read_text().replace("A malformed study", "Edited"))
    assert main(["collect", str(edited / "s.yaml"), "--out", str(out), "-q", "--seed", "5"]) == 2
    assert "other parameters" in capsys.readouterr().err


def test_moca_study_file_gives_the_commands_trials():
    from simsubjects.studies.moca.design import study_items

    mine, _ = build_trials(load_study(ROOT / "tests" / "data" / "builtin_studyfiles" / "moca" / "study.yaml"))
    theirs, _ = study_items(task="causal")
    assert len(theirs) == 144
    pd.testing.assert_frame_equal(mine[theirs.columns], theirs)


def test_moca_study_file_gives_the_commands_responses_with_votes(smollm2, tmp_path):
    from simsubjects.collect.pipeline import run_study
    from simsubjects.collect.studies.registry import get_study

    theirs, _ = run_study(get_study("moca"), "smollm2", tmp_path / "cmd", model=smollm2, show_progress=False,
                          params={"task": "causal", "stories": 3, "seed": 0})
    assert set(theirs["source"]) == {"model", "human"}  # the command adds the 25 votes per story; so does the file
    study = load_study(ROOT / "tests" / "data" / "builtin_studyfiles" / "moca" / "study.yaml")
    study.items = study.items[:3]  # --stories 3
    study.human = study.human[study.human["item"].isin([it.id for it in study.items])]
    mine, _, _ = _collect(smollm2, study, tmp_path / "file")
    mine = mine[theirs.columns]
    pd.testing.assert_frame_equal(mine.drop(columns=["weight", "validity"]), theirs.drop(columns=["weight", "validity"]))
    assert np.abs(mine["weight"] - theirs["weight"]).max() <= 1e-12


def test_walkthrough_of_docs_works_verbatim(smollm2, tmp_path, monkeypatch, capsys):
    """Every command of docs/studies.md's walkthrough, as written, in an empty folder."""
    import re
    import shlex

    import simsubjects.collect.pipeline as pipeline

    monkeypatch.setattr(pipeline, "load_model", lambda *a, **k: smollm2)  # the model loaded once per session
    monkeypatch.chdir(tmp_path)
    doc = (ROOT / "docs" / "studies.md").read_text()
    walk = doc.split("## A ten-minute walkthrough")[1].split("\n## ")[0]
    blocks = re.findall(r"```(sh|yaml)\n(.*?)```", walk, re.S)
    ran = []
    for kind, body in blocks:
        if kind == "yaml":  # step 3: the new item goes at the end of the items list
            path = tmp_path / "my_survey" / "study.yaml"
            text = path.read_text()
            path.write_text(text.replace("\ndesign:", "\n" + body + "\ndesign:", 1))
            continue
        for line in body.splitlines():
            if line.startswith("simsubjects "):
                args = shlex.split(line.split("#")[0])[1:]
                assert main(args) == 0, (line, capsys.readouterr().err)
                ran.append(args[0])
    assert ran == ["study", "study", "collect", "analyze", "export", "report"]
    r = pd.read_parquet(tmp_path / "runs" / "my_survey" / "responses.parquet")
    assert "library" in set(r["item"]) and (tmp_path / "runs" / "my_survey" / "report.html").is_file()


@pytest.mark.parametrize("base", ["examples/vignette_2x2/study.yaml", "examples/pd_tft/study.yaml",
                                  "tests/data/obedience/bad/valid_base.yaml"])
def test_every_kind_of_study_file_reads_one_header(base, tmp_path, capsys):
    """Plain, session and obedience files share study_header(): a name with a trailing newline (which
    SLUG.match let through in the session and obedience loaders) is one line, exit 2, for each kind."""
    import re

    from simsubjects.cli.commands import main

    root = Path(__file__).resolve().parents[1]
    text = (root / base).read_text()
    bad = tmp_path / "study.yaml"
    bad.write_text(re.sub(r"(?m)^study: (\S+)$", r'study: "\1\\n"', text, count=1))
    assert main(["study", "check", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "use lower-case letters" in err and f"{bad}:" in err
