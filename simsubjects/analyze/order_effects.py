"""Order effects of any k-choice study whose trials record the order shown (simsubjects.collect.option_order).

Per item and option: the mean probability of the option over the trials that showed it first and
over those that showed it last (among the options whose order varies), their difference and a
Welch t-test (methods.tests.welch_t); on average: each item's mean difference over its options, then a
one-sample t-test of those item means against 0 (a positive estimate is a primacy effect, a negative one recency;
Tjuatja et al. 2024 §3 measure the same contrast by reversing the options).
The item, not the item x option cell, is the unit of the average: an item's cells are not independent
(with two options, "A first" is "B last", so both cells hold the same difference).
Result columns use broom's names: estimate, std.error, statistic, df, p.value, conf.low, conf.high, n.
"""

from __future__ import annotations

import pandas as pd

from .methods.tests import one_sample_t, welch_t
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


def broom_fields(result: dict) -> dict:
    """A test's broom fields (estimate, std.error, statistic, df, p.value, conf.low, conf.high, n) for a
    row that carries its own keys: per-item rows here and steerability rows (analyze.opinion) alike."""
    return {k: v for k, v in result.items() if k != "test"}


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
                     "p_last": float(y.mean()), **broom_fields(welch_t(x, y)), "n_first": len(x), "n_last": len(y)})
    per_item = pd.DataFrame(rows, columns=ITEM_COLUMNS)
    avg = [{"model": model, **broom_fields(one_sample_t(g.groupby("item", sort=False)["estimate"].mean().to_numpy())),
            "test": "mean P(first) - P(last) over items (each item's mean over its options; one-sample t)"}
           for model, g in per_item.groupby("model", sort=False)]
    return per_item, pd.DataFrame(avg, columns=AVERAGE_COLUMNS)


def report_block(tables: dict, csv: str, note: str = "") -> str | None:
    """The report's order-effect block (averages, then the largest per-item differences); None when the
    run showed its options in a fixed order. `csv`: the link to the full per-item table."""
    from simsubjects.publish.htmlkit import block, table

    oa = tables.get("order_effects_average")
    if oa is None or not len(oa):
        return None
    oe = tables["order_effects"]
    return block("Order effect: P(option) shown first vs last", table(oa) + table(
        oe.reindex(oe["estimate"].abs().sort_values(ascending=False).index), max_rows=20, csv=csv),
                 "Per question and option, the mean probability when the option was shown first minus when it "
                 "was shown last (Welch t); on average a one-sample t across questions (each question's mean over its "
                 "options). Positive = "
                 "primacy." + (" " + note if note else ""))
