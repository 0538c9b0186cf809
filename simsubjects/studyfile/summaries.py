"""Natural summaries of check-all and numeric questions (`{type: summaries}` in a study file; the
Qualtrics import names it): a built-in analysis, so a received run folder names no code to run.

- `selection_shares`: each check-all option (and multiple-answer matrix cell): the share of subjects
  who select it. A model subject's value is its exact P(Yes); a respondent's is 0 or 1.
- `numeric_means`: sliders, constant sums and numeric text entries: the mean answer.

Unit: the subject (model) or respondent (people): repeated draws of one subject are averaged first,
then the t interval is over subjects (scipy's t quantile). A people's row whose values are all 0 or 1 (a
check-all box) has the Wilson score interval instead (issue 40, item 4: a t interval over 0/1 values
leaves [0, 1] and is a point at a share of 0 or 1); `interval` names each row's ("wilson" or "t over
subjects"). Rows per source x model x condition x item, with broom's names (estimate, std.error,
conf.low, conf.high, n; std.error is the standard deviation over subjects / sqrt(n) on every row).
Human rows are unweighted (the import gives every respondent weight 1).
"""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats

from ..analyze.methods.tests import people_share_interval, t_label
from ..analyze.tidy import prob_of

KEYS = ["source", "model", "condition", "item"]


def _t_summary(values: pd.DataFrame, value: str, shares: bool = False) -> pd.DataFrame:
    """Per KEYS group: the mean of the per-subject values and its t interval (95%); with `shares` (check-all
    boxes, not numbers that happen to be 0 or 1), people's 0/1 values get the Wilson interval."""
    per_subject = values.groupby([*KEYS, "subject"], sort=False, dropna=False)[value].mean().reset_index()
    rows = []
    for key, g in per_subject.groupby(KEYS, sort=False, dropna=False):
        x = g[value].dropna().to_numpy(float)
        n = len(x)
        if n == 0:
            continue
        mean = float(x.mean())
        se = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        q = float(stats.t.ppf(0.975, n - 1)) if n > 1 else math.nan
        row = {**dict(zip(KEYS, key)), "estimate": mean, "std.error": se, "conf.low": mean - q * se,
               "conf.high": mean + q * se, "n": n, "unit": "subject", "interval": t_label("subject")}
        rows.append(people_share_interval(x, row) if shares and row["source"] == "human" else row)
    return pd.DataFrame(rows)


def _meta(items: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in ("item", "qid", "tag", "answer_kind") if c in items.columns]
    return items[cols].drop_duplicates("item")


def summaries(responses: pd.DataFrame, items: pd.DataFrame) -> dict[str, pd.DataFrame]:
    meta = _meta(items)
    if "answer_kind" not in meta.columns:
        return {}
    kind = dict(zip(meta["item"], meta["answer_kind"]))
    out = {}
    check = responses[responses["item"].map(kind) == "yesno"]
    if len(check):
        p = prob_of(check, "Yes", keep=["item", "condition", "subject"])
        t = _t_summary(p, "p_Yes", shares=True)
        if len(t):
            out["selection_shares"] = t.merge(meta, on="item", how="left")
    num = responses[responses["item"].map(kind) == "estimate"]
    if len(num) and "estimate" in num.columns:
        num = num.assign(value=pd.to_numeric(num["estimate"], errors="coerce"))
        t = _t_summary(num.drop_duplicates(["source", "model", "trial"]), "value")
        if len(t):
            out["numeric_means"] = t.merge(meta, on="item", how="left")
    return out
