"""Report section of Tjuatja et al. (2024): this run's Table 4 beside the published one.

The published Table 4 is data: datasets/tjuatja2024/table4.csv, with its source.
"""

from __future__ import annotations

import pandas as pd

from simsubjects.datasets.registry import data_path
from simsubjects.analyze.blocks import Block, Table
from simsubjects.studies.order_effects import report_block

BIAS_NAMES = {"Acquiescence": "acquiescence", "Response Order": "response_order", "Odd/even": "odd_even",
              "Opinion Float": "opinion_float", "Allow/forbid": "allow_forbid"}


def table4_published() -> pd.DataFrame:
    """Tjuatja et al. (2024) Table 4 as printed, bias names mapped to the package's."""
    df = pd.read_csv(data_path("tjuatja2024/table4.csv"))
    df["bias"] = df["bias"].map(BIAS_NAMES)
    return df


def survey_bias(run) -> list[Block]:
    t = run.analysis.tables
    mine = t["table4"]
    human = pd.DataFrame([{"bias": b, "Δb (people, survey literature)": "> 0, significant",
                           "Δp key typo / middle random / letter swap (people)": "≈ 0, not significant"}
                          for b in BIAS_NAMES.values()])
    pub = table4_published()
    order = {b: i for i, b in enumerate(BIAS_NAMES.values())}
    side = []
    for bias in sorted(set(mine["bias"]), key=lambda b: order.get(b, 99)):
        for r in mine[mine["bias"] == bias].itertuples():
            side.append({"bias": bias, "system": f"this run: {r.model}", "Δb": r.delta_b, "p": r.p_bias,
                         "Δp key typo": r.delta_p_key_typo, "Δp middle random": r.delta_p_middle_random,
                         "Δp letter swap": r.delta_p_letter_swap, "r (uncertainty, |Δb|)": r.pearson_r})
        for model in ("Llama2 7b", "Llama2 70b", "GPT 3.5 Turbo"):
            p = pub[(pub["model"] == model) & (pub["bias"] == bias)]
            for r in p.itertuples():
                side.append({"bias": bias, "system": f"paper: {model}", "Δb": r.delta_b, "p": r.p_bias,
                             "Δp key typo": r.delta_p_key_typo, "Δp middle random": r.delta_p_middle_random,
                             "Δp letter swap": r.delta_p_letter_swap, "r (uncertainty, |Δb|)": r.pearson_r})
    return [
        Block("What people do (the paper's reference pattern)", (human,),
              "Tjuatja et al. §2.3/§3.1: a human-like respondent shows a significant positive Δb for each bias and no "
              "significant change under the non-bias perturbations (Figure 2, 'most human-like')."),
        Block("Table 4 layout: this run beside three of the paper's models", (Table(pd.DataFrame(side), max_rows=60),),
              "Δ in percentage points; p of the one-sample t-test across questions; r = Pearson correlation of "
              "normalized entropy with |Δb|. Opinion-float Δp are the odd/even perturbation pairs, as in the paper."),
        Block("Published Table 4, all nine models", (Table(pub, max_rows=60),), kind="details"),
    ] + _order_effects(run)


def _order_effects(run) -> list[Block]:
    """With --order other than fixed (issue 15): the order-effect tables that analyze adds."""

    b = report_block(run.analysis.tables, f"{run.rel}/analysis/order_effects.csv",
                     "The options of each question form were reordered (collect --order); Δb above pools the orderings.")
    return [b] if b else []
