"""Small named tables a study file may use instead of a file (`table: builtin:NAME`).

They are pieces of the built-in studies that are computed, not stored: the balanced name pairs
of the Ultimatum Game (Aher et al. 2023, §4). Each takes the study's seed.
"""

from __future__ import annotations

import pandas as pd


def ultimatum_pairs(seed: int) -> pd.DataFrame:
    """The 10,000 balanced proposer-responder pairs, with the proposer's reflexive pronoun."""
    from ..collect.studies.names import REFLEXIVE, ultimatum_pairs as pairs

    df = pairs(seed)
    return df.assign(proposer_self=df["proposer_title"].map(REFLEXIVE))


def moca_items(task: str):
    """MoCa's stories of one task (Nie et al. 2023) with `text` = story + question, as its prompts join them."""
    def table(seed: int) -> pd.DataFrame:
        from ..collect.human.moca import load_moca

        _, items = load_moca(task)
        return items.assign(text=items["story"] + " " + items["question"], template="yesno")
    return table


NAMED = {"ultimatum_pairs": ultimatum_pairs, "moca_causal": moca_items("causal"), "moca_moral": moca_items("moral")}
