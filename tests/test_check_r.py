"""R twins: check_r computes each study's statistics in Python and in R (rpy2) and they agree;
the R package at the repository root builds and passes R CMD check."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.r

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def check_r():
    pytest.importorskip("rpy2", reason="rpy2 not installed (pip install 'rpy2==3.5.17')")
    from simsubjects.analyze.check_r import check_r, r_session

    r_session()  # fails here, not in every test, when R or estimatr is missing
    return check_r


def test_starting_r_leaves_child_pythons_working(check_r):
    """rpy2 exports R's LD_LIBRARY_PATH (system libraries first); a child Python of another build
    then loads the system libpython and cannot import its own packages. The R session undoes it."""
    code = "import llama_cpp, simsubjects.cli.commands, torch" if importlib.util.find_spec("llama_cpp") else \
        "import simsubjects.cli.commands, torch"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-1500:]
    assert "/usr/lib/R/lib" not in os.environ.get("LD_LIBRARY_PATH", "")


def assert_all_ok(table: pd.DataFrame, min_rows: int):
    assert list(table.columns) == ["statistic", "python", "r", "abs_diff", "tolerance", "ok"]
    assert len(table) >= min_rows
    bad = table[~table["ok"]]
    assert bad.empty, bad.to_string()
    assert (table["abs_diff"] <= table["tolerance"]).all()


# ---------------------------------------------------------------- ultimatum

def ultimatum_responses(seed=0):
    """Two models, four gender pairings, three offers; exact P(accept) with validity < 1."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in ("m1", "m2"):
        for k, pairing in enumerate(["Mr-Mr", "Mr-Ms", "Ms-Mr", "Ms-Ms"] * 4):
            pair = f"pair{k}"
            for offer in (1, 2, 5):
                p = float(np.clip(0.1 * offer + 0.1 * (pairing == "Mr-Ms") + rng.normal(0, 0.1), 0.01, 0.99))
                z = float(rng.uniform(0.5, 1))
                for resp, w in (("accept", p * z), ("reject", (1 - p) * z)):  # unnormalized: shares differ
                    rows.append({"study": "ultimatum", "trial": f"{pair}|{offer}", "item": f"offer-{offer:02d}",
                                 "condition": pairing, "subject": pair, "source": "model", "model": model,
                                 "method": "exact", "response": resp, "weight": w, "validity": z,
                                 "offer": offer, "pairing": pairing, "pair": pair})
    return pd.DataFrame(rows)


def test_ultimatum(check_r):
    from simsubjects.studies.ultimatum.analysis import analyze_ultimatum

    responses = ultimatum_responses()
    tables = analyze_ultimatum(responses)
    out = check_r("ultimatum", responses, None, tables)
    # per model: 3 offers x (mean, SE); 4 Welch and 4 Kruskal tests; 3 offer pairs
    assert_all_ok(out, 2 * (6 + 4 * 7 + 4 * 3 + 3) + 1)
    assert out["statistic"].str.contains("Welch p.value").sum() == 8
    # issue 40, item 7: Lakens' d_av of each Welch row against R's welch_test
    es = out[out["statistic"].str.contains("Welch effect_size")]
    assert len(es) == 8 and es["python"].notna().all()


# ---------------------------------------------------------------- moca

def test_moca_human_and_model(check_r):
    from simsubjects.datasets.moca_humans import load_moca

    responses, items = load_moca()
    rng = np.random.default_rng(4)
    model = pd.DataFrame({"trial": items["item"] + ":yesno", "item": items["item"]})
    pyes = rng.uniform(0, 1, len(model))
    model = pd.concat([model.assign(response="Yes", weight=pyes), model.assign(response="No", weight=1 - pyes)])
    model = model.assign(study="moca", condition="", subject="", source="model", model="fake", method="exact",
                         validity=1.0, persona="", template="yesno")
    out = check_r("moca", pd.concat([responses, model], ignore_index=True), items)
    # 4 se types x 2 systems x 11 factors x 7 numbers
    assert_all_ok(out, 4 * 2 * 11 * 7)
    for se_type in ("CR0", "stata", "cregg", "CR2"):
        assert out["statistic"].str.contains(f"human/moca-human .* {se_type} std.error").sum() == 11
    cregg_df = out[out["statistic"].str.contains("cregg df")]
    assert np.isinf(cregg_df["python"]).all() and np.isinf(cregg_df["r"]).all()


