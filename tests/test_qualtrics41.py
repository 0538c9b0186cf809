"""Issue 41, items 8-14: the Qualtrics importer's repeated respondents, scales, tests, parallel arms,
import fidelity and vignettes. Each test fails on the importer before these fixes.

Data: tests/data/qualtrics/experiment (the framing-experiment fixture, CC0; SOURCE.md there), edited
in each test as a user's survey would differ. No model runs here: analyses are called on the imported
human rows (and on a model side written from them where a test needs one).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from simsubjects.cli.commands import main
from simsubjects.studyfile import load_study

EXP = Path(__file__).parent / "data" / "qualtrics" / "experiment"
QSF = EXP / "framing_experiment.qsf"
CSV3 = EXP / "framing_experiment.csv"  # three header rows, recode values


def _run(capsys, *args) -> tuple[int, str, str]:
    rc = main(["study", "import", "qualtrics", *map(str, args)])
    got = capsys.readouterr()
    return rc, got.out, got.err


def _rows() -> list[list[str]]:
    return list(csv.reader(open(CSV3, encoding="utf-8-sig")))


def _write_rows(path: Path, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    return path


def _survey(tmp_path: Path, edit, name: str = "edited.qsf") -> Path:
    d = json.loads(QSF.read_text())
    edit(d)
    path = tmp_path / name
    path.write_text(json.dumps(d))
    return path


def _el(d, code):
    return [e for e in d["SurveyElements"] if e["Element"] == code]


def _q(d, qid) -> dict:
    return next(e["Payload"] for e in _el(d, "SQ") if e["PrimaryAttribute"] == qid)


def _flow(d) -> list:
    return _el(d, "FL")[0]["Payload"]["Flow"]


def _blocks(d) -> list:
    return _el(d, "BL")[0]["Payload"]


def _human(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / "human.csv", dtype=str, keep_default_na=False)


# ------------------------------------------------------------------ item 8: repeated respondent ids

def _with_repeat(tmp_path) -> tuple[Path, int, str]:
    """The export with its first respondent's row appended again, one answer changed (age), as two
    downloads pasted together would be. Returns (file, the repeat's line, the respondent id)."""
    rows = _rows()
    head, first = rows[0], list(rows[3])
    age = head.index("age")
    first[age] = "1" if first[age] != "1" else "2"
    path = _write_rows(tmp_path / "repeat.csv", [*rows, first])
    return path, len(rows) + 1, first[head.index("ResponseId")]


def test_repeated_response_id_is_refused_naming_its_lines(tmp_path, capsys):
    path, line, rid = _with_repeat(tmp_path)
    rc, _, err = _run(capsys, QSF, tmp_path / "out", "--responses", path)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert rid in err and f"4, {line}" in err and "--dedupe" in err  # line 4: the first response row
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("keep", ["first", "last"])
def test_dedupe_keeps_one_row_per_respondent_and_notes_it(keep, tmp_path, capsys):
    path, line, rid = _with_repeat(tmp_path)
    rc, out, err = _run(capsys, QSF, tmp_path / keep, "--responses", path, "--dedupe", keep)
    assert rc == 0, err
    rc, _, err = _run(capsys, QSF, tmp_path / "plain", "--responses", CSV3)
    assert rc == 0, err
    got, base = _human(tmp_path / keep), _human(tmp_path / "plain")
    assert got["respondent"].nunique() == base["respondent"].nunique()
    assert len(got) == len(base)  # every count is of people, each once
    rows = _rows()
    age_codes = {"1": "18–34", "2": "35–54", "3": "55 or older"}
    kept_row = rows[3] if keep == "first" else list(csv.reader(open(path, encoding="utf-8")))[-1]
    want = age_codes[kept_row[rows[0].index("age")]]
    assert got.loc[(got["respondent"] == rid) & (got["item"] == "age"), "response"].tolist() == [want]
    notes = (tmp_path / keep / "IMPORT_NOTES.md").read_text().replace("\\", "")
    assert f"--dedupe {keep}" in notes and f"{rid}: lines 4, {line}" in notes
    assert "de-duplicated" in out


# ------------------------------------------------------------------ item 9: scales

def test_colour_code_recodes_are_not_positions(tmp_path, capsys):
    def colours(d):  # age's recodes are colour codes (#ff0000, #00ff00, #0000ff): not a scale
        _q(d, "QID1")["RecodeValues"] = {"1": "16711680", "2": "65280", "3": "255"}
        _q(d, "QID3")["RecodeValues"] = {"1": "1", "2": "4", "3": "5", "4": "2", "5": "3"}  # shuffled codes
    rc, out, err = _run(capsys, _survey(tmp_path, colours), tmp_path / "s")
    assert rc == 0, err
    items = {it.id: it for it in load_study(tmp_path / "s" / "study.yaml").items}
    assert all(o.position is None for o in items["age"].response.options)
    assert all(o.position is None for o in items["support_gain"].response.options)
    assert [o.position for o in items["support_loss"].response.options] == [1, 2, 3, 4, 5]  # untouched
    assert "not ordinal positions" in out and "a recode above 1000" in out
    assert "scale" not in items["age"].attributes


def _fake_model(human: pd.DataFrame, study) -> pd.DataFrame:
    """A model side written from the people's rows: each respondent's answers as a model subject's, shifted
    one option on (the last option one back) and +7 on numbers (a model that disagrees by a known amount)."""
    items = {it.id: it for it in study.items}
    m = human.copy()
    m["source"], m["model"], m["method"] = "model", "fake", "generated"
    m["trial"] = "fake|" + m["trial"].astype(str)
    m["subject"] = "m_" + m["subject"].astype(str)
    for i, row in m.iterrows():
        it = items[row["item"]]
        if it.response.kind == "estimate":
            m.at[i, "estimate"] = float(row["estimate"]) + 7
        else:
            labels = [o.label for o in it.response.options]
            k = labels.index(row["response"])
            m.at[i, "response"] = labels[k + 1 if k + 1 < len(labels) else k - 1]  # the last one steps back
    return m


def test_agreement_compares_items_within_their_own_scale(tmp_path, capsys):
    from simsubjects.studyfile.analyses import agreement_table, item_scales, trial_scores

    rc, _, err = _run(capsys, QSF, tmp_path / "s", "--responses", CSV3, "--finished-only")
    assert rc == 0, err
    study = load_study(tmp_path / "s" / "study.yaml")
    a = next(x for x in study.analyses if x["type"] == "agreement")
    assert a["by"] == ["scale"]  # the import's headline is per scale
    responses = pd.concat([study.human, _fake_model(study.human, study)], ignore_index=True)
    trials = trial_scores(study, responses)
    table = agreement_table(trials, ["scale"], item_scales(study))
    scales = {it.id: it.attributes.get("scale") for it in study.items}
    checked = 0
    assert {"positions 1 to 5", "yes/no share", "number 0 to 100"} <= set(table["scale"])
    for row in table.to_dict("records"):
        ids = [i for i, sc in scales.items() if sc == row["scale"]]
        t = trials[trials["item"].isin(ids) & trials["score"].notna()]
        h = t[t["source"] == "human"].groupby("item")["score"].mean()
        m = t[t["source"] != "human"].groupby("item")["score"].mean()
        j = pd.concat([m, h], axis=1, join="inner").dropna()
        assert row["n"] == len(j) and not row["note"]  # one scale: nothing pooled
        assert math.isclose(row["mean_abs_difference"], float((j.iloc[:, 0] - j.iloc[:, 1]).abs().mean()),
                            abs_tol=1e-12)
        if len(j) >= 3:
            r = stats.pearsonr(j.iloc[:, 0], j.iloc[:, 1])[0]
            assert math.isclose(row["estimate"], r, abs_tol=1e-12), row["scale"]
            checked += 1
    assert checked >= 1  # the yes/no shares: four items, one r
    pooled = agreement_table(trials, [], item_scales(study)).iloc[0]
    assert "pools items on" in pooled["note"] and "number 0 to 100" in pooled["note"]


# ------------------------------------------------------------------ item 10: numbers and sparse tables

def _exact_2x2_p(table: np.ndarray) -> float:
    """The permutation distribution of Pearson's chi-square of a 2x2 table with its margins fixed (the
    hypergeometric law of the first cell): P(chi2 >= observed), computed exactly."""
    r0, c0, n = int(table[0].sum()), int(table[:, 0].sum()), int(table.sum())
    obs = stats.chi2_contingency(table, correction=False)[0]
    p = 0.0
    for a in range(max(0, r0 + c0 - n), min(r0, c0) + 1):
        t = np.array([[a, r0 - a], [c0 - a, n - r0 - c0 + a]], float)
        if stats.chi2_contingency(t, correction=False)[0] >= obs - 1e-9:
            p += stats.hypergeom.pmf(a, n, r0, c0)
    return p


def test_numbers_get_welch_not_chi_square_and_sparse_tables_a_monte_carlo_p(tmp_path, capsys):
    from simsubjects.analyze.methods.subjects import chi_square
    from simsubjects.studyfile.analyses import trial_scores

    rc, _, err = _run(capsys, QSF, tmp_path / "s", "--responses", CSV3, "--finished-only")
    assert rc == 0, err
    study = load_study(tmp_path / "s" / "study.yaml")
    kinds = {(a["type"], a.get("factor")) for a in study.analyses}
    assert ("welch", "randomizer_fl_3") in kinds and ("chi_square", "randomizer_fl_3") in kinds
    trials = trial_scores(study, study.human)
    chi = chi_square(study.human, trials, "randomizer_fl_3", ["item"])
    numeric = {it.id for it in study.items if it.response.kind == "estimate"}
    assert numeric and not set(chi["item"]) & numeric  # unit: subject; numbers are not categories
    sparse = chi[chi["note"].str.startswith("sparse table")]
    assert len(sparse) and chi["p.value.monte_carlo"].notna().sum() == len(sparse)
    checked = 0
    for row in sparse.to_dict("records"):
        h = study.human[study.human["item"] == row["item"]]
        table = pd.crosstab(h["randomizer_fl_3"], h["response"]).to_numpy(float)
        if table.shape == (2, 2):  # one answer per respondent: the exact permutation p is known
            # Monte-Carlo standard error at 1999 draws is at most 0.011: 4 of them
            assert abs(row["p.value.monte_carlo"] - _exact_2x2_p(table)) < 0.045, row["item"]
            checked += 1
    assert checked >= 1


def test_three_arms_get_welch_for_every_pair(tmp_path, capsys):
    def third_arm(d):
        blocks = _blocks(d)
        blocks.append({"Type": "Standard", "Description": "Neutral frame", "ID": "BL_neutral",
                       "BlockElements": [{"Type": "Question", "QuestionID": "QID3"}]})
        rnd = next(f for f in _flow(d) if f["Type"] == "BlockRandomizer")
        rnd["Flow"].append({"Type": "Standard", "ID": "BL_neutral", "FlowID": "FL_30"})
        next(b for b in blocks if b["ID"] == "BL_gain")["BlockElements"] = [
            {"Type": "Question", "QuestionID": "QID2"}]
    rc, _, err = _run(capsys, _survey(tmp_path, third_arm), tmp_path / "s")
    assert rc == 0, err
    study = load_study(tmp_path / "s" / "study.yaml")
    pairs = sorted(tuple(a["levels"]) for a in study.analyses if a["type"] == "welch")
    levels = list(study.factor("randomizer_fl_3").levels)
    assert len(levels) == 3 and pairs == sorted(tuple(p) for p in
                                                 [(levels[0], levels[1]), (levels[0], levels[2]), (levels[1], levels[2])])


# ------------------------------------------------------------------ item 11: parallel arms

def test_parallel_arms_are_listed_and_merged_on_request(tmp_path, capsys):
    rc, out, err = _run(capsys, QSF, tmp_path / "plain", "--responses", CSV3)
    assert rc == 0, err
    notes = (tmp_path / "plain" / "IMPORT_NOTES.md").read_text().replace("\\", "")
    assert "Parallel arms (not merged)" in notes and "support_gain / support_loss" in notes
    assert "--merge-arms" in out
    rc, out, err = _run(capsys, QSF, tmp_path / "m", "--responses", CSV3, "--merge-arms")
    assert rc == 0, err
    study = load_study(tmp_path / "m" / "study.yaml")
    items = {it.id: it for it in study.items}
    assert "support" in items and not {"support_gain", "support_loss"} & set(items)
    assert items["support"].text_by == "randomizer_fl_3"  # each arm's vignette, per level
    assert "200 of the 600" in items["support"].texts["gain_frame"]
    assert "400 of the 600" in items["support"].texts["loss_frame"]
    # the merged item's rows are the arms' own rows, relabelled: nothing gained or lost
    plain, merged = _human(tmp_path / "plain"), _human(tmp_path / "m")
    arms = plain[plain["item"].isin(["support_gain", "support_loss"])].assign(item="support")
    cols = ["respondent", "item", "response", "randomizer_fl_3"]
    pd.testing.assert_frame_equal(arms[cols].sort_values(cols).reset_index(drop=True),
                                  merged.loc[merged["item"] == "support", cols].sort_values(cols).reset_index(drop=True))
    # the arms are now compared: the randomizer's Welch test has a row for the merged item
    from simsubjects.analyze.methods.subjects import welch
    from simsubjects.studyfile.analyses import trial_scores

    levels = list(study.factor("randomizer_fl_3").levels)
    w = welch(trial_scores(study, study.human), "randomizer_fl_3", levels, ["item"])
    row = w[w["item"] == "support"].iloc[0]
    h = merged[merged["item"] == "support"]
    pos = {o.label: o.position for o in items["support"].response.options}
    means = h.assign(x=h["response"].map(pos)).groupby("randomizer_fl_3")["x"].mean()
    assert math.isclose(row["estimate"], means[levels[0]] - means[levels[1]], abs_tol=1e-12)
    assert main(["study", "check", str(tmp_path / "m" / "session.yaml")]) == 0


def _crossed(tmp_path) -> tuple[Path, Path]:
    """A 2 x 2 declared in embedded data: the randomizer's four arms each set `frame` (gain | loss) and
    `messenger` (expert | peer); branches on `frame` show each frame's block. The export holds both fields
    (source drawn alternately, as a second manipulation would be)."""
    def edit(d):
        flow = _flow(d)
        i = next(k for k, f in enumerate(flow) if f["Type"] == "BlockRandomizer")

        def branch(value, block, fid):
            return {"Type": "Branch", "FlowID": fid, "Flow": [{"Type": "Standard", "ID": block, "FlowID": fid + "b"}],
                    "BranchLogic": {"0": {"0": {"LogicType": "EmbeddedField", "LeftOperand": "frame",
                                                "Operator": "EqualTo", "RightOperand": value, "Type": "Expression",
                                                "Description": f"If frame Is Equal to {value}"}, "Type": "If"},
                                    "Type": "BooleanExpression"}}
        arms = [{"Type": "EmbeddedData", "FlowID": f"FL_3{k}", "EmbeddedData": [
            {"Type": "Custom", "Field": "frame", "Value": fr}, {"Type": "Custom", "Field": "messenger", "Value": so}]}
            for k, (fr, so) in enumerate([("gain", "expert"), ("gain", "peer"), ("loss", "expert"), ("loss", "peer")])]
        flow[i:i + 1] = [{"Type": "BlockRandomizer", "FlowID": "FL_3", "SubSet": 1, "EvenPresentation": True,
                          "Flow": arms}, branch("gain", "BL_gain", "FL_20"), branch("loss", "BL_loss", "FL_21")]
    qsf = _survey(tmp_path, edit, "crossed.qsf")
    rows = _rows()
    do = rows[0].index("FL_3_DO")
    out = [[*rows[0][:do], "frame", "messenger"], [*rows[1][:do], "frame", "messenger"],
           [*rows[2][:do], '{"ImportId": "frame"}', '{"ImportId": "messenger"}']]
    out += [[*r[:do], "gain" if r[do].startswith("BL_gain") else "loss", ("expert", "peer")[k % 2]]
            for k, r in enumerate(rows[3:])]
    return qsf, _write_rows(tmp_path / "crossed.csv", out)


def test_a_2x2_declared_in_embedded_data_is_two_factors(tmp_path, capsys):
    qsf, export = _crossed(tmp_path)
    rc, out, err = _run(capsys, qsf, tmp_path / "s", "--responses", export)
    assert rc == 0, err
    study = load_study(tmp_path / "s" / "study.yaml")
    assert {f.name: set(f.levels) for f in study.factors} == {"frame": {"gain", "loss"}, "messenger": {"expert", "peer"}}
    tests = {(a["type"], a.get("factor")) for a in study.analyses}
    assert {("welch", "frame"), ("welch", "messenger"), ("chi_square", "messenger")} <= tests
    h = _human(tmp_path / "s")
    rid = _rows()[0].index("ResponseId")
    want = {r[rid]: ("expert", "peer")[k % 2] for k, r in enumerate(_rows()[3:])}
    assert all(want[r] == s_ for r, s_ in zip(h["respondent"], h["messenger"]))
    assert set(h.loc[h["item"] == "support_gain", "frame"]) == {"gain"}
    # the session deals its subjects to the four cells, each once (crossed, not confounded)
    subjects = pd.read_csv(tmp_path / "s" / "subjects.csv")
    assert len(subjects) == 4 and len(subjects[["frame", "messenger"]].drop_duplicates()) == 4


def test_merge_arms_without_parallel_arms_is_one_line_exit_2(tmp_path, capsys):
    def unparallel(d):
        _q(d, "QID5")["QuestionText"] = "Would you vote for the program?"
    rc, _, err = _run(capsys, _survey(tmp_path, unparallel), tmp_path / "out", "--merge-arms")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "no randomizer's arms ask the same questions" in err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ item 12: the report

def test_report_shows_people_beside_the_model_for_every_item_and_arm(tmp_path, capsys):
    """Unit: share of answers (people: respondents; model: subjects) per item x arm x answer."""
    from simsubjects.publish.analysis import Analysis
    from simsubjects.publish.htmlkit import Run
    from simsubjects.publish.report import section
    from simsubjects.studyfile.analyses import analyze_study
    from simsubjects.studyfile.design import items_table
    from simsubjects.studyfile.figures import PANELS, plot_distribution

    rc, _, err = _run(capsys, QSF, tmp_path / "s", "--responses", CSV3, "--finished-only")
    assert rc == 0, err
    study = load_study(tmp_path / "s" / "study.yaml")
    responses = pd.concat([study.human, _fake_model(study.human, study)], ignore_index=True)
    tables = analyze_study(study, responses, items_table(study))
    side = tables["people_beside_model"]
    dist = tables["distribution"]
    cells = dist[["item", "condition"]].drop_duplicates()
    assert len(side) > 40 and set(side["item"]) == set(study.human["item"])  # every item people answered
    for rec in dist[dist["source"] == "human"].to_dict("records"):  # each people's share, with the model's
        row = side[(side["item"] == rec["item"]) & (side["condition"] == rec["condition"])
                   & (side["response"] == rec["response"])].iloc[0]
        assert math.isclose(row["people"], rec["share"], abs_tol=1e-12)
        m = dist[(dist["source"] == "model") & (dist["item"] == rec["item"]) & (dist["condition"] == rec["condition"])
                 & (dist["response"] == rec["response"])]["share"]
        model = m.iloc[0] if len(m) else 0.0  # an answer the model never chose in a cell it answered: share 0
        assert math.isclose(row["fake - people"], model - rec["share"], abs_tol=1e-12)
    assert {"randomizer_fl_3=gain_frame", "randomizer_fl_3=loss_frame"} <= set(side["condition"])
    figs = plot_distribution(dist, tmp_path)  # one panel per item x arm, every one: pages of PANELS
    assert [f.name for f in figs][:2] == ["distribution.png", "distribution_2.png"][:len(figs)]
    assert len(figs) == -(-len(cells) // PANELS) and all(f.stat().st_size > 0 for f in figs)
    a = Analysis("x", responses, items_table(study), tables, {k: v for k, v in tables.items() if k != "trials"},
                 tmp_path, figs)
    page = section(Run(tmp_path, ".", {"study": "x", "status": "complete", "counts": {}}, analysis=a))
    start = page.index("<h4>people_beside_model</h4>")
    block = page[start:page.index("<h4>", start + 4)]
    assert block.count("<tr>") == len(side) + 1 and "first 40 of" not in block  # a header and every row


# ------------------------------------------------------------------ item 13: import fidelity

def _db(qid: str, text: str) -> dict:
    return {"SurveyID": "SV_simsubjectsFraming", "Element": "SQ", "PrimaryAttribute": qid,
            "Payload": {"QuestionText": text, "DataExportTag": qid, "QuestionType": "DB", "Selector": "TB",
                        "QuestionID": qid}}


def test_end_of_block_descriptive_text_is_kept(tmp_path, capsys):
    def texts(d):
        d["SurveyElements"] += [_db("QID90", "Thank you. Next, a short scenario."), _db("QID91", "Debrief: all done.")]
        blocks = {b["ID"]: b for b in _blocks(d)}
        blocks["BL_intro"]["BlockElements"].append({"Type": "Question", "QuestionID": "QID90"})
        blocks["BL_out"]["BlockElements"].append({"Type": "Question", "QuestionID": "QID91"})
        # the intro is followed by a block every respondent sees
        _flow(d).insert(1, {"Type": "Standard", "ID": "BL_older", "FlowID": "FL_40"})
    rc, out, err = _run(capsys, _survey(tmp_path, texts), tmp_path / "s")
    assert rc == 0, err
    items = {it.id: it for it in load_study(tmp_path / "s" / "study.yaml").items}
    assert items["flu"].text.startswith("Thank you. Next, a short scenario.")  # read before the next question
    notes = (tmp_path / "s" / "IMPORT_NOTES.md").read_text()
    assert "Debrief: all done." in notes and "no question follows it" in notes


def test_piped_defaults_matrix_exclusives_and_payload_skip_logic_are_listed(tmp_path, capsys):
    def edit(d):
        _q(d, "QID1")["DefaultChoices"] = {"1": {"TEXT": {"Text": "${e://Field/panel}"}}}
        _q(d, "QID6")["Answers"]["9"] = {"Display": "None of these", "ExclusiveAnswer": True}
        _q(d, "QID1")["SkipLogic"] = [{"SkipLogicID": 1, "ChoiceLocator": "q://QID1/SelectableChoice/1",
                                       "Condition": "Selected", "SkipToDestination": "ENDOFSURVEY",
                                       "Locator": "q://QID1/SelectableChoice/1", "Description": "If 18-34 end"}]
    rc, out, err = _run(capsys, _survey(tmp_path, edit), tmp_path / "s")
    assert rc == 0, err
    assert "default answers" in out and "e://Field/panel" in out
    assert "exclusive answer(s) 'None of these'" in out or "None of these" in out
    assert "skip logic (If 18-34 end)" in out


def test_matrix_exclusive_answer_is_listed(tmp_path, capsys):
    def matrix(d):
        q = _q(d, "QID7")
        q.update(QuestionType="Matrix", Selector="Likert", SubSelector="MultipleAnswer",
                 Answers={"1": {"Display": "Yes"}, "2": {"Display": "None", "ExclusiveAnswer": True}},
                 AnswerOrder=["1", "2"])
    rc, out, err = _run(capsys, _survey(tmp_path, matrix), tmp_path / "s")
    assert rc == 0, err
    line = next(x for x in out.splitlines() if "QID7" in x and "exclusive answer" in x)
    assert "'None'" in line and "not enforced" in line


def test_test_responses_are_excluded_with_a_note(tmp_path, capsys):
    rows = _rows()
    status = rows[0].index("Status")
    rows[3][status] = rows[4][status] = "2"  # two of Qualtrics' generated test responses
    path = _write_rows(tmp_path / "t.csv", rows)
    rc, out, err = _run(capsys, QSF, tmp_path / "s", "--responses", path)
    assert rc == 0, err
    rid = rows[0].index("ResponseId")
    rc, _, err = _run(capsys, QSF, tmp_path / "base", "--responses", CSV3)
    got, base = _human(tmp_path / "s"), _human(tmp_path / "base")
    assert set(got["respondent"]) == set(base["respondent"]) - {rows[3][rid], rows[4][rid]}
    assert "excluded 2 test responses" in out
    assert "2 test responses (Status = 2" in (tmp_path / "s" / "IMPORT_NOTES.md").read_text()


def test_id_column_reads_a_cleaned_export(tmp_path, capsys):
    rows = _rows()
    rid = rows[0].index("ResponseId")
    head = [("pid" if j == rid else c) for j, c in enumerate(rows[0])]
    path = _write_rows(tmp_path / "clean.csv", [head, *rows[3:]])
    rc, _, err = _run(capsys, QSF, tmp_path / "bad", "--responses", path)
    assert rc == 2 and "--id-column" in err and len(err.strip().splitlines()) == 1
    rc, _, err = _run(capsys, QSF, tmp_path / "s", "--responses", path, "--id-column", "pid")
    assert rc == 0, err
    rc, _, err = _run(capsys, QSF, tmp_path / "base", "--responses", CSV3)
    pd.testing.assert_frame_equal(_human(tmp_path / "s"), _human(tmp_path / "base"))
    rc, _, err = _run(capsys, QSF, tmp_path / "bad2", "--responses", path, "--id-column", "nope")
    assert rc == 2 and "--id-column nope" in err


def test_header_rows_that_disagree_with_the_survey_are_an_error(tmp_path, capsys):
    rows = _rows()
    a, b = rows[0].index("support_gain"), rows[0].index("support_loss")
    rows[2][a], rows[2][b] = rows[2][b], rows[2][a]  # the ImportIds of two questions swapped
    path = _write_rows(tmp_path / "swapped.csv", rows)
    rc, _, err = _run(capsys, QSF, tmp_path / "out", "--responses", path)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "disagree" in err and "support_" in err
    assert not (tmp_path / "out").exists()


def test_notes_are_whole_sentences_and_list_each_element_once(tmp_path, capsys):
    def edit(d):
        _q(d, "QID1")["Choices"]["3"]["TextEntry"] = "true"  # "55 or older: ____"
        block = next(b for b in _blocks(d) if b["ID"] == "BL_intro")
        skip = {"SkipLogicID": 1, "ChoiceLocator": "q://QID1/SelectableChoice/1", "Condition": "Selected",
                "SkipToDestination": "ENDOFBLOCK", "Locator": "q://QID1/SelectableChoice/1", "Description": "If young"}
        block["BlockElements"][0]["SkipLogic"] = [skip]
        _q(d, "QID1")["SkipLogic"] = [skip]  # the same skip in the payload: one element, listed once
    rc, out, err = _run(capsys, _survey(tmp_path, edit), tmp_path / "s")
    assert rc == 0, err
    lines = [x for x in out.splitlines() if x.startswith("  QID") or x.startswith("  FL")]
    assert len(lines) == len(set(lines))
    assert sum("skip logic (If young)" in x for x in lines) == 1
    reasons = [x.split(": ", 1)[1] for x in lines if ": " in x]
    assert not [r for r in reasons if r.rstrip(".").split()[-1] in ("is", "the", "a", "of", "and", "to")]
    assert any("the choice itself is imported" in r for r in reasons)


def test_absurd_choice_count_is_refused_before_anything_runs(tmp_path, capsys):
    from simsubjects.studyfile.limits import MAX_CHOICES

    def many(d):
        q = _q(d, "QID1")
        q["Choices"] = {str(k): {"Display": f"option {k}"} for k in range(1, MAX_CHOICES + 2)}
        q["ChoiceOrder"] = list(q["Choices"])
    rc, _, err = _run(capsys, _survey(tmp_path, many), tmp_path / "out")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "QID1" in err and str(MAX_CHOICES) in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("depth", [200, 100_000])
def test_deeply_nested_flow_is_exit_2_not_70(depth, tmp_path, capsys):
    """Groups nested `depth` deep (written as text: json.dumps itself stops at such depths)."""
    d = json.loads(QSF.read_text())
    _flow(d).append("NESTED")
    block = '{"Type": "Standard", "ID": "BL_out", "FlowID": "FL_x"}'
    nested = '{"Type": "Group", "FlowID": "FL_g", "Flow": [' * depth + block + "]}" * depth
    path = tmp_path / "deep.qsf"
    path.write_text(json.dumps(d).replace('"NESTED"', nested))
    rc, _, err = _run(capsys, path, tmp_path / "out")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "deep" in err, err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ item 14: the arm's vignette

def test_vignette_stays_with_the_arm_unless_the_flow_shows_it_again(tmp_path, capsys):
    rc, _, err = _run(capsys, QSF, tmp_path / "s")
    assert rc == 0, err
    items = {it.id: it for it in load_study(tmp_path / "s" / "study.yaml").items}
    assert "200 of the 600" in items["support_gain"].text
    for later in ("rate_1", "likely_1", "household"):  # outcomes and demographics after the randomizer
        assert not items[later].text_by and "of the 600" not in items[later].text

    def again(d):  # the flow shows the arm's block again (the randomizer repeated) before the outcomes
        flow = _flow(d)
        i = next(k for k, f in enumerate(flow) if f["Type"] == "BlockRandomizer")
        flow.insert(i + 1, json.loads(json.dumps({**flow[i], "FlowID": "FL_33"})))
    rc, _, err = _run(capsys, _survey(tmp_path, again), tmp_path / "again")
    assert rc == 0, err
    items = {it.id: it for it in load_study(tmp_path / "again" / "study.yaml").items}
    assert items["rate_1"].text_by == "randomizer_fl_3"
    assert "400 of the 600" in items["rate_1"].texts["loss_frame"]
