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


NAMED = {"ultimatum_pairs": ultimatum_pairs}
