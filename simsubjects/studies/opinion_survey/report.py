"""Report section of the opinion survey (OpinionQA, Santurkar et al. 2023): the heatmap's numbers,
steerability, refusals, order effects (the numbers: studies/opinion_survey/analysis.py)."""
from __future__ import annotations

import pandas as pd

from simsubjects.studies.opinion_survey.analysis import OVERALL
from simsubjects.analyze.blocks import Block
from simsubjects.studies.order_effects import report_block


def report_section(run) -> list[Block]:
    """The report's "beside people" blocks: heatmap reading, steerability, refusals, order effects."""
    t = run.analysis.tables
    out = []
    hb = t.get("human_baseline")
    r = t["representativeness"]
    if len(r):
        wide = r.assign(row=r["model"] + " | " + r["prompt"], col=r["attribute"] + "=" + r["group"]).pivot_table(
            index="row", columns="col", values="estimate", sort=False).reset_index()
        wide = wide.rename(columns={"row": "model | prompt"})
        if hb is not None and len(hb):
            people = {"model | prompt": "people: group vs overall", f"{OVERALL}={OVERALL}": 1.0,
                      **{f"{a}={g}": v for a, g, v in zip(hb["attribute"], hb["group"], hb["estimate"])}}
            wide = pd.concat([wide, pd.DataFrame([people])], ignore_index=True)
        out.append(Block("Representativeness by group (the heatmap's numbers)", (wide,),
                         "Rep = 1 - mean over questions of the Wasserstein-1 distance between the model's and the group's "
                         "answer distributions on the ordinal options, divided by the span of the positions (OpinionQA's "
                         "convention; refusals excluded). The last row is people's own spread: each group against the "
                         "whole sample."))
    st = t.get("steerability")
    if st is not None and len(st):
        out.append(Block("Steerability: personas of a group vs the default prompt", (st,),
                         "estimate = Rep to the group with its personas minus Rep with the default prompt, paired over "
                         "questions (one-sample t on the per-question distance differences); positive = steering moved "
                         "the model toward the group (OpinionQA §4.2; Argyle et al. 2023)."))
    rs = t.get("refusal_summary")
    if rs is not None and len(rs):
        out.append(Block("Refusal rates: people and the model", (rs,),
                         "Mean over questions of the share of answers (people) or of probability (model) on refusal "
                         "options such as 'Refused' (OpinionQA's R_H and R_M)."))
    oe = report_block(t, f"{run.rel}/analysis/order_effects.csv",
                      "The survey-bias study's response-order results (Tjuatja et al. 2024) are separate.")
    if oe:
        out.append(oe)
    else:
        out.append(Block(caption="Options were shown in a fixed order (--order fixed): no order-effect table.", kind="note"))
    return out
