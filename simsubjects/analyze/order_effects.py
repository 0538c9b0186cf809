"""Order effects of any k-choice study whose trials record the order shown (simsubjects.option_order).

Per item and option: the mean probability of the option over the trials that showed it first and
over those that showed it last (among the options whose order varies), their difference and a
Welch t-test; on average: the mean of those differences over item x option cells with a
one-sample t-test against 0 (a positive estimate is a primacy effect, a negative one recency;
Tjuatja et al. 2024 §3 measure the same contrast by reversing the options).
Result columns use broom's names: estimate, std.error, statistic, df, p.value, conf.low, conf.high, n.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from .tidy import trial_total

ITEM_COLUMNS = ["model", "item", "response", "p_first", "p_last", "estimate", "std.error", "statistic", "df",
                "p.value", "conf.low", "conf.high", "n_first", "n_last"]
AVERAGE_COLUMNS = ["model", "test", "estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n"]


def shown_shares(responses: pd.DataFrame) -> pd.DataFrame:
    """Model rows with a recorded order: share of each option within its trial and where it was shown."""
    if "shown_position" not in responses.columns:
        return pd.DataFrame()
    r = responses[responses["source"] != "human"] if "source" in responses.columns else responses
    r = r[r["shown_position"].notna()].copy()
    if r.empty:
        return r
    r["share"] = r["weight"].astype(float) / trial_total(r)
    last = r["n_ordered"] if "n_ordered" in r.columns else r["n_shown"]
    r["first"] = r["shown_position"] == 1
    r["last"] = r["shown_position"] == last.astype(float)
    return r


def _welch(x: np.ndarray, y: np.ndarray, conf: float = 0.95) -> dict:
    out = {"estimate": float(x.mean() - y.mean()) if len(x) and len(y) else math.nan}
    if len(x) < 2 or len(y) < 2:
        return {**out, "std.error": math.nan, "statistic": math.nan, "df": math.nan, "p.value": math.nan,
                "conf.low": math.nan, "conf.high": math.nan}
    res = stats.ttest_ind(x, y, equal_var=False)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = math.sqrt(vx + vy)
    ci = res.confidence_interval(conf) if se > 0 else (out["estimate"], out["estimate"])
    return {**out, "std.error": se, "statistic": float(res.statistic), "df": float(res.df),
            "p.value": float(res.pvalue), "conf.low": float(ci[0]), "conf.high": float(ci[1])}


def order_effects(responses: pd.DataFrame, item: str = "item") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per item x option table, average table); both empty when no trial records its order."""
    r = shown_shares(responses)
    if r.empty:
        return pd.DataFrame(columns=ITEM_COLUMNS), pd.DataFrame(columns=AVERAGE_COLUMNS)
    rows = []
    for (model, it, resp), g in r.groupby(["model", item, "response"], sort=False):
        x = g.loc[g["first"], "share"].to_numpy(float)
        y = g.loc[g["last"], "share"].to_numpy(float)
        if not len(x) or not len(y):
            continue  # a refusal kept last, or an option never shown first in this run
        rows.append({"model": model, "item": it, "response": resp, "p_first": float(x.mean()),
                     "p_last": float(y.mean()), **_welch(x, y), "n_first": len(x), "n_last": len(y)})
    per_item = pd.DataFrame(rows, columns=ITEM_COLUMNS)
    avg = []
    for model, g in per_item.groupby("model", sort=False):
        d = g["estimate"].to_numpy(float)
        row = {"model": model, "test": "mean P(first) - P(last) over item x option (one-sample t)",
               "estimate": float(d.mean()), "n": len(d)}
        if len(d) > 1 and d.std(ddof=1) > 0:
            res = stats.ttest_1samp(d, 0.0)
            ci = res.confidence_interval(0.95)
            row.update({"std.error": float(d.std(ddof=1) / math.sqrt(len(d))), "statistic": float(res.statistic),
                        "df": float(res.df), "p.value": float(res.pvalue), "conf.low": float(ci[0]),
                        "conf.high": float(ci[1])})
        avg.append(row)
    return per_item, pd.DataFrame(avg, columns=AVERAGE_COLUMNS)
