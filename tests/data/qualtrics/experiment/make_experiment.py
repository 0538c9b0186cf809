"""Write the framing-experiment fixture: a Qualtrics-style survey (.qsf) with a block randomizer and
its response export in three layouts (CSV with three header rows and recode values, CSV with two
header rows and choice texts, SPSS .sav with value labels).

Written for simsubjects' tests (CC0-1.0); the answers are drawn with a fixed seed, so running this
again writes the same data (the .sav header also records its creation time). The structure follows the Qualtrics exports in ../ (QualtricsTools).
Run: python tests/data/qualtrics/experiment/make_experiment.py
"""

import csv
import json
import random
from pathlib import Path

HERE = Path(__file__).parent
LIKERT = ["Strongly oppose", "Oppose", "Neither", "Support", "Strongly support"]


def mc(qid, tag, text, choices, selector="SAVR", recodes=None, **extra):
    p = {"QuestionText": text, "DataExportTag": tag, "QuestionType": "MC", "Selector": selector, "SubSelector": "TX",
         "QuestionDescription": text, "Choices": {str(i + 1): {"Display": c} for i, c in enumerate(choices)},
         "ChoiceOrder": [str(i + 1) for i in range(len(choices))], "QuestionID": qid, **extra}
    if recodes:
        p["RecodeValues"] = {str(i + 1): str(r) for i, r in enumerate(recodes)}
    return {"SurveyID": "SV_simsubjectsFraming", "Element": "SQ", "PrimaryAttribute": qid, "Payload": p}


def el(code, attr, payload):
    return {"SurveyID": "SV_simsubjectsFraming", "Element": code, "PrimaryAttribute": attr, "Payload": payload}


