"""The report block of the Milgram obedience, classic and novel (Aher et al. 2023, §6): the run beside people and the paper's numbers
(data; publish/ renders it)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsubjects.analyze.blocks import Block, model_rows
from simsubjects.datasets.milgram1963 import load_milgram1963, paper_lm5


def milgram(run) -> list[Block]:
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
                     "median break-off": r.median_breakoff, "cut by --max-stages": r.censored,
                     "Kaplan-Meier % at 30": getattr(r, "km_percent_obedient", np.nan)})
    note = ("Break-off = the last level whose punishment the subject administered (30 = completed). A run cut by "
            "--max-stages is out of the % obedient (its denominator is the runs not cut) and counted apart, beside "
            "the Kaplan-Meier share still obeying at level 30 (empty where the runs still obeying were all cut before it). "
            + ("" if scen == "milgram_classic" else "The human row is Milgram's classic experiment, as in Figure 29."))
    return [Block("Obedience beside Milgram (1963) and the paper's LM-5", (pd.DataFrame(rows),), note)]
