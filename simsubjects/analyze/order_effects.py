"""Order effects of any k-choice study whose trials record the order shown (simsubjects.collect.option_order).

Per item and option: the mean probability of the option over the subjects shown it first and over
those shown it last (among the options whose order varies: a refusal kept last is never "last"), their
difference and a t-test with the subject as the unit (paired within subject when every subject saw
both orders, else Welch; methods.tests), Holm/BH-adjusted over a model's cells; on average: each item's mean difference over its options, then a
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
from simsubjects.analyze.methods.multiplicity import add_adjusted

ITEM_COLUMNS = ["model", "item", "response", "p_first", "p_last", "test", "estimate", "std.error", "statistic", "df",
                "p.value", "conf.low", "conf.high", "n_first", "n_last", "unit", "family", "p.value.holm",
                "p.value.bh"]
AVERAGE_COLUMNS = ["model", "test", "estimate", "std.error", "statistic", "df", "p.value", "conf.low", "conf.high", "n",
                   "unit"]


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


def _first_vs_last(g: pd.DataFrame) -> dict:
    """One option's P(first) - P(last) with the subject as the unit: each subject's mean share over its
    trials that showed the option first (last). When every subject was shown both (all orderings, or
    cyclic), the test is paired within subject (one-sample t of the subject differences): a Welch test
    there would treat one subject's two halves as independent samples (the audit's s.e. 0.095 against
    0.019). When subjects saw one order each (randomized), Welch on the subject means."""
    unit = "subject" if "subject" in g.columns else "trial"
    f = g[g["first"]].groupby(unit, sort=False)["share"].mean()
    last = g[g["last"]].groupby(unit, sort=False)["share"].mean()
    if len(f) >= 2 and f.index.sort_values().equals(last.index.sort_values()):
        d = f - last.reindex(f.index)
        res = {**one_sample_t(d.to_numpy(float)), "test": "Paired t-test (within subject)"}
    else:
        res = welch_t(f.to_numpy(float), last.to_numpy(float))
    return {"p_first": float(f.mean()), "p_last": float(last.mean()), **res, "n_first": len(f), "n_last": len(last),
            "unit": unit}


FAMILY = "order-effect cells (item x option) of a model"
MIRROR = "not counted: the mirror of option {}"


def _two_option_mirrors(per_item: pd.DataFrame, shares: pd.DataFrame, item: str) -> pd.Series:
    """Per row, the option whose row it mirrors ('' for none). With two ordered options "A first" is "B
    last", so an item's two rows are one contrast (the same difference, up to refusal mass): its second row
    mirrors the first and is not a second test (issue 40: counting it twice doubled Holm's p)."""
    last = shares["n_ordered"] if "n_ordered" in shares.columns else shares["n_shown"]
    k = last.astype(float).groupby([shares["model"], shares[item]]).max()
    mirror = pd.Series("", index=per_item.index)
    for (model, it), g in per_item.groupby(["model", "item"], sort=False):
        if len(g) == 2 and k.get((model, it)) == 2:
            mirror[g.index[1]] = str(g["response"].iloc[0])
    return mirror


def _adjust_once(per_item: pd.DataFrame, mirror: pd.Series) -> pd.DataFrame:
    """Holm/BH over one p-value per contrast: a mirror row is left out of its model's family (its `family`
    says whose mirror it is) and carries the adjusted p-values of the row it mirrors."""
    counted = add_adjusted(per_item[mirror == ""], by=["model"], family=FAMILY)
    out = per_item.join(counted[["family", "p.value.holm", "p.value.bh"]])
    for i in mirror.index[mirror != ""]:
        twin = out[(out["model"] == out.at[i, "model"]) & (out["item"] == out.at[i, "item"]) & (mirror == "")].index[0]
        out.loc[i, ["p.value.holm", "p.value.bh"]] = out.loc[twin, ["p.value.holm", "p.value.bh"]].to_numpy()
        out.at[i, "family"] = MIRROR.format(mirror[i])
    return out


def order_effects(responses: pd.DataFrame, item: str = "item") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per item x option table, average table); both empty when no trial records its order.

    The per-item rows of one model are one family: Holm and BH adjusted p-values (analyze.multiplicity)
    beside each raw p-value, the family named in `family`; a two-option item's second row is the same
    contrast as its first and counts once (`_two_option_mirrors`)."""

    r = shown_shares(responses)
    if r.empty:
        return pd.DataFrame(columns=ITEM_COLUMNS), pd.DataFrame(columns=AVERAGE_COLUMNS)
    rows = []
    for (model, it, resp), g in r.groupby(["model", item, "response"], sort=False):
        if not g["first"].any() or not g["last"].any():
            continue  # a refusal kept last, or an option never shown first in this run
        rows.append({"model": model, "item": it, "response": resp, **_first_vs_last(g)})
    per_item = pd.DataFrame(rows, columns=[c for c in ITEM_COLUMNS if c not in ("family", "p.value.holm", "p.value.bh")])
    if len(per_item):
        per_item = _adjust_once(per_item, _two_option_mirrors(per_item, r, item))
    per_item = per_item.reindex(columns=ITEM_COLUMNS)
    avg = [{"model": model, **broom_fields(one_sample_t(g.groupby("item", sort=False)["estimate"].mean().to_numpy())),
            "test": "mean P(first) - P(last) over items (each item's mean over its options; one-sample t)",
            "unit": "item"}  # a test over the items (issue 40: over copies of one prompt it is still a sample)
           for model, g in per_item.groupby("model", sort=False)]
    return per_item, pd.DataFrame(avg, columns=AVERAGE_COLUMNS)
