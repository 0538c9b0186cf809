"""Reshaping the long responses table: within-trial shares, per-trial probabilities of one option."""

from __future__ import annotations

import pandas as pd

# A trial id is unique within one run; runs of several models share ids, so key on all three.
TRIAL_KEY = ["source", "model", "trial"]


def shares(responses: pd.DataFrame) -> pd.DataFrame:
    """Add `share`: each response's weight over the trial's total (exact probabilities stay as they are)."""
    total = responses.groupby(TRIAL_KEY, sort=False)["weight"].transform("sum")
    return responses.assign(share=responses["weight"] / total)


def prob_of(responses: pd.DataFrame, response: str, keep: list[str] | None = None) -> pd.DataFrame:
    """One row per trial: the normalized probability of `response`, with the trial's design columns."""
    df = shares(responses)
    keep = [c for c in (keep or []) if c in df.columns and c not in TRIAL_KEY]
    first = df.drop_duplicates(TRIAL_KEY)[[*TRIAL_KEY, "validity", *keep]]
    p = df[df["response"] == response].groupby(TRIAL_KEY, sort=False)["share"].sum()
    out = first.set_index(TRIAL_KEY).join(p.rename(f"p_{response}")).reset_index()
    return out.fillna({f"p_{response}": 0.0})
