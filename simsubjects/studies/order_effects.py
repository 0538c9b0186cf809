"""The report's order-effect block, shared by every k-choice study that records the order shown
(the numbers: analyze/order_effects.py); data, rendered by publish/."""
from __future__ import annotations

from simsubjects.analyze.blocks import Block, Table


def report_block(tables: dict, csv: str, note: str = "") -> Block | None:
    """The report's order-effect block (averages, then the largest per-item differences); None when the
    run showed its options in a fixed order. `csv`: the link to the full per-item table."""
    oa = tables.get("order_effects_average")
    if oa is None or not len(oa):
        return None
    oe = tables["order_effects"]
    return Block("Order effect: P(option) shown first vs last", (oa, Table(
        oe.reindex(oe["estimate"].abs().sort_values(ascending=False).index), max_rows=20, csv=csv)),
                 "Per question and option, the mean probability when the option was shown first minus when it "
                 "was shown last (t-test on subjects: paired when each saw both orders, else Welch; p-values also "
                 "Holm/BH-adjusted over the model's cells); on average a one-sample t across questions (each question's mean over its "
                 "options). Positive = "
                 "primacy." + (" " + note if note else ""))