# ---------------------------------------------------------------- survey_bias

def survey_bias_data(seed=1):
    """Model rows (exact and sampled) for generated bias and perturbation pairs, released-style
    acquiescence and allow/forbid pairs, and human ATP distributions overall and by sex."""
    from simsubjects.studies.survey_bias import design as sb

    rng = np.random.default_rng(seed)
    questions = pd.DataFrame({
        "key": ["Q1", "Q2", "Q3", "Q4", "Q5"],
        "question": ["How good is the economy today?", "How likely is rain tomorrow?",
                     "How much do you trust the news?", "How satisfied are you with schools?",
                     "How important is religion?"],
        "options": ["Very good | Good | Fair | Poor | Very poor", "Very | Somewhat | Not too | Not at all",
                    "A lot | Some | Neither | Not much | Not at all", "Very | Somewhat | Not too | Not at all",
                    "Very | Somewhat | Neutral | Not too | Not at all"],
        "middle_label": ["", "Neither likely nor unlikely", "", "Neither", ""],
    })
    items = sb.generate_pairs(questions)
    items = pd.concat([items, sb.perturbation_pairs(items, ["letter_swap", "key_typo"])], ignore_index=True)
    rows = []
    for model, method in (("m-exact", "exact"), ("m-sampled", "sampled")):
        for rec in items.to_dict("records"):
            p = rng.dirichlet(np.ones(len(rec["labels"])))
            w = p if method == "exact" else rng.multinomial(50, p).astype(float)
            for lab, wi in zip(rec["labels"], w):
                rows.append({"study": "survey_bias", "trial": f"{model}|{rec['item']}", "item": rec["item"],
                             "condition": rec["form"], "subject": "", "source": "model", "model": model,
                             "method": method, "response": lab, "weight": float(wi), "validity": 1.0,
                             "key": rec["key"], "bias": rec["bias"], "perturbation": rec["perturbation"],
                             "form": rec["form"], "num_options": rec["num_options"]})
        # acquiescence and allow/forbid pairs as released files give them (GAP21Q46_W82 is excluded)
        for bias, key in (("acquiescence", "A1"), ("acquiescence", "A2"), ("acquiescence", "A3"),
                          ("allow_forbid", "F1"), ("allow_forbid", "F2"), ("allow_forbid", "F3"),
                          ("allow_forbid", "GAP21Q46_W82")):
            for form in ("original", "modified"):
                counts = rng.multinomial(50, rng.dirichlet([1, 1]))
                for lab, c in zip("ab", counts):  # lower case, as the release writes them
                    rows.append({"study": "survey_bias", "trial": f"{model}|{bias}|{key}|{form}",
                                 "item": sb.item_id(bias, "", key, form), "condition": form, "subject": "",
                                 "source": "model", "model": model, "method": "sampled", "response": lab,
                                 "weight": float(c), "validity": 1.0, "key": key, "bias": bias,
                                 "perturbation": "", "form": form, "num_options": 2})
    for key, n in (("Q1", 5), ("Q2", 4), ("Q3", 5), ("Q4", 4), ("Q5", 5)):
        for attribute, group in (("Overall", "Overall"), ("SEX", "Male"), ("SEX", "Female")):
            w = rng.uniform(0, 100, n + 1)
            for j in range(n + 1):
                refusal = j == n
                rows.append({"study": "survey_bias", "trial": f"atp|{key}|{group}", "item": f"atp/{key}",
                             "condition": "", "subject": group, "source": "human", "model": "ATP W99",
                             "method": "observed", "response": "Refused" if refusal else f"opt{j + 1}",
                             "weight": float(w[j]), "validity": 1.0, "key": key, "position": np.nan if refusal else j + 1.0,
                             "refusal": refusal, "attribute": attribute, "group": group})
    return pd.DataFrame(rows), items


