"""The estimand and the validity policy of every test table (issue 40, items 1 and 2; docs/conventions.md).

A model subject's test estimates the model's expected answer over a declared distribution of subjects
(personas drawn from a population table, names from a list, or one fixed prompt); its uncertainty comes
only from that distribution. `annotate` gives every table with a `p.value` column (a *test table*) two
columns, after the study's own analysis has run, so that no study can leave them out:

* `sample` (collect/sample_kinds.py): what the units behind the row are a sample of; a row over
  copies of one prompt (`identical prompts`) keeps its exact estimate and loses its statistic and
  p-values (a note says why): they would measure only the package's own seeded draws.
* `low_validity`: True where the model's mean valid probability mass (the `validity` column, per trial)
  over the rows behind the test is under `min_validity` (default MIN_VALIDITY, `analyze --min-validity`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..collect.sample_kinds import CENSUS, DRAWN, IDENTICAL_PROMPTS, PEOPLE, RECORDED, SAMPLED_METHOD, VS_PEOPLE

MIN_VALIDITY = 0.5  # documented in docs/conventions.md ("Validity and refusals in every denominator")
NOT_A_SAMPLE = ("identical prompts: every subject read the same prompt, so the subjects are copies, not a sample; "
                "the estimate is the model's value for that prompt and no p-value is given")
# a table's `unit` naming these is a test over items (stories, sentences, questions) of the study's table
ITEM_UNITS = ("item", "sentence", "story", "question")
HUMAN = {"human", "people", "person"}
# ppi.csv's rows that estimate people's mean: over respondents (the model's predictions only narrow it)
PPI_PEOPLE = ("human-only", "prediction-powered")


def run_sample(declared, params: dict, model_rows: pd.DataFrame) -> str:
    """The kind of the model's subjects in a run: the study's declaration (a kind, or a function of the
    run's parameters), else read from the rows; a sampled method (or sampled session paths) is its own kind,
    except over identical prompts, whose draws are never a sample, and over recorded people, whose paths follow
    the people's own answers (nothing is drawn)."""
    kind = declared(params or {}) if callable(declared) else declared
    kind = kind or _from_rows(model_rows)
    if kind not in (IDENTICAL_PROMPTS, RECORDED) and _sampled(model_rows):
        return SAMPLED_METHOD
    return kind


def _from_rows(rows: pd.DataFrame) -> str:
    """Without a declaration: personas in a `persona` column are a table's rows; one empty persona for
    every subject is one prompt; a study with no persona column draws its subjects."""
    if "persona" not in rows or rows.empty:
        return DRAWN
    personas = rows["persona"].fillna("").astype(str)
    return CENSUS if (personas != "").any() else IDENTICAL_PROMPTS


def _sampled(rows: pd.DataFrame) -> bool:
    """Answers counted from samples, or a session whose paths were drawn (some option not followed)."""
    if "method" in rows and rows["method"].astype(str).isin(["sampled", "generated"]).any():  # free text drawn at T > 0
        return True
    if "drawn" in rows and "condition" in rows:
        drawn = pd.to_numeric(rows.loc[rows["condition"] == "decision", "drawn"], errors="coerce")
        return bool((drawn == 0).any())
    return False


def _row_kind(row: pd.Series, kind: str, people: set[str], table: str) -> str:
    """People's rows (`source` or `model` naming a human reference, e.g. "HHY 2014 respondents"), a model
    tested against people (a person unit, people's counts, a table named for people), items, or the run's kind."""
    unit = str(row.get("unit", "") or "").lower()
    names = {str(row.get(c, "") or "") for c in ("source", "model")}
    if {n.lower() for n in names} & HUMAN or names & people or str(row.get("method", "")) in PPI_PEOPLE:
        return PEOPLE
    if "person" in unit or _with_people(row) or any(w in table for w in ("people", "human")):
        return kind + VS_PEOPLE
    if any(u in unit for u in ITEM_UNITS):
        return CENSUS if kind == IDENTICAL_PROMPTS else kind  # the items are the sample, not copies
    return kind


def _with_people(row: pd.Series) -> bool:
    return any(c in row.index and pd.notna(row[c]) for c in ("n_people", "n_human", "n_humans"))


def validity_by(responses: pd.DataFrame) -> pd.DataFrame:
    """One row per model trial: its validity (the valid probability mass; the same on every row of it)."""
    model = responses[responses["source"].astype(str) != "human"] if "source" in responses else responses
    if "validity" not in model or "trial" not in model or model.empty:
        return pd.DataFrame(columns=["trial", "validity"])
    keys = [c for c in ("run", "model", "trial") if c in model]
    per = model.groupby(keys, sort=False, dropna=False).agg(
        validity=("validity", "first"), **({"item": ("item", "first")} if "item" in model else {})).reset_index()
    per["validity"] = pd.to_numeric(per["validity"], errors="coerce")
    return per.astype({c: str for c in ("run", "model", "item") if c in per})  # matched as text to a table's row


def _mean_validity(row: pd.Series, trials: pd.DataFrame) -> float:
    """Mean validity of the model trials behind a row: those of its item, model and run where the row names
    them (a table that names none is over the whole run)."""
    sel = np.ones(len(trials), bool)
    for col in ("run", "model", "item"):
        if col in row.index and col in trials and pd.notna(row[col]):
            match = (trials[col] == str(row[col])).to_numpy()
            sel &= match if match.any() else True  # a value no trial holds (a pooled "all") leaves it as it is
    v = trials.loc[sel, "validity"].dropna()
    return float(v.mean()) if len(v) else math.nan


def annotate(tables: dict[str, pd.DataFrame], responses: pd.DataFrame, kind: str,
             min_validity: float = MIN_VALIDITY) -> dict[str, pd.DataFrame]:
    """Every test table with `sample` and `low_validity` (module docstring); other tables unchanged."""
    trials = validity_by(responses)
    human = responses["source"].astype(str) == "human" if "source" in responses else pd.Series(False, responses.index)
    people = set(responses.loc[human, "model"].dropna().astype(str)) if "model" in responses else set()
    out = {}
    for name, df in tables.items():
        out[name] = _annotate_table(df, kind, trials, min_validity, people, name) if "p.value" in df.columns else df
    return out


def _annotate_table(df: pd.DataFrame, kind: str, trials: pd.DataFrame, min_validity: float,
                    people: set[str] = frozenset(), name: str = "") -> pd.DataFrame:
    df = df.copy()
    kinds = pd.Series([_row_kind(r, kind, people, name) for _, r in df.iterrows()], index=df.index, dtype=object)
    # an analysis that knows some rows better sets them itself (the conjoint's bundled people); the rest are filled
    df["sample"] = df["sample"].astype(object).where(df["sample"].notna(), kinds) if "sample" in df else kinds
    of_people = (df["sample"].astype(str) == PEOPLE).to_numpy()
    mean_v = [math.nan if p else _mean_validity(r, trials) for (_, r), p in zip(df.iterrows(), of_people)]
    df["low_validity"] = [bool(pd.notna(v) and v < min_validity) for v in mean_v]
    copies = (df["sample"].astype(str) == IDENTICAL_PROMPTS).to_numpy()
    if copies.any():  # the exact value stays; no statistic or p-value over copies of one prompt
        for col in [c for c in df.columns if c == "statistic" or c.startswith("p.value")]:
            df.loc[copies, col] = math.nan
        note = df["note"].fillna("").astype(str) if "note" in df else pd.Series("", index=df.index)
        df["note"] = [(f"{n}; {NOT_A_SAMPLE}" if n else NOT_A_SAMPLE) if c and NOT_A_SAMPLE not in n else
                      (n if "note" in df or c else "") for c, n in zip(copies, note)]
    return df
