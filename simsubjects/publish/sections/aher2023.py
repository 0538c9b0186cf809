"""Report sections of Aher, Arriaga & Kalai (2023): each study beside people and the paper's numbers.

The published numbers (Table 1's valid-answer rates, App. C's garden-path counts) are data:
datasets/aher2023/published.json, with their source.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from simsubjects.datasets.registry import load_json
from ..htmlkit import Run, block, fmt, model_rows, spec, table


@functools.lru_cache(maxsize=1)
def published() -> dict:
    return load_json("aher2023/published.json")


def validity_vs_table1(study: str, value: float | None, model: str = "this run") -> str:
    ref = published()["table1_valid_percent"][study]
    pct = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731 - one decimal, as Table 1 prints
    row = {"": "valid answers (%)", **{k: pct(v) for k, v in ref.items()},
           f"this run: {model}": pct(None if value is None else 100 * value)}
    return block("Validity rate beside the paper's Table 1 (LM-1..LM-5 = GPT-3 models)", table(pd.DataFrame([row])),
                 "Share of probability (k-choice) or of completions (free text) on valid answers. "
                 + ("Table 1's extracted text leaves this row's first cell empty; its values sit under LM-2..LM-5 "
                    "as printed." if ref.get("LM-1") is None else ""))


def ultimatum(run: Run) -> list[str]:
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
    out.append(block("Acceptance beside the human findings", table(pd.DataFrame(rows)),
                     "§4: in human studies (Houser & McCabe 2014; Krawczyk 2018), offers of 50-100% of the "
                     "endowment are almost always accepted and offers of 0-10% rarely; LM-5 agreed, smaller models "
                     "were flat across offers."))
    bp = t["acceptance_by_pairing"]
    b2 = bp[bp["offer"] == 2]
    paper = {"Ms-Mr": 0.60, "Mr-Ms": 0.20}
    rows = [{"pairing (proposer-responder)": k, "LM-5, §4 (approx.)": paper.get(k), "model": m, "mean P(accept)": g["mean"].mean(),
             "n": int(g["n"].sum())}
            for (m, k), g in b2.groupby(["model", "pairing"])]
    out.append(block("Gender pairing at an offer of $2", table(pd.DataFrame(rows)),
                     "§4, LM-5: men accepted an unfair $2 offer from a woman at a mean rate of 60%, women one from a "
                     "man at 20%; same-title pairings were similar to each other."))
    return out


def garden_path(run: Run) -> list[str]:
    t = run.analysis.tables
    v = t["validity"]
    val = v[(v["version"] == "all")]
    val = val[val["set"] == "both"] if (val["set"] == "both").any() else val
    out = [validity_vs_table1("garden_path", float(val["validity"].mean()) if len(val) else None, spec(run))]
    pt = t["paired_tests"]
    pub = pt[(pt["set"] == "published") & (pt["type"] == "all")].drop_duplicates("model")
    rows = [{"system": k, "GP rated less ungrammatical than control": n, "sentences": 24, "source": "App. C"}
            for k, n in published()["appendix_c_gp_lower"].items()]
    rows += [{"system": r.model, "GP rated less ungrammatical than control": r.n_gp_lower,
              "sentences": r.n_sentences, "source": "this run"} for r in pub.itertuples()]
    out.append(block("Garden path vs control, Christianson et al. (2001) sentences", table(pd.DataFrame(rows)),
                     "People find garden-path sentences harder to parse; a faithful simulation rates the garden-path "
                     "version more ungrammatical than its comma control for (nearly) every sentence."))
    return out


def wisdom(run: Run) -> list[str]:
    from simsubjects.collect.studies.wisdom import paper_lm_reference, questions

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
    out.append(block("Table 2 layout: median (IQR) of the estimates", table(pd.DataFrame(rows)),
                     "Q01-Q05 from Moussaïd et al. (2013), with human medians and IQRs; Q06-Q10 written by the "
                     "authors. LM-1..LM-6 as printed in Table 2. An IQR of 0 with the true median is the paper's "
                     "hyper-accuracy distortion."))
    return out


def milgram(run: Run) -> list[str]:
    from simsubjects.datasets.milgram1963 import load_milgram1963, paper_lm5

    t = run.analysis.tables
    ob = t["obedience"]
    scen = "milgram_classic" if run.manifest.get("study") == "milgram" else "milgram_novel"
    lm5 = paper_lm5(scen)
    human = load_milgram1963()
    rows = [{"system": "Milgram (1963) Exp. 1, people", "n": len(human),
             "% obedient (completed all 30)": 100 * float((human["breakoff_level"] == 30).mean()),
             "median break-off": float(human["breakoff_level"].median())},
            {"system": f"LM-5 (paper, Figure {'21' if scen == 'milgram_classic' else '29'})", "n": int(lm5["count"].sum()),
             "% obedient (completed all 30)": 100 * lm5.loc[lm5["level"] == 30, "count"].sum() / lm5["count"].sum(),
             "median break-off": float(np.median(np.repeat(lm5["level"], lm5["count"])))}]
    for r in model_rows(ob.rename(columns={"model": "system"}).assign(source="model")).itertuples():
        if r.system == "milgram1963":
            continue
        rows.append({"system": f"this run: {r.system}", "n": r.n, "% obedient (completed all 30)": r.percent_obedient,
                     "median break-off": r.median_breakoff})
    note = ("Break-off = the last level whose punishment the subject administered (30 = completed). "
            + ("" if scen == "milgram_classic" else "The human row is Milgram's classic experiment, as in Figure 29."))
    return [block("Obedience beside Milgram (1963) and the paper's LM-5", table(pd.DataFrame(rows)), note)]


def table1_reference(study: str) -> dict:
    """{"LM-k": valid-answer rate (%)} of Table 1 for the report's validity table ({} for other studies)."""
    return dict(published()["table1_valid_percent"].get(study, {}))