def test_survey_bias(check_r):
    from simsubjects.studies.survey_bias.analysis import analyze_survey_bias

    responses, items = survey_bias_data()
    tables = analyze_survey_bias(responses, items)
    out = check_r("survey_bias", responses, items, tables)
    assert_all_ok(out, 100)
    stat = out["statistic"]
    assert stat.str.contains("GAP21Q46_W82").sum() == 0  # excluded on both sides
    assert stat.str.contains(r"m-sampled \| opinion_float \| letter_swap \| Q1 delta").sum() == 1  # borrowed Δp
    assert stat.str.contains("one-sample t-test p.value").sum() == stat.str.contains("Welch t-test p.value").sum() > 10
    # issue 40, item 7: the effect sizes (d of the deltas, d_av of the forms) are compared too
    es = out[stat.str.endswith("t-test effect_size")]
    assert len(es) == stat.str.contains("t-test p.value").sum() and es["python"].notna().sum() > 10
    assert stat.str.contains("representativeness .* W1/span").sum() >= 2 * 5 * 3
    assert stat.str.contains(r"representativeness \| m-exact \| SEX \| Female estimate").sum() == 1


def test_survey_bias_without_tables_joins_design_from_items(check_r):
    responses, items = survey_bias_data(seed=2)
    model = responses[(responses["source"] == "model") & responses["item"].isin(items["item"])]
    out = check_r("survey_bias", model.drop(columns=["key", "bias", "perturbation", "form"]), items)
    assert_all_ok(out, 50)


# ---------------------------------------------------------------- milgram

def milgram_responses(study="milgram", seed=3):
    """Break-off rows of two simulated models (some runs cut short: censored); Milgram's humans
    are added by the analysis."""
    rng = np.random.default_rng(seed)
    rows = []
    for model, p_stop in (("m1", 0.04), ("m2", 0.1)):
        for i in range(30):
            level = int(min(rng.geometric(p_stop) + 9, 30))
            cause = "completed" if level == 30 else ("max stages" if i % 7 == 0 else "terminated")
            rows.append({"study": study, "trial": f"{model}-{i}", "item": study, "condition": "breakoff",
                         "subject": f"s{i}", "source": "model", "model": model, "method": "generated",
                         "response": str(level), "weight": 1.0, "validity": 1.0, "breakoff_level": level,
                         "cause": cause, "completed": cause == "completed", "censored": cause == "max stages"})
    return pd.DataFrame(rows)


