"""The report block of the Wisdom of Crowds (Aher et al. 2023, §7): the run beside people and the paper's numbers
(data; publish/ renders it)."""

from __future__ import annotations

import pandas as pd

from simsubjects.analyze.blocks import Block, fmt, spec
from simsubjects.studies.aher2023 import validity_vs_table1
from .design import paper_lm_reference, questions


def wisdom(run) -> list[Block]:
    t = run.analysis.tables
    v = t["validity"]
    val = v.loc[v["condition"] == "all", "validity"]
    out = [validity_vs_table1("wisdom", float(val.mean()) if len(val) else None, spec(run))]
    q = questions().set_index("item")
    lm = paper_lm_reference()
    pq = t["per_question"]

    def cell(med, iqr):
        return "–" if med is None or pd.isna(med) else f"{fmt(med)} ({fmt(iqr)})"

    rows = []
    for item, r in q.iterrows():
        row = {"question": item.replace("wisdom-", "Q"), "truth": fmt(r["truth"]),
               "human (Moussaïd et al.)": cell(r["human_median"], r["human_iqr"])}
        for _, x in lm[lm["item"] == item].iterrows():
            row[x["model"]] = cell(x["median"], x["iqr"])
        for m, g in pq[pq["item"] == item].groupby("model"):
            row[f"this run: {m}"] = cell(g["median"].iat[0], g["iqr"].iat[0])
        rows.append(row)
    out.append(Block("Table 2 layout: median (IQR) of the estimates", (pd.DataFrame(rows),),
                     "Q01-Q05 from Moussaïd et al. (2013), with human medians and IQRs; Q06-Q10 written by the "
                     "authors. LM-1..LM-6 as printed in Table 2. An IQR of 0 with the true median is the paper's "
                     "hyper-accuracy distortion."))
    return out
