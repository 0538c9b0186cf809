"""The immigration conjoint of Hainmueller, Hopkins & Yamamoto (2014) as a built-in study.

Each simulated respondent sees `--tasks` pairs of immigrant profiles drawn from the HHY design
(nine attributes, two restrictions; `datasets/conjoint/immigration_design.json`) and is asked which
immigrant they would prefer to see admitted to the United States. The answer is read exactly:
P(" 1") and P(" 2") normalized, from one forward pass per task order (both options are single
tokens after the same prompt). With `--orders both` (default) each task is asked in both profile
orders and P(profile chosen) is their mean, so a preference for the first-listed profile cancels.
`analyze` estimates AMCEs and marginal means with cregg's conventions (analyze/conjoint.py) beside
the 1,396 respondents of HHY's survey (bundled from cregg).
"""

from __future__ import annotations

import time

import pandas as pd

from simsubjects.datasets.registry import load_json
from simsubjects.errors import UserError
from simsubjects.studies.conjoint.profiles import Design
from simsubjects.datasets.registry import data_path
from simsubjects.collect.runner import collect_choices

NAME = "conjoint_immigration"  # the study's name (its declaration: __init__.py)
DESIGN_FILE = "conjoint/immigration_design.json"
HUMAN_RESPONDENTS = 1_396  # HHY 2014's sample in cregg's `immigration` (CaseID)
MAX_RESPONDENTS = 100_000


def immigration_design() -> Design:
    return Design.from_dict(load_json(DESIGN_FILE), f"datasets/{DESIGN_FILE}")


def load_human() -> pd.DataFrame:
    """HHY 2014's 13,960 profiles (cregg's `immigration`), factor level order kept."""

    return pd.read_parquet(data_path("conjoint/immigration.parquet"))


def build(respondents: int = 50, tasks: int = 5, orders: str = "both", layout: str = "table",
          attribute_order: str = "random", outcome: str = "choice", seed: int = 0):
    if not 1 <= respondents <= MAX_RESPONDENTS:
        raise UserError(f"--respondents {respondents}: must be between 1 and {MAX_RESPONDENTS}")
    if not 1 <= tasks <= 50:
        raise UserError(f"--tasks {tasks}: must be between 1 and 50")
    design = immigration_design().with_options(layout=layout, attribute_order=attribute_order, outcome=outcome,
                                               both_orders=orders == "both")
    design.tasks_per_respondent = tasks
    profiles = design.profiles(respondents, seed)
    trials = design.trials(profiles, NAME)
    items = profiles.assign(item=profiles["respondent"] + "-t" + profiles["task"].astype(str))
    return trials, items[["item", *[c for c in items.columns if c != "item"]]]


def collect(model, cache, trials: pd.DataFrame, params: dict, show_progress: bool):
    """The generic k-choice collection, plus the work it took: task orders per second, forward passes."""

    before = dict(getattr(model, "stats", {}) or {})
    t0 = time.perf_counter()
    responses, stats = collect_choices(model, trials, cache, study=NAME, method=params.get("method", "exact"),
                                       n=params.get("n") or 50, chunk=params.get("batch_size", 64),
                                       show_progress=show_progress)
    seconds = time.perf_counter() - t0
    after = getattr(model, "stats", {}) or {}
    tasks = trials["item"].nunique()
    stats["tasks"] = int(tasks)
    stats["task_orders"] = int(len(trials))
    stats["tasks_per_second"] = round(tasks / seconds, 2) if seconds > 0 else None
    if "forwards" in after:  # the transformers backend counts its forward passes (packed rows)
        stats["forward_passes"] = int(after["forwards"] - before.get("forwards", 0))
    return responses, stats, None
