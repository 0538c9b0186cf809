"""Milgram (1963) Experiment 1 break-off levels (n = 40), as tidy human rows.

Figure 21 of Aher et al. (2023) transcribes them: 5 subjects stopped after 300 V, 4 after 315,
2 after 330, 1 each after 345, 360 and 375, and 26 administered all 30 shocks (65.0% obedient).
One row per participant: `study` (the Milgram study the rows stand beside), `trial`/`subject`
"milgram1963-NN", `item` "milgram_classic", `condition` "breakoff", `source` "human", `model`
"milgram1963", `method` "observed", `response` = break-off level as text (maximum shock
administered; 30 = completed), `weight` 1, `validity` 1, and the design columns of the model
rows: `breakoff_level`, `cause` ("refused" or "completed"), `completed` (1/0), `censored` (0).

The paper's LM-5 counts (Figures 21, 29) are a published reference of another model, kept as a
count table (`paper_lm5`), not as rows.
"""

from __future__ import annotations

import pandas as pd

from simsubjects.datasets.registry import load_json

MODEL_NAME = "milgram1963"
LEVELS = 30


def breakoff_counts() -> pd.DataFrame:
    """level (0..30) and count of Milgram's 40 subjects whose maximum shock was that level."""
    t = load_json("aher2023/milgram1963_breakoff.json")
    counts = {b["level"]: b["count"] for b in t["breakoff"]}
    counts[LEVELS] = counts.get(LEVELS, 0) + t["completed"]
    return pd.DataFrame({"level": range(LEVELS + 1), "count": [counts.get(k, 0) for k in range(LEVELS + 1)]})


def load_milgram1963(study: str = "milgram") -> pd.DataFrame:
    counts = breakoff_counts()
    levels = [lvl for lvl, c in zip(counts["level"], counts["count"]) for _ in range(c)]
    rows = [{
        "study": study, "trial": f"{MODEL_NAME}-{i + 1:02d}", "item": "milgram_classic", "condition": "breakoff",
        "subject": f"{MODEL_NAME}-{i + 1:02d}", "source": "human", "model": MODEL_NAME, "method": "observed",
        "response": str(lvl), "weight": 1.0, "validity": 1.0, "breakoff_level": lvl,
        "cause": "completed" if lvl == LEVELS else "refused", "completed": float(lvl == LEVELS), "censored": 0.0,
    } for i, lvl in enumerate(levels)]
    return pd.DataFrame(rows)


def paper_lm5(scenario: str = "milgram_classic") -> pd.DataFrame:
    """LM-5's published break-off counts (level 0..30) for the classic or the novel scenario."""
    t = load_json("aher2023/milgram1963_breakoff.json")
    lm = t["lm5"] if scenario == "milgram_classic" else t["lm5_novel"]
    counts = {b["level"]: b["count"] for b in lm["breakoff"]}
    counts[LEVELS] = counts.get(LEVELS, 0) + lm["completed"]
    return pd.DataFrame({"level": range(LEVELS + 1), "count": [counts.get(k, 0) for k in range(LEVELS + 1)]})