def garden_path_responses(seed=0):
    """Two models, 8 sentences of both sets and types, GP and control judged by 3 names each."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in ("m1", "m2"):
        for k in range(8):
            item, set_, type_ = f"s{k}", ("published", "novel")[k % 2], ("OT", "RAT")[k // 4]
            for version in ("garden_path", "control"):
                for name in ("a", "b", "c"):
                    p = float(np.clip(0.5 + 0.1 * (version == "garden_path") + rng.normal(0, 0.15), 0.01, 0.99))
                    z = float(rng.uniform(0.05, 0.3))
                    for resp, w in (("ungrammatical", p * z), ("grammatical", (1 - p) * z)):
                        rows.append({"study": "garden_path", "trial": f"{item}|{version}|{name}", "item": item,
                                     "condition": version, "subject": name, "source": "model", "model": model,
                                     "method": "exact", "response": resp, "weight": w, "validity": z,
                                     "set": set_, "type": type_})
    return pd.DataFrame(rows)


def test_garden_path(check_r):
    from simsubjects.studies.garden_path.analysis import analyze_garden_path

    responses = garden_path_responses()
    out = check_r("garden_path", responses, None, analyze_garden_path(responses))
    # per model: 3 sets x 3 types x 2 versions (mean, SE); 9 groups x 2 tests (count, estimate, statistic,
    # df, p); plus the two worst-sentence rows
    assert_all_ok(out, 2 * (18 * 2 + 18 * 5) + 2)
    assert out["statistic"].str.contains("Wilcoxon signed-rank test p.value").sum() == 2 * 9
    # issue 40, item 7: the paired t-test's d_z against R's t / sqrt(n)
    es = out[out["statistic"].str.contains("Paired t-test effect_size")]
    assert len(es) == 2 * 9 and es["python"].notna().all()


def test_wisdom(check_r):
    from simsubjects.studies.wisdom.analysis import analyze_wisdom
    from simsubjects.studies.wisdom.design import questions

    rng = np.random.default_rng(1)
    rows = []
    for model in ("m1", "m2"):
        for item, truth in zip(questions()["item"][:4], questions()["truth"][:4]):
            for i in range(7):  # some invalid answers, some exactly right
                est = [np.nan, float(truth), float(round(truth * rng.uniform(0.5, 2)))][i % 3]
                rows.append({"study": "wisdom", "trial": f"{item}|{i}", "item": item, "condition": "Mr.",
                             "subject": str(i), "source": "model", "model": model, "method": "generated",
                             "response": "" if np.isnan(est) else str(int(est)), "weight": 1.0,
                             "validity": float(not np.isnan(est)), "estimate": est})
    responses = pd.DataFrame(rows)
    out = check_r("wisdom", responses, None, analyze_wisdom(responses))
    assert_all_ok(out, 2 * 4 * 7)
    exact = out[out["statistic"].str.endswith("share_exact")]
    assert (exact["python"] > 0).all()  # the hyper-accurate answers were counted


@pytest.mark.parametrize("study", ["milgram", "milgram_novel"])
def test_milgram(check_r, study):
    mg = pytest.importorskip("simsubjects.studies.milgram.analysis")
    responses = milgram_responses(study)
    b = mg.breakoffs(responses)
    assert b["censored"].any() and (b["model"] == mg.HUMAN).sum() == 40
    out = check_r(study, responses, None, {"survival": mg.survival(b), "tests": mg.tests(b)})
    assert_all_ok(out, 3 * 31 * 3 + 2 * 3)
    share = out[out["statistic"] == f"milgram survival | {mg.HUMAN} | level 30 share obeying"]
    assert share["r"].item() == pytest.approx(0.65)  # Milgram (1963): 26 of 40
    assert out["statistic"].str.contains("log-rank p.value").sum() == 2


def test_milgram_survival_of_the_1963_table(check_r):
    """R's survival from the bundled count table equals the share with break-off >= level."""
    from simsubjects.analyze.check_r import r_session

    path = ROOT / "simsubjects" / "datasets" / "aher2023" / "milgram1963_breakoff.json"
    ref = json.loads(path.read_text(encoding="utf-8"))
    bo = pd.DataFrame(ref["breakoff"])[["level", "count"]]
    s = r_session()("milgram_survival", bo, completed=ref["completed"])
    levels = np.repeat([*bo["level"], 30], [*bo["count"], ref["completed"]])
    np.testing.assert_allclose(s["estimate"], [(levels >= k).mean() for k in range(31)], rtol=1e-14)
    assert s["estimate"].iloc[-1] == pytest.approx(ref["percent_obedient"] / 100)


# ---------------------------------------------------------------- read_run on a real export

def test_read_run_reads_what_export_writes(check_r, tmp_path):
    from simsubjects.analyze.check_r import r_session
    from simsubjects.collect.store import RunStore
    from simsubjects.publish.export import export_run

    store = RunStore.open(tmp_path / "run", {"x": 1})
    # empty text ("no condition") and an all-missing number: both read back as NA (issue 29)
    want = ultimatum_responses().assign(condition="", blank=np.nan)
    items = pd.DataFrame({"item": ["offer-01", "offer-02", "offer-05"], "offer": [1, 2, 5],
                          "options": [("a", "b"), ("a",), ("c",)]})
    store.finish(want, items, {"study": "ultimatum"})
    r = r_session()
    read_run = r.env.find("read_run")
    for fmt in ("rds", "csv"):
        export_run(tmp_path / "run", [fmt], out=tmp_path / "run" / "export")
        run = read_run(str(tmp_path / "run"))
        got, got_items = r.to_py(run.rx2("responses")), r.to_py(run.rx2("items"))
        assert list(got.columns) == list(want.columns)
        for c in want.columns:
            if pd.api.types.is_numeric_dtype(want[c]):
                np.testing.assert_allclose(got[c].to_numpy(float), want[c].to_numpy(float), rtol=1e-15)
            elif c == "condition":
                assert got[c].isna().all(), (fmt, got[c].head().tolist())
            else:
                assert got[c].tolist() == want[c].astype(str).tolist(), (fmt, c)
        assert got_items["options"].tolist() == ['["a", "b"]', '["a"]', '["c"]']
        for f in (tmp_path / "run" / "export").iterdir():
            f.unlink()
    with pytest.raises(Exception, match="simsubjects export"):
        read_run(str(tmp_path / "run"))


# ---------------------------------------------------------------- the R package itself

