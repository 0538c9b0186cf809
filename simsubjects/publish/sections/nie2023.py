"""Report section of Nie et al. (2023), MoCa: human label classes and AMCE, people beside the model.

The published Table 1 is data: datasets/moca/table1.csv (see datasets/moca/SOURCE.md).
"""

from __future__ import annotations

import pandas as pd

from simsubjects.datasets.registry import data_path
from ..htmlkit import Run, block, fmt, table


def table1_published() -> pd.DataFrame:
    return pd.read_csv(data_path("moca/table1.csv"))


def moca(run: Run) -> list[str]:
    t = run.analysis.tables
    t1 = t["table1"].rename(columns={"n": "stories"})
    both = pd.concat([table1_published().assign(source="Nie et al. Table 1"),
                      t1.assign(source="bundled votes, stories in this run")], ignore_index=True)
    both = both[["source", "task", "stories", "Yes", "No", "ambiguous"]]
    out = [block("Table 1: human label classes", table(both),
                 "25 votes per story; Yes if P(Yes) > 0.6, No if < 0.4, else ambiguous. At scale < 1 the run uses "
                 "the first stories of each task, so its counts are those of the subset.")]
    a = t["amce"]
    method = next((m for m in ("bootstrap-story", "ols-cluster", "difference-in-means") if (a["method"] == m).any()),
                  a["method"].iloc[0] if len(a) else None)
    g = a[a["method"] == method]
    rows = {}
    for r in g.to_dict("records"):
        key = (r["task"], r["term"])
        who = "people (25 votes per story)" if r["source"] == "human" else f"this run: {r['model']}"
        ci = "" if pd.isna(r["conf.low"]) else f" [{fmt(r['conf.low'])}, {fmt(r['conf.high'])}]"
        rows.setdefault(key, {"task": r["task"], "contrast": r["term"]})[who] = f"{fmt(r['estimate'])}{ci}"
    out.append(block(f"AMCE per factor: people beside the model ({method}, 95% interval)",
                     table(pd.DataFrame(list(rows.values())), max_rows=60),
                     "Change in P(Yes) when the first attribute replaces the second (Nie et al. §3, radar charts "
                     "Figures 2-3); an interval crossing 0 is inconclusive."))
    from simsubjects.analyze.ppi_moca import report_blocks  # mixed subjects: human-only vs prediction-powered AMCE

    return out + report_blocks(t, block, table, fmt)