def survey() -> dict:
    q = [
        mc("QID1", "age", "What is your age?", ["18&ndash;34", "35&ndash;54", "55 or older"]),
        el("SQ", "QID2", {"QuestionText": "<p>A new vaccination program is proposed. If it is adopted, <b>200 of the "
                                          "600</b> people at risk <em>will be saved</em>.</p>", "DataExportTag": "gain_text",
                          "QuestionType": "DB", "Selector": "TB", "QuestionID": "QID2"}),
        mc("QID3", "support_gain", "How much do you support the program?", LIKERT, recodes=[1, 2, 3, 4, 5]),
        el("SQ", "QID4", {"QuestionText": "<p>A new vaccination program is proposed. If it is adopted, <b>400 of the "
                                          "600</b> people at risk <em>will die</em>.</p>", "DataExportTag": "loss_text",
                          "QuestionType": "DB", "Selector": "TB", "QuestionID": "QID4"}),
        mc("QID5", "support_loss", "How much do you support the program?", LIKERT, recodes=[1, 2, 3, 4, 5]),
        el("SQ", "QID6", {"QuestionText": "How would you rate the program?", "DataExportTag": "rate",
                          "QuestionType": "Matrix", "Selector": "Likert", "SubSelector": "SingleAnswer",
                          "Choices": {"1": {"Display": "Effective"}, "2": {"Display": "Fair &amp; just"}},
                          "ChoiceOrder": ["1", "2"],
                          "Answers": {str(i + 1): {"Display": t} for i, t in
                                      enumerate(["Poor", "Fair", "Good", "Excellent", "No basis to judge"])},
                          "AnswerOrder": ["1", "2", "3", "4", "5"],
                          "RecodeValues": {"1": "1", "2": "2", "3": "3", "4": "4", "5": "-1"}, "QuestionID": "QID6"}),
        mc("QID7", "trust", "Whose advice on vaccines do you trust? Check all that apply.",
           ["Doctors", "The government", "The news", "None of these"], selector="MAVR",
           Randomization={"Type": "All", "Advanced": None}),
        el("SQ", "QID8", {"QuestionText": "How likely are you to take part in the program?", "DataExportTag": "likely",
                          "QuestionType": "Slider", "Selector": "HSLIDER",
                          "Configuration": {"CSSliderMin": 0, "CSSliderMax": 100, "NumDecimals": "0"},
                          "Choices": {"1": {"Display": "Likelihood (%)"}}, "ChoiceOrder": ["1"], "QuestionID": "QID8",
                          "QuestionJS": "Qualtrics.SurveyEngine.addOnload(function(){});"}),
        el("SQ", "QID9", {"QuestionText": "Rank these concerns, most important first.", "DataExportTag": "concerns",
                          "QuestionType": "RO", "Selector": "DND", "SubSelector": "TX",
                          "Choices": {"1": {"Display": "Safety"}, "2": {"Display": "Cost"}, "3": {"Display": "Time"}},
                          "ChoiceOrder": ["1", "2", "3"], "QuestionID": "QID9"}),
        el("SQ", "QID10", {"QuestionText": "You answered ${q://QID3/ChoiceGroup/SelectedChoices} (panel "
                                           "${e://Field/panel}). In a few words, why?", "DataExportTag": "why",
                           "QuestionType": "TE", "Selector": "SL", "QuestionID": "QID10"}),
        el("SQ", "QID11", {"QuestionText": "How many people live in your household?", "DataExportTag": "household",
                           "QuestionType": "TE", "Selector": "SL", "QuestionID": "QID11",
                           "Validation": {"Settings": {"ForceResponse": "OFF", "Type": "ContentType",
                                                       "ContentType": "ValidNumber",
                                                       "ValidNumber": {"Min": "1", "Max": "20"}}}}),
        el("SQ", "QID12", {"QuestionText": "Timing", "DataExportTag": "timer", "QuestionType": "Timing",
                           "Selector": "PageTimer", "QuestionID": "QID12"}),
        mc("QID13", "old", "A deleted question", ["Yes", "No"]),
        mc("QID14", "flu", "Have you had a flu shot this year?", ["Yes", "No"]),
    ]
    q[6]["Payload"]["Choices"]["4"]["ExclusiveAnswer"] = True  # "None of these" clears the other options
    blocks = [{"Type": "Default", "Description": "Intro", "ID": "BL_intro",
               "BlockElements": [{"Type": "Question", "QuestionID": "QID1"}]},
              {"Type": "Standard", "Description": "Gain frame", "ID": "BL_gain",
               "BlockElements": [{"Type": "Question", "QuestionID": "QID2"}, {"Type": "Question", "QuestionID": "QID3"}]},
              {"Type": "Standard", "Description": "Loss frame", "ID": "BL_loss",
               "BlockElements": [{"Type": "Question", "QuestionID": "QID4"}, {"Type": "Question", "QuestionID": "QID5"}]},
              {"Type": "Standard", "Description": "Outcomes", "ID": "BL_out",
               "BlockElements": [{"Type": "Question", "QuestionID": f"QID{i}"} for i in range(6, 13)]},
              {"Type": "Standard", "Description": "Older respondents", "ID": "BL_older",
               "BlockElements": [{"Type": "Question", "QuestionID": "QID14"}]},
              {"Type": "Trash", "Description": "Trash / Unused Questions", "ID": "BL_trash",
               "BlockElements": [{"Type": "Question", "QuestionID": "QID13"}]}]
    flow = {"Type": "Root", "FlowID": "FL_1", "Flow": [
        {"Type": "Block", "ID": "BL_intro", "FlowID": "FL_2"},
        {"Type": "Branch", "FlowID": "FL_9", "Description": "New Branch",
         "BranchLogic": {"0": {"0": {"LogicType": "Question", "QuestionID": "QID1", "QuestionIsInLoop": "no",
                                     "ChoiceLocator": "q://QID1/SelectableChoice/3", "Operator": "Selected",
                                     "QuestionIDFromLocator": "QID1", "LeftOperand": "q://QID1/SelectableChoice/3",
                                     "Type": "Expression", "Description": "<span>If</span> <span>What is your age?"
                                     "</span> <span>55 or older</span> Is <span>Selected</span>"},
                               "Type": "If"}, "Type": "BooleanExpression"},
         "Flow": [{"Type": "Standard", "ID": "BL_older", "FlowID": "FL_10"}]},
        {"Type": "EmbeddedData", "FlowID": "FL_6", "EmbeddedData": [{"Description": "panel", "Type": "Recipient",
                                                                     "Field": "panel", "VariableType": "String"}]},
        {"Type": "BlockRandomizer", "FlowID": "FL_3", "SubSet": "1", "EvenPresentation": True,
         "Flow": [{"Type": "Standard", "ID": "BL_gain", "FlowID": "FL_4"},
                  {"Type": "Standard", "ID": "BL_loss", "FlowID": "FL_5"}]},
        {"Type": "Standard", "ID": "BL_out", "FlowID": "FL_7"},
        {"Type": "EndSurvey", "FlowID": "FL_8"}]}
    return {"SurveyEntry": {"SurveyID": "SV_simsubjectsFraming", "SurveyName": "Framing experiment (test fixture)",
                            "SurveyLanguage": "EN", "SurveyStatus": "Inactive"},
            "SurveyElements": [el("BL", "Survey Blocks", blocks), el("FL", "Survey Flow", flow),
                               el("QO", "QO_1", {"Name": "Quota for 18-34", "Count": 5}), *q]}


COLUMNS = ["StartDate", "EndDate", "Status", "Progress", "Finished", "ResponseId", "DistributionChannel", "panel", "age",
           "support_gain", "support_loss", "rate_1", "rate_2", "trust_1", "trust_2", "trust_3", "trust_4", "likely_1",
           "concerns_1", "concerns_2", "concerns_3", "why", "household", "flu", "FL_3_DO"]
