"""Reshaping the long responses table: within-trial shares, per-trial probabilities of one option.

Every per-trial reshaping of the analyses goes through here, so that one trial is always the rows
sharing (source, model, run, trial): trial ids are unique within one run only, and `analyze DIR1
DIR2` stacks runs whose ids coincide (two models, or two runs of one model with a `run` column).
"""

from __future__ import annotations

import pandas as pd

TRIAL_KEY = ["source", "model", "run", "trial"]


def trial_key(df: pd.DataFrame) -> list[str]:
    """The columns of TRIAL_KEY that `df` has (`run` exists only when several runs are stacked)."""
    return [c for c in TRIAL_KEY if c in df.columns]


def trial_total(responses: pd.DataFrame, column: str = "weight") -> pd.Series:
    """Each row's trial total of `column`, aligned with the rows."""
    return responses.groupby(trial_key(responses), sort=False, dropna=False)[column].transform("sum")


def shares(responses: pd.DataFrame) -> pd.DataFrame:
    """Add `share`: each response's weight over the trial's total (exact probabilities stay as they are)."""
    return responses.assign(share=responses["weight"] / trial_total(responses))


def n_trials(responses: pd.DataFrame, by: list[str]) -> pd.Series:
    """Per row: how many distinct trials its `by` group holds (trials counted by the full trial key)."""
    key = trial_key(responses)
    ids = responses[key].astype(str).agg("\r".join, axis=1)
    return ids.groupby([responses[c] for c in by], sort=False, dropna=False).transform("nunique")


def prob_of(responses: pd.DataFrame, response: str, keep: list[str] | None = None) -> pd.DataFrame:
    """One row per trial: the normalized probability of `response`, with the trial's design columns."""
    df = shares(responses)
    key = trial_key(df)
    keep = [c for c in (keep or []) if c in df.columns and c not in key]
    first = df.drop_duplicates(key)[[*key, "validity", *keep]]
    p = df[df["response"] == response].groupby(key, sort=False)["share"].sum()
    out = first.set_index(key).join(p.rename(f"p_{response}")).reset_index()
    return out.fillna({f"p_{response}": 0.0})


def stack_runs(tables: list[pd.DataFrame], labels: list[str]) -> pd.DataFrame:
    """Responses of several runs as one table: a `run` column when there are several, and the human
    reference rows once (every run of a study carries the same reference data; stacking them twice
    would double the people)."""
    if len(tables) == 1:
        return tables[0]
    parts, seen = [], set()
    for df, label in zip(tables, labels):
        df = df.assign(run=label)
        if "source" in df.columns:
            human = df["source"] == "human"
            ids = df["model"].astype(str) + "\r" + df["trial"].astype(str)
            df = df[~human | ~ids.isin(seen)]
            seen |= set(ids[human])
        parts.append(df)
    return pd.concat(parts, ignore_index=True)
