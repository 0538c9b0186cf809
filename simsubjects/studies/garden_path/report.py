"""The report block of the garden-path sentences (Aher et al. 2023, §5): the run beside people and the paper's numbers
(data; publish/ renders it)."""

from __future__ import annotations

import pandas as pd

from simsubjects.analyze.blocks import Block, spec
from simsubjects.studies.aher2023 import published, validity_vs_table1


def garden_path(run) -> list[Block]:
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
    out.append(Block("Garden path vs control, Christianson et al. (2001) sentences", (pd.DataFrame(rows),),
                     "People find garden-path sentences harder to parse; a faithful simulation rates the garden-path "
                     "version more ungrammatical than its comma control for (nearly) every sentence."))
    return out