IMPORTS = ["startDate", "endDate", "status", "progress", "finished", "_recordId", "distributionChannel", "panel",
           "QID1", "QID3", "QID5", "QID6-1", "QID6-2", "QID7-1", "QID7-2", "QID7-3", "QID7-4", "QID8-1", "QID9-1",
           "QID9-2", "QID9-3", "QID10-TEXT", "QID11-TEXT", "QID14", "FL_3_DO"]


def responses(n=24, seed=11) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        arm = "BL_gain" if i % 2 == 0 else "BL_loss"
        r = {"StartDate": "2026-11-20 10:00:00", "EndDate": "2026-11-20 10:05:00", "Status": "0", "Progress": "100",
             "Finished": "1", "ResponseId": f"R_fix{i:03d}x", "DistributionChannel": "anonymous",
             "panel": rng.choice(["A", "B"]), "age": str(rng.randint(1, 3)),
             "support_gain": "", "support_loss": "", "FL_3_DO": arm if rng.random() < 0.5 else
             ("BL_gain|BL_loss" if arm == "BL_gain" else "BL_loss|BL_gain")}
        shift = 1 if arm == "BL_gain" else 0
        r["support_gain" if arm == "BL_gain" else "support_loss"] = str(min(5, rng.randint(1, 4) + shift))
        r["rate_1"] = str(min(4, rng.randint(1, 3) + shift))
        r["rate_2"] = rng.choice(["1", "2", "3", "4", "-1"])
        picks = [rng.random() < p for p in (0.7, 0.4, 0.3)]
        picks.append(not any(picks))
        for k, p in enumerate(picks):
            r[f"trust_{k + 1}"] = "1" if p else ""
        r["likely_1"] = str(rng.randint(0, 100))
        order = rng.sample([1, 2, 3], 3)
        for k in range(3):
            r[f"concerns_{k + 1}"] = str(order[k])
        r["why"] = rng.choice(["It saves lives.", "Too risky, I think", "Not sure", ""])
        r["household"] = str(rng.randint(1, 6))
        r["flu"] = str(1 + (i * 7) % 3 % 2) if r["age"] == "3" else ""  # the branch: asked of 55 or older only
        out.append(r)
    out[5]["Finished"], out[5]["Progress"] = "0", "40"  # one unfinished response
    out[9]["Status"], out[9]["DistributionChannel"] = "1", "preview"  # one preview
    out[13]["rate_1"] = "7"  # an answer that matches no option (listed by the import)
    for k in ("rate_1", "rate_2", "trust_1", "trust_2", "trust_3", "trust_4", "likely_1", "concerns_1", "concerns_2",
              "concerns_3", "why", "household", "flu"):
        out[5][k] = ""  # the unfinished respondent stopped after the randomized block
    return out


def main():
    s = survey()
    (HERE / "framing_experiment.qsf").write_text(json.dumps(s, indent=1), encoding="utf-8")
    rows = responses()
    texts = {"age": ["18–34", "35–54", "55 or older"], "flu": ["Yes", "No"], "support_gain": LIKERT, "support_loss": LIKERT,
             "rate_1": ["Poor", "Fair", "Good", "Excellent"], "rate_2": ["Poor", "Fair", "Good", "Excellent"]}
    with open(HERE / "framing_experiment.csv", "w", newline="", encoding="utf-8-sig") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        w.writerow([c if c in ("ResponseId", "FL_3_DO") else f"label of {c}" for c in COLUMNS])
        w.writerow([json.dumps({"ImportId": i}) for i in IMPORTS])
        w.writerows([[r[c] for c in COLUMNS] for r in rows])

    def as_text(c, v):
        if c in texts and v not in ("", "-1") and 1 <= int(v) <= len(texts[c]):
            return texts[c][int(v) - 1]
        return "No basis to judge" if c == "rate_2" and v == "-1" else v
    with open(HERE / "framing_experiment_text.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        w.writerow([f"Question {c}" for c in COLUMNS])
        w.writerows([[as_text(c, r[c]) for c in COLUMNS] for r in rows])
    import pandas as pd
    import pyreadstat

    df = pd.DataFrame(rows)[COLUMNS]
    numeric = [c for c in COLUMNS if c.startswith(("age", "support", "rate", "trust", "likely", "concerns", "household",
                                                   "flu"))]
    for c in numeric:
        df[c] = pd.to_numeric(df[c], errors="coerce")
    labels = {c: {i + 1: t for i, t in enumerate(v)} for c, v in texts.items()}
    labels["rate_2"][-1] = "No basis to judge"
    pyreadstat.write_sav(df, str(HERE / "framing_experiment.sav"), variable_value_labels=labels)


if __name__ == "__main__":
    main()
