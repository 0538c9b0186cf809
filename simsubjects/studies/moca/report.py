"""Report section of Nie et al. (2023), MoCa: human label classes and AMCE, people beside the model.

The published Table 1 is data: datasets/moca/table1.csv (see datasets/moca/SOURCE.md).
"""

from __future__ import annotations

import pandas as pd

from simsubjects.datasets.registry import data_path
from simsubjects.studies.moca.ppi import widths

from simsubjects.analyze.blocks import Block, Table, fmt


def table1_published() -> pd.DataFrame:
    return pd.read_csv(data_path("moca/table1.csv"))


def moca(run) -> list[Block]:
    t = run.analysis.tables
    t1 = t["table1"].rename(columns={"n": "stories"})
    both = pd.concat([table1_published().assign(source="Nie et al. Table 1"),
                      t1.assign(source="bundled votes, stories in this run")], ignore_index=True)
    both = both[["source", "task", "stories", "Yes", "No", "ambiguous"]]
    out = [Block("Table 1: human label classes", (both,),
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
    out.append(Block(f"AMCE per factor: people beside the model ({method}, 95% interval)",
                     (Table(pd.DataFrame(list(rows.values())), max_rows=60),),
                     "Change in P(Yes) when the first attribute replaces the second (Nie et al. §3, radar charts "
                     "Figures 2-3); an interval crossing 0 is inconclusive."))
    return out + report_blocks(t)


# mixed subjects: human-only vs prediction-powered AMCE (the numbers: studies/moca/ppi.py)
def report_blocks(tables_: dict) -> list[Block]:
    """Report section: each factor's human AMCE from a subsample, human-only vs prediction-powered."""
    summary, example = tables_.get("ppi_demo"), tables_.get("ppi_demo_example")
    if summary is None or summary.empty:
        return []
    ex = example.copy()
    ex["interval"] = [f"{fmt(e)} [{fmt(lo)}, {fmt(hi)}]" for e, lo, hi in
                      zip(ex["estimate"], ex["conf.low"], ex["conf.high"])]
    wide = (ex.pivot_table(index=["model", "size", "task", "term", "full_value"], columns="method", values="interval",
                           aggfunc="first").reset_index().rename(columns={"full_value": "all stories' votes"}))
    w = widths(summary)
    pairs = w.pivot_table(index=["model", "size"], columns="method", values="mean_width").reset_index()
    note = "; ".join(f"{int(r['size'])} stories: human-only {r['human-only']:.3f}, prediction-powered "
                     f"{r['prediction-powered']:.3f}" for _, r in pairs.iterrows()
                     if "human-only" in r and "prediction-powered" in r)
    lam = w[w["method"] == "prediction-powered"]["mean_lambda"].mean()
    return [
        Block("Mixed subjects: human AMCE from a subsample of stories, with and without the model",
              (Table(wide, max_rows=80),),
              "People's votes on a random subsample of stories (first seeded draw of each size); human-only: "
              "the subsample's votes alone; prediction-powered: PPI++ (Angelopoulos, Duchi & Zrnic 2024) adding "
              "the model's P(Yes) on all other stories. 95% normal intervals; the last column is the AMCE all "
              "stories' votes give."),
        Block("Mixed subjects: mean interval width and coverage over repeated subsamples", (Table(w, max_rows=40),),
              f"Mean over factors and {int(summary['reps'].max())} seeded subsamples per size. Mean width — {note}. "
              "With few stories per factor (20 of 206 give about 7) the normal intervals of both methods cover "
              "less than 95% (column coverage); at 100 stories both reach it. "
              f"Mean lambda {lam:.2f}: lambda near 0 means the model's P(Yes) carries little information about "
              "people's votes, and the prediction-powered interval falls back to about the human-only one. The "
              "small embedded model (SmolLM2-135M) helps little here; a model whose P(Yes) tracks people's gains "
              "more. `simsubjects plan` on ppi_stories.csv gives the humans needed."),
    ]