def test_r_cmd_build_and_check(tmp_path):
    if shutil.which("R") is None:
        pytest.skip("R not found")
    # the vignette is built where rmarkdown and pandoc are (make setup-test installs them); else left out
    vignettes = subprocess.run(["Rscript", "-e", "quit(status = !(requireNamespace('rmarkdown', quietly = TRUE) "
                                "&& rmarkdown::pandoc_available()))"], capture_output=True).returncode == 0
    # R_COMPILE_PKGS=0: build installs the package into a throwaway library only to render the vignette, so
    # it skips byte-compiling there (~3 s CPU); check's own install below byte-compiles as a user's does
    build = subprocess.run(["R", "CMD", "build", *([] if vignettes else ["--no-build-vignettes"]), str(ROOT)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "R_COMPILE_PKGS": "0"})
    assert build.returncode == 0, build.stdout + build.stderr
    tarballs = list(tmp_path.glob("simsubjects_*.tar.gz"))
    assert len(tarballs) == 1
    # the tarball holds R's layout only (the vignette included): no Python, no docs, no CI
    listing = subprocess.run(["tar", "tzf", tarballs[0].name], cwd=tmp_path, capture_output=True, text=True,
                             check=True).stdout.split()
    assert not [f for f in listing if f.endswith(".py") or "/simsubjects/" in f[len("simsubjects"):]]
    top = {f.split("/")[1] for f in listing if f.count("/") >= 1 and f.split("/")[1]}
    assert top <= {"DESCRIPTION", "NAMESPACE", "R", "man", "tests", "LICENSE", "MD5", "build", "inst", "vignettes"}, top
    # --no-build-vignettes: `R CMD build` above has just rendered the vignette into the tarball, and check
    # still runs its R code ("checking running R code from vignettes"); only the second render is skipped
    check = subprocess.run(["R", "CMD", "check", "--no-manual", "--no-build-vignettes",
                            *([] if vignettes else ["--ignore-vignettes"]), tarballs[0].name],
                           cwd=tmp_path, capture_output=True, text=True, timeout=900,
                           env={**os.environ, "_R_CHECK_FORCE_SUGGESTS_": "false"})
    log = check.stdout + check.stderr
    status = re.search(r"^Status: (.*)$", log, re.M)
    assert status, log[-3000:]
    assert "ERROR" not in status.group(1) and "WARNING" not in status.group(1), log[-6000:]
    assert check.returncode == 0, log[-3000:]



# ---------------------------------------------------------------- conjoint: by= twins (issue 29)

def test_conjoint_by_tables_agree_and_a_wrong_table_fails(check_r):
    """--check-r of the conjoint compares its by= tables (mm_diff_model_minus_people,
    anova_model_vs_people, AMCEs/MMs by group, AMCE differences) with R's twins; a Python table that
    is off by 1e-6 in one cell is reported as differing there and nowhere else. Unit: respondent
    (clusters); the model rows are the bundled demo run's two respondents, the people HHY's 1,396."""
    import rdata
    from simsubjects.studies.conjoint.analysis import analyze_immigration

    folder = ROOT / "inst/extdata/replication/conjoint_immigration/export"

    def plain(df):  # the run's own tables hold text, not categoricals
        return df.assign(**{c: df[c].astype(object) for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)})

    responses, items = plain(rdata.read_rds(folder / "responses.rds")), plain(rdata.read_rds(folder / "items.rds"))
    tables = analyze_immigration(responses, items)
    mmd = tables["mm_diff_model_minus_people"].copy()
    hit = mmd["estimate"].notna().idxmax()
    mmd.loc[hit, "estimate"] += 1e-6
    out = check_r("conjoint_immigration", responses, items, {**tables, "mm_diff_model_minus_people": mmd})
    for what in ("amce by group", "mm by group", "amce_diffs", "mm_diff_model_minus_people", "anova_model_vs_people"):
        assert out["statistic"].str.startswith(what).sum() >= 3, what
    bad = out[~out["ok"]]
    row = mmd.loc[hit]
    assert list(bad["statistic"]) == [f"mm_diff_model_minus_people | smollm2 | {row['BY']} | "
                                      f"{row['feature']}={row['level']} estimate"]
    assert_all_ok(out[out["ok"]], 800)
