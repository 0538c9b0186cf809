"""The report block of the Ultimatum Game (Aher et al. 2023, §4): the run beside people and the paper's numbers
(data; publish/ renders it)."""

from __future__ import annotations

import pandas as pd

from simsubjects.analyze.blocks import Block, spec
from simsubjects.studies.aher2023 import validity_vs_table1


def ultimatum(run) -> list[Block]:
    t = run.analysis.tables
    v = t["validity"]
    val = v.loc[v["offer"] == "all", "validity"]
    out = [validity_vs_table1("ultimatum", float(val.mean()) if len(val) else None, spec(run))]
    by = t["acceptance_by_offer"]
    bands = [("$0-$1 (0-10% of $10)", [0, 1], "rarely accepted"), ("$5-$10 (50-100%)", list(range(5, 11)),
                                                                    "almost always accepted")]
    rows = []
    for label, offers, human in bands:
        g = by[by["offer"].isin(offers)]
        for m, gm in g.groupby("model"):
            rows.append({"offers": label, "human studies and LM-5 (§4)": human, "model": m,
                         "mean P(accept)": gm["mean"].mean()})
    out.append(Block("Acceptance beside the human findings", (pd.DataFrame(rows),),
                     "§4: in human studies (Houser & McCabe 2014; Krawczyk 2018), offers of 50-100% of the "
                     "endowment are almost always accepted and offers of 0-10% rarely; LM-5 agreed, smaller models "
                     "were flat across offers."))
    bp = t["acceptance_by_pairing"]
    b2 = bp[bp["offer"] == 2]
    paper = {"Ms-Mr": 0.60, "Mr-Ms": 0.20}
    rows = [{"pairing (proposer-responder)": k, "LM-5, §4 (approx.)": paper.get(k), "model": m, "mean P(accept)": g["mean"].mean(),
             "n": int(g["n"].sum())}
            for (m, k), g in b2.groupby(["model", "pairing"])]
    out.append(Block("Gender pairing at an offer of $2", (pd.DataFrame(rows),),
                     "§4, LM-5: men accepted an unfair $2 offer from a woman at a mean rate of 60%, women one from a "
                     "man at 20%; same-title pairings were similar to each other."))
    return out
